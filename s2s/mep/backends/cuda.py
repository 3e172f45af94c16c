"""CUDA: one C++ harness (templates/cuda_harness.cu.j2) with the reference and the variant in two
namespaces of one translation unit, built by nvcc and run as a child process.

The harness is generated once per MEP (`harness.cu`, from mep.toml); the variant is chosen at build
time (`-DS2S_VARIANT_FILE=...`) and its launch configuration at run time (`--var-grid ...`).
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any, ClassVar

from s2s.base.errors import UserError
from s2s.base.paths import make_text
from s2s.base.resources import render, templates_dir
from s2s.mep.fill_in import awaits_fill_in
from s2s.mep.manifest import Manifest, ParamSpec, StructSpec
from s2s.mep.measure import RUNTIME_FAILED, Measurement
from s2s.mep.probe_record import key_of

from . import harness_runtime
from .base import (
    Backend,
    BuildResult,
    Target,
    guarded_local_includes,
    include_dirs_of,
    run_tool,
    scan_source,
    write_if_changed,
)
from .opencl_types import probe_tail, size_scalars
from .struct_args import hidden_buffers, hidden_captured, struct_arg_contexts

HARNESS = "harness.cu"
BINARY = "harness"
DEFAULT_ARCH = "sm_90"
FILL_MODES = {"uniform": 0, "index": 1, "zeros": 2, "random-struct": 0, "offsets": 3, "null": 2, "shuffle": 4}
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")


@functools.lru_cache(maxsize=1)
def cuda_arch() -> str:
    """S2S_CUDA_ARCH (sm_90, 90 or 9.0), else the first GPU's compute capability from nvidia-smi, else sm_90."""
    env = os.environ.get("S2S_CUDA_ARCH", "").strip()
    if env:
        digits = env.replace("sm_", "").replace("compute_", "").replace(".", "")
        return f"sm_{digits}" if digits.isdigit() else env
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True, text=True,
                                 timeout=20).stdout.split()
            if out and re.fullmatch(r"\d+\.\d+", out[0]):
                return "sm_" + out[0].replace(".", "")
        except (OSError, subprocess.SubprocessError):
            pass
    return DEFAULT_ARCH


# -- the harness's view of mep.toml ------------------------------------------------------------------
def _base_type(t: str) -> str:
    t = re.sub(r"\b(const|volatile|struct|class|__restrict__|restrict)\b", " ", str(t))
    return " ".join(t.replace("*", " ").split())


