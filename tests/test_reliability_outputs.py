"""Issue 30: a directory option that would put a copy or an MEP inside the application tree it reads (capture
--keep-copy T/kc copied the tree into itself, 32 levels deep) is refused before anything is written."""
from __future__ import annotations

from pathlib import Path

import pytest
from safety_util import cli_inproc, copy_sample, fingerprint, one_line_exit_2


@pytest.mark.parametrize("where", ["--keep-copy", "-o"])
@pytest.mark.parametrize("inside", ["kc", "kernels/kc", "."])
def test_capture_into_the_tree_is_refused_before_anything_is_written(tmp_path: Path, where: str, inside: str,
                                                                      capsys) -> None:  # type: ignore[no-untyped-def]
    tree = copy_sample(tmp_path / "app")
    before, around = fingerprint(tree), sorted(p.name for p in tmp_path.iterdir())
    other = ["-o", str(tmp_path / "out")] if where == "--keep-copy" else ["--keep-copy", str(tmp_path / "kc")]
    rc, _o, err = cli_inproc(["capture", str(tree), "--kernel", "matmul", "--build-cmd", "make", "--run-cmd", "make run",
                              where, str(tree / inside), *other], capsys)
    one_line_exit_2(rc, err)
    assert f"{where} lies inside the application tree" in err
    assert fingerprint(tree) == before and sorted(p.name for p in tmp_path.iterdir()) == around


def test_keep_copy_holding_the_tree_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    tree = copy_sample(tmp_path / "app")
    before = fingerprint(tmp_path)
    rc, _o, err = cli_inproc(["capture", str(tree), "--kernel", "matmul", "--build-cmd", "make", "--run-cmd", "make run",
                              "--keep-copy", str(tmp_path), "-o", str(tmp_path.parent / f"{tmp_path.name}-out")], capsys)
    one_line_exit_2(rc, err)
    assert "--keep-copy holds the application tree" in err
    assert fingerprint(tmp_path) == before


@pytest.mark.parametrize("app", [[], ["--build-cmd", "make", "--run-cmd", "make run"]])
@pytest.mark.parametrize("work", ["parent", "inside"])
def test_auto_work_holding_or_inside_the_tree_is_refused(tmp_path: Path, app: list[str], work: str,
                                                         capsys) -> None:  # type: ignore[no-untyped-def]
    tree = copy_sample(tmp_path / "tree")  # auto's copy goes to WORK/tree: with --work the parent, the tree itself
    before = fingerprint(tmp_path)
    where = tmp_path if work == "parent" else tree / "w"
    rc, _o, err = cli_inproc(["auto", str(tree), "--kernels", "matmul", "--max-evals", "1", "--work", str(where),
                              "--diff", str(tmp_path.parent / f"{tmp_path.name}.diff"), *app], capsys)
    one_line_exit_2(rc, err)
    assert ("--work holds the application's tree" if work == "parent" else "--work is inside the application's tree") in err
    assert fingerprint(tmp_path) == before


@pytest.mark.parametrize("app", [[], ["--build-cmd", "make", "--run-cmd", "make run"]])
def test_a_second_auto_on_one_work_directory_is_refused(tmp_path: Path, app: list[str], capsys) -> None:  # type: ignore[no-untyped-def]
    """Two autos on one --work removed each other's copy of the tree (WORK/tree) and mixed their MEPs and diffs."""
    from s2s.base.meplock import mep_lock

    tree = copy_sample(tmp_path / "app")
    work = tmp_path / "work"
    (work / "tree").mkdir(parents=True)
    (work / "tree" / "the first auto's copy").write_text("in use\n")
    with mep_lock(work, what="s2s auto", place="work directory"):
        before = fingerprint(tmp_path)
        rc, _o, err = cli_inproc(["auto", str(tree), "--kernels", "matmul", "--max-evals", "1", "--work", str(work),
                                  "--diff", str(tmp_path.parent / f"{tmp_path.name}.diff"), *app], capsys)
        one_line_exit_2(rc, err)
        assert "another s2s auto is running on this work directory" in err, err
        assert fingerprint(tmp_path) == before
