"""A grid-stride loop's element code over runs of elements that come in as 4-, 8- or 16-byte words (grid-stride-fill{vec=N}).

One load instruction of a warp moves 32 x its width: a loop over bytes that loads one byte per thread per iteration moves
32 B per instruction where 16-byte loads move 512 B. Every array that the element reads only at [i] is loaded as whole
words and unpacked through a union (registers after the unrolled loop: no local memory), the pointers' alignment is
checked at run time, and a scalar loop takes the elements past the last whole word, or all of them when a pointer is
not aligned.
"""
from __future__ import annotations

import re

from s2s.lang.edits import Refused
from s2s.lang.kernel_facts import KernelFacts

from ..common.thread_index import elem_type
from ..common.tree import fresh

# element types with no constructor only: a union member with one (__half, __nv_bfloat16) deletes the union's own
_SIZES = {"char": 1, "signed char": 1, "unsigned char": 1, "uchar": 1, "int8_t": 1, "uint8_t": 1, "bool": 1,
          "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2,
          "int": 4, "unsigned": 4, "unsigned int": 4, "float": 4, "int32_t": 4, "uint32_t": 4,
          "double": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8, "uint64_t": 8}
_WORDS = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long", 16: "uint4"}


def vectorized(source: bytes, facts: KernelFacts, vec: int, head: tuple[str, str, str], bound: str, element: str,
                stride: str, ind: str, count: int = 1) -> str | Refused:
    """The grid-stride loop over runs of V elements: every array the element reads at [i] comes in as whole words of
    V elements (V = vec / the largest element size), unpacked through a union; a scalar loop takes the elements past
    the last whole run, or all of them when a pointer is not aligned to its word. count > 1: each thread loads that
    many words of each array, a grid stride apart, before it runs the element code on any (more bytes in flight)."""
    ty, var, gid = head
    if ty not in {"int", "unsigned", "unsigned int", "long", "long long", "size_t"}:
        return Refused(f"the index `{var}` is a {ty}")
    at = rf"\b([A-Za-z_]\w*)\s*\[\s*{re.escape(var)}\s*\]"
    arrays = list(dict.fromkeys(a for a in re.findall(at, element) if (p := facts.param(a)) is not None and p.pointer))
    sizes: dict[str, int] = {}
    for a in arrays:
        p = facts.param(a)
        assert p is not None
        if p.written or re.search(rf"\b{a}\s*\[[^\]]*\]\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)", element):
            return Refused(f"`{a}` is written: only arrays the kernel only reads come in as words")
        size = _SIZES.get(elem_type(p.type), 0)
        if not size or vec % size:
            return Refused(f"`{a}` holds {elem_type(p.type)}: not a size that divides {vec} bytes")
        sizes[a] = size
    if not sizes:
        return Refused(f"no pointer parameter is read at [{var}] in the element's code: nothing to load as words")
    per = vec // max(sizes.values())
    if per < 2:
        return Refused(f"vec={vec} holds one {max(sizes.values())}-byte element: nothing to gain")
    names = {w: fresh(facts, source, w) for w in ("q", "nv", "j", "u")}
    words = {a: fresh(facts, source, f"{a}_v") for a in arrays}
    pick = "" if count == 1 else f"[{names['u']}]"
    body = re.sub(at, lambda m: f"{words[m.group(1)]}{pick}.e[{names['j']}]" if m.group(1) in words else m.group(0), element)
    aligned = " && ".join(f"(reinterpret_cast<unsigned long long>({a}) & {per * s - 1}) == 0" for a, s in sizes.items())
    q, nv, e = names["q"], names["nv"], names["j"]
    if count > 1:
        return _several(facts, (ty, var, gid), bound, body, element, stride, ind, (sizes, words, names, per, aligned), count)
    lines = ["{",
             f"    const {ty} {nv} = ({aligned}) ? ({bound}) / {per} : 0;",
             f"    for ({ty} {q} = {gid}; {q} < {nv}; {q} += {stride}) {{",
             *(f"        union {{ {_WORDS[per * s]} w; {elem_type(facts.param(a).type)} e[{per}]; }} {words[a]};"  # type: ignore[union-attr]
               for a, s in sizes.items()),
             *(f"        {words[a]}.w = reinterpret_cast<const {_WORDS[per * s]}*>({a})[{q}];" for a, s in sizes.items()),
             "#pragma unroll",
             f"        for (int {e} = 0; {e} < {per}; ++{e}) {{",
             *([f"            const {ty} {var} = {q} * {per} + {e};"] if re.search(rf"\b{var}\b", body) else []),
             "            " + _shift(body, ind, 12 if body.startswith("{") else 8),
             "        }",
             "    }",
             f"    for ({ty} {var} = {nv} * {per} + {gid}; {var} < ({bound}); {var} += {stride})"
             + (" " + _shift(element, ind, 4) if element.startswith("{") else "\n" + ind + "        " + _shift(element, ind, 4)),
             "}"]
    return ("\n" + ind).join(lines)


def _shift(code: str, ind: str, by: int) -> str:
    """A statement's text with its continuation lines (indented from the statement's `ind`) moved right by `by`."""
    return code.replace("\n" + ind, "\n" + ind + " " * by)


def _several(facts: KernelFacts, head: tuple[str, str, str], bound: str, body: str, element: str, stride: str, ind: str,
             made: tuple[dict[str, int], dict[str, str], dict[str, str], int, str], count: int) -> str:
    (ty, var, gid), (sizes, words, names, per, aligned) = head, made
    q, nv, e, u = names["q"], names["nv"], names["j"], names["u"]
    at = f"{q} + {u} * ({stride})"
    lines = ["{",
             f"    const {ty} {nv} = ({aligned}) ? ({bound}) / {per} : 0;",
             f"    for ({ty} {q} = {gid}; {q} < {nv}; {q} += {count} * ({stride})) {{",
             *(f"        union {{ {_WORDS[per * s]} w; {elem_type(facts.param(a).type)} e[{per}]; }} {words[a]}[{count}];"  # type: ignore[union-attr]
               for a, s in sizes.items()),
             "#pragma unroll",
             f"        for (int {u} = 0; {u} < {count}; ++{u})",
             f"            if ({at} < {nv}) {{",
             *(f"                {words[a]}[{u}].w = reinterpret_cast<const {_WORDS[per * s]}*>({a})[{at}];" for a, s in sizes.items()),
             "            }",
             "#pragma unroll",
             f"        for (int {u} = 0; {u} < {count}; ++{u}) {{",
             f"            if ({at} < {nv}) {{",
             "#pragma unroll",
             f"                for (int {e} = 0; {e} < {per}; ++{e}) {{",
             *([f"                    const {ty} {var} = ({at}) * {per} + {e};"] if re.search(rf"\b{var}\b", body) else []),
             "                    " + _shift(body, ind, 20 if body.startswith("{") else 16),
             "                }",
             "            }",
             "        }",
             "    }",
             f"    for ({ty} {var} = {nv} * {per} + {gid}; {var} < ({bound}); {var} += {stride})"
             + (" " + _shift(element, ind, 4) if element.startswith("{") else "\n" + ind + "        " + _shift(element, ind, 4)),
             "}"]
    return ("\n" + ind).join(lines)
