"""The capture's write path on a faked dump of 2 GiB (one 256 MiB output written, a 1 GiB table and a 256 MiB vector
left unchanged by the launch): collect() into the staged MEP, then the staged MEP into its place, with the seconds,
the MEP's size and the peak memory. Run it against two checkouts to compare (no GPU needed):

    python3 bench/capture_write.py REPO SCRATCH_DIR

REPO is the checkout whose s2s is measured (its tests/fixtures/varied_fault gives the kernel), SCRATCH_DIR a directory
it creates and removes (on the file system to measure). Measured on this project's 2-core development machine,
2026-12-02, one run each: f550942 (before) collect 25.5 s, into place 14.1 s (copytree), MEP 3072 MiB, peak RSS
2090 MiB; 3183126 collect 6.0 s, into place 0.8 s (renamed), MEP 1792 MiB, peak RSS 69 MiB; a second run of
it beside other work on the machine: collect 13.9 s, into place 0.6 s. The disk's pace varies; the bytes written
(3072 -> 1792 MiB in the MEP, none a second time) and the memory do not.
"""
from __future__ import annotations

import os
import resource
import shutil
import struct
import sys
import time
from pathlib import Path

MIB = 1 << 20


def _fill(path: Path, nbytes: int, block: bytes) -> None:
    with open(path, "wb") as fh:
        for _ in range(nbytes // len(block)):
            fh.write(block)


def main(repo: Path, tmp: Path) -> str:
    sys.path.insert(0, str(repo))
    import s2s.capture as cap
    from s2s.capture.collect import collect
    from s2s.extract.mep_writer import make_mep

    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    _, m, _ex = make_mep(str(repo / "tests" / "fixtures" / "varied_fault"), "row_code", str(tmp / "staged"))
    n, table = 64 * MIB, 256 * MIB  # floats: a 256 MiB output and vector, a 1 GiB table
    d = tmp / "dump" / "launch2"
    d.mkdir(parents=True)
    (tmp / "dump" / "summary.txt").write_text("kernel row_code\nlaunches 3\n")
    block = os.urandom(MIB)
    _fill(d / "arg0.before.bin", 4 * n, block)
    _fill(d / "arg0.after.bin", 4 * n, block[::-1])
    for i, count in ((1, table), (2, n)):
        _fill(d / f"arg{i}.before.bin", 4 * count, block)
        (d / f"arg{i}.after.same").write_bytes(b"")
    (d / "record.txt").write_text(
        "launch 2\nsite main.cu:33\nkernel row_code\nnargs 4\ngrid 1 1 1\nblock 256 1 1\nshared_mem 0\nstream 0\n"
        f"arg 0 pointer 4 {4 * n} 0 139800000000000 device cuMemGetAddressRange\n"
        f"arg 1 pointer 4 {4 * table} 0 139800100000000 device cuMemGetAddressRange\n"
        f"arg 2 pointer 4 {4 * n} 0 139800200000000 device cuMemGetAddressRange\n"
        f"arg 3 value 4 {struct.pack('<i', 1024).hex()}\ndone\n")
    os.sync()
    t = time.monotonic()
    collect(tmp / "dump", tmp / "staged", m, want="--launch 2", run_cmd="./row_code", build_cmd="make")
    t_collect = time.monotonic() - t
    out = tmp / "mep"
    t = time.monotonic()
    if hasattr(cap, "move_into"):
        cap.move_into(tmp / "staged", out)
        how = "renamed"
    else:  # an older checkout
        shutil.copytree(tmp / "staged", out, dirs_exist_ok=True)
        how = "copytree"
    os.sync()
    t_place = time.monotonic() - t
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    shutil.rmtree(tmp)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    return f"collect {t_collect:.1f} s, into place {t_place:.1f} s ({how}), MEP {size // MIB} MiB, peak RSS {rss} MiB"


if __name__ == "__main__":
    print(main(Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()))
