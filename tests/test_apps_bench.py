"""The application benchmark (bench/apps.py, bench/apps/): the held-out rule, the catalogue's entries, the outcome
classes and the summary's figures; end to end on PoCL with a one-application catalogue of our own."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "apps"))
import apps as bench_apps  # noqa: E402  (bench/apps.py, the runner)
import catalog  # noqa: E402
import split  # noqa: E402


def test_the_split_rule_holds_out_a_third_by_name_alone() -> None:
    names = [f"app{i}-cuda" for i in range(3000)]
    held = [n for n in names if split.heldout(n)]
    assert 900 < len(held) < 1100  # a third, by the hash
    assert all(split.heldout(n) == split.heldout(n) for n in names[:50])  # a rule, not a draw
    assert split.label("x") in {"held-out split", "development corpus"}
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "apps" / "split.py"), "--check"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout  # heldout.txt is the rule applied to the committed catalogue


def test_the_catalogue_is_the_rules_output() -> None:
    with open(ROOT / "bench" / "apps" / "catalog.toml", "rb") as fh:
        apps = tomllib.load(fh)["app"]
    assert len(apps) >= 120 and len({a["name"] for a in apps}) == len(apps)
    held = [a for a in apps if a["label"] == "held-out split"]
    assert len(held) >= 35
    for a in apps:
        assert a["label"] == split.label(a["name"])
        assert a["build"] and a["run"] and a["commit"] and a["repo"] and a["dir"]
        base = a["name"].rsplit("-", 1)[0]
        assert base not in catalog.RESERVED, a["name"]
        assert not any(e.split("/")[-1].rsplit("-", 1)[0] in catalog.RESERVED for e in a["extra"])
    listed = [ln for ln in (ROOT / "bench" / "apps" / "heldout.txt").read_text().splitlines() if ln and not ln.startswith("#")]
    assert sorted(listed) == sorted(a["name"] for a in held)


def test_run_lines_are_read_from_makefiles_by_rule() -> None:
    mk = "program = main\nARCH = sm_60\nrun: $(program)\n\t$(LAUNCHER) ./$(program) 100 ../x-cuda/in.txt\n\t./$(program) 2\n"
    assert catalog._run_line(mk) == "$(LAUNCHER) ./$(program) 100 ../x-cuda/in.txt"  # the first recipe line
    assert catalog._make_vars(mk)["ARCH"] == "sm_60"
    assert catalog._normalize("src/a-cuda/../x-cuda/in.txt") == "src/x-cuda/in.txt"


def _report(status: str, *, verdicts: dict[str, int] | None = None, evaluations: int = 3, speedup: float = 1.0,
            notes: list[str] | None = None) -> dict:
    return {"gpu": {"ms_before": 10.0, "ms_after": 5.0 if status == "reintegrated" else 10.0},
            "stages": {"total": 5.0}, "profile": [{"kernel": "k", "total_ms": 10.0}],
            "app": {"output_unchanged": True} if status == "reintegrated" else {},
            "kernels": [{"kernel": "k", "gpu_ms": 8.0, "status": status, "speedup": speedup, "evaluations": evaluations,
                         "verdicts": verdicts or {"ok": evaluations}, "refusals": {"fast-math": "fast-math: no expf"},
                         "notes": notes or []}]}


@pytest.mark.parametrize(("status", "kw", "outcome"), [
    ("reintegrated", {"speedup": 4.0}, "win"),
    ("not reintegrated: below 1.05x, within timing noise", {"evaluations": 0, "verdicts": {}}, "no-pass-applies"),
    # no candidate started for want of time is a timeout, not a kernel no pass applies to (two development kernels
    # with applicable passes were counted "no-pass-applies" that way at 1a9ea06)
    ("not reintegrated: below 1.05x, within timing noise", {"evaluations": 0, "verdicts": {},
                                                             "notes": ["time budget spent: 18 s of 9.9 s; no further candidate started"]}, "timeout"),
    ("not reintegrated: below 1.05x, within timing noise", {}, "no-win"),
    ("not reintegrated: below 1.05x, within timing noise", {"verdicts": {"wrong-output": 3}}, "wrong-output"),
    ("not reintegrated: below 1.05x, within timing noise", {"verdicts": {"compile-failed": 3}}, "build-failure"),
    ("not kept: the reintegrated application's output changed (number 3 differs)", {"speedup": 3.0}, "wrong-output"),
    ("capture failed: error: capture: launch 3 of k needs 5 bytes", {}, "capture-failure"),
    ("optimize failed: error: the reference kernel failed", {}, "tool-error"),
])
def test_outcome_classes(status: str, kw: dict, outcome: str) -> None:
    app = {"name": "a-cuda", "label": "development corpus"}
    got = bench_apps.summarize_app(app, 0, 12.0, _report(status, **kw), [])
    (k,) = got["kernels"]
    assert k["outcome"] == outcome and got["label"] == "dev"
    assert k["speedup"] == (kw.get("speedup", 1.0) if outcome == "win" else 1.0)  # no win counts 1.00x
    assert got["gpu_time_speedup"] == (2.0 if outcome == "win" else 1.0)


def test_a_stopped_application_counts_once_at_one_and_a_winner_it_never_ran_is_no_win() -> None:
    app = {"name": "b-cuda", "label": "held-out split"}
    timed_out = bench_apps.summarize_app(app, 124, 300.0, _report("reintegrated", speedup=5.0), [])
    assert timed_out["status"] == "timeout" and timed_out["kernels"][0]["outcome"] == "timeout"
    assert timed_out["kernels"][0]["speedup"] == 1.0 and timed_out["gpu_time_speedup"] == 1.0
    failed = bench_apps.summarize_app(app, 2, 3.0, {}, ["error: auto: the build command 'make' failed"])
    assert failed["status"] == "build-failure" and len(failed["kernels"]) == 1 and failed["kernels"][0]["speedup"] == 1.0


def test_totals_count_every_attempted_kernel(tmp_path: Path) -> None:
    app = {"name": "c-cuda", "label": "development corpus"}
    rows = [bench_apps.summarize_app(app | {"name": f"c{i}-cuda"}, 0, 1.0, _report(st, speedup=sp), [])
            for i, (st, sp) in enumerate([("reintegrated", 4.0), ("not reintegrated: below", 1.0)])]
    rows.append(bench_apps.summarize_app(app | {"name": "c9-cuda"}, 124, 1.0, {}, []))
    t = bench_apps.totals(rows)
    assert t["kernels_attempted"] == 3 and t["kernel_geomean"] == pytest.approx(4.0 ** (1 / 3), rel=1e-3)
    assert t["gpu_time_weighted_speedup"] == pytest.approx(16.0 / (2.0 + 8.0), rel=1e-3)  # 8 ms -> 2 ms, 8 -> 8, 0
    assert t["outcomes"]["win"] == 1 and t["outcomes"]["timeout"] == 1 and t["top_refusals"][0][1] == 2
    summary = bench_apps.write_summary(tmp_path, rows, {"date": "d", "commit": "c", "device": "g", "settings": "s"})
    back = json.loads((tmp_path / "apps_summary.json").read_text())
    assert back["labels"]["development corpus"]["applications"] == 3 and summary["apps"][0]["sequence_wins"] == 0
    assert "| development corpus | 3 | 3 |" in (tmp_path / "apps_summary.md").read_text()


def test_a_reintegrated_loop_counts_as_a_sequence_win_and_shows_in_the_table(tmp_path: Path) -> None:
    app = {"name": "s-cuda", "label": "development corpus"}
    report = _report("not reintegrated: below", speedup=1.0) | {"sequence_results": [
        {"loop": "main.cu:main@12", "form": "graph_body", "speedup": 3.5, "status": "reintegrated (graph_body; faster)"},
        {"loop": "main.cu:main@40", "form": "", "speedup": None, "status": "not reintegrated: no form wins"}]}
    row = bench_apps.summarize_app(app, 0, 1.0, report, [])
    assert row["sequence_wins"] == 1 and [q["loop"] for q in row["sequence_results"]] == ["main.cu:main@12", "main.cu:main@40"]
    assert bench_apps.totals([row])["sequence_wins"] == 1
    bench_apps.write_summary(tmp_path, [row], {"date": "d", "commit": "c", "device": "g", "settings": "s"})
    text = (tmp_path / "apps_summary.md").read_text()
    assert "loop main.cu:main@12 (graph_body, 3.50x on its replay)" in text and "main@40" not in text


@pytest.mark.slow
def test_the_benchmark_end_to_end_on_pocl(tmp_path: Path) -> None:
    """One application of our own (tests/fixtures/ocl_repeat) through the check and capture-first auto on PoCL."""
    pytest.importorskip("pyopencl")
    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("gcc and make needed")
    apps_dir = tmp_path / "apps"
    shutil.copytree(ROOT / "tests" / "fixtures" / "ocl_repeat", apps_dir / "repeat-ocl")
    cat = tmp_path / "catalog.toml"
    cat.write_text('[[app]]\nname = "repeat-ocl"\nsuite = "fixture"\nlabel = "development corpus"\nrepo = "local"\n'
                   'commit = "0"\ndir = "."\nextra = []\ndialect = "opencl"\nbuild = "make"\nrun = "./refresh"\n')
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "apps.py"), "--catalog", str(cat), "--apps-dir", str(apps_dir),
                           "--out", str(out), "--deadline", "400", "--parallel", "1", "--top", "1", "--max-evals", "2",
                           "--runs", "2"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    check = json.loads((out / "check.json").read_text())
    assert check[0]["status"] == "ok" and check[0]["run_s"] >= 0
    s = json.loads((out / "apps_summary.json").read_text())
    (a,) = s["apps"]
    assert a["name"] == "repeat-ocl" and a["label"] == "dev" and a["status"] == "ok", a
    assert a["gpu_ms_before"] > 0 and a["kernels"][0]["kernel"] == "refresh" and a["tool_seconds"] > 0
    assert a["kernels"][0]["outcome"] in bench_apps.OUTCOMES and a["kernels"][0]["outcome"] != "tool-error"
    assert {"profile", "capture", "optimize", "total"} <= set(a["stages"])
    assert (apps_dir / "repeat-ocl" / "refresh.cl").read_bytes() == (ROOT / "tests/fixtures/ocl_repeat/refresh.cl").read_bytes()


def test_applications_spread_over_the_gpus_each_with_its_own_device_lock(tmp_path: Path) -> None:
    import threading

    got: list[tuple[str, str]] = []
    bench_apps._SLOTS.clear()  # threads of other tests took slots before
    together = threading.Barrier(4)  # all alive at once, as a pool's workers are (a finished thread's id is reused)

    def worker() -> None:
        together.wait()
        env = bench_apps._env(tmp_path, gpus=2)
        again = bench_apps._env(tmp_path, gpus=2)  # a thread keeps its GPU
        assert env["CUDA_VISIBLE_DEVICES"] == again["CUDA_VISIBLE_DEVICES"]
        got.append((env["CUDA_VISIBLE_DEVICES"], env["S2S_DEVICE_LOCK"]))
        together.wait()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(g for g, _ in got) == ["0", "0", "1", "1"]
    assert {lock for g, lock in got if g == "0"} != {lock for g, lock in got if g == "1"}
    assert "CUDA_VISIBLE_DEVICES" not in bench_apps._env(tmp_path, gpus=1) or "CUDA_VISIBLE_DEVICES" in __import__("os").environ
