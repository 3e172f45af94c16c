"""Writing an MEP directory: the extracted kernel file, mep.toml with inferred values, the origin."""
from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

from s2s.base.errors import UserError
from s2s.base.records import Index, Kernel, LaunchSite
from s2s.lang.macros import function_macros
from s2s.mep.manifest import DEFAULT_RTOL, LaunchSpec, Manifest, ParamSpec, save
from s2s.scan.compdb import CompileCommand
from s2s.scan.sources import SourceFile, check_tree

from .default_run import settle_run
from .extract import Extraction, extract, load_tree, write_extraction
from .hostcode import Program
from .infer import Trail, Values, active_text, choose_site, collect_macros, infer, tree_files

NL = b"\n"
_STRUCT = re.compile(r"^\s*(?:typedef\s+)?(?:struct|class)\s+([A-Za-z_]\w*)?\s*\{", re.S)


def opencl_build_options(kernel_file: str, files: dict[str, SourceFile], program: Program, values: Values) -> tuple[str, str]:
    """(options, where) passed to clBuildProgram for the program built from `kernel_file`."""
    base = Path(kernel_file).name
    for rel, source in files.items():
        if source.data.find(base.encode()) < 0 or rel.endswith((".cl", ".h")):
            continue
        for m in re.finditer(rb'"[^"\n]*' + re.escape(base.encode()) + rb'"', source.data):
            scope = program.scope_at(source, m.start())
            call = source.data[m.start(): source.data.find(b";", m.start())].decode("utf-8", "replace")
            where = f"{rel}:{source.data.count(NL, 0, m.start()) + 1}"
            for arg in re.findall(r'"(-[^"]*)"|,\s*([A-Za-z_]\w*)\s*\)', call):
                literal, ident = arg
                if literal:
                    return literal, where
                if ident:
                    opts = _formatted(ident, source, scope, values)
                    if opts:
                        return opts, where
    return "", ""


def _formatted(ident: str, source: SourceFile, scope, values: Values) -> str:  # type: ignore[no-untyped-def]
    fn_text = source.text(scope.fn.start_byte, scope.fn.end_byte) if scope.fn is not None else source.text()
    m = re.search(r"s?n?printf\s*\(\s*" + re.escape(ident) + r"\s*,(?:[^,]*,)?\s*\"([^\"]*)\"\s*((?:,[^;]*)?)\)\s*;", fn_text)
    if m:
        fmt, rest = m.group(1), m.group(2)
        args = [a.strip() for a in rest.split(",") if a.strip()]
        out = fmt
        for a in args:
            v = values.number(a, scope, Trail())
            out = re.sub(r"%[-0-9]*(?:z|l|ll)?[dius]", str(int(v)) if v is not None else a, out, count=1)
        return out
    found = scope.definition(ident)
    if found is not None and found.expr.startswith('"'):
        return found.expr.strip('"')
    return ""


