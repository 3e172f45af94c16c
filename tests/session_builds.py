"""Build products shared by the tests of one pytest session, on every xdist worker: each is made once, keyed by
everything its result depends on, so that sharing it changes no test's outcome.

conftest (on the controller) creates the directory and names it in S2S_TEST_SHARED for the workers and their children,
and removes it when the session ends. Without it (a helper called outside pytest) nothing is shared and every caller
builds for itself, as before.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

ENV = "S2S_TEST_SHARED"


def shared_dir() -> Path | None:
    value = os.environ.get(ENV)
    return Path(value) if value and Path(value).is_dir() else None


def key_of(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()[:32]


def built_once(name: str, key: str, build: Callable[[Path], None]) -> Path | None:
    """The session's directory `name`-`key`, `build(directory)` run on it by the first caller (the others wait on a
    lock); None without a shared directory or when the build failed (the caller then does without)."""
    root = shared_dir()
    if root is None:
        return None
    done = root / f"{name}-{key}"
    if done.is_dir():
        return done
    with open(root / f"{name}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_dir():
            return done
        work = root / f"{name}-{key}.partial"
        work.mkdir(exist_ok=True)
        try:
            build(work)
        except (OSError, subprocess.SubprocessError, AssertionError):
            return None
        work.rename(done)
    return done


def precompiled(compiler: str, flags: Sequence[str], headers: str) -> str:
    """The lines that begin a program compiled with `compiler *flags`: `headers` (its #include lines) as they are, or
    one #include of them from the session's precompiled header (built once with the same compiler and flags; g++
    takes a .gch beside the header only where it was made with those flags, and reads the same declarations as from
    the text: about 0.5 of the 1.0 CPU-seconds an emulated kernel's program took went to <barrier>, <thread> and the
    rest of the standard library)."""
    def build(work: Path) -> None:
        (work / "headers.h").write_text(headers)
        proc = subprocess.run([compiler, *flags, "-x", "c++-header", str(work / "headers.h"), "-o",
                               str(work / "headers.h.gch")], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]

    done = built_once("pch", key_of(compiler, *flags, headers), build)
    return f'#include "{done / "headers.h"}"\n' if done is not None else headers


THREADED_FLAGS = ("-O1", "-std=c++20", "-pthread", "-w")  # the threaded CPU emulators' g++ flags


def compile_threaded(compiler: str, source: Path, text: str, exe: Path) -> subprocess.CompletedProcess[str]:
    """g++ with THREADED_FLAGS over a program `text` (written to `source`) whose leading `#include <...>` lines are
    read from the session's precompiled header of those lines."""
    lines = text.splitlines(keepends=True)
    n = next((i for i, ln in enumerate(lines) if not ln.startswith("#include <")), len(lines))
    source.write_text(precompiled(compiler, THREADED_FLAGS, "".join(lines[:n])) + "".join(lines[n:]))
    return subprocess.run([compiler, *THREADED_FLAGS, str(source), "-o", str(exe)], capture_output=True, text=True,
                          timeout=120)


_INCLUDE_NAME = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.M)
_INCLUDE_MACRO = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[^<"\s]', re.M)  # `#include SOME_MACRO`: not followed here


def _include_dirs(flags: Sequence[str]) -> list[Path]:
    dirs, it = [], iter(flags)
    for f in it:
        if f == "-I":
            dirs.append(Path(next(it, "")))
        elif f.startswith("-I"):
            dirs.append(Path(f[2:]))
    return dirs


def check_key(flags: Sequence[str], file: Path) -> str:
    """What a compile check of `file` with `flags` depends on: the flags other than -I, the file's suffix and bytes,
    and each header it (or a header it includes) names that is found beside it or on an -I directory, by its
    place and bytes. An -I directory that holds none of the names included is left out: it cannot change the outcome.
    A file that includes a macro's expansion keeps its own directory in the key (shared with no other place)."""
    dirs = [d.resolve() for d in _include_dirs(flags)]
    seen: dict[Path, bytes] = {}
    todo = [file.resolve()]
    used: set[Path] = set()
    while todo:
        path = todo.pop()
        data = path.read_bytes()
        seen[path] = data
        if _INCLUDE_MACRO.search(data.decode("utf-8", "replace")):
            used.add(path.parent)
            dirs.append(path.parent)
        for name in _INCLUDE_NAME.findall(data.decode("utf-8", "replace")):
            for d in [path.parent, *dirs]:
                found = (d / name).resolve()
                if found.is_file():
                    used.update(x for x in dirs if x == d)
                    if found not in seen and found not in todo:
                        todo.append(found)
    parts: list[str | bytes] = [f for f in flags if not f.startswith("-I") and f not in {str(d) for d in _include_dirs(flags)}]
    parts += [str(d) for d in dirs if d in used]
    parts += [file.suffix, seen.pop(file.resolve())]
    for path in sorted(seen):
        parts += [str(path) if path.parent != file.resolve().parent else path.name, seen[path]]
    return key_of(*parts)


_LEADING = re.compile(r'^[ \t]*(?://.*)?$|^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"][ \t]*(?://.*)?$')
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w*)[ \t]*(\w*)", re.M)
_UNSURE = re.compile(r'extern\s+"C"|\boperator\b|\bmain\s*\(|template\s*<\s*>|\bnamespace\s+\w+\s*\{|\benum\b|\\\n'
                     r'|\bfriend\b|\basm\b|__asm__|\bR"')
