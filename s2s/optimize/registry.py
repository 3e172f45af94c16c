"""The rewrite passes by name: an explicit, sorted table of lazily imported built-ins, plus entry points.

A pass is a frozen dataclass with a class-level `name`, options as typed fields, `applies(facts)` and
`rewrite(source, facts)`; its module holds `EXAMPLE_BEFORE` / `EXAMPLE_AFTER` (and `EXAMPLE_DIALECT`).
Pipelines are data: "register-accumulation,loop-unroll{factor=4}".
A pass that applies in round 1 to fewer than three applications of the development corpus
(bench/results/pass-applicability, bench/pass_applicability.py) says why it exists in `WHY_IT_EXISTS` (issue 27).
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import re
import typing
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, ClassVar, Protocol

from s2s.lang.edits import Failure, LaunchChange, Refused, Rewrite, apply_edits
from s2s.lang.kernel_facts import KernelFacts, TooDeep, kernel_facts
from s2s.lang.target_device import TargetDevice

# pass name -> (family, class name): the class is in s2s.passes.<family>.<name with underscores> (the family is the
# computation it transforms, a folder of s2s/passes/; "" for a pass of every family); keep sorted.
BUILTIN: dict[str, tuple[str, str]] = {
    "allpairs-bodies": ("allpairs", "AllpairsBodies"),
    "allpairs-lanes": ("allpairs", "AllpairsLanes"),
    "allpairs-pack": ("allpairs", "AllpairsPack"),
    "atomic-accumulate": ("reductions", "AtomicAccumulate"),
    "block-reduce-shuffle": ("reductions", "BlockReduceShuffle"),
    "block-scan-shuffle": ("reductions", "BlockScanShuffle"),
    "coalesce-remap": ("memory", "CoalesceRemap"),
    "contraction-blocking": ("contractions", "ContractionBlocking"),
    "contraction-tiling": ("contractions", "ContractionTiling"),
    "contraction-triangle": ("contractions", "ContractionTriangle"),
    "delinearize-2d": ("launch", "Delinearize2d"),
    "fast-math": ("arithmetic", "FastMath"),
    "gather-window": ("memory", "GatherWindow"),
    "grid-stride-fill": ("memory", "GridStrideFill"),
    "hoist-invariants": ("memory", "HoistInvariants"),
    "inner-loop-threads": ("launch", "InnerLoopThreads"),
    "launch-config": ("launch", "LaunchConfig"),
    "loads-first": ("memory", "LoadsFirst"),
    "loop-unroll": ("arithmetic", "LoopUnroll"),
    "normalize": ("", "Normalize"),
    "precision-hygiene": ("arithmetic", "PrecisionHygiene"),
    "register-accumulation": ("reductions", "RegisterAccumulation"),
    "register-blocking": ("contractions", "RegisterBlocking"),
    "restrict-const": ("arithmetic", "RestrictConst"),
    "row-coarsen": ("contractions", "RowCoarsen"),
    "shared-histogram": ("reductions", "SharedHistogram"),
    "smem-allpairs": ("allpairs", "SmemAllpairs"),
    "smem-tiling": ("contractions", "SmemTiling"),
    "smem-transpose": ("memory", "SmemTranspose"),
    "split-reduction": ("reductions", "SplitReduction"),
    "stencil-registers": ("stencils", "StencilRegisters"),
    "stencil-streaming": ("stencils", "StencilStreaming"),
    "stencil-tiling": ("stencils", "StencilTiling"),
    "struct-wide-io": ("memory", "StructWideIo"),
    "thread-coarsen": ("launch", "ThreadCoarsen"),
    "triangular-solve-blocking": ("contractions", "TriangularSolveBlocking"),
    "vector-elementwise": ("memory", "VectorElementwise"),
    "vector-elementwise-2d": ("memory", "VectorElementwise2d"),
    "vector-loads": ("reductions", "VectorLoads"),
    "walk-registers": ("stencils", "WalkRegisters"),
    "warp-reduce-atomics": ("reductions", "WarpReduceAtomics"),
    "warp-rows": ("reductions", "WarpRows"),
}


class Pass(Protocol):
    name: ClassVar[str]

    def applies(self, facts: KernelFacts) -> bool | str: ...

    def rewrite(self, source: bytes, facts: KernelFacts) -> Rewrite | Refused: ...


def module_name(name: str) -> str:
    family = BUILTIN[name][0] if name in BUILTIN else ""
    return ".".join(["s2s.passes", *([family] if family else []), name.replace("-", "_")])


def get_pass(name: str) -> type[Any]:
    """The pass class registered under `name` (built-in first, then the `s2s.passes` entry points)."""
    if name in BUILTIN:
        return getattr(importlib.import_module(module_name(name)), BUILTIN[name][1])  # type: ignore[no-any-return]
    for ep in entry_points(group="s2s.passes"):
        if ep.name == name:
            return ep.load()  # type: ignore[no-any-return]
    raise KeyError(f"unknown pass '{name}' (known: {', '.join(all_passes())})")


def all_passes() -> list[str]:
    return sorted(set(BUILTIN) | {ep.name for ep in entry_points(group="s2s.passes")})


def search_space() -> tuple[str, ...]:
    """The pipeline steps the built-in search tries, each pass's own `space` in the order of its `priority`.

    A pass without a `space` is tried once with its defaults; one without a `priority` comes last.
    A pass that declares `canonical` (it matches the canonical form, s2s/lang/normal_form.py) has each step tried behind
    the normalization too (`normalize,STEP`, after all its own steps); the proposer tries such a step only where the
    plain one refuses (s2s.optimize.proposers.builtin).
    """
    classes = sorted((get_pass(n) for n in all_passes()), key=lambda c: (getattr(c, "priority", 1000), c.name))
    out: list[str] = []
    for cls in classes:
        steps = tuple(getattr(cls, "space", (cls.name,)))
        out += steps
        if getattr(cls, "canonical", False):
            out += [f"{NORMALIZE},{step}" for step in steps]
    return tuple(out)


NORMALIZE = "normalize"  # the pass that writes the canonical form


def without_normalization(pipeline: str) -> str:
    """`normalize,STEP` -> `STEP`; any other pipeline as it is."""
    return pipeline[len(NORMALIZE) + 1:] if pipeline.startswith(NORMALIZE + ",") else pipeline


def is_speculative(step: str) -> bool:
    """Whether a pipeline step is one its pass declares `speculative` (True: every step of its space; or a set of its
    steps): the search keeps it only where the cost model predicts a gain (s2s.optimize.search)."""
    declared: object = getattr(get_pass(parse_pipeline(step)[0][0]), "speculative", frozenset())
    return declared is True or (isinstance(declared, (set, frozenset, tuple)) and step in declared)


def example(name: str) -> tuple[str, str, str]:
    """(before, after, dialect) of a built-in pass's example."""
    mod = importlib.import_module(module_name(name))
    return mod.EXAMPLE_BEFORE, mod.EXAMPLE_AFTER, getattr(mod, "EXAMPLE_DIALECT", "cuda")


