"""GPU profile CSVs (Nsight Systems, Nsight Compute, rocprofv3) as records, and matching them to source kernels.

Accepted inputs, recognised by their header columns (never by position):

* ``nsys stats --report cuda_gpu_kern_sum --format csv`` (older: ``gpukernsum``):
  ``Name``, ``Total Time (ns)`` (or ``Total Time``), ``Instances`` (or ``Count``);
  lines before the header (``Generating SQLite file ...``) are skipped.
* ``ncu --csv --page raw``: ``Kernel Name`` and ``gpu__time_duration.sum``, a units
  row under the header, one row per launch.
* ``ncu --csv`` (details page): ``Kernel Name``, ``Metric Name``, ``Metric Unit``,
  ``Metric Value``; the ``Duration`` (or ``gpu__time_duration.sum``) row of each launch.
* ``rocprofv3 --kernel-trace --stats`` ``*_kernel_stats.csv``: ``Name``, ``Calls``,
  ``TotalDurationNs``.
"""
from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from s2s.base.errors import UserError
from s2s.lang.demangle import ANONYMOUS, normalize_profile_name, split_qualified


@dataclass(frozen=True)
class ProfileEntry:
    name: str  # as written in the file
    qualified: str  # "linalg::matvec_rows": no return type, parameters or template arguments
    template_args: str  # "float, 256" (no angle brackets); "" when not a template
    total_ns: float
    calls: int


@dataclass(frozen=True)
class Profile:
    tool: str  # "nsys" | "ncu" | "rocprof"
    path: str
    entries: tuple[ProfileEntry, ...]  # by total time, largest first


@dataclass(frozen=True)
class MatchedTime:
    total_ns: float
    calls: int
    instantiations: tuple[str, ...]  # template-argument texts seen in the profile, largest time first
    profile_names: tuple[str, ...]  # the profile names that were attributed to the kernel


@dataclass(frozen=True)
class ProfileMatch:
    by_kernel: Mapping[str, MatchedTime]  # source key -> time; kernels with no match are absent
    unmatched: tuple[str, ...]  # profile names attributed to no kernel (ambiguous ones included)
    ambiguous: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # profile name -> candidate keys


@dataclass(frozen=True)
class _Sample:
    name: str
    total_ns: float
    calls: int


_Row = tuple[int, list[str]]  # 1-based line number, cells (stripped); no cells for a blank line

ACCEPTED = (
    "nsys stats --report cuda_gpu_kern_sum --format csv (Name, Total Time (ns), Instances); "
    "ncu --csv --page raw (Kernel Name, gpu__time_duration.sum); "
    "ncu --csv details page (Kernel Name, Metric Name, Metric Unit, Metric Value); "
    "rocprofv3 --kernel-trace --stats *_kernel_stats.csv (Name, Calls, TotalDurationNs)"
)
_NOISE = re.compile(r"^==[A-Z]+==")  # ncu's ==PROF== / ==WARNING== lines
_NSYS_TOTAL = re.compile(r"total time(?: \((ns|us|ms|s)\))?")
_UNIT_NS = {
    "": 1.0, "ns": 1.0, "nsecond": 1.0, "nanosecond": 1.0,
    "us": 1e3, "usecond": 1e3, "microsecond": 1e3, "\u00b5s": 1e3,
    "ms": 1e6, "msecond": 1e6, "millisecond": 1e6,
    "s": 1e9, "second": 1e9,
}
_DURATION_METRICS = ("Duration", "gpu__time_duration.sum")


# -- reading -----------------------------------------------------------------------

def load_profile(path: str | Path) -> Profile:
    """Read a kernel-time CSV from nsys, ncu or rocprofv3; entries sorted by total time, largest first."""
    where = str(path)
    rows = _read_rows(where)
    detected = _detect(rows)
    if detected is None:
        raise _unknown_format(where, rows)
    fmt, start = detected
    parser = {"nsys": _parse_nsys, "ncu-raw": _parse_ncu_raw, "ncu-details": _parse_ncu_details,
              "rocprof": _parse_rocprof}[fmt]
    samples = parser(rows, start, where)
    if not samples:
        raise UserError("the profile lists no kernels", file=where, line=rows[start][0],
                        hint="profile a run that launches GPU kernels; only the header was found")
    return Profile(tool=fmt.split("-")[0], path=where, entries=_entries(samples))


