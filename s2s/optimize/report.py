"""`s2s report MEP`: what was tried, what won and by how much, as markdown and HTML, with a PNG plot; `--json` gives
the same facts as one JSON object (read by bench/cost_model_accuracy.py over many MEPs)."""
from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.mep import profile_ncu
from s2s.mep.history import History, Row
from s2s.mep.manifest import Manifest, load
from s2s.mep.roofline import recorded

from .cost import ORIGINAL_KEY, original_prediction
from .report_data import Candidate, ModelAccuracy, RooflineView, candidates, model_accuracy, noise_band, roofline_view
from .report_plot import COLOURS, plot
from .report_svg import roofline_svg


@dataclass(frozen=True)
class Gathered:
    """Everything a report shows, read from an MEP's history once."""
    mep_dir: Path
    manifest: Manifest
    rows: list[Row]
    best: Row | None
    decision: dict[str, Any] | None
    llm: dict[str, float]
    band: tuple[float, float] | None
    roof: RooflineView | None
    profiles: list[tuple[str, profile_ncu.Profile | None]]
    cands: list[Candidate]
    accuracy: ModelAccuracy | None


def gather(mep: str | Path) -> Gathered:
    mep_dir = Path(mep)
    manifest = load(mep_dir)
    db = mep_dir / "history.sqlite"
    if not db.is_file():
        raise UserError("no optimization history in this MEP", file=str(mep_dir), hint="run `s2s optimize` first")
    hist = History(db)
    try:
        rows = hist.rows()
        best, decision = _declared(hist)
        llm = hist.llm_totals()
        band = noise_band(hist.meta("noise_band"))
        roof = roofline_view(recorded(hist), best, rows, manifest)
        profiles = [(name, profile_ncu.recorded(hist, key)) for name, key in
                    (("original", "original"), ("winner", best.id if best else "")) if key]
        accuracy = model_accuracy(rows, original_prediction(hist), _model_device(hist.meta(ORIGINAL_KEY)), band)
    finally:
        hist.close()
    return Gathered(mep_dir, manifest, rows, best, decision, llm, band, roof, profiles, candidates(rows), accuracy)


def _model_device(raw: str | None) -> str:
    try:
        v = json.loads(raw or "{}")
    except ValueError:
        return ""
    return str(v.get("device", "")) if isinstance(v, dict) else ""


def report_json(mep: str | Path) -> dict[str, Any]:
    """The report's facts as one JSON-able object: the winner, the noise band, every candidate (measured, re-timed,
    predicted), the cost model's accuracy, the roofline and the Nsight Compute profiles."""
    g = gather(mep)
    by_id = {c.id: c for c in g.cands}
    win = by_id.get(g.best.id) if g.best else None
    return {
        "mep": str(g.mep_dir), "kernel": g.manifest.kernel, "backend": g.manifest.backend,
        "winner": ({"id": g.best.id, "origin": g.best.origin, "speedup": win.shown if win else g.best.speedup,
                    "retimed": win.retimed is not None if win else False} if g.best else None),
        "decision": g.decision, "noise_band": list(g.band) if g.band else None,
        "candidates": [{"id": r.id, "round": r.round, "origin": r.origin, "status": r.status, "speedup": r.speedup,
                        "ref_us": r.ref_us, "var_us": r.var_us, "predicted_us": r.predicted_us, "prediction": r.prediction,
                        "retimed": by_id[r.id].retimed if r.id in by_id else None,
                        "spread": [by_id[r.id].low, by_id[r.id].high] if r.id in by_id and by_id[r.id].low else None,
                        "captured": r.captured} for r in g.rows],
        "cost_model": g.accuracy.as_json() if g.accuracy else None,
        "roofline": ({"roof": asdict(g.roof.roof), "work": asdict(g.roof.work), "note": g.roof.note,
                      "flops_known": g.roof.flops_known,
                      "original": asdict(g.roof.original) if g.roof.original else None,
                      "winner": asdict(g.roof.winner) if g.roof.winner else None} if g.roof else None),
        "ncu": {name: asdict(p) for name, p in g.profiles if p is not None},
        "llm": g.llm,
    }


