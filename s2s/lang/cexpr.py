"""Evaluating C integer/float expressions from host code: sizes, grids, macro values.

`(int)ceil((float)N/block.x)` and `(N + 15) / 16` must give what C gives, so values carry a type
(int or float) and `/` truncates between integers.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable

_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+\.\d*(?:[eE][-+]?\d+)?[fFlL]?|\d*\.\d+(?:[eE][-+]?\d+)?[fFlL]?|\d+(?:[eE][-+]?\d+)[fFlL]?|\d+[uUlL]*)"
                    r"|([A-Za-z_][\w]*(?:\s*(?:\.|->|::)\s*[A-Za-z_]\w*)*)|(<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%()?:,<>!~&|^\[\]]))")
SIZEOF = {"char": 1, "signed char": 1, "unsigned char": 1, "bool": 1, "short": 2, "unsigned short": 2, "int": 4,
          "unsigned": 4, "unsigned int": 4, "float": 4, "long": 8, "unsigned long": 8, "long long": 8,
          "unsigned long long": 8, "double": 8, "size_t": 8, "int8_t": 1, "uint8_t": 1, "int16_t": 2, "uint16_t": 2,
          "int32_t": 4, "uint32_t": 4, "int64_t": 8, "uint64_t": 8, "half": 2, "__half": 2, "float2": 8, "float3": 12,
          "float4": 16, "double2": 16, "int2": 8, "int3": 12, "int4": 16, "cl_float": 4, "cl_int": 4, "cl_uint": 4,
          "cl_double": 8, "real": 4, "uint": 4, "ulong": 8, "half2": 4, "__half2": 4, "__nv_bfloat16": 2,
          "__nv_bfloat162": 4, "uchar4": 4, "char4": 4, "short2": 4, "ushort2": 4, "uint2": 8, "uint4": 16}

def _vector_types() -> tuple[dict[str, int], dict[str, int]]:
    """CUDA's built-in vector types (char1..double4) on a 64-bit host: sizes (n elements, 3-vectors unpadded) and
    alignments (the CUDA programming guide's table: n = 2 and 4 align to the whole vector up to 16 bytes, 1 and 3 to
    the element)."""
    sizes: dict[str, int] = {}
    aligns: dict[str, int] = {}
    for base, elem in (("char", 1), ("uchar", 1), ("short", 2), ("ushort", 2), ("int", 4), ("uint", 4), ("long", 8),
                       ("ulong", 8), ("longlong", 8), ("ulonglong", 8), ("float", 4), ("double", 8)):
        for n in (1, 2, 3, 4):
            sizes[f"{base}{n}"] = n * elem
            aligns[f"{base}{n}"] = min(n * elem, 16) if n in (2, 4) else elem
    sizes["dim3"], aligns["dim3"] = 12, 4
    return sizes, aligns


VECTOR_SIZEOF, ALIGNOF = _vector_types()
SIZEOF.update({k: v for k, v in VECTOR_SIZEOF.items() if k not in SIZEOF})
ALIGNOF.update({"half2": 4, "__half2": 4, "__nv_bfloat162": 4})
_CAST_TYPES = {"int", "float", "double", "long", "unsigned", "size_t", "unsigned int", "long long", "int64_t", "uint32_t",
               "uint64_t", "int32_t", "unsigned long", "short", "char", "unsigned short", "unsigned char",
               "unsigned long long", "signed char", "int16_t", "uint16_t", "int8_t", "uint8_t"}
_UNSIGNED = {"unsigned", "size_t", "uint32_t", "uint64_t", "uint16_t", "uint8_t"}


def _wrap(v: int, ctype: str) -> int:
    """An integer converted to a C integer type: modulo 2^bits, negative again for a signed type (two's complement,
    as every compiler s2s drives does)."""
    bits = 8 * SIZEOF.get(ctype, 8)
    v &= (1 << bits) - 1
    signed = not (ctype.startswith("unsigned") or ctype in _UNSIGNED)
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v
_FLOAT_CASTS = {"float", "double"}


class EvalError(Exception):
    pass


Resolver = Callable[[str], "float | int | str | None"]
CallHook = Callable[[str, list], "float | int | None"]  # type: ignore[type-arg]


class _Parser:
    def __init__(self, text: str, resolve: Resolver, sizeof: Callable[[str], int | None], depth: int,
                 call: CallHook | None = None, subscripts: bool = False) -> None:
        self.call = call
        self.subscripts = subscripts
        self.text = text
        self.toks = self._tokens(text)
        self.i = 0
        self.resolve = resolve
        self.sizeof = sizeof
        self.depth = depth

    @staticmethod
    def _tokens(text: str) -> list[str]:
        out: list[str] = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise EvalError(f"cannot read '{text[pos:pos + 12]}'")
            out.append(next(g for g in m.groups() if g is not None))
            pos = m.end()
        return out

    def peek(self) -> str:
        return self.toks[self.i] if self.i < len(self.toks) else ""

    def take(self, want: str | None = None) -> str:
        tok = self.peek()
        if want is not None and tok != want:
            raise EvalError(f"expected '{want}' in '{self.text}'")
        self.i += 1
        return tok

    def parse(self) -> float | int:
        v = self.ternary()
        if self.i != len(self.toks):
            raise EvalError(f"unexpected '{self.peek()}' in '{self.text}'")
        return v

    def ternary(self) -> float | int:
        cond = self.binary(0)
        if self.peek() == "?":
            self.take()
            a_end = self._span(self.i, (":",))
            a_start, self.i = self.i, a_end
            self.take(":")
            b_end = self._span(self.i, (",", ":"))
            b_start, self.i = self.i, b_end
            # only the chosen branch is evaluated: `argc > 1 ? atoi(argv[1]) : 1024` is 1024 for a plain run
            return self._sub(a_start, a_end) if cond else self._sub(b_start, b_end)
        return cond

    def _span(self, i: int, stops: tuple[str, ...]) -> int:
        """End of the expression starting at token i: a stop token at depth 0 outside nested ternaries."""
        depth = nested = 0
        while i < len(self.toks):
            tok = self.toks[i]
            if tok in ("(", "["):
                depth += 1
            elif tok == "]":
                depth -= 1
            elif tok == ")":
                if depth == 0:
                    return i
                depth -= 1
            elif tok == "?" and depth == 0:
                nested += 1
            elif tok == ":" and depth == 0 and nested:
                nested -= 1
            elif tok in stops and depth == 0:
                return i
            i += 1
        return i

    def _sub(self, i: int, j: int) -> float | int:
        sub = _Parser.__new__(_Parser)
        sub.__dict__.update(self.__dict__)
        sub.toks, sub.i = self.toks[i:j], 0
        return sub.parse()

    _PREC = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", ">", "<=", ">="), ("<<", ">>"), ("+", "-"), ("*", "/", "%")]

    def binary(self, level: int) -> float | int:
        if level == len(self._PREC):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._PREC[level]:
            op = self.take()
            right = self.binary(level + 1)
            left = _apply(op, left, right)
        return left

    def unary(self) -> float | int:
        tok = self.peek()
        if tok in {"-", "+", "!", "~"}:
            self.take()
            v = self.unary()
            return {"-": lambda x: -x, "+": lambda x: x, "!": lambda x: int(not x), "~": lambda x: ~int(x)}[tok](v)
        if tok == "(" and self._is_cast():
            self.take()
            ctype = " ".join(self._type_words())
            self.take(")")
            v = self.unary()
            return float(v) if ctype in _FLOAT_CASTS else _wrap(int(v), ctype)
        return self.primary()

    def _is_cast(self) -> bool:
        j = self.i + 1
        words = []
        while j < len(self.toks) and self.toks[j] not in {")"}:
            words.append(self.toks[j])
            j += 1
        text = " ".join(words).replace("const ", "")
        return text in _CAST_TYPES

    def _type_words(self) -> list[str]:
        words = []
        while self.peek() != ")":
            w = self.take()
            if w != "const":
                words.append(w)
        return words

    def primary(self) -> float | int:
        tok = self.take()
        if tok == "(":
            v = self.ternary()
            self.take(")")
            return v
        if tok and (tok[0].isdigit() or tok[0] == "."):
            return _number(tok)
        if tok == "sizeof":
            words = self._sizeof_operand()
            name = re.sub(r"\s*([*\[\]().])\s*", r"\1", " ".join(w for w in words if w not in {"const", "struct"}))
            if name.endswith("*"):
                return 8
            size = SIZEOF.get(name) or self.sizeof(name)
            if size is None:
                raise EvalError(f"sizeof({name}) is unknown")
            return size
        if tok and (tok[0].isalpha() or tok[0] == "_"):
            name = re.sub(r"\s+", "", tok)
            if self.peek() == "(":
                return self._call(name)
            while self.subscripts and self.peek() == "[":  # an element at a constant index: `grid_points[0]`
                self.take("[")
                index = self.ternary()
                self.take("]")
                if not isinstance(index, int):
                    raise EvalError(f"index of {name} is not an integer")
                name = f"{name}[{index}]"
            return self._name(name)
        raise EvalError(f"unexpected '{tok}' in '{self.text}'")

    def _sizeof_operand(self) -> list[str]:
        """The tokens of sizeof's operand: `(type or expression)`, or a unary expression without parentheses
        (`sizeof *p`, `sizeof p[0]`), which the sizeof hook resolves through the variable's declaration."""
        words: list[str] = []
        if self.peek() == "(":
            self.take("(")
            depth = 0
            while self.peek() != ")" or depth:
                tok = self.take()
                if not tok:
                    raise EvalError(f"unbalanced sizeof in '{self.text}'")
                depth += {"(": 1, ")": -1}.get(tok, 0)
                words.append(tok)
            self.take(")")
            return words
        while self.peek() == "*":
            words.append(self.take())
        words.append(self.take())
        while self.peek() == "[":
            depth = 0
            while True:
                tok = self.take()
                if not tok:
                    raise EvalError(f"unbalanced sizeof in '{self.text}'")
                words.append(tok)
                depth += {"[": 1, "]": -1}.get(tok, 0)
                if depth == 0:
                    break
        return words

    def _call(self, name: str) -> float | int:
        self.take("(")
        args = []
        while self.peek() != ")":
            args.append(self.ternary())
            if self.peek() == ",":
                self.take()
        self.take(")")
        funcs: dict[str, Callable[..., float | int]] = {
            "ceil": lambda x: float(math.ceil(x)), "ceilf": lambda x: float(math.ceil(x)), "floor": lambda x: float(math.floor(x)),
            "min": min, "max": max, "std::min": min, "std::max": max, "fmin": min, "fmax": max,
            "dim3": _dim3_as_number, "sqrt": math.sqrt, "abs": abs, "int": lambda x: int(x), "size_t": lambda x: int(x),
            "unsigned": lambda x: int(x), "float": float, "double": float, "long": lambda x: int(x),
            "floorf": lambda x: float(math.floor(x)), "sqrtf": math.sqrt, "fabs": abs, "fabsf": abs, "pow": math.pow,
            "powf": math.pow, "log2": math.log2, "log2f": math.log2, "exp2": lambda x: math.pow(2.0, x),
            "exp2f": lambda x: math.pow(2.0, x),
        }
        if name.startswith("std::") and name[5:] in funcs:  # std::ceil, std::sqrt: the <cmath> spellings of the C ones
            name = name[5:]
        if name not in funcs:
            value = self.call(name, args) if self.call is not None else None
            if value is None:
                raise EvalError(f"cannot evaluate call {name}()")
            return value
        return funcs[name](*args)

    def _name(self, name: str) -> float | int:
        if self.depth > 40:
            raise EvalError(f"'{name}' is defined in terms of itself")
        value = self.resolve(name)
        if value is None:
            raise EvalError(f"'{name}' has no known value")
        if isinstance(value, str):
            return evaluate(value, self.resolve, self.sizeof, self.depth + 1, self.call, self.subscripts)
        return value


