"""Integer polynomials over names, read from tree-sitter expressions: what the kernel model's index forms are.

An index `i*NJ + j` is the polynomial {(i, NJ): 1, (j,): 1}. It is *affine in* a set of index variables (thread
indices, loop variables) when no monomial holds more than one of them; the coefficient of an index variable is then
a polynomial over the rest (parameters, block sizes). Anything that is not a sum of products of names and integer
literals (a division, a call, a load) has no polynomial: `poly_of` returns None.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from .parsing import src

Monomial = tuple[str, ...]  # sorted names, repeated for powers; () is the constant term

# OpenCL work-item functions as CUDA builtins (get_global_id(d) = blockIdx*blockDim + threadIdx)
_OPENCL = {"get_local_id": "threadIdx", "get_group_id": "blockIdx", "get_local_size": "blockDim", "get_num_groups": "gridDim"}
AXES = ("x", "y", "z")


@dataclass(frozen=True)
class Poly:
    terms: tuple[tuple[Monomial, int], ...] = ()  # sorted, no zero coefficients

    @staticmethod
    def of(d: dict[Monomial, int]) -> Poly:
        return Poly(tuple(sorted((m, c) for m, c in d.items() if c)))

    @staticmethod
    def const(c: int) -> Poly:
        return Poly.of({(): c})

    @staticmethod
    def name(n: str) -> Poly:
        return Poly.of({(n,): 1})

    def _d(self) -> dict[Monomial, int]:
        return dict(self.terms)

    def __add__(self, other: Poly) -> Poly:
        d = self._d()
        for m, c in other.terms:
            d[m] = d.get(m, 0) + c
        return Poly.of(d)

    def __neg__(self) -> Poly:
        return Poly(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, other: Poly) -> Poly:
        return self + (-other)

    def __mul__(self, other: Poly) -> Poly:
        d: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = tuple(sorted(m1 + m2))
                d[m] = d.get(m, 0) + c1 * c2
        return Poly.of(d)

    @property
    def names(self) -> frozenset[str]:
        return frozenset(n for m, _ in self.terms for n in m)

    @property
    def is_zero(self) -> bool:
        return not self.terms

    def constant(self) -> int | None:
        """The value when the polynomial is a plain integer, else None."""
        if not self.terms:
            return 0
        return self.terms[0][1] if len(self.terms) == 1 and self.terms[0][0] == () else None

    def affine_in(self, variables: frozenset[str] | set[str]) -> bool:
        return all(sum(n in variables for n in m) <= 1 for m, _ in self.terms)

    def coeff(self, var: str) -> Poly:
        """The coefficient of `var` (monomials holding it once, with it removed)."""
        d: dict[Monomial, int] = {}
        for m, c in self.terms:
            if m.count(var) == 1:
                rest = list(m)
                rest.remove(var)
                d[tuple(rest)] = d.get(tuple(rest), 0) + c
        return Poly.of(d)

    def drop(self, variables: frozenset[str] | set[str]) -> Poly:
        """The part free of `variables` (an affine form's offset)."""
        return Poly(tuple((m, c) for m, c in self.terms if not set(m) & set(variables)))

    def subst(self, name: str, value: Poly) -> Poly:
        """`name` replaced by `value` (the polynomial holds `name` at most once per monomial)."""
        return self.drop({name}) + self.coeff(name) * value

    def text(self) -> str:
        """C text, e.g. `NJ*i + j - 1`."""
        if not self.terms:
            return "0"
        parts: list[str] = []
        for m, c in sorted(self.terms, key=lambda t: (t[0] == (), t[0])):
            body = "*".join(m)
            mag = abs(c)
            piece = body if mag == 1 and body else (f"{mag}*{body}" if body else str(mag))
            parts.append(("- " if c < 0 else "+ ") + piece)
        out = " ".join(parts)
        return out[2:] if out.startswith("+ ") else "-" + out[2:]

    def __str__(self) -> str:
        return self.text()


Env = Callable[[str], "Poly | None"]  # a local's polynomial (single-assignment locals), None: itself a name
Calls = Callable[[Node, bytes], "Poly | None"]  # a call's polynomial (a function-like macro expanded), None: not one


def poly_of(node: Node | None, data: bytes, env: Env | None = None, calls: Calls | None = None) -> Poly | None:
    """The polynomial of an integer expression, None when it is not one."""
    if node is None:
        return None
    t = node.type
    if t == "number_literal":
        text = src(data, node).rstrip("uUlL")
        try:
            return Poly.const(int(text, 0))
        except ValueError:
            return None
    if t == "identifier":
        name = src(data, node)
        bound = env(name) if env is not None else None
        return bound if bound is not None else Poly.name(name)
    if t == "field_expression":
        arg, field = node.child_by_field_name("argument"), node.child_by_field_name("field")
        if arg is not None and field is not None and src(data, arg) in {"threadIdx", "blockIdx", "blockDim", "gridDim"}:
            return Poly.name(f"{src(data, arg)}.{src(data, field)}")
        return None
    if t in {"parenthesized_expression", "condition_clause"}:
        inner = [c for c in node.named_children if c.type != "comment"]
        return poly_of(inner[0], data, env, calls) if len(inner) == 1 else None
    if t == "cast_expression":
        return poly_of(node.child_by_field_name("value"), data, env, calls)
    if t == "unary_expression":
        op, value = src(data, node.child_by_field_name("operator") or node), poly_of(node.child_by_field_name("argument"), data, env, calls)
        return None if value is None or op not in {"-", "+"} else (-value if op == "-" else value)
    if t == "binary_expression":
        op = src(data, node.child_by_field_name("operator") or node)
        if op not in {"+", "-", "*"}:
            return None
        a, b = poly_of(node.child_by_field_name("left"), data, env, calls), poly_of(node.child_by_field_name("right"), data, env, calls)
        if a is None or b is None:
            return None
        return a + b if op == "+" else a - b if op == "-" else a * b
    if t == "call_expression":
        product = _mul24(node, data, env, calls)
        if product is not None:
            return product
        item = _work_item(node, data)
        return item if item is not None or calls is None else calls(node, data)
    return None


def _mul24(node: Node, data: bytes, env: Env | None, calls: Calls | None) -> Poly | None:
    """`__umul24(a, b)` / `__mul24(a, b)` as a * b: exact while both factors fit in 24 bits (grid and block sizes do)."""
    args = node.child_by_field_name("arguments")
    items = [a for a in args.named_children if a.type != "comment"] if args is not None else []
    if src(data, node.child_by_field_name("function") or node) not in {"__umul24", "__mul24"} or len(items) != 2:
        return None
    a, b = poly_of(items[0], data, env, calls), poly_of(items[1], data, env, calls)
    return a * b if a is not None and b is not None else None


def _work_item(node: Node, data: bytes) -> Poly | None:
    fn = src(data, node.child_by_field_name("function") or node)
    args = node.child_by_field_name("arguments")
    dims = [src(data, a).strip() for a in args.named_children] if args is not None else []
    if len(dims) != 1 or dims[0] not in {"0", "1", "2"}:
        return None
    axis = AXES[int(dims[0])]
    if fn == "get_global_id":
        return Poly.name(f"blockIdx.{axis}") * Poly.name(f"blockDim.{axis}") + Poly.name(f"threadIdx.{axis}")
    if fn == "get_global_size":
        return Poly.name(f"gridDim.{axis}") * Poly.name(f"blockDim.{axis}")
    return Poly.name(f"{_OPENCL[fn]}.{axis}") if fn in _OPENCL else None
