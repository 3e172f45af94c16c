"""Source files are bytes, in whatever encoding their authors used.

A file that is valid UTF-8 is read as UTF-8. Any other file (a Latin-1 `©` in a copyright line, a Windows-1252 quote
in a comment) is read as Latin-1, which maps each byte to one character and back: its comments and strings may show
other characters in an MEP (a Windows-1252 quote reads as a C1 control character) but every byte survives the trip
through extraction, optimization and reintegration. The encoding is always decided on the whole file, never on a
piece of it: a piece of a Latin-1 file can happen to be valid UTF-8.

Text that s2s writes (MEP files, variants) is UTF-8; `recode` turns such text back into the bytes of the file it
goes into.
"""
from __future__ import annotations

import codecs

UTF8 = "utf-8"
LATIN1 = "latin-1"


def _beyond_latin1(exc: UnicodeError) -> tuple[bytes, int]:
    """Encoding error handler for Latin-1: a character beyond U+00FF (new text a variant brought) is written in UTF-8;
    an escaped byte (surrogateescape, U+DC80..U+DCFF) is written as that byte."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    out = bytearray()
    for ch in exc.object[exc.start:exc.end]:
        code = ord(ch)
        out += bytes([code - 0xDC00]) if 0xDC80 <= code <= 0xDCFF else ch.encode(UTF8, "surrogatepass")
    return bytes(out), exc.end


codecs.register_error("s2s-beyond-latin1", _beyond_latin1)


def is_utf8(data: bytes) -> bool:
    try:
        data.decode(UTF8)
    except UnicodeDecodeError:
        return False
    return True


def encoding_of(data: bytes) -> str:
    """"utf-8" for a file that is valid UTF-8 (ASCII included), else "latin-1"."""
    return UTF8 if data.isascii() or is_utf8(data) else LATIN1


def decode(data: bytes, encoding: str) -> str:
    """The text of `data`, a piece of a file of `encoding` (`encoding_of` the whole file): exact, every byte kept."""
    return data.decode(encoding, "surrogateescape" if encoding == UTF8 else "strict")


def encode(text: str, encoding: str) -> bytes:
    """The bytes of `text` in a file of `encoding`: the inverse of `decode`; in a Latin-1 file, characters Latin-1
    cannot hold are written in UTF-8 (only text s2s or a variant added can hold them)."""
    if encoding == UTF8:
        return text.encode(UTF8, "surrogateescape")
    return text.encode(LATIN1, "s2s-beyond-latin1")


def recode(utf8: bytes, encoding: str) -> bytes:
    """Bytes of a UTF-8 file s2s wrote (an MEP's kernel, a variant) as they go into a file of `encoding`."""
    if encoding == UTF8:
        return utf8
    return encode(utf8.decode(UTF8, "surrogateescape"), encoding)
