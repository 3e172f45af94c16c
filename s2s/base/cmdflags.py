"""Compiler flags from data (mep.toml, a tree's compile_commands.json) are argument vectors, never shell text;
the nvcc options that run a program or read more options from a file are refused.

nvcc hands `-D` values to its own internal shell, so a backtick or `$(...)` there runs; `-ccbin DIR` runs
`DIR/gcc`; `-Xcompiler` passes host-compiler options (plugins, `-wrapper`); `@file` and `--options-file` read
options that nobody reviewed.
"""
from __future__ import annotations

from pathlib import Path

from .errors import UserError

_RUNS_PROGRAM = ("-ccbin", "--compiler-bindir", "-Xcompiler", "--compiler-options", "-Xlinker", "--linker-options",
                 "-Xptxas", "--ptxas-options", "-Xnvlink", "--nvlink-options", "--options-file", "-optf", "-B",
                 "--dryrun", "-wrapper", "-fplugin", "--run", "-run")
_SHELL = ("`", "$(", "${", ";", "|", "&", "\n", "\r", "<", ">")


def danger(flag: object) -> str | None:
    """Why `flag` is refused, or None."""
    if not isinstance(flag, str):
        return f"{flag!r} is not a string"
    if flag.startswith("@"):
        return "a response file (options read from a file)"
    for opt in _RUNS_PROGRAM:
        if flag == opt or flag.startswith(opt + "=") or (opt in ("-ccbin", "-B", "-Xcompiler", "-optf") and flag.startswith(opt)):
            return "it makes the compiler run another program or read options from elsewhere"
    if flag.startswith(("-D", "--define-macro")):
        bad = next((c for c in _SHELL if c in flag), None)
        if bad is not None:
            return f"shell metacharacter {bad!r} in a -D value (nvcc passes -D values through a shell)"
    elif any(c in flag for c in ("\n", "\r", "`", "$(", "${")):
        return "a line break, backtick or command substitution in a flag"
    return None


def check_flags(flags: list[object], *, source: Path | str, line_of: object = None) -> None:
    """A UserError naming the first refused flag and `source` (the file it was read from)."""
    for flag in flags:
        why = danger(flag)
        if why is not None:
            name = str(flag).split("=", 1)[0] if isinstance(flag, str) else repr(flag)
            line = line_of(name) if callable(line_of) else None
            raise UserError(f"flag {name!r} refused: {why}", file=str(source), line=line,
                            hint="remove it; s2s runs no command taken from data")
