"""The reports a zoo plan (bench/gpu_zoo_plans.py) can ask for: the fields each kernel row and each pipeline's entry
carry, and the markdown table. `Report` is the common shape (entries under `candidates`: verdict, speedup, original_us,
variant_us); `bandwidth` adds the roofline floor, `underfill` the launch's fill and the cost model's prediction, `gemm`
cuBLAS's time in its own entry shape (under `forms`)."""
from __future__ import annotations

import sys
from typing import Any


class Report:
    """The hooks gpu_zoo_plans calls, in order: setup, row, kernel, entry + refused | applied, built, before_runs,
    timed, finish; markdown on the whole document."""

    entries = "candidates"  # the row's key holding one entry per pipeline
    title = "Zoo plan"

    def setup(self, dry: bool, plan: Any) -> dict[str, Any]:
        """The document's own fields (measured once, before any kernel)."""
        return {"device": "none (dry)" if dry else _device()}

    def row(self, name: str, fixes: list[str], unfilled: list[str]) -> dict[str, Any]:
        return {"kernel": name, self.entries: []}

    def kernel(self, row: dict[str, Any], k: Any, state: Any) -> None:
        """The kernel's own facts, once its MEP is extracted."""

    def entry(self, form: str, pipeline: str) -> dict[str, Any]:
        return {"pipeline": pipeline}

    def refused(self, entry: dict[str, Any], why: str) -> None:
        entry.update(verdict="refused", why=why)

    def applied(self, entry: dict[str, Any], cand: Any, state: Any) -> None:
        """A pipeline that applied: what the candidate is, before it is built."""

    def built(self, entry: dict[str, Any], b: Any) -> None:
        entry["verdict"] = "built" if b.ok else "compile-failed"

    def build_failed(self, entry: dict[str, Any]) -> bool:
        return entry.get("verdict") == "compile-failed"

    def before_runs(self, row: dict[str, Any], k: Any, dry: bool) -> None:
        """Once per kernel after the builds, before its variants run (dry runs too)."""

    def timed(self, entry: dict[str, Any], m: Any, row: dict[str, Any]) -> None:
        entry.update(verdict=m.verdict, speedup=m.speedup, messages=list(m.messages)[:3],
                     original_us=m.ref.median_us if m.ref else None, variant_us=m.var.median_us if m.var else None)

    def finish(self, row: dict[str, Any]) -> None:
        """After the kernel's runs."""

    def markdown(self, doc: dict[str, Any]) -> str:
        raise NotImplementedError


def _device() -> str:
    from gpu_zoo import _smi_name

    return _smi_name()


def _f(v: Any, fmt: str = "{:.1f}") -> str:
    return "-" if v is None else fmt.format(v)


class Bandwidth(Report):
    """Bandwidth-bound kernels against the measured copy bandwidth: the floor (compulsory bytes / copy bandwidth) and,
    per pipeline, the fraction of it reached (floor µs / measured µs)."""

    def __init__(self) -> None:
        self.roof: Any = None
        self.floors: dict[str, float | None] = {}

    def setup(self, dry: bool, plan: Any) -> dict[str, Any]:
        if dry:
            return {"device": "none (dry)", "copy_gbs": None}
        from zoo_vendor import copy_bandwidth_gbs

        from s2s.mep.roofline import measured_roof

        copy = copy_bandwidth_gbs()
        self.roof = measured_roof(copy.get("device") or "NVIDIA H200", copy.get("gbs"))
        return {"device": copy.get("device", "none (dry)"), "copy_gbs": copy.get("gbs")}

    def kernel(self, row: dict[str, Any], k: Any, state: Any) -> None:
        from zoo_catalog import work_of

        from s2s.mep.roofline import Work, floor_us

        floor = floor_us(Work(*work_of(k)), self.roof) if self.roof is not None else None
        self.floors[k.name] = floor
        row["floor_us"] = round(floor, 3) if floor else None

    def timed(self, entry: dict[str, Any], m: Any, row: dict[str, Any]) -> None:
        super().timed(entry, m, row)
        floor = self.floors.get(row["kernel"])
        if floor and m.var:
            entry["floor_fraction"] = round(floor / m.var.median_us, 4)
        if floor and m.ref:
            row.setdefault("original_floor_fraction", round(floor / m.ref.median_us, 4))

    def markdown(self, doc: dict[str, Any]) -> str:
        lines = [f"# Zoo bandwidth-bound kernels vs the copy bandwidth ({doc['date']}, commit {doc['commit']}, {doc['device']})", "",
                 f"Copy bandwidth {doc.get('copy_gbs') or '-'} GB/s. Floor = compulsory bytes / copy bandwidth; fraction = floor / "
                 "measured time (1.0 = at the copy bandwidth). Each pipeline verified and timed once against the original.", "",
                 "| kernel | floor µs | original | pipeline | verdict | µs | speedup | fraction of floor |", "|---|---|---|---|---|---|---|---|"]
        for r in doc["kernels"]:
            if "error" in r:
                lines.append(f"| {r['kernel']} | | | | {r['error']} | | | |")
                continue
            orig = r.get("original_floor_fraction")
            for c in r["candidates"]:
                frac = c.get("floor_fraction")
                lines.append(f"| {r['kernel']} | {r.get('floor_us') or '-'} | {f'{orig:.0%}' if orig else '-'} | `{c['pipeline']}` | "
                             f"{c['verdict']} | {c.get('variant_us') or '-'} | {c.get('speedup') or '-'} | "
                             f"{f'{frac:.0%}' if frac else '-'}{' **>= 70%**' if frac and frac >= 0.7 else ''} |")
        return "\n".join(lines)