_NOT_NAMES = {"__launch_bounds__", "__align__", "__attribute__", "alignas", "__declspec", "__cluster_dims__",
              "decltype", "sizeof"}
_WORD = re.compile(r"[A-Za-z_]\w*")


def _top_level_names(text: str) -> set[str] | None:
    """The names a unit declares at namespace scope: each identifier at brace and parenthesis depth 0 that precedes
    ( [ = ; , { or : (a function, a variable, a type, a typedef); template parameter lists are left out. None where
    its braces or parentheses do not balance (two such files could balance each other in one unit)."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'", " ", text, flags=re.S)
    text = re.sub(r"template\s*<[^<>]*>", " ", text)
    names: set[str] = set()
    braces = parens = 0
    last = ""
    for m in re.finditer(r"[A-Za-z_]\w*|\S", text):
        tok = m.group()
        if tok == "{":
            if braces == 0 and parens == 0 and last:
                names.add(last)
            braces += 1
        elif tok == "}":
            braces -= 1
            if braces < 0:
                return None
        elif braces == 0:
            if tok == "(":
                if parens == 0 and last:
                    names.add(last)
                parens += 1
            elif tok == ")":
                parens -= 1
                if parens < 0:
                    return None
            elif parens == 0 and tok in {"[", "=", ";", ",", ":"} and last:
                names.add(last)
        last = tok if _WORD.fullmatch(tok) else ""
    return names - _NOT_NAMES if braces == 0 and parens == 0 else None


def _declared(text: str) -> set[str]:
    """The names preprocessed header text declares outside function bodies (a function, a variable, a type, a
    typedef, at namespace scope, in an extern "C" block, a class or a namespace), and every name it calls: a superset
    of the names a unit's own declaration at namespace scope could collide with."""
    names: set[str] = set()
    bodies: list[bool] = []  # per open brace: a function body (its declarations are local)
    prev = last = ""
    for m in re.finditer(r"[A-Za-z_]\w*|\S", re.sub(r'^#.*$|"(?:\\.|[^"\\])*"', " ", text, flags=re.M)):
        tok = m.group()
        if tok == "{":
            bodies.append(any(bodies) or prev in {")", "const", "noexcept", "override", "final", "volatile", "]"})
        elif tok == "}":
            if bodies:
                bodies.pop()
        elif tok == "(" and last:
            names.add(last)
        elif last and not any(bodies) and tok in {"[", "=", ";", ",", ":", "{"}:
            names.add(last)
        if last in {"struct", "class", "union", "enum", "namespace"} and _WORD.fullmatch(tok):
            names.add(tok)
        if tok == "{" and last and not bodies[-1]:
            names.add(last)
        prev, last = tok, (tok if _WORD.fullmatch(tok) else "")
    return names


