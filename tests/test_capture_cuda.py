"""`s2s capture` on CUDA: the instrumented copy of samples/heat3d_cuda builds with nvcc, a captured MEP's
harness builds and reads its .npy data; the capture itself runs only on a GPU (`-m gpu`)."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLES, needs_gpu, needs_nvcc, run_cli

from s2s.capture.instrument import instrument
from s2s.capture.npy import read_npy, write_npy
from s2s.extract.mep_writer import make_mep

HEAT = SAMPLES / "heat3d_cuda"


def _make(app: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-j2", *targets], cwd=app, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@needs_nvcc
def test_instrumented_copy_builds(tmp_path: Path) -> None:
    before = {p: p.read_bytes() for p in HEAT.rglob("*") if p.is_file()}
    out, m, ex = make_mep(str(HEAT), "stencil7", str(tmp_path / "mep"))
    ins = instrument(HEAT, tmp_path / "work", m, list(ex.launches))
    assert ins.sites == ["src/main.cu:211"] and set(ins.files) == {"src/main.cu", "src/kernels_stencil.cu"}
    main = (ins.root / "src/main.cu").read_text()
    assert "s2s_capture::before(&stencil7, \"src/main.cu:211\", dim3(grid), dim3(block)" in main
    assert "s2s_capture::after(\"src/main.cu:211\");" in main
    assert 'register_symbol("coeffs"' in (ins.root / "src/kernels_stencil.cu").read_text()
    proc = _make(ins.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (ins.root / "heat3d").is_file()
    assert {p: p.read_bytes() for p in HEAT.rglob("*") if p.is_file()} == before  # the original is untouched


@pytest.mark.slow
@needs_nvcc
def test_namespaced_kernel_instruments_and_builds(tmp_path: Path) -> None:
    out, m, ex = make_mep(str(HEAT), "matvec_rows", str(tmp_path / "mep"))
    ins = instrument(HEAT, tmp_path / "work", m, list(ex.launches))
    assert "s2s_capture::before(&linalg::matvec_rows," in (ins.root / "src/main.cu").read_text()
    proc = _make(ins.root, "build/main.o")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _fake_dump(dump: Path, n: int) -> None:
    """What the runtime writes for launch 3 of stencil7 (as on a GPU): arguments, buffers, the symbol."""
    d = dump / "launch3"
    d.mkdir(parents=True)
    (dump / "summary.txt").write_text("kernel stencil7\nlaunches 10\n")
    field = struct.pack(f"<{n}f", *[20.0 + (i % 97) * 0.25 for i in range(n)])
    for i in (0, 1):
        (d / f"arg{i}.before.bin").write_bytes(field)
        (d / f"arg{i}.after.bin").write_bytes(field)
    (d / "sym_coeffs.bin").write_bytes(struct.pack("<7f", -6, 1, 1, 1, 1, 1, 1))
    prm = struct.pack("<7f", 0.1, 1.0, 1.0, 9.81, 0.2, 0.5, 20.0).hex()
    i32 = struct.pack("<i", 64).hex()
    (d / "record.txt").write_text(
        "launch 3\nsite src/main.cu:211\nkernel stencil7\nnargs 6\ngrid 8 8 8\nblock 8 8 8\nshared_mem 0\nstream 0\n"
        f"arg 0 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange\n"
        f"arg 1 pointer 4 {4 * n} 0 139800100000000 device cuMemGetAddressRange\n"
        f"arg 2 value 4 {i32}\narg 3 value 4 {i32}\narg 4 value 4 {i32}\narg 5 value 28 {prm}\nsymbol coeffs 4 28\ndone\n")


@pytest.mark.slow
@needs_nvcc
def test_captured_mep_harness_builds(tmp_path: Path) -> None:
    from s2s.capture.collect import collect
    from s2s.mep.backends import write_mep_files
    from s2s.mep.evaluate import build
    from s2s.mep.manifest import load, save

    mep, m, _ex = make_mep(str(HEAT), "stencil7", str(tmp_path / "mep"))
    n = 64 * 64 * 64
    _fake_dump(tmp_path / "dump", n)
    got = collect(tmp_path / "dump", mep, m, want="--launch 3", run_cmd="./heat3d", build_cmd="make")
    save(got.manifest, mep)
    write_mep_files(mep, got.manifest)
    m2 = load(mep)
    assert m2.capture["sets"] == [3] and m2.launch.source.startswith("capture: launch 3 of 10")
    p = next(p for p in m2.params if p.name == "p")
    assert isinstance(p.value, dict) and abs(p.value["gravity"] - 9.81) < 1e-5
    assert m2.symbols[0].count == 7 and m2.symbols[0].source.startswith("capture")
    harness = (mep / "harness.cu").read_text()
    assert '"capture/launch3/u.before.npy"' in harness and '"capture/launch3/symbol.coeffs.npy"' in harness
    b = build(mep, None)
    assert b.ok, b.log[-3000:]


@pytest.mark.slow
@needs_nvcc
def test_harness_reads_npy(tmp_path: Path) -> None:
    """The harness's .npy reader (host code only: runs without a GPU) against files numpy and s2s wrote."""
    write_npy(tmp_path / "a.npy", struct.pack("<5f", 1, 2, 3, 4, 5), "<f4", 5)
    raw, descr, count = read_npy(tmp_path / "a.npy")
    assert descr == "<f4" and count == 5 and len(raw) == 20
    np = pytest.importorskip("numpy")
    assert np.load(tmp_path / "a.npy").tolist() == [1, 2, 3, 4, 5]
    np.save(tmp_path / "b.npy", np.arange(7, dtype=np.int32))
    (tmp_path / "t.cu").write_text(
        '#include "s2s_harness_common.cuh"\n'
        "int main(int argc, char** argv) {\n"
        "  for (int i = 1; i < argc; ++i) { std::vector<unsigned char> d; std::string err;\n"
        "    if (!s2s::read_npy(argv[i], d, err)) { printf(\"ERR %s\\n\", err.c_str()); return 1; }\n"
        "    printf(\"%zu\\n\", d.size()); }\n  return 0; }\n")
    exe = tmp_path / "t"
    proc = subprocess.run(["nvcc", "-std=c++17", f"-I{ROOT / 'templates'}", str(tmp_path / "t.cu"), "-o", str(exe)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run([str(exe), str(tmp_path / "a.npy"), str(tmp_path / "b.npy")], capture_output=True, text=True)
    assert run.stdout.split() == ["20", "28"], run.stdout + run.stderr


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_capture_and_replay_on_gpu(tmp_path: Path) -> None:
    app = tmp_path / "heat3d"
    shutil.copytree(HEAT, app, ignore=shutil.ignore_patterns("build", "heat3d"))
    out = tmp_path / "mep"
    proc = run_cli("capture", str(app), "--kernel", "stencil7", "--build-cmd", "make -j8", "--run-cmd", "./heat3d",
                   "--launch", "3", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    run = run_cli("run", str(out), "--no-time", "--json")
    assert run.returncode == 0, run.stderr
    res = json.loads(run.stdout)
    assert res["verdict"] == "ok" and any("reproduces the application's outputs" in m for m in res["messages"])
    timed = run_cli("run", str(out), "--json")  # timed on the real run's inputs, not generated ones
    assert timed.returncode == 0, timed.stderr
    res = json.loads(timed.stdout)
    assert res["verdict"] == "ok" and res["speedup"] > 0
    assert any(m.startswith("timed on the captured input set (launch 3 of the application") for m in res["messages"])


@pytest.mark.slow
@needs_nvcc
def test_a_kernel_template_launched_with_deduced_arguments_instruments_and_builds(tmp_path: Path) -> None:
    """BabelStream's dot: `partial_dot<<<blocks, BLOCK>>>(a, b, sums, n)` inside a class template; the instrumented
    copy called `s2s_capture::before(&partial_dot, ...)`, which names no function, and did not build on the H200."""
    tree = ROOT / "tests" / "fixtures" / "deduced_template"
    out, m, ex = make_mep(str(tree), "partial_dot", str(tmp_path / "mep"))
    ins = instrument(tree, tmp_path / "work", m, list(ex.launches))
    text = (ins.root / "stream.cu").read_text()
    assert "s2s_capture::before_deduced(" in text and "before(&partial_dot" not in text
    proc = _make(ins.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


GRAPH = Path(__file__).resolve().parent / "fixtures" / "cuda_graph"


@pytest.mark.slow
@needs_nvcc
def test_profile_and_capture_of_an_application_that_records_a_cuda_graph_build(tmp_path: Path) -> None:
    """tests/fixtures/cuda_graph launches two kernels directly, then records them into a graph by stream capture. The
    instrumented copies (profile and capture) build; on the GPU (next test) the recorded launches are left alone."""
    from s2s.capture.profile import instrument_all
    from s2s.scan.tree import scan_tree

    root, sites, _notes, backend = instrument_all(GRAPH, tmp_path / "prof", list(scan_tree(GRAPH).launches))
    assert backend == "cuda" and len(sites) == 4
    assert _make(root).returncode == 0
    out, m, ex = make_mep(str(GRAPH), "scale", str(tmp_path / "mep"))
    ins = instrument(GRAPH, tmp_path / "cap", m, list(ex.launches))
    proc = _make(ins.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_an_application_that_records_a_cuda_graph_is_profiled_and_captured(tmp_path: Path) -> None:
    """The instrumented copy ended in a segmentation fault (a development application): the profile recorded events and
    synchronized during stream capture. The recorded launches are now neither timed nor counted (they run from
    cudaGraphLaunch), only named in a note; the direct ones are profiled and captured."""
    from s2s.capture.profile import measure

    prof = measure(GRAPH, tmp_path / "prof", "make", "./app")
    launches = {k.kernel: k.launches for k in prof.kernels}
    assert launches == {"scale": 3, "total": 3}
    assert any("recorded into CUDA graphs" in n and "scale x1" in n for n in prof.notes), prof.notes
    out = tmp_path / "mep"
    proc = run_cli("capture", str(GRAPH), "--kernel", "scale", "--build-cmd", "make", "--run-cmd", "./app", "--launch", "3",
                   "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    run = run_cli("run", str(out), "--no-time", "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["verdict"] == "ok", run.stderr


INDIRECT = Path(__file__).resolve().parent / "fixtures" / "cuda_indirect"


@pytest.mark.slow
@needs_nvcc
def test_launches_through_a_function_pointer_or_a_template_parameter_are_named_at_run_time(tmp_path: Path) -> None:
    """`kernel<<<g, b>>>(x, n)` with `kernel = &twice`, and `k<<<...>>>(args...)` in a helper template given `smooth<2>`:
    the profile named them `kernel` and `k`, which the tree defines no kernel by ("the run launched no kernel that the
    tree's sources define": two development applications at 100% of their GPU time). Such a launch now asks the
    runtime which function it runs (cudaFuncGetName, demangled)."""
    from s2s.capture.profile import instrument_all
    from s2s.scan.tree import scan_tree

    index = scan_tree(INDIRECT)
    root, sites, _notes, _backend = instrument_all(INDIRECT, tmp_path / "prof", list(index.launches),
                                                   {k.name for k in index.kernels})
    assert len(sites) == 2
    text = (root / "app.cu").read_text()
    assert 's2s_prof::begin_fn((const void*)(kernel), "kernel"' in text and 's2s_prof::begin_fn((const void*)(k), "k"' in text
    proc = _make(root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_indirect_launches_are_profiled_by_the_kernel_they_run(tmp_path: Path) -> None:
    from s2s.capture.profile import measure

    prof = measure(INDIRECT, tmp_path / "prof", "make", "./app")
    assert {k.kernel: k.launches for k in prof.kernels} == {"twice": 4, "smooth": 4}


def test_indirect_sites_are_the_chevrons_that_name_no_kernel_of_the_tree() -> None:
    """The profile and capture tell a launch through a function pointer or a template's parameter (`kernel<<<...>>>`,
    `k<<<...>>>`) from one that names a kernel (`twice<<<...>>>`, `ns::smooth<2><<<...>>>`) by the tree's kernel names."""
    from s2s.base.records import LaunchSite
    from s2s.capture.indirect import indirect_sites, is_indirect, launched_name
    from s2s.scan.tree import scan_tree

    index = scan_tree(INDIRECT)
    names = {k.name for k in index.kernels}
    assert names == {"twice", "halve", "smooth"}
    found = indirect_sites(index.launches, names)
    assert [(s.kernel, s.line) for s in found] == [("k", 27), ("kernel", 39)]

    def site(text: str, kind: str = "chevron") -> LaunchSite:
        return LaunchSite(kernel=text, file="a.cu", line=1, kind=kind, grid="1", block="1")

    assert launched_name(site("ns::smooth< 2 >")) == "ns::smooth"
    assert not is_indirect(site("twice"), names) and not is_indirect(site("ns::smooth<2>"), names)
    assert is_indirect(site("kernel"), names) and is_indirect(site("table[i]"), names) and is_indirect(site("(*fp)"), names)
    assert is_indirect(site("kernel", "hipLaunchKernelGGL"), names)  # HIP's launch through a function pointer too
    assert not is_indirect(site("twice", "hipLaunchKernelGGL"), names) and not is_indirect(site("kernel", "macro:L"), names)


def _indirect_copy(tmp_path: Path, kernels: list[str], tree: Path = INDIRECT):  # type: ignore[no-untyped-def]
    from s2s.capture.indirect import indirect_sites
    from s2s.capture.instrument import instrument_kernels
    from s2s.scan.tree import scan_tree

    index = scan_tree(tree)
    made = [make_mep(str(tree), k, str(tmp_path / f"mep-{k}"), index=index) for k in kernels]
    return instrument_kernels(tree, tmp_path / "work", [(m, list(ex.launches)) for _o, m, ex in made],
                              indirect_sites(index.launches, {k.name for k in index.kernels}))


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("kernels", [["twice"], ["smooth"], ["twice", "smooth"]])
def test_kernels_launched_only_through_a_function_pointer_are_instrumented(tmp_path: Path, kernels: list[str]) -> None:
    """`twice` (through `void (*kernel)(float*, int)`) and `smooth<2>` (through `launch_1d(F k, ...)`) have no launch
    site that names them: capture stopped with "no launch site". Each indirect site now gets one call that picks, at
    run time, the slot of the kernel the launched function is; the copy builds with nvcc."""
    ins = _indirect_copy(tmp_path, kernels)
    assert ins.errors == {}
    assert ins.sites == ["app.cu:27", "app.cu:39"]
    assert all(ins.sites_of[i] == ["app.cu:27", "app.cu:39"] for i in range(len(kernels)))
    assert all("no launch site that names it" in " ".join(ins.notes_of[i]) for i in range(len(kernels)))
    text = (ins.root / "app.cu").read_text()
    assert text.count("s2s_capture::before_fn(") == 2 and text.count("s2s_capture::after_fn(") == 2
    assert 's2s_capture::before_fn((kernel), "app.cu:39", dim3((n + 255) / 256), dim3(256)' in text
    assert 's2s_capture::before_fn((k), "app.cu:27"' in text and "args...);" in text
    header = ins.header.read_text()
    assert f"constexpr int SLOTS = {len(kernels)};" in header and "s2s_kernel_name::of(fn)" in header
    proc = _make(ins.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_kernels_launched_through_a_function_pointer_are_captured_and_replayed(tmp_path: Path) -> None:
    """One capture run records `twice` at its launch 3 (through a function pointer) and `smooth` at its launch 2
    (through a helper template, instance smooth<2>), counted per kernel as the profile counts them; the launch
    configuration and the template argument come from the recorded launch; both MEPs replay."""
    from s2s.capture import KernelCapture, capture_kernels

    jobs = [KernelCapture("twice", launch=3, output=str(tmp_path / "mep-twice")),
            KernelCapture("smooth", launch=2, output=str(tmp_path / "mep-smooth"))]
    run = capture_kernels(INDIRECT, jobs, "make", "./app")
    twice, smooth = run.results
    assert not isinstance(twice, Exception), twice
    assert not isinstance(smooth, Exception), smooth
    assert twice.launches_seen == 4 and smooth.launches_seen == 4
    assert twice.manifest.capture["sets"] == [3] and smooth.manifest.capture["sets"] == [2]
    assert (twice.manifest.launch.grid, twice.manifest.launch.block) == ((64, 1, 1), (256, 1, 1))
    assert (smooth.manifest.launch.grid, smooth.manifest.launch.block) == ((128, 1, 1), (128, 1, 1))
    assert smooth.manifest.template_args == "2"
    for got in (twice, smooth):
        run_mep = run_cli("run", str(got.mep), "--no-time", "--json")
        assert run_mep.returncode == 0, run_mep.stdout + run_mep.stderr
        assert json.loads(run_mep.stdout)["verdict"] == "ok", run_mep.stdout


@needs_nvcc
def test_the_runtimes_name_a_launched_function_by_its_base_name(tmp_path: Path) -> None:
    """The name both runtimes give a launched function (kernel_name_cuda.h.j2, shared by the profile and the capture
    header): the demangled name without return type, template arguments, parameters and anonymous namespaces; and
    which kernel such a name is (`k` is `ns::k`, `ns::k` is not `other::k`). Host code only: it runs without a GPU."""
    from s2s.base.resources import render

    (tmp_path / "names.h").write_text(render("capture/kernel_name_cuda.h.j2"))
    (tmp_path / "t.cu").write_text(
        '#include <cstdio>\n#include "names.h"\nint main() {\n'
        '    const char* in[] = {"void ns::k<float, 4>(float*, int)", "void smooth<2>(float const*, float*, int)",\n'
        '                        "void (anonymous namespace)::twice(float*, int)", "halve", "void a::b<c<1>>::run<2>()"};\n'
        '    for (const char* s : in) printf("%s|%s\\n", s2s_kernel_name::base_of(s).c_str(),\n'
        '                                    s2s_kernel_name::last_part(s2s_kernel_name::base_of(s)).c_str());\n'
        '    using s2s_kernel_name::same_kernel;\n'
        '    printf("%d%d%d%d%d%d\\n", same_kernel("ns::k", "ns::k", true), same_kernel("k", "ns::k", true),\n'
        '           same_kernel("k", "ns::k", false), same_kernel("ns::k", "other::k", false),\n'
        '           same_kernel("twice", "halve", false), same_kernel("", "k", false));\n'
        '    return 0;\n}\n')
    build = subprocess.run(["nvcc", "-std=c++17", "-o", "t", "t.cu"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr
    out = subprocess.run(["./t"], cwd=tmp_path, capture_output=True, text=True, timeout=60).stdout.split()
    assert out == ["ns::k|k", "smooth|smooth", "twice|twice", "halve|halve", "a::b<c<1>>::run|run", "101000"]


def test_a_kernel_recorded_through_a_function_pointer_gets_its_launch_and_instance_from_the_record(tmp_path: Path) -> None:
    """`smooth` has no launch site that names it: extraction leaves launch.grid/block and template_args FILL-IN and
    notes "no launch site found". What the runtime records at the indirect site (as on a GPU: the grid, the block, the
    function's mangled name) fills them, and the stale note goes."""
    from s2s.capture.collect import collect

    mep, m, _ex = make_mep(str(INDIRECT), "smooth", str(tmp_path / "mep"))
    assert m.template_args == "FILL-IN" and "FILL-IN" in m.launch.grid
    assert any(n.startswith("no launch site found") for n in m.notes)
    n = 64
    d = tmp_path / "dump" / "launch2"
    d.mkdir(parents=True)
    (tmp_path / "dump" / "summary.txt").write_text("kernel smooth\nlaunches 4\n")
    data = struct.pack(f"<{n}f", *[0.5 * i for i in range(n)])
    for i in (0, 1):
        (d / f"arg{i}.before.bin").write_bytes(data)
        (d / f"arg{i}.after.bin").write_bytes(data if i == 0 else bytes(4 * n))
    (d / "record.txt").write_text(
        "launch 2\nsite app.cu:27\nkernel smooth\nnargs 3\nargtypes const float*|float*|int\n"
        "grid 128 1 1\nblock 128 1 1\nshared_mem 0\nstream 0\nfunction _Z6smoothILi2EEvPKfPfi\n"
        f"arg 0 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange\n"
        f"arg 1 pointer 4 {4 * n} 0 139800100000000 device cuMemGetAddressRange\n"
        f"arg 2 value 4 {struct.pack('<i', n).hex()}\ndone\n")
    got = collect(tmp_path / "dump", mep, m, want="--launch 2", run_cmd="./app", build_cmd="make")
    assert got.manifest.template_args == "2"
    assert (got.manifest.launch.grid, got.manifest.launch.block) == ((128, 1, 1), (128, 1, 1))
    assert got.manifest.unfilled() == []
    assert not any(x.startswith("no launch site found") for x in got.manifest.notes), got.manifest.notes


MIXED = Path(__file__).resolve().parent / "fixtures" / "cuda_indirect_mixed"


@pytest.mark.slow
@needs_nvcc
def test_a_kernel_launched_by_name_and_through_a_template_parameter_is_instrumented_at_both(tmp_path: Path) -> None:
    """ops::scale is launched by name (app.cu:31) and through `run_on(F kernel, ...)` (app.cu:20) on alternate steps:
    its slot's direct site calls before<0>, the indirect site the call that serves every slot; offset keeps its own."""
    ins = _indirect_copy(tmp_path, ["scale", "offset"], MIXED)
    assert ins.errors == {}
    assert ins.sites_of == {0: ["app.cu:20", "app.cu:31"], 1: ["app.cu:20", "app.cu:34"]}
    assert not any("no launch site that names it" in n for i in (0, 1) for n in ins.notes_of[i])
    text = (ins.root / "app.cu").read_text()
    assert 's2s_capture::before_fn((kernel), "app.cu:20"' in text
    assert 's2s_capture::before(&ops::scale, "app.cu:31"' in text and 's2s_capture::before<1>(&offset, "app.cu:34"' in text
    assert '"ops::scale", "offset", nullptr' in ins.header.read_text()
    proc = _make(ins.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.gpu
@needs_gpu
@needs_nvcc
def test_launches_by_name_and_through_a_template_parameter_are_counted_together_as_the_profile_counts(
        tmp_path: Path) -> None:
    """ops::scale's launches 1, 3, 5 are by name, 2, 4, 6 through run_on: the profile's launch 4 of ops::scale and the
    launch 4 that capture records are the same one (app.cu:20, a = 2.5, the helper's 128-thread blocks)."""
    from s2s.capture import KernelCapture, capture_kernels
    from s2s.capture.profile import measure

    prof = measure(MIXED, tmp_path / "prof", "make", "./app")
    sites = {(la.kernel, la.ordinal): la.site for la in prof.launches}
    assert {k.kernel: k.launches for k in prof.kernels} == {"ops::scale": 6, "offset": 6}
    assert sites[("ops::scale", 3)] == "app.cu:31" and sites[("ops::scale", 4)] == "app.cu:20"
    jobs = [KernelCapture("scale", launch=4, output=str(tmp_path / "mep-scale")),
            KernelCapture("offset", launch=2, output=str(tmp_path / "mep-offset"))]
    scale, offset = capture_kernels(MIXED, jobs, "make", "./app").results
    assert not isinstance(scale, Exception), scale
    assert not isinstance(offset, Exception), offset
    assert scale.launches_seen == 6 and offset.launches_seen == 6
    index = json.loads((scale.mep / "capture" / "index.json").read_text())
    assert index["sets"][0]["site"] == "app.cu:20"
    assert (scale.manifest.launch.grid, scale.manifest.launch.block) == ((32, 1, 1), (128, 1, 1))
    assert next(p.value for p in scale.manifest.params if p.name == "a") == 2.5
    for got in (scale, offset):
        run_mep = run_cli("run", str(got.mep), "--no-time", "--json")
        assert run_mep.returncode == 0, run_mep.stdout + run_mep.stderr
        assert json.loads(run_mep.stdout)["verdict"] == "ok", run_mep.stdout
