"""Whether two output files of an application hold the same numbers within a tolerance (a --check-cmd for s2s auto).

    python3 bench/numbers_close.py BEFORE AFTER [--rtol R] [--atol A] [--f32 [--skip BYTES]]

Text files: every number in order; --f32: raw little-endian float32 after BYTES of header. Exit 0 when every pair
is within atol + rtol * max(|a|, |b|) (NaN only equal to NaN), 1 otherwise, with the first difference printed.
"""
from __future__ import annotations

import argparse
import math
import re
import struct
import sys

_NUM = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf", re.I)


def read(path: str, f32: bool, skip: int) -> list[float]:
    data = open(path, "rb").read()
    if f32:
        body = data[skip:]
        return list(struct.unpack(f"<{len(body) // 4}f", body[: len(body) // 4 * 4]))
    return [float(m.group(0)) for m in _NUM.finditer(data.decode("utf-8", "replace"))]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--rtol", type=float, default=1e-5)
    ap.add_argument("--atol", type=float, default=1e-6)
    ap.add_argument("--f32", action="store_true")
    ap.add_argument("--skip", type=int, default=0)
    a = ap.parse_args()
    x, y = read(a.before, a.f32, a.skip), read(a.after, a.f32, a.skip)
    if len(x) != len(y):
        print(f"{len(x)} numbers before, {len(y)} after")
        return 1
    for k, (p, q) in enumerate(zip(x, y)):
        if math.isnan(p) or math.isnan(q):
            if math.isnan(p) != math.isnan(q):
                print(f"number {k}: {p} before, {q} after")
                return 1
        elif abs(p - q) > a.atol + a.rtol * max(abs(p), abs(q)):
            print(f"number {k}: {p!r} before, {q!r} after")
            return 1
    print(f"{len(x)} numbers equal within rtol {a.rtol:g}, atol {a.atol:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
