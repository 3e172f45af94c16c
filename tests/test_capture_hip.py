"""HIP applications are profiled and captured like CUDA ones (issue 26 item 5): `hipLaunchKernelGGL(k, ...)`,
`hipLaunchKernelGGL(HIP_KERNEL_NAME(k<T>), ...)` and chevrons in .hip/.cpp sources are instrumented in the same copy,
and where no hipcc is installed the application's own `hipcc` build runs through s2s's hipcc (nvcc with the HIP-to-CUDA
shim). samples/hip_matrix is the application: its Makefile says `hipcc`. The end-to-end `s2s auto` runs on a GPU only
(`-m gpu`)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import SAMPLES, needs_gpu, needs_nvcc, run_cli
from safety_util import fingerprint

from s2s.base.errors import UserError
from s2s.capture.hipcc import WRAPPER_ENV, hipcc_on_path, real_hipcc, refuse_hip_on_amd, uses_hip
from s2s.capture.hipcc_nvcc import translate
from s2s.capture.indirect import indirect_sites
from s2s.capture.instrument import instrument_kernels
from s2s.capture.profile import instrument_all, measure
from s2s.extract.mep_writer import make_mep
from s2s.scan.tree import scan_tree

APP = SAMPLES / "hip_matrix"
no_hipcc = pytest.mark.skipif(shutil.which("hipcc") is not None, reason="a real hipcc is installed")


def test_scan_finds_each_hip_launch_form() -> None:
    index = scan_tree(APP)
    got = {(s.kind, s.kernel, s.template_args, s.file) for s in index.launches}
    assert got == {("hipLaunchKernelGGL", "matmul", "", "src/kernels.hip"),
                   ("hipLaunchKernelGGL", "scale_rows", "float", "src/kernels.hip"),
                   ("chevron", "halve_sum", "", "src/kernels.hip")}
    assert {k.name: k.language for k in index.kernels} == {"matmul": "hip", "scale_rows": "hip", "halve_sum": "hip"}
    # the trees whose builds get s2s's hipcc where ROCm is not installed
    chevrons = [s for s in index.launches if s.kind == "chevron"]
    assert uses_hip(APP, index.launches) and uses_hip(APP, chevrons)  # a chevron in a .hip file
    assert uses_hip(APP, [], ["cuda", "hip"]) and not uses_hip(APP, [], ["cuda"])
    heat = scan_tree(SAMPLES / "heat3d_cuda")
    assert not uses_hip(SAMPLES / "heat3d_cuda", heat.launches, [k.language for k in heat.kernels])


def _mep(tmp: Path, name: str):  # type: ignore[no-untyped-def]
    _out, m, ex = make_mep(str(APP), name, str(tmp / f"mep-{name}"))
    return m, list(ex.launches)


def _make(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-j2"], cwd=root, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@needs_nvcc
@no_hipcc
def test_capture_instruments_every_hip_launch_form_and_the_copy_builds_with_its_hipcc(tmp_path: Path) -> None:
    """The HIP application was refused ("HIP applications are not supported yet"); now each launch form gets the
    capture calls with the kernel as the launch names it, and the copy builds with the Makefile's `hipcc`."""
    before = fingerprint(APP)
    kernels = [_mep(tmp_path, k) for k in ("matmul", "scale_rows", "halve_sum")]
    assert [m.backend for m, _ in kernels] == ["hip"] * 3
    ins = instrument_kernels(APP, tmp_path / "work", kernels)
    assert not ins.errors and ins.sites == ["src/kernels.hip:45", "src/kernels.hip:51", "src/kernels.hip:58"]
    text = (ins.root / "src/kernels.hip").read_text()
    assert ('s2s_capture::before(&matmul, "src/kernels.hip:45", dim3(grid), dim3(block), (size_t)(0), '
            "(cudaStream_t)(stream), dA, dB, dC, n);") in text
    assert ('s2s_capture::before<1>(&scale_rows<float>, "src/kernels.hip:51", dim3(dim3((n + 255) / 256, n)), '
            "dim3(dim3(256)), (size_t)(0), (cudaStream_t)(stream), dA, ds, n);") in text
    assert "s2s_capture::targ<float>()" in text  # the launch's template argument recorded, as for a chevron
    assert ('s2s_capture::before<2>(&halve_sum, "src/kernels.hip:58", dim3((count + 255) / 256), dim3(256), '
            "(size_t)(0), (cudaStream_t)(stream), dx, dy, count);") in text
    for where in ("45", "51", "58"):
        assert f'after{"" if where == "45" else "<1>" if where == "51" else "<2>"}("src/kernels.hip:{where}");' in text
    with hipcc_on_path(True) as note:
        assert "nvcc with the HIP-to-CUDA shim" in note and shutil.which("hipcc") == os.environ[WRAPPER_ENV]
        assert real_hipcc() is None  # the MEP backend never takes ours for a ROCm hipcc
        proc = _make(ins.root)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "hipcc -O3" in proc.stdout and (ins.root / "hip_matrix").is_file()
    assert WRAPPER_ENV not in os.environ and shutil.which("hipcc") is None  # PATH as it was
    assert fingerprint(APP) == before


