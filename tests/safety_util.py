"""Helpers of the safety probes: a tree's fingerprint (files and symlinks), hostile MEPs, the CLI in-process."""
from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from conftest import SAMPLES

from s2s.mep.history import History


def fingerprint(root: Path) -> dict[str, str]:
    """Every file (its bytes and mode), symlink (its target text) and directory under `root`."""
    out: dict[str, str] = {}
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        for name in dirs + files:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            elif p.is_file():
                out[rel] = f"file:{p.stat().st_mode:o}:" + hashlib.sha256(p.read_bytes()).hexdigest()
            else:
                out[rel] = "dir"
    return out


def copy_sample(dest: Path, name: str = "ocl_solver") -> Path:
    shutil.copytree(SAMPLES / name, dest, ignore=shutil.ignore_patterns("build", "ocl_solver"))
    return dest


def one_line_exit_2(rc: int, err: str) -> None:
    """The contract for bad input: exit 2, one line starting with `error:`, no traceback."""
    assert rc == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error:") and "Traceback" not in err, err


def cli_inproc(args: list[str], capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    from s2s.cli.main import main

    try:
        rc = main(args)
    except SystemExit as exc:  # argparse
        rc = int(exc.code or 0)
    out = capsys.readouterr()
    return rc, out.out, out.err


def fake_win(mep: Path, kernel_file: str = "kernel.cl", marker: str = "/* s2s-test winner */") -> str:
    """A verified variant in the history: the reference's text with a comment inside the kernel body."""
    src = (mep / kernel_file).read_text()
    brace = src.index("{", src.index("__kernel"))
    text = src[:brace + 1] + marker + src[brace + 1:]
    vid = "vtest00001"
    vdir = mep / "variants" / vid
    vdir.mkdir(parents=True, exist_ok=True)
    (vdir / kernel_file).write_text(text)
    hist = History(mep / "history.sqlite")
    hist.add(vid, 1, "pass:test", None, "sha", None)
    hist.finish(vid, "ok", {"speedup": 1.5})
    hist.close()
    return vid


PY = sys.executable


def matmul_mep(base: Path) -> tuple[Path, Path]:
    """A copy of the OpenCL sample in BASE/app and the MEP of its `matmul` in BASE/mep (made once per test module)."""
    from s2s.extract.mep_writer import make_mep

    tree = copy_sample(base / "app")
    make_mep(str(tree), "matmul", str(base / "mep"))
    return tree, base / "mep"


def private_copy(golden: tuple[Path, Path], dest: Path) -> tuple[Path, Path]:
    """A private application tree and an MEP of its `matmul` whose origin is that tree, under DEST."""
    tree, mep = golden
    shutil.copytree(tree, dest / "app", symlinks=True)
    shutil.copytree(mep, dest / "mep", symlinks=True)
    toml = dest / "mep" / "mep.toml"
    toml.write_text(toml.read_text().replace(f'tree = "{tree}"', f'tree = "{dest / "app"}"'))
    return dest / "app", dest / "mep"


def gone(pid: int) -> bool:
    """No live process has `pid` (a zombie is dead: it runs nothing more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2:].startswith(("Z", "X"))
