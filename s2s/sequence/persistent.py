"""The persistent form of a loop body: a window's iterations in one cooperative launch (per batch), a grid-wide
barrier between consecutive launches of the body.

    persistent_plan(window, var, kernels_text, refs) -> PersistentPlan     (applies, or the reason it does not)
    persistent_source(kernels_text, plan, namespace="") -> str            (persistent.cu of the sequence MEP)
    plan_from_dict(sequence_json["persistent"]) -> PersistentPlan         (the plan a MEP keeps, for reintegration)

Each body kernel becomes a device function (fusion.device_function) whose `blockIdx`, `gridDim`, `threadIdx` and
`blockDim` are parameters: the persistent kernel runs its original blocks as virtual blocks over a grid-stride loop
(a grid sized to the device's co-resident capacity, any original grid), each real block of the largest block size of
the body, each virtual block's thread its linear index's (so the warps are the original's). A body that calls
__syncthreads must have that largest block (a thread left out of a barrier would hang it); a body with shared memory
gets a block barrier between its virtual blocks (the next one's writes would race with the last one's reads). The
macros in the body see the parameters too (`#define blockIdx s2s_blockIdx` around it). Refused: a device function of
the closure that reads the block index itself, inline PTX, device-side launches or CUDA API calls, cooperative groups
(their ranks and barriers are the real block's), and a `return` before a barrier (a thread that left the original no
longer counted at its barriers; a device function's return goes on to the next virtual block's).
The arguments of each iteration come from the Variation: fixed, rotating or periodic (a table of one period, indexed
by the iteration), affine (the first iteration's bits plus step * iteration, as the analysis read them); a varying
argument, a configuration that changes between iterations (dynamic shared memory included), or a kernel in a
namespace or a template (fusion.params_and_body cannot read it back) refuse it. Launches after the last whole
iteration stay ordinary launches. Every pair of consecutive launches is separated by a grid barrier (whether two
launches are independent depends on how their pointers alias at run time, which the schedule's check does not see).

persistent.cu holds the device functions, the schedule (`s2s_persist_args`), the kernel `s2s_persistent(p, count)`
(iteration it of the batch at `p`'s iteration 0), host functions over a batch of launches,
`s2s_persist_fill(p, iterations, arg, config)` (the schedule from the batch's launches),
`s2s_persist_follows(iterations, arg, config)` (whether every launch of the batch is what the schedule gives: the
reintegrated loop checks each batch before it launches it persistently) and `s2s_persist_fits(p)` (the barriers'
blocks), `s2s_persist_grid` (the co-resident capacity), and `s2s_persist_plan` (what the reintegrated loop's runtime
needs). A batch is at most BATCH iterations (the harness's runs and the reintegrated loop alike): the host holds the
next batch's launches while one runs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from s2s.lang.parsing import descendants, parse

from .fusion import device_function, params_and_body
from .variation import ArgVariation, Variation
from .window import Window

BUILTINS = ("blockIdx", "gridDim", "threadIdx", "blockDim")
KERNEL = "s2s_persistent"
BATCH = 512  # iterations in one cooperative launch at most: the host holds the next batch's launches while one runs
ARGS = "s2s_persist_args"
_BUILTIN = re.compile(r"\b(?:blockIdx|gridDim|threadIdx|blockDim)\b")
_BARRIER = re.compile(r"\b__syncthreads(?:_count|_and|_or)?\b")
_FORBIDDEN = (
    (re.compile(r"<<<"), "launches a kernel from the device"),
    (re.compile(r"\bcuda[A-Z]\w*\s*\("), "calls the CUDA API from the device"),
    (re.compile(r"\b(?:this_grid|grid_group|this_multi_grid)\b"), "synchronizes a grid of its own"),
    (re.compile(r"\b(?:cooperative_groups|this_thread_block|thread_block|tiled_partition|coalesced_threads)\b"),
     "uses cooperative groups (their ranks and barriers are the real block's, not the virtual block's)"),
    (re.compile(r"\basm\b"), "holds inline PTX (it may read the block index or synchronize)"),
)


@dataclass(frozen=True)
class BodyLaunch:
    position: int  # in the body of one iteration
    site: str
    kernel: str  # as the harness names it
    args: tuple[ArgVariation, ...]
    threads: int  # the original block's threads
    barrier: bool  # the body synchronizes its block
    shared: bool  # the body uses shared memory (static or dynamic)
    sizes: tuple[int, ...] = ()  # each argument's bytes as captured (0: a pointer, its table holds the kernel's type)


@dataclass(frozen=True)
class PersistentPlan:
    launches: tuple[BodyLaunch, ...]
    iterations: int  # whole iterations of the window, in the one launch
    threads: int  # the real block: the largest block of the body
    shmem: int  # dynamic shared memory: the largest of the body's
    reason: str = ""  # why not, "" when the form applies

    @property
    def applies(self) -> bool:
        return not self.reason

    def as_dict(self) -> dict[str, object]:
        if self.reason:
            return {"applies": False, "reason": self.reason}
        return {"applies": True, "iterations": self.iterations, "threads": self.threads, "shmem": self.shmem,
                "barriers": [la.kernel for la in self.launches if la.barrier],
                "launches": [{"position": la.position, "site": la.site, "kernel": la.kernel, "threads": la.threads,
                              "barrier": la.barrier, "shared": la.shared, "sizes": list(la.sizes),
                              "args": [{"index": a.index, "kind": a.kind, "period": a.period, "start": a.start,
                                        "step": a.step} for a in la.args]} for la in self.launches]}


def _refused(reason: str) -> PersistentPlan:
    return PersistentPlan((), 0, 0, 0, reason)


def _index_helpers(data: bytes, kernels: set[str]) -> set[str]:
    """The functions of the closure (kernels excepted) that read a block or thread index themselves."""
    out: set[str] = set()
    for fn in descendants(parse(data, "cuda").root_node):
        if fn.type != "function_definition":
            continue
        decl = fn.child_by_field_name("declarator")
        while decl is not None and decl.type not in {"identifier", "field_identifier", "qualified_identifier"}:
            decl = decl.child_by_field_name("declarator")
        text = data[fn.start_byte:fn.end_byte].decode("utf-8", "replace")
        name = data[decl.start_byte:decl.end_byte].decode() if decl is not None else ""
        if name and name.split("::")[-1] not in kernels and "__global__" not in text.split("{", 1)[0] and _BUILTIN.search(text):
            out.add(name.split("::")[-1])
    return out


def _body_reason(kernel: str, body: str, helpers: set[str], threads: int, real: int) -> str:
    for pattern, what in _FORBIDDEN:
        if pattern.search(body):
            return f"{kernel} {what}"
    called = sorted(h for h in helpers if re.search(rf"\b{re.escape(h)}\s*\(", body))
    if called:
        return f"{kernel} calls {called[0]}, which reads the block or thread index itself (not remapped)"
    barrier = _BARRIER.search(body)
    if barrier:
        early = re.search(r"\breturn\b", body[:barrier.start()])
        if early:
            return (f"{kernel} returns before a __syncthreads: its threads that left would wait at the next virtual "
                    "block's barriers")
        if threads != real:
            return (f"{kernel} synchronizes blocks of {threads} threads and the body's largest block has {real}: "
                    "the threads left out would not reach its barrier")
    return ""


def persistent_plan(window: Window, var: Variation, kernels_text: str, refs: dict[str, str]) -> PersistentPlan:
    """Whether the window's whole iterations can be one cooperative launch, and how."""
    length = len(var.body_sites)
    if var.iterations < 2 or not length:
        return _refused("fewer than two iterations of the loop body in the window")
    data = kernels_text.encode()
    names = {refs[s].split("::")[-1] for s in var.body_sites}
    helpers = _index_helpers(data, names)
    firsts = window.launches[:length]
    real = max(la.block[0] * la.block[1] * la.block[2] for la in firsts)
    found: list[BodyLaunch] = []
    for j, site in enumerate(var.body_sites):
        kernel = refs[site]
        at = [window.launches[k * length + j] for k in range(var.iterations)]
        if any((la.grid, la.block, la.shmem) != (at[0].grid, at[0].block, at[0].shmem) for la in at):
            return _refused(f"the grid, block or dynamic shared memory of {kernel} ({site}) changes between iterations")
        if "::" in kernel or "<" in kernel:
            return _refused(f"{kernel}: a kernel in a namespace or a template (its body is not read back yet)")
        read = params_and_body(data, kernel)
        if read is None:
            return _refused(f"{kernel}: its definition cannot be read back")
        params, body = read
        if any(len(la.args) != len(params) for la in at):
            return _refused(f"{kernel} ({site}): {len(params)} parameters, launched with another number of arguments")
        args = tuple(a for a in var.args if a.position == j)
        varying = next((a for a in args if a.kind == "varying"), None)
        if varying is not None:
            return _refused(f"{varying.describe()}: not a constant, a rotation or an affine index of the iteration")
        threads = at[0].block[0] * at[0].block[1] * at[0].block[2]
        why = _body_reason(kernel, body, helpers, threads, real)
        if why:
            return _refused(why)
        shared = "__shared__" in body or at[0].shmem > 0
        sizes = tuple(a.size if a.kind == "value" else 0 for a in at[0].args)
        found.append(BodyLaunch(j, site, kernel, args, threads, bool(_BARRIER.search(body)), shared, sizes))
    shmem = max(la.shmem for la in firsts)
    return PersistentPlan(tuple(found), var.iterations, real, shmem)


