"""A kernel template's arguments from the argument types of a launch that let the compiler deduce them.

`scale<<<g, b>>>(d_out, d_in, n)` with `template <typename T> __global__ void scale(T* out, const T* in, int n)`: the
capture runtime records the launch's argument types as the host compiler names them (`argtypes float*|const float*|int`,
templates/capture/runtime_cuda.h.j2); each declared parameter type is matched against its argument's type the way C++
deduces from a call (`T*` against `float*` gives T = float, `const T*` against `float*` too, `Vec<T, N>` against
`Vec<float, 4>` gives T = float and N = 4). A template parameter that no parameter's type names (a block size given only
between the angle brackets) cannot be deduced: the result says so.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_CV = {"const", "volatile"}
_DROPPED = {"restrict", "__restrict__", "__restrict", "struct", "class", "union", "enum", "typename"}
_BUILTIN_WORDS = {"unsigned", "signed", "short", "long", "int", "char", "float", "double", "bool", "void", "wchar_t",
                  "char8_t", "char16_t", "char32_t", "__int128"}
_TOKEN = re.compile(r"\s*(::|\.\.\.|&&|[A-Za-z_]\w*|\{anonymous\}|\(anonymous namespace\)|-?\d[\w.']*|.)")
_NAME = re.compile(r"[A-Za-z_]\w*$|\{anonymous\}$|\(anonymous namespace\)$")
# the compilers' names of an anonymous namespace: gcc `{anonymous}`, clang `(anonymous namespace)`, nvcc's front end
# `_GLOBAL__N__<hash>_<file>`
_ANONYMOUS = re.compile(r"^(?:\{anonymous\}|\(anonymous namespace\)|_GLOBAL__N_\w*)$")


class Unsolvable(Exception):
    """Why the template arguments cannot be deduced; the message completes "template_args: ..."."""


@dataclass(frozen=True)
class CType:
    """A type: cv-qualifiers and name of its base (`Vec`, `unsigned int`), the base's template arguments (types, or
    values as text), then the declarator from the base outwards: ("*", cv), ("&", ()), ("&&", ())."""
    cv: frozenset[str]
    name: str
    args: tuple[CType | str, ...] | None = None
    ops: tuple[tuple[str, frozenset[str]], ...] = ()

    def spell(self) -> str:
        base = self.name + (f"<{', '.join(a if isinstance(a, str) else a.spell() for a in self.args)}>"
                            if self.args is not None else "")
        out = " ".join([*sorted(self.cv), base])
        for op, cv in self.ops:
            out += op + "".join(" " + q for q in sorted(cv))
        return out

    def top_cv(self) -> frozenset[str]:
        return self.ops[-1][1] if self.ops else self.cv

    def with_top_cv(self, cv: frozenset[str]) -> CType:
        if self.ops:
            return CType(self.cv, self.name, self.args, self.ops[:-1] + ((self.ops[-1][0], cv),))
        return CType(cv, self.name, self.args, ())


def builtin_spelling(words: list[str]) -> str:
    """One spelling of each builtin type: `long unsigned int`, `unsigned long` -> `unsigned long int`."""
    sign = "unsigned" if "unsigned" in words else "signed" if "signed" in words and "char" in words else ""
    size = " ".join(w for w in words if w in {"short", "long"})
    core = [w for w in words if w not in {"unsigned", "signed", "short", "long", "int"}]
    base = core[0] if core else "int"
    if base == "double" and size == "long":
        return "long double"
    return " ".join(x for x in (sign, size, base) if x)


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = [t for t in _TOKEN.findall(text) if t.strip()]
        self.i = 0

    def peek(self) -> str:
        return self.toks[self.i] if self.i < len(self.toks) else ""

    def take(self) -> str:
        tok = self.peek()
        self.i += 1
        return tok

    def type(self) -> CType:
        cv: set[str] = set()
        words: list[str] = []
        name = ""
        args: tuple[CType | str, ...] | None = None
        while True:
            tok = self.peek()
            if tok in _CV:
                cv.add(self.take())
            elif tok in _DROPPED:
                self.take()
            elif tok in _BUILTIN_WORDS and not name:
                words.append(self.take())
            elif not name and not words and (tok == "::" or _NAME.match(tok)):
                name, args = self.qualified_name()
            else:
                break
        if words:
            name = builtin_spelling(words)
        if not name:
            raise ValueError(f"no type name at {self.peek()!r}")
        ops: list[tuple[str, frozenset[str]]] = []
        while self.peek() in {"*", "&", "&&"}:
            op = self.take()
            qual: set[str] = set()
            while self.peek() in _CV or self.peek() in _DROPPED:
                tok = self.take()
                if tok in _CV:
                    qual.add(tok)
            ops.append((op, frozenset(qual)))
        return CType(frozenset(cv), name, args, tuple(ops))

    def qualified_name(self) -> tuple[str, tuple[CType | str, ...] | None]:
        parts: list[str] = []
        args: tuple[CType | str, ...] | None = None
        if self.peek() == "::":
            self.take()
        while True:
            part = self.take()
            if not _NAME.match(part):
                raise ValueError(f"not a name: {part!r}")
            args = self.template_args() if self.peek() == "<" else None
            if not _ANONYMOUS.match(part):
                parts.append(part + (_spell_args(args) if args is not None and self.peek() == "::" else ""))
            if self.peek() != "::":
                break
            self.take()
        return "::".join(parts), args

    def template_args(self) -> tuple[CType | str, ...]:
        self.take()  # <
        out: list[CType | str] = []
        while self.peek() not in {">", ""}:
            start = self.i
            depth = 0
            while self.peek() and not (depth == 0 and self.peek() in {",", ">"}):
                tok = self.take()
                depth += tok in "<(["
                depth -= tok in ")]" or (tok == ">" and depth > 0)
            out.append(_arg(_join(self.toks[start:self.i])))
            if self.peek() == ",":
                self.take()
        if self.take() != ">":
            raise ValueError("unclosed template argument list")
        return tuple(out)


def _spell_args(args: tuple[CType | str, ...]) -> str:
    return f"<{', '.join(a if isinstance(a, str) else a.spell() for a in args)}>"


def _join(tokens: list[str]) -> str:
    """Tokens as text, a blank only between two words: `(Mode)1`, `ns::Vec<float, 4>`."""
    out = ""
    for tok in tokens:
        word = bool(re.match(r"[\w{(]", tok))
        out += (" " if out and word and re.search(r"[\w})]$", out) else "") + tok + (" " if tok == "," else "")
    return out


def _arg(text: str) -> CType | str:
    """A template argument: a type where it parses as one whole, else the value's text (non-type)."""
    if re.fullmatch(r"-?\d[\w.']*|true|false", text.strip()):
        return text.strip()
    try:
        return parse_type(text)
    except ValueError:
        return text.strip()