def _sanitize(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _cpp_number(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v}LL" if not -(2**31) <= v < 2**31 else str(v)
    f = float(v)
    if f != f:
        return "std::numeric_limits<double>::quiet_NaN()"
    if f in (float("inf"), float("-inf")):
        return ("-" if f < 0 else "") + "std::numeric_limits<double>::infinity()"
    r = repr(f)
    return r if any(c in r for c in ".eE") else r + ".0"


def split_kernel_name(kernel: str, template_args: str) -> tuple[list[str], str, str]:
    """'linalg::axpby_t' + 'float, 256' -> (['linalg'], 'axpby_t<float, 256>', display name)."""
    name = kernel.strip()
    targs = template_args.strip()
    if "<" in name and not targs:
        name, _, rest = name.partition("<")
        targs = rest.rsplit(">", 1)[0].strip()
    parts = [p for p in name.replace("(anonymous namespace)", "").split("::") if p.strip()]
    if not parts:
        raise UserError(f"kernel = {kernel!r}: not a kernel name")
    local = parts[-1].strip() + (f"<{targs}>" if targs else "")
    return [p.strip() for p in parts[:-1]], local, "::".join(parts[:-1] + [local])


class _StructIndex:
    def __init__(self, structs: list[StructSpec]) -> None:
        self.by_name: dict[str, StructSpec] = {}
        for st in structs:
            self.by_name[st.name] = st
            self.by_name.setdefault(st.name.split("::")[-1], st)

    def find(self, type_name: str) -> StructSpec | None:
        base = _base_type(type_name)
        return self.by_name.get(base) or self.by_name.get(base.split("::")[-1])

    @staticmethod
    def fn(st: StructSpec) -> str:
        return "s2s_visit_struct_" + _sanitize(st.name)

    @staticmethod
    def functor(st: StructSpec) -> str:
        return "S2SVisit_" + _sanitize(st.name)

    def visit(self, type_name: str) -> str:
        st = self.find(type_name)
        return self.functor(st) if st else "s2s::VisitPrim"


def harness_context(m: Manifest, kernel_source: str | None = None) -> dict[str, Any]:
    """What the harness template needs; with the kernel file's text, the smaller-size check halves only scalars that
    bound something there (opencl_types.size_scalars)."""
    ns, local, display = split_kernel_name(m.kernel, m.template_args)
    structs = _StructIndex(m.structs)
    buffer_index = {i: k for k, i in enumerate(i for i, p in enumerate(m.params) if p.role != "scalar" and not p.shares)}
    params = [_param_ctx(i, p, structs, buffer_index.get(i, -1), m.tolerance(p)) for i, p in enumerate(m.params)]
    for i, p in enumerate(m.params):  # `k(d_key, d_key)`: the other parameter's buffer, not one of its own
        if p.shares:
            owner = next(j for j, q in enumerate(m.params) if q.name == p.shares)
            params[i].update(buffer=False, shared=True, arg=f"s2s::DevPtr{{(void*)((unsigned char*)p[{buffer_index[owner]}] + "
                                                f"{int(p.shares_offset)}ULL)}}")
    smaller = size_scalars([{"name": p.name, "role": p.role, "value": p.value, "count": p.count, "elem": p.elem, "space": p.space}
                            for p in m.params], kernel_source)
    for i, small in smaller.items():  # the smaller size's input set passes these instead (s2s::g_smaller)
        params[i]["arg"] = f"(s2s::g_smaller ? (long long){small} : (long long){params[i]['arg']})"
    struct_ctx = []
    for st in m.structs:
        fields = []
        for ftype, fname, flen in st.fields:
            nested = structs.find(ftype)
            fields.append({"name": fname, "len": int(flen or 1),
                           "nested": structs.fn(nested) if nested and nested is not st else ""})
        struct_ctx.append({"fn": structs.fn(st), "functor": structs.functor(st), "fields": fields})
    symbols = [{"i": j, "name": s.name, "count": int(s.count), "visit": structs.visit(s.elem)} for j, s in enumerate(m.symbols)]
    return {
        "struct_bufs": hidden_buffers(m, len(buffer_index)), "struct_args": [],  # captured structs (struct_args.py)
        "kernel": m.kernel, "backend": m.backend, "kernel_file": m.kernel_file, "kernel_local": local,
        "kernel_display": display.replace('"', "'"),
        "ns_open": "".join(f"namespace {n} {{ " for n in ns), "ns_close": "} " * len(ns),
        "ns_qual": "".join(f"{n}::" for n in ns),
        "params": params, "structs": struct_ctx, "symbols": symbols,
        "grid": [int(x) for x in m.launch.grid], "block": [int(x) for x in m.launch.block],
        "shared_mem": int(m.launch.shared_mem),
        "input_sets": int(m.input_sets), "seed": int(m.seed), "repetitions": int(m.repetitions), "warmup": int(m.warmup),
        "target_s": _cpp_number(float(m.target_s)),
        "rtol": _cpp_number(float(m.rtol)), "atol": _cpp_number(float(m.atol)),
        "flags_text": "".join(" " + f for f in m.flags),
        "probe_tail": probe_tail([{"role": p.role, "value": p.value, "elem": p.elem, "space": p.space,
                                   "count_expr": p.count_expr} for p in m.params], 0),  # the harness
        # takes the largest buffer's size where that is more
        "smaller": _c_escape(", ".join(f"{m.params[i].name} = {v}" for i, v in sorted(smaller.items()))),
    }


def captured_sets(m: Manifest, mep_dir: Path | None) -> list[dict[str, Any]]:
    """The replayed launches of [capture] (s2s capture): per buffer the .npy before and after, per symbol its .npy."""
    if not m.capture or mep_dir is None:
        return []
    import json

    path = Path(mep_dir) / str(m.capture.get("index", "capture/index.json"))
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"capture.index: cannot read {path}: {exc}", file=str(Path(mep_dir) / "mep.toml")) from None
    wanted = {int(x) for x in m.capture.get("sets", [])}
    out = []
    for entry in index.get("sets", []):
        if (wanted and int(entry.get("launch", 0)) not in wanted) or not entry.get("replayed", True):
            continue
        params = entry.get("params", {})
        before, after = [], []
        for p in m.params:
            if p.role == "scalar" or p.shares:
                continue
            info = params.get(p.name, {})
            if p.fill == "null":  # a null pointer: no data (the harness allocates nothing for a count of 0)
                before.append("")
                after.append("")
                continue
            if info.get("kind") != "buffer":
                raise UserError(f"params.{p.name}: no captured data for this buffer in {path}", file=str(path))
            before.append(_c_escape(str(info["before"])))
            after.append(_c_escape(str(info["after"])))
        hb, ha = hidden_captured(entry, hidden_buffers(m, 0), str(path))
        before += [_c_escape(f) for f in hb]
        after += [_c_escape(f) for f in ha]
        syms = [_c_escape(str(entry.get("symbols", {}).get(s.name, {}).get("file", ""))) for s in m.symbols]
        label = f"captured input set (launch {entry.get('launch')} of the application, {entry.get('site', '?')})"
        out.append({"label": _c_escape(label), "before": before, "after": after, "syms": syms})
    return out


