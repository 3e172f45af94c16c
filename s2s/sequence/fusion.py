"""Fusion of two consecutive launches of a loop body into one launch, where the dependence allows it.

    fusions(window, var, kernels_text, refs) -> list[Fusion]      (each applicable, or refused with the reason)
    fused_source(kernels_text, fusion) -> str                     (the fused kernel, appended to kernels.cu)
    fused_launches(window, var, fusions, index_of) -> [FusedLaunch] (the window with each fused pair as one launch)

Launches j and j+1 of the body fuse when, at every iteration of the window, they have the same grid, block and shared
memory (the same index space), and every buffer both touch (the window's arguments say which: the same allocation)
with a write by either is accessed by both only at one element per thread, the same one: a 1-D global index
`blockIdx.x*blockDim.x + threadIdx.x + c` in both kernels' models (s2s.lang.kernel_model), outside loops, with the
same offset into the buffer. Then the thread that runs the second kernel's body for an element has just run the first
kernel's for it, and no other thread touches that element: a stencil whose output an elementwise kernel updates, or a
chain of elementwise kernels, fuse; a consumer that reads a neighbour's element (a halo) or a producer that reads
what the consumer writes at another index does not. The fused kernel calls the two bodies, each as a device function
(an early `return` in the first ends only its body), in the original order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from s2s.lang.access import param_access
from s2s.lang.affine import Poly
from s2s.lang.kernel_facts import find_kernel
from s2s.lang.kernel_model import ArrayAccess, KernelModel, kernel_model
from s2s.lang.parsing import parse

from .variation import Variation
from .window import Arg, Launch, Window

_GLOBAL_X = Poly.name("blockIdx.x") * Poly.name("blockDim.x") + Poly.name("threadIdx.x")


@dataclass(frozen=True)
class Fusion:
    position: int  # the first launch's position in the body of one iteration
    first: str  # the kernels as the harness names them
    second: str
    reason: str = ""  # why not, "" when it applies
    shared: tuple[str, ...] = field(default_factory=tuple)  # the buffers both touch, for the report

    @property
    def applies(self) -> bool:
        return not self.reason

    @property
    def name(self) -> str:
        return f"s2s_fused_{self.first}_{self.second}"

    def describe(self) -> str:
        what = f"{self.first} + {self.second} (body launches {self.position} and {self.position + 1})"
        return f"{what}: fused" if self.applies else f"{what}: not fused, {self.reason}"


@dataclass(frozen=True)
class FusedLaunch:
    kernel: int  # index into the harness's kernel table
    launch: Launch  # the configuration; args are those of both launches when fused
    args: tuple[Arg, ...]


def _one_element(a: ArrayAccess) -> bool:
    """Whether the access touches the element of a 1-D global thread index plus a constant, outside any loop."""
    t = a.threads[0] if len(a.threads) == 1 else None
    return not a.loops and t is not None and a.affine and not (t - _GLOBAL_X).names


def _unseen(data: bytes, m: KernelModel) -> str:
    """A pointer parameter of `m` whose uses the model's accesses do not cover (read or written through a local
    pointer made from it, handed to a function), else ""."""
    found = find_kernel(parse(data, "cuda").root_node, data, "cuda", m.name)
    if found is None:
        return "?"
    pointers = [n for n, _t, p in m.params if p]
    uses = param_access(data[found[0].start_byte:found[0].end_byte].decode(), "cuda", pointers)
    for name in pointers:
        seen = {k for x in m.accesses if x.array == name for k, on in (("read", x.read), ("write", x.write)) if on}
        if not uses[name] <= seen:
            return name
    return ""


def _pair_reason(window: Window, var: Variation, j: int, kernels: bytes, first: str, second: str) -> tuple[str, tuple[str, ...]]:
    length = len(var.body_sites)
    pairs = [(window.launches[k * length + j], window.launches[k * length + j + 1]) for k in range(var.iterations)]
    if any((a.grid, a.block, a.shmem) != (b.grid, b.block, b.shmem) for a, b in pairs):
        return "their grids, blocks or shared memory differ (not one index space)", ()
    if "::" in first + second or "<" in first + second:
        return "a kernel in a namespace or a template (not fused yet)", ()
    ma, mb = kernel_model(kernels, "cuda", first), kernel_model(kernels, "cuda", second)
    if ma is None or mb is None:
        return "no kernel model of one of them", ()
    for m in (ma, mb):
        unseen = _unseen(kernels, m)
        if unseen:
            return f"{m.name}.{unseen}: used in a way the kernel model does not follow (a local pointer, a call)", ()
    shared: set[str] = set()
    for a, b in pairs:
        for pa, arg_a in zip(ma.params, a.args):
            for pb, arg_b in zip(mb.params, b.args):
                if arg_a.kind != "ptr" or arg_b.kind != "ptr" or arg_a.buf != arg_b.buf:
                    continue
                xa = [x for x in ma.accesses if x.array == pa[0]]
                xb = [x for x in mb.accesses if x.array == pb[0]]
                if not any(x.write for x in xa + xb):
                    continue
                shared.add(f"buffer {arg_a.buf} ({first}.{pa[0]}, {second}.{pb[0]})")
                if arg_a.offset != arg_b.offset:
                    return f"{first}.{pa[0]} and {second}.{pb[0]} point at different offsets of one buffer", ()
                if not xa or not xb:
                    return f"{first}.{pa[0]} or {second}.{pb[0]}: an access the kernel model does not see", ()
                if not all(_one_element(x) for x in xa + xb) or len({x.threads for x in xa + xb}) != 1:
                    return (f"{first}.{pa[0]} and {second}.{pb[0]} (one buffer, written) are not accessed at one "
                            "element per thread, the same in both"), ()
    return "", tuple(sorted(shared))


def fusions(window: Window, var: Variation, kernels_text: str, refs: dict[str, str]) -> list[Fusion]:
    """Every consecutive pair of the body's launches, fused or refused with the reason; a launch fuses at most once
    (the pairs taken from the body's start)."""
    out: list[Fusion] = []
    data = kernels_text.encode()
    j = 0
    while j + 1 < len(var.body_sites) and var.iterations > 0:
        first, second = refs[var.body_sites[j]], refs[var.body_sites[j + 1]]
        reason, shared = _pair_reason(window, var, j, data, first, second)
        out.append(Fusion(j, first, second, reason, shared))
        j += 2 if not reason else 1
    return out


def params_and_body(data: bytes, name: str) -> tuple[list[tuple[str, str]], str] | None:
    """((declaration text, parameter name) per parameter, body text) of kernel `name` in `data`."""
    found = find_kernel(parse(data, "cuda").root_node, data, "cuda", name)
    if found is None:
        return None
    fn, _start = found
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    body = fn.child_by_field_name("body")
    plist = decl.child_by_field_name("parameters") if decl is not None else None
    if body is None or plist is None or (fn.parent is not None and fn.parent.type == "template_declaration"):
        return None
    params: list[tuple[str, str]] = []
    for p in plist.named_children:
        if p.type == "comment":
            continue
        ident = p.child_by_field_name("declarator")
        while ident is not None and ident.type != "identifier":
            ident = ident.child_by_field_name("declarator")
        if ident is None:
            return None
        params.append((data[p.start_byte:ident.start_byte].decode() + "{}" + data[ident.end_byte:p.end_byte].decode(),
                       data[ident.start_byte:ident.end_byte].decode()))
    return params, data[body.start_byte:body.end_byte].decode()


def device_function(name: str, params: list[tuple[str, str]], body: str, leading: tuple[str, ...] = ()) -> str:
    """A kernel's body as a device function `name` (its parameters as params_and_body read them, after `leading`
    declarations of our own): an early `return` in the body ends only this call."""
    own = ", ".join([*leading, *(d.format(n) for d, n in params)])
    return f"static __device__ __forceinline__ void {name}({own})\n{body}"


_RESTRICT = ("__restrict__", "__restrict", "restrict")


def _plain(decl: str) -> str:
    """A parameter declaration without restrict: the fused kernel's two pointers into one buffer may alias."""
    for word in _RESTRICT:
        decl = decl.replace(word, "")
    return " ".join(decl.split())


def fused_source(kernels_text: str, fusion: Fusion) -> str | None:
    """The fused kernel and the two bodies it calls, or None when a kernel's definition cannot be read back."""
    data = kernels_text.encode()
    parts = [params_and_body(data, fusion.first), params_and_body(data, fusion.second)]
    if parts[0] is None or parts[1] is None:
        return None
    out = [f"// s2s sequence: {fusion.first} then {fusion.second} in one launch (each element's thread runs both bodies)"]
    formals: list[str] = []
    calls: list[str] = []
    for tag, (params, body) in (("a", parts[0]), ("b", parts[1])):
        out.append(device_function(f"{fusion.name}_{tag}", params, body))
        names = [f"s2s_{tag}{i}" for i in range(len(params))]
        formals += [_plain(d.format(n)) for (d, _), n in zip(params, names)]
        calls.append(f"{fusion.name}_{tag}({', '.join(names)});")
    out.append(f"__global__ void {fusion.name}({', '.join(formals)})\n{{\n    " + "\n    ".join(calls) + "\n}")
    return "\n".join(out) + "\n"


def fused_launches(window: Window, var: Variation, applied: list[Fusion], index_of: dict[str, int],
                   kernel_of_site: dict[str, int]) -> list[FusedLaunch]:
    """The window's launches with each applied fusion's pair as one launch (its arguments those of both, in order);
    launches after the last whole iteration stay as they are."""
    length = len(var.body_sites)
    starts = {f.position: f for f in applied}
    out: list[FusedLaunch] = []
    i = 0
    launches = window.launches
    while i < len(launches):
        pos = i % length if length else 0
        f = starts.get(pos)
        if f is not None and i + 1 < var.iterations * length:
            out.append(FusedLaunch(index_of[f.name], launches[i], launches[i].args + launches[i + 1].args))
            i += 2
        else:
            out.append(FusedLaunch(kernel_of_site[launches[i].site], launches[i], launches[i].args))
            i += 1
    return out
