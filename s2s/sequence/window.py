"""A captured window of launches, as the sequence runtime (templates/sequence/capture_cuda.h.j2) wrote it.

    read_window(dump) -> Window

The runtime lists every launch of the loop's sites in the window (site, configuration, arguments: a value's bytes, or
an allocation and an offset into it) and dumps each allocation the window touches before its first use and after the
window's last launch. Allocations are numbered in the order the window first touched them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from s2s.base.errors import UserError


@dataclass(frozen=True)
class Arg:
    kind: str  # "value" | "ptr" | "null" | "foreign" (a pointer into no device allocation: host memory, a symbol)
    size: int = 0  # bytes of a value; element size of a pointer
    hex: str = ""  # a value's bytes
    buf: int = -1  # a pointer's allocation
    offset: int = 0  # a pointer's byte offset into it
    type: str = ""  # a pointer's element type as the host compiler spells it, blanks as _ (unsigned_int)

    @property
    def key(self) -> tuple[str, int, str, int, int]:
        """What the argument passes: equal keys, equal arguments."""
        return (self.kind, self.size, self.hex, self.buf, self.offset)


@dataclass(frozen=True)
class Launch:
    ordinal: int  # 1-based within the window
    site: str  # FILE:LINE
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shmem: int
    stream: int
    args: tuple[Arg, ...]
    targs: tuple[str, ...] = ()  # the template arguments the site names, as the instance that ran names them


@dataclass(frozen=True)
class Buffer:
    id: int
    base: int
    bytes: int
    kind: str  # "device" | "managed"


@dataclass(frozen=True)
class Window:
    dump: Path
    launches: tuple[Launch, ...]
    buffers: tuple[Buffer, ...]
    whole_run: bool = False  # the window is one whole run of the loop, its first launch to the loop's end

    def element_type(self, buf: int) -> str:
        """The element type the window's launches first read `buf` as ("" when only seen as void*)."""
        for la in self.launches:
            for a in la.args:
                if a.kind == "ptr" and a.buf == buf and a.type not in {"", "void", "?"}:
                    return a.type
        return ""


def _arg(words: list[str], where: str) -> Arg:
    kind = words[2]
    if kind == "value" and len(words) == 5:
        return Arg("value", size=int(words[3]), hex=words[4])
    if kind == "ptr" and len(words) == 7:
        return Arg("ptr", buf=int(words[3]), offset=int(words[4]), size=int(words[5]), type=words[6])
    if kind in {"null", "foreign"}:
        return Arg(kind, size=int(words[3]) if len(words) > 3 else 0)
    raise ValueError(f"{where}: unknown argument line")


def _launch(words: list[str], args: tuple[Arg, ...]) -> Launch:
    """`launch ORD SITE GX GY GZ BX BY BZ SHMEM STREAM` (the site may hold blanks) and its arguments."""
    g = [int(w) for w in words[-8:]]
    return Launch(int(words[1]), " ".join(words[2:-8]), (g[0], g[1], g[2]), (g[3], g[4], g[5]), g[6], g[7], args)


def read_window(dump: Path) -> Window:
    """The window in `dump`; a window the application did not finish, or files the runtime did not write, are one line."""
    dump = Path(dump)
    status = (dump / "status.txt").read_text().split() if (dump / "status.txt").is_file() else []
    if not status or status[0] != "done":
        seen = status[status.index("launches_seen") + 1] if "launches_seen" in status else "no"
        raise UserError(f"sequence capture: the window was not completed ({seen} launches of the loop's sites seen)",
                        file=str(dump / "status.txt"), hint="a smaller --window, or check that the run command runs the loop")
    buffers: list[Buffer] = []
    for n, line in enumerate((dump / "buffers.txt").read_text().splitlines(), 1):
        words = line.split()
        if words and words[0] == "error":
            raise UserError(f"sequence capture: {' '.join(words[1:])}", file=str(dump / "buffers.txt"), line=n)
        if len(words) == 5 and words[0] == "buffer":
            buffers.append(Buffer(int(words[1]), int(words[2]), int(words[3]), words[4]))
    launches: list[Launch] = []
    path = dump / "launches.txt"
    for n, line in enumerate(path.read_text().splitlines(), 1):
        words = line.split()
        try:
            if words and words[0] == "launch" and len(words) >= 11:
                launches.append(_launch(words, ()))
            elif words and words[0] == "targs" and launches and not launches[-1].args:
                launches[-1] = replace(launches[-1], targs=tuple(line.strip()[len("targs"):].strip().split("|")))
            elif words and words[0] == "arg" and launches and int(words[1]) == len(launches[-1].args):
                last = launches[-1]
                launches[-1] = replace(last, args=last.args + (_arg(words, f"{path}:{n}"),))
            elif words:
                raise ValueError("unexpected line")
        except ValueError:
            raise UserError("sequence capture: a line the runtime did not write", file=str(path), line=n) from None
    if not launches:
        raise UserError("sequence capture: the window holds no launch", file=str(path))
    whole = "ended" in status and status[status.index("ended") + 1:status.index("ended") + 2] == ["run"]
    return Window(dump=dump, launches=tuple(launches), buffers=tuple(buffers), whole_run=whole)
