"""Reading and writing .npy files of one-dimensional arrays without numpy (the CUDA path may lack it).

The format (NEP 1): the magic b"\\x93NUMPY", a version, a little-endian header length, a Python-literal
header dict {'descr': ..., 'fortran_order': False, 'shape': (n,)}, padded so the data start on a
64-byte boundary, then the raw bytes.
"""
from __future__ import annotations

import ast
import struct
from pathlib import Path
from typing import Any

MAGIC = b"\x93NUMPY"

# C type names -> numpy descr
DESCR = {
    "float": "<f4", "double": "<f8", "half": "<f2", "__half": "<f2", "char": "|i1", "signed char": "|i1",
    "unsigned char": "|u1", "uchar": "|u1", "short": "<i2", "unsigned short": "<u2", "ushort": "<u2", "int": "<i4",
    "unsigned int": "<u4", "unsigned": "<u4", "uint": "<u4", "long": "<i8", "unsigned long": "<u8", "ulong": "<u8",
    "long long": "<i8", "unsigned long long": "<u8", "size_t": "<u8", "int8_t": "|i1", "uint8_t": "|u1",
    "int16_t": "<i2", "uint16_t": "<u2", "int32_t": "<i4", "uint32_t": "<u4", "int64_t": "<i8", "uint64_t": "<u8",
    "bool": "|b1",
}


def descr_of(elem: str, itemsize: int) -> str:
    """The numpy descr for an element type: a primitive, or raw bytes (|V<n>) for structs and vectors."""
    d = DESCR.get(" ".join(elem.replace("const", " ").split()))
    if d is not None and int(d[2:]) == itemsize:
        return d
    return f"|V{itemsize}"


def npy_header(descr: str, count: int) -> bytes:
    """The bytes before the data of a one-dimensional .npy file of `count` elements (version 1.0)."""
    header = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': ({int(count)},), }}"
    pad = 64 - (len(MAGIC) + 2 + 2 + len(header) + 1) % 64
    text = (header + " " * (pad % 64) + "\n").encode("latin1")
    return MAGIC + b"\x01\x00" + struct.pack("<H", len(text)) + text


def write_npy(path: Path, data: bytes, descr: str, count: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(npy_header(descr, count))
        fh.write(data)


CHUNK = 8 << 20  # bytes a streamed copy holds at once


def copy_to_npy(src: Path, nbytes: int, path: Path, descr: str, count: int, digest: Any = None) -> None:
    """The first `nbytes` of the raw file `src` as the .npy file `path`, streamed (a buffer of gigabytes is never held
    in memory), each chunk also fed to `digest` (a hashlib object) where given. A shorter `src` is an OSError."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(src, "rb") as fi, open(path, "wb") as fo:
        fo.write(npy_header(descr, count))
        left = nbytes
        while left > 0:
            chunk = fi.read(min(CHUNK, left))
            if not chunk:
                raise OSError(f"{src}: holds {nbytes - left} bytes, {nbytes} expected")
            if digest is not None:
                digest.update(chunk)
            fo.write(chunk)
            left -= len(chunk)


def same_bytes(a: Path, b: Path) -> bool:
    """Whether two files hold the same bytes, compared in chunks."""
    if a.stat().st_size != b.stat().st_size:
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(CHUNK), fb.read(CHUNK)
            if x != y:
                return False
            if not x:
                return True


def read_npy(path: Path) -> tuple[bytes, str, int]:
    """(raw bytes, descr, element count) of a one-dimensional .npy file."""
    raw = Path(path).read_bytes()
    if not raw.startswith(MAGIC):
        raise ValueError(f"{path}: not a .npy file")
    major = raw[6]
    if major == 1:
        (hlen,), start = struct.unpack("<H", raw[8:10]), 10
    else:
        (hlen,), start = struct.unpack("<I", raw[8:12]), 12
    header = ast.literal_eval(raw[start:start + hlen].decode("latin1"))
    shape = header.get("shape", ())
    count = 1
    for s in shape:
        count *= int(s)
    return raw[start + hlen:], str(header.get("descr", "")), count