def build_report(mep: str | Path) -> tuple[Path, Path, Path | None]:
    g = gather(mep)
    mep_dir, manifest, rows, best, decision, llm, band, roof, profiles, cands = (
        g.mep_dir, g.manifest, g.rows, g.best, g.decision, g.llm, g.band, g.roof, g.profiles, g.cands)
    by_id = {c.id: c for c in cands}
    png = mep_dir / "report.png"
    has_plot = plot(png, cands, band, best.id if best else None, roof, f"{manifest.kernel}: every candidate", g.accuracy)
    lines = [f"# s2s report: {manifest.kernel}", "",
             f"Origin: `{manifest.origin.get('file')}:{manifest.origin.get('line')}` ({manifest.backend}).", ""]
    if best is not None:
        also = (", and on the application's captured data" if best.captured == "ok" else
                "; not yet checked on the application's captured data" if manifest.capture else "")
        win = by_id.get(best.id)
        if win is not None and win.retimed is not None:
            first = f"; first measured {win.speedup:.2f}x" if win.speedup else ""
            lines += [f"**Winner:** `{best.id}` from `{best.origin}`: **{win.retimed:.2f}x**, re-timed in a fresh alternation "
                      f"with the original ({_f(best.ref_us)} µs → {_f(best.var_us)} µs{first}), verified on every output{also}.", ""]
        else:
            lines += [f"**Winner:** `{best.id}` from `{best.origin}`: **{best.speedup or 1.0:.2f}x** "
                      f"({_f(best.ref_us)} µs → {_f(best.var_us)} µs), verified on every output{also}. "
                      "Not re-timed (a single measurement).", ""]
    elif decision is not None and decision.get("why"):
        lines += [f"No winner declared: {decision['why']}.", ""]
    else:
        lines += ["No verified variant was faster than the original.", ""]
    lines += _band_line(band, by_id.get(best.id) if best else None) + _roofline_lines(roof) + _ncu_lines(profiles)
    lines += model_lines(g.accuracy)
    lines += _captured_summary(rows, manifest.capture)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines += [f"{len(rows)} candidates: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())), ""]
    lines += _timing_lines(rows, manifest)
    if llm["calls"]:
        lines += [f"LLM: {llm['calls']} calls, {llm['prompt_tokens']} prompt + {llm['completion_tokens']} completion tokens, "
                  f"cost {llm['cost']:.4f}", ""]
    if has_plot:
        lines += ["![every candidate, and the roofline](report.png)", ""]
    lines += [HEADER, "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        sp = f"{r.speedup:.2f}x" if r.speedup else ""
        lines.append(f"| {r.round} | {r.id} | `{r.origin}` | {r.status} | {sp} | {_f(r.ref_us)} | {_f(r.var_us)} | {r.repairs} "
                     f"| {_captured(r)} | {_spread(by_id.get(r.id))} | {_retimed(by_id.get(r.id))} | {_f(r.predicted_us)} |")
    md = "\n".join(lines) + "\n"
    md_path = mep_dir / "report.md"
    atomic_write(md_path, md.encode())
    head = lines[:lines.index(HEADER)]
    body = "".join(f"<p>{html.escape(line)}</p>\n" if line and not line.startswith(("|", "![")) else "" for line in head)
    table = "<table border=1 cellpadding=4><tr>" + "".join(f"<th>{h}</th>" for h in
                                                           ("round", "candidate", "origin", "verdict", "speedup", "ref µs", "variant µs", "repairs",
                                                            "captured data", "speedup IQR", "re-timed", "predicted µs")) + "</tr>"
    for r in rows:
        colour = COLOURS.get(r.status, "#17becf")
        table += f'<tr style="border-left: 6px solid {colour}">' + "".join(f"<td>{html.escape(str(x))}</td>" for x in
                                  (r.round, r.id, r.origin, r.status, f"{r.speedup:.2f}x" if r.speedup else "", _f(r.ref_us), _f(r.var_us), r.repairs,
                                   _captured(r), _spread(by_id.get(r.id)), _retimed(by_id.get(r.id)), _f(r.predicted_us))) + "</tr>"
    img = ('<p><img src="report.png" alt="every candidate\'s speedup with its spread, coloured by verdict; the roofline" '
           'style="max-width:100%"></p>') if has_plot else ""
    style = "<style>body{font-family:sans-serif;max-width:72em;margin:1em auto}td,th{padding:3px 8px}</style>"
    svg = f"<h2>Roofline</h2>\n{roofline_svg(roof)}\n" if roof is not None else ""
    html_doc = (f"<!doctype html><meta charset=utf-8><title>s2s report {html.escape(manifest.kernel)}</title>{style}"
                f"<h1>s2s report: {html.escape(manifest.kernel)}</h1>{body}{img}{svg}{table}</table>\n")
    html_path = mep_dir / "report.html"
    atomic_write(html_path, html_doc.encode())
    return md_path, html_path, png if has_plot else None


def _declared(hist: History) -> tuple[Row | None, dict[str, Any] | None]:
    """The winner the loop declared (meta `winner`: re-timed, above the noise band), unless it has since failed on the
    application's captured data; for a history without a declaration, the fastest verified variant."""
    try:
        decision = json.loads(hist.meta("winner") or "null")
    except ValueError:
        decision = None
    if not isinstance(decision, dict):
        return hist.best(), None
    row = hist.get(str(decision["id"])) if decision.get("id") else None
    if row is not None and row.failed_on_capture:
        return hist.best(), decision
    return row, decision


HEADER = ("| round | candidate | origin | verdict | speedup | ref µs | variant µs | repairs | captured data | speedup IQR "
          "| re-timed | predicted µs |")


def _spread(c: Candidate | None) -> str:
    return f"{c.low:.2f}-{c.high:.2f}" if c and c.low is not None and c.high is not None else ""


def _retimed(c: Candidate | None) -> str:
    return f"{c.retimed:.2f}x" if c and c.retimed is not None else ""


def _timing_lines(rows: list[Row], manifest: Manifest) -> list[str]:
    """How many alternated pairs (and warm-up pairs) the timings took: fewer for a long kernel (timing.target_s)."""
    reps, warm = [], []
    for r in rows:
        ref = (r.result or {}).get("reference") or {}
        if ref.get("samples"):
            reps.append(int(ref["samples"]))
            if ref.get("warmup"):
                warm.append(int(ref["warmup"]))
    if not reps:
        return []

    def span(v: list[int]) -> str:
        return str(min(v)) if min(v) == max(v) else f"{min(v)}-{max(v)}"

    rule = (f"as many as fit timing.target_s = {manifest.target_s:g} s of device time, at least 3, at most "
            f"timing.repetitions = {manifest.repetitions}" if manifest.target_s > 0 else
            f"timing.repetitions = {manifest.repetitions} (timing.target_s = 0)")
    return [f"Timing: {span(reps)} alternated pairs (reference, variant) per timed candidate"
            + (f" after {span(warm)} warm-up pair(s)" if warm else "") + f": {rule}.", ""]


def _band_line(band: tuple[float, float] | None, win: Candidate | None) -> list[str]:
    if band is None:
        return ["Noise band: not measured for this MEP (the original was not timed against itself), so a small win "
                "may be noise.", ""]
    line = f"Noise band (the original timed against itself): {band[0]:.3f}x-{band[1]:.3f}x."
    if win is not None and win.shown is not None:
        line += " The winner is above it." if win.shown > band[1] else " The winner is INSIDE it: not a measurable win."
    return [line, ""]


def _roofline_lines(v: RooflineView | None) -> list[str]:
    if v is None:
        return []
    from s2s.mep.roofline import bound, floor_us

    if v.flops_known:
        out = [f"Roofline ({v.roof.device}: {v.roof.bandwidth_gbs:.0f} GB/s, {v.roof.fp32_gflops / 1e3:.1f} TFLOP/s FP32; "
               f"{v.roof.source}): one launch moves {v.work.bytes / 1e6:.1f} MB and does {v.work.flops / 1e9:.3f} GFLOP, "
               f"{bound(v.work, v.roof)}-bound, floor {floor_us(v.work, v.roof):.2f} µs."]
    else:
        out = [f"Bandwidth view ({v.roof.device}, {v.roof.source}): one launch moves at least {v.work.bytes / 1e6:.1f} MB "
               f"({v.note}), memory floor {floor_us(v.work, v.roof):.2f} µs; a compute floor needs the kernel's flops."]
    for name, p in (("original", v.original), ("winner", v.winner)):
        if p is not None:
            rate = f"{p.gbs:.0f} GB/s, {p.gflops:.0f} GFLOP/s" if v.flops_known else f"{p.gbs:.0f} GB/s"
            out.append(f"- {name}: {p.time_us:.2f} µs, {rate}: {p.fraction_of_floor:.1%} of the floor")
    return [*out, ""]


def _ncu_lines(profiles: list[tuple[str, profile_ncu.Profile | None]]) -> list[str]:
    got = [(name, p) for name, p in profiles if p is not None]
    if not got:
        return []
    out = ["Nsight Compute (one profiled launch, clocks not locked):"]
    out += [f"- {name}: {p.time_us:.2f} µs, DRAM {p.dram_gbs:.0f} GB/s, {p.gflops:.0f} GFLOP/s (FP32), occupancy {p.occupancy_pct:.0f}%, "
            f"compute {p.sm_pct:.0f}% / memory {p.memory_pct:.0f}% of peak: {p.limiter}-limited" for name, p in got]
    return [*out, ""]


def model_lines(acc: ModelAccuracy | None) -> list[str]:
    """What the report says about the cost model: its rank correlation with the measurements, its best against the
    measured best, and the predictions that were most wrong."""
    if acc is None:
        return ["Cost model: no predictions recorded in this history.", ""]
    where = f" (the model's numbers are for {acc.model_device or 'an H200'}; measured on {acc.measured_device or 'an unnamed device'})"
    out = [f"Cost model{where}: {acc.predicted} of {acc.candidates} candidates predicted, {len(acc.judged)} of them verified and timed."]
    if not acc.judged:
        return [*out, ""]
    rho = f"{acc.spearman:+.2f}" if acc.spearman is not None else "not defined (fewer than 3, or no spread)"
    out.append(f"- Spearman rank correlation of predicted and measured speedup: {rho}")
    by_id = {j.id: j for j in acc.judged}
    pb, mb = by_id.get(acc.predicted_best or ""), by_id.get(acc.measured_best or "")
    if pb is not None and mb is not None:
        verdict = "the same candidate" if pb.id == mb.id else f"measured #{acc.predicted_best_rank} of {len(acc.judged)}"
        out.append(f"- predicted best `{pb.id}` ({_pred(pb)}) measured {pb.measured_speedup:.2f}x; measured best `{mb.id}` "
                   f"{mb.measured_speedup:.2f}x ({_pred(mb)}): {verdict}")
    if acc.side_agreement is not None:
        right, of = acc.side_agreement
        out.append(f"- faster or slower than the original (outside the noise band): {right} of {of} called right")
    for j in acc.worst:
        if j.wrong_by < 1.5:
            break
        how = "optimistic" if j.optimistic else "pessimistic"
        out.append(f"- most wrong: `{j.id}` (`{j.origin}`): {_pred(j)}, measured {j.measured_speedup:.2f}x, off by "
                   f"{j.wrong_by:.1f}x ({how})")
    return [*out, ""]


def _pred(j: Any) -> str:
    sp = f", {j.predicted_speedup:.2f}x" if j.predicted_speedup is not None else ""
    return f"predicted {j.predicted_us:.2f} µs{sp}"


def _captured(r: Row) -> str:
    """How the variant fared on the application's captured data: ok, FAILED (verdict), or empty (not checked)."""
    if r.captured is None:
        return ""
    return "ok" if r.captured == "ok" else f"FAILED ({r.captured})"


def _captured_summary(rows: list[Row], capture: dict[str, object]) -> list[str]:
    checked = [r for r in rows if r.captured is not None]
    if not capture and not checked:
        return []
    failed = [r for r in checked if r.failed_on_capture]
    unchecked = sum(1 for r in rows if r.status == "ok" and r.captured is None)
    out = [f"Checked on the application's captured data ({capture.get('from', 'a capture')}): {len(checked)} variant(s), "
           f"{len(checked) - len(failed)} passed, {len(failed)} failed" + (f", {unchecked} verified variant(s) not checked "
                                                                           "(`s2s verify`)" if unchecked else "") + ".", ""]
    for r in failed:
        why = (r.captured_result or {}).get("message") or r.captured
        out.append(f"- `{r.id}` ({r.speedup or 0:.2f}x on generated data) failed there and is never reintegrated: {why}")
    return out + ([""] if failed else [])


def _f(v: float | None) -> str:
    return f"{v:.2f}" if v else ""