def _header_words(nvcc: str, flags: Sequence[str], includes: tuple[str, ...], timeout: float) -> set[str] | None:
    """The macros that `includes` (and nvcc's own cuda_runtime.h) define and the names they declare (_declared), host
    and device sides: the names a unit's own declaration or macro could collide with at namespace scope."""
    key = key_of(nvcc, *flags, *includes)
    if key not in _HEADER_WORDS:
        words: set[str] | None = set()
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "headers.h"  # compiled as CUDA (-x cu): cuda_runtime.h first, as in a .cu file
            src.write_text("".join(includes))
            base = [nvcc, "-E", *[f for f in flags if f != "-c"], "-x", "cu", str(src)]
            for extra in ([], ["-Xcompiler", "-dM"], ["-D__CUDA_ARCH__=900"]):
                out = Path(tmp) / "h.ii"
                proc = subprocess.run([*base, *extra, "-o", str(out)], capture_output=True, text=True, timeout=timeout)
                if proc.returncode != 0 or words is None or not out.is_file():
                    words = None
                    continue
                text = out.read_text(errors="replace")
                words |= set(re.findall(r"^#define (\w+)", text, re.M)) if "-dM" in extra else _declared(text)
        _HEADER_WORDS[key] = words
    return _HEADER_WORDS[key]


_HEADER_WORDS: dict[str, set[str] | None] = {}


def _batch_form(file: Path, flags: Sequence[str]) -> tuple[tuple[str, ...], str, set[str]] | None:
    """(its leading #include lines, each quoted header named by the place it is found, the rest of its text, the names
    it declares or #defines) for a file that gives the same outcome compiled inside a namespace of a combined unit
    after those includes as alone; None where that is not sure: any #include after the leading ones, #undef or a
    directive other than #define/#if*/#else/#endif/#pragma unroll, a line continuation, extern "C", main, an operator,
    an explicit specialization, a namespace, an enum, a qualified name (::), asm."""
    text = file.read_text(encoding="utf-8", errors="replace")
    if _UNSURE.search(text):
        return None
    lines = text.splitlines(keepends=True)
    includes: list[str] = []
    dirs = [file.parent, *_include_dirs(flags)]
    n = 0
    while n < len(lines) and (m := _LEADING.match(lines[n])) is not None:
        n += 1
        if m.group(1) == '"':
            found = next((d / m.group(2) for d in dirs if (d / m.group(2)).is_file()), None)
            if found is None:
                return None
            includes.append(f'#include "{found.resolve()}"\n')
        elif m.group(1) == "<":
            includes.append(f"#include <{m.group(2)}>\n")
    rest = "".join(lines[n:])
    defined, depth = set(), 0
    for kind, name in _DIRECTIVE.findall(rest):
        if kind not in {"define", "if", "ifdef", "ifndef", "elif", "else", "endif", "pragma"} or (
                kind == "pragma" and name not in {"unroll", "nounroll"}):  # another pragma could reach the next files
            return None
        depth += kind in {"if", "ifdef", "ifndef"}
        depth -= kind == "endif"
        if depth < 0:
            return None
        if kind == "define":
            defined.add(name)
    names = _top_level_names(rest)
    if depth != 0 or names is None:
        return None
    return tuple(includes), rest, names | defined


def _batches(nvcc: str, flags: Sequence[str], files: Sequence[Path], timeout: float,
             ) -> tuple[list[tuple[tuple[str, ...], list[tuple[Path, str, set[str]]]]], list[Path]]:
    """The files that can share one unit, grouped by their leading includes, and the rest (compiled alone)."""
    groups: dict[tuple[str, ...], list[tuple[Path, str, set[str]]]] = {}
    alone: list[Path] = []
    for f in files:
        form = _batch_form(f, flags)
        words = _header_words(nvcc, flags, form[0], timeout) if form is not None else None
        if form is None or words is None or form[2] & words:
            alone.append(f)
        else:
            groups.setdefault(form[0], []).append((f, form[1], form[2]))
    return [(k, v) for k, v in groups.items() if len(v) > 1], alone + [g[0][0] for g in groups.values() if len(g) == 1]


def _combined(includes: tuple[str, ...], group: list[tuple[Path, str, set[str]]]) -> str:
    """One unit: the shared includes, then each file's text in a namespace of its own, its macros #undef'd after it
    (no header defines them: _batches), so that no file sees another's names or macros."""
    out = list(includes)
    for i, (f, rest, names) in enumerate(group):
        out.append(f'namespace s2s_batch_{i} {{\n#line 1 "{f}"\n{rest}\n}}\n')
        out += [f"#undef {name}\n" for name in sorted(names)]
    return "".join(out)


