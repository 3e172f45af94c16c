"""`s2s report`: every candidate with its spread, the noise band, the re-timed winner and the roofline, read from the
history as far as it holds them (an older history without them still gives a report)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from s2s.extract.mep_writer import make_mep
from s2s.mep.history import History
from s2s.mep.roofline import Roof, Work, datasheet_roof, floor_us, measured_roof, point, record, recorded
from s2s.optimize.report import build_report
from s2s.optimize.report_data import candidates, interval, noise_band

ROOT = Path(__file__).resolve().parent.parent
H200 = datasheet_roof("NVIDIA H200")


def _res(ref: float, rs: float, var: float, vs: float, **kw: object) -> dict[str, object]:
    return {"reference": {"median_us": ref, "spread_us": rs}, "variant": {"median_us": var, "spread_us": vs},
            "speedup": ref / var, **kw}


@pytest.fixture(scope="module")
def base_mep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    mep = tmp_path_factory.mktemp("rep") / "gemv"
    make_mep(str(ROOT / "bench" / "zoo" / "gemv_rows"), "gemv_rows", str(mep))
    return mep


def _mep(base: Path, dest: Path, rows: list[tuple[str, str, dict[str, object] | None]], meta: dict[str, str] | None = None,
         work: Work | None = None) -> Path:
    shutil.copytree(base, dest)
    h = History(dest / "history.sqlite")
    for cid, status, res in rows:
        h.add(cid, 1, f"pass:{cid}", None, cid, None)
        h.finish(cid, status, res or {"messages": ["failed"]})
    for k, v in (meta or {}).items():
        h.set_meta(k, v)
    if work is not None:
        assert H200 is not None
        record(h, work, H200, "test")
    h.close()
    return dest


def test_roofline_floor_and_fraction() -> None:
    assert H200 is not None and H200.bandwidth_gbs == 4800.0
    gemv = Work(bytes=(4096 * 4096 + 2 * 4096) * 4.0, flops=2 * 4096 * 4096)
    fl = floor_us(gemv, H200)  # 67 MB at 4.8 TB/s: memory-bound, about 14 µs
    assert 13.9 < fl < 14.1
    p = point(gemv, 565.0, H200)
    assert p.fraction_of_floor == pytest.approx(fl / 565.0) and p.gbs == pytest.approx(gemv.bytes / 565e3)
    gemm = Work(bytes=3 * 2048**2 * 4.0, flops=2 * 2048.0**3)  # compute-bound: 17.2 GFLOP at 66.9 TFLOP/s
    assert floor_us(gemm, H200) == pytest.approx(2 * 2048.0**3 / 66.9e6)
    measured = measured_roof("NVIDIA H200 NVL", 3900.0)
    assert measured is not None and measured.bandwidth_gbs == 3900.0 and measured.fp32_gflops == H200.fp32_gflops
    assert floor_us(gemv, measured) > fl
    assert datasheet_roof("Some GPU") is None and measured_roof("Some GPU", 1000.0) is None


def test_speedup_interval_and_noise_band_forms() -> None:
    lo, hi = interval(_res(100.0, 10.0, 50.0, 4.0)) or (0.0, 0.0)
    assert lo == pytest.approx(95 / 52) and hi == pytest.approx(105 / 48)
    assert interval({"reference": {"median_us": 1.0}}) is None and interval(None) is None
    assert noise_band(json.dumps({"low": 0.96, "high": 1.03})) == (0.96, 1.03)
    assert noise_band("0.04") == (0.96, 1.04)
    assert noise_band(None) is None and noise_band("garbage") is None and noise_band(json.dumps({"low": 2, "high": 1})) is None


@pytest.mark.slow
def test_report_shows_spread_retiming_band_and_roofline(base_mep: Path, tmp_path: Path) -> None:
    work = Work(bytes=(4096 * 4096 + 2 * 4096) * 4.0, flops=2 * 4096 * 4096)
    mep = _mep(base_mep, tmp_path / "m", [
        ("va", "ok", _res(560.0, 8.0, 140.0, 4.0)),
        ("vb", "compile-failed", None),
        ("vc", "ok", _res(560.0, 8.0, 100.0, 2.0, retimed={"speedup": 5.2, "reference": {"median_us": 559.0, "spread_us": 5.0},
                                                              "variant": {"median_us": 107.5, "spread_us": 1.0}})),
        ("vd", "wrong-output", None),
    ], meta={"noise_band": json.dumps({"low": 0.97, "high": 1.03})}, work=work)
    from s2s.mep import profile_ncu

    h = History(mep / "history.sqlite")
    prof = profile_ncu.parse(NCU_CSV)
    assert prof is not None
    profile_ncu.record(h, "original", prof)
    h.close()
    md_path, html_path, png = build_report(mep)
    md = md_path.read_text()
    assert "- original: 560.00 µs, DRAM 120 GB/s, 60 GFLOP/s (FP32), occupancy 6%" in md and "latency-limited" in md
    assert "**Winner:** `vc` from `pass:vc`: **5.20x**, re-timed in a fresh alternation with the original" in md
    assert "first measured 5.60x" in md
    assert "Noise band (the original timed against itself): 0.970x-1.030x. The winner is above it." in md
    assert "memory-bound" in md and f"floor {floor_us(work, H200):.2f} µs" in md  # type: ignore[arg-type]
    # the winner's re-timed variant time (107.5 µs) is the one placed on the roofline
    assert f"- winner: 107.50 µs, {work.bytes / 107.5e3:.0f} GB/s" in md
    assert "| vc | `pass:vc` | ok | 5.60x |" in md and "| 5.20x |" in md
    lo, hi = interval(_res(560.0, 8.0, 140.0, 4.0)) or (0.0, 0.0)
    assert f"| {lo:.2f}-{hi:.2f} |" in md
    assert png is not None and png.read_bytes()[:4] == b"\x89PNG"
    html = html_path.read_text()
    assert '<img src="report.png"' in html and "wrong-output" in html and "#d62728" in html  # coloured by verdict


@pytest.mark.slow
def test_report_follows_the_declared_winner(base_mep: Path, tmp_path: Path) -> None:
    # as s2s.optimize.winner leaves a history: the speedup column re-timed, the first measurement under `first`
    first = _res(500.0, 5.0, 50.0, 1.0)
    again = _res(500.0, 5.0, 125.0, 2.0)
    va = {**again, "first": first, "retimed": {"speedup": 4.0, "reference": again["reference"], "variant": again["variant"]}}
    mep = _mep(base_mep, tmp_path / "w", [("va", "ok", va), ("vb", "ok", _res(500.0, 5.0, 110.0, 2.0))],
               meta={"winner": json.dumps({"id": "va", "speedup": 4.0, "why": "re-timed 4.000x, above the noise band"})})
    h = History(mep / "history.sqlite")
    h.db.execute("UPDATE candidates SET speedup=4.0 WHERE id='va'")
    h.db.commit()
    cs = {c.id: c for c in candidates(h.rows())}
    h.close()
    assert (cs["va"].speedup, cs["va"].retimed, cs["va"].shown) == (10.0, 4.0, 4.0)  # the first measurement and the re-timing
    md = build_report(mep)[0].read_text()
    assert "**Winner:** `va` from `pass:va`: **4.00x**, re-timed" in md and "first measured 10.00x" in md  # not vb's 4.55x
    mep2 = _mep(base_mep, tmp_path / "none", [("vb", "ok", _res(100.0, 5.0, 99.0, 2.0))],
                meta={"winner": json.dumps({"id": None, "speedup": 1.0, "why": "no win: 1.010x is inside the noise band"})})
    assert "No winner declared: no win: 1.010x is inside the noise band." in build_report(mep2)[0].read_text()


@pytest.mark.slow
def test_report_without_band_retiming_or_roofline(base_mep: Path, tmp_path: Path) -> None:
    mep = _mep(base_mep, tmp_path / "old", [("va", "ok", _res(50.0, 1.0, 45.0, 1.0)), ("vb", "timed-out", None)])
    md_path, _html, png = build_report(mep)
    md = md_path.read_text()
    assert "Not re-timed (a single measurement)." in md and "Noise band: not measured" in md
    assert "Roofline" not in md and png is not None


@pytest.mark.slow
def test_report_bandwidth_view_from_the_manifest_when_no_work_was_recorded(base_mep: Path, tmp_path: Path) -> None:
    res = {**_res(600.0, 5.0, 150.0, 2.0), "device": "NVIDIA H200"}
    mep = _mep(base_mep, tmp_path / "bw", [("va", "ok", res)])
    md = build_report(mep)[0].read_text()
    nbytes = (4096 * 4096 + 4096 + 4096) * 4  # A and x read, y written (gemv_rows' mep.toml)
    assert f"one launch moves at least {nbytes / 1e6:.1f} MB" in md and "Bandwidth view (NVIDIA H200" in md
    assert f"- winner: 150.00 µs, {nbytes / 150e3:.0f} GB/s: {nbytes / 4800e3 / 150:.1%} of the floor" in md


@pytest.mark.slow
def test_report_inside_the_band_and_no_flops_kernel(base_mep: Path, tmp_path: Path) -> None:
    mep = _mep(base_mep, tmp_path / "t", [("va", "ok", _res(100.0, 3.0, 98.0, 3.0))],
               meta={"noise_band": "0.05"}, work=Work(bytes=2 * 8192 * 8192 * 4.0, flops=0.0))
    md = build_report(mep)[0].read_text()
    assert "The winner is INSIDE it: not a measurable win." in md and "memory-bound" in md


def test_candidates_in_evaluation_order_with_failures_untimed(tmp_path: Path) -> None:
    h = History(tmp_path / "history.sqlite")
    for cid, status, res in (("a", "ok", _res(10.0, 0.0, 5.0, 0.0)), ("b", "runtime-failed", None), ("c", "pending", None)):
        h.add(cid, 1, "pass:x", None, cid, None)
        if status != "pending":
            h.finish(cid, status, res)
    cs = candidates(h.rows())
    assert recorded(h) is None
    h.close()
    assert [(c.index, c.id, c.speedup, c.shown) for c in cs] == [(1, "a", 2.0, 2.0), (2, "b", None, None)]


def test_roof_round_trips_through_the_history(tmp_path: Path) -> None:
    h = History(tmp_path / "history.sqlite")
    roof = Roof("X", 1000.0, 2000.0, "test")
    record(h, Work(1e6, 2e6), roof, "note")
    assert recorded(h) == (Work(1e6, 2e6), roof, "note")
    h.set_meta("roofline", "{broken")
    assert recorded(h) is None
    h.close()


NCU_CSV = """==PROF== Connected to process 4242 (/tmp/m/build/ref/harness)
==PROF== Profiling "gemv_rows": 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC",\
"dram__bytes.sum","gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum",\
"sm__sass_thread_inst_executed_op_fadd_pred_on.sum","sm__sass_thread_inst_executed_op_ffma_pred_on.sum",\
"sm__sass_thread_inst_executed_op_fmul_pred_on.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed",\
"sm__warps_active.avg.pct_of_peak_sustained_active"
"","","","","","","","","","","","Mbyte","%","usecond","inst","inst","inst","%","%"
"0","4242","harness","h","s2s_ref::gemv_rows(const float *, const float *, float *, int)","1","7","(256, 1, 1)","(16, 1, 1)",\
"0","9.0","67.14","11.52","560.00","0","16,777,216","0","3.10","6.20"
"""


def test_ncu_raw_csv_parsed_into_rates_occupancy_and_limiter() -> None:
    from s2s.mep.profile_ncu import parse

    p = parse(NCU_CSV)
    assert p is not None and p.kernel.startswith("s2s_ref::gemv_rows")
    assert p.time_us == pytest.approx(560.0)
    assert p.dram_gbs == pytest.approx(67.14e6 / 560e3)  # 67 MB in 560 µs: 120 GB/s
    assert p.gflops == pytest.approx(2 * 16_777_216 / 560e3)  # every FMA counts two flops
    assert p.occupancy_pct == pytest.approx(6.2) and p.limiter == "latency"  # neither unit near its peak: underfilled
    assert parse("==PROF== nothing profiled\n") is None


def test_ncu_command_and_absent_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from s2s.mep import profile_ncu

    cmd = profile_ncu.command(["build/v1/harness", "--no-time"], "s2s_var")
    assert cmd[:7] == ["ncu", "--csv", "--page", "raw", "--clock-control", "none", "--kernel-name-base"]
    assert "regex:^s2s_var::" in cmd and cmd[-4:] == ["build/v1/harness", "--no-time", "--input-sets", "1"]
    assert set(profile_ncu.METRICS) == set(cmd[cmd.index("--metrics") + 1].split(","))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert profile_ncu.profile(tmp_path, None) == {"error": "ncu is not on this machine"}
    h = History(tmp_path / "history.sqlite")
    profile_ncu.record(h, "original", {"error": "ncu is not on this machine"})
    assert profile_ncu.recorded(h, "original") is None
    prof = profile_ncu.parse(NCU_CSV)
    assert prof is not None
    profile_ncu.record(h, "v1", prof)
    assert profile_ncu.recorded(h, "v1") == prof
    h.close()
