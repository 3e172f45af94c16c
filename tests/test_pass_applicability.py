"""The pass-applicability audit (bench/pass_applicability.py): the committed development-corpus result covers every
built-in pass, a pass that applies to fewer than three applications says why it exists, and the bench's counting on
three tiny applications of our own (real scanner, extractor and proposer)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from s2s.optimize.registry import BUILTIN, get_pass

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import pass_applicability as bench  # noqa: E402  (bench/pass_applicability.py)

RESULT = ROOT / "bench" / "results" / "pass-applicability" / "pass_applicability.json"
FIXTURES = ROOT / "tests" / "fixtures" / "pass_audit"
MIN_APPS = 3  # issue 27: a pass applying to fewer distinct development applications must say why it exists


def _committed() -> dict[str, object]:
    data: dict[str, object] = json.loads(RESULT.read_text())
    return data


def test_the_committed_audit_covers_every_builtin_pass() -> None:
    data = _committed()
    assert data["label"] == "development corpus"
    passes = data["passes"]
    assert isinstance(passes, dict)
    missing = sorted(set(BUILTIN) - set(passes))
    assert not missing, f"passes not audited (run bench/pass_applicability.py on the development corpus): {missing}"


def test_a_pass_under_three_applications_says_why_it_exists() -> None:
    passes = _committed()["passes"]
    assert isinstance(passes, dict)
    unexplained = []
    for name in sorted(BUILTIN):
        apps = passes[name]["apps"]
        why = getattr(get_pass(name), "WHY_IT_EXISTS", "")
        if apps < MIN_APPS and not (isinstance(why, str) and why.strip()):
            unexplained.append(f"{name} ({apps} applications)")
    assert not unexplained, f"passes under {MIN_APPS} applications without WHY_IT_EXISTS: {unexplained}"


def test_the_bench_counts_kernels_passes_and_applications() -> None:
    data = bench.audit(FIXTURES, ["bits", "rowdot", "scale"], jobs=1, label="fixtures")
    t = data["totals"]
    assert (t["apps"], t["kernels"], t["apps_scan_failed"]) == (3, 4, 0)
    by_kernel = {k["kernel"].split(":")[1].split("@")[0]: k for k in data["kernels"]}
    assert {n: k["category"] for n, k in by_kernel.items()} == {
        "flag": "none", "rowdot": "algorithmic", "scale": "algorithmic", "repeat": "generic-only"}
    assert "warp-rows" in by_kernel["rowdot"]["applied"]  # a thread-per-row dot product
    assert "vector-elementwise" in by_kernel["scale"]["applied"]  # an elementwise kernel
    why = [data["reasons"][i] for i in by_kernel["flag"]["refused"]["restrict-const"]]
    assert why and why[0].startswith("restrict-const: pointer parameters are already")  # __restrict__ already
    assert (t["algorithmic"], t["generic-only"], t["none"]) == (2, 1, 1)
    assert t["share_no_pass"] == 0.25 and t["share_generic_only"] == 0.25 and t["share_no_algorithmic"] == 0.5
    rc = data["passes"]["restrict-const"]
    assert (rc["apps"], rc["kernels"], rc["app_names"]) == (2, 3, ["rowdot", "scale"])  # distinct applications
    assert data["passes"]["warp-rows"]["app_names"] == ["rowdot"]
    assert set(data["passes"]) == set(BUILTIN)
    assert set(data["generic_passes"]) == set(bench.GENERIC)
    assert data["label"] == "fixtures" and data["seconds"] > 0


def test_a_tree_without_sources_is_counted_as_a_failed_scan(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "README").write_text("no sources here\n")
    data = bench.audit(tmp_path, ["empty"], jobs=1)
    assert data["apps"]["empty"]["status"] == "scan-failed"
    assert data["totals"]["apps_scan_failed"] == 1 and data["totals"]["kernels"] == 0