NOISE = 0.02  # a measured speedup within 2% of 1.0 has no direction


class Underfill(Report):
    """Launches that leave SMs without a block: per launch the SMs with a block, the model's fill (SM-fill rule:
    s2s.lang.kernel_model.parallelism) and predicted speedup beside the measured one; per kernel whether the block
    predicted fastest was measured fastest and whether each predicted direction held."""

    def __init__(self) -> None:
        self.base: dict[str, Any] = {}

    def kernel(self, row: dict[str, Any], k: Any, state: Any) -> None:
        from s2s.lang.kernel_model import parallelism
        from s2s.optimize.cost import predict_candidate

        m = state.manifest
        base = self.base[k.name] = predict_candidate(None, state)
        par = parallelism(tuple(m.launch.grid), tuple(m.launch.block))
        row.update(grid=list(m.launch.grid), block=list(m.launch.block), sms_with_a_block=min(par.blocks, 132),
                   fill=round(par.fill, 5), predicted_us=round(base.seconds * 1e6, 2) if base else None)

    def applied(self, entry: dict[str, Any], cand: Any, state: Any) -> None:
        from s2s.lang.kernel_model import parallelism
        from s2s.optimize.cost import predict_candidate

        launch = cand.launch or state.base_launch
        cpar = parallelism(launch.grid, launch.block)
        base, pred = self.base.get(state.kernel), predict_candidate(cand, state)
        entry.update(grid=list(launch.grid), sms_with_a_block=min(cpar.blocks, 132), fill=round(cpar.fill, 5),
                     predicted_speedup=round(base.seconds / pred.seconds, 4) if base and pred else None)

    def finish(self, row: dict[str, Any]) -> None:
        if "error" not in row:
            row["agreement"] = agreement(row["candidates"])

    def markdown(self, doc: dict[str, Any]) -> str:
        lines = [f"# Underfilled launches at every 1-D block size ({doc['date']}, commit {doc['commit']}, {doc['device']})", "",
                 "Each `launch-config{block=B}` (same coverage) verified and timed once against the original. SMs: how many of "
                 "the 132 get a block; fill and predicted speedup from the cost model (SM-fill rule).", "",
                 "| kernel | original launch | pipeline | SMs | fill | predicted | verdict | µs | measured |",
                 "|---|---|---|---|---|---|---|---|---|"]
        for r in doc["kernels"]:
            if "error" in r:
                lines.append(f"| {r['kernel']} | | | | | | {r['error']} | | |")
                continue
            orig = f"{r['grid'][0]} x {r['block'][0]} ({r['sms_with_a_block']} SMs)"
            for c in r["candidates"]:
                pred, got = c.get("predicted_speedup"), c.get("speedup")
                lines.append(f"| {r['kernel']} | {orig} | `{c['pipeline']}` | {c.get('sms_with_a_block', '-')} | {c.get('fill', '-')} | "
                             f"{f'{pred:.2f}x' if pred else '-'} | {c['verdict']} | {c.get('variant_us') or '-'} | "
                             f"{f'{got:.2f}x' if got else '-'} |")
        lines += ["", f"Direction: measured beyond ±{NOISE:.0%} of the original, predicted faster or slower (none: the model's "
                  "one-SM floor holds both launches).", "",
                  "| kernel | best measured | best predicted | same | direction held | wrong | none predicted |",
                  "|---|---|---|---|---|---|---|"]
        for r in doc["kernels"]:
            a = r.get("agreement") or {}
            if a:
                lines.append(f"| {r['kernel']} | `{a['best_measured']}` | `{a['best_predicted']}` | {a['same_best']} | "
                             f"{a['direction_held']} | {a['direction_wrong']} | {a['no_direction_predicted']} |")
        return "\n".join(lines)


