"""The persistent form of a sequence MEP (s2s.sequence.persistent): a window's whole iterations as one cooperative
launch. Its harness built with nvcc for each loop of our own sequence zoo; its virtual blocks and its argument schedule
run on the CPU (tests/emulate_persistent.py: one OS thread per CUDA thread, the grid barrier a barrier of them all)
at odd sizes against the original launches run the same way; its refusals; and, on a GPU, its final state against the
original replay's on each zoo loop captured for real, its speedup printed."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc
from test_sequence import FISHER, _dump_of, _index, _p, _value, fake_window, fisher_window

from s2s.sequence.capture import site_refs
from s2s.sequence.kernels import body_kernels
from s2s.sequence.mep import write_sequence_mep
from s2s.sequence.persistent import persistent_plan
from s2s.sequence.variation import variation
from s2s.sequence.window import Arg, Launch, Window, read_window

WAVE = ROOT / "bench" / "seqzoo" / "wave2d_steps"
HEAT = ROOT / "bench" / "seqzoo" / "heat1d_steps"

KERNELS = """
__global__ void relax(const float* u, float* v, int n, int t)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float left = i > 0 ? u[i - 1] : u[i];
    v[i] = 0.5f * (u[i] + left) + 0.001f * (float)(t % 7);
}
__global__ void pin(float* v, int at, float w)
{
    if (blockIdx.x * blockDim.x + threadIdx.x == 0)
        v[at] = w;
}
__global__ void tile_sum(const float* u, float* v, int n)
{
    __shared__ float tile[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? u[i] : 0.0f;
    __syncthreads();
    if (i < n)
        v[i] = tile[threadIdx.x] + 0.5f * (threadIdx.x > 0 ? tile[threadIdx.x - 1] : tile[blockDim.x - 1]);
}
__global__ void plane(const float* a, const float* b, float* c, int nx, int ny)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= nx || y >= ny)
        return;
    c[y * nx + x] = 0.5f * a[y * nx + x] + 0.25f * (b[y * nx + (x + 1) % nx] + b[((y + 1) % ny) * nx + x]);
}
"""
REFUSED = KERNELS + """
__device__ int my_block() { return blockIdx.x; }
__global__ void helper(float* v) { v[my_block()] = 1.0f; }
__global__ void early(float* v, int n)
{
    __shared__ float s[32];
    if (threadIdx.x >= n)
        return;
    s[threadIdx.x] = v[threadIdx.x];
    __syncthreads();
    v[threadIdx.x] = s[31 - threadIdx.x];
}
__global__ void waits(float* v) { v[0] = 1.0f; cudaDeviceSynchronize(); }
__global__ void ptx(float* v) { unsigned r; asm("mov.u32 %0, %%ctaid.x;" : "=r"(r)); v[r] = 1.0f; }
template <class T> __global__ void generic(T* v) { v[0] = T(1); }
__global__ void groups(float* v) { cooperative_groups::this_thread_block().sync(); v[threadIdx.x] = 1.0f; }
"""


def _la(site: str, grid: tuple[int, int, int], block: tuple[int, int, int], *args: Arg, shmem: int = 0) -> Launch:
    return Launch(0, site, grid, block, shmem, 0, tuple(args))


def _mep(tmp: Path, launches: list[Launch], n: int) -> Path:
    w = _dump_of(tmp / "dump", launches, n)
    refs = {la.site: la.site.split(":")[0] for la in launches}
    return write_sequence_mep(tmp / "seq", w, variation(w.launches), KERNELS, refs, {"function": "run"}, [])


def _plan_reason(launches: list[Launch]) -> str:
    window = Window(Path("."), tuple(launches), ())
    refs = {la.site: la.site.split(":")[0] for la in launches}
    return persistent_plan(window, variation(launches), REFUSED, refs).reason


# ---- what the form refuses, and why -----------------------------------------------------------------------------------

def test_the_form_is_refused_with_the_reason_where_it_cannot_be_expressed() -> None:
    one = ((4, 1, 1), (64, 1, 1))
    steps = 4

    def loop(*body: tuple[str, tuple[tuple[int, int, int], tuple[int, int, int]], tuple[Arg, ...]]) -> list[Launch]:
        return [_la(site, *cfg, *args) for _ in range(steps) for site, cfg, args in body]

    # a float time accumulated step by step: no schedule gives it
    timed = [_la("relax:1", *one, _p(0), _p(1), _value(200, "i"), _value(0.1 * k + 0.01 * k * k, "f")) for k in range(4)]
    assert "relax:1 argument 3: varying: not a constant" in _plan_reason(timed)
    # dynamic shared memory that changes between launches of one kernel
    shm = [_la("tile_sum:1", *one, _p(0), _p(1), _value(200, "i"), shmem=128 * (k % 2)) for k in range(4)]
    assert "dynamic shared memory of tile_sum (tile_sum:1) changes between iterations" in _plan_reason(shm)
    assert "my_block, which reads the block or thread index itself" in _plan_reason(loop(("helper:1", one, (_p(0),))))
    assert "returns before a __syncthreads" in _plan_reason(loop(("early:1", ((1, 1, 1), (32, 1, 1)), (_p(0), _value(7, "i")))))
    assert "calls the CUDA API from the device" in _plan_reason(loop(("waits:1", one, (_p(0),))))
    assert "inline PTX" in _plan_reason(loop(("ptx:1", one, (_p(0),))))
    assert "uses cooperative groups" in _plan_reason(loop(("groups:1", one, (_p(0),))))
    # a body with barriers in blocks smaller than the largest of the body: its other threads would miss the barrier
    small = loop(("relax:1", ((4, 1, 1), (128, 1, 1)), (_p(0), _p(1), _value(200, "i"), _value(3, "i"))),
                 ("tile_sum:1", one, (_p(1), _p(0), _value(200, "i"))))
    assert "tile_sum synchronizes blocks of 64 threads and the body's largest block has 128" in _plan_reason(small)
    window = Window(Path("."), tuple(loop(("generic:1", one, (_p(0),)))), ())
    assert "a kernel in a namespace or a template" in persistent_plan(window, variation(window.launches), REFUSED,
                                                                       {"generic:1": "generic<float>"}).reason
    assert "fewer than two iterations" in _plan_reason([_la("pin:1", *one, _p(0), _value(3, "i"), _value(1.0, "f"))])
    # what it takes: the rotating pointers, the affine index, the smaller block without barriers
    ok = loop(("relax:1", ((4, 1, 1), (128, 1, 1)), (_p(0), _p(1), _value(200, "i"), _value(3, "i"))),
              ("pin:1", ((1, 1, 1), (32, 1, 1)), (_p(1), _value(5, "i"), _value(2.0, "f"))))
    assert _plan_reason(ok) == ""


# ---- the persistent kernel on the CPU against the original launches --------------------------------------------------

def _heat_like(n: int, steps: int, block: int, remainder: bool) -> list[Launch]:
    """relax (an early return, a time index) from one buffer into the other, then pin (one block of 32 threads, a value
    alternating with period 2) on the output; the buffers swap each step; `remainder`: one more relax."""
    grid = ((n + block - 1) // block, 1, 1)
    out = []
    for t in range(steps):
        u, v = t % 2, 1 - t % 2
        out += [_la("relax:1", grid, (block, 1, 1), _p(u), _p(v), _value(n, "i"), _value(40 + 3 * t, "i")),
                _la("pin:1", (1, 1, 1), (32, 1, 1), _p(v), _value(n // 3, "i"), _value(1.5 if t % 2 else -2.5, "f"))]
    if remainder:
        out.append(_la("relax:1", grid, (block, 1, 1), _p(steps % 2), _p(1 - steps % 2), _value(n, "i"), _value(40 + 3 * steps, "i")))
    return out


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")
def test_virtual_blocks_and_the_schedule_at_odd_sizes_give_the_original_state(tmp_path: Path) -> None:
    """777 points in blocks of 64 (13 virtual blocks, the last one part empty: the early return), run by 1, 3 and 5 real
    blocks (13 is a multiple of none but 1), a second kernel of one 32-thread block inside 64-thread real blocks, the
    pointers rotating, the time index affine with step 3, a value alternating, a trailing launch outside the
    schedule: the final state is the original launches' byte for byte."""
    from emulate_persistent import run_on_cpu

    mep = _mep(tmp_path, _heat_like(777, 5, 64, remainder=True), 777)
    manifest = json.loads((mep / "sequence.json").read_text())
    summary = {k: v for k, v in manifest["persistent"].items() if k != "launches"}
    assert summary == {"applies": True, "iterations": 5, "threads": 64, "shmem": 0, "barriers": []}
    assert [(la["kernel"], la["threads"], [a["kind"] for a in la["args"]]) for la in manifest["persistent"]["launches"]] == [
        ("relax", 64, ["rotating", "rotating", "fixed", "affine"]), ("pin", 32, ["rotating", "fixed", "periodic"])]
    text = (mep / "persistent.cu").read_text()
    assert "p.a0_0[it % 2], p.a0_1[it % 2], p.a0_2[0], s2s_persist_affine(p.a0_3[0], p.a0_3_step * it)" in text
    assert "p.a0_3_step = 3LL;" in text and "p.a1_2[it % 2]" in text
    original = run_on_cpu(mep, tmp_path, "original")
    assert original != [(mep / "data" / f"buf{i}.before.bin").read_bytes() for i in (0, 1)]
    for real in (1, 3, 5):
        assert run_on_cpu(mep, tmp_path, "persistent", real) == original, real
    # a launch that breaks the schedule (the time index jumps at the third step) is caught before any launch
    with pytest.raises(AssertionError, match="does not follow the schedule"):
        run_on_cpu(mep, tmp_path, "persistent", 3, tamper=(4, 3, struct.pack("<i", 99).hex()))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")