@pytest.mark.slow
@needs_nvcc
@no_hipcc
def test_profile_times_every_hip_launch_form_and_the_copy_builds(tmp_path: Path) -> None:
    index = scan_tree(APP)
    root, sites, notes, backend = instrument_all(APP, tmp_path / "work", list(index.launches), {k.name for k in index.kernels})
    assert backend == "cuda" and sites == ["src/kernels.hip:45", "src/kernels.hip:51", "src/kernels.hip:58"]
    assert not any("not timed" in n for n in notes), notes
    text = (root / "src/kernels.hip").read_text()
    for name, where in (("matmul", 45), ("scale_rows", 51), ("halve_sum", 58)):
        assert f's2s_prof::begin("{name}", "src/kernels.hip:{where}", (cudaStream_t)(stream));' in text
    assert text.count("s2s_prof::end();") == 3
    with hipcc_on_path(True):
        proc = _make(root)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]


HOST = """#include <hip/hip_runtime.h>
template <typename T, int N> __global__ void axpy(T* y, const T* x, T a, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i] * N; }
__global__ void twice(float* y, int n) { int i = threadIdx.x; if (i < n) y[i] *= 2.0f; }
void run(float* y, const float* x, int n, hipStream_t s)
{
    hipLaunchKernelGGL((axpy<float, 2>), dim3(1), dim3(64), 0, s, y, x, 2.0f, n);
    hipLaunchKernelGGL(HIP_KERNEL_NAME(axpy<float, 4>), dim3(1), dim3(64), 0, 0, y, x, 1.0f, n);
    for (int r = 0; r < 2; ++r)
        hipLaunchKernelGGL(/* the kernel */ twice, dim3(1), dim3(64), 0, s, y, n);
    if (n > 0) twice<<<1, 64>>>(y, n);
    void (*fp)(float*, int) = twice;
    hipLaunchKernelGGL(fp, dim3(1), dim3(32), 0, s, y, n);
}
"""