def _value(text: str) -> str:
    """A non-type template argument as compared: gcc's `4`, a source's `4u` or `(int)4` -> `4`."""
    t = re.sub(r"^\(\s*[\w: ]+\s*\)\s*", "", " ".join(text.split()))
    return re.sub(r"^(-?\d+)(?:[uUlL]+)$", r"\1", t)


def split_args(text: str) -> list[str]:
    """A template parameter or argument list split at its top-level commas, angle brackets counted:
    `typename T, int N = Vec<T, 2>::n` -> [`typename T`, `int N = Vec<T, 2>::n`]."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "<([{"
        depth -= ch in ">)]}" and depth > 0
        cur += ch
    return [x for x in [*out, cur.strip()] if x]


def parse_type(text: str) -> CType:
    """`const float *__restrict__` -> CType; ValueError for what this small grammar does not read (function
    pointers, arrays, decltype)."""
    p = _Parser(text)
    t = p.type()
    if p.peek():
        raise ValueError(f"unexpected {p.peek()!r} in {text!r}")
    return t


@dataclass(frozen=True)
class TemplateParam:
    name: str
    kind: str  # type | value | template
    default: str = ""
    pack: bool = False


def template_params(decls: list[str] | tuple[str, ...]) -> list[TemplateParam]:
    """`("typename T", "int N = 4", "class... Ts")` -> parameters (name, kind, default, pack)."""
    out = []
    for d in decls:
        head, eq, default = d.partition("=")
        names = re.findall(r"[A-Za-z_]\w*", head)
        if not names:
            continue
        kind = "template" if head.strip().startswith("template") else \
            "type" if names[0] in {"typename", "class"} else "value"
        out.append(TemplateParam(names[-1], kind, default.strip() if eq else "", "..." in head))
    return out


class _Unifier:
    def __init__(self, params: list[TemplateParam]) -> None:
        self.params = {p.name: p for p in params}
        self.bound: dict[str, CType | str] = {}
        self.given: set[str] = set()  # named at the launch (`k<256><<<...>>>`): substituted, never deduced

    def bind(self, name: str, value: CType | str, where: str) -> None:
        if name in self.given:
            return
        old = self.bound.get(name)
        if old is not None and _key(old) != _key(value):
            raise Unsolvable(f"{name} would be both {_text(old)} and {_text(value)} ({where})")
        self.bound[name] = value

    def match(self, p: CType, a: CType, where: str) -> None:
        """Deduce from parameter type `p` against argument type `a`, outermost declarator first."""
        pops, aops = list(p.ops), list(a.ops)
        if pops and pops[-1][0] in {"&", "&&"}:  # a reference parameter binds the argument itself
            pops.pop()
        if aops and aops[-1][0] in {"&", "&&"}:
            aops.pop()
        top = True
        while pops:
            if not aops or aops[-1][0] != pops[-1][0]:
                raise Unsolvable(f"{where}: the argument's type {a.spell()} does not fit {p.spell()}")
            pcv, acv = pops.pop()[1], aops.pop()[1]
            if not top and not acv <= pcv:
                raise Unsolvable(f"{where}: the argument's type {a.spell()} does not fit {p.spell()}")
            top = False
        rest = CType(a.cv, a.name, a.args, tuple(aops))
        if p.name in self.params and p.args is None:
            kind = self.params[p.name].kind
            if kind != "type":
                raise Unsolvable(f"{where}: {p.name} is not a type parameter")
            # the base's own qualifiers (`const T*`) are not part of T; at the top level of a value, neither are A's
            cv = rest.top_cv() - p.cv if not top else frozenset()
            self.bind(p.name, rest.with_top_cv(cv), where)
            return
        if aops:
            raise Unsolvable(f"{where}: the argument's type {a.spell()} does not fit {p.spell()}")
        if p.name in self.params and self.params[p.name].kind == "template":  # `C<T>` against `Vec<float>`: C = Vec
            self.bind(p.name, rest.name, where)
        elif not _same_name(p.name, rest.name):
            raise Unsolvable(f"{where}: the argument's type {a.spell()} is not a {p.spell()}")
        if p.args is None:
            return
        if rest.args is None or len(rest.args) < len(p.args):
            raise Unsolvable(f"{where}: the argument's type {a.spell()} does not fit {p.spell()}")
        for k, (pa, aa) in enumerate(zip(p.args, rest.args)):
            sub = f"{where}, template argument {k + 1}"
            if isinstance(pa, CType) and pa.name in self.params and pa.args is None and not pa.ops and not pa.cv \
                    and self.params[pa.name].kind != "type":
                self.bind(pa.name, aa if isinstance(aa, str) else aa.spell(), sub)
            elif isinstance(pa, CType) and isinstance(aa, CType):
                self.match(pa, aa, sub)
            elif isinstance(pa, CType) and pa.name in self.params and pa.args is None:
                self.bind(pa.name, aa, sub)
            # a value expression (`N - 1`) is not deduced from; the launch compiled, so the rest fits


def _same_name(p: str, a: str) -> bool:
    """`Vec` names `ns::Vec`: the declared name may leave out the namespaces the argument's name has."""
    ps, as_ = p.split("::"), a.split("::")
    return ps == as_[-len(ps):]