def _c_escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _param_ctx(i: int, p: ParamSpec, structs: _StructIndex, bi: int, tol: tuple[float, float]) -> dict[str, Any]:
    """Template values of parameter `i`; `bi` is its index among the buffers (the harness's pointer table), `tol`
    the (rtol, atol) its outputs are checked with."""
    buffer = p.role != "scalar"
    elem = _base_type(p.elem) or "float"
    visit = structs.visit(elem)
    if buffer:
        arg = f"s2s::DevPtr{{p[{bi}]}}"
    elif p.value == "random":
        arg = f"s2s::StructArg<{visit}>{{seed, {1000 + i}ULL, {_cpp_number(float(p.low))}, {_cpp_number(float(p.high))}}}"
    elif isinstance(p.value, dict):  # fields found in the host code; the rest from the seed
        sets = " ".join(f"v.{k} = {_cpp_number(val)};" for k, val in p.value.items())
        arg = (f"s2s::struct_arg<{visit}>(seed, {1000 + i}ULL, {_cpp_number(float(p.low))}, {_cpp_number(float(p.high))}, "
               f"[](auto& v) {{ {sets} }})")
    elif isinstance(p.value, str) and not _is_number(p.value):
        raise UserError(f"params.{p.name}.value = {p.value!r}: not a number", hint=p.hint or "fill it in mep.toml, or capture "
                        "it from a real run (s2s capture --build-cmd ... --run-cmd ...)")
    else:
        arg = _cpp_number(p.value)
    return {"i": i, "name": p.name, "role": p.role, "buffer": buffer, "shared": False, "elem": f"std::remove_cv_t<{elem}>", "elem_name": elem,
            "struct": structs.find(elem) is not None, "visit": visit,
            "count": int(p.count) if buffer else 0, "fill_mode": FILL_MODES.get(p.fill, 0),
            "low": _cpp_number(float(p.low)), "high": _cpp_number(float(p.high)), "arg": arg,
            "rtol": _cpp_number(float(tol[0])), "atol": _cpp_number(float(tol[1]))}