def test_a_body_with_shared_memory_and_a_barrier_keeps_its_meaning_over_virtual_blocks(tmp_path: Path) -> None:
    """tile_sum (a __shared__ tile, __syncthreads, each thread reading its neighbour's element of the tile) after relax:
    one real block runs all 13 virtual blocks of each, the tile reused between them behind a block barrier."""
    from emulate_persistent import run_on_cpu

    n, grid = 777, ((777 + 63) // 64, 1, 1)
    launches = []
    for t in range(4):
        launches += [_la("relax:1", grid, (64, 1, 1), _p(0), _p(1), _value(n, "i"), _value(t, "i")),
                     _la("tile_sum:1", grid, (64, 1, 1), _p(1), _p(0), _value(n, "i"))]
    mep = _mep(tmp_path, launches, n)
    manifest = json.loads((mep / "sequence.json").read_text())
    assert manifest["persistent"]["barriers"] == ["tile_sum"]
    text = (mep / "persistent.cu").read_text()
    assert text.count("__syncthreads();  // its shared memory") == 1  # after tile_sum's virtual blocks only
    original = run_on_cpu(mep, tmp_path, "original")
    assert run_on_cpu(mep, tmp_path, "persistent", 1) == original


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")
def test_a_2d_grid_of_2d_blocks_with_three_rotating_buffers(tmp_path: Path) -> None:
    """wave2d's shape at odd sizes: a 21 x 19 plane in 8 x 4 blocks (3 x 5 virtual blocks, remapped from a linear real
    block of 32 threads), three buffers rotating, then pin on the newest; 4 real blocks (15 is no multiple of 4)."""
    from emulate_persistent import run_on_cpu

    nx, ny = 21, 19
    launches = []
    for t in range(7):
        a, b, c = t % 3, (t + 1) % 3, (t + 2) % 3
        launches += [_la("plane:1", (3, 5, 1), (8, 4, 1), _p(a), _p(b), _p(c), _value(nx, "i"), _value(ny, "i")),
                     _la("pin:1", (1, 1, 1), (32, 1, 1), _p(c), _value(nx + 1, "i"), _value(0.25, "f"))]
    mep = _mep(tmp_path, launches, nx * ny)
    assert json.loads((mep / "sequence.json").read_text())["variation"]["period"] == 3
    original = run_on_cpu(mep, tmp_path, "original")
    for real in (4, 15):
        assert run_on_cpu(mep, tmp_path, "persistent", real) == original, real


# ---- the harness of each zoo loop, built with nvcc -------------------------------------------------------------------

def _wave_window(dump: Path, steps: int) -> Window:
    """wave2d_steps' loop as the runtime records it (256 x 256, its blocks of 32 x 8, three rotating buffers)."""
    launches = []
    for t in range(steps):
        p, c, n = t % 3, (t + 1) % 3, (t + 2) % 3
        launches += [_la("wave2d_steps.cu:87", (8, 32, 1), (32, 8, 1), _p(p), _p(c), _p(n), _value(256, "i"),
                         _value(256, "i"), _value(0.2, "f")),
                     _la("wave2d_steps.cu:88", (4, 1, 1), (128, 1, 1), _p(n), _value(256, "i"), _value(256, "i"))]
    return _dump_of(dump, launches, 256 * 256)


def zoo_mep(tmp: Path, name: str) -> Path:
    """The zoo loop's sequence MEP from a window written as its runtime would (its kernels extracted from the app)."""
    app = {"heat1d_steps": HEAT, "wave2d_steps": WAVE, "fisher1d_steps": FISHER}[name]
    if name == "heat1d_steps":
        fake_window(tmp / "dump", 9)
        w = read_window(tmp / "dump")
        index = _index()
    elif name == "wave2d_steps":
        w = _wave_window(tmp / "dump", 8)
        from s2s.scan.tree import scan_tree

        index = scan_tree(app)
    else:
        fisher_window(tmp / "dump", 6)
        w = read_window(tmp / "dump")
        from s2s.scan.tree import scan_tree

        index = scan_tree(app)
    names = sorted({s.kernel for s in index.launches}, key=[s.kernel for s in index.launches].index)
    kernels = body_kernels(app, names, index)
    refs = site_refs(list(index.launches), kernels.qualified)
    return write_sequence_mep(tmp / "seq", w, variation(w.launches), kernels.text, refs, {"function": "main"}, [])


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("name", ["heat1d_steps", "wave2d_steps", "fisher1d_steps"])
def test_the_persistent_harness_of_each_zoo_loop_builds(tmp_path: Path, name: str) -> None:
    mep = zoo_mep(tmp_path, name)
    manifest = json.loads((mep / "sequence.json").read_text())
    assert manifest["persistent"]["applies"] is True, manifest["persistent"]
    text = (mep / "persistent.cu").read_text()
    assert "__global__ void s2s_persistent(" in text and "cooperative_groups::this_grid().sync();" in text
    if name == "heat1d_steps":  # the source's time index
        assert "s2s_persist_affine(p.a1_2[0], p.a1_2_step * it)" in text
    if name == "wave2d_steps":  # three rotating buffers
        assert "p.a0_0[it % 3], p.a0_1[it % 3], p.a0_2[it % 3]" in text
    assert '#include "persistent.cu"' in (mep / "harness.cu").read_text()
    proc = subprocess.run(["make"], cwd=mep, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---- on the GPU: each zoo loop captured for real, the persistent form against the original replay --------------------

_GPU = shutil.which("nvidia-smi") is not None


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not _GPU, reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("name", ["heat1d_steps", "wave2d_steps", "fisher1d_steps"])
def test_the_persistent_form_reproduces_the_original_replay_on_the_gpu(tmp_path: Path, name: str) -> None:
    """The zoo application built and run (its loop captured whole from a real run), the harness replays the window
    as the application made it and as one cooperative launch: the final states must agree (and the original replay
    the state the application left); the persistent form's speedup is printed."""
    from s2s.sequence.capture import capture_sequence
    from s2s.sequence.replay import replay

    app = tmp_path / name
    shutil.copytree(ROOT / "bench" / "seqzoo" / name, app)
    got = capture_sequence(app, "make", f"./{name}", tmp_path / "seq", timeout=300)
    manifest = json.loads((got.mep / "sequence.json").read_text())
    assert manifest["persistent"]["applies"] is True, manifest["persistent"]
    r = replay(got.mep, 5)
    m = r["modes"]
    print(json.dumps({"loop": name, "launches": r["launches"], "original_ms": m["original"]["median_ms"],
                      "persistent": m.get("persistent"), "speedup": r["speedup"],
                      "persistent_refused": r.get("persistent_refused"), "check": r["checks"].get("persistent")}))
    assert "persistent" in m, r.get("persistent_refused")
    assert r["checks"]["replay_vs_capture"]["ok"] is True and r["checks"]["persistent"]["ok"] is True, r["checks"]
    assert r["verdict"] == "ok", r


# ---- reintegration: the loop's launches as one cooperative launch per batch, a diff of the host code ----------------

FAKE = ROOT / "tests" / "fixtures" / "fake_cuda"


def _heat_app(tmp: Path, steps: int, extra: str = "") -> Path:
    """heat1d_steps (STEPS made small, N 4096: 16 blocks of 256; `extra` after the source's launch) copied to tmp/app."""
    app = tmp / "app"
    shutil.copytree(HEAT, app)
    src = app / "heat1d_steps.cu"
    src.write_text(src.read_text().replace("#define STEPS 10000", f"#define STEPS {steps}")
                   .replace("#define N (1 << 16)", "#define N (1 << 12)").replace("t, AMP);\n", f"t, AMP);\n{extra}\n"))
    return src


def _persistent_heat(tmp: Path, steps: int, batch: int, extra: str = "") -> Path:
    """The heat app's loop rewritten into the persistent form, batches of `batch` iterations (the plan of a captured
    window of 9, its batch set)."""
    from dataclasses import replace

    from s2s.scan.tree import scan_tree
    from s2s.sequence.host_persistent import persistent_loop
    from s2s.sequence.persistent import plan_from_dict

    mep = zoo_mep(tmp / "mep", "heat1d_steps")
    plan = replace(plan_from_dict(json.loads((mep / "sequence.json").read_text())["persistent"]), iterations=batch)
    src = _heat_app(tmp, steps, extra)
    sites = sorted(scan_tree(src.parent).launches, key=lambda s: s.start_byte)
    edit = persistent_loop(src.read_bytes(), sites, plan)
    assert edit.applies, edit.reason
    src.write_bytes(edit.data)
    return src


def _run_on_fake(src: Path, tmp: Path) -> tuple[str, dict[str, int], list[str]]:
    """The rewritten app built with g++ (C++20) against the fake runtime, its kernels and its persistent kernel run on
    the host: its output, the runtime's counts, the loop's time lines."""
    import os

    text = src.read_text()
    ns = text[text.index("namespace s2s_persist_"):].split()[1]
    wrapper = tmp / "run.cpp"
    wrapper.write_text(f'#include "{src}"\n#include <cstdio>\nstatic const bool registered = (fake_cuda_kernel(&heat_step), '
                       f"fake_cuda_kernel(&heat_source), fake_cuda_kernel(&{ns}::s2s_persistent), std::atexit([] {{ "
                       'std::fprintf(stderr, "stats %ld %ld %ld\\n", fake_cuda::stats().direct, fake_cuda::stats().graph_launches, '
                       "fake_cuda::cooperative_launches()); }), true);\n")
    proc = subprocess.run(["g++", "-std=c++17", "-O1", "-pthread", "-I", str(FAKE), str(wrapper), "-o", str(tmp / "app.exe")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    times = tmp / "times.txt"
    ran = subprocess.run([str(tmp / "app.exe")], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "S2S_GRAPH_TIMES": str(times)})
    assert ran.returncode == 0, ran.stdout + ran.stderr
    counts = [int(x) for x in ran.stderr.split("stats ")[1].split()]
    return ran.stdout, dict(zip(("direct", "graph", "cooperative"), counts)), times.read_text().splitlines()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")
def test_the_persistent_heat_app_runs_right_on_the_fake_runtime(tmp_path: Path) -> None:
    """301 steps in batches of 100 iterations: three cooperative launches (16 virtual blocks of the stencil on the fake
    device's 4 co-resident blocks, the time index from the schedule), the last step's two launches made as written;
    the application's own check passes and the loop's time is written as for a graphed loop."""
    src = _persistent_heat(tmp_path, 301, 100)
    text = src.read_text()
    assert "heat_step<<<" not in text and "s2s_body::launch(s2s_body_graph, heat_step, grid, block, 0, d_u, d_v, N, R);" in text
    assert 's2s_body::Graph s2s_body_graph(200, "heat1d_steps.cu:68", false, &s2s_persist::run<s2s_persist_68::s2s_persist_plan>);' in text
    assert text.index("namespace s2s_persist_68 {") < text.index("namespace s2s_persist {") < text.index("int main")
    out, stats, times = _run_on_fake(src, tmp_path)
    assert "heat1d_steps: ok (0 of 4096 values wrong)" in out, out
    assert stats == {"direct": 2, "graph": 0, "cooperative": 3}, stats
    (line,) = times
    assert line.split()[:2] == ["graph_loop", "heat1d_steps.cu:68"] and line.split()[3] == "602", line


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")
def test_launches_that_leave_the_schedule_are_made_as_written(tmp_path: Path) -> None:
    """A launch made only at some steps: the batches it falls in do not follow the body (another kernel at a
    position, the iterations no longer aligned), so their launches are made as written; the result is the app's own."""
    src = _persistent_heat(tmp_path, 61, 20, "        if (t == 45) heat_source<<<1, 32>>>(d_v, N / 3, t, 0.0f);")
    out, stats, _times = _run_on_fake(src, tmp_path)
    assert "heat1d_steps: ok (0 of 4096 values wrong)" in out, out
    assert stats["cooperative"] == 2 and stats["direct"] == 2 * 61 + 1 - 2 * 40, stats  # steps 0-39 persistent


def test_reintegration_is_refused_with_the_reason(tmp_path: Path) -> None:
    from s2s.scan.tree import scan_tree
    from s2s.sequence.host_persistent import persistent_loop
    from s2s.sequence.persistent import plan_from_dict

    mep = zoo_mep(tmp_path / "mep", "heat1d_steps")
    plan = plan_from_dict(json.loads((mep / "sequence.json").read_text())["persistent"])

    def reason(text: str) -> str:
        app = tmp_path / f"app{len(list(tmp_path.iterdir()))}"
        app.mkdir()
        (app / "heat1d_steps.cu").write_text(text)
        sites = sorted(scan_tree(app).launches, key=lambda s: s.start_byte)
        return persistent_loop(text.encode(), sites, plan).reason

    original = (HEAT / "heat1d_steps.cu").read_text()
    # the host copies between iterations: work the window does not hold
    assert "calls cudaMemcpy (line 71)" in reason(original.replace(
        "t, AMP);\n", "t, AMP);\n        cudaMemcpy(d_u, d_v, 4, cudaMemcpyDeviceToDevice);\n"))
    # a kernel defined after the loop's function: the persistent kernel before it could not call its body
    moved = original.replace("__global__ void heat_source(float* v, int at, int t, float amp)\n{\n"
                             "    if (blockIdx.x * blockDim.x + threadIdx.x == 0)\n        v[at] += amp * sinf(0.001f * (float)t);\n}\n",
                             "__global__ void heat_source(float* v, int at, int t, float amp);\n")
    moved += ("__global__ void heat_source(float* v, int at, int t, float amp)\n{\n"
              "    if (threadIdx.x == 0)\n        v[at] += amp * sinf(0.001f * (float)t);\n}\n")
    assert "heat_source is not defined in this file before the loop's function" in reason(moved)
    refused = plan_from_dict({"applies": False, "reason": "relax:1 argument 3: varying"})
    assert persistent_loop(original.encode(), [], refused).reason == "no persistent form: relax:1 argument 3: varying"


def _captured_from(mep: Path, app: Path, name: str) -> Path:
    """`mep` made to say it was captured from `app` as it is now (its origin: the tree, the host file and its hash)."""
    from s2s.scan.tree import scan_tree
    from s2s.sequence.host_graph import file_sha256

    manifest = json.loads((mep / "sequence.json").read_text())
    sites = sorted(scan_tree(app).launches, key=lambda s: s.start_byte)
    manifest["origin"] = {"tree": str(app), "file": f"{name}.cu", "file_sha256": file_sha256(app / f"{name}.cu"),
                          "sites": [f"{s.file}:{s.line}" for s in sites], "function": "main"}
    (mep / "sequence.json").write_text(json.dumps(manifest))
    return mep


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("name", ["heat1d_steps", "wave2d_steps", "fisher1d_steps"])
def test_each_zoo_app_made_persistent_by_its_diff_builds(tmp_path: Path, name: str) -> None:
    """The diff of the zoo loop's MEP (persistent_diff: the host file checked unchanged since the capture) applies to a
    copy of the app with patch, and the copy builds with nvcc."""
    from s2s.sequence.host_persistent import persistent_diff

    app = {"heat1d_steps": HEAT, "wave2d_steps": WAVE, "fisher1d_steps": FISHER}[name]
    mep = _captured_from(zoo_mep(tmp_path / "mep", name), app, name)
    diff = persistent_diff(mep).decode()
    assert diff.startswith(f"--- a/{name}.cu\n+++ b/{name}.cu\n") and "+__global__ void s2s_persistent(" in diff
    patched = tmp_path / "patched"
    shutil.copytree(app, patched)
    proc = subprocess.run(["patch", "-p1"], input=diff, cwd=patched, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run(["make"], cwd=patched, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---- chosen only by measurement -------------------------------------------------------------------------------------

def _measured(persistent_ms: float, persistent_ok: bool = True) -> dict[str, object]:
    """The harness's result, its numbers chosen: the original at 60 ms (55 ms at its fastest), the body graph at 24."""
    return {"verdict": "ok", "launches": 40,
            "modes": {"original": {"median_ms": 60.0, "min_ms": 55.0, "setup_ms": 0.0},
                      "graph_window": {"median_ms": 20.0, "setup_ms": 90.0},
                      "graph_body": {"median_ms": 24.0, "setup_ms": 0.4},
                      "persistent": {"median_ms": persistent_ms, "setup_ms": 0.6}},
            "speedup": {"graph_window": 3.0, "graph_body": 2.5, "persistent": 60.0 / persistent_ms},
            "checks": {"replay_vs_capture": {"ok": True}, "graph_window": {"ok": True}, "graph_body": {"ok": True},
                       "persistent": {"ok": persistent_ok}}}


def test_the_persistent_form_is_chosen_only_where_it_measured_fastest_and_checked() -> None:
    from s2s.sequence.choice import choose_form

    form, why = choose_form(_measured(12.0))
    assert form == "persistent" and "persistent: 12.000 ms + 0.600 ms to instantiate, 4.37x" in why
    assert choose_form(_measured(30.0))[0] == "graph_body"  # slower than the body graph: not chosen
    assert choose_form(_measured(12.0, persistent_ok=False))[0] == "graph_body"  # its check failed: not a candidate
    without = _measured(12.0)
    del without["modes"]["persistent"]  # type: ignore[attr-defined]  # refused on the device: never chosen
    assert choose_form(without)[0] == "graph_body"


@pytest.mark.slow
def test_auto_makes_the_loop_persistent_in_the_staged_copy_where_it_wins(tmp_path: Path) -> None:
    """s2s auto's sequence step on the heat app (capture faked as in test_sequence_auto): the persistent form measured
    fastest, so the staged copy's loop becomes one cooperative launch per batch of the window's iterations; the
    original tree is only read."""
    from test_sequence_auto import _run

    rows, staged = _run(tmp_path, lambda mep, reps: _measured(12.0))
    (row,) = rows
    assert row["status"].startswith("reintegrated (persistent;") and row["form"] == "persistent", row
    text = (staged / "heat1d_steps.cu").read_text()
    assert "&s2s_persist::run<s2s_persist_68::s2s_persist_plan>" in text and "heat_step<<<" not in text
    assert (HEAT / "heat1d_steps.cu").read_text().count("s2s_persist") == 0


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")
def test_the_harness_runs_its_persistent_mode_on_the_fake_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """heat1d's window (7 steps, 4099 points: 17 virtual blocks of the stencil on the fake device's 4 co-resident
    blocks) through the MEP's own harness built with g++ against the fake runtime: its grid sized by the occupancy
    calls, the trial launch, the schedule checked and filled in each run, the persistent kernel's final state the
    original replay's byte for byte; a device that cannot hold it leaves the mode out with the reason."""
    from test_sequence import harness_on_host

    mep = zoo_mep(tmp_path, "heat1d_steps")
    ran = harness_on_host(mep, ["heat_step", "heat_source", "s2s_persistent"], tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    r = json.loads(ran.stdout.splitlines()[-1])
    assert "persistent" in r["modes"] and "persistent_refused" not in r, r
    assert r["checks"]["persistent"]["identical"] is True and r["checks"]["window_changes_state"] is True, r
    # in batches of 4 iterations (4, 4, then 1: each batch's schedule filled from its own first iterations, the
    # rotation starting over with the batch)
    import s2s.sequence.mep as mep_module

    monkeypatch.setattr(mep_module, "BATCH", 4)
    batched = zoo_mep(tmp_path / "batched", "heat1d_steps")
    assert "static const long long persist_batch = 4;" in (batched / "harness.cu").read_text()
    ran = harness_on_host(batched, ["heat_step", "heat_source", "s2s_persistent"], tmp_path / "batched")
    r = json.loads(ran.stdout.splitlines()[-1])
    assert r["checks"]["persistent"]["identical"] is True, r
    # the persistent kernel not registered: its trial launch fails, the mode is left out, the others still run
    (tmp_path / "bare").mkdir()
    ran = harness_on_host(mep, ["heat_step", "heat_source"], tmp_path / "bare")
    r = json.loads(ran.stdout.splitlines()[-1])
    assert "persistent" not in r["modes"] and r["persistent_refused"].startswith("the cooperative launch failed"), r
    assert r["checks"]["graph_body"]["identical"] is True


def test_sequence_run_diff_writes_the_persistent_diff_where_it_measured_fastest(tmp_path: Path) -> None:
    """`s2s sequence --run --diff FILE`: the form chosen by the measurement is the persistent one, so FILE holds its
    diff; where the body graph measured faster, FILE holds the body graph's."""
    import io

    from rich.console import Console

    from s2s.cli.sequence import write_graph_diff

    mep = _captured_from(zoo_mep(tmp_path / "mep", "heat1d_steps"), HEAT, "heat1d_steps")
    said = io.StringIO()
    write_graph_diff(mep, _measured(12.0), str(tmp_path / "p.diff"), Console(file=said, width=400))
    assert "the loop as persistent" in said.getvalue()
    assert "&s2s_persist::run<s2s_persist_68::s2s_persist_plan>);" in (tmp_path / "p.diff").read_text()
    write_graph_diff(mep, _measured(30.0), str(tmp_path / "g.diff"), Console(file=said, width=400))
    assert 's2s_body::Graph s2s_body_graph(4, "heat1d_steps.cu:68");' in (tmp_path / "g.diff").read_text()


@pytest.mark.slow
@needs_nvcc
def test_a_body_with_dynamic_shared_memory_builds_with_the_largest_size(tmp_path: Path) -> None:
    """`extern __shared__` inside the body's device function (the dynamic shared memory of the one launch, the body's
    largest): the harness builds with nvcc, and a block barrier follows each virtual block."""
    kernels = KERNELS + """
__global__ void dyn(const float* u, float* v, int n)
{
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? u[i] : 0.0f;
    __syncthreads();
    if (i < n)
        v[i] = tile[threadIdx.x] + tile[(threadIdx.x + 1) % blockDim.x];
}
"""
    launches = []
    for t in range(4):
        launches += [_la("dyn:1", (13, 1, 1), (64, 1, 1), _p(t % 2), _p(1 - t % 2), _value(777, "i"), shmem=256),
                     _la("pin:1", (1, 1, 1), (32, 1, 1), _p(1 - t % 2), _value(3, "i"), _value(1.0, "f"))]
    w = _dump_of(tmp_path / "dump", launches, 777)
    w = Window(w.dump, tuple(launches), w.buffers)  # the dump's launch lines hold no shared memory size
    mep = write_sequence_mep(tmp_path / "seq", w, variation(launches), kernels, {"dyn:1": "dyn", "pin:1": "pin"}, {}, [])
    manifest = json.loads((mep / "sequence.json").read_text())
    assert manifest["persistent"]["shmem"] == 256 and manifest["persistent"]["barriers"] == ["dyn"]
    assert "l 0 13 1 1 64 1 1 256 3" in (mep / "data" / "replay.txt").read_text().splitlines()
    assert (mep / "persistent.cu").read_text().count("__syncthreads();  // its shared memory") == 1
    proc = subprocess.run(["make"], cwd=mep, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