def _compile(nvcc: str, flags: Sequence[str], files: Sequence[Path], output_dir: Path, timeout: float, chunk: int,
             done: Path | None, keys: dict[Path, str], out: list[str], err: list[str],
             ) -> subprocess.CompletedProcess[str] | None:
    """nvcc over `files`, `chunk` an invocation, each chunk marked done as it passes (its output added to `out` and
    `err`); the first failing result."""
    todo = list(files)
    while todo:
        batch = [f for f in todo if done is None or not (done / keys[f]).exists()][:chunk]
        if not batch:
            break
        cmd = [nvcc, *device_only(flags), *map(str, batch), "--output-directory", str(output_dir)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            return proc
        out.append(proc.stdout)
        err.append(proc.stderr)
        _mark(done, [keys[f] for f in batch])
        todo = [f for f in todo if f not in batch]
    return None


def _mark(done: Path | None, keys: Sequence[str]) -> None:
    if done is not None:
        done.mkdir(exist_ok=True)
        for k in keys:
            (done / k).touch()


def device_only(flags: Sequence[str]) -> list[str]:
    """A compile check's flags with `-c` run as `-cubin`: nvcc's front end parses and checks every function of the
    file, host ones included, as for `-c`, and cicc and ptxas compile the device code the same way (-Werror
    all-warnings holds as before: they are nvcc's warnings); only the host compiler, which compiled the host stubs and
    the samples' unchanged host code, is not run (test_everything_compiles: 65 -> 34 s here)."""
    return ["-cubin" if f == "-c" else f for f in flags]


def nvcc_checks(nvcc: str, flags: Sequence[str], files: Sequence[Path], output_dir: Path,
                timeout: float, chunk: int = 8) -> subprocess.CompletedProcess[str]:
    """`nvcc FLAGS FILES --output-directory OUTPUT_DIR` (a compile check: the outputs are not read; `-c` runs as `-cubin`,
    device_only) over the files
    whose check_key has not compiled cleanly yet in this session: a file with the same bytes, headers and flags as one
    another test (or this call) compiled is not compiled again.

    Files that can share a unit (_batch_form: the same leading includes, no name or macro of their own that a header
    declares, nothing a namespace would change) are compiled `chunk` at a time in one unit, each in a namespace of
    its own: nvcc's fixed cost (cuda_runtime.h through its front end, cicc and the host compiler, about 0.9 of the
    1.0 CPU-seconds a small file took) is paid once a unit. A unit that fails proves nothing: its files are then
    compiled one by one as before, and their result is the one returned. The others are compiled `chunk` files an
    nvcc. Each unit or chunk is marked done as it passes, so that a test running beside this one on another worker
    skips what this one has checked so far (and this one what it checked). The first failing result is returned as
    nvcc gave it; when every file passed (or nothing was left), a clean result with their output."""
    keys = {Path(f): check_key(flags, Path(f)) for f in files}
    root = shared_dir()
    done = root / "nvcc-checked" if root is not None else None
    firsts: dict[str, Path] = {}
    for f, k in keys.items():
        firsts.setdefault(k, f)
    todo = [f for f in firsts.values() if done is None or not (done / keys[f]).exists()]
    groups, alone = _batches(nvcc, flags, todo, timeout)
    out: list[str] = []
    err: list[str] = []
    for includes, group in groups:
        for i in range(0, len(group), chunk):
            part = [g for g in group[i:i + chunk] if done is None or not (done / keys[g[0]]).exists()]
            if not part:
                continue
            unit = output_dir / f"s2s_batch_{key_of(*(keys[g[0]] for g in part))[:12]}.cu"
            unit.write_text(_combined(includes, part))
            proc = subprocess.run([nvcc, *device_only(flags), str(unit), "-o", str(unit.with_suffix(".o"))], capture_output=True,
                                  text=True, timeout=timeout)
            if proc.returncode == 0:
                _mark(done, [keys[g[0]] for g in part])
                out.append(proc.stdout)
                err.append(proc.stderr)
            else:
                alone += [g[0] for g in part]
    failed = _compile(nvcc, flags, alone, output_dir, timeout, chunk, done, keys, out, err)
    if failed is not None:
        return failed
    return subprocess.CompletedProcess([nvcc, *flags], 0, "".join(out), "".join(err))
