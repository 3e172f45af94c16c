"""Issue 11, "What to build" 3 and 7: the build command's own flags reach extraction from `capture` and `auto` too,
every option that names where a command writes is checked before any work, and `s2s scan --json | head` is quiet."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomllib
from conftest import ROOT, SAMPLES
from safety_util import cli_inproc, fingerprint, one_line_exit_2

from s2s.base.errors import UserError

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")

# a CUDA application whose real flags differ from what reading its Makefile alone would give (DEBUG=yes on the command)
APP = {
    "Makefile": """DEBUG = no
NVFLAGS = -O2 -DNX=64
ifeq ($(DEBUG),yes)
NVFLAGS += -DNX_DEBUG=7
endif
all: app
app: app.cu
\tnvcc $(NVFLAGS) -c app.cu -o app.o && nvcc app.o -o app
""",
    "app.cu": """#include <cuda_runtime.h>
#ifndef NX_DEBUG
#define NX_DEBUG 1
#endif
__global__ void fill(float* a, int n) { int i = threadIdx.x; if (i < n) a[i] = NX_DEBUG; }
int main() { float* d; cudaMalloc((void**)&d, NX * sizeof(float)); fill<<<1, NX>>>(d, NX); return 0; }
""",
}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


class _Stop(UserError):
    pass


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """make_mep as it is, recording each MEP's mep.toml and the build command it was given, then stopping the caller
    (a capture would go on to build and run the application on a GPU)."""
    import s2s.extract.mep_writer as mw

    real = mw.make_mep
    seen: list[dict[str, Any]] = []

    def recording(*args: Any, **kw: Any) -> Any:
        out, manifest, ex = real(*args, **kw)
        seen.append({"build_cmd": kw.get("build_cmd"), "toml": tomllib.loads((out / "mep.toml").read_text())})
        raise _Stop("stopped after extraction by the test")

    monkeypatch.setattr(mw, "make_mep", recording)
    return seen


@needs_make
def test_capture_extracts_with_the_flags_of_the_build_command(tmp_path: Path, spy: list[dict[str, Any]]) -> None:
    from s2s.capture import capture

    tree = _tree(tmp_path / "app", APP)
    before = fingerprint(tree)
    with pytest.raises(_Stop):
        capture(tree, "fill", "make DEBUG=yes", "./app", output=str(tmp_path / "mep"))
    origin = spy[0]["toml"]["origin"]
    assert spy[0]["build_cmd"] == "make DEBUG=yes"
    assert "dry run" in origin["flags_from"] and "-DNX_DEBUG=7" in origin["compile_command"], origin
    assert fingerprint(tree) == before  # the dry run ran in a scratch copy


@needs_make
def test_auto_extracts_with_the_flags_of_the_build_command(tmp_path: Path, spy: list[dict[str, Any]]) -> None:
    from s2s.auto import run_auto
    from s2s.optimize.loop import Options

    tree = _tree(tmp_path / "app", APP)
    result = run_auto(str(tree), top=1, profile=None, work=tmp_path / "work", diff_path=tmp_path / "auto.diff",
                      options=Options(), app=("make DEBUG=yes", "./app"), log=lambda _s: None)
    assert result.rows[0][5].endswith("stopped after extraction by the test")
    origin = spy[0]["toml"]["origin"]
    assert "dry run" in origin["flags_from"] and "-DNX_DEBUG=7" in origin["compile_command"], origin
    spy.clear()
    run_auto(str(tree), top=1, profile=None, work=tmp_path / "work2", diff_path=tmp_path / "auto2.diff",
             options=Options(), log=lambda _s: None)  # no build command: the Makefile read as text, and said so
    origin = spy[0]["toml"]["origin"]
    assert spy[0]["build_cmd"] is None and "heuristic" in origin["flags_from"] and "NX_DEBUG" not in origin["compile_command"]


# -- -o / --work / --diff onto a wrong place: one line, exit 2, before any work, nothing written -------------------------
def _wrong_places(tmp_path: Path) -> list[tuple[list[str], str]]:
    a_file, a_dir = tmp_path / "notes.txt", tmp_path / "adir"
    a_file.write_text("mine\n")
    a_dir.mkdir()
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"not really")
    (tmp_path / "other-mep").mkdir()
    (tmp_path / "other-mep" / "mep.toml").write_text('kernel = "jacobi2d"\n')
    sample = str(SAMPLES / "ocl_solver")
    cap = ["capture", sample, "--kernel", "matvec", "--build-cmd", "make", "--run-cmd", "./ocl_solver"]
    ext = ["extract", sample, "--kernel", "matvec"]
    auto = ["auto", sample, "--top", "1", "--max-evals", "1"]
    return [
        ([*ext, "-o", str(a_file)], "existing file"),
        ([*ext, "-o", str(a_file / "sub")], "not a directory"),
        ([*ext, "-o", "/proc/s2s-mep"], "cannot write"),
        ([*cap, "-o", str(a_file)], "existing file"),
        ([*cap, "-o", "/proc/s2s-mep"], "cannot write"),
        ([*cap, "-o", str(tmp_path / "photos")], "not empty and is not an MEP of matvec"),
        ([*cap, "-o", str(tmp_path / "other-mep")], "holds the MEP of another kernel (jacobi2d)"),
        ([*auto, "--work", str(a_file)], "existing file"),
        ([*auto, "--diff", str(tmp_path / "d.diff"), "--work", "/proc/s2s-work"], "cannot write"),
        ([*auto, "--work", str(tmp_path / "w"), "--diff", str(a_dir)], "names a directory"),
        ([*auto, "--work", str(tmp_path / "w"), "--diff", str(tmp_path / "no" / "such" / "d.diff")], "does not exist"),
        ([*auto, "--build-cmd", "make", "--run-cmd", "./ocl_solver", "--work", str(tmp_path / "w"), "--diff", str(a_dir)],
         "names a directory"),
        (["reintegrate", str(a_dir), "--diff", str(a_dir)], "names a directory"),
    ]


def test_every_output_option_refuses_a_wrong_place_at_once(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    cases = _wrong_places(tmp_path)
    snap = fingerprint(tmp_path)
    for argv, why in cases:
        rc, _out, err = cli_inproc(argv, capsys)
        one_line_exit_2(rc, err)
        assert why in err, (argv, err)
        assert err.startswith(f"error: {argv[-1]}: "), (argv, err)  # the line names the place (the last argument here)
    assert fingerprint(tmp_path) == snap  # nothing written anywhere, not even the default work directory
    from s2s.cli.outputs import check_capture_dir

    (tmp_path / "same").mkdir()
    (tmp_path / "same" / "mep.toml").write_text('kernel = "ns::matvec"\n')
    check_capture_dir(tmp_path / "same", "kernels/linalg.cl:matvec@12")  # capturing again into its own MEP is fine


def test_scan_json_into_head_exits_quietly(tmp_path: Path) -> None:
    """A real pipe whose reader leaves after one byte, with more JSON than a pipe buffer holds."""
    body = "".join(f"__global__ void k{i}(float* a, int n) {{ int j = threadIdx.x; if (j < n) a[j] = {i}; }}\n"
                   for i in range(600))
    _tree(tmp_path / "app", {"many.cu": body})
    script = (f"set -o pipefail; {sys.executable} -m s2s scan {tmp_path / 'app'} --json --no-cache | head -c 1 >/dev/null; "
              "echo ${PIPESTATUS[0]}")
    p = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.stderr == "", p.stderr
    assert p.stdout.strip() in {"0", "141"}, p.stdout


# -- mep.toml is valid TOML whatever the characters of the tree's paths and text -----------------------------------------
@pytest.mark.parametrize("odd", ["\x0c", "\x1b\x7f", "é\u2028\u0085", '"\'\'\'"""', "\\", "\t\U0001F600\ufeff"])
def test_mep_toml_is_valid_with_odd_characters_in_paths_and_text(tmp_path: Path, odd: str) -> None:
    from s2s.extract.mep_writer import make_mep

    safe = odd.replace("\\", "_")
    rel = f"d{safe}ir/k{safe}.cu"
    src = (f"#include <cuda_runtime.h>\n#define NX 64 // c{odd}c\n#define NAME \"n{odd.replace(chr(92), '')}\"\n"
           "__global__ void wide(float* u, int n) { u[threadIdx.x] = n; }\n"
           f"int main() {{ /* {odd} */ float* d_u; cudaMalloc((void**)&d_u, NX * sizeof(float));\n"
           f"  wide<<<NX / 32 /* {odd} */, 32>>>(d_u, NX); return 0; }}\r\n")
    tree = _tree(tmp_path / "app", {rel: src})
    out, m, _ = make_mep(str(tree), "wide", str(tmp_path / "m"), mode="names")
    doc = tomllib.loads((out / "mep.toml").read_text(encoding="utf-8"))
    assert doc["origin"]["file"] == rel and doc["launch"]["grid"] == [2, 1, 1]
    assert {p["name"]: p.get("value") for p in doc["params"]}["n"] == 64