# ---- persistent.cu --------------------------------------------------------------------------------------------------

_CAPACITY = """\
// the persistent launch's grid: the device's co-resident capacity for `kernel` in blocks of `threads` with `shmem` bytes
// of dynamic shared memory, at most `most` (the largest original grid); 0 with the reason where it cannot run
static unsigned s2s_persist_grid(const void* kernel, unsigned threads, size_t shmem, unsigned long long most, const char** why)
{
    int dev = 0, coop = 0, sms = 0, per_sm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || !coop) {
        cudaGetLastError();
        *why = "the device cannot launch cooperative kernels";
        return 0;
    }
    if (shmem > 48 * 1024 && cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shmem) != cudaSuccess) {
        cudaGetLastError();
        *why = "its dynamic shared memory is more than a block may have";
        return 0;
    }
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, (int)threads, shmem) != cudaSuccess || per_sm < 1) {
        cudaGetLastError();
        *why = "no block of it fits on a multiprocessor (registers or shared memory)";
        return 0;
    }
    unsigned long long grid = (unsigned long long)per_sm * (unsigned long long)sms;
    return (unsigned)(grid < most ? grid : most);
}
"""

_TRAITS = """\
// the type of a device function's parameter s2s_I (top-level const and restrict gone, as in the function's type)
template <int s2s_I, class... s2s_A> struct s2s_persist_nth;
template <class s2s_H, class... s2s_A> struct s2s_persist_nth<0, s2s_H, s2s_A...> { typedef s2s_H type; };
template <int s2s_I, class s2s_H, class... s2s_A> struct s2s_persist_nth<s2s_I, s2s_H, s2s_A...> { typedef typename s2s_persist_nth<s2s_I - 1, s2s_A...>::type type; };
template <int s2s_I, class s2s_F> struct s2s_persist_param;
template <int s2s_I, class s2s_R, class... s2s_A> struct s2s_persist_param<s2s_I, s2s_R (*)(s2s_A...)> { typedef typename s2s_persist_nth<s2s_I, s2s_A...>::type type; };
// an affine argument: its first iteration's bits as a little-endian signed integer, plus `delta` (variation.py's reading)
template <class s2s_T> static __device__ __forceinline__ s2s_T s2s_persist_affine(s2s_T base, long long delta)
{
    s2s_T out;
    if (sizeof(s2s_T) == 4) {
        int v;
        memcpy(&v, &base, 4);
        v = (int)((long long)v + delta);
        memcpy(&out, &v, 4);
    } else {
        long long v;
        memcpy(&v, &base, 8);
        v += delta;
        memcpy(&out, &v, 8);
    }
    return out;
}
"""


