"""Data shipped with the package: tree-sitter queries, Jinja templates (and their rendering), the HIP shim.

In a source checkout and in an editable install they live at the top of the repository
(`grammars/`, `templates/`); in a wheel they are installed as the packages `s2s.grammars` and
`s2s.templates`. Both are found the same way through importlib.
"""
from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Any


def _dir(package: str, top: str) -> Path:
    checkout = Path(__file__).resolve().parents[2] / top
    if checkout.is_dir():
        return checkout
    return Path(str(resources.files(package)))


def grammars_dir() -> Path:
    return _dir("s2s.grammars", "grammars")


def templates_dir() -> Path:
    return _dir("s2s.templates", "templates")


def read_grammar_query(name: str) -> str:
    return (grammars_dir() / f"{name}.scm").read_text(encoding="utf-8")


@functools.lru_cache(maxsize=2)
def _jinja(code: bool) -> Any:
    import jinja2

    if code:  # generated sources: block tags leave no blank lines behind
        return jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), trim_blocks=True, lstrip_blocks=True,
                                  keep_trailing_newline=True, undefined=jinja2.StrictUndefined, autoescape=False)
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir() / "prompts")), autoescape=False,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def render(template: str, **ctx: Any) -> str:
    """A template of `templates/` (harnesses, Makefiles, capture runtimes) with `ctx`; an unknown name is an error."""
    return str(_jinja(True).get_template(template).render(**ctx))


def render_prompt(template: str, **ctx: Any) -> str:
    """A prompt of `templates/prompts/`, its whitespace as written."""
    return str(_jinja(False).get_template(template).render(**ctx))
