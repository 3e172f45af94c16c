"""Reading and writing .npy files of one-dimensional arrays without numpy (the CUDA path may lack it).

The format (NEP 1): the magic b"\\x93NUMPY", a version, a little-endian header length, a Python-literal
header dict {'descr': ..., 'fortran_order': False, 'shape': (n,)}, padded so the data start on a
64-byte boundary, then the raw bytes.
"""
from __future__ import annotations

import ast
import struct
from pathlib import Path

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


def write_npy(path: Path, data: bytes, descr: str, count: int) -> None:
    header = f"{{'descr': {descr!r}, 'fortran_order': False, 'shape': ({int(count)},), }}"
    pad = 64 - (len(MAGIC) + 2 + 2 + len(header) + 1) % 64
    text = (header + " " * (pad % 64) + "\n").encode("latin1")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(MAGIC + b"\x01\x00" + struct.pack("<H", len(text)) + text)
        fh.write(data)


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