def write_mep(ex: Extraction, out: Path, tree: Path, overrides: dict[str, str]) -> Manifest:
    files = ex.files or load_tree(tree)
    by_rel = tree_files(files)
    program = Program(files)
    defines = dict(ex.defines)
    flag_where = ex.flags_from or "compile_commands.json"
    site = ex.launches[0] if ex.launches else None
    host_defines = _host_defines(site.file if site else "", tree, ex)
    defines = {**host_defines, **defines}
    macros, macro_notes = _unit_macros(ex, tree, files, site, defines, flag_where)
    ex.notes.extend(macro_notes)
    if site is not None and ex.kernel.language != "opencl":
        run_note = settle_run(program, site.file, tree)
        if run_note:
            ex.notes.append(run_note)
    values = Values(program, macros, overrides)
    unknown: set[str] = set()
    if len(ex.launches) > 1:  # the site whose `if` conditions hold; when that is not known, what differs is FILL-IN
        site, unknown = choose_site(ex.launches, values, by_rel, ex.notes)
    flags: list[str] = []
    if ex.kernel.language == "opencl":
        opts, where = opencl_build_options(ex.kernel.file, by_rel, program, values)
        flags = [o for o in opts.split() if o.startswith("-D")]
        for flag in flags:
            name, _, val = flag[2:].partition("=")
            macros.setdefault(name, (val or "1", f"OpenCL build option at {where}"))
    else:
        flags = [f"-D{k}={v}" for k, v in defines.items() if k not in overrides]
    flags = [f for f in flags if f[2:].partition("=")[0] not in overrides] + [f"-D{k}={v}" for k, v in overrides.items()]
    flags += [f"-I{d}" for d in ex.include_dirs]
    if ex.compile is not None and ex.kernel.language != "opencl":  # the build's -use_fast_math, -ftz=true, ...
        flags += [f for f in ex.compile.numerics_flags if f not in flags]
    if ex.kernel.language != "opencl":  # nvcc passes -D values through a shell: refuse what would run there
        _check_tree_flags(flags, tree, overrides)
    struct_texts = {}
    symbol_texts = []
    for d in ex.items:
        if d.kind == "type":
            m = _STRUCT.match(d.text)
            if m:
                struct_texts[d.names[0]] = d.text
        if d.kind in {"variable", "block"} and re.search(r"__constant__|__device__", d.text):
            for name in d.names:  # a namespace's constant is named as the harness must write it
                symbol_texts.append((f"{d.namespace}::{name}" if d.namespace else name, d.text))
    kernel_text = ex.text.encode()[ex.kernel_range[0]: ex.kernel_range[1]].decode()
    aliases = type_aliases(ex.items, macros)
    kernel = params_under_flags(ex.kernel, kernel_text, macros)
    inferred = infer(kernel, kernel_text, site, program, macros, overrides, struct_texts, symbol_texts, by_rel, aliases,
                     unknown, function_macros(ex.text.encode()))
    if ex.kernel.language in {"cuda", "hip"}:
        from .modernize import modernize

        modern, modern_notes = modernize(ex.text)
        if modern != ex.text:
            ex.text = modern
            span = _refind_kernel(modern, ex.kernel.name)
            if span is not None:
                ex.kernel_range = span
                kernel_text = modern.encode()[span[0]:span[1]].decode()
        ex.notes.extend(modern_notes)
    write_extraction(ex, out)
    params, tol_notes = reduction_tolerance(kernel_text, inferred.params, inferred.launch)
    manifest = Manifest(
        kernel=ex.kernel.qualified, backend=ex.kernel.language, kernel_file=_kernel_name(ex),
        origin={"tree": str(tree), "file": ex.kernel.file, "line": ex.kernel.line, "start_byte": ex.kernel.start_byte,
                "end_byte": ex.kernel.end_byte, "sha256": ex.kernel.sha256, "unit": ex.unit, "closure": ex.mode,
                "compile_command": ex.compile.command_text if ex.compile else "",
                "flags_from": ex.flags_from if ex.compile else "no compile flags found (none in the tree or its build)",
                "launch": f"{site.file}:{site.line}" if site else ""},
        params=params, launch=inferred.launch, flags=flags, template_args=inferred.template_args,
        symbols=inferred.symbols, structs=inferred.structs, sizes=inferred.sizes,  # type: ignore[arg-type]
        macros=sorted({n for d in ex.items if d.kind in {"macro", "block"} for n in d.names if re.fullmatch(r"[A-Z_][A-Z0-9_]*", n)}),
        notes=ex.notes + inferred.notes + tol_notes,
    )
    save(manifest, out)
    if not manifest.unfilled():  # with FILL-IN values left, `s2s run` writes the harness once they are filled
        from s2s.mep.backends import write_mep_files

        write_mep_files(out, manifest, readme=True)
    else:
        from s2s.mep.fill_in import readme

        (out / "README.md").write_text(readme(manifest))
    return manifest