# -- pipelines -------------------------------------------------------------------------------------
_ITEM = re.compile(r"\s*([a-z0-9][a-z0-9-]*)\s*(?:\{([^}]*)\})?\s*(?:,|$)")


def parse_pipeline(spec: str) -> list[tuple[str, dict[str, str]]]:
    """"a,b{factor=4 x=1}" -> [("a", {}), ("b", {"factor": "4", "x": "1"})]; options split on spaces or ';'."""
    out: list[tuple[str, dict[str, str]]] = []
    pos = 0
    spec = spec.strip()
    while pos < len(spec):
        m = _ITEM.match(spec, pos)
        if m is None or m.end() == pos:
            raise ValueError(f"bad pipeline at column {pos + 1}: '{spec[pos:]}'")
        opts: dict[str, str] = {}
        for part in re.split(r"[\s;]+", (m.group(2) or "").strip()):
            if part:
                key, sep, value = part.partition("=")
                if not sep:
                    raise ValueError(f"option '{part}' of pass '{m.group(1)}' needs NAME=VALUE")
                opts[key] = value
        out.append((m.group(1), opts))
        pos = m.end()
    return out


def make_pass(name: str, options: dict[str, str] | None = None) -> Pass:
    cls = get_pass(name)
    fields = {f.name for f in dataclasses.fields(cls)}
    types = typing.get_type_hints(cls)
    values: dict[str, object] = {}
    for key, raw in (options or {}).items():
        if key not in fields:
            raise ValueError(f"pass '{name}' has no option '{key}' (options: {', '.join(sorted(fields)) or 'none'})")
        values[key] = _convert(types[key], raw)
    return cls(**values)  # type: ignore[no-any-return]


