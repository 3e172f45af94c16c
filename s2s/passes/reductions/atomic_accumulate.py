"""atomic-accumulate: same-address atomics become a grid-stride sum in a register and one atomic per block.

Two shapes. `int i = GID; if (i < n) atomicAdd(total, EXPR);` (or `if (i >= n) return; atomicAdd(total, EXPR);`)
serializes every element at the one address: on an H200 same-address atomics run at about one per 1.4 to 1.9 ns, so
reduce_atomic's 16.8M cannot come near the bandwidth floor; its grid becomes one that fills the device (132 SMs x 2048
threads) and each thread sums its elements of a grid-stride loop. `T acc = 0; for (int i = GID; i < n; i += GRID
STRIDE) acc += EXPR; atomicAdd(total, acc);` (dot_atomic) keeps its launch. Either way the block then adds its
threads' sums with warp shuffles and shared memory and thread 0 adds the block's sum (reduce_atomic: 1056 atomics; one
per thread left 270336, about 380 µs of the 508 µs measured). Where EXPR reads its arrays only at `P[i]` (4-byte
elements, no macros), the loop moves whole quads through 16-byte loads (passes/reductions/_block_sum.py): with one thread per
SM slot, four times the bytes in flight. The sum's order changes, as any order of the atomics could: floating-point
results match within the MEP's tolerance, integer ones exactly.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from tree_sitter import Node

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import THREAD_BUILTIN, Atomic, KernelFacts, idents

from ..common.thread_index import GLOBAL_ID, compared_bound, elem_type, single_declaration, squeezed
from ..common.tree import body_node, fresh, indent_of, statements, text
from ._block_sum import block_sum, quad_sum

EXAMPLE_DIALECT = "cuda"
EXAMPLE_BEFORE = """\
__global__ void sumsq(const float* in, float* total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(total, in[i] * in[i]);
}
"""
EXAMPLE_AFTER = """\
__global__ void sumsq(const float* in, float* total, int n)
{
    float acc = 0;
    int i0 = blockIdx.x * blockDim.x + threadIdx.x;
    if (((reinterpret_cast<unsigned long long>(in)) & 15) == 0) {
        for (int q = i0; q < (n) / 4; q += blockDim.x * gridDim.x) {
            const float4 in_4 = reinterpret_cast<const float4*>(in)[q];
            acc += in_4.x * in_4.x;
            acc += in_4.y * in_4.y;
            acc += in_4.z * in_4.z;
            acc += in_4.w * in_4.w;
        }
        i0 += (n) / 4 * 4;
    }
    for (int i = i0; i < (n); i += blockDim.x * gridDim.x)
        acc += in[i] * in[i];
    {
        __shared__ float acc_w[32];
        const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        const int size = blockDim.x * blockDim.y * blockDim.z;
        const int here = size - (tid & ~31);
        const unsigned wmask = here >= 32 ? 0xffffffffu : (1u << here) - 1u;
        for (int off = 16; off > 0; off /= 2) {
            float other = __shfl_down_sync(wmask, acc, off);
            if ((tid & 31) + off < here) acc += other;
        }
        if ((tid & 31) == 0) acc_w[tid / 32] = acc;
        __syncthreads();
        if (tid < 32) {
            const int warps = (size + 31) / 32;
            acc = tid < warps ? acc_w[tid] : (float)0;
            for (int off = 16; off > 0; off /= 2) {
                float other = __shfl_down_sync(wmask, acc, off);
                if (tid + off < here) acc += other;
            }
            if (tid == 0) atomicAdd(total, acc);
        }
    }
}
"""
_TYPES = {"float", "double", "int", "unsigned", "unsigned int", "unsigned long long"}
_CALL = re.compile(r"\b(?!(?:sqrtf?|fabsf?|expf?|logf?|sinf?|cosf?|fmaxf?|fminf?|rsqrtf?|__\w+)\s*\()[A-Za-z_]\w*\s*\(")


@dataclass(frozen=True)
class AtomicAccumulate:
    name: ClassVar[str] = "atomic-accumulate"
    WHY_IT_EXISTS: ClassVar[str] = "a whole sum serialized on one address by atomics (the zoo's reduce_atomic)"
    priority: ClassVar[int] = 45  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("atomic-accumulate{unroll=4}", "atomic-accumulate")
    unroll: int = 1  # quads of each array a thread loads before it adds any (16-byte loads only)

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect == "opencl":
            return "CUDA/HIP only (OpenCL 1.2 has no floating-point atomic add)"
        if len(facts.atomics) != 1 or facts.atomics[0].function != "atomicAdd" or facts.atomics[0].in_loop:
            return "needs exactly one atomicAdd, outside loops"
        target = facts.atomics[0].target
        if THREAD_BUILTIN.search(target) or idents(target) & set(facts.thread_vars):
            return "the atomic's address differs between threads"
        if facts.shared or len(facts.loops) > 1:
            return "shared memory or more than one loop: neither one element per thread nor one grid-stride sum"
        if self.unroll not in (1, 2, 4, 8):
            return f"unroll={self.unroll}: 1, 2, 4 or 8 quads in flight per thread"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        stmts = statements(body_node(source, facts))
        a = facts.atomics[0]
        found = _per_element(source, facts, stmts, a) if not facts.loops else _grid_stride(source, facts, stmts, a)
        if isinstance(found, Refused):
            return found
        head, value, acc, drop = found
        if re.search(r"(?<![=!<>])=(?!=)|\+\+|--|\batomic", value) or _CALL.search(value):
            return Refused("the added value has side effects or calls a function")
        array = re.findall(r"[A-Za-z_]\w*", a.target)
        p = facts.param(array[0]) if array else None
        ty = elem_type(p.type) if p is not None else ""
        if ty not in _TYPES:
            return Refused("the atomic's target must be a float, double or integer parameter")
        acc = acc or fresh(facts, source, "acc")
        ind = indent_of(source, stmts[0].start_byte)
        idx, var, gid, bound = head
        loop = quad_sum(facts, source, head, acc, value, self.unroll) or [
            f"for ({idx} {var} = {gid}; {var} < ({bound}); {var} += blockDim.x * gridDim.x)", f"    {acc} += {value};"]
        lines = [f"{ty} {acc} = 0;", *loop, *block_sum(facts, source, acc, ty, a.target)]
        launch = LaunchChange(None, f"extent:{facts.device.thread_slots}") if drop else None
        vector = " through 16-byte loads" if len(loop) > 2 else ""
        return Rewrite((Edit(stmts[0].start_byte, stmts[-1].end_byte, f"\n{ind}".join(lines)),), launch,
                       f"a grid-stride sum per thread{vector}, one atomicAdd to {a.target} per block")


Head = tuple[str, str, str, str]  # index type, index, GID, bound


def _per_element(source: bytes, facts: KernelFacts, stmts: list[Node], a: Atomic) -> tuple[Head, str, str, bool] | Refused:
    """`int i = GID; if (i < n) atomicAdd(T, V);` or `if (i >= n) return; atomicAdd(T, V);`: (head, V, "", True)."""
    d = single_declaration(source, stmts[0]) if stmts and stmts[0].type == "declaration" else None
    if d is None or d[2] is None or not GLOBAL_ID["cuda"].match(squeezed(text(source, d[2]))) or len(stmts) not in (2, 3):
        return Refused("needs `int i = GLOBAL_INDEX;` then the guarded atomic, and nothing else")
    var, guard = d[1], stmts[1]
    cond = guard.child_by_field_name("condition") if guard.type == "if_statement" else None
    then = guard.child_by_field_name("consequence") if cond is not None else None
    if cond is None or then is None or guard.child_by_field_name("alternative") is not None:
        return Refused(f"`{var}` is not followed by its guard")
    bound = compared_bound(source, cond, var) if len(stmts) == 2 else compared_bound(source, cond, var, ">=")
    call_stmt = then if len(stmts) == 2 else stmts[2]
    if len(stmts) == 3 and squeezed(text(source, then)) not in {"return;", "{return;}"}:
        return Refused(f"the guard is neither `if ({var} < n) atomicAdd(...)` nor `if ({var} >= n) return;`")
    if bound is None or re.search(r"[\[=]|\+\+|--|\w\s*\(", bound) or re.search(rf"\b{var}\b", bound):
        return Refused(f"the guard is not `{var} < BOUND` with BOUND a plain expression of the parameters")
    if squeezed(text(source, call_stmt)).removeprefix("{").removesuffix("}") != squeezed(source[a.start:a.end].decode()) + ";":
        return Refused("the guarded code must be the atomicAdd alone")
    return (d[0], var, text(source, d[2]), bound.strip()), _added(source, a), "", True


def _grid_stride(source: bytes, facts: KernelFacts, stmts: list[Node], a: Atomic) -> tuple[Head, str, str, bool] | Refused:
    """`T acc = 0; for (int i = GID; i < n; i += STRIDE) acc += V; atomicAdd(T, acc);` (dot_atomic): (head, V, acc,
    False); the launch stays (the loop covers any grid)."""
    d = single_declaration(source, stmts[0]) if len(stmts) == 3 and stmts[0].type == "declaration" else None
    loop = stmts[1] if d is not None and stmts[1].type == "for_statement" else None
    init = loop.child_by_field_name("initializer") if loop is not None else None
    h = single_declaration(source, init) if init is not None and init.type == "declaration" else None
    body = loop.child_by_field_name("body") if loop is not None else None
    items = statements(body) if body is not None and body.type == "compound_statement" else [body] if body else []
    why = "needs `T acc = 0; for (int i = GLOBAL_INDEX; i < n; i += GRID_STRIDE) acc += V; atomicAdd(T, acc);`"
    if d is None or loop is None or h is None or h[2] is None or len(items) != 1 or d[2] is None:
        return Refused(why)
    acc, var, upd = d[1], h[1], squeezed(text(source, loop.child_by_field_name("update")))
    bound = compared_bound(source, loop.child_by_field_name("condition"), var)
    m = re.fullmatch(rf"{acc}\s*\+=\s*(.+?);", text(source, items[0]).strip(), re.S)
    if not GLOBAL_ID["cuda"].match(squeezed(text(source, h[2]))) or upd.removeprefix(f"{var}+=") not in {"blockDim.x*gridDim.x",
                                                                                                "gridDim.x*blockDim.x"}:
        return Refused(why)
    if m is None or bound is None or squeezed(text(source, d[2])) not in {"0", "0.0f", "0.0", "0.f", "0u"} or \
            re.search(r"[\[=]|\+\+|--|\w\s*\(", bound) or re.search(rf"\b({var}|{acc})\b", bound):
        return Refused(why)
    if squeezed(text(source, stmts[2])) != squeezed(f"atomicAdd({a.target},{acc});") or re.search(rf"\b{acc}\b", m.group(1)):
        return Refused(f"the loop must be followed by `atomicAdd(TARGET, {acc});` alone, and the term must not read {acc}")
    return (h[0], var, text(source, h[2]), bound.strip()), m.group(1).strip(), acc, False


def _added(source: bytes, a: Atomic) -> str:
    value = source[a.start:a.end].decode("utf-8", "replace")
    return value[value.index("(") + 1:value.rindex(")")].split(",", 1)[1].strip()
