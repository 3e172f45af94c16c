"""`s2s report MEP`: what was tried, what won and by how much, as markdown and HTML, with a PNG plot."""
from __future__ import annotations

import html
from pathlib import Path

from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.mep.history import History, Row
from s2s.mep.manifest import load


def _plot(rows: list[Row], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rounds = sorted({r.round for r in rows})
    best, ys = 1.0, []
    for rnd in rounds:
        for r in rows:
            if r.round == rnd and r.status == "ok" and r.speedup and not r.failed_on_capture:
                best = max(best, r.speedup)
        ys.append(best)
    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=120)
    ax.plot(rounds, ys, marker="o")
    ax.set_xlabel("round")
    ax.set_ylabel("best verified speedup (x)")
    ax.set_xticks(rounds)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def build_report(mep: str | Path) -> tuple[Path, Path, Path | None]:
    mep_dir = Path(mep)
    manifest = load(mep_dir)
    db = mep_dir / "history.sqlite"
    if not db.is_file():
        raise UserError("no optimization history in this MEP", file=str(mep_dir), hint="run `s2s optimize` first")
    hist = History(db)
    rows = hist.rows()
    best = hist.best()
    llm = hist.llm_totals()
    hist.close()
    png = mep_dir / "report.png"
    has_plot = _plot(rows, png)
    lines = [f"# s2s report: {manifest.kernel}", "",
             f"Origin: `{manifest.origin.get('file')}:{manifest.origin.get('line')}` ({manifest.backend}).", ""]
    if best is not None:
        also = (", and on the application's captured data" if best.captured == "ok" else
                "; not yet checked on the application's captured data" if manifest.capture else "")
        lines += [f"**Winner:** `{best.id}` from `{best.origin}`: **{best.speedup:.2f}x** "
                  f"({best.ref_us:.2f} µs → {best.var_us:.2f} µs), verified on every output{also}.", ""]
    else:
        lines += ["No verified variant was faster than the original.", ""]
    lines += _captured_summary(rows, manifest.capture)
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status] = counts.get(r.status, 0) + 1
    lines += [f"{len(rows)} candidates: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())), ""]
    if llm["calls"]:
        lines += [f"LLM: {llm['calls']} calls, {llm['prompt_tokens']} prompt + {llm['completion_tokens']} completion tokens, "
                  f"cost {llm['cost']:.4f}", ""]
    if has_plot:
        lines += ["![best speedup per round](report.png)", ""]
    lines += ["| round | candidate | origin | verdict | speedup | ref µs | variant µs | repairs | captured data |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        sp = f"{r.speedup:.2f}x" if r.speedup else ""
        lines.append(f"| {r.round} | {r.id} | `{r.origin}` | {r.status} | {sp} | {_f(r.ref_us)} | {_f(r.var_us)} | {r.repairs} "
                     f"| {_captured(r)} |")
    md = "\n".join(lines) + "\n"
    md_path = mep_dir / "report.md"
    atomic_write(md_path, md.encode())
    head = lines[:lines.index("| round | candidate | origin | verdict | speedup | ref µs | variant µs | repairs | captured data |")]
    body = "".join(f"<p>{html.escape(line)}</p>\n" if line and not line.startswith(("|", "![")) else "" for line in head)
    table = "<table border=1 cellpadding=4><tr>" + "".join(f"<th>{h}</th>" for h in
                                                           ("round", "candidate", "origin", "verdict", "speedup", "ref µs", "variant µs", "repairs",
                                                            "captured data")) + "</tr>"
    for r in rows:
        table += "<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in
                                  (r.round, r.id, r.origin, r.status, f"{r.speedup:.2f}x" if r.speedup else "", _f(r.ref_us), _f(r.var_us), r.repairs,
                                   _captured(r))) + "</tr>"
    img = '<img src="report.png" alt="best speedup per round">' if has_plot else ""
    html_doc = f"<!doctype html><meta charset=utf-8><title>s2s report {html.escape(manifest.kernel)}</title>{body}{img}{table}</table>\n"
    html_path = mep_dir / "report.html"
    atomic_write(html_path, html_doc.encode())
    return md_path, html_path, png if has_plot else None


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