def _read_rows(path: str) -> list[_Row]:
    try:
        text = Path(path).read_text(encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        raise UserError(f"cannot read profile: {exc.strerror or exc}", file=path,
                        hint="pass the CSV written by nsys stats, ncu --csv or rocprofv3 --stats") from None
    rows: list[_Row] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            rows.append((number, []))
        elif not _NOISE.match(line):
            rows.append((number, [cell.strip() for cell in next(csv.reader([line]))]))
    return rows


def _detect(rows: list[_Row]) -> tuple[str, int] | None:
    """The format and the index of its header row, or None."""
    for index, (_, cells) in enumerate(rows):
        fmt = _format_of(cells)
        if fmt:
            return fmt, index
    return None


def _format_of(header: list[str]) -> str | None:
    if _find(header, "Kernel Name") is not None:
        if _find(header, "gpu__time_duration.sum") is not None:
            return "ncu-raw"
        if _find(header, "Metric Name") is not None and _find(header, "Metric Value") is not None:
            return "ncu-details"
        return None
    if _find(header, "Name") is None:
        return None
    if _find(header, "TotalDurationNs") is not None and _find(header, "Calls") is not None:
        return "rocprof"
    if _nsys_total(header) is not None and _find(header, "Instances", "Count", "Calls") is not None:
        return "nsys"
    return None


def _unknown_format(path: str, rows: list[_Row]) -> UserError:
    filled = [(line, cells) for line, cells in rows if cells]
    if not filled:
        return UserError("the profile file is empty", file=path, line=1, hint=f"accepted: {ACCEPTED}")
    for line, cells in filled:
        if "does not contain" in ",".join(cells):
            return UserError(f"the profile has no kernel data: {','.join(cells)[:120]}", file=path, line=line,
                             hint="profile a run that launches GPU kernels (nsys profile --trace=cuda)")
    line, cells = next(((ln, c) for ln, c in filled if len(c) > 1), filled[0])
    seen = ", ".join(repr(c) for c in cells[:12]) + (", ..." if len(cells) > 12 else "")
    return UserError(f"not a recognised GPU profile CSV (header columns seen: {seen})", file=path, line=line,
                     hint=f"accepted: {ACCEPTED}")


# -- the formats -------------------------------------------------------------------

def _parse_nsys(rows: list[_Row], start: int, path: str) -> list[_Sample]:
    header = rows[start][1]
    name_i = _require(header, "Name")
    calls_i = _require(header, "Instances", "Count", "Calls")
    total = _nsys_total(header)
    assert total is not None  # checked by _format_of
    total_i, scale = total
    samples = []
    for line, cells in _table(rows, start):
        at = _Cells(path, line, header, cells)
        samples.append(_Sample(at.name(name_i), at.number(total_i) * scale, at.count(calls_i)))
    return samples


def _parse_rocprof(rows: list[_Row], start: int, path: str) -> list[_Sample]:
    header = rows[start][1]
    name_i, calls_i, total_i = (_require(header, c) for c in ("Name", "Calls", "TotalDurationNs"))
    samples = []
    for line, cells in _table(rows, start):
        at = _Cells(path, line, header, cells)
        samples.append(_Sample(at.name(name_i), at.number(total_i), at.count(calls_i)))
    return samples


def _parse_ncu_raw(rows: list[_Row], start: int, path: str) -> list[_Sample]:
    header = rows[start][1]
    name_i, time_i = _require(header, "Kernel Name"), _require(header, "gpu__time_duration.sum")
    id_i = _find(header, "ID")
    data = list(_table(rows, start))
    scale = 1.0  # the metric's base unit is nanoseconds when there is no units row
    if data and _is_units_row(data[0][1], id_i, time_i):
        line, cells = data.pop(0)
        scale = _Cells(path, line, header, cells).unit(time_i)
    samples = []
    for line, cells in data:
        at = _Cells(path, line, header, cells)
        samples.append(_Sample(at.name(name_i), at.number(time_i) * scale, 1))
    return samples


def _parse_ncu_details(rows: list[_Row], start: int, path: str) -> list[_Sample]:
    header = rows[start][1]
    name_i, metric_i, value_i = (_require(header, c) for c in ("Kernel Name", "Metric Name", "Metric Value"))
    unit_i, id_i, pid_i = _find(header, "Metric Unit"), _find(header, "ID"), _find(header, "Process ID")
    seen: set[tuple[str, str]] = set()
    samples = []
    for line, cells in _table(rows, start):
        at = _Cells(path, line, header, cells)
        if at.text(metric_i) not in _DURATION_METRICS:
            continue
        launch = (at.text(pid_i) if pid_i is not None else "", at.text(id_i) if id_i is not None else str(line))
        if launch in seen:
            continue  # both Duration and gpu__time_duration.sum for one launch
        seen.add(launch)
        scale = at.unit(unit_i) if unit_i is not None else 1.0
        samples.append(_Sample(at.name(name_i), at.number(value_i) * scale, 1))
    if not samples and any(cells for _, cells in _table(rows, start)):
        raise UserError("the ncu CSV has no 'Duration' metric rows", file=path, line=rows[start][0],
                        hint="profile with ncu --section SpeedOfLight --csv, or ncu --csv --page raw "
                             "--metrics gpu__time_duration.sum")
    return samples


# -- helpers -----------------------------------------------------------------------

def _table(rows: list[_Row], start: int) -> Iterator[_Row]:
    """Data rows after the header at `start`, up to the first blank line after some data."""
    started = False
    for line, cells in rows[start + 1:]:
        if not cells:
            if started:
                return
            continue
        started = True
        yield line, cells


def _find(header: list[str], *names: str) -> int | None:
    """Index of the first column called one of `names` (case-insensitive), or None."""
    keys = [h.strip().lower() for h in header]
    for name in names:
        if name.lower() in keys:
            return keys.index(name.lower())
    return None


def _require(header: list[str], *names: str) -> int:
    index = _find(header, *names)
    assert index is not None, names  # _format_of only accepts headers that have these columns
    return index


def _nsys_total(header: list[str]) -> tuple[int, float] | None:
    """Column of nsys's total time and its scale to nanoseconds."""
    for index, cell in enumerate(header):
        match = _NSYS_TOTAL.fullmatch(cell.strip().lower())
        if match:
            return index, _UNIT_NS[match.group(1) or "ns"]
    return None


def _is_units_row(cells: list[str], id_i: int | None, time_i: int) -> bool:
    """ncu's second row: empty identifying cells and a unit name where the number would be."""
    time = cells[time_i] if time_i < len(cells) else ""
    if id_i is not None and id_i < len(cells) and cells[id_i]:
        return False
    return re.fullmatch(r"[A-Za-z\u00b5/%]*", time) is not None


@dataclass(frozen=True)
class _Cells:
    """One data row, with the location needed to report a bad cell."""

    path: str
    line: int
    header: list[str]
    cells: list[str]

    def text(self, index: int) -> str:
        if index >= len(self.cells):
            raise UserError(f"the row has {len(self.cells)} columns; column '{self.header[index]}' is missing",
                            file=self.path, line=self.line, hint="the file may be truncated or hand-edited")
        return self.cells[index]

    def name(self, index: int) -> str:
        name = self.text(index)
        if not name:
            raise UserError(f"empty kernel name in column '{self.header[index]}'", file=self.path, line=self.line)
        return name

    def number(self, index: int) -> float:
        raw = self.text(index)
        try:
            value = float(raw.replace(",", "").replace("\u202f", "").replace(" ", ""))
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise UserError(f"column '{self.header[index]}': {raw!r} is not a non-negative number",
                            file=self.path, line=self.line, hint="re-export the profile as CSV without editing it")
        return value

    def count(self, index: int) -> int:
        value = self.number(index)
        if value != int(value):
            raise UserError(f"column '{self.header[index]}': {self.text(index)!r} is not a whole number",
                            file=self.path, line=self.line)
        return int(value)

    def unit(self, index: int) -> float:
        unit = self.text(index)
        if unit.lower() not in _UNIT_NS:
            raise UserError(f"column '{self.header[index]}': unknown time unit {unit!r}", file=self.path,
                            line=self.line, hint="expected nsecond, usecond, msecond or second")
        return _UNIT_NS[unit.lower()]


def _entries(samples: Iterable[_Sample]) -> tuple[ProfileEntry, ...]:
    """One entry per distinct name: times and calls summed; largest time first."""
    totals: dict[str, tuple[float, int]] = {}
    for s in samples:
        total, calls = totals.get(s.name, (0.0, 0))
        totals[s.name] = (total + s.total_ns, calls + s.calls)
    entries = [ProfileEntry(name, *normalize_profile_name(name), total_ns=total, calls=calls)
               for name, (total, calls) in totals.items()]
    return tuple(sorted(entries, key=lambda e: (-e.total_ns, e.name)))


# -- matching to source kernels ----------------------------------------------------------

def match_profile(profile: Profile, kernels: Iterable[tuple[str, str]]) -> ProfileMatch:
    """Attribute profile entries to source kernels given as ``(key, qualified name)`` pairs.

    An entry goes to the kernel with the same qualified name; failing that, to the one
    kernel whose name matches ignoring (anonymous) namespaces, preferring a kernel
    whose whole name is a suffix of the profile's.  Template instantiations of one
    kernel are summed.  Entries with no kernel, or with several equally good ones,
    are listed in ``unmatched`` (the latter also in ``ambiguous``).
    """
    sources = {key: _scope(qualified) for key, qualified in kernels}
    attributed: dict[str, list[ProfileEntry]] = {}
    unmatched: list[str] = []
    ambiguous: dict[str, tuple[str, ...]] = {}
    for entry in profile.entries:
        keys = _candidates(_scope(entry.qualified), sources)
        if len(keys) == 1:
            attributed.setdefault(keys[0], []).append(entry)
            continue
        unmatched.append(entry.name)
        if keys:
            ambiguous[entry.name] = tuple(keys)
    by_kernel = {key: _merge(entries) for key, entries in attributed.items()}
    return ProfileMatch(by_kernel=by_kernel, unmatched=tuple(unmatched), ambiguous=ambiguous)


def _scope(qualified: str) -> tuple[str, ...]:
    name, _ = normalize_profile_name(qualified)
    return split_qualified(name)


def _candidates(wanted: tuple[str, ...], sources: Mapping[str, tuple[str, ...]]) -> list[str]:
    exact = [key for key, parts in sources.items() if parts == wanted]
    if exact or not wanted:
        return exact
    named = _named(wanted)
    ranks = {key: _suffix_rank(named, _named(parts)) for key, parts in sources.items()}
    best = max(ranks.values(), default=(0, False))
    if best[0] == 0:
        return []
    return [key for key, rank in ranks.items() if rank == best]


def _named(parts: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p for p in parts if p != ANONYMOUS and not p.startswith("_GLOBAL__N"))


def _suffix_rank(wanted: tuple[str, ...], parts: tuple[str, ...]) -> tuple[int, bool]:
    """(components shared at the end, whether all of `parts` is a suffix of `wanted`)."""
    shared = 0
    while shared < min(len(wanted), len(parts)) and wanted[-1 - shared] == parts[-1 - shared]:
        shared += 1
    return shared, shared == len(parts)


def _merge(entries: list[ProfileEntry]) -> MatchedTime:
    instantiations = tuple(dict.fromkeys(e.template_args for e in entries if e.template_args))
    return MatchedTime(total_ns=sum(e.total_ns for e in entries), calls=sum(e.calls for e in entries),
                       instantiations=instantiations, profile_names=tuple(e.name for e in entries))