def test_a_build_command_that_calls_the_compiler_itself_gives_the_flags(tmp_path: Path) -> None:
    from s2s.extract.mep_writer import make_mep
    from s2s.scan.build_capture import commands_in_text

    tree = _tree(tmp_path / "app", {
        "inc/scale.h": "#define SCALE 2.0f\n",
        "src/app.cu": '#include "scale.h"\n' + APP["app.cu"].replace("NX_DEBUG;", "NX_DEBUG * SCALE;"),
        "src/other.cu": "int other() { return 1; }\n",
    })
    build = "cd src && nvcc -O2 -DNX=48 -DNX_DEBUG=5 -I../inc -o app *.cu"
    found = commands_in_text(build, tree)
    assert sorted(p.name for p in found) == ["app.cu", "other.cu"]  # the glob, in the directory `cd` entered
    assert found[(tree / "src" / "app.cu").resolve()].include_dirs == [(tree / "inc").resolve()]
    assert commands_in_text("./build.sh --fast", tree) == {} and commands_in_text("echo 'unterminated", tree) == {}
    out, m, _ = make_mep(str(tree), "fill", str(tmp_path / "m"), build_cmd=build)
    doc = tomllib.loads((out / "mep.toml").read_text())
    assert "compiler invocation(s) of the build command" in doc["origin"]["flags_from"]
    assert m.launch.block == (48, 1, 1) and "-DNX_DEBUG=5" in doc["flags"]


