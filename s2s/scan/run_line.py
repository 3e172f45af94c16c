"""The command line of an application's default run, for one that exits unless given arguments.

Such an application's values come from its arguments, so "the values of a run without arguments" would describe a
run that never launches anything. Its authors usually say how to run it: a Makefile's `run` target
(`$(LAUNCHER) ./$(program) 10000 200`), a run script (`run.sh`), or a README's command line. The first of those
found, in that order, near the application's sources is its default run; none found leaves the values FILL-IN.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from s2s.base.treefiles import read_regular

from .build_flags import NAMES, expand, read_makefile

_STOP = {";", "&&", "||", "|", "&", ">", ">>", "<", "2>", "2>&1", ")"}
_READMES = ("README", "README.md", "README.txt", "README.rst", "readme.md", "Readme.md")


@dataclass(frozen=True)
class RunLine:
    args: tuple[str, ...]  # argv[1:]
    where: str  # file:line it was read from, relative to the tree
    text: str  # the command line as read (variables expanded)


def _command(line: str, programs: set[str]) -> tuple[str, ...] | None:
    """The arguments after the program in a shell command line (`mpirun -n 1 ./main 64 2 > log`: ('64', '2')): the
    program is a `./name` (or a name the Makefile builds); None when the line runs no program or cannot be split."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        tokens = list(lex)
    except ValueError:
        return None
    for i, tok in enumerate(tokens):
        if tok in _STOP:
            return None
        name = tok[2:] if tok.startswith("./") else tok
        if (tok.startswith("./") and not tok.endswith((".sh", ".py"))) or name in programs:
            args: list[str] = []
            rest = tokens[i + 1:]
            for j, arg in enumerate(rest):
                redirect = arg.isdigit() and j + 1 < len(rest) and rest[j + 1].startswith((">", "<"))  # 2>&1
                if arg in _STOP or arg.startswith((">", "<")) or redirect:
                    break
                args.append(arg)
            return tuple(args) if all("$" not in a for a in args) else None
    return None


def _rel(path: Path, tree: Path) -> str:
    return str(path.relative_to(tree)) if path.is_relative_to(tree) else str(path)


def _from_makefile(d: Path, tree: Path) -> RunLine | None:
    for name in NAMES:
        mk = d / name
        if not mk.is_file():
            continue
        env, rules = read_makefile(mk)
        programs = {t for head, _r in rules for t in expand(head, env).partition(":")[0].split() if "%" not in t}
        lines = (mk.read_text(errors="replace").splitlines())
        for head, recipe in rules:
            if "run" not in expand(head, env).partition(":")[0].split():
                continue
            for step in recipe:
                args = _command(expand(step, env), programs)  # an unset $(LAUNCHER) before the program is no word
                if args is not None:
                    at = next((n for n, text in enumerate(lines, 1) if text.strip() == step), 0)
                    return RunLine(args, f"{_rel(mk, tree)}:{at}" if at else _rel(mk, tree),
                                   " ".join(expand(step, env).replace("$?", "").split()))
    return None


def _from_text(path: Path, tree: Path, readme: bool) -> RunLine | None:
    data, _why, _st = read_regular(path)
    if data is None:
        return None
    for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        line = line.strip().strip("`").strip()
        if line.startswith("$ "):
            line = line[2:].strip()
        if line.startswith("#") or (readme and not line.startswith("./")):
            continue
        args = _command(line, set())
        if args is not None:
            return RunLine(args, f"{_rel(path, tree)}:{n}", " ".join(line.split()))
    return None


def default_run(app_dir: Path, tree: Path) -> RunLine | None:
    """The default run of the application whose sources are in app_dir: a Makefile's `run` target, then a `*.sh`
    script, then a README line starting with `./`, in app_dir and then its parents up to the tree."""
    d = app_dir
    while True:
        found = _from_makefile(d, tree)
        for script in sorted(d.glob("*.sh")) if found is None else []:
            found = found or _from_text(script, tree, readme=False)
        for name in _READMES if found is None else ():
            if (d / name).is_file():
                found = found or _from_text(d / name, tree, readme=True)
        if found is not None or d == tree or d.parent == d or not d.is_relative_to(tree):
            return found
        d = d.parent
