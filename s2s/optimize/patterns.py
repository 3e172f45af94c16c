"""Pattern inheritance: a library of rewrites that paid off, keyed by the features of the kernel they won on.

One JSON file (per user by default, `--patterns PATH` to share one per project). Each entry holds the
kernel's features, the winning pass pipeline, the speedup and the device. A new kernel tries the
pipelines of the most similar kernels first.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.lang.kernel_facts import KernelFacts


@dataclass(frozen=True)
class Pattern:
    features: tuple[str, ...]
    pipeline: str
    speedup: float
    device: str
    kernel: str
    backend: str
    date: str

    @property
    def features_text(self) -> str:
        return ", ".join(self.features)

    @property
    def rewrite(self) -> str:
        return self.pipeline


def default_path() -> Path:
    base = os.environ.get("S2S_PATTERNS") or os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    p = Path(base)
    return p if p.suffix == ".json" else p / "s2s" / "patterns.json"


def features(facts: KernelFacts) -> tuple[str, ...]:
    """Shape of the loop nest, access pattern and arithmetic, as tokens compared by overlap."""
    out = {f"dialect:{facts.dialect}", f"dims:{facts.dims}", f"loops:{min(len(facts.loops), 4)}",
           f"elem:{facts.element_type or 'none'}"}
    depth = max((lp.depth for lp in facts.loops), default=0)
    out.add(f"depth:{depth}")
    if facts.accumulations:
        out.add("global-accumulation")
    if facts.atomics:
        out.add("atomics" + ("-in-loop" if any(a.in_loop for a in facts.atomics) else ""))
    if facts.shared:
        out.add("shared-memory")
    reads = sum(1 for p in facts.params if p.pointer and p.read and not p.written)
    writes = sum(1 for p in facts.params if p.pointer and p.written)
    out.add(f"reads:{min(reads, 4)}")
    out.add(f"writes:{min(writes, 3)}")
    loop_vars = {lp.var for lp in facts.loops if lp.var}
    thread = set(facts.thread_vars)
    for s in facts.subscripts:
        idx = s.index.replace(" ", "")
        has_loop = any(v in idx for v in loop_vars)
        has_thread = any(v in idx for v in thread)
        if has_loop and has_thread:
            # row-walk: thread var scaled by a size (t*n + k); column-walk: loop var scaled (k*n + t)
            scaled_thread = any(f"{v}*" in idx for v in thread)
            out.add("walk:thread-major" if scaled_thread else "walk:loop-major")
        elif has_loop:
            out.add("reads-shared-by-threads")
    return tuple(sorted(out))


def similarity(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    sa, sb = set(a), set(b)
    return len(sa & sb) / max(1, len(sa | sb))


_FIELDS: dict[str, type | tuple[type, ...]] = {"pipeline": str, "speedup": (int, float), "device": str, "kernel": str, "backend": str, "date": str}


def _pattern(entry: object) -> Pattern:
    if not isinstance(entry, dict) or set(entry) != {"features", *_FIELDS}:
        raise TypeError("an entry is not a pattern")
    feats = entry["features"]
    if not isinstance(feats, list) or not all(isinstance(f, str) for f in feats):
        raise TypeError("features is not a list of strings")
    for name, kind in _FIELDS.items():
        if not isinstance(entry[name], kind) or isinstance(entry[name], bool):
            raise TypeError(f"{name} is not a {getattr(kind, '__name__', 'number')}")
    return Pattern(**{**entry, "features": tuple(feats)})


class Library:
    """The library at `path` (default: per user); a file that is not one is a UserError, never silently replaced."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else default_path()
        self.patterns: list[Pattern] = []
        if self.path.exists():
            try:
                data = self.path.read_bytes()
            except OSError as exc:  # the place, not the file: moving a healthy library away would lose its winners
                raise UserError(f"cannot read the pattern library ({exc.strerror or exc}); it was left as it is",
                                file=str(self.path), hint="make it readable, or pass --no-patterns") from None
            try:
                raw = json.loads(data.decode("utf-8"))
                entries = raw.get("patterns", []) if isinstance(raw, dict) else None
                if not isinstance(entries, list):
                    raise TypeError("no list of patterns")
                self.patterns = [_pattern(p) for p in entries]
            except (ValueError, TypeError, RecursionError) as exc:
                raise UserError(f"not a readable pattern library ({exc})", file=str(self.path),
                                hint="move it away (winners are stored there again), or pass --no-patterns") from None

    def suggest(self, feats: tuple[str, ...], backend: str, limit: int = 6) -> list[Pattern]:
        """Pipelines that won on similar kernels, most similar and most rewarding first, one per pipeline."""
        # pipelines carry across backends (the passes know CUDA, HIP and OpenCL), at a discount
        scored = sorted(((similarity(feats, p.features) * (1.0 + min(p.speedup, 50.0) / 50.0) * (1.0 if p.backend == backend else 0.8), p)
                         for p in self.patterns if similarity(feats, p.features) >= 0.4),
                        key=lambda t: -t[0])
        out: list[Pattern] = []
        seen: set[str] = set()
        for _score, p in scored:
            if p.pipeline not in seen:
                seen.add(p.pipeline)
                out.append(p)
        return out[:limit]

    def record(self, feats: tuple[str, ...], pipeline: str, speedup: float, device: str, kernel: str, backend: str) -> None:
        if speedup <= 1.02 or not pipeline:
            return
        self.patterns.append(Pattern(feats, pipeline, round(speedup, 3), device, kernel, backend, time.strftime("%Y-%m-%d")))
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"schema": "s2s.patterns/1", "patterns": [{**asdict(p), "features": list(p.features)} for p in self.patterns]}
        atomic_write(self.path, json.dumps(doc, indent=1).encode())
