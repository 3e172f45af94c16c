"""Inferring an MEP's values from the application: parameter roles, buffer sizes, scalars, launch.

Sources, in order of trust: the user's overrides (--define), the launch site and the host code that
feeds it (allocations, declarations, callers), macros and -D flags. Anything not found is FILL-IN.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

from s2s.base.records import Kernel, LaunchSite, Param
from s2s.lang.access import index_arrays, offset_arrays, param_access, reference_params, roles
from s2s.lang.cexpr import ALIGNOF, SIZEOF, try_evaluate
from s2s.lang.dialect import dialect_of
from s2s.lang.macros import Macro
from s2s.lang.parsing import text
from s2s.lang.textsplit import conditional, split_top_level
from s2s.mep.manifest import FILL_IN, LaunchSpec, ParamSpec, StructSpec, SymbolSpec
from s2s.scan.sources import SourceFile, language_of

from .default_run import argv_value, parse_number
from .hostcode import Found, Program, Scope
from .launch_helpers import through_helper
from .pp_branches import expression_holds
from .template_args import resolve_template_args, settle
from .trail import Trail

_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n]*?)[ \t]*(?://[^\n]*)?$", re.M)
# a file opened for reading by name: `(fp = fopen("inputlu.data", "r")) != NULL`
_FOPEN = re.compile(r'(\(\s*[A-Za-z_]\w*\s*=\s*)?\bfopen\s*\(\s*"([^"\\]*)"\s*,\s*"([a-z+]*)"\s*\)(?(1)\s*\))')
FOPEN_DEFAULT = "the application's default run, without input files"
_INT_TYPES = {"int", "unsigned", "unsigned int", "long", "unsigned long", "size_t", "short", "char", "unsigned char",
              "long long", "unsigned long long", "int32_t", "uint32_t", "int64_t", "uint64_t", "uint", "ulong", "bool"}


# cudaDeviceProp fields that are the same on every device nvcc 13 compiles for (compute capability 7.5 and later; the
# CUDA programming guide's table of technical specifications per compute capability): exact, not a guess.
# sharedMemPerBlock is the 48 KB a block gets without opting in (sharedMemPerBlockOptin is what differs)
DEVICE_CONSTANTS = {"warpSize": 32, "maxThreadsPerBlock": 1024, "sharedMemPerBlock": 49152}


def _device_prop(base: str, member: str, scope: Scope) -> bool:
    """`base` is a CUDA `cudaDeviceProp` of the launching file (filled by cudaGetDeviceProperties), never written
    field by field."""
    if not re.fullmatch(r"[A-Za-z_]\w*", base) or language_of(scope.source.rel, scope.source.data) != "cuda":
        return False
    data = scope.source.data
    declared = re.search(rb"\bcudaDeviceProp\s+(?:[A-Za-z_]\w*\s*,\s*)*" + re.escape(base.encode()) + rb"\s*[;,=]", data)
    written = re.search(rb"\b" + re.escape(base.encode()) + rb"\s*\.\s*" + re.escape(member.encode()) + rb"\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)",
                        data)
    return declared is not None and written is None


_DESIGNATED = re.compile(r"\s*(?:\.\s*[A-Za-z_]|\[)")  # `.x = 1`, `[2] = 5` in a brace list (not `.5f`)


class Values:
    """Resolves names to numbers in a host scope, remembering how."""

    def __init__(self, program: Program, macros: dict[str, tuple[str, str]], overrides: dict[str, str]) -> None:
        self.program = program
        self.macros = macros
        self.overrides = overrides
        self.sizeof_extra: dict[str, int] = {}
        self.aliases: dict[str, str] = {}
        self._files_absent: dict[str, bool] = {}
        program.fold = self.fold
        program.macros = macros
        program.set_decide(self.decide)

    def fold(self, expr: str, scope: Scope, ctype: str) -> float | int | None:
        """`expr` in `scope`, converted to `ctype` (an int or floating type): a step of a host loop run statically."""
        kind = self.numeric_kind(ctype) if ctype else ""
        v = self.number(expr, scope, Trail())
        if v is None or not kind:
            return None
        return int(v) if kind == "int" else float(v)

    def decide(self, cond: str, scope: Scope) -> tuple[bool | None, str]:
        """An `if` condition in host code: True / False when it evaluates from values known before the run (None when
        not), and the device constants it used."""
        trail = Trail()
        v = self.number(cond, scope, trail)
        return (None if v is None else bool(v)), "; ".join(s for s in trail.steps if "nvcc 13 builds for" in s
                                                           or FOPEN_DEFAULT in s)

    def numeric_kind(self, ctype: str) -> str:
        """"int" or "float" for a declared type (through typedefs and type macros: INT_TYPE -> long), else ""."""
        words = [w for w in ctype.replace("*", " * ").split() if w not in {"static", "const", "volatile", "register",
                                                                              "inline", "extern"}]
        for _ in range(8):
            if len(words) != 1:
                break
            nxt = self.aliases.get(words[0]) or (self.macros[words[0]][0].strip() if words[0] in self.macros else None)
            if not nxt or nxt == words[0] or not re.fullmatch(r"[A-Za-z_][\w ]*", nxt):
                break
            words = nxt.split()
        name = " ".join(words)
        if "*" in words or not words:
            return ""
        if name in {"float", "double", "long double"}:
            return "float"
        if name in _INT_TYPES or name in {"signed", "signed int", "long int", "unsigned long int", "short int",
                                          "unsigned short", "long long int", "ptrdiff_t", "ssize_t"}:
            return "int"
        return ""

    def sizeof(self, name: str) -> int | None:
        for _ in range(8):  # typedef chains and type macros: real_t -> float, #define REAL_T double
            key = " ".join(name.replace("const ", "").split()).split("::")[-1]
            nxt = self.aliases.get(key)
            if nxt is None and key in self.macros and re.fullmatch(r"[A-Za-z_][\w: ]*", self.macros[key][0].strip()):
                nxt = self.macros[key][0].strip()
            if nxt is None or nxt == name:
                break
            name = nxt
        return SIZEOF.get(name) or self.sizeof_extra.get(name.split("::")[-1])

    def builtin_type(self, name: str) -> str | None:
        """The C or CUDA type that a type macro or typedef chain ends in (`Real_t` after `#define Real_t float`:
        "float"); None when `name` is no such alias or its chain ends in another type."""
        for step in range(8):
            key = " ".join(name.replace("const ", "").split()).split("::")[-1]
            if key in SIZEOF:
                return key if step else None
            nxt = self.aliases.get(key)
            if nxt is None and key in self.macros and re.fullmatch(r"[A-Za-z_][\w: ]*", self.macros[key][0].strip()):
                nxt = self.macros[key][0].strip()
            if nxt is None or nxt == name:
                return None
            name = nxt
        return None

    def number(self, expr: str, scope: Scope | None, trail: Trail, depth: int = 0) -> float | int | None:
        def resolve(name: str) -> float | int | None:
            return self.name(name, scope, trail, depth + 1)

        if "fopen" in expr:
            expr = _FOPEN.sub(lambda m: self._fopen(m, trail), expr)
        expr = re.sub(r"\b(?:NULL|nullptr)\b", "0", expr)
        return try_evaluate(expr, resolve, lambda text_: self.sizeof_in(text_, scope, trail), self.call, subscripts=True)

    def _fopen(self, m: re.Match[str], trail: Trail) -> str:
        """`fopen("inputsp.data", "r")` (or `(fp = fopen(...))`) in a condition is NULL in a run without input files
        when no file of that name is anywhere in the tree: the value of the application's default run, said so in
        the provenance; any other fopen stays unknown."""
        path = m.group(2)
        if not m.group(3).startswith("r") or path.startswith("/") or not path or not self._no_file(Path(path).name):
            return m.group(0) + "@"  # unreadable on purpose: the expression stays unknown
        trail.add(f'fopen("{path}") = NULL: no file {Path(path).name} in the tree ({FOPEN_DEFAULT})')
        return "(0)"

    def _no_file(self, name: str) -> bool:
        if name not in self._files_absent:
            roots = {str(s.path)[: len(str(s.path)) - len(s.rel)] for s in self.program.files.values()
                     if str(s.path).endswith(s.rel)}
            found = any(name in files for root in roots for _d, _s, files in os.walk(root or "."))
            self._files_absent[name] = bool(roots) and not found
        return self._files_absent[name]

    def sizeof_in(self, operand: str, scope: Scope | None, trail: Trail | None = None) -> int | None:
        """sizeof of a type, or of an expression on a variable declared in the scope: `*devVec[i]` with
        `half2 *devVec[2]` is sizeof(half2), `p` with `float *p` is 8, `T` of the enclosing `template <typename T>
        void run(...)` the type its calls pass (as the launch's template arguments are resolved); None when not
        known."""
        size = self.sizeof(operand)
        if size is not None or scope is None:
            return size
        if operand.strip() in scope.template_params():
            notes: list[str] = []
            got = resolve_template_args(operand.strip(), scope, notes)
            size = self.sizeof(got) if got != FILL_IN and got not in scope.template_params() else None
            if size is not None and trail is not None:
                trail.add(f"sizeof({operand.strip()}) = {size}: " + (notes[0] if notes else f"{operand.strip()} = {got}"))
            return size
        m = re.fullmatch(r"(\**)([A-Za-z_]\w*)((?:\[[^\[\]]*\])*)", operand.replace(" ", ""))
        decl = scope.declared(m.group(2)) if m else None
        if m is None or decl is None or "(" in decl[1] or "&" in decl[1]:
            return None
        ctype, declarator = decl
        derefs = len(m.group(1)) + m.group(3).count("[")
        dims = re.findall(r"\[([^\]]*)\]", declarator)
        stars = declarator.split(m.group(2))[0].count("*")
        if derefs > len(dims) + stars:
            return None
        left_dims, left_stars = dims[derefs:], stars - max(0, derefs - len(dims))
        elem = 8 if left_stars else self.sizeof(ctype)
        if len(dims) == 1 and not dims[0].strip() and derefs == 0 and not stars:  # `int a[] = {4, 8, 20};`: the
            whole, why = scope.reaching(m.group(2))  # list's length (a string literal's is left unknown)
            if whole is None or why or not re.fullmatch(r"\{.*\}", whole.expr.strip(), re.S) or elem is None:
                return None
            items = [t for t in split_top_level(whole.expr.strip()[1:-1]) if t.strip()]
            if not items or any(_DESIGNATED.match(t) for t in items):
                return None
            return elem * len(items)
        count = 1
        for d in left_dims:
            v = self.number(d, None, Trail()) if d.strip() else None
            if v is None:
                return None
            count *= int(v)
        return None if elem is None else elem * count

    def call(self, name: str, args: list) -> float | int | None:  # type: ignore[type-arg]
        """A host helper whose body is `return EXPR;`, after local declarations with values (`size_t rest = a % b;`),
        such as round_up(x, m), applied to numbers; names other than its parameters and those locals: not known.
        atoi, strtol, atof and the like give the number they were handed (one read from the run line's argv)."""
        parsed = parse_number(name, args)
        if parsed is not None:
            return parsed
        pattern = re.compile(rb"\b" + re.escape(name.encode()) + rb"\s*\(([^()]*)\)\s*\{((?:\s*(?:const\s+)?[A-Za-z_]\w*"
                             rb"(?:\s+(?:int|long))?\s+[A-Za-z_]\w*\s*=[^;{}]+;)*)\s*return\s+([^;]+);\s*\}")
        for source in self.program.files.values():
            if name.encode() not in source.data:
                continue
            m = pattern.search(source.data)
            if not m:
                continue
            params = [re.findall(r"[A-Za-z_]\w*", p)[-1] for p in m.group(1).decode("utf-8", "replace").split(",") if p.strip()]
            if len(params) != len(args):
                continue
            env: dict[str, float | int | None] = dict(zip(params, args))
            for decl in m.group(2).decode("utf-8", "replace").split(";")[:-1]:
                dm = re.fullmatch(r"\s*((?:const\s+)?[A-Za-z_]\w*(?:\s+(?:int|long))?)\s+([A-Za-z_]\w*)\s*=(.+)", decl, re.S)
                if dm is None:
                    return None
                v = try_evaluate(dm.group(3), env.get, self.sizeof, self.call)
                kind = self.numeric_kind(dm.group(1))
                if v is None or not kind:
                    return None
                env[dm.group(2)] = int(v) if kind == "int" else float(v)
            return try_evaluate(m.group(3).decode("utf-8", "replace"), env.get, self.sizeof, self.call)
        return None

    def name(self, name: str, scope: Scope | None, trail: Trail, depth: int) -> float | int | None:
        if depth > 30:
            return None
        if name == "argc" or re.fullmatch(r"argv\[\d+\]", name):
            return self._command_line(name, trail)
        if name in self.overrides:
            trail.add(f"{name} = {self.overrides[name]} (--define)")
            return self.number(self.overrides[name], None, trail, depth)
        if "." in name:
            base, member = name.rsplit(".", 1)
            if member in {"x", "y", "z"}:
                d = self.dims(base, scope, trail, depth)
                if d:
                    return d[{"x": 0, "y": 1, "z": 2}[member]]
            if scope is not None and member in DEVICE_CONSTANTS and _device_prop(base, member, scope):
                trail.add(f"{name} = {DEVICE_CONSTANTS[member]} (the same on every GPU that nvcc 13 builds for, compute "
                          "capability 7.5 and later)")
                return DEVICE_CONSTANTS[member]
        if scope is not None:
            found, why = scope.reaching(name)
            if why:
                trail.add(f"{name}: not known before the run ({why})")
                return None
            if found is None:  # `gws[0]` of `size_t gws[2] = {n, 2};`, no element written since
                found = self._element_of_list(name, scope)
            if found is None and scope.fn is not None and scope.parameter_index(name.partition(".")[0]) < 0:
                found, why = self.program.global_write(scope.source, name, scope.fn)
                if why:
                    trail.add(f"{name}: not known before the run ({why})")
                    return None
            if found is not None:
                sub = Scope(found.scope.source, found.scope.fn, found.at, self.program, found.scope.depth)
                value = self.number(found.expr, sub, trail, depth)
                kind = self.numeric_kind(found.ctype) if found.ctype else ""
                if value is not None and kind:  # `int blocks = ceil(n / 256.0)` holds an int
                    value = int(value) if kind == "int" else float(value)
                if found.origin:
                    trail.add(f"{name}: {found.origin}")
                if value is not None and found.overridden and value <= 0:
                    trail.add(f"{name}: {found.expr} at {found.where} is a placeholder, set from the command line at "
                              f"{found.overridden}")
                    return None
                if value is not None:
                    later = f" (default of a run without arguments; set from the command line at {found.overridden})" \
                        if found.overridden else ""
                    trail.add(f"{name} = {found.expr} at {found.where}{later}")
                else:
                    trail.add(f"{name} = {found.expr} at {found.where}, which could not be evaluated")
                return value
            base, dot, member = name.partition(".")
            idx = scope.parameter_index(base)
            if idx >= 0:
                return self._from_callers(name, scope, idx, base, dot, member, trail, depth)
            if scope.fn is not None:
                value = self.name(name, self.program.file_scope(scope.source), trail, depth + 1)
                if value is not None or any(step.startswith(f"{name}:") for step in trail.steps):
                    return value
        if scope is not None and scope.fn is not None and name in scope.template_params():
            return self._template_param(name, scope, trail, depth)
        if name in self.macros:
            value_text, where = self.macros[name]
            value = self.number(value_text, None, trail, depth)
            if value is not None:
                trail.add(f"{name} = {value_text} ({where})")
            return value
        return None

    @staticmethod
    def _element_of_list(name: str, scope: Scope) -> Found | None:
        """Element I of an array whose reaching definition is a brace list (the rest of a shorter list is 0, as in C);
        None when `name` is no constant-index element or its array is not so defined."""
        m = re.fullmatch(r"([A-Za-z_]\w*)\[(\d+)\]", name)
        if m is None:
            return None
        whole, why = scope.reaching(m.group(1))
        if whole is None or why or not re.fullmatch(r"\{.*\}", whole.expr.strip(), re.S):
            return None
        items = [t.strip() for t in split_top_level(whole.expr.strip()[1:-1])]
        i = int(m.group(2))
        if not items or not all(items) or any(_DESIGNATED.match(t) for t in items):  # designated initializers
            return None
        return replace(whole, expr=items[i] if i < len(items) else "0",
                       origin=f"element {i} of the list {' '.join(whole.expr.split())[:80]}")

    def _template_param(self, name: str, scope: Scope, trail: Trail, depth: int) -> float | int | None:
        """A non-type parameter of the launching function template (`TX` of `template <int TX> void run(float* d)
        { k<TX><<<LEN / TX, TX>>>(d); }`): the argument of the call that runs (see resolve_template_args), when it is
        a number or a macro; else not known."""
        why: list[str] = []
        resolved = resolve_template_args(name, scope, why)
        value = None if resolved in {FILL_IN, name} else self.number(resolved, None, trail, depth)
        if value is None:
            trail.add(f"{name}: not known before the run ({why[-1] if why else 'a template parameter'})")
        else:
            trail.add(f"{name} = {resolved} ({why[-1] if why else 'template argument'})")
        return value

    def _command_line(self, name: str, trail: Trail) -> float | int | None:
        """argc and argv[i] of the default run: no arguments, or the run line of an application that needs them."""
        program = self.program
        if not program.args_required:
            if name != "argc":
                return None
            trail.add("argc = 1 (values of a run without command-line arguments)")
            return 1
        if program.run_args is None:
            trail.add(f"{name}: not known before the run (the application needs its arguments at "
                      f"{program.args_required}, and no run line was found)")
            return None
        value = len(program.run_args) + 1 if name == "argc" else argv_value(program, int(name[5:-1]))
        if value is None:
            trail.add(f"{name}: not a plain number in the run line at {program.run_from}")
        else:
            trail.add(f"{name} = {value} (the run line at {program.run_from}; the application needs its arguments "
                      f"at {program.args_required})")
        return value

    def _from_callers(self, name: str, scope: Scope, idx: int, base: str, dot: str, member: str, trail: Trail,
                      depth: int) -> float | int | None:
        """A parameter of the launching function: the value every call passes (calls that disagree: not known)."""
        seen: list[tuple[float | int, str, str]] = []
        for caller, args, where in scope.callers():
            if idx >= len(args):
                continue
            arg = f"{args[idx]}.{member}" if dot and re.fullmatch(r"[A-Za-z_]\w*", args[idx].strip()) else args[idx]
            if dot and arg == args[idx]:
                continue
            sub = Trail()
            value = self.number(arg, caller, sub, depth)
            if value is None:
                trail.add(f"{name}: '{args[idx]}' at the call at {where} is not known before the run")
                return None
            seen.append((value, args[idx], where))
            for step in sub.steps:
                trail.add(step)
        if not seen:
            return None
        if len({v for v, _a, _w in seen}) > 1:
            trail.add(f"{name}: calls pass different values ({', '.join(f'{a} at {w}' for _v, a, w in seen[:3])})")
            return None
        trail.add(f"{name} = {seen[0][1]} (call at {seen[0][2]})")
        return seen[0][0]

    def _named_dims(self, expr: str, scope: Scope, trail: Trail, depth: int) -> tuple[int, int, int] | None:
        return _dims_of_named(self, expr, scope, trail, depth)

    def dims(self, expr: str, scope: Scope | None, trail: Trail, depth: int = 0) -> tuple[int, int, int] | None:
        expr = expr.strip()
        if expr in {"NULL", "nullptr", "0", ""}:
            return (0, 0, 0)
        expr = expr.lstrip("&").strip()
        m = re.fullmatch(r"dim3\s*\((.*)\)", expr, re.S)
        if m:
            parts = split_top_level(m.group(1))
            vals = [self.number(p, scope, trail, depth) for p in parts]
            if any(v is None for v in vals):
                return None
            ints = [int(v) for v in vals if v is not None] + [1, 1, 1]
            return (ints[0], ints[1], ints[2])
        if expr.startswith("{"):
            parts = split_top_level(expr.strip("{}"))
            vals = [self.number(p, scope, trail, depth) for p in parts]
            if any(v is None for v in vals):
                return None
            ints = [int(v) for v in vals if v is not None] + [1, 1, 1]
            return (ints[0], ints[1], ints[2])
        if re.fullmatch(r"[A-Za-z_]\w*", expr) and scope is not None:
            return self._named_dims(expr, scope, trail, depth)
        v = self.number(expr, scope, trail, depth)
        return (int(v), 1, 1) if v is not None else None


def _dims_of_named(values: Values, expr: str, scope: Scope, trail: Trail, depth: int) -> tuple[int, int, int] | None:
    """A dim3 variable: its reaching construction (or `dim3 g;`), then field assignments (`g.x = n / 128 + 1`) that
    reach the launch; any field written under a condition or in a loop around the launch is not known. Set by a call
    that takes it by address or reference (`layout(n, &grid, &block)`): the helper followed, or not known."""
    helped = through_helper(values, expr, scope, trail, depth, _dims_of_named)
    if helped is not False:
        return helped if isinstance(helped, tuple) else None
    found, why = scope.reaching(expr)
    decl_only = why and "does not give it a value" in why and scope.fn is not None and re.search(
        r"\bdim3\s+(?:[^;(){}]*,\s*)?" + re.escape(expr) + r"\s*[;,]", text(scope.fn)) and all(
        kind == "decl" for node, kind, _v in scope.writes_of(expr) if node.start_byte < scope.limit)  # `dim3 b, g;`
    if why and not decl_only:
        trail.add(f"{expr}: not known before the run ({why})")
        return None
    base: list[int | None]
    if found is not None and (found.expr.startswith("dim3") or found.expr.startswith("{")):
        trail.add(f"{expr} = {found.expr} at {found.where}")
        sub = Scope(found.scope.source, found.scope.fn, found.at, values.program, found.scope.depth)
        d = values.dims(found.expr, sub, trail, depth + 1)
        base = list(d) if d else [None, None, None]
    elif decl_only:
        base = [1, 1, 1]
    elif found is None and scope.fn is not None:
        gscope = values.program.file_scope(scope.source)
        gfound, gwhy = values.program.global_write(scope.source, expr, scope.fn)
        if gfound is None and not gwhy:
            gfound, gwhy = gscope.reaching(expr)
        elif gfound is not None:
            gscope = Scope(gfound.scope.source, gfound.scope.fn, gfound.at, values.program, gfound.scope.depth)
            if gfound.origin:
                trail.add(f"{expr}: {gfound.origin}")
        if gwhy:
            trail.add(f"{expr}: not known before the run ({gwhy})")
            return None
        if gfound is None or not (gfound.expr.startswith("dim3") or gfound.expr.startswith("{")):
            v = values.number(expr, scope, trail, depth)
            return (int(v), 1, 1) if v is not None else None
        trail.add(f"{expr} = {gfound.expr} at {gfound.where}")
        d = values.dims(gfound.expr, gscope, trail, depth + 1)
        base = list(d) if d else [None, None, None]
    else:
        v = values.number(expr, scope, trail, depth)
        return (int(v), 1, 1) if v is not None else None
    for i, member in enumerate("xyz"):
        mfound, mwhy = scope.reaching(f"{expr}.{member}")
        if mwhy:
            trail.add(f"{expr}.{member}: not known before the run ({mwhy})")
            return None
        if mfound is not None and (found is None or mfound.at > found.at or found.scope.fn is None):
            sub = Scope(mfound.scope.source, mfound.scope.fn, mfound.at, values.program, mfound.scope.depth)
            v = values.number(mfound.expr, sub, trail, depth + 1)
            trail.add(f"{expr}.{member} = {mfound.expr} at {mfound.where}")
            base[i] = int(v) if v is not None else None
    if any(b is None for b in base):
        return None
    return (int(base[0] or 0), int(base[1] or 0), int(base[2] or 0))


def collect_macros(files: list[SourceFile], defines: dict[str, str], where_flags: str) -> dict[str, tuple[str, str]]:
    """Object-like macro values: -D flags first (they beat `#ifndef` defaults), then the first #define."""
    out: dict[str, tuple[str, str]] = {k: (v, f"-D{k}={v} in {where_flags}") for k, v in defines.items()}
    for source in files:
        for m in _DEFINE.finditer(source.data):
            name = m.group(1).decode()
            if name not in out:
                line = source.data.count(b"\n", 0, m.start()) + 1
                out[name] = (m.group(2).decode("utf-8", "replace").strip(), f"#define at {source.rel}:{line}")
    return out




def active_text(source_text: str, macros: dict[str, tuple[str, str]]) -> str | None:
    """The lines of a declaration block that the preprocessor keeps under the unit's macros (`#if CLASS == 'D'`
    typedef long ... `#else` typedef int ...), directive lines left out; None when a condition cannot be decided
    (then nothing in the block may be read as active)."""
    def holds(word: str, cond: str) -> bool | None:
        cond = re.sub(r"//.*|/\*.*?\*/", " ", cond).strip()
        if word in {"ifdef", "ifndef"}:
            return (cond.split()[0] in macros) == (word == "ifdef") if cond else None
        return expression_holds(cond, macros)

    out: list[str] = []
    stack: list[tuple[bool, bool]] = []  # per open group: (this branch active, a branch of it already taken)
    for line in source_text.splitlines():
        m = conditional(line)
        if not m:
            if all(a for a, _t in stack):
                out.append(line)
            continue
        word, cond = m
        if word in {"if", "ifdef", "ifndef"}:
            v = holds(word, cond)
            if v is None:
                return None
            stack.append((v, v))
        elif word == "elif" and stack:
            v = holds("if", cond)
            if v is None:
                return None
            stack[-1] = (not stack[-1][1] and v, stack[-1][1] or v)
        elif word == "else" and stack:
            stack[-1] = (not stack[-1][1], True)
        elif word == "endif" and stack:
            stack.pop()
    return "\n".join(out)


def parse_struct(text: str, name: str) -> StructSpec | None:
    m = re.search(r"\{(.*)\}", text, re.S)
    if not m or re.search(r"\b(?:union|alignas|__align__|__attribute__|_Alignas|virtual)\b|:", text[:m.start()]):
        return None  # a union, an over-aligned struct or one with a base: its size is not the sum of its fields
    body = re.sub(r"//[^\n]*|/\*.*?\*/", " ", m.group(1), flags=re.S)
    fields: list[tuple[str, str, int]] = []
    for decl in body.split(";"):
        decl = " ".join(decl.split())
        if not decl or "(" in decl:
            continue
        dm = re.fullmatch(r"((?:const |unsigned |signed |struct )*[A-Za-z_][\w:]*(?: long| int)?)\s+(.+)", decl)
        if not dm:
            return None
        ftype = dm.group(1).replace("const ", "").replace("struct ", "")
        for var in dm.group(2).split(","):
            vm = re.fullmatch(r"\s*(\**)\s*([A-Za-z_]\w*)\s*(?:\[\s*(\d+)\s*\])?\s*", var)
            if not vm or vm.group(1):
                return None
            fields.append((ftype, vm.group(2), int(vm.group(3) or 1)))
    return StructSpec(name=name, fields=tuple(fields))


def struct_size(st: StructSpec, known: dict[str, int], aligns: dict[str, int] | None = None) -> int | None:
    """sizeof(st) on a 64-bit host from its fields' sizes and alignments (a vector type aligns as CUDA says, double3
    to 8, float4 to 16; a struct met before to its own alignment, recorded in `aligns`); None when a field is not
    known (a nested struct whose alignment was not recorded included)."""
    aligns = {} if aligns is None else aligns
    size, align = 0, 1
    for ftype, _name, count in st.fields:
        fs = SIZEOF.get(ftype) or known.get(ftype)
        if fs is None:
            return None
        fa = ALIGNOF.get(ftype) or aligns.get(ftype) or (min(fs, 8) if ftype in SIZEOF else None)
        if fa is None:
            return None
        size = (size + fa - 1) // fa * fa + fs * count
        align = max(align, fa)
    aligns[st.name] = align
    return (size + align - 1) // align * align


def _uncast(arg: str) -> str:
    """A pointer argument without its pointer casts and raw_pointer_cast wrapper."""
    arg = re.sub(r"\(\s*(?:const\s+)?[A-Za-z_][\w:]*\s*\*+\s*\)", " ", arg)
    return re.sub(r"\b(?:thrust::)?raw_pointer_cast\s*\(", "(", arg)


def base_var(arg: str) -> str:
    """The host variable a pointer argument is built from: d_A for `(float*)d_A + off`, `thrust::raw_pointer_cast(&v[0])`."""
    arg = _uncast(arg)
    names = [n for n in re.findall(r"[A-Za-z_][\w.]*", arg) if n not in {"const", "float", "double", "int", "void"}]
    return names[0].split(".")[0] if names else ""


def pointer_offset(arg: str) -> str:
    """The offset a pointer argument adds to its host variable: `ir[k]` for `r_device + ir[k]` or `&r[ir[k]]`, "" for the
    variable itself (`d_A`, `(float*)d_A`, `&v[0]`, `raw_pointer_cast(&v[0])`)."""
    a = " ".join(_uncast(arg).split())
    while a.startswith("(") and a.endswith(")"):
        a = a[1:-1].strip()
    mt = re.fullmatch(r"&\s*\(?\s*[A-Za-z_][\w.]*\s*\)?\s*\[(.*)\]", a)
    if mt:
        return "" if mt.group(1).strip() in {"0", "0u", "0U"} else mt.group(1).strip()
    mt = re.fullmatch(r"[A-Za-z_](?:[\w.]|->)*\s*([-+])(?!>)\s*(.+)", a)  # not the `-` of `w->d_data`
    if mt:
        return "" if mt.group(2).strip() == "0" else f"{mt.group(1)}{mt.group(2).strip()}".lstrip("+")
    return ""


def elem_type(p: Param, template: dict[str, str]) -> str:
    base = template.get(p.base_type, p.base_type)
    for _ in range(4):  # type macros: -DREAL=float
        nxt = template.get(base)
        if not nxt or nxt == base:
            break
        base = nxt
    return {"unsigned": "unsigned int", "cl_float": "float", "cl_int": "int", "cl_uint": "unsigned int"}.get(base, base)


def template_map(kernel: Kernel, targs: str) -> dict[str, str]:
    params = [re.findall(r"[A-Za-z_]\w*", t)[-1] for t in kernel.template_params if re.findall(r"[A-Za-z_]\w*", t)]
    args = split_top_level(targs) if targs else []
    return dict(zip(params, args))


@dataclass
class Inferred:
    params: list[ParamSpec]
    launch: LaunchSpec
    sizes: dict[str, dict[str, object]]
    structs: list[StructSpec]
    symbols: list[SymbolSpec]
    notes: list[str]
    template_args: str


def infer(kernel: Kernel, kernel_text: str, site: LaunchSite | None, program: Program, macros: dict[str, tuple[str, str]],
          overrides: dict[str, str], struct_texts: dict[str, str], symbol_texts: list[tuple[str, str]],
          files_by_rel: dict[str, SourceFile], aliases: dict[str, str] | None = None,
          unknown: set[str] | None = None, function_macros: dict[str, Macro] | None = None) -> Inferred:
    """`unknown`: parts of the launch site that other sites of the kernel give differently, when which site runs is
    not known ({"template_args", "launch", "args"}, from choose_site): those are FILL-IN."""
    unknown = unknown or set()
    values = Values(program, macros, overrides)
    values.aliases = dict(aliases or {})
    notes: list[str] = []
    targs = site.template_args if site else ""
    if site is not None and targs:
        targs = resolve_template_args(targs, program.scope_at(files_by_rel[site.file], site.start_byte), notes)
    if site is not None and "template_args" not in unknown and "args" not in unknown:
        targs = settle(kernel, targs, launch_args(site.args), program.scope_at(files_by_rel[site.file], site.start_byte),
                       values, macros, notes)
    elif kernel.template_params and not targs:
        targs = FILL_IN
    tmap = template_map(kernel, targs) if targs != FILL_IN else {}
    if "template_args" in unknown:
        targs, tmap = FILL_IN, {}
    elif site is not None and not targs and any("=" not in t for t in kernel.template_params):
        targs = FILL_IN  # `k<<<g, b>>>(d_a, n)`: the compiler deduces them from the arguments' types
        notes.append(f"template_args: the launch at {site.file}:{site.line} leaves the kernel template's arguments to "
                     "deduction from its arguments; `s2s capture` records their types and fills them in")
    for name, (value_text, _where) in macros.items():  # type-valued macros such as -DREAL=float
        if re.fullmatch(r"(?:unsigned )?[a-z_][a-z0-9_ ]*", value_text) and value_text.split()[-1] in SIZEOF:
            tmap.setdefault(name, value_text)
    structs = [s for s in (parse_struct(t, n) for n, t in struct_texts.items()) if s is not None]
    struct_aligns: dict[str, int] = {}
    for st in structs * 2:  # twice: a struct nested in one listed before it is known the second time
        st_fields = tuple((_alias_base(f[0], values.aliases), f[1], f[2]) for f in st.fields)
        size = struct_size(StructSpec(st.name, st_fields), values.sizeof_extra, struct_aligns)
        if size:
            values.sizeof_extra[st.name] = size
    dialect = dialect_of(kernel.language)
    pointers = [p.name for p in kernel.params if p.pointer]
    refs: dict[str, frozenset[int]] = {}  # functions of the tree an element may be handed to by reference
    for f in files_by_rel.values():
        for name, pos in reference_params(f.text()).items():
            refs[name] = refs.get(name, frozenset()) | pos
    access = param_access(kernel_text, dialect, pointers, function_macros, refs)
    role_of = roles(access)
    ints = [p.name for p in kernel.params if p.pointer and elem_type(p, tmap) in _INT_TYPES]
    indexes = index_arrays(kernel_text, ints, pointers)
    offsets = offset_arrays(kernel_text, ints, pointers)
    scope: Scope | None = None
    args: list[str] = launch_args(site.args) if site and "args" not in unknown else []
    cl_args: dict[int, tuple[str, str, str]] = {}
    if site is not None:
        source = files_by_rel[site.file]
        scope = program.scope_at(source, site.start_byte)
        if site.kind == "clEnqueueNDRangeKernel":
            call_text = source.data[site.start_byte:site.end_byte].decode("utf-8", "replace")
            obj = split_top_level(call_text[call_text.index("(") + 1 : call_text.rindex(")")])[1].strip()
            cl_args = scope.cl_kernel_args(obj)
            args = [cl_args.get(i, ("", "", ""))[1].lstrip("&").strip() for i in range(len(kernel.params))]
    where = f"launch at {site.file}:{site.line}" if site else "no launch site found"
    specs: list[ParamSpec] = []
    sizes: dict[str, dict[str, object]] = {}
    counts: dict[str, int] = {}
    for i, p in enumerate(kernel.params):
        elem = elem_type(p, tmap)
        arg = args[i] if i < len(args) else ""
        trail = Trail()
        if not p.pointer:
            value: float | int | str = FILL_IN
            struct_hint = ""
            is_struct = elem in values.sizeof_extra and elem not in SIZEOF
            if is_struct:
                value = "random"
                st_found: StructSpec | None = next((x for x in structs if x.name == elem), None)
                known: dict[str, float | int] = {}
                for ftype, fname, flen in (st_found.fields if st_found else ()):
                    if flen == 1 and arg:
                        v = values.number(f"{arg}.{fname}", scope, trail)
                        if v is not None:
                            known[fname] = int(v) if ftype in _INT_TYPES else float(v)
                missing_fields = [f[1] for f in (st_found.fields if st_found else ()) if f[1] not in known]
                if known and not missing_fields:
                    value = {**known}  # type: ignore[assignment]
                else:  # exact or FILL-IN: fields filled from a seed would be sizes and counts the application never had
                    value = FILL_IN
                    said = ", ".join(f"{k} = {v}" for k, v in known.items())
                    struct_hint = (f"struct {elem} passed by value: fields {', '.join(missing_fields) or 'of it'} not found "
                                   "in the host code" + (f" ({said} found)" if said else "") + "; write value = "
                                   "{field = number, ...} with every field, or \"random\" to fill them from the seed in "
                                   "[0.5, 1.5]")
            elif arg:
                v = values.number(arg, scope, trail)
                if v is not None:
                    value = int(v) if elem in _INT_TYPES or values.numeric_kind(elem) == "int" else float(v)
            spec = ParamSpec(name=p.name, type=p.type, role="scalar", elem=elem, value=value,
                             low=0.5 if is_struct else -1.0, high=1.5 if is_struct else 1.0,
                             source=f"{where}, argument '{arg}'" + (": " + "; ".join(trail.steps) if trail.steps else ""),
                             hint="" if value != FILL_IN else struct_hint if is_struct else
                             f"the value of '{arg or p.name}' at the launch", space=p.address_space)
            specs.append(spec)
            continue
        count: int | str = FILL_IN
        count_expr = ""
        src_note = f"{where}, argument '{arg}'"
        if p.address_space == "local" and i in cl_args:
            size_expr = cl_args[i][0]
            v = values.number(size_expr, scope, trail)
            if v is not None and values.sizeof(elem):
                count, count_expr = int(v) // (values.sizeof(elem) or 1), f"({size_expr})/sizeof({elem})"
        elif arg and scope is not None and (offset := pointer_offset(arg)):  # the buffer starts inside its allocation
            behind = _count_behind(values, scope, arg, offset, elem, trail)
            if behind is not None:  # what a capture records too: from the pointer to the end of its allocation
                count, count_expr = behind
                src_note += f"; {offset} elements into its allocation, {count} behind it"
            else:
                trail.add(f"{arg}: the pointer is {offset} elements into its allocation; the count behind it is not known "
                          "before the run")
        elif arg and scope is not None:
            var = base_var(arg)
            allocs = _find_alloc(scope, var)
            esize = values.sizeof(elem)
            alloc_bytes = [values.number(a.expr, a_scope, trail) for a, a_scope in allocs or []]
            if allocs and esize and all(v is not None for v in alloc_bytes) and len({int(v or 0) // esize for v in alloc_bytes}) == 1:
                alloc = allocs[0][0]
                count, count_expr = int(alloc_bytes[0] or 0) // esize, f"({alloc.expr})/sizeof({elem})"
                src_note += f"; allocated at {alloc.where} with {alloc.expr} bytes"
                if len({a.where for a, _s in allocs}) > 1:
                    src_note += f" (every buffer it may be: {', '.join(sorted({a.where for a, _s in allocs})[:4])})"
            elif allocs and len(alloc_bytes) > 1 and all(v is not None for v in alloc_bytes) and esize:
                trail.add(f"{var}: the callers pass buffers of different sizes ("
                          + ", ".join(f"{a.expr} at {a.where}" for a, _s in allocs[:4]) + ")")
        if trail.steps:
            src_note += ": " + "; ".join(trail.steps)
        if isinstance(count, int):
            counts[p.name] = count
        role = "in" if p.const else role_of.get(p.name, "in")
        fill = "uniform"
        low, high = -1.0, 1.0
        if p.name in offsets:  # row pointers: a monotone sequence up to the ranged buffer's count (bound below)
            fill = "offsets"
            low, high = 0.0, 0.0
        elif p.name in indexes:
            fill = "index"
            low, high = 0.0, 0.0  # bound filled below
        elif elem in _INT_TYPES:
            low, high = 0.0, 16.0
        specs.append(ParamSpec(name=p.name, type=p.type, role=role, elem=elem, count=count, count_expr=count_expr, fill=fill,
                               low=low, high=high, source=src_note, space=p.address_space,
                               hint="" if count != FILL_IN else f"number of {elem} elements behind '{arg or p.name}'"))
    specs = [_bound_offsets(s, offsets, counts) if s.name in offsets else _bound_index(s, indexes, counts) for s in specs]
    for s in specs:
        for step in s.source.split("; "):
            m = re.match(r"(\w+) = (.+) \((-D.*|#define at .*|--define)\)$", step.split(": ")[-1])
            if m:
                sizes[m.group(1)] = {"value": m.group(2), "from": m.group(3)}
    launch = _launch(site, values, scope, notes)
    if "launch" in unknown:
        launch = LaunchSpec(grid=(FILL_IN,) * 3, block=(FILL_IN,) * 3, shared_mem=FILL_IN,  # type: ignore[arg-type]
                            grid_expr=launch.grid_expr, block_expr=launch.block_expr,
                            source=f"{launch.source}: launch sites differ, which one runs is not known")
    symbols = []
    for name, decl_text in symbol_texts:
        found = symbol_declarator(name.split("::")[-1], decl_text)
        if found is None:
            continue
        elem, dims = found
        n = values.number(dims, None, Trail()) if dims else 1
        symbols.append(SymbolSpec(name=name, elem=elem, count=int(n or 1), source=decl_text.strip()[:80]))
    return Inferred(specs, launch, sizes, structs, symbols, notes, targs)


def symbol_declarator(name: str, decl_text: str) -> tuple[str, str] | None:
    """(element type, array size expression or "") of `name` in its declaration: `__constant__ double dz1, dz2, dz3;`
    gives every declarator its type, not the first alone (`omega` of `__constant__ double dt, omega;` is a symbol)."""
    for stmt in re.sub(r"//[^\n]*|/\*.*?\*/", " ", decl_text, flags=re.S).split(";"):
        parts = [_DECLARATOR_HEAD.search(p.split("=")[0]) for p in split_top_level(stmt)]
        if not parts or parts[0] is None:
            continue
        elem = parts[0].group(1)
        for m in parts:
            if m is not None and m.group(2) == name:  # `ce[13][5]`: 65 elements
                return elem, "*".join(f"({d})" for d in re.findall(r"\[([^\]]*)\]", m.group(3) or ""))
    return None


# a declarator at the end of its text: `double *p`, `ce[13][5]`; group 1 the word before it (the element type in the
# first declarator of a list)
_DECLARATOR_HEAD = re.compile(r"(?:([A-Za-z_][\w:]*)\s*[*&\s]\s*[*&\s]*)?\b([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)$")


def launch_args(raw: tuple[str, ...] | list[str]) -> list[str]:
    """A launch's arguments without the comments (and preprocessor lines) written between them: one comment per
    argument is common in older codes, and a comment read as an argument binds every later parameter wrongly."""
    out = []
    for a in raw:
        a = re.sub(r"^[ \t]*#[^\n]*", " ", re.sub(r"//[^\n]*|/\*.*?\*/", " ", a, flags=re.S), flags=re.M).strip()
        if a:
            out.append(" ".join(a.split()))
    return out


def _alias_base(t: str, aliases: dict[str, str]) -> str:
    for _ in range(8):
        if t not in aliases or aliases[t] == t:
            return t
        t = aliases[t]
    return t


def _find_alloc(scope: Scope, var: str, depth: int = 0) -> list[tuple[Found, Scope]] | None:
    """The allocations that can give `var` its memory: in the function, at file scope, the one of a global pointer
    allocated once, or, for a parameter, through every call of the function (callers that pass buffers of different
    sizes are told apart by the caller of this); None when some path finds none."""
    found = scope.allocations(var)
    if found is not None:
        return [(found, found.scope)]
    idx = scope.parameter_index(var)
    file_found = scope.program.file_scope(scope.source).allocations(var) if idx < 0 else None  # a parameter hides a global
    if file_found is not None:
        return [(file_found, file_found.scope)]
    if idx < 0:
        if scope.fn is not None and scope.definition(var) is None and scope.reaching(var) == (None, ""):
            only = scope.program.only_allocation(var, scope.source)  # a global pointer allocated once, in a setup function
            if only is not None:
                return [(only, only.scope)]
        sources = scope.pointer_sources(var) if depth < 4 else None
        if not sources:
            return None
        aliased: list[tuple[Found, Scope]] = []  # `ikey = d_BufKey` or `ikey = d_DstKey`: every buffer it may be
        for other, at in sources:
            sub = _find_alloc(at, other, depth + 1)
            if sub is None:
                return None
            aliased += sub
        return aliased
    callers = scope.callers()
    if not callers or depth >= 4 or len(callers) > 16:
        return None
    out: list[tuple[Found, Scope]] = []
    for caller, args, _where in callers:
        if idx < len(args) and pointer_offset(args[idx]):  # psinv_gpu(r_device + ir[k], ...): inside an allocation
            return None
        sub = _find_alloc(caller, base_var(args[idx]), depth + 1) if idx < len(args) else None
        if sub is None:
            return None
        out += sub
    return out


def _count_behind(values: Values, scope: Scope, arg: str, offset: str, elem: str, trail: Trail) -> tuple[int, str] | None:
    """(count, expression) of the elements from `base + offset` to the end of base's allocation, when the offset is
    known before the run, counts elements of the kernel's own element size (base declared as a plain pointer to a
    type of that size), and every allocation base may hold has one size; else None."""
    var = base_var(arg)
    decl = scope.declared(var)
    esize = values.sizeof(elem)
    if decl is None or not esize or decl[1].count("*") != 1 or "[" in decl[1] or values.sizeof(decl[0]) != esize:
        return None
    off = values.number(offset, scope, trail)
    allocs = _find_alloc(scope, var)
    sizes = {values.number(a.expr, a_scope, trail) for a, a_scope in allocs or []}
    if off is None or not isinstance(off, int) or off < 0 or not allocs or len(sizes) != 1 or None in sizes:
        return None
    total = int(next(iter(sizes)) or 0)
    if total % esize or total // esize <= off:
        return None
    return total // esize - off, f"({allocs[0][0].expr})/sizeof({elem}) - ({offset})"


def _bound_index(s: ParamSpec, indexes: dict[str, str], counts: dict[str, int]) -> ParamSpec:
    if s.name not in indexes:
        return s
    target = indexes[s.name]
    if target and target in counts:
        return ParamSpec(**{**s.__dict__, "high": float(counts[target]), "source": s.source + f"; values index {target}[0..{counts[target]})"})
    return ParamSpec(**{**s.__dict__, "fill": "index", "high": 0.0, "hint": f"upper bound of the indices stored in {s.name}"})


def _bound_offsets(s: ParamSpec, offsets: dict[str, str], counts: dict[str, int]) -> ParamSpec:
    target = offsets[s.name]
    if target in counts:
        return ParamSpec(**{**s.__dict__, "high": float(counts[target]),
                            "source": s.source + f"; offsets into {target}[0..{counts[target]}) (row pointers: 0 up to its count)"})
    return ParamSpec(**{**s.__dict__, "hint": f"the count of {target}, the last of the offsets stored in {s.name}"})


def _launch(site: LaunchSite | None, values: Values, scope: Scope | None, notes: list[str]) -> LaunchSpec:
    if site is None:
        notes.append("no launch site found: fill launch.grid and launch.block")
        return LaunchSpec(grid=(FILL_IN,) * 3, block=(FILL_IN,) * 3, source="")  # type: ignore[arg-type]
    trail = Trail()
    grid = values.dims(site.grid, scope, trail)
    block = values.dims(site.block, scope, trail)
    shmem = values.number(site.shared_mem, scope, trail) if site.shared_mem and site.shared_mem.strip() != "0" else 0
    if grid is None or block is None:
        notes.append(f"launch configuration at {site.file}:{site.line} could not be evaluated: grid '{site.grid}', block '{site.block}'")
    if shmem is None:
        notes.append(f"dynamic shared memory at {site.file}:{site.line} could not be evaluated: '{site.shared_mem}'")
    src = f"{site.file}:{site.line}" + (": " + "; ".join(trail.steps) if trail.steps else "")
    return LaunchSpec(grid=grid or (FILL_IN,) * 3, block=block or (FILL_IN,) * 3,  # type: ignore[arg-type]
                      shared_mem=FILL_IN if shmem is None else int(shmem), grid_expr=site.grid, block_expr=site.block, source=src)


def tree_files(files: dict[Path, SourceFile]) -> dict[str, SourceFile]:
    return {s.rel: s for s in files.values()}


def _site_taken(site: LaunchSite, values: Values, files_by_rel: dict[str, SourceFile]) -> bool | None:
    """Whether a launch site runs in a run without arguments, from the `if` conditions around it in its function:
    True (every one known and holding), False (one known not to hold), None (one not known, or a switch case)."""
    source = files_by_rel.get(site.file)
    if source is None:
        return None
    program = values.program
    root = program.tree_of(source).root_node
    node = root.descendant_for_byte_range(site.start_byte, max(site.start_byte, site.end_byte - 1))
    if node is None:
        return None
    fn = node
    while fn is not None and fn.type != "function_definition":
        fn = fn.parent
    if fn is None:
        return None
    taken: bool | None = True
    child, cur = node, node.parent
    while cur is not None and cur != fn:
        if cur.type in {"case_statement", "conditional_expression"}:
            return None
        if cur.type == "if_statement":
            cond = cur.child_by_field_name("condition")
            alt = cur.child_by_field_name("alternative")
            in_else = alt is not None and alt.start_byte <= child.start_byte < alt.end_byte
            in_cond = cond is not None and cond.start_byte <= child.start_byte < cond.end_byte
            if cond is None or in_cond:
                return None
            v = values.number(text(cond), Scope(source, fn, cur.start_byte, program), Trail())
            if v is None:
                taken = None
            elif bool(v) == in_else:
                return False
        child, cur = cur, cur.parent
    return taken


def choose_site(sites: list[LaunchSite], values: Values, files_by_rel: dict[str, SourceFile],
                notes: list[str]) -> tuple[LaunchSite | None, set[str]]:
    """The launch site an MEP reads its values from, and which of its parts are not known ({"template_args",
    "launch", "args"}): sites whose `if` conditions are known not to hold are left out; of the rest, the first whose
    conditions are known to hold (else the first), with the parts where the rest differ unknown."""
    if not sites:
        return None, set()

    def key(s: LaunchSite) -> tuple[str, tuple[str, str, str], tuple[str, ...]]:
        return s.template_args, (s.grid, s.block, s.shared_mem), tuple(launch_args(s.args))

    if len({key(s) for s in sites}) == 1:
        return sites[0], set()
    taken = [_site_taken(s, values, files_by_rel) for s in sites]
    candidates = [s for s, t in zip(sites, taken) if t is not False] or sites  # those that may run
    runs = [s for s, t in zip(sites, taken) if t is True and s in candidates]
    chosen = runs[0] if runs else candidates[0]
    if chosen is not sites[0]:
        notes.append(f"launch at {chosen.file}:{chosen.line} chosen: the conditions around "
                     f"{', '.join(f'{s.file}:{s.line}' for s in sites if s not in candidates)[:200]} do not hold in a "
                     "run without arguments")
    differ = set()
    if len({key(s)[0] for s in candidates}) > 1:
        differ.add("template_args")
    if len({key(s)[1] for s in candidates}) > 1:
        differ.add("launch")
    if len({key(s)[2] for s in candidates}) > 1:
        differ.add("args")
    if differ:
        notes.append(f"launch sites {', '.join(f'{s.file}:{s.line}' for s in candidates[:4])} differ in "
                     f"{', '.join(sorted(differ))} and which one runs is not known before the run: those values are "
                     "FILL-IN")
    return chosen, differ
