"""libclang as the semantic oracle (placeholder until the clang path lands)."""
from __future__ import annotations


class ClangUnavailable(Exception):
    pass


def refine_with_clang(*args, **kwargs):  # type: ignore[no-untyped-def]
    raise ClangUnavailable("libclang path not available")
