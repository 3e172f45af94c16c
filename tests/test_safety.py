"""Issue 12, hostile and unlucky input: containment, no command from data, one line and exit 2.

Every hostile file is written by the test itself in a temporary directory; every failed operation leaves
the application tree exactly as it was (files, modes and symlinks hashed before and after).
"""
from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest
from conftest import needs_nvcc, run_cli
from safety_util import cli_inproc, copy_sample, fake_win, fingerprint, matmul_mep, one_line_exit_2, private_copy

from s2s.base.errors import UserError


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return matmul_mep(tmp_path_factory.mktemp("safety"))


@pytest.fixture
def env(golden: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """A private application tree and an MEP of its `matmul` whose origin is that tree."""
    return private_copy(golden, tmp_path)


def _edit(mep: Path, old: str, new: str) -> None:
    toml = mep / "mep.toml"
    text = toml.read_text()
    assert old in text, old
    toml.write_text(text.replace(old, new, 1))


# -- containment ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_absolute_kernel_file_is_refused_and_the_app_untouched(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    target = tree / "kernels" / "linalg.cl"
    _edit(mep, 'kernel_file = "kernel.cl"', f'kernel_file = "{target}"')
    before = fingerprint(tree)
    for cmd in (["run", str(mep), "--no-time"], ["optimize", str(mep), "--max-evals", "1", "--rounds", "1", "--no-patterns"]):
        rc, _out, err = cli_inproc(cmd, capsys)
        one_line_exit_2(rc, err)
        assert "kernel_file" in err
    assert fingerprint(tree) == before


def test_kernel_file_symlink_out_of_the_mep_is_refused(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    (mep / "kernel.cl").unlink()
    (mep / "kernel.cl").symlink_to(tree / "kernels" / "linalg.cl")
    before = fingerprint(tree)
    rc, _out, err = cli_inproc(["optimize", str(mep), "--max-evals", "1", "--rounds", "1", "--no-patterns"], capsys)
    one_line_exit_2(rc, err)
    assert "outside" in err
    assert fingerprint(tree) == before


@pytest.mark.slow
@pytest.mark.parametrize("origin", ["../../elsewhere/x.cl", "/etc/hostname", "kernels/../../outside.cl"])
def test_origin_file_outside_the_tree_is_refused(env: tuple[Path, Path], origin: str, capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    fake_win(mep)
    outside = tree.parent / "outside.cl"
    outside.write_text((tree / "kernels" / "linalg.cl").read_text())
    _edit(mep, 'file = "kernels/linalg.cl"', f'file = "{origin}"')
    before, before_out = fingerprint(tree), outside.read_bytes()
    for extra in (["--diff", str(tree.parent / "w.diff")], ["--in-place"]):
        rc, _out, err = cli_inproc(["reintegrate", str(mep), *extra], capsys)
        one_line_exit_2(rc, err)
        assert "origin.file" in err
    assert fingerprint(tree) == before and outside.read_bytes() == before_out
    assert not (tree.parent / "w.diff").exists()


def test_capture_index_outside_the_mep_is_refused(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    _tree, mep = env
    (mep / "mep.toml").write_text((mep / "mep.toml").read_text() + '\n[capture]\nindex = "../../../etc/passwd"\n')
    rc, _out, err = cli_inproc(["run", str(mep), "--no-time"], capsys)
    one_line_exit_2(rc, err)
    assert "capture.index" in err


@pytest.mark.slow
def test_extract_into_the_tree_is_refused(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    tree, _mep = env
    before = fingerprint(tree)
    for out in (tree, tree / "mep-matmul", tree / "kernels"):
        rc, _o, err = cli_inproc(["extract", str(tree), "--kernel", "matmul", "-o", str(out)], capsys)
        one_line_exit_2(rc, err)
        assert "inside the application tree" in err
    assert fingerprint(tree) == before


@pytest.mark.slow
def test_extract_onto_another_kernels_mep_needs_force(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    fake_win(mep)
    before = fingerprint(mep)
    rc, _o, err = cli_inproc(["extract", str(tree), "--kernel", "matvec", "-o", str(mep)], capsys)
    one_line_exit_2(rc, err)
    assert "matmul" in err and "--force" in err
    assert fingerprint(mep) == before
    rc, _o, err = cli_inproc(["extract", str(tree), "--kernel", "matvec", "-o", str(mep), "--force"], capsys)
    assert rc == 0, err
    assert not (mep / "history.sqlite").exists() and not (mep / "variants").exists()
    assert 'kernel = "matvec"' in (mep / "mep.toml").read_text()


@pytest.mark.slow
def test_extract_again_onto_the_same_kernels_mep_is_allowed(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    rc, _o, err = cli_inproc(["extract", str(tree), "--kernel", "matmul", "-o", str(mep)], capsys)
    assert rc == 0, err


@pytest.mark.slow
def test_extract_onto_a_foreign_directory_file_or_impossible_place(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    tree, _mep = env
    foreign = tree.parent / "photos"
    foreign.mkdir()
    (foreign / "cat.jpg").write_bytes(b"\xff\xd8 not really")
    a_file = tree.parent / "notes.txt"
    a_file.write_text("mine\n")
    snap = fingerprint(tree.parent)
    for out, why in ((foreign, "not empty"), (a_file, "existing file"), (a_file / "sub", "cannot")):
        rc, _o, err = cli_inproc(["extract", str(tree), "--kernel", "matmul", "-o", str(out)], capsys)
        one_line_exit_2(rc, err)
        assert why in err
    assert fingerprint(tree.parent) == snap


def test_failed_in_place_restores_symlinks_and_leaves_nothing_in_the_tree(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    fake_win(mep)
    real = tree / "kernels" / "real_linalg.cl"
    (tree / "kernels" / "linalg.cl").rename(real)
    (tree / "kernels" / "linalg.cl").symlink_to("real_linalg.cl")
    before = fingerprint(tree)
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--in-place", "--build-cmd", "true", "--test-cmd", "exit 3"], capsys)
    assert rc == 2 and "restored" in err, err
    assert fingerprint(tree) == before
    assert (tree / "kernels" / "linalg.cl").is_symlink()


def test_successful_in_place_keeps_the_symlink_and_backs_up_outside_the_tree(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    tree, mep = env
    fake_win(mep)
    (tree / "kernels" / "linalg.cl").rename(tree / "kernels" / "real_linalg.cl")
    (tree / "kernels" / "linalg.cl").symlink_to("real_linalg.cl")
    rc, _o, err = cli_inproc(["reintegrate", str(mep), "--in-place"], capsys)
    assert rc == 0, err
    assert (tree / "kernels" / "linalg.cl").is_symlink()
    assert "s2s-test winner" in (tree / "kernels" / "real_linalg.cl").read_text()
    assert not list(tree.rglob(".s2s-backup*"))
    backup = next(ln for ln in err.splitlines() if "backup" in ln).split(" in ", 1)[1].strip()
    assert Path(backup).is_dir() and not Path(backup).resolve().is_relative_to(tree.resolve())


# -- no command from data ----------------------------------------------------------------------------------
DANGERS = [
    ("-ccbin=/tmp/evil", "-ccbin"), ("-ccbin", "-ccbin"), ("--compiler-bindir=/tmp/evil", "--compiler-bindir"),
    ("-Xcompiler=/tmp/x.so", "-Xcompiler"), ("-Xcompiler", "-Xcompiler"), ("@/tmp/flags.rsp", "@"),
    ("--options-file=/tmp/o", "--options-file"), ("-optf", "-optf"), ("-DX=`touch /tmp/pwned`", "-DX"), ("-DX=$(id)", "-DX"),
    ("-DX=1;id", "-DX"), ("-DX=1|id", "-DX"), ("-DX=1&id", "-DX"), ("-DX=a\\nb", "-DX"),
]


@pytest.mark.parametrize(("flag", "named"), DANGERS)
def test_dangerous_flags_in_mep_toml_are_refused(env: tuple[Path, Path], flag: str, named: str) -> None:
    from s2s.mep.manifest import load, save

    _tree, mep = env
    m = load(mep)
    m.backend, m.kernel_file = "cuda", "kernel.cu"
    (mep / "kernel.cu").write_text("__global__ void matmul(float* a) { a[0] = 1; }\n")
    m.flags = ["-DOK=1", flag.replace("\\n", "\n")]
    save(m, mep)
    with pytest.raises(UserError) as exc:
        load(mep)
    line = exc.value.one_line()
    assert named in line and "mep.toml" in line and "\n" not in line


@pytest.mark.slow
def test_dangerous_define_from_compile_commands_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    tree = copy_sample(tmp_path / "app", "heat3d_cuda")
    db = json.loads((tree / "compile_commands.json").read_text())
    marker = tmp_path / "pwned"
    for entry in db:
        if "arguments" in entry:
            entry["arguments"].insert(1, f"-DEVIL=$(touch {marker})")
        else:
            entry["command"] = entry["command"].replace(" -c ", f" '-DEVIL=$(touch {marker})' -c ", 1)
    (tree / "compile_commands.json").write_text(json.dumps(db))
    rc, _o, err = cli_inproc(["extract", str(tree), "--kernel", "axpby_t", "-o", str(tmp_path / "mep")], capsys)
    one_line_exit_2(rc, err)
    assert "compile_commands.json" in err and "-DEVIL" in err
    assert not marker.exists()


def test_generated_makefile_escapes_dollars(env: tuple[Path, Path], tmp_path: Path) -> None:
    from s2s.mep.backends import write_mep_files
    from s2s.mep.manifest import load

    _tree, mep = env
    m = load(mep)
    m.backend, m.kernel_file = "cuda", "kernel.cu"
    (mep / "kernel.cu").write_text("__global__ void matmul(float* a) { a[0] = 1; }\n")
    marker = tmp_path / "made"
    m.flags = ["-DPRICE=4$", f"-I$(shell touch {marker})"]  # '$(' outside a -D value: refused only in -D values
    write_mep_files(mep, m)
    text = (mep / "Makefile").read_text()
    assert "4$$" in text and "$$(shell" in text
    subprocess.run(["make", "-n", "-C", str(mep)], capture_output=True, text=True, timeout=60)
    assert not marker.exists()


def test_a_file_name_with_a_newline_stays_in_its_comment(tmp_path: Path) -> None:
    tree = tmp_path / "app"
    evil = tree / "d\nint s2s_injected = 1; //"
    evil.mkdir(parents=True)
    (evil / "c.h").write_text("#define SCALE 2.0f\n")
    (tree / "k.cl").write_text('#include "c.h"\n__kernel void k(__global float* a) { a[get_global_id(0)] *= SCALE; }\n')
    from s2s.extract.mep_writer import make_mep

    out, _m, _ex = make_mep(str(tree), "k", str(tmp_path / "mep"))
    text = (out / "kernel.cl").read_text()
    assert "#define SCALE" in text
    for line in text.splitlines():
        assert "s2s_injected" not in line or line.lstrip().startswith("//"), line


def test_provenance_comment_escapes_newlines_and_line_splices() -> None:
    from s2s.base.paths import comment_text

    for name in ("a\nint x;", "dir\\", "a\r\nb", "x*/y"):
        text = comment_text(name)
        assert "\n" not in text and "\r" not in text and not text.endswith("\\") and "*/" not in text


# -- one line, exit 2 --------------------------------------------------------------------------------------
MALFORMED = {
    "wrong-type": lambda t: t.replace('kernel = "matmul"', "kernel = 5"),
    "grid-text": lambda t: t.replace("grid = [256, 256, 1]", 'grid = "big"'),
    "flags-text": lambda t: t.replace('flags = ["-DREAL=float"]', 'flags = "-DREAL=float"'),
    "param-name-int": lambda t: t.replace('name = "A"', "name = 7", 1),
    "count-list": lambda t: t.replace("count = 65536", "count = [1, 2]", 1),
    "seed-text": lambda t: t.replace("seed = 1234", 'seed = "x"'),
}


def _malformed(mep: Path, kind: str) -> None:
    toml = mep / "mep.toml"
    if kind == "non-utf8":
        toml.write_bytes(toml.read_bytes().replace(b'kernel = "matmul"', b'kernel = "m\xe9\xff"'))
    elif kind == "binary":
        toml.write_bytes(b"\x00\x01\x02ELF\x7f" * 50)
    else:
        new = MALFORMED[kind](toml.read_text())
        assert new != toml.read_text(), kind
        toml.write_text(new)


@pytest.mark.parametrize("kind", [*MALFORMED, "non-utf8", "binary"])
def test_malformed_mep_toml_is_one_line_in_every_command(env: tuple[Path, Path], kind: str, capsys) -> None:  # type: ignore[no-untyped-def]
    _tree, mep = env
    fake_win(mep)
    _malformed(mep, kind)
    for cmd in (["run", str(mep), "--no-time"], ["optimize", str(mep), "--max-evals", "1", "--no-patterns"], ["report", str(mep)],
                ["reintegrate", str(mep)], ["verify", str(mep)]):
        rc, _o, err = cli_inproc(cmd, capsys)
        one_line_exit_2(rc, err)
        assert "mep.toml" in err, (cmd, err)


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_history_is_one_line(env: tuple[Path, Path], damage: str, capsys) -> None:  # type: ignore[no-untyped-def]
    _tree, mep = env
    fake_win(mep)
    db = mep / "history.sqlite"
    if damage == "garbage":
        db.write_bytes(b"this is not a database\n" * 200)
    else:
        con = sqlite3.connect(db)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 2 + 100])
        for side in ("history.sqlite-wal", "history.sqlite-shm"):
            (mep / side).unlink(missing_ok=True)
    for cmd in (["optimize", str(mep), "--max-evals", "1", "--no-patterns"], ["report", str(mep)], ["reintegrate", str(mep)],
                ["verify", str(mep)], ["run", str(mep), "--variant", "best", "--no-time"]):
        rc, _o, err = cli_inproc(cmd, capsys)
        one_line_exit_2(rc, err)
        assert "history.sqlite" in err or (cmd[0] == "verify" and "no captur" in err), (cmd, err)


def test_int_scalar_out_of_range_is_one_line(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    _tree, mep = env
    text = (mep / "mep.toml").read_text()
    name = 'name = "n"'
    assert name in text
    head, tail = text.split(name, 1)
    value_at = tail.index("value = ")
    end = tail.index("\n", value_at)
    (mep / "mep.toml").write_text(head + name + tail[:value_at] + "value = 4294967296" + tail[end:])
    rc, _o, err = cli_inproc(["run", str(mep), "--no-time"], capsys)
    one_line_exit_2(rc, err)
    assert "params.n.value" in err and "int" in err


@pytest.mark.parametrize(("cmd", "opt"), [("auto", "--top"), ("optimize", "--max-evals"), ("optimize", "--rounds"),
                                          ("optimize", "--jobs"), ("verify", "--top"), ("verify", "--jobs"),
                                          ("auto", "--max-evals")])
@pytest.mark.parametrize("value", ["0", "-3"])
def test_counts_must_be_at_least_one(cmd: str, opt: str, value: str, capsys) -> None:  # type: ignore[no-untyped-def]
    rc, _o, err = cli_inproc([cmd, "somewhere", opt, value], capsys)
    assert rc == 2 and opt in err and ">= 1" in err, err


def test_run_variant_best(env: tuple[Path, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    from s2s.cli.run_report import resolve_variant

    _tree, mep = env
    with pytest.raises(UserError, match="no verified variant"):
        resolve_variant(mep, "best")
    vid = fake_win(mep)
    assert resolve_variant(mep, "best") == vid
    assert resolve_variant(mep, "vother") == "vother"
    assert resolve_variant(mep, None) is None


@pytest.mark.slow
def test_run_variant_best_runs_it(env: tuple[Path, Path]) -> None:
    _tree, mep = env
    vid = fake_win(mep)
    res = run_cli("run", str(mep), "--variant", "best", "--no-time", "--json")
    assert res.returncode == 0, res.stderr
    assert f'"variant_id": "{vid}"' in res.stdout


class _ClosedPipe:
    def write(self, _s: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_scan_json_into_a_closed_pipe_exits_quietly(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from conftest import SAMPLES

    from s2s.cli.main import main

    monkeypatch.setattr("sys.stdout", _ClosedPipe())
    rc = main(["scan", str(SAMPLES / "ocl_solver"), "--json"])
    assert rc == 141 and capsys.readouterr().err == ""


@pytest.mark.slow
def test_auto_on_a_tree_with_a_symlink_loop(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    tree = copy_sample(tmp_path / "app")
    (tree / "kernels" / "loop").symlink_to("..")
    before = fingerprint(tree)
    rc, _o, err = cli_inproc(["auto", str(tree), "--kernels", "matmul", "--work", str(tmp_path / "w"), "--max-evals", "1",
                              "--rounds", "1", "--no-patterns", "--diff", str(tmp_path / "a.diff")], capsys)
    one_line_exit_2(rc, err)
    assert "symlink" in err and "kernels/loop" in err
    assert fingerprint(tree) == before


@needs_nvcc
def test_nvcc_never_sees_a_refused_flag(env: tuple[Path, Path], tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """The whole way: `s2s run` on a CUDA MEP whose flags would run a command; exit 2 before nvcc starts."""
    _tree, mep = env
    marker = tmp_path / "pwned"
    (mep / "kernel.cu").write_text("__global__ void matmul(float* a) { a[0] = 1; }\n")
    text = (mep / "mep.toml").read_text().replace('backend = "opencl"', 'backend = "cuda"')
    text = text.replace('kernel_file = "kernel.cl"', 'kernel_file = "kernel.cu"')
    text = text.replace('flags = ["-DREAL=float"]', f'flags = ["-DREAL=float`touch {marker}`"]')
    (mep / "mep.toml").write_text(text)
    rc, _o, err = cli_inproc(["run", str(mep), "--no-time"], capsys)
    one_line_exit_2(rc, err)
    assert not marker.exists()