def _text(v: CType | str) -> str:
    return v if isinstance(v, str) else v.spell()


def _key(v: CType | str) -> str:
    return _value(v) if isinstance(v, str) else v.spell()


def _mentions(t: CType | str, names: set[str]) -> bool:
    if isinstance(t, str):
        return bool(set(re.findall(r"[A-Za-z_]\w*", t)) & names)
    return t.name in names or any(_mentions(a, names) for a in t.args or ())


def solve(decls: list[str] | tuple[str, ...], param_types: list[str], arg_types: list[str], given: str = "") -> str:
    """The template argument list (`float, 4`) of the kernel template declared with template parameters `decls`, whose
    parameters have `param_types`, launched with arguments of `arg_types` and the first template arguments `given` at
    the launch (`256` of `k<256><<<g, b>>>(x, n)`); Unsolvable says why not."""
    params = template_params(decls)
    if not params:
        raise Unsolvable("the kernel has no template parameters to deduce")
    if any(p.pack for p in params):
        raise Unsolvable(f"the template parameter pack {next(p.name for p in params if p.pack)} is not deduced here")
    if len(param_types) != len(arg_types):
        raise Unsolvable(f"the kernel has {len(param_types)} parameters and the launch {len(arg_types)} arguments")
    u = _Unifier(params)
    names = set(u.params)
    for tp, text in zip(params, split_args(given)):
        u.bound[tp.name] = _arg(text) if tp.kind == "type" else text
        u.given.add(tp.name)
    for k, (pt, at) in enumerate(zip(param_types, arg_types)):
        where = f"parameter {k + 1} ({pt.strip()})"
        try:
            p = parse_type(pt)
        except ValueError:
            if names & set(re.findall(r"[A-Za-z_]\w*", pt)):
                raise Unsolvable(f"{where}: the declared type is not read here") from None
            continue
        if not _mentions(p, names):
            continue  # not deduced from: the argument converts to it
        try:
            a = parse_type(at)
        except ValueError:
            raise Unsolvable(f"{where}: the recorded argument type {at!r} is not read here") from None
        u.match(p, a, where)
    undeduced = [tp.name for tp in params if tp.name not in u.bound and not tp.default]
    if undeduced:
        raise Unsolvable(f"{', '.join(undeduced)}: not deduced from the launch's arguments (a template parameter that no "
                         "kernel parameter's type names, such as a size given only between the angle brackets)")
    out: list[str] = []
    for k, tp in enumerate(params):  # a defaulted parameter is left out at the end, spelled out before a deduced one
        if tp.name in u.bound:
            out.append(_text(u.bound[tp.name]))
        elif any(later.name in u.bound for later in params[k + 1:]):
            if set(re.findall(r"[A-Za-z_]\w*", tp.default)) & names:
                raise Unsolvable(f"{tp.name}: its default ({tp.default}) names other template parameters")
            out.append(tp.default)
    return ", ".join(out)


def substitute(text: str, decls: list[str] | tuple[str, ...], targs: str) -> str:
    """`text` (an element type: `T`, `Vec<T, N>`) with the template parameters replaced by the arguments `targs`."""
    values = dict(zip([p.name for p in template_params(decls)], split_args(targs)))
    if not values:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in values) + r")\b")
    return pattern.sub(lambda m: values[m.group(1)], text)


def declared_template(path: Path, rel: str, kernel: str) -> tuple[str, ...] | None:
    """The template parameters (`("class T", "int N")`) of kernel `kernel` (qualified or not) as the file at `path`
    (`rel` in its tree) defines it, () for a plain kernel; None where the file does not define it."""
    from s2s.scan.inventory import FileFacts
    from s2s.scan.sources import SourceFile

    if not path.is_file():
        return None
    short = kernel.split("::")[-1].partition("<")[0]
    kernels = [k for k in FileFacts(SourceFile(path, rel, path.read_bytes())).kernels() if k.name == short]
    best = [k for k in kernels if k.qualified == kernel] or kernels
    return best[0].template_params if best else None