def render_harness(mep_dir: Path, m: Manifest) -> str:
    ctx = harness_context(m, (Path(mep_dir) / m.kernel_file).read_text(encoding="utf-8", errors="replace"))
    ctx["captured"] = captured_sets(m, mep_dir)
    by_name = struct_arg_contexts(m, mep_dir, ctx["struct_bufs"])  # structs passed by value, from their captured bytes
    ctx["struct_args"] = [dict(by_name[p["name"]], i=p["i"], name=p["name"]) for p in ctx["params"] if p["name"] in by_name]
    for p in ctx["params"]:
        if p["name"] in by_name:
            p["arg"] = f"s2s_captured_struct_{p['i']}{{p}}"
    if ctx["struct_bufs"] and not by_name:
        raise UserError("capture.struct_args: the captured data of the structs' pointers is missing",
                        file=str(Path(mep_dir) / "mep.toml"))
    scan = scan_source(mep_dir / m.kernel_file, include_dirs_of(m.flags, mep_dir) + [mep_dir])
    guarded = guarded_local_includes(mep_dir / m.kernel_file, include_dirs_of(m.flags, mep_dir) + [mep_dir])
    ctx["pre_includes"] = [*scan.system_includes, *guarded]
    ctx["macros"] = [x for x in dict.fromkeys([*m.macros, *scan.macros]) if _IDENT.match(x)]
    ctx["common"] = (templates_dir() / "s2s_harness_common.cuh").read_text(encoding="utf-8")
    return render("cuda_harness.cu.j2", **ctx)


