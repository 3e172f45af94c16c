"""Issue 30, bad input accepted: capture/index.json named files outside the MEP (another MEP's data, /etc/passwd)
and its `schema = 99` or `sets = "x"` were taken as given. A real capture (PoCL) is made once; each test plants one
change in a private copy of it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_cli
from safety_util import cli_inproc, fingerprint, one_line_exit_2

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make and a C compiler are needed")


@pytest.fixture(scope="module")
def captured(solver: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("meps") / "matvec"
    proc = run_cli("capture", str(solver), "--kernel", "matvec", "--build-cmd", "make", "--run-cmd",
                   "./ocl_solver -k kernels", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture
def mep(captured: Path, tmp_path: Path) -> Path:
    shutil.copytree(captured, tmp_path / "mep")
    shutil.copytree(captured, tmp_path / "other")  # another MEP, whose data a planted index points at
    return tmp_path / "mep"


def _edit_index(mep: Path, change) -> None:  # type: ignore[no-untyped-def]
    path = mep / "capture" / "index.json"
    index = json.loads(path.read_text())
    change(index)
    path.write_text(json.dumps(index))


def _first_buffer(index: dict) -> dict:  # type: ignore[type-arg]
    return next(v for v in index["sets"][0]["params"].values() if v.get("kind") == "buffer")


@pytest.mark.slow
def test_the_captured_mep_runs(mep: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    rc, _o, err = cli_inproc(["run", str(mep), "--no-time"], capsys)
    assert rc == 0, err


PLANTS = {
    "another MEP's data": (lambda ix: _first_buffer(ix).update(before="../other/" + _first_buffer(ix)["before"]), "leads outside"),
    "/etc/passwd": (lambda ix: _first_buffer(ix).update(after="/etc/passwd"), "absolute path"),
    "schema 99": (lambda ix: ix.update(schema=99), "schema = 99"),
    "sets is a string": (lambda ix: ix.update(sets="x"), "sets = 'x'"),
    "params is a list": (lambda ix: ix["sets"][0].update(params=[1]), "params = [1]"),
}


@pytest.mark.slow
@pytest.mark.parametrize("plant", list(PLANTS))
def test_a_planted_capture_index_is_refused_in_one_line(mep: Path, plant: str, capsys) -> None:  # type: ignore[no-untyped-def]
    change, said = PLANTS[plant]
    _edit_index(mep, change)
    before = fingerprint(mep.parent)
    for cmd in (["run", str(mep), "--no-time"], ["optimize", str(mep), "--max-evals", "1", "--no-patterns"]):
        rc, _o, err = cli_inproc(cmd, capsys)
        one_line_exit_2(rc, err)
        assert "index.json" in err and said in err, err
    assert fingerprint(mep.parent) == before


@pytest.mark.slow
def test_capture_sets_in_mep_toml_must_be_launch_numbers(mep: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    toml = mep / "mep.toml"
    text = toml.read_text()
    start = text.index("\nsets = ", text.index("[capture]"))
    end = text.index("\n", start + 1)
    toml.write_text(text[:start] + '\nsets = "x"' + text[end:])
    rc, _o, err = cli_inproc(["run", str(mep), "--no-time"], capsys)
    one_line_exit_2(rc, err)
    assert "capture.sets" in err and "mep.toml" in err, err


@pytest.mark.slow
@pytest.mark.parametrize(("key", "value"), [("schema", 99), ("sets", "x")])
def test_a_bad_schema_or_sets_is_named_with_its_line(mep: Path, key: str, value: object, capsys) -> None:  # type: ignore[no-untyped-def]
    path = mep / "capture" / "index.json"
    index = json.loads(path.read_text())
    index[key] = value
    text = json.dumps(index, indent=1)
    path.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.lstrip().startswith(f'"{key}"'))
    assert line > 1
    rc, _o, err = cli_inproc(["run", str(mep), "--no-time"], capsys)
    one_line_exit_2(rc, err)
    assert f"index.json:{line}:" in err and f"{key} = {value!r}" in err, err
