"""The package's layout is its architecture: one folder per stage over a language and a base layer.

Imports only go down the layers and never form a cycle; this test reads every import (module level and
inside functions) with `ast` and fails on either.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "s2s"

# Low to high. A module may import from its own room or any room below it.
LAYERS: tuple[str, ...] = (
    "base",         # errors, atomic files, package data, plain records, the device lock
    "lang",         # parsing, C expressions, kernel facts, byte-range edits, CUDA API drift
    "scan",         # stage 1: the tree read, kernels and launch sites found, hotspots ranked
    "mep",          # the MEP: manifest, history, backends that build, run, verify and time it
    "extract",      # stage 2: a kernel's closure and sizes pulled into an MEP
    "capture",      # a real run's data recorded into an MEP, and variants held to it
    "sequence",     # a host loop's window of launches captured into a sequence MEP, replayed original and as a graph
    "passes",       # one rewrite pass per module, a folder per computation (family), shared analysis in passes/common
    "optimize",     # stage 3: proposers, the pass registry, verified rounds, patterns, the report
    "reintegrate",  # stage 4: the winner spliced back into the application
    "auto",         # the whole pipeline in one command
    "cli",          # the command line
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If) and _type_checking(block.test)
                   for stmt in block.body for n in ast.walk(stmt)}  # `if TYPE_CHECKING:` imports never run
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "s2s":
                continue
            modules = {f"{target}.{a.name}" for a in node.names if _exists(f"{target}.{a.name}")}
            out |= modules or {target}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "s2s"}
    return out


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _exists(module: str) -> bool:
    rel = Path(*module.split(".")[1:])
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel / "__init__.py").is_file()


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "__main__" else None  # the root package holds only __version__


def _graph() -> dict[str, set[str]]:
    return {_module_name(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_room_is_a_listed_layer() -> None:
    rooms = {_room(m) for m in _graph()} - {None}
    assert rooms == set(LAYERS), f"not in LAYERS: {sorted(rooms - set(LAYERS))}; gone: {sorted(set(LAYERS) - rooms)}"


def test_no_import_runs_up_a_layer() -> None:
    upward = []
    for module, targets in _graph().items():
        here = _room(module)
        for target in targets:
            there = _room(target)
            if here and there and LAYERS.index(there) > LAYERS.index(here):
                upward.append(f"{module} -> {target}")
    assert not upward, "imports up the layers:\n" + "\n".join(sorted(upward))


def test_no_import_cycle() -> None:
    graph = _graph()

    def known(target: str) -> str | None:  # `from s2s.mep.backends.base import x` names a module, `x` does not
        while target and target not in graph:
            target = target.rpartition(".")[0]
        return target or None

    edges = {m: {t for t in (known(x) for x in ts) if t and t != m} for m, ts in graph.items()}
    # a package's __init__ importing its own submodules is how packages work, not a cycle
    for m in edges:
        edges[m] = {t for t in edges[m] if not (t.startswith(m + ".") and m in graph)}
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                cycles.append(" -> ".join(stack[stack.index(t):] + [t]))
            elif t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def _imported_names(path: Path) -> list[tuple[str, str]]:
    """(module, name) of every `from MODULE import NAME` in the file, relative imports resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - (node.level - 1)] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            out += [(target, a.name) for a in node.names]
    return out


def test_no_pass_takes_another_modules_private_names() -> None:
    """What modules of s2s/passes share is public (in a family's helper module or in passes/common/): none imports an
    underscore name of another."""
    taken = [f"{path.relative_to(PACKAGE)}: {module}.{name}" for path in sorted((PACKAGE / "passes").rglob("*.py"))
             for module, name in _imported_names(path) if module.startswith("s2s.passes") and name.startswith("_")]
    assert not taken, "private names imported:\n" + "\n".join(taken)


def test_a_pass_family_imports_only_itself_and_common() -> None:
    """s2s/passes/FAMILY/ takes from its own folder and from passes/common/ (what several families read), never from
    another family: each family's analysis stays beside its passes."""
    passes = PACKAGE / "passes"
    families = {p.name for p in passes.iterdir() if p.is_dir() and (p / "__init__.py").is_file()} - {"common"}
    assert families, "no family folder under s2s/passes"
    crossing = []
    for path in sorted(passes.rglob("*.py")):
        own = path.relative_to(passes).parts[0] if len(path.relative_to(passes).parts) > 1 else ""
        for module in _imports(path):
            parts = module.split(".")
            other = parts[2] if module.startswith("s2s.passes.") and len(parts) > 2 and parts[2] in families else ""
            if other and other != own:
                crossing.append(f"{path.relative_to(PACKAGE)} -> {module}")
    assert not crossing, "imports across pass families:\n" + "\n".join(crossing)


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["s2s", "s2s.cli"])
def test_every_subcommand_runs_as_a_module(entry: str) -> None:
    from s2s.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    for name in sub.choices:  # type: ignore[union-attr]
        out = subprocess.run([sys.executable, "-m", entry, name, "--help"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0 and f"usage: s2s {name}" in out.stdout.replace(f"-m {entry}", "s2s"), (name, out.stderr)