def _check_tree_flags(flags: list[str], tree: Path, overrides: dict[str, str]) -> None:
    from s2s.base.cmdflags import danger
    from s2s.base.errors import UserError
    from s2s.scan.compdb import find_compdb

    for flag in flags:
        why = danger(flag)
        if why is None:
            continue
        name = flag.split("=", 1)[0]
        source = "the command line (-D)" if name[2:] in overrides else str(find_compdb(tree, None) or tree)
        raise UserError(f"flag {name!r} refused: {why}", file=source, hint="s2s runs no command taken from data")


def params_under_flags(kernel: Kernel, kernel_text: str, macros: dict[str, tuple[str, str]]) -> Kernel:
    """A parameter list with `#ifdef DOUBLE_PRECISION double* u, #else float* u, #endif` typed by the branch the unit's
    flags make active (scan reads it as a build without -D flags would)."""
    head = kernel_text[: kernel_text.find("{")] if "{" in kernel_text else kernel_text
    if not re.search(r"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else)\b", head, re.M):
        return kernel
    from s2s.lang.dialect import dialect_of
    from s2s.lang.kernel_facts import kernel_facts
    from s2s.lang.textsplit import blank_directives_in_lists

    active = blank_directives_in_lists(kernel_text.encode(), lambda name: name in macros)
    facts = kernel_facts(active, dialect_of(kernel.language), kernel.name)
    if facts is None or len(facts.params) != len(kernel.params):
        return kernel
    params = tuple(replace(old, type=f.type, base_type=f.base_type, pointer=f.pointer, const=f.const,
                           text=f"{f.type} {f.name}") for old, f in zip(kernel.params, facts.params))
    return replace(kernel, params=params)


def type_aliases(items: list, macros: dict[str, tuple[str, str]] | None = None) -> dict[str, str]:  # type: ignore[type-arg]
    """typedef and using aliases among the closure's items: {"real_t": "float"}; of a block under `#if`, only the
    branch active under the unit's macros (none when that cannot be decided: `#if CLASS == 'D'` long, else int).
    The aliases are read by s2s.lang.typedefs, as capture reads them."""
    from s2s.lang.typedefs import typedefs

    out: dict[str, str] = {}
    for d in items:
        if d.kind not in {"type", "block"}:
            continue
        body = d.text if "#" not in d.text else active_text(d.text, macros or {})
        if body is None or not re.search(r"\b(?:typedef|using)\b", body):
            continue
        for name, types in typedefs(body).items():
            out.setdefault(name, types[0])
    return out


def reduction_tolerance(kernel_text: str, params: list[ParamSpec], launch: LaunchSpec) -> tuple[list[ParamSpec], list[str]]:
    """A float output summed by atomics from many threads: the original's own rounding error is large.

    Summing N floats one after another loses about N * 2^-24 * 0.02 relative (2% for 16M terms, measured), so a
    faster, better-ordered sum differs from the original by that much; that output's rtol says so, at most 5%.
    The other outputs keep [check]'s tolerance. Returns the parameters (those outputs with their rtol) and a
    note for each.
    """
    threads = 1
    for g, b in zip(launch.grid, launch.block):
        if isinstance(g, int) and isinstance(b, int):
            threads *= max(g, 1) * max(b, 1)
    rtol = min(0.05, threads * 2.0**-24 * 0.05)
    if rtol <= DEFAULT_RTOL:
        return params, []
    out, notes = [], []
    for p in params:
        if p.role in ("out", "inout") and p.elem == "float" and isinstance(p.count, int) and p.count * 8 <= threads \
                and re.search(r"\b(atomicAdd|atomic_add|atomic_fetch_add\w*)\s*\(\s*&?\s*\(?\s*" + re.escape(p.name) + r"\b",
                              kernel_text):
            why = f"float sum by atomics from {threads} threads"
            p = replace(p, rtol=float(f"{rtol:.3g}"), tol_from=why)
            notes.append(f"params.{p.name}.rtol widened to {p.rtol:g}: {p.name} is a {why}, which carries the original's own "
                         "rounding error (a better-ordered sum differs from it by about that much); the other outputs keep "
                         "[check] rtol")
        out.append(p)
    return out, notes


