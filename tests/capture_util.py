"""The capture's record of an application's first launch, on a machine without a GPU: the instrumented copy is built
with nvcc and run here (the CUDA calls fail, cudaMalloc's pointers stay null, and the record of launch 1 is still
written, with each argument's kind, element size and type)."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from s2s.capture.collect import Record, read_record
from s2s.capture.instrument import instrument
from s2s.extract.mep_writer import make_mep


def first_record(app: Path, kernel: str, tmp_path: Path) -> tuple[Path, Any, Record]:
    """(the MEP extracted for `kernel` into tmp_path/mep, its manifest, the record of launch 1) of `app`, whose
    Makefile builds ./app."""
    mep, m, ex = make_mep(str(app), kernel, str(tmp_path / "mep"))
    ins = instrument(app, tmp_path / "work", m, list(ex.launches))
    proc = subprocess.run(["make"], cwd=ins.root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    dump = tmp_path / "dump"
    subprocess.run([str(ins.root / "app")], cwd=ins.root, capture_output=True, text=True, timeout=60,
                   env={"S2S_CAPTURE_DIR": str(dump), "PATH": "/usr/bin:/bin"})
    return Path(mep), m, read_record(dump / "launch1" / "record.txt")
