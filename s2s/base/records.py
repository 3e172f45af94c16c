"""Plain, immutable records passed between the stages. No parser objects live past a stage."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Param:
    name: str
    text: str  # the declaration as written, qualifiers included
    type: str  # the declaration without the name
    base_type: str  # element type with qualifiers removed: "float", "Particle"
    pointer: bool
    const: bool
    address_space: str = ""  # OpenCL: "global", "local", "constant", "private"


@dataclass(frozen=True)
class Kernel:
    name: str
    qualified: str  # "ns::name" as C++ names it
    file: str  # relative to the scanned tree
    line: int
    language: str  # "cuda" | "hip" | "opencl"
    params: tuple[Param, ...]
    template_params: tuple[str, ...] = ()
    qualifiers: tuple[str, ...] = ()
    start_byte: int = 0  # whole definition, template header included
    end_byte: int = 0
    sha256: str = ""
    via_macro: str = ""  # name of the object-like macro that hides __global__, if any
    loop_depth: int = 0  # deepest loop nest in the body


@dataclass(frozen=True)
class LaunchSite:
    kernel: str  # as written at the site: "linalg::k", "k"
    file: str
    line: int
    kind: str  # "chevron" | "hipLaunchKernelGGL" | "clEnqueueNDRangeKernel"
    grid: str
    block: str
    shared_mem: str = ""
    stream: str = ""
    args: tuple[str, ...] = ()
    template_args: str = ""
    enclosing_function: str = ""
    in_loop: bool = False
    loop_depth: int = 0
    loop_line: int = 0  # the line of the outermost loop of its function that holds it (one loop nest, one line); 0: none
    start_byte: int = 0
    end_byte: int = 0
    work_dim: str = ""  # OpenCL only


@dataclass(frozen=True)
class ParseProblem:
    file: str
    line: int
    column: int
    message: str


@dataclass(frozen=True)
class Hotspot:
    kernel: Kernel
    score: float  # ns of GPU time with a profile, an estimate otherwise
    source: str  # "profile:nsys" | "estimate"
    calls: int = 0
    instantiations: tuple[str, ...] = ()


@dataclass(frozen=True)
class Index:
    root: str
    kernels: tuple[Kernel, ...]
    launches: tuple[LaunchSite, ...]
    problems: tuple[ParseProblem, ...] = ()
    limits: tuple[str, ...] = ()
    files_scanned: int = 0
    lines_scanned: int = 0
    seconds: float = 0.0
    extra: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
