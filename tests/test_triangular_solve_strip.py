"""triangular-solve-blocking's strip form ({strip=CB rows=R rpt=RPT}, issue 15: trsm_cols 516 us with rows=16, a hand
strip form 230 us on the H200, cuBLAS 237 us): the launch rule, option refusals, the built-in search's round-1 order,
nvcc compiles the zoo app rewritten, and the CPU emulation (tests/emulate_cuda_block.py's threads, real barriers)
against the originals at odd sizes, with a window of shared rows shorter than the solve (rows past it read back from
global memory) and rows that do (and do not) start 16-byte aligned. Goldens: tests/golden/passes/triangular_solve_strip_*."""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import needs_nvcc
from emulate_cuda import Launch
from session_builds import nvcc_checks
from test_triangular_solve_blocking import MACRO, PASS, ZOO, _apply, _emulate, _zoo_kernel

from s2s.lang.edits import LaunchChange, Refused
from s2s.optimize.registry import make_pass, run_pass, search_space

STRIPS = ("triangular-solve-blocking{strip=32 rows=64 rpt=8}", "triangular-solve-blocking{strip=32 rows=32 rpt=4}")


def test_the_launch_is_a_strip_of_columns_a_block() -> None:
    out = _apply(_zoo_kernel(), "trsm_cols", {"strip": "32", "rows": "64", "rpt": "8"})
    assert out.launch == LaunchChange((32, 8, 1), "same-coverage")
    assert out.launch.resolve((64, 1, 1), (128, 1, 1)) == ((256, 1, 1), (32, 8, 1))
    text = out.text.decode()
    assert "__shared__ float xs[320][32];" in text and "__shared__ float part[64][32];" in text  # 48 KB: 320 of 512 rows
    small = _apply(_zoo_kernel(), "trsm_cols", {"strip": "16", "rows": "32", "rpt": "8"}).text.decode()
    assert "__shared__ float xs[512][16];" in small  # the whole solve fits: the window stops at N (a macro's value)


@pytest.mark.parametrize("opts,why", [({"strip": "24"}, "multiple of 16"), ({"strip": "32", "rows": "32", "rpt": "3"}, "multiple of rpt"),
                                      ({"strip": "64", "rows": "64", "rpt": "2"}, "32 to 1024 threads")])
def test_option_refusals(opts: dict[str, str], why: str) -> None:
    out = run_pass(make_pass(PASS, opts), _zoo_kernel(), "cuda", "trsm_cols")
    assert isinstance(out, Refused) and why in out.reason, out


def test_the_search_tries_the_strips_first() -> None:
    """Round 1 on the zoo kernel's MEP starts with the strip entries (the H200 probe's 230 and 234 us forms)."""
    from mep_util import ParamSpec, manifest

    from s2s.lang.kernel_facts import kernel_facts
    from s2s.optimize.proposers.base import State
    from s2s.optimize.proposers.builtin import BuiltinProposer

    assert set(STRIPS) <= set(search_space())
    src = _zoo_kernel()
    m = manifest("trsm_cols", "cuda", "kernel.cu", [ParamSpec("L", "const float*", "in", "float", count=512 * 512),
                                                    ParamSpec("B", "float*", "inout", "float", count=512 * 8192)],
                 (64, 1, 1), (128, 1, 1))
    state = State(manifest=m, original=src, kernel="trsm_cols", dialect="cuda", facts=kernel_facts(src, "cuda", "trsm_cols"))
    state.round = 1
    got = [c.origin.removeprefix("pass:") for c in BuiltinProposer().propose(state)]
    assert tuple(got[:2]) == STRIPS, got


@needs_nvcc
def test_nvcc_compiles_the_zoo_app_rewritten(tmp_path: Path) -> None:
    nvcc = shutil.which("nvcc")
    assert nvcc is not None
    files = []
    for stem, src, kernel, opts in (("z64", ZOO.read_bytes(), "trsm_cols", {"strip": "32", "rows": "64", "rpt": "8"}),
                                    ("z32", ZOO.read_bytes(), "trsm_cols", {"strip": "32", "rows": "32", "rpt": "4"}),
                                    ("macro", MACRO.format(n=45, nrhs=70).encode(), "trsm_macro", {"strip": "16", "rows": "8", "rpt": "2"})):
        files.append(tmp_path / f"{stem}.cu")
        files[-1].write_bytes(_apply(src, kernel, opts).text)
    proc = nvcc_checks(nvcc, ["-c", "-O3", "-arch=sm_90"], files, tmp_path, 300)
    assert proc.returncode == 0, proc.stderr[-3000:]


CASES = [("zoo", 32, 32, 4, 45, 70), ("macro", 16, 8, 2, 45, 70), ("zoo", 16, 16, 1, 45, 70),
         ("zoo", 128, 16, 4, 100, 140), ("macro", 128, 16, 4, 102, 140)]


@pytest.mark.slow
@pytest.mark.parametrize("kind,strip,rows,rpt,n,nrhs", CASES)
def test_matches_the_original_by_emulation(tmp_path: Path, kind: str, strip: int, rows: int, rpt: int, n: int, nrhs: int) -> None:
    """Every column solved as the original does (short last row and column blocks; with 128 columns the window holds 80
    rows of 100 or 102, the rest read from global memory; N = 45 and 102 rows start unaligned and aligned, so both the
    float4 and the scalar loops run); mutants that drop the window's store, or the float4 loop's second element, differ."""
    name = "trsm_cols" if kind == "zoo" else "trsm_macro"
    before = _zoo_kernel(n, nrhs) if kind == "zoo" else MACRO.format(n=n, nrhs=nrhs).encode()
    out = _apply(before, name, {"strip": str(strip), "rows": str(rows), "rpt": str(rpt)})
    grid, block = (-(-nrhs // 128), 1, 1), (128, 1, 1)
    assert out.launch is not None
    launches = (Launch(grid, block), Launch(*out.launch.resolve(grid, block)))
    assert launches[1] == Launch((grid[0] * 128 // strip, 1, 1), (strip, rows // rpt, 1))  # the original's columns
    assert (b"xs[80]" in out.text) == (strip == 128)
    assert _emulate(tmp_path, name, before, out.text, launches, n, nrhs, kind == "macro") == "SAME"
    no_window = re.sub(rb"\n *if \(\w+ < \d+\)\n *xs\[\w+\]\[threadIdx.x\] = xf;", b"", out.text)
    assert no_window != out.text and _emulate(tmp_path, name, before, no_window, launches, n, nrhs, kind == "macro").startswith("DIFF")
    if rows % 4 == 0 and (n % 4 == 0 or rpt == 1):  # some thread's rows all start aligned: the float4 loop runs
        lost = out.text.replace(b".y * x1;", b".y * x0;")
        assert lost != out.text and _emulate(tmp_path, name, before, lost, launches, n, nrhs, kind == "macro").startswith("DIFF")
