"""Stage 5: splice a verified winner back into the application, as a diff or in place with rollback."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from s2s.base import journal
from s2s.base.encoding import UTF8, decode, encode, encoding_of, recode
from s2s.base.errors import UserError
from s2s.base.fsutil import atomic_write
from s2s.base.paths import contained, inside
from s2s.base.procs import Interrupted, run_group, signals_raise
from s2s.base.treelock import tree_busy, tree_lock
from s2s.lang.parsing import parse
from s2s.mep.manifest import Manifest, load
from s2s.mep.variant import Variant
from s2s.scan.inventory import FileFacts
from s2s.scan.sources import SourceFile

from .diff import file_diff


@dataclass
class Plan:
    files: dict[Path, tuple[bytes, bytes]]  # path -> (old, new)
    root: Path
    notes: list[str] = field(default_factory=list)
    manual: list[str] = field(default_factory=list)  # launch sites to change by hand
    mep_dir: Path | None = None  # where the backups of an in-place change go (unless it lies in the tree)

    def diff(self) -> bytes:
        """The unified diff of every changed file, in each file's own bytes (`s2s.reintegrate.diff`)."""
        return b"".join(file_diff(old, new, path.relative_to(self.root).as_posix())
                        for path, (old, new) in sorted(self.files.items()))


def choose_variant(mep_dir: Path, variant: str) -> tuple[str, dict[str, object]]:
    """(variant id, its history row as JSON) for `best` or an id; refuse unverified variants, and (when the MEP
    holds the application's captured data) variants that failed on it or were not checked on it."""
    from s2s.capture.verify import refusal
    from s2s.mep.history import History

    db = mep_dir / "history.sqlite"
    if not db.is_file():
        raise UserError("this MEP has no optimization history", file=str(mep_dir), hint="run `s2s optimize` first")
    hist = History(db)
    try:
        row = hist.best() if variant == "best" else hist.get(variant)
    finally:
        hist.close()
    if row is None:
        raise UserError("no verified variant to reintegrate" if variant == "best" else f"no variant '{variant}' in this MEP",
                        file=str(mep_dir))
    if row.status != "ok":
        raise UserError(f"variant {row.id} failed verification ({row.status}); only verified variants are reintegrated",
                        file=str(mep_dir))
    why = refusal(row, load(mep_dir), mep_dir)
    if why:
        raise UserError(why[0], file=str(mep_dir), hint=why[1])
    return row.id, {"origin": row.origin, "speedup": row.speedup}


def _kernel_span(data: bytes, dialect: str, name: str) -> tuple[int, int] | None:
    src = SourceFile(Path("k"), "k.cl" if dialect == "opencl" else "k.cu", data)
    for k in FileFacts(src).kernels():
        if k.name == name:
            return k.start_byte, k.end_byte
    return None


# one parse of a text for the splice's readers of it (its items, its parameter lists; the same file is read for the
# helpers, the original's items and the prototypes of one reintegration): trees are only read here
_parsed = lru_cache(maxsize=8)(parse)

_ITEMS = {"function_definition", "template_declaration", "struct_specifier", "class_specifier", "type_definition", "declaration",
          "preproc_ifdef", "preproc_if"}


def _top_level_items(data: bytes, dialect: str, skip: tuple[int, int] = (0, 0)) -> list[tuple[str, bytes]]:
    """(head, text) of each top-level definition or declaration: functions, templates, structures, typedefs,
    variables, guarded blocks (`#ifndef S2S_... #endif`); a comment right before an item goes with it, and a
    structure keeps its `;`. Items overlapping `skip` (the kernel itself) are left out."""
    tree = _parsed(data, dialect)
    out = []
    kids = tree.root_node.children
    for i, node in enumerate(kids):
        if node.type not in _ITEMS:
            continue
        start, end = node.start_byte, node.end_byte
        if start < skip[1] and skip[0] < end:
            continue
        if i > 0 and kids[i - 1].type == "comment" and data.count(b"\n", kids[i - 1].end_byte, start) <= 1:
            start = kids[i - 1].start_byte
        if i + 1 < len(kids) and kids[i + 1].type == ";":
            end = kids[i + 1].end_byte
        out.append((data[node.start_byte:node.end_byte].decode("utf-8", "replace").split("(")[0], data[start:end]))
    return out


