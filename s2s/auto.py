"""`s2s auto TREE`: scan, extract the top hotspots, optimize each, reintegrate all winners as one diff."""
from __future__ import annotations

import difflib
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.capture.verify import hold_to_app_data
from s2s.optimize.loop import Options, optimize
from s2s.reintegrate.splice import apply_in_place, plan


@dataclass
class AutoResult:
    rows: list[tuple[str, str, str, str, str, str]] = field(default_factory=list)
    any_win: bool = False
    diff: str = ""


def _copy_tree(src: Path, dst: Path) -> None:
    from s2s.base.paths import symlink_loop

    loop = symlink_loop(src)
    if loop is not None:
        raise UserError(f"a symlink loop in the tree ({loop}); s2s auto copies the tree and would follow it forever",
                        file=str(src), hint="remove or replace that link")
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".git", "build", "*.o", ".s2s-backup"))


def _tree_diff(orig: Path, new: Path) -> str:
    out: list[str] = []
    for path in sorted(new.rglob("*")):
        if not path.is_file() or ".s2s-backup" in path.parts:
            continue
        rel = path.relative_to(new)
        o = orig / rel
        if not o.is_file():
            continue
        a, b = o.read_bytes(), path.read_bytes()
        if a != b:
            out.extend(difflib.unified_diff(a.decode("utf-8").splitlines(keepends=True), b.decode("utf-8").splitlines(keepends=True),
                                            fromfile=f"a/{rel.as_posix()}", tofile=f"b/{rel.as_posix()}"))
    return "".join(out)


def run_auto(tree: str, *, top: int, profile: str | None, work: Path, diff_path: Path, options: Options,
             kernels: list[str] | None = None, overrides: dict[str, str] | None = None,
             log: Callable[[str], None] = print, min_speedup: float = 1.05,
             app: tuple[str, str] | None = None, app_timeout: float = 1800.0) -> AutoResult:
    """`app` = (build command, run command): every winner is then held to the application's captured data
    (`s2s capture --into`, `s2s verify`) before it is reintegrated."""
    from s2s.extract.mep_writer import make_mep
    from s2s.scan.ranking import profile_ranking, static_estimate
    from s2s.scan.tree import scan_tree

    root = Path(tree).resolve()
    index = scan_tree(root)
    spots = profile_ranking(index, profile)[0] if profile else static_estimate(index)
    if kernels:
        chosen = [f"{h.kernel.file}:{h.kernel.name}" for h in spots if h.kernel.name in kernels or h.kernel.qualified in kernels]
    else:
        chosen = [f"{h.kernel.file}:{h.kernel.name}" for h in spots if h.kernel.language in {"cuda", "hip", "opencl"}][:top]
    if not chosen:
        raise UserError("no kernels to optimize", file=str(root))
    work.mkdir(parents=True, exist_ok=True)
    staged = work / "tree"
    _copy_tree(root, staged)
    result = AutoResult()
    log(f"ranking: {spots[0].source if spots else 'estimate'}; optimizing {', '.join(chosen)}")
    for spec in chosen:
        name = spec.split(":")[-1]
        mep_dir = work / f"mep-{name}"
        try:
            _out, manifest, ex = make_mep(str(root), spec, str(mep_dir), overrides=overrides)
        except UserError as err:
            result.rows.append((name, spec, "-", "-", "-", f"extract failed: {err.message}"))
            continue
        where = f"{ex.kernel.file}:{ex.kernel.line}"
        if manifest.unfilled():
            result.rows.append((ex.kernel.qualified, where, str(mep_dir), "-", "-", "mep.toml needs: " + "; ".join(manifest.unfilled())))
            continue
        log(f"optimizing {ex.kernel.qualified} ({where})")
        try:
            outcome = optimize(mep_dir, options, progress=lambda ev: log(
                f"  round {ev['round']} {ev['origin']}: {ev['verdict']} {float(ev['speedup'] or 0):.2f}x"))  # type: ignore[arg-type]
        except UserError as err:
            result.rows.append((ex.kernel.qualified, where, str(mep_dir), "-", "-", f"optimize failed: {err.message}"))
            continue
        if not outcome.best_id or outcome.best_speedup < min_speedup:
            result.rows.append((ex.kernel.qualified, where, str(mep_dir), outcome.best_id or "-", f"{outcome.best_speedup:.2f}x",
                                f"not reintegrated: below {min_speedup:.2f}x, within timing noise"))
            continue
        held = ""
        if app is not None:
            log(f"holding {ex.kernel.qualified}'s winner to the application's data ({app[1]!r})")
            try:
                got = hold_to_app_data(root, spec, mep_dir, app[0], app[1], timeout=app_timeout)
            except UserError as err:
                result.rows.append((ex.kernel.qualified, where, str(mep_dir), outcome.best_id, f"{outcome.best_speedup:.2f}x",
                                    f"not reintegrated: the application's data could not be captured: {err.one_line()}"))
                continue
            failed = "; ".join(f"{c.id} ({c.verdict}: {c.message[:160]})" for c in got.checked if c.verdict != "ok")
            best = got.best
            if best is None or (best.speedup or 0) < min_speedup:
                result.rows.append((ex.kernel.qualified, where, str(mep_dir), outcome.best_id, f"{outcome.best_speedup:.2f}x",
                                    f"not reintegrated: no winner >= {min_speedup:.2f}x passed on the application's data ({failed})"))
                continue
            outcome.best_id, outcome.best_origin, outcome.best_speedup = best.id, best.origin, best.speedup or 0.0
            held = "; held to the application's data" + (f" (failed there: {failed})" if failed else "")
        try:
            p = plan(mep_dir, "best", str(staged))
            apply_in_place(p, None, None)
            status = "reintegrated" + held + (f"; by hand: {'; '.join(p.manual)}" if p.manual else "")
        except UserError as err:
            status = f"reintegration failed: {err.message}"
        result.any_win = True
        result.rows.append((ex.kernel.qualified, where, str(mep_dir), f"{outcome.best_id} {outcome.best_origin}",
                            f"{outcome.best_speedup:.2f}x", status))
    shutil.rmtree(staged / ".s2s-backup", ignore_errors=True)
    result.diff = _tree_diff(root, staged)
    atomic_write(diff_path, result.diff.encode())
    return result
