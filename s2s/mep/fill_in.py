"""What an MEP leaves FILL-IN, why static extraction could not tell, and how to fill each: the summary `s2s extract`
prints and the README it writes beside mep.toml while values are missing."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .manifest import FILL_IN, Manifest

_UNKNOWN = re.compile(r"not known|could not be evaluated|differ|cannot be deduced|is FILL-IN|under a condition|"
                      r"in the loop|not followed")


@dataclass(frozen=True)
class FillIn:
    key: str  # where in mep.toml: "params.n.value", "launch.grid / launch.block"
    why: str  # one line: what static extraction saw
    how: str  # what to write there


def _why(*texts: str) -> str:
    """The first step of a provenance trail (or note) that says why a value is not known."""
    for t in texts:
        for step in re.split(r";\s+|(?<=\)):\s+|:\s+(?=[a-z_]\w*(?:\.\w+|\[\d+\])?:\s)", t):  # argv[1]: ...
            if _UNKNOWN.search(step):
                return " ".join(step.split())
    return "not known before the run"


def fill_ins(m: Manifest) -> list[FillIn]:
    """Every FILL-IN value of `m`, in mep.toml order."""
    out = []
    notes = list(m.notes)
    launch_at = m.origin.get("launch", "") if isinstance(m.origin, dict) else ""
    for p in m.params:
        if p.role == "scalar" and p.value == FILL_IN:
            out.append(FillIn(f"params.{p.name}.value", _why(p.source),
                              f"the value of {p.type} {p.name} at the launch{f' ({launch_at})' if launch_at else ''}: "
                              "a number (a struct: a table of its fields)"))
        if p.role != "scalar" and p.count == FILL_IN:
            out.append(FillIn(f"params.{p.name}.count", _why(p.source),
                              f"how many {p.elem} elements the buffer behind {p.name} holds (the allocation's bytes / "
                              f"sizeof({p.elem}))"))
    if m.template_args == FILL_IN:
        out.append(FillIn("template_args", _why(*[n for n in notes if "template" in n]),
                          "the template arguments of the launch that runs, as C++ spells them: \"float, 256\""))
    if FILL_IN in (m.launch.grid + m.launch.block):  # type: ignore[operator]
        out.append(FillIn("launch.grid / launch.block", _why(m.launch.source, *[n for n in notes if "launch" in n]),
                          f"[x, y, z] of the launch's grid ({m.launch.grid_expr or '?'}) and block "
                          f"({m.launch.block_expr or '?'}) in the run to reproduce"))
    if m.launch.shared_mem == FILL_IN:
        out.append(FillIn("launch.shared_mem", _why(*[n for n in notes if "shared memory" in n or "differ" in n]),
                          "bytes of dynamic shared memory, the launch's third <<<>>> argument"))
    return out


def summary(m: Manifest, width: int = 100, limit: int = 12) -> list[str]:
    """At most `limit` + 2 lines, each at most `width` characters: what is FILL-IN and why."""
    items = fill_ins(m)
    if not items:
        return []
    lines = [f"{len(items)} value{'s' if len(items) > 1 else ''} FILL-IN in mep.toml (README.md says how to fill each; "
             "`s2s capture` records them from a run):"]
    for f in items[:limit]:
        line = f"  {f.key}: {f.why}"
        lines.append(line if len(line) <= width else line[: width - 3] + "...")
    if len(items) > limit:
        lines.append(f"  ... and {len(items) - limit} more (README.md)")
    return lines


_TITLE = "values to fill"


def awaits_fill_in(readme_path: Path) -> bool:
    """Whether README.md is the one `readme` writes (then `s2s run` replaces it once the values are filled)."""
    try:
        with readme_path.open() as f:
            return f.readline().rstrip().endswith(f": {_TITLE}")
    except OSError:
        return False


def readme(m: Manifest) -> str:
    """README.md of an MEP with FILL-IN values: each value, why it is missing, and what to write."""
    items = fill_ins(m)
    out = [f"# MEP of {m.kernel}: {_TITLE}", "",
           f"Static extraction could not tell {len(items)} value{'s' if len(items) > 1 else ''} of `mep.toml` without "
           "running the application; each is `\"FILL-IN\"` there. Write the value the launch you want to reproduce "
           "uses, then `s2s run` this directory (it writes the harness once nothing is FILL-IN). Or let a real run "
           "record them: `s2s capture TREE --kernel NAME --build-cmd CMD --run-cmd CMD` writes an MEP from the "
           "launch it captures.", ""]
    for f in items:
        out += [f"## `{f.key}`", "", f"- why: {f.why}", f"- write: {f.how}", ""]
    return "\n".join(out)