def _dim3_as_number(*a: float | int) -> float | int:
    """A dim3 read as one number is its x, exact only when its y and z are 1 (dim3(n), dim3(n, 1, 1))."""
    if not a or any(v != 1 for v in a[1:]):
        raise EvalError("a dim3 of several dimensions read as one number")
    return a[0]


def _number(tok: str) -> float | int:
    t = tok.rstrip("uUlL")
    if t.lower().startswith("0x"):
        return int(t, 16)
    if any(c in t for c in ".eE") or tok[-1] in "fF" and "." in tok:
        return float(t.rstrip("fF"))
    return int(t)


def _apply(op: str, a: float | int, b: float | int) -> float | int:
    if op == "/":
        if b == 0:
            raise EvalError("division by zero")
        if isinstance(a, int) and isinstance(b, int):
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b >= 0) else -q
        return a / b
    if op == "%":
        if b == 0:
            raise EvalError("division by zero")
        return int(math.fmod(int(a), int(b)))
    table: dict[str, Callable[[float | int, float | int], float | int]] = {
        "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y,
        "<<": lambda x, y: int(x) << int(y), ">>": lambda x, y: int(x) >> int(y),
        "<": lambda x, y: int(x < y), ">": lambda x, y: int(x > y), "<=": lambda x, y: int(x <= y), ">=": lambda x, y: int(x >= y),
        "==": lambda x, y: int(x == y), "!=": lambda x, y: int(x != y), "&&": lambda x, y: int(bool(x) and bool(y)),
        "||": lambda x, y: int(bool(x) or bool(y)), "&": lambda x, y: int(x) & int(y), "|": lambda x, y: int(x) | int(y),
        "^": lambda x, y: int(x) ^ int(y),
    }
    return table[op](a, b)


def evaluate(text: str, resolve: Resolver, sizeof: Callable[[str], int | None] | None = None, depth: int = 0,
             call: CallHook | None = None, subscripts: bool = False) -> float | int:
    """The value of a C expression; names go through `resolve` (a number, an expression text, or None). With
    `subscripts`, an array element at a constant index is resolved as one name, `a[2]` (else it cannot be read)."""
    return _Parser(text, resolve, sizeof or (lambda _n: None), depth, call, subscripts).parse()


def try_evaluate(text: str, resolve: Resolver, sizeof: Callable[[str], int | None] | None = None,
                 call: CallHook | None = None, subscripts: bool = False) -> float | int | None:
    try:
        return evaluate(text, resolve, sizeof, call=call, subscripts=subscripts)
    except (EvalError, RecursionError, ValueError, OverflowError):
        return None
