"""The template arguments of the launch an MEP reproduces: exact, or FILL-IN.

`k<T><<<...>>>` inside `template <typename T> void run(...)` takes T from the calls of run (calls that pass different
arguments, which one runs not known: FILL-IN, never the first). A non-type argument spelled with a host variable
(`k<dimBlock><<<...>>>`) is its value when that is known before the run, else FILL-IN: the name does not exist in the
kernel file. A template kernel launched without arguments (`k<<<g, b>>>(d_x, n)`) has its type parameters deduced
from the declared types of the launch's arguments, else FILL-IN.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from s2s.base.records import Kernel
from s2s.lang.textsplit import split_top_level
from s2s.mep.manifest import FILL_IN

from .hostcode import Scope
from .trail import Trail

if TYPE_CHECKING:
    from .infer import Values

_TYPE_PARAM = re.compile(r"^\s*(?:typename|class)\b")
_WORD = re.compile(r"[A-Za-z_]\w*")


def caller_resolutions(targs: str, scope: Scope) -> list[tuple[str, str, bool]]:
    """(resolved arguments, file:line of the call, whether the call runs whenever its function does) for each call of
    the enclosing function template that may run; [(targs, "", True)] when the arguments name none of its
    parameters. A call from another template that passes its own parameters (`run<64, T>(...)` in `template <typename
    T> void dispatch`) resolves to nothing the kernel file can name: "" for it. A call without template arguments
    (`run(n, d_a)`) resolves to what they deduce from the declared types of its arguments, else "" too."""
    targs = expand_local_aliases(targs, scope)
    lambda_params, lambda_at = scope.lambda_template_params()
    if any(re.search(rf"\b{re.escape(p)}\b", targs) for p in lambda_params):  # `[&]<bool HZ>() { k<T<HZ>><<<...>>> }`
        return [("", f"{lambda_at} (a template lambda's own parameters)", True)]
    params = scope.template_params()
    if not params or not any(re.search(rf"\b{re.escape(p)}\b", targs) for p in params):
        return [(targs, "", True)]
    out = []
    for call_targs, where, live, open_params in scope.caller_template_args():
        mapping = dict(zip(params, split_top_level(call_targs, angle=True)))
        resolved = _WORD.sub(lambda m, mp=mapping: mp.get(m.group(0), m.group(0)), targs)  # type: ignore[misc]
        if not call_targs.strip() or set(_WORD.findall(call_targs)) & set(open_params):
            resolved = ""  # its own template's parameters, or a call without arguments that were not deduced
        out.append((resolved, where, live))
    return out or [(targs, "", True)]


def expand_local_aliases(targs: str, scope: Scope) -> str:
    """`Ktraits` of `k<Ktraits><<<...>>>` as the type its function's `using Ktraits = traits<kNThreads, T>;` names:
    the alias does not exist outside that function (nor in the kernel file)."""
    return scope.expand_aliases(targs)


def resolve_template_args(targs: str, scope: Scope, notes: list[str]) -> str:
    """The one resolution of `targs` (see caller_resolutions); where calls differ, the first call that runs whenever
    its function does (`run<float>(); run<double>();`: both launches happen), else FILL_IN (`if (w > 1024)
    run<192>(); else run<64>();` with w known only at run time: the first branch is not the launch that runs)."""
    found = caller_resolutions(targs, scope)
    if any(not r for r, _w, _l in found):
        open_at = [w for r, w, _l in found if not r]
        notes.append(f"template arguments <{targs}> of the launch: the call at {open_at[0]} passes its own template's "
                     "parameters or arguments not deduced from declared types, and which instance runs is not known "
                     "before the run: template_args is FILL-IN")
        return FILL_IN
    distinct = sorted({r for r, _w, _l in found})
    if len(distinct) > 1:
        live = [(r, w) for r, w, ok in found if ok]
        if live:
            notes.append(f"template arguments <{targs}> of the launch resolved to <{live[0][0]}> from the call at "
                         f"{live[0][1]}, one of {len(found)} calls that pass different arguments; it runs whenever its "
                         "function does")
            return live[0][0]
        notes.append(f"template arguments <{targs}> of the launch: the calls at "
                     f"{', '.join(w for _r, w, _l in found[:4])} pass <{'>, <'.join(distinct[:4])}> and which one runs "
                     "is not known before the run: template_args is FILL-IN")
        return FILL_IN
    if found[0][1]:
        notes.append(f"template arguments <{targs}> of the launch resolved to <{distinct[0]}> from the call at "
                     f"{found[0][1]}")
    return distinct[0]


def settle(kernel: Kernel, targs: str, args: list[str], scope: Scope | None, values: Values,
           macros: dict[str, tuple[str, str]], notes: list[str]) -> str:
    """`targs` with host variables in non-type arguments replaced by their values, deduced when empty; FILL_IN when
    such a value is not known."""
    params = list(kernel.template_params)
    if not params or targs == FILL_IN:
        return targs
    if not targs.strip():
        return _deduced(kernel, args, scope, values, notes)
    parts = split_top_level(targs, angle=True)
    out = []
    for i, part in enumerate(parts):
        ptext = params[i] if i < len(params) else ""
        host = [w for w in _WORD.findall(part) if w not in macros and w not in {"true", "false", "sizeof"}
                and scope is not None and scope.declared(w) is not None]  # a variable: an enumerator or a
        # header's constant (`BLOCK_SCAN_RAKING`) is spelled the same in the kernel file
        if not ptext or _TYPE_PARAM.match(ptext) or not host or re.fullmatch(r"[\w\s:<>,*&]*::\w+", part):
            out.append(part)
            continue

        trail = Trail()
        value = values.number(part, scope, trail) if scope is not None else None
        if value is None or float(value) != int(value):
            notes.append(f"template argument {i + 1} '{part}' of the launch names host code not known before the run "
                         f"({'; '.join(trail.steps)[:200]}): template_args is FILL-IN")
            return FILL_IN
        notes.append(f"template argument {i + 1} '{part}' = {int(value)} ({'; '.join(trail.steps)[:200]})")
        out.append(str(int(value)))
    return ", ".join(out)


def _deduced(kernel: Kernel, args: list[str], scope: Scope | None, values: Values, notes: list[str]) -> str:
    """Type parameters from the declared types of the launch's arguments (`T* a` given `float* d_a`); FILL_IN when a
    parameter without a default is not deduced so."""
    names = [(_WORD.findall(p.split("=")[0]) or [""])[-1] for p in kernel.template_params]
    got: dict[str, str] = {}
    for p, arg in zip(kernel.params, args):
        words = _WORD.findall(p.type.replace("const", " ").replace("__restrict__", " "))
        if len(words) != 1 or words[0] not in names or scope is None:
            continue
        var = arg.strip()
        decl = scope.declared(var) if re.fullmatch(r"[A-Za-z_]\w*", var) else None
        if decl is None:
            continue
        stars = p.type.count("*")
        base = decl[0].replace("const ", "").strip()
        if decl[1].count("*") == stars and "[" not in decl[1] and _WORD.fullmatch(base.split()[-1] if base else ""):
            if set(_WORD.findall(base)) & set(scope.template_params()):  # `T* a` of `template <typename T> run()`
                base = resolve_template_args(base, scope, notes)
                if base == FILL_IN or set(_WORD.findall(base)) & set(scope.template_params()):
                    continue
            got.setdefault(words[0], base)
    missing = [n for n, p in zip(names, kernel.template_params) if n not in got and "=" not in p]
    if not missing and not got:
        return ""  # every parameter has a default: `k<<<g, b>>>` instantiates k<>
    if missing:
        notes.append(f"the template kernel {kernel.name} is launched without template arguments and "
                     f"{', '.join(missing) or 'its parameters'} cannot be deduced from the launch: template_args is "
                     "FILL-IN")
        return FILL_IN
    deduced = []
    for n in names:  # a prefix: the rest keep their defaults
        if n not in got:
            break
        deduced.append(values.builtin_type(got[n]) or got[n])  # `Real_t` (a type macro of the host code) is float: no
        # name the kernel file may lack
    if len(deduced) != len(got):
        notes.append(f"the template kernel {kernel.name} is launched without template arguments and its parameters "
                     "cannot be deduced in order: template_args is FILL-IN")
        return FILL_IN
    notes.append(f"template arguments <{', '.join(deduced)}> deduced from the declared types of the launch's arguments")
    return ", ".join(deduced)
