"""KernelFacts.shape_bound: the kernel-model fact that a kernel's work follows its block shape (blockIdx or threadIdx
used outside blockIdx*blockDim+threadIdx), computed once with the facts; launch-config refuses by it."""
from __future__ import annotations

from dataclasses import replace

import pytest

from s2s.lang.kernel_facts import kernel_facts
from s2s.passes.launch.launch_config import LaunchConfig


def _bound(body: str, dialect: str = "cuda") -> str:
    head = "__kernel void k(__global float* a, int n)" if dialect == "opencl" else "__global__ void k(float* a, int n)"
    facts = kernel_facts(f"{head} {{ {body} }}".encode(), dialect, "k")
    assert facts is not None
    return facts.shape_bound


@pytest.mark.parametrize("body", [
    "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = 0;",
    "int i = threadIdx.x + blockDim.x * blockIdx.x; if (i < n) a[i] = 0;",
    "unsigned i = __umul24(blockIdx.x, blockDim.x) + threadIdx.x; if (i < n) a[i] = 0;",
    "int i = (blockIdx.x * blockDim.x) + threadIdx.x; int j = blockIdx.y * blockDim.y + threadIdx.y; a[j * n + i] = 0;",
    "int base = blockIdx.x * blockDim.x; int i = blockIdx.x * blockDim.x + threadIdx.x; a[i] = base;",  # a block's start
    "int i = blockIdx.x * blockDim.x + threadIdx.x; /* threadIdx.x alone */ // blockIdx.y too\n a[i] = 0;",
])
def test_a_global_index_does_not_bind_the_work_to_the_block_shape(body: str) -> None:
    assert _bound(body) == ""


@pytest.mark.parametrize(("body", "first"), [
    ("int i = threadIdx.x; int j = blockIdx.x + 1; if (i > 0) a[j * n + i] = 1;", "blockIdx.x"),  # Parboil's naive stencil
    ("__shared__ float t[256]; int i = blockIdx.x * blockDim.x + threadIdx.x; t[threadIdx.x] = a[i]; a[i] = t[255 - threadIdx.x];",
     "threadIdx.x"),
    ("int i = blockIdx.x * blockDim.x + threadIdx.x; if (threadIdx.y == 0) a[i] = 0;", "threadIdx.y"),
    ("if (blockIdx.z > 0) a[blockIdx.x * blockDim.x + threadIdx.x] = 0;", "blockIdx.z"),
])
def test_blockidx_or_threadidx_on_its_own_is_named(body: str, first: str) -> None:
    assert _bound(body) == first


def test_opencl_work_item_functions_are_not_read_as_cuda_builtins() -> None:
    assert _bound("int i = get_global_id(0); if (i < n) a[i] = 0;", "opencl") == ""


def test_launch_config_reads_the_fact_and_says_why() -> None:
    facts = kernel_facts(b"__global__ void k(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; a[i] = 0; }",
                         "cuda", "k")
    assert facts is not None and facts.shape_bound == ""
    assert LaunchConfig((128,)).applies(facts) is True
    why = LaunchConfig((128,)).applies(replace(facts, shape_bound="threadIdx.x", shape_bound_loops="threadIdx.x"))
    assert isinstance(why, str) and why.startswith("threadIdx.x is used on its own")
    # threadIdx.x alone only in block-strided loops: any 1-D block covers their range
    assert LaunchConfig((128,)).applies(replace(facts, shape_bound="threadIdx.x", shape_bound_loops="")) is True
