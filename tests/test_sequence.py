"""Sequences (issue 28): the launch-bound time loop of our own bench/seqzoo/heat1d_steps seen in its profile lines,
its window as the sequence runtime records it (read_window), the argument-variation analysis (swapped pointers, a time
index), the instrumented copy and the sequence MEP's harness built with nvcc. The capture and the replay themselves run
on a GPU: bench/gpu_sequences.sh."""
from __future__ import annotations

import json
import math
import shutil
import struct
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import ROOT, needs_nvcc

from s2s.base.errors import UserError
from s2s.base.resources import render
from s2s.capture.instrument import copy_tree, wrap_launch_sites
from s2s.capture.profile import read_launches
from s2s.capture.sequences import sequences
from s2s.scan.tree import scan_tree
from s2s.sequence.capture import choose, site_refs
from s2s.sequence.kernels import body_kernels, merge
from s2s.sequence.mep import write_sequence_mep
from s2s.sequence.variation import body_length, variation
from s2s.sequence.window import Arg, Launch, Window, read_window

APP = ROOT / "bench" / "seqzoo" / "heat1d_steps"
STEP, SOURCE = "heat1d_steps.cu:69", "heat1d_steps.cu:70"


def _index():  # type: ignore[no-untyped-def]
    return scan_tree(APP)


def test_the_app_launches_its_two_kernels_from_one_loop_at_the_lines_the_tests_name() -> None:
    sites = {f"{s.file}:{s.line}": s for s in _index().launches}
    assert set(sites) == {STEP, SOURCE}
    assert sites[STEP].kernel == "heat_step" and sites[SOURCE].kernel == "heat_source"
    assert all(s.in_loop and s.enclosing_function == "main" for s in sites.values())
    text = (APP / "heat1d_steps.cu").read_text()
    assert "#define STEPS 10000" in text and '"../' not in text  # self-contained, as captured apps must be


def _profile_lines(steps: int) -> str:
    """What the profile runtime (templates/capture/profile_cuda.h.j2) writes for the app: one line per launch."""
    out, clock = [], 1000.0
    for t in range(steps):
        for kernel, site, ms in (("heat_step", STEP, 0.0041), ("heat_source", SOURCE, 0.0019)):
            out.append(f"launch {kernel} {site} {t + 1} {ms:.6f} {clock:.1f} {clock + 6.0:.1f}")
            clock += 8.5
    return "\n".join(out) + "\n"


def test_the_time_loop_is_one_launch_bound_sequence_of_the_profile(tmp_path: Path) -> None:
    (tmp_path / "profile.txt").write_text(_profile_lines(10000))
    found = sequences(read_launches(tmp_path / "profile.txt"), list(_index().launches))
    assert len(found) == 1
    q = found[0]
    assert (q.function, q.kernels, q.launches, q.iterations) == ("main", ["heat_step", "heat_source"], 20000, 10000)
    assert q.launch_bound and math.isclose(q.mean_launch_us, 3.0) and math.isclose(q.as_dict()["mean_gap_us"], 2.5)
    assert choose(found, None) is q and choose(found, "heat1d_steps.cu:main") is q
    with pytest.raises(UserError, match="no loop of launches in function 'solve'"):
        choose(found, "solve")
    with pytest.raises(UserError, match="made no launch from a host loop twice"):
        choose([], None)