def _refind_kernel(text: str, name: str) -> tuple[int, int] | None:
    from s2s.lang.kernel_facts import kernel_facts

    facts = kernel_facts(text.encode(), "cuda", name)
    return (facts.start, facts.end) if facts is not None else None


def _kernel_name(ex: Extraction) -> str:
    from .extract import KERNEL_EXT

    return "kernel" + KERNEL_EXT[ex.kernel.language]


def _unit_macros(ex: Extraction, tree: Path, files: dict[Path, SourceFile], site: LaunchSite | None,
                 defines: dict[str, str], flag_where: str) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """Macros as the launching unit and the kernel's unit see them (the preprocessor under their flags); without a
    preprocessor, the #defines of those units' own files, never those of the rest of the tree."""
    from s2s.scan.includes import IncludeGraph

    from .extract import choose_unit
    from .preprocess import macro_table

    graph = IncludeGraph(files)
    kernel_unit = (tree / ex.unit).resolve()
    units: list[tuple[Path, CompileCommand | None]] = []
    if site is not None and (tree / site.file).resolve() in files:
        site_unit = choose_unit((tree / site.file).resolve(), graph, {})
        units.append((site_unit, ex.compile if site_unit == kernel_unit else _command_for(site_unit, tree, ex)))
    units.append((kernel_unit, ex.compile))
    unit_files: dict[Path, bytes] = {}
    for unit, command in units:
        for p in graph.unit_order(unit, command.include_dirs if command else [])[0]:
            if p in files:
                unit_files[p] = files[p].data
    found = macro_table(units, unit_files, tree, ex.kernel.language, defines, flag_where)
    if found is not None:
        return found
    return collect_macros([files[p] for p in unit_files], defines, flag_where), [
        "macros read from the #defines of the unit's own files (no preprocessor could run it): #if branches not evaluated"]


def _command_for(unit: Path, tree: Path, ex: Extraction) -> CompileCommand | None:
    from s2s.scan.compdb import find_compdb, load_compdb

    path = find_compdb(tree, None)
    if path:
        return load_compdb(path).get(unit)
    from s2s.scan.build_flags import makefile_command

    return makefile_command(unit, tree)[0]


def _host_defines(site_file: str, tree: Path, ex: Extraction) -> dict[str, str]:
    """-D flags of the unit that holds the launch site (the kernel's unit may be compiled with others)."""
    from s2s.scan.compdb import find_compdb, load_compdb

    path = find_compdb(tree, None)
    if not path or not site_file:
        return {}
    db = load_compdb(path)
    target = (tree / site_file).resolve()
    cmd = db.get(target)
    return cmd.defines if cmd else {}