# -- the backend ---------------------------------------------------------------------------------------
class CudaBackend(Backend):
    name: ClassVar[str] = "cuda"
    kernel_suffixes: ClassVar[tuple[str, ...]] = (".cu", ".cuh")
    tool_hint: ClassVar[str] = "install the CUDA toolkit or point S2S_NVCC at nvcc"
    keeps_reference_outputs: ClassVar[bool] = True  # the harness's --ref-cache

    # -- the compiler ----
    def compiler(self) -> list[str]:
        nvcc = os.environ.get("S2S_NVCC") or shutil.which("nvcc")
        if not nvcc:
            raise UserError("nvcc not found on PATH", hint=self.tool_hint)
        return [nvcc, "-O3", "-std=c++17", f"-arch={cuda_arch()}", "-lineinfo"]

    def compiler_label(self) -> str:
        return "nvcc"

    def extra_flags(self, mep_dir: Path) -> list[str]:
        return []

    # -- files in the MEP ----
    def write_files(self, mep_dir: Path, manifest: Manifest, *, readme: bool = False) -> list[Path]:
        mep_dir = Path(mep_dir)
        written = []
        harness = mep_dir / HARNESS
        write_if_changed(harness, render_harness(mep_dir, manifest))
        written.append(harness)
        written += self._support_files(mep_dir)
        mk = mep_dir / "Makefile"
        write_if_changed(mk, render("mep_Makefile.j2", backend=self.name, kernel_file=make_text(manifest.kernel_file),
                                    flags=make_text(" ".join(shlex.quote(f) for f in manifest.flags)), arch=cuda_arch(),
                                    harness=HARNESS))
        written.append(mk)
        rd = mep_dir / "README.md"
        if readme or not rd.exists() or awaits_fill_in(rd):  # the values are filled now: the usual README
            write_if_changed(rd, render("mep_README.md.j2", backend=self.name, kernel=manifest.kernel,
                                        kernel_file=manifest.kernel_file, tool=self.compiler_label()))
            written.append(rd)
        return written

    def _support_files(self, mep_dir: Path) -> list[Path]:
        return []

    def run(self, build: BuildResult, *, time: bool = True, sanitize: bool = False, harness_lock: Path | None = None,
            check: bool = True) -> Measurement:
        m = super().run(build, time=time, sanitize=sanitize, harness_lock=harness_lock, check=check)
        if any(e in msg for msg in m.messages for e in ("cudaErrorInsufficientDriver", "cudaErrorNoDevice")):
            m = m.with_messages("hint: this machine has no usable NVIDIA GPU or driver; the MEP builds here, run it on a GPU "
                                "machine (its README has the one command)")
        return m

    # -- build ----
    def build(self, target: Target) -> BuildResult:
        m = target.manifest
        mep = target.mep_dir
        bdir = target.build_dir
        bdir.mkdir(parents=True, exist_ok=True)
        self.write_files(mep, m)
        harness = mep / HARNESS
        inc_dirs = include_dirs_of(m.flags, mep) + [mep]

        defines: list[str] = []
        ref_inc = _include_copy(target.ref_file, bdir / "ref_copy" / target.ref_file.name)
        if ref_inc != target.ref_file:
            defines.append(f'-DS2S_REF_FILE="{ref_inc}"')
        var_inc = _include_copy(target.variant_file, bdir / "variant_copy" / target.variant_file.name, shared_with=target.ref_file)
        if target.variant is not None or var_inc != target.variant_file:
            defines.append(f'-DS2S_VARIANT_FILE="{var_inc}"')
        ref_scan = scan_source(target.ref_file, inc_dirs)
        var_scan = scan_source(target.variant_file, [target.variant_file.parent, *inc_dirs])
        extra = [i for i in var_scan.system_includes if i not in ref_scan.system_includes]
        pre = bdir / "s2s_variant_pre.h"
        write_if_changed(pre, "// system headers the variant includes and the reference does not\n"
                         + "".join(f"#if __has_include({i})\n#include {i}\n#endif\n" for i in extra))
        if extra:
            defines.append(f'-DS2S_VARIANT_PRE="{pre}"')
        binary = bdir / BINARY
        var_dir = [f"-I{target.variant_file.parent}"] if target.variant is not None else []
        compiler, extra_flags = self.compiler(), self.extra_flags(mep)
        whole = [*compiler, *extra_flags, *m.flags, f"-I{mep}", *var_dir, *defines, str(harness), "-o", str(binary)]
        run_obj, run_obj_s = harness_runtime.prebuilt(compiler, extra_flags, list(m.flags), mep)
        cmd = whole if run_obj is None else [*whole[:-3], harness_runtime.PREBUILT_DEFINE, *whole[-3:],
                                             *harness_runtime.link_flags(run_obj)]

        stamp_files = [harness, target.ref_file, target.variant_file, pre, *ref_scan.local_files, *var_scan.local_files]
        stamp_text = _stamp(cmd, stamp_files)
        stamp = bdir / "build.stamp"
        # what the bounds probe's outcome depends on: the reference and its headers, mep.toml, the harness, the target
        probe_key = key_of([self.name, *compiler[1:], *extra_flags, harness, mep / "mep.toml",
                            target.ref_file, *ref_scan.local_files])
        common = dict(mep_dir=mep, variant=target.variant, backend=self.name, kernel=m.kernel, build_dir=bdir,
                      command=tuple(cmd), timeout_s=float(m.timeout_s), env=(("CUDA_MODULE_LOADING", "EAGER"),),
                      extra={"launch": target.launch, "note": target.note, "probe_key": probe_key})
        if binary.is_file() and stamp.is_file() and stamp.read_text() == stamp_text:
            return BuildResult(ok=True, seconds=0.0, run_argv=(str(binary),), cached=True, **common)  # type: ignore[arg-type]
        stamp.unlink(missing_ok=True)
        rc, log, seconds = run_tool(cmd, cwd=mep)
        seconds += run_obj_s  # this build compiled the run every later one links
        if rc != 0 and cmd is not whole and harness_runtime.link_trouble(log):  # the prebuilt run does not fit: whole
            cmd, stamp_text = whole, _stamp(whole, stamp_files)
            common["command"] = tuple(cmd)
            rc, log, more = run_tool(cmd, cwd=mep)
            seconds += more
        (bdir / "build.log").write_text(" ".join(cmd) + "\n\n" + log, encoding="utf-8")
        if rc == 0 and binary.is_file():
            stamp.write_text(stamp_text)
            return BuildResult(ok=True, seconds=seconds, run_argv=(str(binary),), log=log, **common)  # type: ignore[arg-type]
        input_error, messages = classify_compile_errors(log, harness=harness, target=target, tool=self.compiler_label())
        return BuildResult(ok=False, seconds=seconds, log=log, messages=tuple(messages), input_error=input_error, **common)  # type: ignore[arg-type]

    # -- run ----
    def run_argv(self, build: BuildResult, *, time: bool) -> list[str]:
        launch = build.extra.get("launch")
        argv = list(build.run_argv)
        if launch is not None:
            argv += ["--var-grid", ",".join(str(x) for x in launch.grid), "--var-block", ",".join(str(x) for x in launch.block),
                     "--var-shmem", str(int(launch.shared_mem))]
        if not time:
            argv.append("--no-time")
        return argv

    def sanitize(self, build: BuildResult, m: Measurement) -> Measurement:
        tool = shutil.which("compute-sanitizer")
        if not tool:
            return m.with_messages("--sanitize: compute-sanitizer not found; ran without it")
        argv = [tool, "--tool", "memcheck", "--print-limit", "20", "--error-exitcode", "86",
                *self.run_argv(build, time=False), "--input-sets", "1"]
        from s2s.base.procs import run_group

        proc = run_group(argv, cwd=build.mep_dir, env=self.run_env(build), timeout_s=max(60.0, 10 * build.timeout_s))
        if proc.timed_out:  # its session killed whole: the harness under it too
            return m.with_messages("compute-sanitizer: killed after its time limit")
        lines = [ln[len("========= "):].rstrip() for ln in proc.output.splitlines() if ln.startswith("=========")]
        summary = next((ln for ln in lines if "ERROR SUMMARY" in ln), "")
        nerr = int(re.search(r"(\d+) error", summary).group(1)) if re.search(r"(\d+) error", summary) else 0  # type: ignore[union-attr]
        if not nerr:
            return m.with_messages("compute-sanitizer memcheck: no errors")
        findings = [ln.strip() for ln in lines if ln.strip() and "ERROR SUMMARY" not in ln][:12]
        text = "\n".join(lines)
        if "s2s_var" not in text and "s2s_ref" in text:
            return m.with_messages(f"compute-sanitizer: {nerr} error(s) in the reference kernel itself", *findings)
        from dataclasses import replace

        return replace(m, verdict=RUNTIME_FAILED).with_messages(f"compute-sanitizer memcheck: {summary.strip()}", *findings)


