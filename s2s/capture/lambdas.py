"""Kernel templates instantiated with an extended `__device__` lambda (`for_all(n, [=] __device__ (int i) {...})`):
the instance that ran is `k<__nv_dl_wrapper_t<__nv_dl_tag<SIG, &Enclosing::fn, N>, T1, T2, ...>>`, a type nvcc makes
up for the lambda and that no MEP can name. The lambda is the MEP's functor instead: a struct whose members are the
lambda's captures, in the order nvcc lays them out (T1, T2, ... are the captured variables' types in the order of their
first use in the body; the wrapper holds them as plain members f1, f2, ... in that order, so the captured bytes of the
argument replay into the struct unchanged), and whose `operator()` is the lambda's own body.

    functor_for(template_args, sources) -> Functor | str     (the functor, or why not: the caller keeps FILL-IN)

`sources` maps a file's name to its text (the application's tree). The lambda is found by its enclosing function's
name (and class) and its number among that function's extended lambdas (nvcc counts from 1 in order of appearance).
Refused, with the reason: by-reference or `this` captures, a function that cannot be told among its namesakes, a
capture count that does not match the wrapper's, an enclosing template parameter the body uses that cannot be bound."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from s2s.extract.closure import declared_names, identifiers, is_builtin
from s2s.lang.textsplit import matching_close, split_top_level

_WRAPPER = "__nv_dl_wrapper_t<"
_TAG = re.compile(r"^__nv_dl(?:_trailing_return)?_tag<(?P<args>.*)>$", re.S)
_LAMBDA = re.compile(r"\[(?P<cap>[^\[\]]*)\]\s*(?:__host__\s*)?__device__\s*(?:__host__\s*)?\(")
_COMMENT_OR_STRING = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)


@dataclass(frozen=True)
class Functor:
    name: str  # s2s_lambda_FN_N
    wrapper: str  # the __nv_dl_wrapper_t<...> text it stands for
    code: str  # the struct, for the MEP's kernel file
    where: str  # FILE:LINE of the lambda


def wrapper_in(text: str) -> str:
    """The first `__nv_dl_wrapper_t<...>` in `text` (its brackets balanced), or ""."""
    at = text.find(_WRAPPER)
    if at < 0:
        return ""
    depth = 0
    for i in range(at + len(_WRAPPER) - 1, len(text)):
        depth += {"<": 1, ">": -1}.get(text[i], 0)
        if depth == 0:
            return text[at:i + 1]
    return ""


def _blank(text: str) -> str:
    """Comments and string contents as spaces: offsets stay those of the text."""
    return _COMMENT_OR_STRING.sub(lambda m: " " * len(m.group(0)), text)


def _function_bodies(clean: str, cls: str, fn: str) -> list[tuple[int, int, int]]:
    """(start of the head, `{`, `}`) of each definition of `fn` that belongs to `cls` (out of class as `cls<...>::fn`,
    or inside `struct/class cls {...}`); of every free `fn` when `cls` is empty."""
    out = []
    for m in re.finditer(r"(?<![\w.>])" + re.escape(fn) + r"\s*\(", clean):
        close = matching_close(clean, m.end() - 1, "()")
        after = re.match(r"\s*(?:const\s*)?(?:noexcept\s*)?(?:override\s*)?\{", clean[close + 1:]) if close > 0 else None
        if after is None:
            continue
        open_at = close + after.end()
        head = clean[max(0, m.start() - 200):m.start()]
        qualified = re.search(r"(\w+)\s*(?:<[^<>;{}]*>)?\s*::\s*$", head)
        if cls and not (qualified and qualified.group(1) == cls) and not _inside_class(clean, m.start(), cls):
            continue
        if not cls and qualified:
            continue
        out.append((m.start(), open_at, matching_close(clean, open_at, "{}")))
    return out


def _inside_class(clean: str, at: int, cls: str) -> bool:
    for m in re.finditer(r"\b(?:struct|class)\s+" + re.escape(cls) + r"\b[^;{]*\{", clean[:at]):
        if matching_close(clean, m.end() - 1, "{}") > at:
            return True
    return False


def enclosing_name(args: list[str]) -> str:
    """The enclosing function's qualified name from a lambda tag's middle arguments, as demanglers write it:
    `&Field<double>::axpy`, `&(scale(double*, double, long))`, `&(void scale<float>(float*, float, long))`,
    `scale` (without `&`); "" when none reads as a name."""
    for arg in args:
        s = arg.strip().lstrip("&").strip()
        while s.startswith("(") and matching_close(s, 0, "()") == len(s) - 1:
            s = s[1:-1].strip()
        if s.endswith(")"):  # its parameter list: the `(` whose `)` ends the text, outside any <...>
            depth = 0
            for i in range(len(s) - 1, -1, -1):
                depth += {")": 1, "(": -1}.get(s[i], 0)
                if depth == 0:
                    s = s[:i].strip()
                    break
        depth, start = 0, 0
        for i, ch in enumerate(s):  # a return type before the name (a template's): the last word at depth 0
            depth += {"<": 1, ">": -1}.get(ch, 0)
            if ch == " " and depth == 0:
                start = i + 1
        s = s[start:].strip()
        if re.fullmatch(r"(?:\w+\s*(?:<.*>)?\s*::\s*)*\w+\s*(?:<.*>)?", s, re.S):
            return s
    return ""


def _function_params(clean: str, fn: str) -> list[str]:
    """The template parameter names of `template <typename T, int N> ... fn(` (the last such head before a body)."""
    heads = list(re.finditer(r"template\s*<(?P<ps>[^<>]*)>\s*[^;{}()]*?\b" + re.escape(fn) + r"\s*\(", clean))
    if not heads:
        return []
    return [re.findall(r"[A-Za-z_]\w*", p.partition("=")[0])[-1] for p in split_top_level(heads[-1].group("ps")) if p.strip()]


def _class_params(clean: str, cls: str) -> list[str]:
    """The template parameter names of `template <class T, int N> struct cls`."""
    m = re.search(r"template\s*<(?P<ps>[^<>]*)>\s*(?:struct|class)\s+" + re.escape(cls) + r"\b", clean)
    if not m:
        return []
    return [re.findall(r"[A-Za-z_]\w*", p.partition("=")[0])[-1] for p in split_top_level(m.group("ps")) if p.strip()]


def functor_for(template_args: str, sources: dict[str, str]) -> Functor | str:
    wrapper = wrapper_in(template_args)
    parts = split_top_level(wrapper[len(_WRAPPER):-1], angle=True) if wrapper else []
    tag = _TAG.match(parts[0].strip()) if parts else None
    if not tag:
        return "the kernel's template argument is an extended lambda whose wrapper could not be read"
    targs = [a.strip() for a in split_top_level(tag.group("args"), angle=True)]
    number = re.match(r"(\d+)", targs[-1]) if targs else None
    # the enclosing function, between the signature and the number: `&Field<double>::axpy` (a member),
    # `&(scale(double*, double, long))` (a free function), `&(void scale<float>(float*, float, long))` (a template)
    qual = enclosing_name(targs[1:-1]) if len(targs) >= 3 else ""
    if not qual or not number:
        return f"the extended lambda's tag {parts[0].strip()!r} names no enclosing function"
    names = re.match(r"^(?:(?P<cls>\w+)\s*(?:<(?P<cargs>.*)>)?\s*::\s*)?(?P<fn>\w+)\s*(?:<(?P<fargs>.*)>)?$", qual, re.S)
    if not names:
        return f"the extended lambda's enclosing function {qual!r} is not one s2s can find (a namespace or a template)"
    cls, fn, cargs = names.group("cls") or "", names.group("fn"), names.group("cargs") or ""
    fargs = names.group("fargs") or ""
    captured = [t.strip() for t in parts[1:]]
    found = []
    for file, text in sources.items():
        clean = _blank(text)
        for head, open_at, close in _function_bodies(clean, cls, fn):
            lambdas = list(_LAMBDA.finditer(clean, open_at, close))
            k = int(number.group(1))
            if 1 <= k <= len(lambdas):
                found.append((file, text, clean, head, open_at, lambdas[k - 1]))
    if len(found) != 1:
        why = "none" if not found else f"{len(found)} candidates"
        return f"the extended lambda #{number.group(1)} of {qual}: {why} found in the tree"
    file, text, clean, head, open_at, lam = found[0]
    cap = lam.group("cap").strip()
    if "&" in cap or "this" in cap:
        return f"{file}: the extended lambda of {qual} captures by reference or `this`; its functor would not be the same"
    params_end = matching_close(clean, lam.end() - 1, "()")
    rest = re.match(r"\s*(?:mutable\s*)?(?:->\s*(?P<ret>[^{]+?))?\s*\{", clean[params_end + 1:])
    if params_end < 0 or rest is None:
        return f"{file}: the extended lambda of {qual} could not be read"
    body_at = params_end + 1 + rest.end() - 1
    body_end = matching_close(clean, body_at, "{}")
    params = text[lam.end():params_end]
    body = text[body_at:body_end + 1]
    outer = declared_names(clean[head:lam.start()])  # the enclosing function's parameters and locals before it
    # the lambda's parameters and locals; a name of the enclosing function is a capture (`alpha * x[i]` reads as a
    # declaration of x to a pattern), not a local that shadows it
    own = declared_names(clean[lam.end() - 1:params_end + 1]) | (declared_names(clean[body_at:body_end + 1]) - outer)
    explicit = [c.strip() for c in cap.split(",") if c.strip() and c.strip() != "="]
    used = [n for n in identifiers(clean[body_at:body_end + 1], stripped=True) if n not in own and n in outer]
    order = explicit + [n for n in used if n not in explicit]
    if len(order) != len(captured):
        return (f"{file}: the extended lambda of {qual} captures {len(captured)} values, s2s reads {len(order)} "
                f"({', '.join(order) or 'none'}) in its body")
    bound = dict(zip(_class_params(clean, cls), split_top_level(cargs, angle=True))) if cls and cargs else {}
    if fargs:  # the enclosing function template's own parameters (`T` of `template <typename T> void scale(T* x, ...)`)
        bound.update(zip(_function_params(clean[:open_at], fn), split_top_level(fargs, angle=True)))
    line = text.count("\n", 0, lam.start()) + 1
    name = f"s2s_lambda_{fn}_{number.group(1)}"
    words = set(identifiers(clean[lam.end():body_end + 1], stripped=True))
    aliases = [f"  typedef {arg.strip()} {p};" for p, arg in bound.items() if p in words and not is_builtin(p)]
    members = [f"  {_declare(t, n)};" for t, n in zip(captured, order)]
    ret = f" -> {rest.group('ret').strip()}" if rest.group("ret") else ""
    code = "\n".join([f"// s2s: the extended __device__ lambda #{number.group(1)} of {qual} ({file}:{line}) as a functor: its",
                      "// captures are members in the order nvcc lays them out, its body the lambda's own",
                      f"struct {name} {{", *aliases, *members,
                      f"  __device__ auto operator()({params.strip()}) const{ret}", f"  {body}", "};", ""])
    return Functor(name=name, wrapper=wrapper, code=code, where=f"{file}:{line}")


def _declare(ctype: str, name: str) -> str:
    """`double*` x -> `double* x`; an array type `float [4]` -> `float x[4]`."""
    arr = re.match(r"^(.*?)\s*(\[[^\]]*\](?:\s*\[[^\]]*\])*)$", ctype)
    return f"{arr.group(1)} {name}{arr.group(2)}" if arr else f"{ctype} {name}"


_SOURCE_SUFFIXES = {".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".cpp", ".cc", ".cxx", ".c", ".inl"}


def tree_sources(tree: Path) -> dict[str, str]:
    """The application's source files by their path in the tree (for the lambda's text)."""
    out = {}
    if tree.is_dir():
        for p in sorted(tree.rglob("*")):
            if p.suffix in _SOURCE_SUFFIXES and p.is_file() and p.stat().st_size < 4 << 20:
                out[str(p.relative_to(tree))] = p.read_text(encoding="utf-8", errors="replace")
    return out