def _field(j: int, a: ArgVariation) -> str:
    return f"a{j}_{a.index}"


def _table(a: ArgVariation) -> int:
    """Entries of an argument's table: one period of a rotation, one value otherwise."""
    return a.period if a.kind in {"rotating", "periodic"} else 1


def _value(j: int, a: ArgVariation) -> str:
    f = f"p.{_field(j, a)}"
    if a.kind in {"rotating", "periodic"}:
        return f"{f}[it % {a.period}]"
    if a.kind == "affine":
        return f"s2s_persist_affine({f}[0], {f}_step * it)"
    return f"{f}[0]"


def _step_function(j: int, la: BodyLaunch) -> str:
    """One launch of the body: its original blocks as virtual blocks of the grid-stride loop."""
    g, b = f"p.g{j}", f"p.b{j}"
    args = ", ".join(_value(j, a) for a in la.args)
    sync = ("\n        __syncthreads();  // its shared memory: the next virtual block's writes after this one's reads"
            if la.shared else "")
    return f"""\
static __device__ __forceinline__ void s2s_persist_l{j}(const {ARGS}& p, long long it)
{{  // {la.kernel} ({la.site})
    const unsigned long long blocks = (unsigned long long){g}.x * {g}.y * {g}.z;
    const unsigned threads = {b}.x * {b}.y * {b}.z, t = threadIdx.x;
    for (unsigned long long v = blockIdx.x; v < blocks; v += gridDim.x) {{
        if (t < threads)
            s2s_persist_b{j}(make_uint3((unsigned)(v % {g}.x), (unsigned)(v / {g}.x % {g}.y), (unsigned)(v / ((unsigned long long){g}.x * {g}.y))),
                            {g}, make_uint3(t % {b}.x, t / {b}.x % {b}.y, t / ({b}.x * {b}.y)), {b}{", " + args if args else ""});{sync}
    }}
}}
"""