def agreement(cands: list[dict[str, Any]]) -> dict[str, Any]:
    """Whether the model's fastest block is the measured fastest, and per block whether its direction held."""
    timed = [c for c in cands if c.get("verdict") == "ok" and c.get("speedup") and c.get("predicted_speedup")]
    if not timed:
        return {}
    best_measured = max(timed, key=lambda c: c["speedup"])["pipeline"]
    best_predicted = max(timed, key=lambda c: c["predicted_speedup"])["pipeline"]
    held = wrong = flat = 0
    for c in timed:
        measured, predicted = c["speedup"] - 1.0, c["predicted_speedup"] - 1.0
        if abs(measured) <= NOISE:
            continue
        if abs(predicted) < 1e-3:  # the model's one-SM floor holds both launches: it predicts no direction
            flat += 1
        elif predicted * measured > 0:
            held += 1
        else:
            wrong += 1
    return {"best_measured": best_measured, "best_predicted": best_predicted, "same_best": best_measured == best_predicted,
            "direction_held": held, "direction_wrong": wrong, "no_direction_predicted": flat}


class Gemm(Report):
    """GEMM-like kernels' tiled forms against cuBLAS fp32 (TF32 off; bench/zoo_vendor.py): per form the original's and
    the form's median µs, the speedup and vendor / ours (>= 0.5: within 2x of cuBLAS)."""

    entries = "forms"

    def setup(self, dry: bool, plan: Any) -> dict[str, Any]:
        return {"forms": list(plan.forms)}

    def row(self, name: str, fixes: list[str], unfilled: list[str]) -> dict[str, Any]:
        return {"kernel": name, "fixes": fixes, "unfilled": unfilled, "forms": []}

    def entry(self, form: str, pipeline: str) -> dict[str, Any]:
        return {"form": form, "pipeline": pipeline}

    def refused(self, entry: dict[str, Any], why: str) -> None:
        entry["refused"] = why

    def applied(self, entry: dict[str, Any], cand: Any, state: Any) -> None:
        entry.update(variant=cand.id, grid=list(cand.launch.grid) if cand.launch else None,
                     block=list(cand.launch.block) if cand.launch else None)

    def built(self, entry: dict[str, Any], b: Any) -> None:
        entry["build_ok"], entry["build_s"] = b.ok, round(b.seconds, 1)
        if not b.ok:
            entry["verdict"], entry["log"] = b.failure, (b.log or "; ".join(b.messages))[-1500:]

    def build_failed(self, entry: dict[str, Any]) -> bool:
        return entry.get("build_ok") is False

    def before_runs(self, row: dict[str, Any], k: Any, dry: bool) -> None:
        if dry or not k.vendor:
            row["vendor"] = {"skipped": "dry run" if dry else "no vendor call"}
            return
        from zoo_vendor import vendor_time

        row["vendor"] = vendor_time(k.vendor, k.sizes)

    def timed(self, entry: dict[str, Any], m: Any, row: dict[str, Any]) -> None:
        entry.update(verdict=m.verdict, speedup=m.speedup, messages=list(m.messages)[-4:],
                     original_us=m.ref.median_us if m.ref else None, us=m.var.median_us if m.var else None,
                     spread_us=m.var.spread_us if m.var else None)
        vendor_us = row.get("vendor", {}).get("median_us")
        if vendor_us and entry.get("us") and m.ok:
            entry["vendor_over_ours"] = vendor_us / entry["us"]
        print(f"{row['kernel']:14s} {entry['form']:45s} {m.verdict:13s} {_f(entry.get('us'))} us  original "
              f"{_f(entry.get('original_us'))} us  vendor {_f(vendor_us)} us  vendor/ours {_f(entry.get('vendor_over_ours'), '{:.2f}')}",
              file=sys.stderr, flush=True)

    def markdown(self, doc: dict[str, Any]) -> str:
        lines = [f"# GEMM-like zoo kernels: each tiled form against cuBLAS ({'dry run, ' if doc.get('dry') else ''}"
                 f"{doc['date']}, commit {doc['commit']})", "",
                 "In-sample (the zoo is the optimizer's development set). vendor / ours >= 0.50 is within 2x of cuBLAS fp32 (TF32 off).", "",
                 "| kernel | form | verdict | ours µs | original µs | speedup | vendor µs | vendor / ours |", "|---|---|---|---|---|---|---|---|"]
        for d in doc["kernels"]:
            v = d.get("vendor", {})
            for r in d.get("forms", []):
                verdict = r.get("verdict") or (f"refused: {r['refused']}" if "refused" in r else ("built" if r.get("build_ok") else "-"))
                lines.append(f"| {d['kernel']} | `{r['pipeline']}` | {verdict[:90]} | {_f(r.get('us'))} | {_f(r.get('original_us'))} | "
                             f"{_f(r.get('speedup'), '{:.2f}')} | {_f(v.get('median_us'))} | {_f(r.get('vendor_over_ours'), '{:.2f}')} |")
            if d.get("error"):
                lines.append(f"| {d['kernel']} | - | {d['error'][:120]} | | | | | |")
        return "\n".join(lines)


REPORTS: dict[str, type[Report]] = {"bandwidth": Bandwidth, "gemm": Gemm, "underfill": Underfill}
