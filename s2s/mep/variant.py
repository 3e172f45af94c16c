"""One variant of an MEP's kernel: `variants/<id>/variant.json`, read and written in one place.

The kernel file beside it is the variant's text; this record holds where it came from and, when the
rewrite changed the launch, the variant's grid, block and shared memory and the passes' launch rules
(which reintegration applies at the application's launch sites).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write

FILE = "variant.json"
Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class Variant:
    origin: str = ""
    note: str = ""
    parent: str | None = None
    grid: Dim3 | None = None  # set only when the variant launches differently from the reference
    block: Dim3 | None = None
    shared_mem: int | None = None
    launch_rules: tuple[str, ...] = field(default=())
    # elements of each host-sized __local argument at the variant's block (OpenCL; the MEP's count where absent)
    local_counts: tuple[tuple[str, int], ...] = field(default=())

    @property
    def changes_launch(self) -> bool:
        return self.block is not None

    @classmethod
    def read(cls, vdir: Path) -> Variant:
        """The record in `vdir`, or an empty one when there is none; bad content is a UserError naming the file."""
        path = Path(vdir) / FILE
        if not path.is_file():
            return cls()
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise UserError(f"invalid JSON: {exc}", file=str(path), line=exc.lineno) from None
        except UnicodeDecodeError:
            raise UserError("not UTF-8 text", file=str(path)) from None
        if not isinstance(raw, dict):
            raise UserError("expected a JSON object", file=str(path))
        rules = raw.get("launch_rules") or ()
        if not isinstance(rules, list | tuple) or not all(isinstance(r, str) for r in rules):
            raise UserError(f"launch_rules = {rules!r}: a list of strings", file=str(path))
        shmem = raw.get("shared_mem")
        if shmem is not None and (not isinstance(shmem, int) or shmem < 0):
            raise UserError(f"shared_mem = {shmem!r}: a non-negative integer", file=str(path))
        local = raw.get("local_counts") or {}
        if not isinstance(local, dict) or not all(isinstance(n, int) and n > 0 for n in local.values()):
            raise UserError(f"local_counts = {local!r}: an object of positive element counts", file=str(path))
        parent = raw.get("parent")
        return cls(origin=str(raw.get("origin", "")), note=str(raw.get("note", "")),
                   parent=str(parent) if parent is not None else None,
                   grid=_dim3(raw.get("grid"), path, "grid"), block=_dim3(raw.get("block"), path, "block"),
                   shared_mem=shmem, launch_rules=tuple(rules), local_counts=tuple((str(k), v) for k, v in local.items()))

    def write(self, vdir: Path) -> None:
        meta: dict[str, Any] = {"origin": self.origin, "note": self.note, "parent": self.parent}
        if self.changes_launch:
            meta.update(grid=list(self.grid or (1, 1, 1)), block=list(self.block or (1, 1, 1)), shared_mem=self.shared_mem or 0)
            if self.launch_rules:
                meta["launch_rules"] = list(self.launch_rules)
            if self.local_counts:
                meta["local_counts"] = dict(self.local_counts)
        atomic_write(Path(vdir) / FILE, json.dumps(meta, indent=1).encode())


def _dim3(v: Any, path: Path, key: str) -> Dim3 | None:
    if v is None:
        return None
    if not isinstance(v, list) or not 1 <= len(v) <= 3 or not all(isinstance(x, int) and x > 0 for x in v):
        raise UserError(f"{key} = {v!r}: a list of one to three positive integers", file=str(path))
    v3 = (list(v) + [1, 1])[:3]
    return v3[0], v3[1], v3[2]
