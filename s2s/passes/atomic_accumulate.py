"""atomic-accumulate: one atomic per element into one address becomes a grid-stride sum in a register, one atomic per block.

`int i = GID; if (i < n) atomicAdd(total, EXPR);` (or `if (i >= n) return; atomicAdd(total, EXPR);`) serializes every
element at the one address: on an H200 same-address atomics run at about one per 1.4 to 1.9 ns (dot_atomic's 262144 of
them took most of its 505 µs), so reduce_atomic's 16.8M cannot come near the bandwidth floor. Here each thread of a grid
sized to fill the device (132 SMs x 2048 threads) sums its elements of a grid-stride loop in a register, the block adds
its threads' sums with warp shuffles and shared memory, and thread 0 adds the block's sum: 1056 atomics instead of
16.8M (one per thread left 270336 of them, about 380 µs of the 508 µs measured). The sum's order changes, as any order
of the atomics could: floating-point results match within the MEP's tolerance, integer ones exactly.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from s2s.lang.edits import Edit, LaunchChange, Refused, Rewrite
from s2s.lang.kernel_facts import THREAD_BUILTIN, KernelFacts, idents
from s2s.lang.kernel_model import Device

from ._block_sum import block_sum
from ._common import body_node, fresh, indent_of, statements, text
from ._elementwise import _GID, _bound, _declared, _flat, elem_type

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
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
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
    priority: ClassVar[int] = 45  # the built-in search's order: structural rewrites first
    space: ClassVar[tuple[str, ...]] = ("atomic-accumulate",)

    def applies(self, facts: KernelFacts) -> bool | str:
        if facts.dialect == "opencl":
            return "CUDA/HIP only (OpenCL 1.2 has no floating-point atomic add)"
        if len(facts.atomics) != 1 or facts.atomics[0].function != "atomicAdd" or facts.atomics[0].in_loop:
            return "needs exactly one atomicAdd, outside loops"
        target = facts.atomics[0].target
        if THREAD_BUILTIN.search(target) or idents(target) & set(facts.thread_vars):
            return "the atomic's address differs between threads"
        if facts.shared or facts.loops:
            return "shared memory or loops: not one element per thread"
        return True

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused:
        stmts = statements(body_node(source, facts))
        d = _declared(source, stmts[0]) if stmts and stmts[0].type == "declaration" else None
        gid = _GID["cuda"]
        if d is None or d[2] is None or not gid.match(_flat(text(source, d[2]))) or len(stmts) not in (2, 3):
            return Refused("needs `int i = GLOBAL_INDEX;` then the guarded atomic, and nothing else")
        var, guard = d[1], stmts[1]
        cond = guard.child_by_field_name("condition") if guard.type == "if_statement" else None
        then = guard.child_by_field_name("consequence") if cond is not None else None
        if cond is None or then is None or guard.child_by_field_name("alternative") is not None:
            return Refused(f"`{var}` is not followed by its guard")
        bound = _bound(source, cond, var) if len(stmts) == 2 else _bound(source, cond, var, ">=")
        call_stmt = then if len(stmts) == 2 else stmts[2]
        if len(stmts) == 3 and _flat(text(source, then)) not in {"return;", "{return;}"}:
            return Refused(f"the guard is neither `if ({var} < n) atomicAdd(...)` nor `if ({var} >= n) return;`")
        call = _flat(text(source, call_stmt)).removeprefix("{").removesuffix("}")
        a = facts.atomics[0]
        if bound is None or re.search(r"[\[=]|\+\+|--|\w\s*\(", bound) or re.search(rf"\b{var}\b", bound):
            return Refused(f"the guard is not `{var} < BOUND` with BOUND a plain expression of the parameters")
        if call != _flat(source[a.start:a.end].decode("utf-8", "replace")) + ";":
            return Refused("the guarded code must be the atomicAdd alone")
        value = source[a.start:a.end].decode("utf-8", "replace")
        value = value[value.index("(") + 1:value.rindex(")")].split(",", 1)[1].strip()
        if re.search(r"(?<![=!<>])=(?!=)|\+\+|--|\batomic", value) or _CALL.search(value):
            return Refused("the added value has side effects or calls a function")
        array = re.findall(r"[A-Za-z_]\w*", a.target)
        p = facts.param(array[0]) if array else None
        ty = elem_type(p.type) if p is not None else ""
        if ty not in _TYPES:
            return Refused("the atomic's target must be a float, double or integer parameter")
        acc, ind = fresh(facts, source, "acc"), indent_of(source, stmts[0].start_byte)
        new = (f"{ty} {acc} = 0;\n{ind}for ({d[0]} {var} = {text(source, d[2])}; {var} < ({bound.strip()}); "
               f"{var} += blockDim.x * gridDim.x)\n{ind}    {acc} += {value};\n{ind}"
               + f"\n{ind}".join(block_sum(facts, source, acc, ty, a.target)))
        dev = Device()
        return Rewrite((Edit(stmts[0].start_byte, stmts[-1].end_byte, new),),
                       LaunchChange(None, f"extent:{dev.sms * dev.threads_per_sm}"),
                       f"a grid-stride sum per thread, one atomicAdd to {a.target} per block")