def _host_functions(plan: PersistentPlan) -> str:
    """s2s_persist_fill and s2s_persist_follows over a batch: `arg(k, i)` the bytes of argument i of the batch's
    launch k, `config(k, g, b)` its grid and block."""
    n = len(plan.launches)
    fill: list[str] = []
    follows: list[str] = []
    for la in plan.launches:
        j = la.position
        fill.append(f"    config({j}, p.g{j}, p.b{j});")
        follows.append(f"        config(k + {j}, g, b);\n"
                       f"        if (!s2s_persist_same(g, p.g{j}) || !s2s_persist_same(b, p.b{j})) return false;")
        for a in la.args:
            f = _field(j, a)
            size = f"sizeof p.{f}[0]"
            fill.append(f"    for (long long r = 0; r < {_table(a)} && r < iterations; ++r) "
                        f"std::memcpy(&p.{f}[r], arg(r * {n} + {j}, {a.index}), {size});")
            if a.kind == "affine":
                fill.append(f"    p.{f}_step = {int(a.step or 0)}LL;")
                want = f"s2s_persist_affine_host(p.{f}[0], p.{f}_step * it)"
                follows.append(f"        {{ auto w = {want}; if (std::memcmp(&w, arg(k + {j}, {a.index}), {size})) return false; }}")
            else:
                at = f"it % {a.period}" if a.kind in {"rotating", "periodic"} else "0"
                follows.append(f"        if (std::memcmp(&p.{f}[{at}], arg(k + {j}, {a.index}), {size})) return false;")
    blocks = [f"    if (p.b{j}.x * p.b{j}.y * p.b{j}.z > most) most = p.b{j}.x * p.b{j}.y * p.b{j}.z;"
              for j in (la.position for la in plan.launches)]
    barriers = [f"p.b{la.position}.x * p.b{la.position}.y * p.b{la.position}.z == most" for la in plan.launches if la.barrier]
    return f"""\
static bool s2s_persist_same(const dim3& a, const dim3& b) {{ return a.x == b.x && a.y == b.y && a.z == b.z; }}
// whether each body that synchronizes its block has the largest block of the body (every thread reaches its barriers)
static bool s2s_persist_fits(const {ARGS}& p)
{{
    unsigned most = 0;
{chr(10).join(blocks)}
    return {" && ".join(barriers) or "most > 0"};
}}
template <class s2s_T> static s2s_T s2s_persist_affine_host(s2s_T base, long long delta)
{{
    s2s_T out;
    if (sizeof(s2s_T) == 4) {{ int v; std::memcpy(&v, &base, 4); v = (int)((long long)v + delta); std::memcpy(&out, &v, 4); }}
    else {{ long long v; std::memcpy(&v, &base, 8); v += delta; std::memcpy(&out, &v, 8); }}
    return out;
}}
// the schedule from a batch of `iterations` whole iterations of the body ({n} launches each)
template <class s2s_Arg, class s2s_Config> static void s2s_persist_fill({ARGS}& p, long long iterations, s2s_Arg arg, s2s_Config config)
{{
    (void)iterations;
    p = {ARGS}();
{chr(10).join(fill)}
}}
// whether every launch of the batch is what the schedule filled from it gives (the rotations keep their period, the
// affine arguments their step, the configurations and the fixed arguments stay)
template <class s2s_Arg, class s2s_Config> static bool s2s_persist_follows(long long iterations, s2s_Arg arg, s2s_Config config)
{{
    {ARGS} p;
    s2s_persist_fill(p, iterations, arg, config);
    dim3 g, b;
    for (long long it = 0; it < iterations; ++it) {{
        const long long k = it * {n};
{chr(10).join(follows)}
    }}
    return true;
}}
"""