# -- helpers -------------------------------------------------------------------------------------------
_CONSTANT = re.compile(r"^[ \t]*(?:static[ \t]+)?__constant__[^;{}()=]*?\b(\w+)[ \t]*(?:\[[^;{}\]]*\][ \t]*)*;", re.M)


def _top_level_constants(text: str) -> list[re.Match[str]]:
    """The `__constant__` declarations at file scope without an initializer (brace depth counted once, in text order)."""
    out, depth, at = [], 0, 0
    for mt in _CONSTANT.finditer(text):
        depth += text.count("{", at, mt.start()) - text.count("}", at, mt.start())
        at = mt.start()
        if depth == 0:
            out.append(mt)
    return out


def _share_constants(text: str, ref_text: str) -> str:
    """The variant's copy of each `__constant__` array the reference declares the same way becomes the reference's
    (`using ::s2s_ref::NAME;`): kernels cannot write constant memory and the harness fills both alike, and two copies
    of a 64000-byte table do not fit the 64 KiB a module may hold (Parboil's cp: "too much global constant data")."""
    ref = {" ".join(mt.group(0).split()) for mt in _top_level_constants(ref_text)}
    parts, at = [], 0
    for mt in _top_level_constants(text):
        if " ".join(mt.group(0).split()) in ref:
            parts += [text[at:mt.start()], f"using ::s2s_ref::{mt.group(1)};" + "\n" * mt.group(0).count("\n")]
            at = mt.end()
    return "".join(parts) + text[at:]