@needs_nvcc
@no_hipcc
def test_each_spelling_of_the_hip_launch_is_rewritten_and_compiles(tmp_path: Path) -> None:
    """Parenthesized and HIP_KERNEL_NAME template kernels, a comment before the kernel, a launch as the unbraced body
    of a loop: each timed with its kernel's name, each captured with the kernel as written."""
    tree = tmp_path / "app"
    tree.mkdir()
    (tree / "launch.hip").write_text(HOST)
    index = scan_tree(tree)
    assert sorted((s.kind, s.kernel, s.template_args) for s in index.launches) == [
        ("chevron", "twice", ""), ("hipLaunchKernelGGL", "axpy", "float, 2"), ("hipLaunchKernelGGL", "axpy", "float, 4"),
        ("hipLaunchKernelGGL", "fp", ""), ("hipLaunchKernelGGL", "twice", "")]
    names = {k.name for k in index.kernels}
    root, sites, _notes, _b = instrument_all(tree, tmp_path / "prof", list(index.launches), names)
    assert len(sites) == 5
    assert 's2s_prof::begin_fn((const void*)(fp), "fp", "launch.hip:13"' in (root / "launch.hip").read_text()
    _out, m, ex = make_mep(str(tree), "axpy", str(tmp_path / "mep-axpy"))
    _out2, m2, ex2 = make_mep(str(tree), "twice", str(tmp_path / "mep-twice"))
    ins = instrument_kernels(tree, tmp_path / "cap", [(m, list(ex.launches)), (m2, list(ex2.launches))],
                             indirect_sites(index.launches, names))
    assert not ins.errors and len(ins.sites) == 5, (ins.errors, ins.sites)
    text = (ins.root / "launch.hip").read_text()
    assert 's2s_capture::before_fn((fp), "launch.hip:13", dim3(dim3(1)), dim3(dim3(32))' in text
    assert "s2s_capture::before(&axpy<float, 2>, \"launch.hip:7\", dim3(dim3(1)), dim3(dim3(64)), (size_t)(0), " \
           "(cudaStream_t)(s), y, x, 2.0f, n);" in text
    assert "s2s_capture::before(&axpy<float, 4>, \"launch.hip:8\"" in text
    assert "{ s2s_capture::before<1>(&twice, \"launch.hip:10\"" in text  # the loop's body, braced
    for built in (root, ins.root):
        proc = subprocess.run(["nvcc", "-x", "cu", "-arch=sm_90", "-std=c++17",
                               "-I" + str(Path(__file__).resolve().parents[1] / "templates" / "hip_shim"),
                               "-c", "launch.hip", "-o", str(tmp_path / "launch.o")], cwd=built, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
@needs_nvcc
@no_hipcc
def test_a_winner_reintegrates_at_the_hip_launch_and_the_application_builds_with_its_hipcc(tmp_path: Path) -> None:
    """The blocked product as a verified winner of matmul: spliced into kernels.hip, the hipLaunchKernelGGL's grid and
    block rewritten for it, and the application builds with the Makefile's hipcc (ours)."""
    from test_reintegrate_cuda import _plant

    from s2s.reintegrate.splice import apply_in_place, plan

    app = tmp_path / "hip_matrix"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("build", "hip_matrix"))
    make_mep(str(app), "matmul", str(tmp_path / "mep"))
    _plant(tmp_path / "mep", "contraction-blocking", 5.0)
    p = plan(tmp_path / "mep", "best", str(app))
    assert not p.manual and list(p.files) == [(app / "src/kernels.hip").resolve()]
    new = p.files[(app / "src/kernels.hip").resolve()][1].decode()
    assert "hipLaunchKernelGGL(matmul, dim3(" in new and ", dim3(16, 16, 1), 0, stream, dA, dB, dC, n);" in new
    apply_in_place(p, None, None)
    with hipcc_on_path(True):
        proc = _make(app)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]


@pytest.mark.slow
@needs_nvcc
def test_a_captured_hip_mep_harness_builds_and_reads_its_data(tmp_path: Path) -> None:
    """What the capture runtime records for a launch of matmul (as on a GPU) makes a HIP MEP whose harness builds
    (nvcc through the shim) and reads the captured buffers."""
    import struct

    from s2s.capture.collect import collect
    from s2s.mep.backends import write_mep_files
    from s2s.mep.evaluate import build
    from s2s.mep.manifest import load, save

    mep, m, _ex = make_mep(str(APP), "matmul", str(tmp_path / "mep"))
    assert m.backend == "hip"
    n = 64
    d = tmp_path / "dump" / "launch3"
    d.mkdir(parents=True)
    (tmp_path / "dump" / "summary.txt").write_text("kernel matmul\nlaunches 4\n")
    field = struct.pack(f"<{n * n}f", *[float((i * 7) % 5 - 2) for i in range(n * n)])
    for i in (0, 1, 2):
        (d / f"arg{i}.before.bin").write_bytes(field)
        (d / f"arg{i}.after.bin").write_bytes(field)
    (d / "record.txt").write_text(
        "launch 3\nsite src/kernels.hip:45\nkernel matmul\nnargs 4\ngrid 4 4 1\nblock 16 16 1\nshared_mem 0\nstream 0\n"
        + "".join(f"arg {i} pointer 4 {4 * n * n} 0 1398000{i}0000000 device cuMemGetAddressRange\n" for i in range(3))
        + f"arg 3 value 4 {struct.pack('<i', n).hex()}\ndone\n")
    got = collect(tmp_path / "dump", mep, m, want="--launch 3", run_cmd="./hip_matrix", build_cmd="make")
    save(got.manifest, mep)
    write_mep_files(mep, got.manifest)
    m2 = load(mep)
    assert m2.backend == "hip" and m2.capture["sets"] == [3] and m2.launch.source.startswith("capture: launch 3 of 4")
    harness = next(p for p in mep.iterdir() if p.name.startswith("harness.")).read_text()
    assert '"capture/launch3/C.before.npy"' in harness
    b = build(mep, None)
    assert b.ok, b.log[-3000:]