def build_pipeline(spec: str) -> list[Pass]:
    return [make_pass(n, o) for n, o in parse_pipeline(spec)]


def _convert(kind: Any, raw: str) -> object:
    """An option's text as the field's type: bool, int, float, str, or a tuple of ints ("32x8", "32,8")."""
    if kind is bool:
        return raw.lower() in {"1", "true", "yes", "on"}
    if kind in (int, float, str):
        return kind(raw)
    if typing.get_origin(kind) is tuple:
        return tuple(int(x) for x in re.split(r"[x,]", raw.strip("()")) if x)
    raise TypeError(f"options of type {kind} are not supported")


# -- running one pass ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Applied:
    text: bytes
    launch: LaunchChange | None
    note: str


def run_pass(p: Pass, source: bytes, dialect: str, kernel: str | None = None, device: TargetDevice | None = None,
             scaled_memory: tuple[str, ...] = ()) -> Applied | Refused:
    """Facts, applicability, rewrite, edits: every way it can go wrong comes back as `Refused`. The pass sees `device`
    (the MEP's, s2s/optimize/target.py) as `facts.device`, the default description where None; `scaled_memory`: the
    host-sized buffers the launch scales with the block (s2s.optimize.launch_sizes)."""
    try:
        facts = _facts(source, dialect, kernel)
    except TooDeep as exc:
        return Refused(exc.message)
    if facts is None:
        return Refused(f"no kernel {kernel or ''} found".replace("  ", " "))
    if device is not None or scaled_memory:
        facts = dataclasses.replace(facts, device=device or facts.device, scaled_memory=scaled_memory)
    ok = p.applies(facts)
    if ok is not True:
        return Refused(ok if isinstance(ok, str) and ok else f"{p.name} does not apply")
    rw = p.rewrite(source, facts)
    if isinstance(rw, Refused):
        return rw
    result = apply_edits(source, rw.edits, dialect)
    if isinstance(result, Failure):
        return Refused(f"{p.name} produced bad edits: {result.reason}")
    return Applied(result.text, rw.launch, rw.note)


@functools.lru_cache(maxsize=32)
def _facts(source: bytes, dialect: str, kernel: str | None) -> KernelFacts | None:
    """A kernel text's facts, once for every pass tried on it (a round tries some 40 on one text; the facts are
    frozen, a pass sees them through dataclasses.replace): three quarters of a round's pass time was their making."""
    return kernel_facts(source, dialect, kernel)


def options_of(cls: type[Any]) -> list[tuple[str, str, object]]:
    """(name, type, default) of a pass's options."""
    types = typing.get_type_hints(cls)
    return [(f.name, _type_name(types[f.name]), f.default) for f in dataclasses.fields(cls)]


def _type_name(kind: Any) -> str:
    return kind.__name__ if isinstance(kind, type) else str(kind).replace("typing.", "")