def test_the_builds_numerics_flags_go_to_the_mep(tmp_path: Path) -> None:
    """`-use_fast_math`, `-ftz true`, `--prec-div=false` change what the device code computes (aobench-cuda's image
    differed by one in 9 pixels between the application and its MEP): the MEP is built with them; warnings, the
    optimization level and host-compiler options are not numerics and stay out."""
    from s2s.extract.mep_writer import make_mep
    from s2s.scan.compdb import CompileCommand

    cmd = CompileCommand(Path("/x/a.cu"), Path("/x"), ("nvcc", "-O3", "-use_fast_math", "-ftz", "true", "--prec-div=false",
                                                        "-fmad=true", "-Xcompiler", "-Wall", "-c", "a.cu"))
    assert cmd.numerics_flags == ["-use_fast_math", "-ftz=true", "-prec-div=false", "-fmad=true"]
    tree = _tree(tmp_path / "app", {"app.cu": APP["app.cu"]})
    build = "nvcc -O3 -use_fast_math -ftz true -DNX=64 -Xcompiler -Wall -o app app.cu"
    out, m, _ = make_mep(str(tree), "fill", str(tmp_path / "m"), build_cmd=build)
    doc = tomllib.loads((out / "mep.toml").read_text())
    assert "-use_fast_math" in doc["flags"] and "-ftz=true" in doc["flags"]
    assert not any(f.startswith(("-O", "-Xcompiler", "-W")) for f in doc["flags"])