def _include_copy(src: Path, dst: Path, shared_with: Path | None = None) -> Path:
    """The file to #include for `src`: itself, or a copy whose `extern "C"` and `#pragma once` would break
    the two-namespace harness, with a #line directive so that diagnostics still name `src`. With `shared_with`
    (the reference, for the variant's copy), constant arrays declared alike in both are the reference's."""
    text = src.read_text(encoding="utf-8", errors="replace")
    shared = text
    if shared_with is not None and "__constant__" in text:
        shared = _share_constants(text, shared_with.read_text(encoding="utf-8", errors="replace"))
    if shared == text and not re.search(r'extern\s*"C"|#\s*pragma\s+once', text):
        return src
    text = shared
    fixed = re.sub(r"^([ \t]*#[ \t]*pragma[ \t]+once)", lambda mm: " " * len(mm.group(1)), text, flags=re.M)
    fixed = re.sub(r'extern\s*"C"(\s*\{)?', lambda mm: ("namespace" + mm.group(1)) if mm.group(1)
                   else " " * len(mm.group(0)), fixed)
    write_if_changed(dst, f'#line 1 "{src}"\n' + fixed)
    return dst


def _stamp(cmd: list[str], files: list[Path]) -> str:
    h = hashlib.sha256("\0".join(cmd).encode())
    for f in files:
        h.update(str(f).encode())
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(b"<missing>")
    return h.hexdigest()


# nvcc (EDG front end): path(123): error: message      host compiler: path:123:4: error: message
_DIAG = re.compile(r"^(?P<file>[^\s(][^(]*?)\((?P<line>\d+)\): (?P<kind>error|catastrophic error|warning)[^:]*: (?P<msg>.*)$"
                   r"|^(?P<file2>[^\s:][^:]*):(?P<line2>\d+):(?:\d+:)? (?P<kind2>error|fatal error|warning): (?P<msg2>.*)$")
_AT_LINE = re.compile(r"at line (\d+) of (\S+)")
_ENTRY = re.compile(r"//\s*s2s-entry:\s*(\S+)")


def _line_tags(harness: Path) -> dict[int, str]:
    """Line number -> the mep.toml entry of the statement on that line (`// s2s-entry: params.x.elem`)."""
    tags: dict[int, str] = {}
    pending: list[int] = []
    try:
        lines = harness.read_text(encoding="utf-8").splitlines()
    except OSError:
        return tags
    for no, text in enumerate(lines, 1):
        mt = _ENTRY.search(text)
        pending.append(no)
        if mt:
            for k in pending:
                tags[k] = mt.group(1)
            pending = []
        elif text.rstrip().endswith((";", "{", "}")) or not text.strip():
            pending = []
    return tags


def _rel(text: str, mep: Path) -> str:
    return text.replace(str(mep) + os.sep, "")