def make_mep(tree_arg: str, kernel: str, output: str | None, compile_commands: str | None = None, mode: str = "auto",
             allow_missing: bool = False, overrides: dict[str, str] | None = None,
             index: Index | None = None, force: bool = False, build_cmd: str | None = None) -> tuple[Path, Manifest, Extraction]:
    from .output_dir import check_place

    tree = check_tree(tree_arg)
    ex = extract(tree, kernel, compile_commands, mode, allow_missing, index=index, build_cmd=build_cmd)
    generated = _build_written(tree, ex, build_cmd)
    if generated:  # headers only the build writes (NPB's npbparams.hpp): extracted again from a copy that has them
        import tempfile

        from s2s.base.treefiles import copy_tree, owner_writable

        with tempfile.TemporaryDirectory(prefix="s2s-built-headers-") as tmp:
            built = Path(tmp) / tree.name
            copy_tree(tree, built, (".git",))
            owner_writable(built)
            for rel, data in generated.items():
                (built / rel).parent.mkdir(parents=True, exist_ok=True)
                (built / rel).write_bytes(data)
            ex2 = extract(built, kernel, compile_commands, mode, allow_missing, index=index, build_cmd=build_cmd)
            ex2.notes.append(f"extracted with the header(s) the build command writes, {', '.join(sorted(generated)[:6])}: "
                             "the build run in a scratch copy of the tree until they existed, then stopped")
            out = Path(output or f"mep-{ex2.kernel.name}")
            created = not out.exists()  # before check_place, which may make it
            check_place(out, tree, ex2.kernel.qualified, force)
            return _write(out, built, ex2, overrides, force, created, real_root=tree)
    out = Path(output or f"mep-{ex.kernel.name}")
    root = tree if tree.is_dir() else tree.parent
    created = not out.exists()
    check_place(out, root, ex.kernel.qualified, force)
    return _write(out, root, ex, overrides, force, created)


def _write(out: Path, root: Path, ex: Extraction, overrides: dict[str, str] | None, force: bool, created: bool,
           real_root: Path | None = None) -> tuple[Path, Manifest, Extraction]:
    """The MEP written to `out` from `root` (`created`: `out` did not exist before, so a failed write removes it);
    with `real_root`, `root` is a scratch copy of it (with the headers the build writes) and every path into the copy
    the MEP's files hold names the real tree instead."""
    from s2s.base.meplock import mep_lock

    from .output_dir import prepare_output

    with mep_lock(out, what="s2s extract"):  # never under a running optimize, nor beside another extract to the same -o
        prepare_output(out, real_root or root, ex.kernel.qualified, force=force)
        try:
            manifest = write_mep(ex, out, root, overrides or {})
            if real_root is not None:
                manifest = _renamed_root(out, manifest, root, real_root)
        except OSError as exc:  # a full disk, a quota: named, and a directory made for it removed again
            if created:
                shutil.rmtree(out, ignore_errors=True)
            raise UserError(f"cannot write the MEP ({exc.strerror or exc})" + ("" if created else "; it is incomplete"),
                            file=str(out), hint="free space (or choose another -o), then extract again") from None
    return out, manifest, ex


def _renamed_root(out: Path, manifest: Manifest, copy: Path, real: Path) -> Manifest:
    """The MEP's text files with the scratch copy's path (a unique temporary name) replaced by the real tree's."""
    from s2s.mep.manifest import load

    old, new = str(copy.resolve()), str(real.resolve())
    for f in sorted(out.rglob("*")):
        if not f.is_file() or f.suffix not in {".toml", ".json", ".md", ".cu", ".cuh", ".h", ".hpp", ".cl", ".hip", ""}:
            continue
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if old in text:
            f.write_text(text.replace(old, new), encoding="utf-8")
    return load(out) if (out / "mep.toml").is_file() else manifest


def _build_written(tree: Path, ex: Extraction, build_cmd: str | None) -> dict[str, bytes]:
    """{path: content} of the headers the unit includes that the tree lacks and its build writes (named by its build
    files), from the build command run in a scratch copy until they exist; empty when there are none."""
    if not build_cmd or not tree.is_dir():
        return {}
    from s2s.scan.generated_headers import build_written, generate
    from s2s.scan.includes import IncludeGraph

    root = tree.resolve()
    unit = (root / ex.unit).resolve()
    if unit not in ex.files:
        return {}
    dirs = list(ex.compile.include_dirs) if ex.compile else []
    _order, external = IncludeGraph(ex.files).unit_order(unit, dirs)
    names = [m.group(1) for line in external for m in re.finditer(r'#[ \t]*include[ \t]*"([^"\n]+)"', line)]
    names = [n for n in names if not any((d / n).is_file() for d in [unit.parent, *dirs])]
    wanted = build_written(root, names)
    return generate(root, build_cmd, wanted) if wanted else {}