def test_hipcc_command_lines_become_nvcc_ones(tmp_path: Path) -> None:
    shim, arch = "/s/hip_shim", "sm_90"
    (compile_,) = translate(["-O3", "-std=c++17", "-Wall", "--offload-arch=gfx90a", "-fPIC", "-Iinclude", "-c",
                             "src/k.hip", "-o", "build/k.o"], shim, arch, "nvcc")
    assert compile_ == ["nvcc", "-I/s/hip_shim", "-arch=sm_90", "-O3", "-std=c++17", "-Xcompiler=-Wall",
                        "-Xcompiler=-fPIC", "-Iinclude", "-c", "-x", "cu", "src/k.hip", "-o", "build/k.o"]
    (link,) = translate(["-O3", "build/a.o", "build/b.o", "-lamdhip64", "-Wl,-rpath,/x", "-o", "app"], shim, arch, "nvcc")
    assert link == ["nvcc", "-I/s/hip_shim", "-arch=sm_90", "-O3", "-Xlinker=-rpath,/x", "build/a.o", "build/b.o", "-o", "app"]
    both = translate(["-fgpu-rdc", "main.cpp", "lib.a", "-o", "app"], shim, "sm_80", "nvcc", str(tmp_path))
    assert len(both) == 2 and both[0][-4:-2] == ["cu", "main.cpp"] and "-rdc=true" in both[0]
    assert both[1][-3:] == ["lib.a", "-o", "app"] and both[1][-4].startswith(str(tmp_path))
    (given,) = translate(["-arch=sm_80", "-x", "hip", "a.cpp"], shim, arch, "nvcc")
    assert given == ["nvcc", "-I/s/hip_shim", "-arch=sm_80", "-x", "cu", "a.cpp"]


def test_a_hipcc_for_amd_gpus_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "hipcc"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("S2S_HIPCC", str(fake))
    monkeypatch.setenv("HIP_PLATFORM", "amd")
    with pytest.raises(UserError, match="captured and timed on NVIDIA GPUs"):
        refuse_hip_on_amd()
    with pytest.raises(UserError, match="captured and timed on NVIDIA GPUs"):  # before anything is built
        measure(APP, tmp_path / "work", "false", "false")
    assert not (tmp_path / "work").exists()
    monkeypatch.setenv("HIP_PLATFORM", "nvidia")
    refuse_hip_on_amd()
    with hipcc_on_path(True) as note:  # a real hipcc: used as it is, nothing put on PATH
        assert note == "" and WRAPPER_ENV not in os.environ


@pytest.mark.gpu
@needs_gpu
@pytest.mark.slow
def test_auto_on_a_hip_application_end_to_end(tmp_path: Path) -> None:
    """`s2s auto` on the HIP application, built with its own `make` (hipcc): profiled (every launch form timed),
    the top kernel captured, replayed, optimized, reintegrated, the application rebuilt and its output unchanged."""
    app = tmp_path / "hip_matrix"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("build", "hip_matrix"))
    before = fingerprint(app)
    work, diff = tmp_path / "work", tmp_path / "auto.diff"
    proc = run_cli("auto", str(app), "--build-cmd", "make -j8", "--run-cmd", "./hip_matrix", "--top", "1",
                   "--max-evals", "3", "--rounds", "1", "--runs", "2", "--no-sequences", "--no-profile",
                   "--work", str(work), "--diff", str(diff))
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert fingerprint(app) == before, "auto changed the user's tree"
    report = json.loads((work / "auto-report.json").read_text())
    prof = {k["kernel"]: k for k in report["profile"]}
    assert set(prof) == {"matmul", "scale_rows", "halve_sum"}, (report["profile"], proc.stdout[-3000:])
    assert all(k["launches"] == 4 and k["total_ms"] > 0 for k in prof.values())
    assert report["profile"][0]["kernel"] == "matmul"  # the naive product is the hotspot
    if shutil.which("hipcc") is None:
        assert any("nvcc with the HIP-to-CUDA shim" in n for n in report["notes"]), report["notes"]
    (row,) = report["kernels"]
    assert row["kernel"] == "matmul" and (Path(row["mep"]) / "capture" / "index.json").is_file(), row
    assert row["status"].startswith("reintegrated"), (row, proc.stdout[-3000:])
    assert report["app"]["output_unchanged"] is True and proc.returncode == 0, proc.stdout[-3000:]
    text = diff.read_text()
    assert "+++ b/src/kernels.hip" in text
    subprocess.run(["git", "init", "-q"], cwd=app, check=True)
    assert subprocess.run(["git", "apply", str(diff)], cwd=app).returncode == 0
