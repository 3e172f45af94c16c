"""Write small MEPs by hand for the run/harness tests: a kernel source string plus a Manifest."""
from __future__ import annotations

import json
from pathlib import Path

from s2s.mep.manifest import LaunchSpec, Manifest, ParamSpec, StructSpec, SymbolSpec, save


def make_mep(root: Path, kernel_src: str, manifest: Manifest, variants: dict[str, str | tuple[str, dict]] | None = None) -> Path:
    """root/mep.toml, root/<kernel_file>, root/variants/<id>/<kernel_file> (+ variant.json when given a dict)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / manifest.kernel_file).write_text(kernel_src)
    save(manifest, root)
    for vid, spec in (variants or {}).items():
        add_variant(root, manifest, vid, spec)
    return root


def add_variant(root: Path, manifest: Manifest, vid: str, spec: str | tuple[str, dict]) -> None:
    src, launch = (spec, None) if isinstance(spec, str) else spec
    vdir = root / "variants" / vid
    vdir.mkdir(parents=True, exist_ok=True)
    (vdir / manifest.kernel_file).write_text(src)
    if launch:
        (vdir / "variant.json").write_text(json.dumps(launch))


def manifest(kernel: str, backend: str, kernel_file: str, params: list[ParamSpec], grid: tuple[int, int, int],
             block: tuple[int, int, int], **kw: object) -> Manifest:
    return Manifest(kernel=kernel, backend=backend, kernel_file=kernel_file, origin={"file": "test"}, params=params,
                    launch=LaunchSpec(grid=grid, block=block, shared_mem=int(kw.pop("shared_mem", 0))),  # type: ignore[call-overload]
                    **kw)  # type: ignore[arg-type]


__all__ = ["make_mep", "add_variant", "manifest", "ParamSpec", "StructSpec", "SymbolSpec", "LaunchSpec", "Manifest"]


def with_noise_band(tree: Path, kernel: str, out: Path) -> Path:
    """The kernel's MEP extracted into `out`, its noise band (the original timed against itself, three runs) measured
    once and kept in a history that holds nothing else: the optimize runs of a module start from copies of it
    instead of each timing the original again."""
    from s2s.extract.mep_writer import make_mep as extract
    from s2s.mep.evaluate import evaluate
    from s2s.mep.history import History
    from s2s.optimize.winner import noise_band

    extract(str(tree), kernel, str(out))
    history = History(out / "history.sqlite")
    try:
        assert noise_band(out, history, lambda mep, variant: evaluate(mep, variant))["runs"]
        assert history.rows() == []
    finally:
        history.close()
    return out