def classify_compile_errors(log: str, *, harness: Path, target: Target, tool: str) -> tuple[str | None, list[str]]:
    """(input error naming the mep.toml entry, or None when the variant is at fault; messages)."""
    mep = target.mep_dir
    tags = _line_tags(harness)
    ref, var = target.ref_file.resolve(), target.variant_file.resolve()
    errors: list[tuple[Path | None, int, str, list[str]]] = []
    lines = log.splitlines()
    for i, text in enumerate(lines):
        mt = _DIAG.match(text.strip())
        if not mt or "warning" in (mt.group("kind") or mt.group("kind2") or ""):
            continue
        file = mt.group("file") or mt.group("file2")
        line = int(mt.group("line") or mt.group("line2"))
        msg = (mt.group("msg") or mt.group("msg2") or "").strip()
        ctx = []
        for follow in lines[i + 1:i + 12]:
            if _DIAG.match(follow.strip()):
                break
            ctx.append(follow)
        errors.append((_resolve(file, mep), line, msg, ctx))
    ptxas = [ln.strip() for ln in lines if ln.strip().startswith("ptxas") and "error" in ln]
    messages = [_rel(ln, mep) for ln in error_excerpt(lines)]
    if not errors and not ptxas:
        messages = messages or [_rel(ln, mep) for ln in lines[-15:]]
        if target.variant is None:
            return f"the reference does not build with {tool}: " + (messages[0] if messages else "no diagnostics"), messages
        return None, [f"{tool} failed", *messages]

    def tag_of(err: tuple[Path | None, int, str, list[str]]) -> str | None:
        file, line, _msg, ctx = err
        if file is not None and file == harness.resolve():
            if line in tags:
                return tags[line]
        for c in ctx:
            at = _AT_LINE.search(c)
            if at and _resolve(at.group(2), mep) == harness.resolve() and int(at.group(1)) in tags:
                return tags[int(at.group(1))]
        return None

    in_variant = target.variant is not None and (
        any(f is not None and f == var for f, *_ in errors)
        or any((tag_of(e) or "").startswith("variant.") for e in errors)
        or any("s2s_var" in p for p in ptxas))
    if in_variant:
        return None, [f"the variant does not compile ({tool}):", *messages]
    if errors and errors[0][0] is not None and errors[0][0] == ref:  # the kernel file's own error comes first: the
        # harness's (`fn_traits<<error-type>>` of a kernel that did not parse) follow from it
        return (f"{target.manifest.kernel_file}:{errors[0][1]}: the reference kernel file does not compile: "
                f"{errors[0][2]}"), messages
    for e in errors:
        tag = tag_of(e)
        if tag and not tag.startswith("variant."):
            value = _entry_value(target.manifest, tag)
            return f"{tag}{value}: {_strip_s2s(e[2])}", messages
    for f, line, msg, _ctx in errors:
        if f is not None and f == ref:
            return (f"{target.manifest.kernel_file}:{line}: the reference kernel file does not compile: {msg}"), messages
    if target.variant is None:
        first = errors[0] if errors else None
        where = f" ({_rel(str(first[0]), mep)}:{first[1]})" if first and first[0] else ""
        return f"the reference does not build{where}: " + (first[2] if first else ptxas[0]), messages
    return None, [f"the variant does not compile ({tool}):", *messages]


def _strip_s2s(msg: str) -> str:
    mt = re.search(r'"s2s: ([^"]*)"', msg)
    return mt.group(1) if mt else msg


def _entry_value(m: Manifest, tag: str) -> str:
    parts = tag.split(".")
    if parts[0] == "kernel":
        return f" = {m.kernel!r}" + (f" (template_args = {m.template_args!r})" if m.template_args else "")
    if parts[0] == "params" and len(parts) == 3:
        p = next((p for p in m.params if p.name == parts[1]), None)
        if p is not None:
            return f" = {getattr(p, parts[2], '')!r}"
    return ""


def _resolve(file: str, mep: Path) -> Path | None:
    try:
        p = Path(file)
        return (p if p.is_absolute() else mep / p).resolve()
    except (OSError, ValueError):
        return None


def error_excerpt(lines: list[str], limit: int = 25) -> list[str]:
    """The compiler's error lines, each with the (at most two) source lines it quotes after it, up to `limit` lines."""
    out: list[str] = []
    for i, ln in enumerate(lines):
        if re.search(r"\berror\b", ln):
            out.append(ln.rstrip())
            out += [x.rstrip() for x in lines[i + 1:i + 3] if x.strip() and not re.search(r"\berror\b", x)]
        if len(out) >= limit:
            break
    return out[:limit]
