"""compile_commands.json: the real flags of each translation unit."""
from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from s2s.base.errors import UserError


@dataclass(frozen=True)
class CompileCommand:
    file: Path  # absolute
    directory: Path
    args: tuple[str, ...]

    @property
    def defines(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for flag in _flag_values(self.args, "-D"):
            name, _, value = flag.partition("=")
            out[name] = value if _ else "1"
        return out

    @property
    def include_dirs(self) -> list[Path]:
        return [(self.directory / d).resolve() for d in _flag_values(self.args, "-I")]

    @property
    def numerics_flags(self) -> list[str]:
        """The flags that change what the device code computes (`-use_fast_math`, `-ftz=true`, `-prec-div=false`,
        `-fmad=false`, clang's `-ffast-math`), spelled `-name=value`: an MEP built without them gives other values than
        the application (fast-math `__expf`, flushed denormals, rounding of a float-to-int conversion)."""
        out: list[str] = []
        args = list(self.args)
        for i, a in enumerate(args):
            name, eq, value = a.partition("=")
            bare = "-" + name.lstrip("-")
            if bare in _NUMERICS_SWITCHES:
                out.append(bare)
            elif bare in _NUMERICS_VALUED:
                value = value if eq else (args[i + 1] if i + 1 < len(args) else "")
                if value and re.fullmatch(r"[A-Za-z0-9_]+", value):
                    out.append(f"{bare}={value}")
        return list(dict.fromkeys(out))

    @property
    def command_text(self) -> str:
        return shlex.join(self.args)


_NUMERICS_SWITCHES = frozenset({"-use_fast_math", "-ffast-math", "-fno-fast-math", "-fgpu-flush-denormals-to-zero"})
_NUMERICS_VALUED = frozenset({"-ftz", "-prec-div", "-prec-sqrt", "-fmad", "-ffp-contract"})


def _flag_values(args: tuple[str, ...], flag: str) -> list[str]:
    out = []
    it = iter(args)
    for a in it:
        if a == flag:
            out.append(next(it, ""))
        elif a.startswith(flag) and len(a) > len(flag):
            out.append(a[len(flag):])
    return out


def find_compdb(tree: Path, given: str | None) -> Path | None:
    if given:
        path = Path(given)
        if not path.is_file():
            raise UserError("compile_commands.json not found", file=given)
        return path.resolve()
    base = tree if tree.is_dir() else tree.parent
    for candidate in (base / "compile_commands.json", base / "build" / "compile_commands.json"):
        if candidate.is_file():
            return candidate.resolve()
    return None


def _arguments(entry: dict[str, object], i: int, path: Path) -> tuple[str, ...]:
    """The entry's compiler arguments; a UserError when its fields have the wrong types or its command does not split."""
    for key in ("file", "directory", "command"):
        if key in entry and not isinstance(entry[key], str):
            raise UserError(f"entry {i}: {key} = {entry[key]!r} is not a string", file=str(path))
    if "arguments" in entry:
        args = entry["arguments"]
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise UserError(f"entry {i}: arguments is not a list of strings", file=str(path))
        return tuple(args)
    try:
        return tuple(shlex.split(str(entry["command"])))
    except ValueError as exc:
        raise UserError(f"entry {i}: the command does not split into arguments ({exc})", file=str(path)) from None


def load_compdb(path: Path) -> dict[Path, CompileCommand]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise UserError(f"not valid JSON: {exc.msg}", file=str(path), line=exc.lineno) from None
    except (OSError, UnicodeDecodeError, RecursionError) as exc:
        raise UserError(f"cannot read: {exc}", file=str(path)) from None
    if not isinstance(raw, list):
        raise UserError("expected a JSON array of compile commands", file=str(path), line=1)
    out: dict[Path, CompileCommand] = {}
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or "file" not in entry or ("command" not in entry and "arguments" not in entry):
            raise UserError(f"entry {i} lacks 'file' and 'command' or 'arguments'", file=str(path))
        args = _arguments(entry, i, path)
        directory = Path(entry.get("directory", "."))
        if not directory.is_absolute():
            directory = (path.parent / directory).resolve()
        file = Path(entry["file"])
        file = (directory / file).resolve() if not file.is_absolute() else file.resolve()
        out[file] = CompileCommand(file=file, directory=directory, args=args)
    return out
