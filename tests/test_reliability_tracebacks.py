"""Issue 30, tracebacks: each probe's shape on our own fixtures ends in one line naming the file, exit 2."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from safety_util import cli_inproc, fingerprint, matmul_mep, one_line_exit_2, private_copy


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return matmul_mep(tmp_path_factory.mktemp("tracebacks"))


@pytest.fixture
def env(golden: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    return private_copy(golden, tmp_path)


def unreadable(path: Path) -> None:
    """`path` exists as a file but reading it fails: no read permission, or (root reads anything) a link to a file
    whose read is an I/O error."""
    path.unlink()
    if os.geteuid() != 0:
        path.write_text("kernel = 'x'\n")
        path.chmod(0)
    else:
        path.symlink_to("/proc/self/mem")  # a regular file whose read at offset 0 fails with EIO


@pytest.mark.parametrize("cmd", ["run", "optimize", "report", "reintegrate", "verify"])
def test_an_unreadable_mep_toml_is_one_line(env: tuple[Path, Path], cmd: str, capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    unreadable(mep / "mep.toml")
    before = fingerprint(tree)
    extra = {"run": ["--no-time"], "optimize": ["--max-evals", "1", "--no-patterns"]}.get(cmd, [])
    rc, _o, err = cli_inproc([cmd, str(mep), *extra], capsys)
    one_line_exit_2(rc, err)
    assert "mep.toml" in err and "cannot read" in err, err
    assert fingerprint(tree) == before


def test_optimize_with_the_kernel_file_missing_is_one_line(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    _tree, mep = env
    (mep / "kernel.cl").unlink()
    rc, _o, err = cli_inproc(["optimize", str(mep), "--max-evals", "1", "--no-patterns"], capsys)
    one_line_exit_2(rc, err)
    assert "kernel.cl" in err, err


CORRUPT = [b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'{"patterns": "x"}', b'{"patterns": [{"features": 3}]}',
           b'{"patterns": [{"features": ["a"], "pipeline": 1, "speedup": 2, "device": "d", "kernel": "k", "backend": "b", '
           b'"date": "t"}]}', b"[" * 100000]


@pytest.mark.parametrize("data", CORRUPT, ids=range(len(CORRUPT)))
def test_a_corrupt_pattern_library_is_one_line_and_kept(env: tuple[Path, Path], tmp_path: Path, data: bytes,
                                                        capsys) -> None:  # type: ignore[no-untyped-def]
    _tree, mep = env
    lib = tmp_path / "patterns.json"
    lib.write_bytes(data)
    rc, _o, err = cli_inproc(["optimize", str(mep), "--max-evals", "1", "--patterns", str(lib)], capsys)
    one_line_exit_2(rc, err)
    assert "not a readable pattern library" in err and "--no-patterns" in err, err
    assert lib.read_bytes() == data and not (mep / "variants").exists()


@pytest.mark.slow
def test_no_patterns_never_reads_the_library(env: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from s2s.optimize import loop
    from s2s.optimize.loop import Options, optimize

    _tree, mep = env
    toml = mep / "mep.toml"  # what is checked is the library, not the timing: 3 timed pairs, not 10 of 56 ms each
    toml.write_text(toml.read_text().replace("repetitions = 30", "repetitions = 3"))
    lib = tmp_path / "patterns.json"
    lib.write_bytes(b"{not json")

    def no_library(*_a: object, **_k: object) -> None:
        raise AssertionError("the pattern library was opened under --no-patterns")

    monkeypatch.setattr(loop, "Library", no_library)
    out = optimize(mep, Options(max_evals=1, rounds=1, use_patterns=False, patterns=str(lib), jobs=1, profile=False))
    assert out.evaluations >= 0 and lib.read_bytes() == b"{not json"


def test_a_kernel_nested_100k_blocks_deep_is_extracted_and_then_refused_in_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    tree = tmp_path / "app"
    tree.mkdir()
    depth = 100_000
    (tree / "k.cu").write_text("__global__ void k(float* a) {\n" + "{" * depth + "a[0] = 1.0f;" + "}" * depth + "\n}\n")
    before = fingerprint(tree)
    mep = tmp_path / "mep"
    rc, _o, err = cli_inproc(["extract", str(tree), "--kernel", "k", "-o", str(mep)], capsys)
    assert rc == 0 and "Traceback" not in err, err
    toml = mep / "mep.toml"
    toml.write_text(toml.read_text().replace('["FILL-IN", "FILL-IN", "FILL-IN"]', "[1, 1, 1]").replace('"FILL-IN"', "1"))
    rc, _o, err = cli_inproc(["optimize", str(mep), "--max-evals", "1", "--no-patterns"], capsys)
    one_line_exit_2(rc, err)
    assert "nests more than" in err, err
    assert fingerprint(tree) == before


def test_a_pass_on_a_too_deep_kernel_is_refused_as_a_value() -> None:
    from s2s.optimize.registry import Refused, get_pass, run_pass

    src = ("__global__ void k(float* a) {" + "{" * 5000 + "a[0] = 1.0f;" + "}" * 5000 + "}\n").encode()
    out = run_pass(get_pass("fast-math")(), src, "cuda", "k")
    assert isinstance(out, Refused) and "nests more than" in out.reason


@pytest.mark.slow
@pytest.mark.parametrize("place", ["with space", "nön-ÄSCII", "both ünï"])
def test_an_opencl_mep_under_a_path_with_a_space_or_non_ascii_builds(golden: tuple[Path, Path], tmp_path: Path, place: str,
                                                                     capsys) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("pyopencl")
    import shutil

    from safety_util import fake_win

    _tree, mep0 = golden
    mep = tmp_path / place / "mep"
    shutil.copytree(mep0, mep)
    (mep / "kernel.cl").write_text('#include "extra.h"\n' + (mep / "kernel.cl").read_text())
    (mep / "extra.h").write_text("#define S2S_TEST_EXTRA 1\n")  # found through -I MEP
    vid = fake_win(mep)
    for args in ([], ["--variant", vid]):
        rc, _o, err = cli_inproc(["run", str(mep), "--no-time", *args], capsys)
        assert rc == 0, err


@pytest.mark.parametrize("cmd", ["run", "optimize"])
def test_an_unknown_backend_is_named_with_file_and_line(env: tuple[Path, Path], cmd: str, capsys) -> None:  # type: ignore[no-untyped-def]
    _tree, mep = env
    toml = mep / "mep.toml"
    text = toml.read_text()
    toml.write_text(text.replace('backend = "opencl"', 'backend = "vulkan"'))
    line = next(i for i, ln in enumerate(toml.read_text().splitlines(), 1) if ln.startswith("backend ="))
    rc, _o, err = cli_inproc([cmd, str(mep)], capsys)
    one_line_exit_2(rc, err)
    assert f"mep.toml:{line}: backend = 'vulkan'" in err, err


@pytest.mark.slow
def test_kill_9_of_s2s_run_takes_the_opencl_harness_with_it(env: tuple[Path, Path]) -> None:
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT

    _tree, mep = env
    src = (mep / "kernel.cl").read_text()
    at = src.index("{", src.index("__kernel"))
    vdir = mep / "variants" / "vhang"
    vdir.mkdir(parents=True)
    (vdir / "kernel.cl").write_text(src[:at + 1] + " { volatile int spin = 1; while (spin) { } } " + src[at + 1:])
    proc = subprocess.Popen([sys.executable, "-m", "s2s", "run", str(mep), "--variant", "vhang", "--no-time"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def on_mep(harness_only: bool = False) -> list[int]:
        """The processes that name the MEP or run in it: a harness forked by the pre-imported runner
        (s2s/mep/backends/opencl_zygote.py) has the zygote's command line, its cwd the MEP and its name s2s-ocl-run."""
        import psutil

        out = []
        for p in psutil.process_iter(["pid", "cmdline", "cwd", "name"]):
            args = " ".join(p.info["cmdline"] or [])
            if (str(mep) in args or p.info["cwd"] == str(mep)) and p.info["pid"] != os.getpid() and (
                    p.status() != psutil.STATUS_ZOMBIE) and (not harness_only or p.info["name"] == "s2s-ocl-run" or (
                        "opencl_runner" in args and "--build-only" not in args)):
                out.append(p.info["pid"])
        return out

    t0 = time.monotonic()
    while not on_mep(harness_only=True):  # the harness that runs the spinning variant (not its build-only step)
        assert time.monotonic() - t0 < 120 and proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    t0 = time.monotonic()
    while on_mep() and time.monotonic() - t0 < 10:
        time.sleep(0.2)
    left = on_mep()
    for pid in left:  # the test's own cleanup, whatever the outcome
        os.kill(pid, signal.SIGKILL)
    assert left == []
