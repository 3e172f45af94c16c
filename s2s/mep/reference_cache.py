"""The reference's outputs kept across evaluations, for a long kernel: when, and where (the harness's --ref-cache).

A check runs the reference once or twice per input set (its outputs, then which elements it writes) on the captured
sets, the generated ones and the smaller size: for a reference of a second a launch, that is most of an evaluation's
device time, and it is the same for every candidate, since neither the reference nor those inputs change. Once an
evaluation has timed the reference at LONG_REFERENCE_US or more a launch (`note_time`: build/reference_time.json,
under the bounds probe's key, which hashes the reference, its headers, mep.toml, the harness and the target), later
evaluations pass the harness `--ref-cache DIR --seed S` (`harness_args`; fewer generated sets, FEWER_SETS_US): DIR under build/, named by that key and the
captured data's files (name, size, time), S the seed of the evaluation that timed it, so that the generated sets are
the same sets each time. The harness computes a set's reference outputs once and reads them afterwards (CUDA and HIP:
templates/s2s_harness_common.cuh). The set checked after the timing stays fresh, a seed no earlier run saw, so each
evaluation still meets one input set nothing was fitted to. Nothing is kept where the disk lacks room for it.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from s2s.base.fsutil import atomic_write

LONG_REFERENCE_US = 20_000.0  # a reference at least this long a launch has its outputs kept
# and one at least this long is checked on one generated input set, not three, beside the captured sets, the smaller
# size and the fresh set after the timing: each set costs the host seconds of comparisons at such sizes (a 1.7 s
# product's five sets took 10-12 s of a 52 s evaluation on the H200), and the variant runs twice on each
FEWER_SETS_US = 100_000.0
FEWER_SETS = 1
RECORD = "reference_time.json"
SETS_KEPT = 6  # captured, three generated, the smaller size, and room to spare: the disk needed, in data sizes
SPARE_BYTES = 1 << 30  # free disk left over after the cache at its largest


def note_time(mep_dir: Path, key: str, ref_us: float | None, seed: int | None) -> None:
    """Record the reference's time a launch (and the seed of that evaluation) under `key`, once per key."""
    if not key or not ref_us or ref_us <= 0 or seed is None or _load(mep_dir, key) is not None:
        return
    path = Path(mep_dir) / "build" / RECORD
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, (json.dumps({"key": key, "ref_us": float(ref_us), "seed": int(seed)}) + "\n").encode())
    except OSError:
        pass  # a read-only MEP: the reference runs in every evaluation, as without a record


def harness_args(mep_dir: Path, key: str, data_bytes: float | None = None) -> list[str]:
    """`--ref-cache DIR --seed S` for a reference recorded as long under `key` where the disk has room for its
    outputs (the MEP's buffers, `data_bytes` or mep.toml's, or its captured data, the larger); [] otherwise."""
    rec = _load(mep_dir, key) if key else None
    if rec is None or rec["ref_us"] < LONG_REFERENCE_US:
        return []
    mep_dir = Path(mep_dir)
    if data_bytes is None:
        data_bytes = _buffer_bytes(mep_dir)
    build = mep_dir / "build"
    captured = sorted((p for p in (mep_dir / "capture").rglob("*") if p.is_file()), key=str) if (mep_dir / "capture").is_dir() else []
    stamp = hashlib.sha256(key.encode())
    size = 0
    for p in captured:
        st = p.stat()
        size += st.st_size
        stamp.update(f"{p.relative_to(mep_dir)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    need = SETS_KEPT * max(float(size), float(data_bytes or 0.0)) + SPARE_BYTES
    cache = build / f"refcache-{stamp.hexdigest()[:16]}"
    try:
        if not cache.is_dir() and shutil.disk_usage(build).free < need:
            return []
        for old in build.glob("refcache-*"):  # another reference's or another capture's: never read again
            if old != cache:
                shutil.rmtree(old, ignore_errors=True)
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        return []
    fewer = ["--input-sets", str(FEWER_SETS)] if rec["ref_us"] >= FEWER_SETS_US else []
    return ["--ref-cache", str(cache), "--seed", str(rec["seed"]), *fewer]


def _buffer_bytes(mep_dir: Path) -> float | None:
    """The bytes of the MEP's buffers (mep.toml); None if unknown."""
    from s2s.base.errors import UserError
    from s2s.mep.manifest import load
    from s2s.mep.roofline import compulsory_bytes

    try:
        return compulsory_bytes(load(mep_dir))
    except (UserError, OSError, ValueError):  # a manifest the run itself refuses with its own message
        return None


def _load(mep_dir: Path, key: str) -> dict[str, Any] | None:
    try:
        d = json.loads((Path(mep_dir) / "build" / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict) or d.get("key") != key or not isinstance(d.get("ref_us"), (int, float)) \
            or isinstance(d.get("seed"), bool) or not isinstance(d.get("seed"), int):
        return None
    return {"ref_us": float(d["ref_us"]), "seed": int(d["seed"])}