def locate_original(m: Manifest, root: Path, force: bool, toml: Path | None = None) -> tuple[Path, bytes, int, int, list[str]]:
    origin = m.origin
    path = contained(origin.get("file"), root, entry="origin.file", source=toml or "mep.toml",
                     where="the application tree (--tree)")
    if not path.is_file():
        raise UserError("the kernel's original file is gone", file=str(path))
    data = path.read_bytes()
    start, end = int(origin["start_byte"]), int(origin["end_byte"])  # type: ignore[call-overload]
    want = str(origin["sha256"])
    notes: list[str] = []
    if hashlib.sha256(data[start:end]).hexdigest() == want:
        return path, data, start, end, notes
    dialect = m.dialect
    span = _kernel_span(data, dialect, m.kernel.split("::")[-1])
    if span is None:
        raise UserError(f"kernel {m.kernel} is no longer in this file", file=str(path))
    s, e = span
    if hashlib.sha256(data[s:e]).hexdigest() == want:
        notes.append(f"{m.kernel} moved from byte {start} to {s} in {origin['file']}; found again by name and text")
        return path, data, s, e, notes
    line = data.count(b"\n", 0, s) + 1
    if not force:
        raise UserError(f"kernel {m.kernel} changed since it was extracted (sha256 differs)", file=str(path), line=line,
                        hint="re-extract and optimize again, or pass --force to replace the current definition anyway")
    notes.append(f"{m.kernel} changed since extraction; replaced anyway (--force)")
    return path, data, s, e, notes


_NESTING = {"template_declaration", "linkage_specification", "declaration_list", "namespace_definition", "preproc_ifdef",
            "preproc_if", "preproc_else", "preproc_elif"}


def _parameter_lists(data: bytes, dialect: str, name: str, bodies: bool) -> list[tuple[int, int]]:
    """The byte spans of the parameter lists of the functions called `name` in `data`: of its definitions (`bodies`)
    or of its prototypes, declarations without a body (also inside a template, an `extern "C"` block, a namespace or
    a preprocessor conditional)."""
    want = name.encode()
    found: list[tuple[int, int]] = []

    def visit(node) -> None:  # type: ignore[no-untyped-def]
        for c in node.children:
            if c.type in _NESTING:
                visit(c)
            elif c.type == ("function_definition" if bodies else "declaration"):
                for d in c.children:
                    ident, params = d.child_by_field_name("declarator"), d.child_by_field_name("parameters")
                    if d.type == "function_declarator" and ident is not None and params is not None and \
                            data[ident.start_byte:ident.end_byte].split(b"::")[-1].strip() == want:
                        found.append((params.start_byte, params.end_byte))
    visit(_parsed(data, dialect).root_node)
    return found


def _same_text(a: bytes, b: bytes) -> bool:
    return b" ".join(a.split()) == b" ".join(b.split())


def prototype_edits(data: bytes, dialect: str, name: str, old_params: bytes, new_params: bytes,
                    skip: tuple[int, int] = (0, 0)) -> list[tuple[int, int, bytes]]:
    """(start, end, text) edits giving the prototypes of kernel `name` in `data` (outside `skip`, the definition) the
    variant's parameter list `new_params` where the variant changed the definition's `old_params`: a pass that made a
    pointer `const` changes the kernel's type, and a launch compiled against the old prototype then called a kernel
    defined nowhere (`undefined reference to solve(..., double*, double*)` at the application's link). The prototype's
    own names go with it; a prototype with default arguments is left as it is."""
    if _same_text(old_params, new_params):
        return []
    return [(s, e, new_params) for s, e in _parameter_lists(data, dialect, name, bodies=False)
            if not (s < skip[1] and skip[0] < e) and b"=" not in data[s:e]]