def persistent_source(kernels_text: str, plan: PersistentPlan, namespace: str = "") -> str:
    """persistent.cu: included after the kernels' closure (kernels.cu in the harness; the application's own file
    before the loop's function when reintegrated, its code then in `namespace`)."""
    data = kernels_text.encode()
    out = ["// s2s sequence: the loop body's launches in one cooperative launch, a grid barrier between consecutive",
           "// launches (s2s.sequence.persistent)", "#include <cooperative_groups.h>", "#include <cstring>",
           "#ifndef S2S_PERSIST_TRAITS", "#define S2S_PERSIST_TRAITS", _TRAITS + _CAPACITY + "#endif"]
    if namespace:
        out.append(f"namespace {namespace} {{")
    out += [f"#define {b} s2s_{b}" for b in BUILTINS]
    leading = ("const uint3 s2s_blockIdx", "const dim3 s2s_gridDim", "const uint3 s2s_threadIdx", "const dim3 s2s_blockDim")
    for la in plan.launches:
        read = params_and_body(data, la.kernel)
        assert read is not None, la.kernel
        out.append(f"// {la.kernel}'s body: its block and thread indices are the virtual block's")
        out.append(device_function(f"s2s_persist_b{la.position}", read[0], read[1], leading))
    out += [f"#undef {b}" for b in BUILTINS]
    fields = []
    for la in plan.launches:
        j = la.position
        fields.append(f"    dim3 g{j}, b{j};  // {la.kernel}")
        for a in la.args:
            t = f"typename s2s_persist_param<{4 + a.index}, decltype(&s2s_persist_b{j})>::type"
            fields.append(f"    {t} {_field(j, a)}[{_table(a)}];  // {a.kind}")
            if a.kind == "affine":
                fields.append(f"    long long {_field(j, a)}_step;")
    out.append(f"struct {ARGS} {{\n" + "\n".join(fields) + "\n};")
    out += [f"static_assert(sizeof({ARGS}::{_field(la.position, a)}) == {_table(a) * size}, \"{la.kernel} argument "
            f"{a.index}: {size} bytes captured\");"
            for la in plan.launches for a, size in zip(la.args, la.sizes) if size]
    out += [_step_function(la.position, la) for la in plan.launches]
    calls = "\n        cooperative_groups::this_grid().sync();\n".join(
        f"        s2s_persist_l{la.position}(p, it);" for la in plan.launches)
    out.append(f"""\
// {plan.iterations} iterations of the body in the measured window; `iterations` of them from the batch's first (the
// schedule read in place: __grid_constant__, not copied to each thread's stack as a parameter whose address is taken)
__global__ void {KERNEL}(const __grid_constant__ {ARGS} p, long long iterations)
{{
    for (long long it = 0; it < iterations; ++it) {{
        if (it)
            cooperative_groups::this_grid().sync();
{calls}
    }}
}}
""")
    out.append(_host_functions(plan))
    out.append(_plan_struct(plan))
    if namespace:
        out.append(f"}}  // namespace {namespace}")
    return "\n".join(out) + "\n"


def _plan_struct(plan: PersistentPlan) -> str:
    """What the reintegrated loop's runtime (templates/sequence/persistent_loop.h.j2) needs of this body."""
    kernels = ", ".join(f"(const void*)&{la.kernel}" for la in plan.launches)
    return f"""\
struct s2s_persist_plan {{
    typedef {ARGS} Args;
    static const size_t length = {len(plan.launches)};  // launches of one iteration
    static const void* kernel() {{ return (const void*)&{KERNEL}; }}
    static const void* launched(size_t j) {{ static const void* const k[] = {{{kernels}}}; return k[j]; }}
    template <class s2s_Arg, class s2s_Config> static void fill(Args& p, long long n, s2s_Arg arg, s2s_Config config) {{ s2s_persist_fill(p, n, arg, config); }}
    template <class s2s_Arg, class s2s_Config> static bool follows(long long n, s2s_Arg arg, s2s_Config config) {{ return s2s_persist_follows(n, arg, config); }}
    static bool fits(const Args& p) {{ return s2s_persist_fits(p); }}
}};
"""


def plan_from_dict(d: dict[str, object]) -> PersistentPlan:
    """The plan as sequence.json keeps it (PersistentPlan.as_dict)."""
    if not d.get("applies"):
        return _refused(str(d.get("reason", "no persistent form was planned")))
    launches = []
    for la in d["launches"]:  # type: ignore[attr-defined]
        args = tuple(ArgVariation(int(la["position"]), str(la["site"]), int(a["index"]), str(a["kind"]), int(a["period"]),
                                  a.get("start"), a.get("step")) for a in la["args"])
        launches.append(BodyLaunch(int(la["position"]), str(la["site"]), str(la["kernel"]), args, int(la["threads"]),
                                   bool(la["barrier"]), bool(la["shared"]), tuple(int(s) for s in la["sizes"])))
    return PersistentPlan(tuple(launches), int(d["iterations"]), int(d["threads"]), int(d["shmem"]))  # type: ignore[call-overload]
