"""`s2s capture ... --into MEP`: attach a real run's data to an MEP that already exists (and may already be
optimized), so that its variants can be checked again on the application's own data (`s2s verify`).

Only the same kernel, with the text it had when the MEP was extracted, may be captured into it: the
variants in the history were verified against that text. The MEP's history.sqlite, variants/ and kernel
file are left as they are; capture/ is written next to the old one and swapped in, mep.toml is replaced
atomically, so a failed capture leaves the MEP untouched.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from s2s.base.errors import UserError
from s2s.mep.manifest import Manifest, save

from .collect import Collected, collect

_STAGING = (".capture-new-", ".capture-old-")


def check_same_kernel(mep: Path, held: Manifest, fresh: Manifest) -> None:
    """Refuse a capture of another kernel, or of a kernel whose text changed since `held` was extracted."""
    where = str(mep / "mep.toml")
    old_file, new_file = held.origin.get("file"), fresh.origin.get("file")
    if fresh.kernel != held.kernel or old_file != new_file:
        raise UserError(f"--into {mep}: that MEP holds {held.kernel} from {old_file}, not {fresh.kernel} from {new_file}",
                        file=where, hint="capture into the MEP of this kernel, or into a new one with -o")
    if fresh.origin.get("sha256") != held.origin.get("sha256"):
        raise UserError(f"--into {mep}: {held.kernel} in {old_file} changed since the MEP was extracted (sha256 differs); "
                        "its variants were verified against the old text", file=where,
                        hint="extract and optimize the kernel again, or capture into a new MEP with -o")


def attach(dump: Path, mep: Path, held: Manifest, *, want: str, run_cmd: str, build_cmd: str) -> Collected:
    """Write the dump's data as `mep`'s capture/ and its manifest with the captured sizes, scalars and launch."""
    for stale in mep.iterdir():  # left by a capture killed while it swapped
        if stale.is_dir() and stale.name.startswith(_STAGING):
            shutil.rmtree(stale, ignore_errors=True)
    new = Path(tempfile.mkdtemp(prefix=_STAGING[0], dir=mep))
    old = mep / (_STAGING[1] + new.name.removeprefix(_STAGING[0]))
    cap = mep / "capture"
    try:
        got = collect(dump, mep, held, want=want, run_cmd=run_cmd, build_cmd=build_cmd, dest=new)
        had = cap.exists()
        if had:
            os.replace(cap, old)
        swapped = False
        try:
            os.replace(new, cap)
            swapped = True
            save(got.manifest, mep)
        except BaseException:
            if swapped:
                os.replace(cap, new)
            if had:
                os.replace(old, cap)
            raise
    finally:
        shutil.rmtree(new, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return got