def _apply(data: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    for s, e, text in sorted(edits, reverse=True):
        data = data[:s] + text + data[e:]
    return data


def splice_kernel(data: bytes, kernel: tuple[int, int], var_src: bytes, span: tuple[int, int], ref_src: bytes,
                  dialect: str, name: str) -> bytes:
    """The original file `data` with its kernel (bytes kernel[0]..kernel[1]) replaced by the variant's (`span` of
    `var_src`), and before it the variant's new top-level helpers (those neither the MEP's reference `ref_src` nor the
    file has); the kernel's prototypes in the file take the variant's parameter list (prototype_edits). The MEP is
    UTF-8; what goes into a file of another encoding is recoded to it, and every byte outside the kernel, the helpers
    and the prototypes stays as it was."""
    enc = encoding_of(data)
    ref_funcs = {body for _n, body in _top_level_items(ref_src, dialect)}
    orig_funcs = {encode(decode(body, enc), UTF8) for _n, body in _top_level_items(data, dialect)}  # as the MEP has them
    helpers = [body for head, body in _top_level_items(var_src, dialect, span)
               if body not in ref_funcs and body not in orig_funcs and name not in head.split()[-1:]]
    insert = b"".join(recode(h, enc) + b"\n\n" for h in helpers)
    start, end = kernel
    edits = [(start, end, insert + recode(var_src[span[0]:span[1]], enc))]
    old, new = _old_and_new_parameters(data, kernel, var_src, span, dialect, name)
    edits += prototype_edits(data, dialect, name, old, recode(new, enc), skip=kernel)
    new_data = _apply(data, edits)
    if not new_data.endswith(b"\n") and data.endswith(b"\n"):
        new_data += b"\n"
    return new_data


def _old_and_new_parameters(data: bytes, kernel: tuple[int, int], var_src: bytes, span: tuple[int, int], dialect: str,
                            name: str) -> tuple[bytes, bytes]:
    """The parameter lists of the original definition (bytes `kernel` of `data`) and of the variant's (`span` of
    `var_src`, UTF-8 as the MEP holds it); both empty where either is not found."""
    mine, theirs = data[kernel[0]:kernel[1]], var_src[span[0]:span[1]]
    old = [mine[s:e] for s, e in _parameter_lists(mine, dialect, name, bodies=True)]
    new = [theirs[s:e] for s, e in _parameter_lists(theirs, dialect, name, bodies=True)]
    if len(old) != 1 or len(new) != 1:
        return b"", b""
    return old[0], new[0]


def header_prototypes(path: Path, data: bytes, kernel: tuple[int, int], var_src: bytes, span: tuple[int, int],
                      dialect: str, name: str, root: Path) -> dict[Path, tuple[bytes, bytes]]:
    """The headers of the tree that the kernel's file includes by a quoted name (found next to it, and the headers
    those include: scan_source) whose prototypes of the kernel take the variant's parameter list:
    {header: (before, after)}."""
    from s2s.mep.backends.base import scan_source

    old, new = _old_and_new_parameters(data, kernel, var_src, span, dialect, name)
    out: dict[Path, tuple[bytes, bytes]] = {}
    if _same_text(old, new):
        return out
    for header in scan_source(path, []).local_files:
        if not inside(header, root):
            continue
        hdata = header.read_bytes()
        edits = prototype_edits(hdata, dialect, name, old, recode(new, encoding_of(hdata))) if name.encode() in hdata else []
        if edits:
            out[header] = (hdata, _apply(hdata, edits))
    return out


def plan(mep: str | Path, variant: str = "best", tree: str | None = None, force: bool = False) -> Plan:
    mep_dir = Path(mep)
    if not mep_dir.exists():
        raise UserError("MEP directory not found", file=str(mep))
    m = load(mep_dir)
    root = Path(tree or str(m.origin.get("tree", ""))).resolve()
    vid, _row = choose_variant(mep_dir, variant)
    vdir = mep_dir / "variants" / vid
    var_src = (vdir / m.kernel_file).read_bytes()
    ref_src = (mep_dir / m.kernel_file).read_bytes()
    dialect = m.dialect
    name = m.kernel.split("::")[-1]
    span = _kernel_span(var_src, dialect, name)
    if span is None:
        raise UserError(f"variant {vid} does not define {m.kernel}", file=str(vdir / m.kernel_file))
    path, data, start, end, notes = locate_original(m, root, force, mep_dir / "mep.toml")
    new_data = splice_kernel(data, (start, end), var_src, span, ref_src, dialect, name)
    files = {path: (data, new_data)}
    files.update(header_prototypes(path, data, (start, end), var_src, span, dialect, name, root))
    p = Plan(files=files, root=root, mep_dir=mep_dir.resolve(), notes=notes + [f"{m.kernel}: variant {vid} ({_row['origin']}, {_row['speedup']:.2f}x)"])
    for q in m.params:
        if q.tol_from and q.rtol is not None and q.rtol > m.rtol and not m.capture:  # widened by s2s, not held to real data
            p.notes.append(f"warning: {m.kernel} sums floats into {q.name} with atomics; the winner was held to rtol {q.rtol:g} "
                           f"there on the MEP's inputs, and on larger values its (better-ordered) sum can differ from the "
                           "original's by more: check the application's results with --test-cmd, or hold it to the application's "
                           f"data first (s2s capture TREE --kernel {m.kernel} ... --into MEP, then s2s verify MEP)")
    v = Variant.read(vdir)
    if v.block is not None and (v.block != tuple(m.launch.block) or (v.grid or m.launch.grid) != tuple(m.launch.grid)):
        from .launch_sites import apply_launch_change

        apply_launch_change(p, m, root, v.grid or m.launch.grid, v.block, list(v.launch_rules) or None)
    return p


def backup_root(p: Plan) -> Path:
    """Backups of in-place changes live outside the user's tree: in the MEP, else in the user's cache."""
    if p.mep_dir is not None and not inside(p.mep_dir, p.root):
        return p.mep_dir / BACKUPS
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "s2s" / "backups"


BACKUPS = ".s2s-backup"


def apply_in_place(p: Plan, build_cmd: str | None, test_cmd: str | None, timeout_s: float = 1800) -> list[str]:
    """Write atomically with a backup and a journal; run the build and test commands; restore byte for byte on failure,
    on SIGINT or SIGTERM. Symlinked files are written through (the link stays a link)."""
    if p.manual:
        raise UserError("launch sites need changes by hand before the winner can run there: " + "; ".join(p.manual),
                        hint="write the diff with --diff, apply it and make those changes yourself")
    warnings = _dirty_warnings(p)
    changed: dict[Path, tuple[bytes, bytes]] = {}
    for path, (old, new) in p.files.items():
        if old == new:
            continue
        real = path.resolve()
        if not inside(real, p.root):
            raise UserError(f"{path} leads outside the application tree ({p.root}); nothing was changed", file=str(path))
        if not _writable(real):
            raise UserError("file is not writable", file=str(path))
        changed[real] = (old, new)
    with tree_lock(p.root, *{real.parent for real in changed}):
        for real, (old, _new) in changed.items():
            if real.read_bytes() != old:  # another run changed it since the plan was made
                raise UserError("file changed while the reintegration was being planned; nothing was changed", file=str(real),
                                hint="run the command again")
        backup = journal.new_backup_dir(backup_root(p))
        return _apply_journaled(p, changed, backup, build_cmd, test_cmd, timeout_s, warnings)


def _apply_journaled(p: Plan, changed: dict[Path, tuple[bytes, bytes]], backup: Path, build_cmd: str | None,
                     test_cmd: str | None, timeout_s: float, warnings: list[str]) -> list[str]:
    rels = {real: real.relative_to(p.root).as_posix() for real in changed}
    try:
        j = journal.begin(backup, p.root, {rels[r]: old for r, (old, _n) in changed.items()},
                          {rels[r]: new for r, (_o, new) in changed.items()}, mep=p.mep_dir)
    except OSError as exc:  # a full disk or a read-only MEP: before the tree was touched
        shutil.rmtree(backup, ignore_errors=True)
        raise UserError(f"cannot write the backup ({exc.strerror or exc}); nothing was changed", file=str(backup),
                        hint="free space or make the MEP writable, then run again") from None
    written: list[Path] = []

    def record(sid: int, marker: str) -> None:
        nonlocal j
        j = journal.add_session(j, sid, marker)

    try:
        with signals_raise():
            for real, (_old, new) in changed.items():
                atomic_write(real, new)
                written.append(real)
            for label, cmd in (("build", build_cmd), ("test", test_cmd)):
                if cmd:
                    _run_checked(label, cmd, p.root, timeout_s, record)
    except BaseException as exc:
        try:
            for real in written:
                atomic_write(real, changed[real][0])
        except OSError as again:  # the disk is still full: the journal stays, so that --restore finishes the job
            raise UserError(f"cannot restore {real} ({again.strerror or again}); the backup stays in {backup / 'files'}",
                            file=str(real), hint=f"free space, then run `{restore_command(p.mep_dir, j)}`" if p.mep_dir
                            else "free space, then run --restore") from None
        journal.end(j, keep_backup=False)
        if isinstance(exc, OSError):
            raise UserError(f"cannot write {exc.filename or 'a file of the tree'} ({exc.strerror or exc}); "
                            "the original files were restored", hint="free space, then run again") from None
        if isinstance(exc, (Interrupted, KeyboardInterrupt)):
            signo = exc.signo if isinstance(exc, Interrupted) else 2
            raise Interrupted(signo, f"interrupted by {'SIGTERM' if signo == 15 else 'SIGINT'} during the in-place "
                                     "reintegration; the original files were restored") from None
        raise
    journal.end(j, keep_backup=True)
    return warnings + [f"backup of the original files in {backup / 'files'}"]


def interrupted(mep_dir: Path) -> list[journal.Journal]:
    """In-place reintegrations from this MEP (or with their backup in the user's cache, when they name no other MEP)
    that never finished."""
    out = journal.pending(Path(mep_dir) / BACKUPS)
    me = str(Path(mep_dir).resolve())
    cached = journal.pending(backup_root(Plan(files={}, root=Path("/"), mep_dir=None)))
    return out + [j for j in cached if j.mep is None or j.mep == me]


def restore_command(mep_dir: Path, j: journal.Journal) -> str:
    """The command that restores `j`: with `--tree` when the change went into a tree other than the MEP's own."""
    recorded = str(load(Path(mep_dir)).origin.get("tree", "")) if (Path(mep_dir) / "mep.toml").is_file() else ""
    other = not recorded or Path(recorded).resolve() != j.tree.resolve()
    return f"s2s reintegrate {mep_dir} --restore" + (f" --tree {j.tree}" if other else "")


def check_not_interrupted(mep_dir: Path) -> None:
    for j in interrupted(mep_dir):
        if tree_busy(j.tree):
            raise UserError(f"an in-place reintegration into {j.tree} is in progress ({', '.join(j.files)})",
                            file=str(j.path), hint="wait for it to finish")
        raise UserError(f"an in-place reintegration into {j.tree} was interrupted; {', '.join(j.files)} may hold the "
                        f"new kernel without having been built or tested (backup in {j.dir / 'files'})",
                        file=str(j.path), hint=f"put the originals back with `{restore_command(mep_dir, j)}`")


def restore_interrupted(mep_dir: Path, tree: str | None = None) -> list[str]:
    """Put back the originals of this MEP's interrupted in-place changes: only into its application tree (the one
    mep.toml records, or `tree`), holding that tree's lock."""
    pending = interrupted(mep_dir)
    if not pending:
        return ["nothing to restore: no interrupted reintegration"]
    trees = [Path(str(load(Path(mep_dir)).origin.get("tree", "")) or mep_dir).resolve()]
    if tree:
        trees.append(Path(tree).resolve())
    out = []
    for j in pending:
        root = j.tree.resolve()
        if root not in trees:
            journal.restore(j, trees)  # refuses, naming the journal's tree
        dirs = {(root / rel).resolve().parent for rel in j.files if isinstance(rel, str) and rel}
        with tree_lock(root, *(d for d in dirs if d.is_dir() and d.is_relative_to(root))):
            out += journal.restore(j, trees)
    return out


def _writable(path: Path) -> bool:
    """Writable by permission bits too: a file the user made read-only stays untouched, even for root."""
    import os
    import stat

    mode = path.stat().st_mode
    return bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _run_checked(label: str, cmd: str, cwd: Path, timeout_s: float, on_start: Callable[[int, str], None] | None = None) -> None:
    res = run_group(cmd, cwd=cwd, timeout_s=timeout_s, on_start=on_start)
    if res.timed_out:
        raise UserError(f"{label} command timed out after {timeout_s:g} s (its process group was killed); "
                        "the original files were restored", hint=cmd)
    if res.returncode != 0:
        tail = res.output.strip().splitlines()[-1:] or [""]
        raise UserError(f"{label} command failed (exit {res.returncode}): {tail[0][:200]}; the original files were restored",
                        hint=cmd)


def _dirty_warnings(p: Plan) -> list[str]:
    if shutil.which("git") is None:
        return []
    out = []
    for path in p.files:
        res = subprocess.run(["git", "status", "--porcelain", "--", str(path)], cwd=path.parent, capture_output=True, text=True)
        if res.returncode == 0 and res.stdout.strip():
            out.append(f"warning: {path} has uncommitted changes in its git work tree")
    return out

