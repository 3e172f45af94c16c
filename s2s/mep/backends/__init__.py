"""Backends: one class per GPU programming model, found by the manifest's `backend` in a table."""
from __future__ import annotations

from pathlib import Path

from s2s.base.errors import UserError
from s2s.mep.manifest import Manifest

from .base import Backend, BuildResult, Target
from .cuda import CudaBackend
from .hip import HipBackend
from .opencl import OpenCLBackend

BACKENDS: dict[str, type[Backend]] = {
    CudaBackend.name: CudaBackend,
    HipBackend.name: HipBackend,
    OpenCLBackend.name: OpenCLBackend,
}


def get_backend(name: str, source: Path | None = None) -> Backend:
    """The backend `name` names; `source`: the mep.toml it comes from, named with the line when it is unknown."""
    try:
        return BACKENDS[name]()
    except KeyError:
        from s2s.mep.manifest import line_of

        raise UserError(f"backend = {name!r}: one of {', '.join(BACKENDS)}", file=str(source) if source else None,
                        line=line_of(source, "backend =") if source else None) from None


def write_mep_files(mep_dir: Path, manifest: Manifest, *, readme: bool = True) -> list[Path]:
    """The generated files of an MEP: the harness, the Makefile and (with `readme`) README.md.
    `s2s run` regenerates the harness and the Makefile from mep.toml before every build."""
    return get_backend(manifest.backend).write_files(Path(mep_dir), manifest, readme=readme)


__all__ = ["BACKENDS", "Backend", "BuildResult", "Target", "get_backend", "write_mep_files"]
