"""bench/zoo_runs.py: the slice of the kernels a part takes, its result files' name, one row per kernel."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from zoo_runs import part_of, rows_of, stem_of, workdir  # noqa: E402


def test_parts_split_the_kernels_and_refuse_what_is_not_i_of_k(capsys) -> None:  # type: ignore[no-untyped-def]
    names = ["a", "b", "c", "d", "e"]
    assert part_of(names, "1/1", "x") == names
    assert part_of(names, "1/2", "x") + part_of(names, "2/2", "x") == ["a", "c", "e", "b", "d"]  # type: ignore[operator]
    assert part_of(names, "3/2", "bench") is None and part_of(names, "x", "bench") is None
    assert capsys.readouterr().err.count("bench: --part") == 2
    assert stem_of("zoo_bandwidth", "1/1") == "zoo_bandwidth" and stem_of("underfill", "2/3") == "underfill_part2of3"


def test_a_kernel_that_fails_is_its_row(tmp_path: Path) -> None:
    def one(name: str) -> dict[str, object]:
        if name == "bad":
            raise ValueError("no such shape")
        return {"kernel": name, "ok": True}

    rows = rows_of(["good", "bad"], one)
    assert rows[0]["ok"] is True and "seconds" in rows[0]
    assert rows[1] == {"kernel": "bad", "error": "ValueError: no such shape"}
    with workdir(str(tmp_path), "p-") as given:
        assert given == tmp_path
    with workdir("", "p-") as made:
        assert made.is_dir()
    assert not made.exists()
