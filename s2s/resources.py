"""Data shipped with the package: tree-sitter queries, Jinja templates, the HIP shim.

In a source checkout and in an editable install they live at the top of the repository
(`grammars/`, `templates/`); in a wheel they are installed as the packages `s2s.grammars` and
`s2s.templates`. Both are found the same way through importlib.
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path


def _dir(package: str, top: str) -> Path:
    here = Path(__file__).resolve().parent
    checkout = here.parent / top
    if checkout.is_dir():
        return checkout
    return Path(str(resources.files(package)))


def grammars_dir() -> Path:
    return _dir("s2s.grammars", "grammars")


def templates_dir() -> Path:
    return _dir("s2s.templates", "templates")


def read_grammar_query(name: str) -> str:
    return (grammars_dir() / f"{name}.scm").read_text(encoding="utf-8")