def test_each_loop_nest_of_a_function_is_a_sequence_of_its_own(tmp_path: Path) -> None:
    """A warm-up loop and a timed loop per case of a switch in one host function: three sequences, one per loop nest
    (a window across them held the host's work between the loops, and its replay could not reproduce the capture:
    a development application), each named FILE:FUNCTION@LINE for `--function`; an inner loop belongs to its nest."""
    src = ("#include <cuda_runtime.h>\n__global__ void k(float* a) { }\n__global__ void j(float* a) { }\n"
           "void run(float* a, int topk, int reps) {\n"
           "    for (int i = 0; i < 10; i++) k<<<1, 32>>>(a);\n"
           "    switch (topk) {\n"
           "    case 2:\n"
           "        for (int i = 0; i < reps; i++) k<<<1, 32>>>(a);\n"
           "        break;\n"
           "    case 3:\n"
           "        for (int i = 0; i < reps; i++) {\n"
           "            k<<<1, 32>>>(a);\n"
           "            for (int s = 0; s < 4; s++) j<<<1, 32>>>(a);\n"
           "        }\n"
           "    }\n}\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "m.cu").write_text(src)
    sites = list(scan_tree(tmp_path / "app").launches)
    assert [(s.line, s.loop_line) for s in sites] == [(5, 5), (8, 8), (12, 11), (13, 11)]
    lines = [f"launch k m.cu:5 {n} 0.002 {10.0 * n:.1f} {10.0 * n + 2:.1f}" for n in range(1, 11)]
    lines += [f"launch k m.cu:12 {n} 0.003 {10.0 * n:.1f} {10.0 * n + 3:.1f}" for n in range(11, 31)]
    lines += [f"launch j m.cu:13 {n} 0.001 {10.0 * n:.1f} {10.0 * n + 1:.1f}" for n in range(1, 81)]
    (tmp_path / "profile.txt").write_text("\n".join(lines) + "\n")
    found = sequences(read_launches(tmp_path / "profile.txt"), sites)
    assert [(q.loop_id, q.kernels, q.launches) for q in found] == [("m.cu:run@11", ["k", "j"], 100), ("m.cu:run@5", ["k"], 10)]
    assert choose(found, "m.cu:run@5") is found[1] and choose(found, "run") is found[0]
    with pytest.raises(UserError, match=r"loops seen: m.cu:run@11, m.cu:run@5"):
        choose(found, "m.cu:run@8")


# ---- a window as the sequence runtime writes it -----------------------------------------------------------------

N = 4099  # odd, not a multiple of the block


def _f32(values: list[float]) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _step(u: list[float], r: float) -> list[float]:
    n = len(u)
    return [u[i] + r * ((u[i - 1] if i else u[i]) - 2 * u[i] + (u[i + 1] if i < n - 1 else u[i])) for i in range(n)]


def fake_window(dump: Path, steps: int, skip_steps: int = 0) -> None:
    """The files the sequence runtime writes for `steps` iterations of the app's loop (N points), after `skip_steps`:
    the pointers swap after each step, the source's time index counts on."""
    dump.mkdir(parents=True)
    base = [0x7F0000000000, 0x7F0000200000]
    u = [((i * 37) % 101) / 101.0 for i in range(N)]
    v = [0.0] * N
    state = {0: u, 1: v}
    (dump / "buf0.before.bin").write_bytes(_f32(u))
    (dump / "buf1.before.bin").write_bytes(_f32(v))
    (dump / "buffers.txt").write_text("".join(f"buffer {i} {base[i]} {4 * N} device\n" for i in (0, 1)))
    lines, cur, nxt = [], 0, 1
    for k in range(steps):
        t = skip_steps + k
        o = 2 * k + 1
        lines += [f"launch {o} {STEP} {(N + 255) // 256} 1 1 256 1 1 0 0",
                  f"arg 0 ptr {cur} 0 4 float", f"arg 1 ptr {nxt} 0 4 float",
                  f"arg 2 value 4 {struct.pack('<i', N).hex()}", f"arg 3 value 4 {struct.pack('<f', 0.25).hex()}",
                  f"launch {o + 1} {SOURCE} 1 1 1 32 1 1 0 0", f"arg 0 ptr {nxt} 0 4 float",
                  f"arg 1 value 4 {struct.pack('<i', N // 3).hex()}", f"arg 2 value 4 {struct.pack('<i', t).hex()}",
                  f"arg 3 value 4 {struct.pack('<f', 0.5).hex()}"]
        state[nxt] = _step(state[cur], 0.25)
        state[nxt][N // 3] += 0.5 * math.sin(0.001 * t)
        cur, nxt = nxt, cur
    (dump / "launches.txt").write_text("\n".join(lines) + "\n")
    for i in (0, 1):
        (dump / f"buf{i}.after.bin").write_bytes(_f32(state[i]))
    (dump / "status.txt").write_text(f"done\nlaunches_seen {2 * steps}\n")


def test_read_window_gives_every_launch_its_site_configuration_and_arguments(tmp_path: Path) -> None:
    fake_window(tmp_path / "dump", 5)
    w = read_window(tmp_path / "dump")
    assert len(w.launches) == 10 and [b.bytes for b in w.buffers] == [4 * N, 4 * N]
    first, second = w.launches[0], w.launches[1]
    assert (first.site, first.grid, first.block, first.shmem) == (STEP, ((N + 255) // 256, 1, 1), (256, 1, 1), 0)
    assert first.args[0] == Arg("ptr", size=4, buf=0, offset=0, type="float") and first.args[1].buf == 1
    assert second.site == SOURCE and second.args[2] == Arg("value", size=4, hex=struct.pack("<i", 0).hex())
    assert w.element_type(0) == "float"


def test_an_unfinished_window_or_a_foreign_line_is_one_user_error(tmp_path: Path) -> None:
    fake_window(tmp_path / "dump", 2)
    (tmp_path / "dump" / "status.txt").write_text("incomplete\nlaunches_seen 3\n")
    with pytest.raises(UserError, match=r"not completed \(3 launches"):
        read_window(tmp_path / "dump")
    (tmp_path / "dump" / "status.txt").write_text("done\n")
    with (tmp_path / "dump" / "launches.txt").open("a") as fh:
        fh.write("arg 9 value 4 00000000\n")
    with pytest.raises(UserError, match="a line the runtime did not write") as bad:
        read_window(tmp_path / "dump")
    assert bad.value.file is not None and bad.value.file.endswith("launches.txt") and bad.value.line == 21


def test_variation_finds_the_ping_pong_pointers_and_the_time_index(tmp_path: Path) -> None:
    fake_window(tmp_path / "dump", 9, skip_steps=40)
    var = variation(read_window(tmp_path / "dump").launches)
    assert var.body_sites == (STEP, SOURCE) and var.iterations == 9 and var.remainder == 0
    kinds = {(a.site, a.index): (a.kind, a.period, a.start, a.step) for a in var.args}
    assert kinds[(STEP, 0)] == kinds[(STEP, 1)] == kinds[(SOURCE, 0)] == ("rotating", 2, None, None)
    assert kinds[(SOURCE, 2)] == ("affine", 1, 40, 1)
    assert {k for k, v in kinds.items() if v[0] == "fixed"} == {(STEP, 2), (STEP, 3), (SOURCE, 1), (SOURCE, 3)}
    # two iterations make one body graph (the pointers repeat after two); only the sources' time index changes
    assert var.period == 2 and var.body_launches == 4 and var.updated_nodes == (1, 3)
    assert "affine in the iteration (40 + 1*i)" in " ".join(var.as_dict()["arguments"])  # type: ignore[arg-type]


def _launch(site: str, *args: Arg) -> Launch:
    return Launch(0, site, (1, 1, 1), (32, 1, 1), 0, 0, tuple(args))


def _value(x: float | int, fmt: str) -> Arg:
    return Arg("value", size=struct.calcsize(fmt), hex=struct.pack("<" + fmt, x).hex())


def test_variation_of_fixed_accumulated_and_unstructured_windows() -> None:
    fixed = [_launch("a.cu:3", Arg("ptr", 4, "", 0, 0, "float"), _value(7, "i")) for _ in range(6)]
    var = variation(fixed)
    assert (var.body_sites, var.iterations, var.period, var.updated_nodes) == (("a.cu:3",), 6, 1, ())
    # a float time accumulated step by step is not affine: varying, its node updated between bodies
    time = [_launch("a.cu:3", _value(0.1 * k + 0.01 * k * k, "f")) for k in range(6)]
    var = variation(time)
    assert var.args[0].kind == "varying" and var.updated_nodes == (0,)
    # a 64-bit index with step 3, and a trailing partial iteration
    steps = [_launch(s, _value(5 + 3 * (k // 2), "q")) for k, s in enumerate(["x:1", "x:2"] * 4 + ["x:1"])]
    var = variation(steps)
    assert var.body_sites == ("x:1", "x:2") and var.iterations == 4 and var.remainder == 1
    assert [(a.kind, a.start, a.step) for a in var.args] == [("affine", 5, 3), ("affine", 5, 3)]
    assert body_length(["x:1", "x:2", "x:3"]) == 3 and body_length(["x:1", "x:1", "x:2", "x:1", "x:1", "x:2"]) == 3


def test_three_rotating_buffers_make_a_body_of_three_steps_with_nothing_to_update() -> None:
    """wave2d_steps' loop: previous, current and next rotate; a 2-D step then an edge kernel on `next`."""
    bufs = [0, 1, 2]
    window = []
    for t in range(10):
        p, c, n = bufs[t % 3], bufs[(t + 1) % 3], bufs[(t + 2) % 3]
        window += [_launch("w.cu:87", *(Arg("ptr", 4, "", b, 0, "float") for b in (p, c, n)), _value(256, "i")),
                   _launch("w.cu:88", Arg("ptr", 4, "", n, 0, "float"), _value(256, "i"))]
    var = variation(window)
    assert var.body_sites == ("w.cu:87", "w.cu:88") and var.period == 3 and var.body_launches == 6
    assert var.updated_nodes == () and {a.period for a in var.args if a.kind == "rotating"} == {3}


def test_the_wave_app_loop_is_a_sequence_too(tmp_path: Path) -> None:
    wave = ROOT / "bench" / "seqzoo" / "wave2d_steps"
    lines = [f"launch {k} wave2d_steps.cu:{line} {t + 1} 0.003 {10.0 * (2 * t + j)} {10.0 * (2 * t + j) + 5}"
             for t in range(5000) for j, (k, line) in enumerate((("wave_step", 87), ("wave_edges", 88)))]
    (tmp_path / "profile.txt").write_text("\n".join(lines) + "\n")
    found = sequences(read_launches(tmp_path / "profile.txt"), list(scan_tree(wave).launches))
    assert [(q.function, q.kernels, q.iterations, q.launch_bound) for q in found] == [
        ("main", ["wave_step", "wave_edges"], 5000, True)]
    assert '"../' not in (wave / "wave2d_steps.cu").read_text()


def test_merge_keeps_each_shared_item_once() -> None:
    a = "// s2s extract: kernel k1 from f.cu:9\n#include <cmath>\n// s2s: from f.cu:2\n#define W 3\n// s2s: kernel from f.cu:9\n__global__ void k1() {}\n"
    b = "// s2s extract: kernel k2 from f.cu:12\n#include <cmath>\n#include <cstdint>\n// s2s: from f.cu:2\n#define W 3\n// s2s: kernel from f.cu:12\n__global__ void k2() {}\n"
    text = merge([a, b])
    assert text.count("#define W 3") == 1 and text.count("#include <cmath>") == 1 and "#include <cstdint>" in text
    assert text.index("k1()") < text.index("k2()") and text.index("#define W") < text.index("k1()")


def test_merge_keeps_preprocessor_conditionals_whole() -> None:
    """Two conditionals that end in the same `#endif` line: merged line by line, one `#endif` was dropped and the
    sequence harness stopped at an unterminated `#ifdef` (an application including an optional library's header,
    nested in a `__has_include` test by extract)."""
    head = ("#include <cstdio>\n#ifdef WITH_LIB\n#if __has_include(<lib.h>)\n#include <lib.h>\n#endif\n#endif\n"
            "#ifndef N\n#define N 8\n#endif\n")
    a = f"// s2s extract: kernel k1 from f.cu:9\n{head}// s2s: kernel from f.cu:9\n__global__ void k1() {{}}\n"
    b = f"// s2s extract: kernel k2 from f.cu:12\n{head}// s2s: kernel from f.cu:12\n__global__ void k2() {{}}\n"
    text = merge([a, b])
    lines = text.splitlines()
    assert sum(ln.startswith("#if") for ln in lines) == 3 and lines.count("#endif") == 3, text
    assert text.count("#include <lib.h>") == 1 and text.count("#define N 8") == 1
    assert text.index("#ifndef N") > text.index("#include <lib.h>")


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("name", ["heat1d_steps", "wave2d_steps", "fisher1d_steps"])
def test_the_instrumented_copy_builds_and_the_original_is_untouched(tmp_path: Path, name: str) -> None:
    tree = ROOT / "bench" / "seqzoo" / name
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    app = copy_tree(tree, tmp_path / "app")
    header = tmp_path / "s2s_sequence_rt.h"
    header.write_text(render("sequence/capture_cuda.h.j2"))
    sites = list(scan_tree(tree).launches)
    assert wrap_launch_sites(app, header, sites, mark_loop_exit=True) == [f"{s.file}:{s.line}" for s in sites]
    assert len(sites) == 2
    text = (app / f"{name}.cu").read_text()
    assert text.count("s2s_capture::loop_exit(); }") == 1
    first = sites[0]
    assert f's2s_capture::before(&{first.kernel}, "{first.file}:{first.line}", dim3({first.grid}), dim3({first.block})' in text
    assert f's2s_capture::after("{sites[1].file}:{sites[1].line}");' in text
    proc = subprocess.run(["make"], cwd=app, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before


@pytest.mark.slow
@needs_nvcc
def test_the_sequence_mep_holds_the_window_and_its_harness_builds(tmp_path: Path) -> None:
    fake_window(tmp_path / "dump", 7)
    w = read_window(tmp_path / "dump")
    var = variation(w.launches)
    index = _index()
    kernels = body_kernels(APP, ["heat_step", "heat_source"], index)
    refs = site_refs(list(index.launches), kernels.qualified)
    assert refs == {STEP: "heat_step", SOURCE: "heat_source"}
    mep = write_sequence_mep(tmp_path / "seq", w, var, kernels.text, refs, {"function": "main"}, [])
    table = (mep / "data" / "replay.txt").read_text().splitlines()
    assert table[:4] == ["buffers 2", f"buffer 0 {4 * N} f32", f"buffer 1 {4 * N} f32", "body 4 update 2"]
    assert table[4:6] == ["1 3", "launches 14"]
    assert table[6] == f"l 0 {(N + 255) // 256} 1 1 256 1 1 0 4" and table[7:9] == ["a p 0 0", "a p 1 0"]
    assert (mep / "data" / "buf1.after.bin").read_bytes() == (tmp_path / "dump" / "buf1.after.bin").read_bytes()
    manifest = json.loads((mep / "sequence.json").read_text())
    assert manifest["kernels"] == ["heat_step", "heat_source"] and manifest["variation"]["updated_nodes"] == [1, 3]
    text = (mep / "kernels.cu").read_text()
    assert text.count("__global__ void heat_step(") == 1 and text.count("__global__ void heat_source(") == 1
    proc = subprocess.run(["make"], cwd=mep, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (mep / "harness").is_file()
    # a second capture into the same MEP leaves no buffer of the first behind
    (mep / "data" / "buf7.before.bin").write_bytes(b"old")
    write_sequence_mep(mep, w, var, kernels.text, refs, {"function": "main"}, [])
    assert not (mep / "data" / "buf7.before.bin").exists() and not (mep / "fused.cu").exists()
    # an existing directory that is not a sequence MEP is never written into
    (tmp_path / "mine").mkdir()
    with pytest.raises(UserError, match="not a sequence MEP"):
        write_sequence_mep(tmp_path / "mine", w, var, kernels.text, refs, {}, [])


def test_a_sequence_mep_being_written_is_not_written_by_a_second_capture(tmp_path: Path) -> None:
    """Two sequence captures to one -o each replaced data/ and the harness: a mix of both. The writer holds the MEP's lock."""
    from safety_util import fingerprint

    from s2s.base.meplock import mep_lock

    fake_window(tmp_path / "dump", 7)
    w = read_window(tmp_path / "dump")
    index = _index()
    kernels = body_kernels(APP, ["heat_step", "heat_source"], index)
    refs = site_refs(list(index.launches), kernels.qualified)
    mep = write_sequence_mep(tmp_path / "seq", w, variation(w.launches), kernels.text, refs, {"function": "main"}, [])
    with mep_lock(mep, what="s2s sequence capture"):
        before = fingerprint(mep)
        with pytest.raises(UserError, match="another s2s sequence capture is running on this MEP"):
            write_sequence_mep(mep, w, variation(w.launches), kernels.text, refs, {"function": "other"}, [])
        assert fingerprint(mep) == before


def test_capture_sequence_from_a_profile_to_the_mep_with_the_runtime_faked(tmp_path: Path) -> None:
    """The whole orchestration without a GPU: the profile's loop chosen, its sites wrapped in a copy, the run command
    given the window through the environment (here a stand-in that writes what the runtime would), the MEP written."""
    import os
    import sys

    from s2s.sequence.capture import capture_sequence

    (tmp_path / "profile.txt").write_text(_profile_lines(50))
    stand_in = tmp_path / "run.py"
    stand_in.write_text(
        "import os, sys\nfrom pathlib import Path\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_sequence import fake_window\n"
        "assert 's2s_capture::before(&heat_step' in Path('heat1d_steps.cu').read_text()\n"
        "skip, window = int(os.environ['S2S_SEQ_SKIP']), int(os.environ['S2S_SEQ_WINDOW'])\n"
        "fake_window(Path(os.environ['S2S_SEQ_DIR']), window // 2, skip_steps=skip // 2)\n")
    before = {p: p.read_bytes() for p in APP.rglob("*") if p.is_file()}
    got = capture_sequence(APP, "true", f"{sys.executable} {stand_in}", tmp_path / "seq", skip=4, window=12,
                           profile=read_launches(tmp_path / "profile.txt"))
    assert got.sequence.sites == [STEP, SOURCE] and len(got.window.launches) == 12
    assert got.variation.updated_nodes == (1, 3)
    assert [a.start for a in got.variation.args if a.kind == "affine"] == [2]  # the window starts at step 2
    manifest = json.loads((tmp_path / "seq" / "sequence.json").read_text())
    assert manifest["origin"]["function"] == "main" and manifest["origin"]["skip"] == 4
    assert sorted(os.listdir(tmp_path / "seq" / "data")) == ["buf0.after.bin", "buf0.before.bin", "buf1.after.bin",
                                                             "buf1.before.bin", "replay.txt"]
    assert {p: p.read_bytes() for p in APP.rglob("*") if p.is_file()} == before
    with pytest.raises(UserError, match="leaves none of the loop's 100 launches"):
        capture_sequence(APP, "true", "true", tmp_path / "seq2", skip=100, profile=read_launches(tmp_path / "profile.txt"))
    with pytest.raises(UserError, match=r"not completed \(no launches"):  # the run never reached the loop
        capture_sequence(APP, "true", "true", tmp_path / "seq3", profile=read_launches(tmp_path / "profile.txt"))


def test_the_sequence_command_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    from conftest import run_cli

    missing = run_cli("sequence", str(tmp_path / "nope"), "--build-cmd", "true", "--run-cmd", "true", "-o", str(tmp_path / "o"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr
    inside = run_cli("sequence", str(APP), "--build-cmd", "true", "--run-cmd", "true", "-o", str(APP / "seq"))
    assert inside.returncode == 2 and "-o" in inside.stderr and not (APP / "seq").exists()
    bad = run_cli("sequence", str(APP), "--build-cmd", "true", "--run-cmd", "true", "--window", "0")
    assert bad.returncode == 2 and "--window" in bad.stderr


def test_replay_refuses_a_directory_that_is_not_a_sequence_mep(tmp_path: Path) -> None:
    from s2s.sequence.replay import replay

    with pytest.raises(UserError, match="not a sequence MEP"):
        replay(tmp_path)


# ---- fusion of consecutive launches over one index space ----------------------------------------------------------

FISHER = ROOT / "bench" / "seqzoo" / "fisher1d_steps"
DIFFUSE, REACT = "fisher1d_steps.cu:58", "fisher1d_steps.cu:59"


def fisher_window(dump: Path, steps: int, n: int = 1001, block: int = 128) -> None:
    """What the sequence runtime writes for `steps` steps of fisher1d_steps' loop over `n` points (an odd size): the
    state before, the launches; the state after is left as before (the CPU replay below computes its own)."""
    dump.mkdir(parents=True)
    u = [((i * 7919) % 1000) / 1000.0 for i in range(n)]
    for i, data in enumerate((_f32(u), _f32([0.0] * n))):
        (dump / f"buf{i}.before.bin").write_bytes(data)
        (dump / f"buf{i}.after.bin").write_bytes(data)
    (dump / "buffers.txt").write_text("".join(f"buffer {i} {0x7F0000000000 + i * 0x100000} {4 * n} device\n" for i in (0, 1)))
    grid = (n + block - 1) // block
    lines, cur, nxt = [], 0, 1
    for k in range(steps):
        lines += [f"launch {2 * k + 1} {DIFFUSE} {grid} 1 1 {block} 1 1 0 0", f"arg 0 ptr {cur} 0 4 float",
                  f"arg 1 ptr {nxt} 0 4 float", f"arg 2 value 4 {struct.pack('<i', n).hex()}",
                  f"arg 3 value 4 {struct.pack('<f', 0.2).hex()}",
                  f"launch {2 * k + 2} {REACT} {grid} 1 1 {block} 1 1 0 0", f"arg 0 ptr {nxt} 0 4 float",
                  f"arg 1 value 4 {struct.pack('<i', n).hex()}", f"arg 2 value 4 {struct.pack('<f', 0.05).hex()}"]
        cur, nxt = nxt, cur
    (dump / "launches.txt").write_text("\n".join(lines) + "\n")
    (dump / "status.txt").write_text("done\n")


def _fisher_mep(tmp_path: Path, steps: int):  # type: ignore[no-untyped-def]
    fisher_window(tmp_path / "dump", steps)
    w = read_window(tmp_path / "dump")
    index = scan_tree(FISHER)
    kernels = body_kernels(FISHER, ["diffuse", "react"], index)
    mep = write_sequence_mep(tmp_path / "seq", w, variation(w.launches), kernels.text,
                             site_refs(list(index.launches), kernels.qualified), {"function": "main"}, [])
    return mep


@pytest.mark.slow
def test_a_stencil_and_the_elementwise_kernel_on_its_output_fuse_and_replay_the_same_in_both_thread_orders(tmp_path: Path) -> None:
    from emulate_sequence import replay_on_cpu

    mep = _fisher_mep(tmp_path, 5)
    manifest = json.loads((mep / "sequence.json").read_text())
    assert manifest["fusions"] == ["diffuse + react (body launches 0 and 1): fused"]
    assert manifest["harness_kernels"] == ["diffuse", "react", "s2s_fused_diffuse_react"]
    fused = (mep / "fused.cu").read_text()
    assert "__global__ void s2s_fused_diffuse_react(const float* s2s_a0, float* s2s_a1, int s2s_a2, float s2s_a3, " \
           "float* s2s_b0, int s2s_b1, float s2s_b2)" in fused
    table = (mep / "data" / "fused.txt").read_text().splitlines()
    assert table[0] == "launches 5" and table[1] == "l 2 8 1 1 128 1 1 0 7"  # one launch a step, both launches' arguments
    (tmp_path / "cpu").mkdir()
    original = replay_on_cpu(mep, "replay", tmp_path / "cpu")
    assert original != [(mep / "data" / f"buf{i}.before.bin").read_bytes() for i in (0, 1)]
    assert replay_on_cpu(mep, "fused", tmp_path / "cpu") == original
    assert replay_on_cpu(mep, "fused", tmp_path / "cpu", reverse=True) == original


@pytest.mark.slow
@needs_nvcc
def test_the_harness_with_a_fused_pair_builds(tmp_path: Path) -> None:
    mep = _fisher_mep(tmp_path, 4)
    proc = subprocess.run(["make"], cwd=mep, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '#include "fused.cu"' in (mep / "harness.cu").read_text()


PAIRS = """
__global__ void produce(const float* u, float* v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = 2.0f * u[i];
}
__global__ void smooth(const float* v, float* w, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < n) w[i] += v[i] - v[i - 1];  // accumulates: a stale read stays in the final state
}
__global__ void spread(const float* u, float* v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < n - 1) v[i] = u[i - 1] + u[i + 1];
}
__global__ void clear(float* u, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) u[i] = 0.0f;
}
__global__ void shifted(const float* u, float* v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float* out = v + 1;
    if (i < n - 1) out[i] = u[i];
}
__global__ void rows(float* v, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 4; k++) v[i * 4 + k] *= 2.0f;
}
"""


def _pair(first: tuple[str, tuple[Arg, ...]], second: tuple[str, tuple[Arg, ...]], block: int = 128) -> str:
    launches = []
    for _ in range(3):
        for site, args in (first, second):
            launches.append(Launch(0, site, (9, 1, 1), (block if site == first[0] else 128, 1, 1), 0, 0, args))
    var = variation(launches)
    from s2s.sequence.fusion import fusions
    from s2s.sequence.window import Window

    found = fusions(Window(Path("."), tuple(launches), ()), var, PAIRS, {first[0]: first[0], second[0]: second[0]})
    return found[0].describe()


def _p(buf: int, offset: int = 0) -> Arg:
    return Arg("ptr", 4, "", buf, offset, "float")


def test_fusion_refuses_a_halo_an_anti_dependence_a_hidden_alias_a_loop_and_another_index_space() -> None:
    n = _value(1000, "i")
    assert _pair(("produce", (_p(0), _p(1), n)), ("smooth", (_p(1), _p(2), n))).endswith(
        "not accessed at one element per thread, the same in both")
    assert _pair(("spread", (_p(0), _p(1), n)), ("clear", (_p(0), n))).endswith(
        "not accessed at one element per thread, the same in both")
    assert "a local pointer" in _pair(("shifted", (_p(0), _p(1), n)), ("clear", (_p(1), n)))
    assert _pair(("produce", (_p(0), _p(1), n)), ("rows", (_p(1), n))).endswith(
        "not accessed at one element per thread, the same in both")
    assert _pair(("produce", (_p(0), _p(1), n)), ("clear", (_p(1), n)), block=256).endswith("(not one index space)")
    assert _pair(("produce", (_p(0), _p(1), n)), ("clear", (_p(1, 4), n))).endswith("different offsets of one buffer")
    # what they share they only read, or nothing at all: fused
    assert _pair(("produce", (_p(0), _p(1), n)), ("clear", (_p(2), n))).endswith(": fused")
    assert _pair(("produce", (_p(0), _p(1), n)), ("spread", (_p(0), _p(2), n))).endswith(": fused")


def _dump_of(dump: Path, launches: list[Launch], n: int) -> Window:
    """A window's files for `launches` over buffers of n floats each (their state before: distinct values)."""
    dump.mkdir(parents=True)
    count = 1 + max(a.buf for la in launches for a in la.args)
    for b in range(count):
        data = _f32([((i * 31 + b * 17) % 101) / 7.0 for i in range(n)])
        (dump / f"buf{b}.before.bin").write_bytes(data)
        (dump / f"buf{b}.after.bin").write_bytes(data)
    (dump / "buffers.txt").write_text("".join(f"buffer {b} {(b + 1) << 20} {4 * n} device\n" for b in range(count)))
    lines = []
    for k, la in enumerate(launches):
        lines.append(f"launch {k + 1} {la.site} {' '.join(map(str, la.grid))} {' '.join(map(str, la.block))} 0 0")
        for i, a in enumerate(la.args):
            lines.append(f"arg {i} ptr {a.buf} {a.offset} 4 float" if a.kind == "ptr" else f"arg {i} value {a.size} {a.hex}")
    (dump / "launches.txt").write_text("\n".join(lines) + "\n")
    (dump / "status.txt").write_text("done\n")
    return read_window(dump)


@pytest.mark.slow
def test_the_cpu_replay_catches_a_halo_fusion_that_the_check_refuses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The oracle behind the fusion tests: forced past its refusal, fusing a consumer that reads its neighbour's element
    gives another final state in one of the two thread orders."""
    from emulate_sequence import replay_on_cpu

    import s2s.sequence.mep as mep_module
    from s2s.sequence.fusion import Fusion

    n = 1000
    launches = [Launch(0, site, (8, 1, 1), (128, 1, 1), 0, 0, args) for _ in range(3)
                for site, args in (("produce", (_p(0), _p(1), _value(n, "i"))), ("smooth", (_p(1), _p(2), _value(n, "i"))))]
    w = _dump_of(tmp_path / "dump", launches, n)
    monkeypatch.setattr(mep_module, "fusions", lambda *a: [Fusion(0, "produce", "smooth")])
    mep = write_sequence_mep(tmp_path / "seq", w, variation(w.launches), PAIRS, {"produce": "produce", "smooth": "smooth"},
                             {}, [])
    (tmp_path / "cpu").mkdir()
    original = replay_on_cpu(mep, "replay", tmp_path / "cpu")
    orders = [replay_on_cpu(mep, "fused", tmp_path / "cpu", reverse=r) for r in (False, True)]
    assert orders[0] == original, "forward"
    assert orders[1] != original  # v[i - 1] not yet written when thread i runs first


# ---- the OpenCL twin, profiled for real on PoCL ---------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.skipif(not Path("/etc/OpenCL/vendors").is_dir(), reason="needs an OpenCL ICD (PoCL)")
def test_the_opencl_twins_time_loop_is_found_in_a_real_profile_on_pocl(tmp_path: Path) -> None:
    """heat1d_steps_ocl built and run (a short run: 60 steps on 4099 points) with every launch timed by the profile
    instrumentation; its two launch sites in main's loop are one sequence of 60 iterations, the gaps measured."""
    from s2s.capture.profile import measure

    twin = ROOT / "bench" / "seqzoo" / "heat1d_steps_ocl"
    index = scan_tree(twin)
    prof = measure(twin, tmp_path / "work", "make -s STEPS=60 N=4099", "./heat1d_steps_ocl", timeout=300,
                   launches=list(index.launches))
    found = sequences(prof.launches, list(index.launches))
    assert [(q.function, q.kernels, q.launches, q.iterations) for q in found] == [
        ("main", ["heat_step", "heat_source"], 120, 60)]
    assert found[0].sites == ["heat1d_steps.c:83", "heat1d_steps.c:86"] and len(found[0].gaps_us) == 119
    assert all(la.ms >= 0 for la in prof.launches)


_GPU = shutil.which("nvidia-smi") is not None


@pytest.mark.slow
@needs_nvcc
@pytest.mark.skipif(_GPU, reason="checks what happens without a GPU")
def test_replay_without_a_gpu_is_one_user_error_naming_the_mep(tmp_path: Path) -> None:
    from s2s.sequence.replay import replay

    mep = _fisher_mep(tmp_path, 3)
    with pytest.raises(UserError, match="the sequence harness printed no result") as err:
        replay(mep, 1)
    assert err.value.file == str(mep)


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(not _GPU, reason="needs an NVIDIA GPU")
def test_replay_on_the_gpu_every_transformation_reproduces_the_original(tmp_path: Path) -> None:
    """The fisher window (its state after written by no GPU, so replay_vs_capture is not asserted): the graphs and the
    fused launches must reproduce the original replay's final state, and every mode is timed."""
    from s2s.sequence.replay import replay

    (tmp_path / "heat").mkdir()
    mep = _fisher_mep(tmp_path, 40)
    r = replay(mep, 3)
    assert set(r["modes"]) == {"original", "graph_window", "graph_body", "fused", "fused_graph_window", "persistent"}
    assert r["launches"] == 80 and r["fused_launches"] == 40 and r["checks"]["window_changes_state"] is True
    for mode in ("graph_window", "graph_body", "fused", "fused_graph_window", "persistent"):
        assert r["checks"][mode]["ok"] is True, (mode, r["checks"][mode])
        assert r["modes"][mode]["median_ms"] > 0
    # a loop with a changing scalar (heat1d's time index): the body graph's nodes 1 and 3 updated between bodies
    heat = _heat_mep(tmp_path / "heat", 7)
    r = replay(heat, 3)
    assert (r["body_launches"], r["updated_nodes"]) == (4, 2) and r["checks"]["window_changes_state"] is True, r
    assert r["checks"]["graph_body"]["identical"] is True and r["checks"]["graph_window"]["identical"] is True, r


# ---- the sequence runtime itself, on the host: a fake CUDA runtime and driver ---------------------------------------

FAKE = ROOT / "tests" / "fixtures" / "fake_cuda"


def _host_loop(tmp: Path, name: str = "heat_loop") -> Path:
    """fixtures/fake_cuda/NAME.cpp built with g++ against the fake runtime header and the fake libcuda.so.1, with
    the sequence runtime as `s2s sequence` renders it."""
    (tmp / "s2s_sequence_rt.h").write_text(render("sequence/capture_cuda.h.j2"))
    cc = [["gcc", "-shared", "-fPIC", "-o", str(tmp / "libcuda.so.1"), "-Wl,-soname,libcuda.so.1", str(FAKE / "fake_cuda.c")],
          ["g++", "-std=c++17", "-O1", "-Wall", "-Werror", "-I", str(FAKE), "-I", str(tmp), str(FAKE / f"{name}.cpp"),
           "-o", str(tmp / name), str(tmp / "libcuda.so.1"), f"-Wl,-rpath,{tmp}", "-ldl"]]
    for cmd in cc:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp / name


def _run_loop(exe: Path, tmp: Path, skip: int, window: int, steps: int) -> Path:
    import os

    dump, truth = tmp / f"dump-{skip}-{window}", tmp / f"truth-{skip}-{window}"
    truth.mkdir()
    env = {**os.environ, "S2S_SEQ_DIR": str(dump), "S2S_SEQ_SKIP": str(skip), "S2S_SEQ_WINDOW": str(window)}
    proc = subprocess.run([str(exe), str(skip), str(window), str(steps), str(truth)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return dump


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None, reason="g++ and gcc needed")
def test_the_sequence_runtime_records_the_window_a_loop_makes(tmp_path: Path) -> None:
    """The C++ runtime run for real (memory on the host): the window after `skip` launches, its launches' arguments as
    read_window reads them, each buffer as it was before the window's first launch and after its last."""
    exe = _host_loop(tmp_path)
    dump = _run_loop(exe, tmp_path, skip=6, window=10, steps=12)
    truth = tmp_path / "truth-6-10"
    w = read_window(dump)
    assert len(w.launches) == 10 and [la.ordinal for la in w.launches] == list(range(1, 11))
    assert [b.bytes for b in w.buffers] == [4 * 1001, 4 * 1001] and {b.kind for b in w.buffers} == {"device"}
    first = w.launches[0]
    assert (first.site, first.grid, first.block, first.shmem) == ("heat.cu:69", (4, 1, 1), (256, 1, 1), 0)
    assert [a.kind for a in first.args] == ["ptr", "ptr", "value", "value"] and first.args[0].type == "float"
    assert (dump / "buf0.before.bin").read_bytes() == (truth / "first.bin").read_bytes()
    assert (dump / "buf1.before.bin").read_bytes() == (truth / "second.bin").read_bytes()
    assert (dump / "buf0.after.bin").read_bytes() == (truth / "first.end.bin").read_bytes()
    assert (dump / "buf1.after.bin").read_bytes() == (truth / "second.end.bin").read_bytes()
    var = variation(w.launches)
    assert var.period == 2 and var.updated_nodes == (1, 3)
    assert [(a.start, a.step) for a in var.args if a.kind == "affine"] == [(3, 1)]  # the window starts at step 3
    # a window longer than the loop: the runtime says so, and read_window turns it into one line
    with pytest.raises(UserError, match=r"not completed \(24 launches"):
        read_window(_run_loop(exe, tmp_path, skip=0, window=30, steps=12))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None, reason="g++ and gcc needed")
def test_the_window_ends_with_the_run_of_the_loop_before_the_host_resets_the_state(tmp_path: Path) -> None:
    """A loop run three times, the host resetting its buffers before each run: the window (asked for 1,000 launches)
    is the rest of the run it starts in, its after-state the state that run ended with. A window across the reset held
    launches whose replay from the captured state could never reproduce the captured end (two development
    applications: `a check of the sequence MEP failed`, replay against capture)."""
    import os

    exe = _host_loop(tmp_path, "reset_loop")
    dump, truth = tmp_path / "dump", tmp_path / "truth"
    truth.mkdir()
    env = {**os.environ, "S2S_SEQ_DIR": str(dump), "S2S_SEQ_SKIP": "3", "S2S_SEQ_WINDOW": "1000"}
    proc = subprocess.run([str(exe), "3", "1000", "8", "3", str(truth)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    w = read_window(dump)
    assert [la.ordinal for la in w.launches] == [1, 2, 3, 4, 5]  # launches 4-8 of the first run, none of the second
    assert (dump / "buf0.before.bin").read_bytes() == (truth / "first.bin").read_bytes()
    assert (dump / "buf0.after.bin").read_bytes() == (truth / "first.end.bin").read_bytes()
    assert (dump / "buf1.after.bin").read_bytes() == (truth / "second.end.bin").read_bytes()
    assert not w.whole_run  # it started inside the run
    env.update({"S2S_SEQ_DIR": str(tmp_path / "dump0"), "S2S_SEQ_SKIP": "0"})
    proc = subprocess.run([str(exe), "0", "1000", "8", "3", str(truth)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    w = read_window(tmp_path / "dump0")
    assert len(w.launches) == 8 and w.whole_run  # the first run, whole: graph_run may keep a graph of it


@pytest.mark.skipif(shutil.which("g++") is None or shutil.which("gcc") is None, reason="g++ and gcc needed")
def test_a_launch_in_a_template_host_function_is_replayed_as_the_instance_that_ran(tmp_path: Path) -> None:
    """`k<scalar_t, R><<<g, b>>>(...)` inside a template host function: the sequence harness cannot name `scalar_t`.
    The instrumented copy lets the runtime record the arguments as the instance names them, the window reads them,
    and the harness launches `k<float, 3>` (two development applications' sequence harnesses did not build:
    `scalar_t` undefined). Two instances at one site in one window are refused, not replayed as one."""
    src = ("#include <cuda_runtime.h>\ntemplate <class T, int R> __global__ void step(T* a, int n) { a[0] += R; }\n"
           "template <class T, int R> void run(T* a, int n, long steps) {\n"
           "    for (long t = 0; t < steps; t++)\n"
           "        step<T, R><<<2, 64>>>(a, n);\n}\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "tl.cu").write_text(src)
    sites = list(scan_tree(tmp_path / "app").launches)
    header = tmp_path / "s2s_sequence_rt.h"
    header.write_text(render("sequence/capture_cuda.h.j2"))
    copy = copy_tree(tmp_path / "app", tmp_path / "copy")
    wrap_launch_sites(copy, header, sites, mark_loop_exit=True)
    fixture = (FAKE / "template_loop.cpp").read_text()
    recorded = "s2s_capture::explicit_targs() = +[]() -> std::string { return s2s_capture::join_targs({s2s_capture::targ<T>(), s2s_capture::targ<R>()}); };"
    assert recorded in (copy / "tl.cu").read_text() and recorded in fixture  # the fixture runs what the copy says
    exe = _host_loop(tmp_path, "template_loop")
    import os

    dump = tmp_path / "dump"
    env = {**os.environ, "S2S_SEQ_DIR": str(dump), "S2S_SEQ_SKIP": "0", "S2S_SEQ_WINDOW": "100"}
    proc = subprocess.run([str(exe), "5"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    w = read_window(dump)
    assert len(w.launches) == 5 and {la.targs for la in w.launches} == {("float", "3")}
    assert [a.kind for a in w.launches[0].args] == ["ptr", "value"]  # the arguments still read after the targs line
    site = sites[0]
    assert site_refs(sites, {"step": "step"}, w) == {f"tl.cu:{site.line}": "step<float, 3>"}
    assert site_refs(sites, {"step": "step"}) == {f"tl.cu:{site.line}": "step<T, R>"}  # without a window: as spelled
    two = Window(dump=dump, launches=(w.launches[0], replace(w.launches[1], targs=("double", "3"))), buffers=w.buffers)
    with pytest.raises(UserError, match=r"ran 2 instances of step \(<double, 3>; <float, 3>\)"):
        site_refs(sites, {"step": "step"}, two)


def test_the_instrumented_copy_ends_the_window_after_the_innermost_loop_of_the_sites(tmp_path: Path) -> None:
    """The loop holding the launches (not the repetition around it, which resets the state) is followed by the
    runtime's loop_exit(), inside a block of its own, also when its body is one unbraced launch."""
    src = ("#include <cuda_runtime.h>\n__global__ void k(float* a, int i) { a[i] += 1; }\n"
           "void run(float* d, const float* h, int n) {\n"
           "    for (int rep = 0; rep < 10; rep++) {\n"
           "        cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);\n"
           "        for (int i = 0; i < n; i++)\n"
           "            k<<<1, 1>>>(d, i);\n"
           "        cudaDeviceSynchronize();\n"
           "    }\n}\n")
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "r.cu").write_text(src)
    sites = list(scan_tree(tmp_path / "app").launches)
    header = tmp_path / "s2s_sequence_rt.h"
    header.write_text(render("sequence/capture_cuda.h.j2"))
    copy = copy_tree(tmp_path / "app", tmp_path / "copy")
    wrap_launch_sites(copy, header, sites, mark_loop_exit=True)
    text = (copy / "r.cu").read_text()
    inner = text.index("{ for (int i = 0; i < n; i++)")
    launch, after = text.index("s2s_capture::before(&k"), text.index('s2s_capture::after("r.cu:7");')
    exit_ = text.index("s2s_capture::loop_exit(); }")
    assert inner < launch < after < exit_ < text.index("cudaDeviceSynchronize();")
    assert text.index("cudaMemcpy(") < inner and text.count("loop_exit") == 1
    assert (tmp_path / "app" / "r.cu").read_text() == src


# ---- reintegration: the loop as one CUDA Graph, a diff of the host code -------------------------------------------

LOOP = """#include <cuda_runtime.h>
#include <utility>
__global__ void k(float* a, int n) {{ }}
void run(float* a, float* b, int n, cudaStream_t s) {{
    for (int t = 0; t < 100; t++) {{
        k<<<4, 128>>>(a, n);
        {extra}
        std::swap(a, b);
    }}
}}
"""


def _graph(tmp: Path, extra: str) -> str:
    from s2s.sequence.host_graph import graph_loop

    (tmp / "app").mkdir(exist_ok=True)
    (tmp / "app" / "loop.cu").write_text(LOOP.format(extra=extra))
    sites = sorted(scan_tree(tmp / "app").launches, key=lambda s: s.start_byte)
    edit = graph_loop((tmp / "app" / "loop.cu").read_bytes(), sites)
    return edit.reason or edit.data.decode()


def test_a_loop_with_other_device_work_or_an_exit_is_not_graphed(tmp_path: Path) -> None:
    assert "calls cudaMemcpy (line 7)" in _graph(tmp_path, "cudaMemcpy(b, a, 4, cudaMemcpyDeviceToDevice);")
    assert "calls printf" in _graph(tmp_path, 'printf("%d\\n", t);')
    assert "leaves by return (line 7)" in _graph(tmp_path, "if (t == 50) return;")
    assert "runs on a stream of the application's" in _graph(tmp_path, "k<<<4, 128, 0, s>>>(b, n);")
    graphed = _graph(tmp_path, "k<<<4, 128, 0, 0>>>(b, n); if (t == 60) break;")  # break: the capture still ends
    assert "k<<<4, 128, 0, s2s_graph_stream>>>(a, n);" in graphed and "k<<<4, 128, 0, s2s_graph_stream>>>(b, n);" in graphed
    assert graphed.index("cudaStreamBeginCapture") < graphed.index("for (int t") < graphed.index("cudaStreamEndCapture")
    assert "std::swap(a, b);" in graphed
    assert "cudaStreamBeginCapture" in _graph(tmp_path, "assert(n > 0);")  # a host check of host values stays in the loop
    twin = ROOT / "bench" / "seqzoo" / "heat1d_steps_ocl"
    from s2s.sequence.host_graph import graph_loop

    ocl = sorted(scan_tree(twin).launches, key=lambda s: s.start_byte)
    assert graph_loop((twin / "heat1d_steps.c").read_bytes(), ocl).reason == "only CUDA <<<>>> launches are graphed"


@pytest.mark.slow
@needs_nvcc
def test_the_graphed_heat_loop_builds_and_the_diff_names_the_file(tmp_path: Path) -> None:
    """The diff of a captured sequence MEP (its capture faked as above) applies to a copy of the app with patch, and
    the copy builds with nvcc; a host file changed since the capture refuses the diff."""
    import sys

    from s2s.sequence.capture import capture_sequence
    from s2s.sequence.host_graph import graph_diff

    app = tmp_path / "app"
    shutil.copytree(APP, app)
    (tmp_path / "profile.txt").write_text(_profile_lines(20))
    stand_in = tmp_path / "run.py"
    stand_in.write_text(f"import os, sys\nfrom pathlib import Path\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
                        "from test_sequence import fake_window\n"
                        "fake_window(Path(os.environ['S2S_SEQ_DIR']), int(os.environ['S2S_SEQ_WINDOW']) // 2)\n")
    capture_sequence(app, "true", f"{sys.executable} {stand_in}", tmp_path / "seq", profile=read_launches(tmp_path / "profile.txt"))
    diff = graph_diff(tmp_path / "seq").decode()
    assert diff.startswith("--- a/heat1d_steps.cu\n+++ b/heat1d_steps.cu\n")
    assert "+        s2s_body::launch(s2s_body_graph, heat_step, grid, block, 0, d_u, d_v, N, R);" in diff
    assert '+        s2s_body::Graph s2s_body_graph(4, "heat1d_steps.cu:68");' in diff
    assert "heat_step<<<grid, block, 0, s2s_graph_stream>>>" in graph_diff(tmp_path / "seq", "graph_window").decode()
    # `s2s sequence --run --diff`: a window that is a whole run of a loop run 100 times offers graph_run, its
    # instantiation (40 ms) shared by the runs: 4.8 / (3.5 + 0.4) = 1.23x beats the body graph's 0.91x
    import io

    from rich.console import Console

    from s2s.cli.sequence import write_graph_diff

    manifest = json.loads((tmp_path / "seq" / "sequence.json").read_text())
    manifest["window"]["whole_run"] = True
    manifest["origin"]["profiled_launches"] = 100 * manifest["window"]["launches"]
    (tmp_path / "seq" / "sequence.json").write_text(json.dumps(manifest))
    result = {"verdict": "ok", "modes": {"original": {"median_ms": 5.0, "min_ms": 4.8},
                                         "graph_window": {"median_ms": 3.5, "setup_ms": 40.0},
                                         "graph_body": {"median_ms": 5.2, "setup_ms": 0.1}},
              "checks": {"graph_window": {"ok": True}, "graph_body": {"ok": True}}}
    said = io.StringIO()
    write_graph_diff(tmp_path / "seq", result, str(tmp_path / "run.diff"), Console(file=said))
    assert "the loop as graph_run" in said.getvalue()
    assert f'static s2s_body::Graph s2s_body_graph({manifest["window"]["launches"]}, "heat1d_steps.cu:68", true);' \
        in (tmp_path / "run.diff").read_text()
    patched = tmp_path / "patched"
    shutil.copytree(APP, patched)
    proc = subprocess.run(["patch", "-p1"], input=diff, cwd=patched, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run(["make"], cwd=patched, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with (app / "heat1d_steps.cu").open("a") as fh:
        fh.write("// changed after the capture\n")
    with pytest.raises(UserError, match="changed since the sequence was captured"):
        graph_diff(tmp_path / "seq")


def test_the_form_reintegrated_is_the_one_that_beat_the_originals_fastest_run_with_its_instantiation() -> None:
    from s2s.sequence.choice import choose_form

    def result(body: float, body_setup: float, window: float = 30.0, window_setup: float = 85.0, verdict: str = "ok",
               body_ok: bool = True) -> dict[str, object]:
        return {"verdict": verdict, "modes": {"original": {"median_ms": 60.0, "min_ms": 55.0},
                                              "graph_window": {"median_ms": window, "setup_ms": window_setup},
                                              "graph_body": {"median_ms": body, "setup_ms": body_setup}},
                "checks": {"graph_window": {"ok": True}, "graph_body": {"ok": body_ok}}}

    assert choose_form(result(25.0, 0.4))[0] == "graph_body"  # the first GPU run: the whole-loop graph loses 115 ms to 55
    assert choose_form(result(25.0, 0.4, 13.0, 1.0))[0] == "graph_window"  # a window graph that instantiates fast wins
    form, why = choose_form(result(50.0, 6.0))
    assert form == "" and "graph_body: 50.000 ms + 6.000 ms to instantiate, 0.98x" in why
    assert choose_form(result(50.0, 0.4), min_speedup=1.2)[0] == ""  # 1.09x: below what the caller asks
    assert choose_form(result(10.0, 0.4, verdict="FAILED")) == ("", "a check of the sequence MEP failed")
    assert choose_form(result(10.0, 0.4, 300.0, body_ok=False))[0] == ""  # only measured and checked forms count


def test_diff_without_run_is_refused_before_any_work(tmp_path: Path) -> None:
    from conftest import run_cli

    proc = run_cli("sequence", str(APP), "--build-cmd", "false", "--run-cmd", "false", "-o", str(tmp_path / "o"),
                   "--diff", str(tmp_path / "g.diff"))
    assert proc.returncode == 2 and "--diff needs --run" in proc.stderr and not (tmp_path / "o").exists()


@pytest.mark.slow
@needs_nvcc
def test_a_body_that_fuses_the_same_pair_twice_gets_one_fused_kernel_that_builds_and_replays(tmp_path: Path) -> None:
    """produce, clear, produce, clear on one buffer each iteration: both pairs fuse into the one kernel
    s2s_fused_produce_clear, defined once; the harness builds and the CPU replay agrees in both thread orders."""
    from emulate_sequence import replay_on_cpu

    n = 777
    body = (("p:1", "produce", (_p(0), _p(1), _value(n, "i"))), ("c:1", "clear", (_p(1), _value(n, "i"))),
            ("p:2", "produce", (_p(1), _p(2), _value(n, "i"))), ("c:2", "clear", (_p(0), _value(n, "i"))))
    launches = [Launch(0, site, (7, 1, 1), (128, 1, 1), 0, 0, args) for _ in range(3) for site, _k, args in body]
    w = _dump_of(tmp_path / "dump", launches, n)
    mep = write_sequence_mep(tmp_path / "seq", w, variation(w.launches), PAIRS, {s: k for s, k, _a in body}, {}, [])
    manifest = json.loads((mep / "sequence.json").read_text())
    assert manifest["harness_kernels"] == ["produce", "clear", "s2s_fused_produce_clear"]
    assert (mep / "fused.cu").read_text().count("__global__ void s2s_fused_produce_clear(") == 1
    assert (mep / "data" / "fused.txt").read_text().startswith("launches 6\n")
    proc = subprocess.run(["make"], cwd=mep, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (tmp_path / "cpu").mkdir()
    original = replay_on_cpu(mep, "replay", tmp_path / "cpu")
    assert replay_on_cpu(mep, "fused", tmp_path / "cpu", reverse=True) == original


def _heat_mep(tmp: Path, steps: int) -> Path:
    fake_window(tmp / "dump", steps)
    w = read_window(tmp / "dump")
    index = _index()
    kernels = body_kernels(APP, ["heat_step", "heat_source"], index)
    refs = site_refs(list(index.launches), kernels.qualified)
    return write_sequence_mep(tmp / "seq", w, variation(w.launches), kernels.text, refs, {"function": "main"}, [])


def harness_on_host(mep: Path, kernels: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    """The MEP's harness.cu built with g++ against the fake CUDA runtime (its kernels registered to run on the host,
    its graphs held to the documented update rules) and run once per mode."""
    wrapper = tmp / "host_harness.cpp"
    wrapper.write_text('#include "harness.cu"\nstatic const bool registered = ('
                       + ", ".join(f"fake_cuda_kernel(&{k})" for k in kernels) + ", true);\n")
    exe = tmp / "host_harness"
    proc = subprocess.run(["g++", "-std=c++17", "-O1", "-I", str(FAKE), "-I", str(mep), str(wrapper), "-o", str(exe)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return subprocess.run([str(exe), "1"], cwd=mep, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")
def test_the_body_graph_updates_the_time_index_of_an_instantiated_graph(tmp_path: Path) -> None:
    """heat1d's window: the body graph (2 iterations, 4 nodes) launched once per body with nodes 1 and 3 (the source's
    time index) updated in the executable graph. The first GPU run failed there ("invalid argument"): the graph the
    nodes belong to was destroyed after instantiation, and an update names a node of that graph. The fake runtime
    refuses such an update as the driver does; the kernels run on the host, so every mode's final state is compared."""
    mep = _heat_mep(tmp_path, 7)  # 14 launches: three bodies, then two launches of a fourth
    ran = harness_on_host(mep, ["heat_step", "heat_source"], tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    r = json.loads(ran.stdout.splitlines()[-1])
    assert (r["launches"], r["body_launches"], r["updated_nodes"]) == (14, 4, 2)
    assert r["checks"]["window_changes_state"] is True
    for mode in ("graph_window", "graph_body"):
        assert r["checks"][mode]["identical"] is True, (mode, r["checks"][mode])


def _body_graphed_heat(tmp: Path, steps: int, n_log2: int, extra: str = "") -> Path:
    """heat1d_steps.cu (STEPS and N made small, `extra` after the source's launch) with its loop rewritten as the body
    graph of 4 launches."""
    from s2s.sequence.host_graph import graph_loop

    app = tmp / "app"
    shutil.copytree(APP, app)
    src = app / "heat1d_steps.cu"
    src.write_text(src.read_text().replace("#define STEPS 10000", f"#define STEPS {steps}")
                   .replace("#define N (1 << 16)", f"#define N (1 << {n_log2})")
                   .replace("t, AMP);\n", f"t, AMP);\n{extra}\n"))
    sites = sorted(scan_tree(app).launches, key=lambda s: s.start_byte)
    edit = graph_loop(src.read_bytes(), sites, body=4)
    assert edit.applies, edit.reason
    src.write_bytes(edit.data)
    return src


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")
def _run_on_fake(src: Path, tmp: Path) -> tuple[str, list[int]]:
    """The rewritten app built with g++ against the fake runtime, its kernels on the host: its output, and the
    runtime's counts (direct launches, graph launches, instantiations, node updates)."""
    wrapper = tmp / "run.cpp"
    wrapper.write_text(f'#include "{src}"\n#include <cstdio>\nstatic const bool registered = (fake_cuda_kernel(&heat_step), '
                       "fake_cuda_kernel(&heat_source), std::atexit([] { auto& s = fake_cuda::stats(); std::fprintf(stderr, "
                       '"stats %ld %ld %ld %ld\\n", s.direct, s.graph_launches, s.instantiated, s.updates); }), true);\n')
    proc = subprocess.run(["g++", "-std=c++17", "-O1", "-I", str(FAKE), str(wrapper), "-o", str(tmp / "app.exe")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import os

    times = tmp / "times.txt"
    ran = subprocess.run([str(tmp / "app.exe")], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "S2S_GRAPH_TIMES": str(times)})
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (line,) = times.read_text().splitlines()  # the loop's time, as s2s auto's runs after reintegration record it
    w = line.split()
    assert w[:2] == ["graph_loop", "heat1d_steps.cu:68"] and float(w[2]) >= 0 and int(w[3]) in {2 * 301, 2 * 301 + 43}, line
    return ran.stdout, [int(x) for x in ran.stderr.split("stats ")[1].split()]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")
def test_the_body_graphed_heat_app_runs_right_on_the_fake_runtime(tmp_path: Path) -> None:
    """The reintegrated loop (every launch through s2s_body::launch) built with g++ against the fake runtime, its
    kernels running on the host: the application's own check passes (the time index reached every body's source node),
    the graph was instantiated once, launched once a body, and only the source nodes were updated; an odd step count
    leaves half a body, launched ordinarily at the end of the loop."""
    src = _body_graphed_heat(tmp_path, 301, 12)
    text = src.read_text()
    assert "heat_step<<<" not in text and "s2s_body::launch(s2s_body_graph, heat_source, 1, 32, 0, d_v, N / 3, t, AMP);" in text
    assert text.index("namespace s2s_body") < text.index("int main") and text.count("namespace s2s_body {") == 1
    out, stats = _run_on_fake(src, tmp_path)
    assert "heat1d_steps: ok (0 of 4096 values wrong)" in out, out
    assert stats == [2, 150, 1, 2 * 149], stats  # direct launches, graph launches, instantiations, node updates
    # a launch made only in some iterations: the bodies stop repeating, each change of kernels builds a graph anew,
    # and the application's result is still its own
    (tmp_path / "odd").mkdir()
    src = _body_graphed_heat(tmp_path / "odd", 301, 12, "        if (t % 7 == 3) heat_source<<<1, 32>>>(d_v, N / 3, t, 0.0f);")
    out, stats = _run_on_fake(src, tmp_path / "odd")
    assert "heat1d_steps: ok (0 of 4096 values wrong)" in out, out
    assert 1 < stats[2] <= 9 and 2 * 301 + 43 == stats[0] + 4 * stats[1], stats  # at most MAX_BUILDS + 1 graphs


def test_the_body_graph_rewrite_keeps_the_host_code_and_each_launchs_configuration(tmp_path: Path) -> None:
    from s2s.sequence.host_graph import graph_loop

    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "loop.cu").write_text(LOOP.format(extra="k<<<dim3(4), 128, 64, 0>>>(b, n);"))
    sites = sorted(scan_tree(tmp_path / "app").launches, key=lambda s: s.start_byte)
    edit = graph_loop((tmp_path / "app" / "loop.cu").read_bytes(), sites, body=2)
    assert edit.applies, edit.reason
    text = edit.data.decode()
    assert "s2s_body::launch(s2s_body_graph, k, 4, 128, 0, a, n);" in text
    assert "s2s_body::launch(s2s_body_graph, k, dim3(4), 128, 64, b, n);" in text and "std::swap(a, b);" in text
    assert text.index('s2s_body::Graph s2s_body_graph(2, "loop.cu:5");') < text.index("for (int t")
    assert text.index("#endif") < text.index("void run(") and "<<<" not in text
    (tmp_path / "app" / "loop.cu").write_bytes(edit.data)  # the runtime's own launch is no launch statement to a scan
    assert scan_tree(tmp_path / "app").launches == ()


REPEATED = """#include <cuda_runtime.h>
#include <cstdio>
#include <utility>
#define N 300
#define STEPS 6
__global__ void relax(const float* u, float* v, int n, float w) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = u[i] + w * ((i > 0 ? u[i - 1] : u[i]) - u[i]);
}
static void run_steps(float* d_u, float* d_v) {
    for (int t = 0; t < STEPS; t++) {
        relax<<<(N + 127) / 128, 128>>>(d_u, d_v, N, 0.25f);
        std::swap(d_u, d_v);
    }
}
int main() {
    static float h[N], got[N], a[N], b[N];
    for (int i = 0; i < N; i++) h[i] = (float)((i * 29) % 17);
    float *d_u, *d_v;
    cudaMalloc(&d_u, sizeof h);
    cudaMalloc(&d_v, sizeof h);
    int wrong = 0;
    for (int rep = 0; rep < 5; rep++) {  // the timed section run again and again, its state reset each time
        cudaMemcpy(d_u, h, sizeof h, cudaMemcpyHostToDevice);
        run_steps(d_u, d_v);
        cudaMemcpy(got, d_u, sizeof h, cudaMemcpyDeviceToHost);
        for (int i = 0; i < N; i++) a[i] = h[i];
        for (int t = 0; t < STEPS; t++) {
            for (int i = 0; i < N; i++) b[i] = a[i] + 0.25f * ((i > 0 ? a[i - 1] : a[i]) - a[i]);
            for (int i = 0; i < N; i++) a[i] = b[i];
        }
        for (int i = 0; i < N; i++) wrong += got[i] != a[i];
    }
    std::printf("repeated: %d wrong\\n", wrong);
    return 0;
}
"""


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ needed")
def test_graph_run_instantiates_once_for_every_run_of_the_loop_and_times_it_as_the_original(tmp_path: Path) -> None:
    """A loop run five times (its state reset by the host between runs) as graph_run: a static graph of its whole run
    (6 launches), instantiated at the first run and relaunched by the four others, nothing updated, the result the
    application's own; the runs' times summed without waiting after each run and written once at exit with the
    process's id (a wait after each run slowed a loop run 50,000 times: 1.4 -> 2.6 s of wall time). With
    S2S_GRAPH_DIRECT the same build launches as the original did, timed the same way (auto's time before)."""
    import os

    from s2s.sequence.host_graph import graph_loop
    from s2s.sequence.in_auto import read_loop_times

    (tmp_path / "app").mkdir()
    src = tmp_path / "app" / "repeated.cu"
    src.write_text(REPEATED)
    sites = sorted(scan_tree(tmp_path / "app").launches, key=lambda s: s.start_byte)
    edit = graph_loop(src.read_bytes(), sites, body=6, keep=True)
    assert edit.applies, edit.reason
    text = edit.data.decode()
    assert 'static s2s_body::Graph s2s_body_graph(6, "repeated.cu:11", true);' in text and "s2s_body_graph.end_run();" in text
    assert text.index("s2s_body_graph.end_run();") > text.index("std::swap(d_u, d_v);")
    src.write_bytes(edit.data)
    wrapper = tmp_path / "run.cpp"
    wrapper.write_text(f'#include "{src}"\n#include <cstdio>\nstatic const bool registered = (fake_cuda_kernel(&relax), '
                       "std::atexit([] { auto& s = fake_cuda::stats(); std::fprintf(stderr, "
                       '"stats %ld %ld %ld %ld\\n", s.direct, s.graph_launches, s.instantiated, s.updates); }), true);\n')
    proc = subprocess.run(["g++", "-std=c++17", "-O1", "-I", str(FAKE), str(wrapper), "-o", str(tmp_path / "app.exe")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for direct, stats in ((False, [0, 5, 1, 0]), (True, [30, 0, 0, 0])):
        times = tmp_path / f"times-{direct}.txt"
        env = {**os.environ, "S2S_GRAPH_TIMES": str(times)}
        if direct:
            env["S2S_GRAPH_DIRECT"] = "1"
        ran = subprocess.run([str(tmp_path / "app.exe")], capture_output=True, text=True, timeout=120, env=env)
        assert ran.returncode == 0 and "repeated: 0 wrong" in ran.stdout, ran.stdout + ran.stderr
        assert [int(x) for x in ran.stderr.split("stats ")[1].split()] == stats  # direct, graph launches, instantiated, updates
        (w,) = [ln.split() for ln in times.read_text().splitlines()]  # the five runs summed, written at exit
        assert w[:2] == ["graph_loop", "repeated.cu:11"] and w[3] == "30" and int(w[4]) > 0
        (total,) = read_loop_times(times)["repeated.cu:11"]
        assert total == pytest.approx(float(w[2]), abs=1e-3)


def test_graph_run_is_offered_for_a_whole_run_repeated_and_counts_a_share_of_its_instantiation() -> None:
    from s2s.sequence.choice import choose_form, with_graph_run

    result = {"verdict": "ok", "modes": {"original": {"median_ms": 5.0, "min_ms": 4.8},
                                          "graph_window": {"median_ms": 3.5, "setup_ms": 40.0},
                                          "graph_body": {"median_ms": 5.2, "setup_ms": 0.1}},
              "checks": {"graph_window": {"ok": True}, "graph_body": {"ok": True}}}
    # one run of the loop: the whole-window graph's instantiation is paid by that run alone; graph_run not offered
    assert with_graph_run(result, 1.0) is result
    assert choose_form(with_graph_run(result, 1.0), 1.05, forms=("graph_body", "graph_run"))[0] == ""
    # 100 runs: 0.4 ms of instantiation a run, 4.8 / 3.9 = 1.23x
    got = with_graph_run(result, 100.0)
    assert got["modes"]["graph_run"]["setup_ms"] == pytest.approx(0.4) and got["checks"]["graph_run"] == {"ok": True}
    form, why = choose_form(got, 1.05, forms=("graph_body", "graph_run"))
    assert form == "graph_run" and "graph_run: 3.500 ms + 0.400 ms to instantiate, 1.23x" in why
