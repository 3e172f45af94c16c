"""capture/index.json is data like mep.toml: checked before a harness reads it. Its schema must be the one this s2s
writes, its sets a list of launches, and every file it names (.npy before/after of a buffer, a hidden pointer, a
symbol) a relative path inside the MEP, so that a planted index cannot feed the harness another MEP's data or
/etc/passwd. mep.toml's [capture] sets must be a list of launch numbers."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from s2s.base.errors import UserError
from s2s.base.paths import contained

from .manifest import Manifest, line_of

SCHEMA = 1


def check_capture(m: Manifest, mep_dir: Path) -> None:
    """A UserError naming the file (and entry) when [capture] or its index is malformed or names a file outside the MEP."""
    if not m.capture:
        return
    mep_dir = Path(mep_dir)
    toml = mep_dir / "mep.toml"
    sets = m.capture.get("sets", [])
    if not isinstance(sets, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in sets):
        raise UserError(f"capture.sets = {sets!r}: a list of launch numbers", file=str(toml), line=line_of(toml, "sets =", after="[capture]"))
    path = contained(m.capture.get("index", "capture/index.json"), mep_dir, entry="capture.index", source=toml,
                     line=line_of(toml, "index =", after="[capture]"))
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise UserError(f"capture.index: cannot read it ({exc})", file=str(path)) from None
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        schema = raw.get("schema") if isinstance(raw, dict) else None
        raise UserError(f"schema = {schema!r}: this s2s reads capture indexes of schema {SCHEMA}", file=str(path),
                        line=line_of(path, '"schema"'), hint="capture the data again with this s2s")
    entries = raw.get("sets")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise UserError(f"sets = {_short(entries)}: a list of captured launches", file=str(path), line=line_of(path, '"sets"'))
    for i, entry in enumerate(entries):
        _check_entry(entry, f"sets[{i}]", mep_dir, path)


def _check_entry(entry: dict[str, Any], where: str, mep_dir: Path, path: Path) -> None:
    launch = entry.get("launch", 0)
    if not isinstance(launch, int) or isinstance(launch, bool):
        raise UserError(f"{where}.launch = {_short(launch)}: a launch number", file=str(path))
    for table in ("params", "symbols"):
        infos = entry.get(table, {})
        if not isinstance(infos, dict) or not all(isinstance(v, dict) for v in infos.values()):
            raise UserError(f"{where}.{table} = {_short(infos)}: a table of captured values", file=str(path))
        for name, info in infos.items():
            for key in ("before", "after", "file"):
                if key in info:
                    contained(info[key], mep_dir, entry=f"{where}.{table}.{name}.{key}", source=path)
            pointers = info.get("pointers", [])
            if not isinstance(pointers, list) or not all(isinstance(q, dict) for q in pointers):
                raise UserError(f"{where}.{table}.{name}.pointers = {_short(pointers)}: a list", file=str(path))
            for j, q in enumerate(pointers):
                for key in ("before", "after"):
                    if key in q:
                        contained(q[key], mep_dir, entry=f"{where}.{table}.{name}.pointers[{j}].{key}", source=path)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
