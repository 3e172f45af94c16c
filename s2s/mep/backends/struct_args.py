"""The CUDA harness's view of captured structs passed by value (mep.toml [capture] struct_args).

Such a struct is rebuilt at every launch from its captured bytes, and each field that held a device pointer
in the application is rewritten to one of the MEP's own allocations: an extra buffer of the harness, after
the [[params]] buffers, named PARAM.FIELD, filled from the captured data (or from the seed for generated
input sets), checked like any output.
"""
from __future__ import annotations

from typing import Any

from s2s.base.errors import UserError
from s2s.mep.manifest import Manifest

_PRIMS = {"float", "double", "int", "unsigned int", "unsigned", "char", "signed char", "unsigned char", "short",
          "unsigned short", "long", "unsigned long", "long long", "unsigned long long", "int8_t", "uint8_t", "int16_t",
          "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "size_t", "bool"}


def struct_args(m: Manifest) -> list[dict[str, Any]]:
    return [sa for sa in m.capture.get("struct_args", []) if isinstance(sa, dict)] if m.capture else []


def hidden_buffers(m: Manifest, first_index: int) -> list[dict[str, Any]]:
    """The extra buffers behind struct fields, in harness order, `first_index` being the first one's slot."""
    out: list[dict[str, Any]] = []
    rtol, atol = m.rtol, m.atol
    for sa in struct_args(m):
        for q in sa.get("pointers", []):
            elem = str(q.get("elem", "unsigned char"))
            esz = int(q.get("elem_size", 1))
            ctype = elem if elem in _PRIMS else "unsigned char"
            count = int(q.get("count", 0)) * (esz if ctype == "unsigned char" and esz != 1 else 1)
            out.append({"name": f"{sa['param']}.{q['field']}", "param": str(sa["param"]), "field": str(q["field"]),
                        "offset": int(q["offset"]), "role": "inout" if q.get("role") == "inout" else "in",
                        "ctype": ctype, "count": count, "bi": first_index + len(out),
                        "rtol": repr(float(rtol)), "atol": repr(float(atol))})
    return out


def struct_arg_contexts(m: Manifest, mep_dir: Any, hidden: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """param name -> {size, bytes (a C initializer), patches [(offset, buffer slot)]} from the first replayed set."""
    import json
    from pathlib import Path

    if not struct_args(m) or mep_dir is None:
        return {}
    path = Path(mep_dir) / str(m.capture.get("index", "capture/index.json"))
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"capture.index: cannot read {path}: {exc}", file=str(Path(mep_dir) / "mep.toml")) from None
    wanted = {int(x) for x in m.capture.get("sets", [])}
    sets = [e for e in index.get("sets", []) if e.get("replayed", True) and (not wanted or int(e.get("launch", 0)) in wanted)]
    if not sets:
        return {}
    out = {}
    for sa in struct_args(m):
        name = str(sa["param"])
        info = sets[0].get("params", {}).get(name, {})
        raw = bytes.fromhex(str(info.get("bytes", "")))
        if len(raw) != int(sa.get("size", -1)):
            raise UserError(f"capture.struct_args: params.{name}: the captured bytes in {path} do not have the size "
                            f"{sa.get('size')} given in mep.toml", file=str(path))
        patches = [(h["offset"], h["bi"]) for h in hidden if h["param"] == name]
        out[name] = {"size": len(raw), "bytes": ", ".join(f"0x{b:02x}" for b in raw), "patches": patches}
    return out


def hidden_captured(entry: dict[str, Any], hidden: list[dict[str, Any]], where: str) -> tuple[list[str], list[str]]:
    """The .npy files (before, after) of the hidden buffers in one captured set of capture/index.json."""
    before, after = [], []
    for h in hidden:
        ptrs = entry.get("params", {}).get(h["param"], {}).get("pointers", [])
        q = next((q for q in ptrs if q.get("field") == h["field"]), None)
        if q is None:
            raise UserError(f"capture.struct_args: no captured data for {h['name']} in {where}", file=where)
        before.append(str(q["before"]))
        after.append(str(q["after"]))
    return before, after
