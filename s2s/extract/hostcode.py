"""Reading host code back from a launch site: what each argument is, how big each buffer is.

A name is resolved in the function that launches the kernel (declarations before the launch), then
in that function's callers (through the parameter it was passed as), then at file scope, then among
macros and -D flags. Every answer carries where it came from.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tree_sitter import Node

from s2s.lang.parsing import parse, text
from s2s.scan.sources import SourceFile, language_of

from .pp_branches import Macros, branch_ranges

_ALLOC = {"cudaMalloc": 1, "hipMalloc": 1, "cudaMallocManaged": 1, "hipMallocManaged": 1, "cudaMallocAsync": 1,
          "hipMallocAsync": 1}
NL = b"\n"
_HOST_ALLOC = {"malloc": 0, "aligned_alloc": 1, "calloc": -1}


@dataclass(frozen=True)
class Found:
    expr: str  # an expression in the scope where it was found
    where: str  # file:line
    scope: Scope
    at: int = 0  # byte offset of the definition: names in it resolve in the scope as it stood there
    overridden: str = ""  # file:line of writes from the command line that a run without arguments skips
    ctype: str = ""  # the declared type of what is written (the value converts to it), "" when not known
    origin: str = ""  # how this write was chosen, for the provenance (the one write of a global, branches decided)


# decides an `if` condition in a scope: True / False when it evaluates from values known before the run, else None;
# with the facts it rests on that are not macros or host code (device constants)
Decide = Callable[[str, "Scope"], "tuple[bool | None, str]"]


class Scope:
    """One function of host code, parsed, with the byte offset up to which declarations count."""

    def __init__(self, source: SourceFile, fn: Node | None, limit: int, program: Program, depth: int = 0) -> None:
        self.source = source
        self.fn = fn
        self.limit = limit
        self.program = program
        self.depth = depth

    def _loc(self, node: Node) -> str:
        return f"{self.source.rel}:{node.start_point[0] + 1}"

    def _nodes(self, types: set[str]) -> list[Node]:
        root = self.fn if self.fn is not None else self.program.tree_of(self.source).root_node
        out: list[Node] = []
        stack = [root]
        while stack:
            n = stack.pop()
            if n.start_byte >= self.limit and self.fn is not None:
                continue
            if n.type in types and not self.program.dropped(self.source, n):
                out.append(n)
            if n.type == "function_definition" and n is not root and self.fn is None:
                continue
            stack.extend(n.named_children)
        return sorted(out, key=lambda n: n.start_byte)

    def definition(self, name: str) -> Found | None:
        """The last declaration or assignment of `name` before the limit, in this function."""
        found = self.definitions(name)
        return found[0] if found else None

    def definitions(self, name: str) -> list[Found]:
        """Declarations and assignments of `name` before the limit, latest first."""
        hits: list[tuple[int, Found]] = []
        for node in self._nodes({"init_declarator", "assignment_expression", "declaration"}):
            if node.type == "init_declarator":
                decl = node.child_by_field_name("declarator")
                value = node.child_by_field_name("value")
                if decl is not None and _declared(decl) == name and value is not None:
                    hits.append((node.start_byte, Found(_value_text(value, decl), self._loc(node), self, node.start_byte)))
            elif node.type == "declaration":
                # `dim3 block(BLOCK_1D);` parses as a function declaration: read it as a constructor call
                ctype = text(node.child_by_field_name("type"))
                for decl in node.children_by_field_name("declarator"):
                    inner = decl.child_by_field_name("declarator")
                    params = decl.child_by_field_name("parameters")
                    if decl.type == "function_declarator" and inner is not None and text(inner) == name and params is not None:
                        args = ", ".join(text(p) for p in params.named_children)
                        hits.append((node.start_byte, Found(f"{ctype}({args})", self._loc(node), self, node.start_byte)))
            elif node.type == "assignment_expression":
                left = node.child_by_field_name("left")
                if text(left).strip() == name and text(node.child_by_field_name("operator")) in {"=", ""}:
                    right = node.child_by_field_name("right")
                    if right is not None:
                        hits.append((node.start_byte, Found(text(right), self._loc(node), self, node.start_byte)))
        return [f for _at, f in sorted(hits, key=lambda h: -h[0])]

    def writes_of(self, name: str) -> list[tuple[Node, str, Node | None]]:
        """Every write of `name` in this function (see _writes_in), calls that take it by reference included."""
        if self.fn is None:
            return []
        return [w for w in _writes_in(self.fn, name, self.program.by_reference)
                if not self.program.dropped(self.source, w[0])]

    def reaching(self, name: str) -> tuple[Found | None, str]:
        """The one definition of `name` that reaches the limit in this function: (found, "");
        (None, why) when the value there is not known statically (a write under a condition or in a loop around the
        limit, a compound assignment, an address taken, a declaration without a value); (None, "") when this
        function does not write `name` before the limit. An element at a constant index (`grid_points[0]`) is
        followed only when every other use of its array in the program keeps to constant indices (see
        Program.element_uses)."""
        element = re.fullmatch(r"([A-Za-z_]\w*)\[(\d+)\]", name)
        if element:
            unsafe = self.program.element_uses(self.source, element.group(1), int(element.group(2)), self.fn)
            if unsafe:
                return None, unsafe
        if self.fn is None:
            found = self.definition(name)
            if found is None:
                return None, ""
            written = self.program.written_in_functions(name)
            return (None, f"{name} is initialized at {found.where} but written at {written}") if written else (found, "")
        anchor = self.fn.descendant_for_byte_range(self.limit, self.limit) or self.fn
        around = _ancestors(anchor, self.fn)
        loops = [a for a in around if a.type in _LOOPS]
        writes: list[tuple[Node, str, Node | None, str]] = []
        decided: dict[int, list[str]] = {}
        skipped: list[str] = []
        first_trip: Node | None = None  # the loop whose first trip's value is taken (its update skipped)
        for node, kind, value in self.writes_of(name):
            why: list[str] = []
            state = self._branch_state(node, why) if node.start_byte < self.limit else "unknown"
            if state == "dead":  # a write in a branch whose condition is known not to hold never happens
                skipped.append(f"the write at {self._loc(node)} is in a branch that does not run"
                               + (f" ({why[-1]})" if why else ""))
                continue
            decided[node.start_byte] = why
            update = next((lp for lp in loops if lp.type == "for_statement" and _in_field(lp, "update", node)), None)
            if update is not None and _set_in_init(update, name, writes):
                skipped.append(f"the first launch of the loop at {self._loc(update)}, before its update "
                               f"'{' '.join(text(node).split())[:40]}'")
                first_trip = update
                continue  # `for (bs = 64; ...; bs = bs * 2)`: the first launch runs with 64, the update comes after it
            if update is not None:  # the update runs after the body, not before the launch; the value it starts
                return None, f"{name} changes in the loop around the launch at {self._loc(node)}"  # from is not known
            writes.append((node, kind, value, state))
        dominating: tuple[Node, str, Node | None] | None = None
        for node, kind, value, state in writes:
            if node.start_byte >= self.limit:
                continue
            pp = self.program.undecided_branch(self.source, node)
            if state == "live" or all(a.start_byte <= self.limit < a.end_byte for a in _ancestors(node, self.fn)
                                      if a.type in _BRANCHES) and (pp is None or pp[0] <= self.limit < pp[1]):
                dominating = (node, kind, value)
        last = dominating[0].start_byte if dominating else -1
        after = [w[0] for w in writes if last < w[0].start_byte < self.limit]
        looped = self._run_loop(name, after) if after else None
        if looped is not None:  # `while (t * t > max) t = ceil(sqrt(t));` run on known values
            return looped, ""
        from_argv: list[str] = []
        for node, kind, _value, _state in writes:
            if dominating is not None and node is dominating[0]:
                continue
            if last < node.start_byte < self.limit:
                if kind == "def" and self.argv_skipped(node):
                    from_argv.append(self._loc(node))
                    continue
                return None, f"{name} is written at {self._loc(node)} under a condition or by '{text(node)[:40]}'"
            loop = next((lp for lp in loops if lp.start_byte <= node.start_byte < lp.end_byte and node.start_byte >= self.limit
                         and not lp.start_byte <= last), None)
            if loop is not None:
                return None, f"{name} changes in the loop around the launch at {self._loc(node)}"
        if dominating is None:
            return None, ""
        node, kind, value = dominating
        if first_trip is not None and _in_field(first_trip, "initializer", node):
            not_first = self._first_trip_skips(first_trip, anchor)
            if not_first:
                return None, f"{name}: the loop at {self._loc(first_trip)} starts from its first value, but {not_first}"
        folded = _fold_update(node, name, self.fn)
        if folded is not None:  # `size *= N` outside any loop: the previous value (as it stood there), times N
            return Found(folded, self._loc(node), self, node.start_byte), ""
        if kind != "def" or value is None:
            return None, f"{name} at {self._loc(node)}: '{text(node)[:40]}' does not give it a value known before the run"
        decl = node.child_by_field_name("declarator") if node.type == "init_declarator" else None
        expr = _value_text(value, decl) if decl is not None else text(value)
        if node.type == "function_declarator" and node.parent is not None:  # `dim3 threads(b, b);`: a constructor call
            expr = text(node.parent.child_by_field_name("type")) + expr
        ctype = _declared_type(node) if node.type == "init_declarator" and "." not in name else ""
        origin = "; ".join(decided.get(node.start_byte, []) + skipped)
        return Found(expr, self._loc(node), self, node.start_byte, ", ".join(from_argv), ctype, origin), ""

    def _first_trip_skips(self, loop: Node, anchor: Node) -> str:
        """Why the limit may not be reached on the first trip of `loop` (an `if` between them not known to take the
        limit's side on that trip: `for (s = n / 2; s > 0; s >>= 1) if (s >= 512) ... else k<<<...>>>(s)` first
        launches k with 256, not 512), or "" when every such `if` is decided for it."""
        decide = self.program.decide
        child = anchor
        for a in _ancestors(anchor, loop):
            if a.start_byte >= self.limit:  # the `if` being decided (a scope placed at its start): not around it
                child = a
                continue
            if a.type == "if_statement" and a.start_byte > loop.start_byte:
                cond = a.child_by_field_name("condition")
                alt = a.child_by_field_name("alternative")
                if cond is None or cond.start_byte <= child.start_byte < cond.end_byte:
                    child = a
                    continue
                in_alt = alt is not None and alt.start_byte <= child.start_byte < alt.end_byte
                said = f"'if {' '.join(text(cond).split())[:60]}' at {self._loc(a)}"
                if decide is None:
                    return f"{said} decides whether the launch runs on a trip"
                holds, _facts = decide(text(cond), Scope(self.source, self.fn, a.start_byte, self.program, self.depth + 1))
                if holds is None:
                    return f"{said} (not known on the first trip) decides whether the launch runs on it"
                if holds == in_alt:
                    return f"{said} {'holds' if holds else 'does not hold'} on the first trip: the launch comes on a later one"
            elif a.type in {"switch_statement", "case_statement"} and a.start_byte > loop.start_byte:
                return f"the {a.type.replace('_statement', '')} at {self._loc(a)} decides whether the launch runs on a trip"
            child = a
        return ""

    def _run_loop(self, name: str, after: list[Node]) -> Found | None:
        """The value `name` has after the last `while` loop before the limit, when every write after the dominating
        one is that loop's single statement `name = expr;` (or an earlier such loop's): the loop is run on the value
        it starts from and the values known before the run, at most 4096 times; None when that does not apply, a
        value is not known, or the declared type is not a number."""
        fold = self.program.fold
        loop = after[-1].parent.parent if after[-1].parent is not None else None
        if self.fn is None or fold is None or self.depth > 8 or not re.fullmatch(r"[A-Za-z_]\w*", name):
            return None
        if loop is not None and loop.type == "compound_statement":
            loop = loop.parent
        cond = loop.child_by_field_name("condition") if loop is not None and loop.type == "while_statement" else None
        body = loop.child_by_field_name("body") if loop is not None else None
        if loop is None or cond is None or body is None or loop.end_byte > self.limit or loop.parent is None or \
                not loop.parent.start_byte <= self.limit < loop.parent.end_byte:
            return None
        stmt = body.named_children[0] if body.type == "compound_statement" and len(body.named_children) == 1 else body
        assign = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_children else None
        if assign is None or assign.type != "assignment_expression" or assign.start_byte != after[-1].start_byte or \
                text(assign.child_by_field_name("operator")) != "=" or \
                text(assign.child_by_field_name("left")).strip() != name:
            return None
        decl = self.declared(name)
        at = Scope(self.source, self.fn, max(loop.start_byte - 1, self.fn.start_byte), self.program, self.depth + 1)
        value = fold(name, at, decl[0] if decl else "")
        right = text(assign.child_by_field_name("right"))
        own = re.compile(r"(?<![\w.>])" + re.escape(name) + r"\b")
        runs = 0
        while value is not None:
            holds = fold(own.sub(f"({value})", text(cond)), at, "int")
            if holds is None or not holds:
                break
            runs += 1
            value = fold(own.sub(f"({value})", right), at, decl[0] if decl else "") if runs <= 4096 else None
        if value is None or holds is None:
            return None
        start = fold(name, at, decl[0] if decl else "")
        return Found(repr(value), self._loc(loop), self, loop.start_byte,
                     origin=f"the loop at {self._loc(loop)} runs {runs} times from {name} = {start}")

    def argv_skipped(self, node: Node) -> bool:
        """Whether a write takes its value from the command line in a default run that has no arguments; when the
        application exits unless given arguments (Program.args_required), such writes are ordinary writes, of the
        run line's arguments when one was found (Program.run_args), else of values not known."""
        return self.fn is not None and not self.program.args_required and _from_command_line(node, self.fn)

    def _branch_state(self, node: Node, decided: list[str]) -> str:
        """Whether a write runs whenever its function reaches that point, as far as the `if`s around it (and outside
        the limit's own blocks) say: "live" (every such condition known and holding), "dead" (one known not to hold),
        "unknown" (a condition not known, or a loop, switch or other construct that runs its part only sometimes)."""
        decide = self.program.decide
        if self.argv_skipped(node):
            return "unknown"  # a run's arguments choose it: the default of a run without them is handled apart
        state = "live"
        around = self.program.undecided_branch(self.source, node)
        if around is not None and not around[0] <= self.limit < around[1]:
            state = "unknown"  # `#ifdef __CUDACC_RDC__ n = 1; #endif`: compiled or not, as the build's flags say
        child = node
        for a in _ancestors(node, self.fn) if self.fn is not None else []:  # an `if` known not to hold outside an
            inside = a.start_byte <= self.limit < a.end_byte                 # unknown one still makes it dead
            if a.type == "if_statement" and not inside:
                cond = a.child_by_field_name("condition")
                alt = a.child_by_field_name("alternative")
                in_alt = alt is not None and alt.start_byte <= child.start_byte < alt.end_byte
                if cond is None or cond.start_byte <= child.start_byte < cond.end_byte or decide is None:
                    state = "unknown"
                    child = a
                    continue
                holds, facts = decide(text(cond), Scope(self.source, self.fn, a.start_byte, self.program, self.depth))
                if holds is None:
                    state = "unknown"
                    child = a
                    continue
                decided.append(f"'if {' '.join(text(cond).split())[:100]}' at {self._loc(a)} "
                               f"{'holds' if holds else 'does not hold'}" + (f" ({facts})" if facts else ""))
                if holds == in_alt:
                    return "dead"
            elif a.type == "while_statement" and not inside and decide is not None and (
                    cond := a.child_by_field_name("condition")) is not None and not (
                    cond.start_byte <= child.start_byte < cond.end_byte):
                before = max(a.start_byte - 1, self.fn.start_byte) if self.fn is not None else a.start_byte
                holds, facts = decide(text(cond), Scope(self.source, self.fn, before, self.program, self.depth))
                if holds is False:  # a loop whose condition does not hold when it is reached never runs its body
                    decided.append(f"'while {' '.join(text(cond).split())[:100]}' at {self._loc(a)} does not hold "
                                   "when reached" + (f" ({facts})" if facts else ""))
                    return "dead"
                state = "unknown"
            elif a.type in _BRANCHES and a.type not in {"compound_statement", "else_clause"} and not inside:
                state = "unknown"
            child = a
        return state

    def declared(self, name: str) -> tuple[str, str] | None:
        """(type, declarator text) of the variable `name` as seen at the limit: a parameter or the last declaration
        of the function before the limit, else a file-scope one: ("half2", "*devVec[2]") for `half2 *devVec[2];`."""
        roots = [self.fn, self.program.tree_of(self.source).root_node] if self.fn is not None else \
            [self.program.tree_of(self.source).root_node]
        for root in roots:
            best: Node | None = None
            stack = [root]
            while stack:
                n = stack.pop()
                if n.type == "function_definition" and n is not root:
                    continue
                if n.type in {"parameter_declaration", "declaration"} and (root is not self.fn or n.start_byte < self.limit) \
                        and not self.program.dropped(self.source, n):
                    for d in n.children_by_field_name("declarator"):
                        inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                        if inner is not None and inner.type != "function_declarator" and _declared(inner) == name and (
                                best is None or inner.start_byte > best.start_byte):
                            best = inner
                stack.extend(n.named_children)
            if best is not None:
                return _declared_type(best), text(best)
        return None

    def local_alias(self, name: str) -> str | None:
        """The type a local `using name = T;` or `typedef T name;` of the function names before the limit (`using
        Ktraits = traits<kNThreads, input_t>;` before `k<Ktraits><<<...>>>`), else None."""
        if self.fn is None:
            return None
        found: str | None = None
        at = -1
        stack = [self.fn]
        while stack:
            n = stack.pop()
            if n.start_byte >= self.limit:
                continue
            if n.type == "alias_declaration" and text(n.child_by_field_name("name")) == name and n.start_byte > at:
                kind = n.child_by_field_name("type")
                found, at = (text(kind) if kind is not None else None), n.start_byte
            elif n.type == "type_definition" and n.start_byte > at and any(
                    _declared(d) == name for d in n.children_by_field_name("declarator")):
                kind = n.child_by_field_name("type")
                found, at = (text(kind) if kind is not None else None), n.start_byte
            stack.extend(n.named_children)
        return " ".join(found.split()) if found else None

    def expand_aliases(self, types: str) -> str:
        """`types` with each local alias of the function replaced by the type it names (an alias of an alias too)."""
        for _ in range(4):
            out = re.sub(r"(?<![\w:.])[A-Za-z_]\w*", lambda m: self.local_alias(m.group(0)) or m.group(0), types)
            if out == types:
                break
            types = out
        return types

    def parameter_index(self, name: str) -> int:
        if self.fn is None:
            return -1
        decl = self.fn.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        params = decl.child_by_field_name("parameters") if decl is not None else None
        if params is None:
            return -1
        for i, p in enumerate(c for c in params.named_children if c.type.endswith("parameter_declaration")):
            d = p.child_by_field_name("declarator")
            if d is not None and _declared(d) == name:
                return i
        return -1

    def function_name(self) -> str:
        if self.fn is None:
            return ""
        decl = self.fn.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        inner = decl.child_by_field_name("declarator") if decl is not None else None
        return text(inner).split("::")[-1]

    def callers(self) -> list[tuple[Scope, list[str], str]]:
        """(caller scope, argument texts, file:line) for each call of this function in the program."""
        name = self.function_name()
        if not name or self.depth >= 4:
            return []
        return self.program.calls_of(name, self.depth + 1, self.source, self.fn)

    def template_params(self) -> list[str]:
        """Names of the enclosing function template's parameters (`T` in template <typename T> void run(T*))."""
        if self.fn is None or self.fn.parent is None or self.fn.parent.type != "template_declaration":
            return []
        plist = self.fn.parent.child_by_field_name("parameters")
        out = []
        for p in plist.named_children if plist is not None else []:
            words = re.findall(r"[A-Za-z_]\w*", text(p).split("=")[0])
            if words:
                out.append(words[-1])
        return out

    def lambda_template_params(self) -> tuple[list[str], str]:
        """Names of the template parameters of the template lambdas around this scope's point (`[&]<bool HZ>() {...}`,
        C++20: instances made by `d.operator()<true>()`), and where the innermost is; ([], "") when none."""
        names: list[str] = []
        where = ""
        for lam in self._nodes({"lambda_expression"}):
            if not (lam.start_byte <= self.limit < lam.end_byte):
                continue
            plist = next((c for c in lam.children if c.type == "template_parameter_list"), None)
            for p in plist.named_children if plist is not None else []:
                words = re.findall(r"[A-Za-z_]\w*", text(p).split("=")[0])
                if words:
                    names.append(words[-1])
                    where = self._loc(lam)
        return names, where

    def caller_template_args(self) -> list[tuple[str, str, bool, tuple[str, ...]]]:
        """(explicit template arguments, file:line, whether the call runs whenever its function does, the calling
        function's own template parameters) of each call of this function template: run<float>(...); calls in a
        branch known not to run are left out."""
        name = self.function_name()
        out = []
        for source in self.program.files.values():
            if name.encode() not in source.data:
                continue
            for call in self.program.all_calls(source, name):
                fn = call.child_by_field_name("function")
                if fn is not None and fn.type == "identifier" and text(fn) == name and self.template_params():
                    around = self.program.scope_at(source, call.start_byte)  # `run(n, d_a)`: deduced from the
                    caller = Scope(source, around.fn, around.fn.start_byte if around.fn is not None else 0,  # arguments
                                   self.program, self.depth)
                    state = caller._branch_state(call, [])
                    if state == "dead":
                        continue
                    deduced = self._deduced_from(call, Scope(source, around.fn, call.start_byte, self.program, self.depth))
                    out.append((deduced if deduced is not None else "", f"{source.rel}:{call.start_point[0] + 1}",
                                state == "live", tuple(caller.template_params())))
                    continue
                if fn is not None and fn.type in {"template_function", "qualified_identifier"} and "<" in text(fn):
                    around = self.program.scope_at(source, call.start_byte)  # weighed from its function's start,
                    caller = Scope(source, around.fn, around.fn.start_byte if around.fn is not None else 0,  # so every
                                   self.program, self.depth)  # `if` around the call counts
                    state = caller._branch_state(call, [])
                    if state == "dead":  # `if (tile == 8) run<8>(...)` that does not hold
                        continue
                    t = text(fn)  # `run<data_t, rng_t>(...)` after `using data_t = std::uint64_t;` in the caller
                    targs = Scope(source, around.fn, call.start_byte, self.program, self.depth).expand_aliases(
                        t[t.index("<") + 1 : t.rindex(">")])
                    out.append((targs, f"{source.rel}:{call.start_point[0] + 1}", state == "live",
                                tuple(caller.template_params())))
        return out

    def _deduced_from(self, call: Node, at: Scope) -> str | None:
        """The template arguments a call without them deduces (`bs(n, d_a)` of `template <typename T> void bs(size_t n,
        const T* a)`: T is the declared type of d_a at the call), in the template's order; None when one is not
        deduced from a variable of one named type with the parameter's number of `*`."""
        params = self.template_params()
        decl = self.fn.child_by_field_name("declarator") if self.fn is not None else None
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        plist = decl.child_by_field_name("parameters") if decl is not None else None
        args = call.child_by_field_name("arguments")
        if plist is None or args is None:
            return None
        skip = {"const", "volatile", "__restrict__", "__restrict", "restrict"}
        got: dict[str, str] = {}
        fparams = [p for p in plist.named_children if p.type in {"parameter_declaration", "optional_parameter_declaration"}]
        for p, a in zip(fparams, args.named_children):
            words = [w for w in re.findall(r"[A-Za-z_]\w*", text(p.child_by_field_name("type"))) if w not in skip]
            pdecl = p.child_by_field_name("declarator")
            ptext = text(pdecl) if pdecl is not None else ""
            if len(words) != 1 or words[0] not in params or words[0] in got or "[" in ptext or "(" in ptext:
                continue
            found = at.declared(text(a)) if re.fullmatch(r"[A-Za-z_]\w*", text(a)) else None
            if found is None or "[" in found[1] or "(" in found[1] or found[1].count("*") != ptext.count("*"):
                continue
            base = [w for w in found[0].split() if w not in skip]
            if base and all(re.fullmatch(r"[A-Za-z_][\w:]*", w) for w in base):
                got[words[0]] = " ".join(base)
        return ", ".join(got[p] for p in params) if all(p in got for p in params) else None

    def allocations(self, var: str) -> Found | None:
        """The byte count of the allocation that gave `var` its memory."""
        for node in reversed(self._nodes({"call_expression"})):
            fn = text(node.child_by_field_name("function"))
            args = node.child_by_field_name("arguments")
            if args is None:
                continue
            items = args.named_children
            if fn in _ALLOC and len(items) >= 2 and _mentions_address_of(items[0], var):
                return Found(text(items[1]), self._loc(node), self, node.start_byte)
            if fn == "clCreateBuffer" and len(items) >= 3 and _assigned_to(node) == var:
                return Found(text(items[2]), self._loc(node), self, node.start_byte)
            if fn in _HOST_ALLOC and _assigned_to(node) == var and items:
                if fn == "calloc" and len(items) == 2:
                    return Found(f"({text(items[0])})*({text(items[1])})", self._loc(node), self, node.start_byte)
                return Found(text(items[_HOST_ALLOC[fn] if _HOST_ALLOC[fn] >= 0 else 0]), self._loc(node), self, node.start_byte)
        for node in self._nodes({"new_expression"}):
            if _assigned_to(node) == var:
                size = node.child_by_field_name("declarator")
                tname = text(node.child_by_field_name("type"))
                if size is not None:
                    return Found(f"({text(size).strip('[]')})*sizeof({tname})", self._loc(node), self, node.start_byte)
        return None

    def pointer_sources(self, var: str) -> list[tuple[str, Scope]] | None:
        """The pointers a local pointer variable may hold at the limit, when it is only ever assigned whole other
        variables (`ikey = d_BufKey;` in one branch, `ikey = d_DstKey;` in the other): (name, scope at the
        assignment) for each assignment before the limit; None when it is written any other way (arithmetic, its
        address handed on, a call), in a loop around the limit, or not at all."""
        if self.fn is None or self.parameter_index(var) >= 0 or not _shadowed_at_top(self.fn, var):
            return None
        loops = [a for a in _ancestors(self.fn.descendant_for_byte_range(self.limit, self.limit) or self.fn, self.fn)
                 if a.type in _LOOPS]
        out: list[tuple[str, Scope]] = []
        for node, kind, value in self.writes_of(var):
            if any(lp.start_byte <= node.start_byte < lp.end_byte for lp in loops):
                return None
            if node.start_byte >= self.limit or kind == "decl":
                continue
            if kind != "def" or value is None or value.type != "identifier":
                return None
            out.append((text(value), Scope(self.source, self.fn, node.start_byte, self.program, self.depth)))
        for call in self.program.calls_in(self.fn):  # `std::swap(ikey, okey)` takes it by reference
            args = call.child_by_field_name("arguments")
            if call.start_byte < self.limit and args is not None and any(text(a).strip() == var for a in args.named_children):
                return None
        return out or None

    def cl_kernel_args(self, kernel_object: str) -> dict[int, tuple[str, str, str]]:
        """{index: (size expr, value expr, file:line)} from clSetKernelArg calls on one kernel object."""
        out: dict[int, tuple[str, str, str]] = {}
        for node in self.program.all_calls(self.source, "clSetKernelArg"):
            args = node.child_by_field_name("arguments")
            items = args.named_children if args is not None else []
            if len(items) >= 4 and text(items[0]).strip() == kernel_object:
                try:
                    idx = int(text(items[1]).strip().rstrip("uU"))
                except ValueError:
                    continue
                if idx not in out or node.start_byte < self.limit:
                    out[idx] = (text(items[2]), text(items[3]), self._loc(node))
        return out


_LOOPS = {"for_statement", "while_statement", "do_statement", "for_range_loop"}
# nodes whose parts run only sometimes: a write inside one dominates the launch only if the launch is inside it too
_BRANCHES = _LOOPS | {"compound_statement", "if_statement", "else_clause", "switch_statement", "case_statement",
                      "conditional_expression", "binary_expression", "lambda_expression", "try_statement", "catch_clause"}


def _set_in_init(loop: Node, name: str, writes: list[tuple[Node, str, Node | None, str]]) -> bool:
    """Whether a `for` loop's init clause (`for (bs = 64; ...)`, `for (int bs = 64; ...)`) gives `name` the value
    the loop starts from: the last write found before the update (writes so far, in text order) is in that clause."""
    return bool(writes) and writes[-1][1] == "def" and _in_field(loop, "initializer", writes[-1][0])


def _in_field(parent: Node, field: str, node: Node) -> bool:
    part = parent.child_by_field_name(field)
    return part is not None and part.start_byte <= node.start_byte < part.end_byte


def _ancestors(node: Node, stop: Node) -> list[Node]:
    out = []
    cur = node.parent
    while cur is not None and cur != stop:
        out.append(cur)
        cur = cur.parent
    return out


def _writes_in(fn: Node, name: str, by_reference: Callable[[str, int], bool] | None = None
               ) -> list[tuple[Node, str, Node | None]]:
    """(node, kind, value) of each write of `name` in a function, in text order: kind "def" (`name = v`, `T name = v`,
    `T name(v)`), "decl" (`T name;`), "modify" (`name += v`, `name++`, `&name` handed to a call, `name` handed to a
    function that takes that argument by non-const reference, as `by_reference(function, position)` says)."""
    out: list[tuple[Node, str, Node | None]] = []
    stack = [fn]
    while stack:
        n = stack.pop()
        t = n.type
        if t == "init_declarator":
            decl = n.child_by_field_name("declarator")
            if decl is not None and _declared(decl) == name:
                out.append((n, "def", n.child_by_field_name("value")))
        elif t == "declaration":
            for d in n.children_by_field_name("declarator"):
                if d.type in {"identifier", "array_declarator", "pointer_declarator"} and _declared(d) == name:
                    out.append((d, "decl", None))
                elif d.type == "function_declarator" and text(d.child_by_field_name("declarator")) == name:
                    out.append((d, "def", d.child_by_field_name("parameters")))
        elif t == "assignment_expression":
            left = n.child_by_field_name("left")
            if left is not None and text(left).strip() == name:
                op = text(n.child_by_field_name("operator"))
                out.append((n, "def" if op in {"=", ""} else "modify", _chained_value(n.child_by_field_name("right"))))
        elif t == "update_expression":
            arg = n.child_by_field_name("argument")
            if arg is not None and text(arg).strip() == name:
                out.append((n, "modify", None))
        elif t == "pointer_expression" and text(n).replace(" ", "") == "&" + name.replace(" ", "") and not _read_only_use(n):
            out.append((n, "modify", None))
        elif t == "argument_list" and by_reference is not None and n.parent is not None and \
                n.parent.type == "call_expression":
            args = [c for c in n.named_children if c.type != "comment"]
            for i, a in enumerate(args):
                if text(a).strip() == name and by_reference(_callee(n.parent), i):
                    out.append((a, "modify", None))
        stack.extend(n.named_children)
    return sorted(out, key=lambda w: w[0].start_byte)


def _callee(call: Node) -> str:
    return text(call.child_by_field_name("function")).split("<")[0].split("::")[-1].split(".")[-1].strip()


def handing_call(node: Node) -> Node | None:
    """The call a write found by `_writes_in` hands the variable to (`layout(n, &grid, &block)`), else None."""
    arg = node
    while arg.parent is not None and arg.parent.type in {"cast_expression", "parenthesized_expression"}:
        arg = arg.parent
    args = arg.parent
    if args is None or args.type != "argument_list" or args.parent is None or args.parent.type != "call_expression":
        return None
    return args.parent


# calls that only read through an address they are given: (function, argument positions that are read), None: all
_READS_THROUGH: dict[str, tuple[int, ...] | None] = {
    "clSetKernelArg": None, "cudaMemcpyToSymbol": None, "hipMemcpyToSymbol": None, "cudaMemcpyToSymbolAsync": None,
    "hipMemcpyToSymbolAsync": None, "printf": None, "fprintf": None, "fwrite": None, "cudaMemcpy": (1,),
    "hipMemcpy": (1,), "cudaMemcpyAsync": (1,), "hipMemcpyAsync": (1,), "memcpy": (1,), "clEnqueueWriteBuffer": (5,),
    "clEnqueueNDRangeKernel": (3, 4, 5)}  # the work offset and sizes are read


def _read_only_use(addr: Node) -> bool:
    """`&n` handed to a call that only reads it (clSetKernelArg(k, 0, sizeof n, &n), cudaMemcpy(dst, &n, ...))."""
    arg = addr
    while arg.parent is not None and arg.parent.type in {"cast_expression", "parenthesized_expression"}:
        arg = arg.parent
    args = arg.parent
    if args is None or args.type != "argument_list" or args.parent is None or args.parent.type != "call_expression":
        return False
    fn = text(args.parent.child_by_field_name("function")).split("::")[-1].strip()
    if fn not in _READS_THROUGH:
        return False
    positions = _READS_THROUGH[fn]
    index = [c.start_byte for c in args.named_children].index(arg.start_byte) if arg in args.named_children else -1
    return positions is None or index in positions


def _scanf_argument(addr: Node) -> bool:
    """`&a[1]` handed to scanf/fscanf/sscanf, which writes that one element through it."""
    args = addr.parent
    call = args.parent if args is not None and args.type == "argument_list" else None
    return call is not None and call.type == "call_expression" and \
        text(call.child_by_field_name("function")).strip() in {"scanf", "fscanf", "sscanf"}


def _from_command_line(node: Node, fn: Node) -> bool:
    """A write that takes its value from the command line (`n = atoi(argv[1])`, `case 'n': n = atoi(optarg)`)."""
    if re.search(r"\b(?:argv|optarg)\b", text(node)):
        return True
    return any(a.type in {"if_statement", "for_statement", "while_statement", "switch_statement"}
               and re.search(r"\b(?:argc|argv|getopt\w*)\b", text(a.child_by_field_name("condition") or a)[:200])
               for a in _ancestors(node, fn))


def _fold_update(node: Node, name: str, fn: Node) -> str | None:
    """`x op= e` / `x++` as an expression of x's previous value, when no loop repeats it; else None."""
    if any(a.type in _LOOPS for a in _ancestors(node, fn)):
        return None
    if node.type == "assignment_expression":
        op = text(node.child_by_field_name("operator"))
        right = node.child_by_field_name("right")
        if op in {"+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "|=", "&=", "^="} and right is not None:
            return f"({name}) {op[:-1]} ({text(right)})"
    if node.type == "update_expression":
        op = "+" if "++" in text(node) else "-"
        return f"({name}) {op} 1"
    return None


def _chained_value(right: Node | None) -> Node | None:
    """The value of `a = b = v`: v (the right side of the innermost plain assignment)."""
    while right is not None and right.type == "assignment_expression" and \
            text(right.child_by_field_name("operator")) == "=":
        right = right.child_by_field_name("right")
    return right


def _declared_type(node: Node) -> str:
    """The type text of the declaration an init_declarator (or declarator) belongs to: `size_t` for `size_t n = 4;`."""
    cur = node.parent
    while cur is not None and cur.type not in {"declaration", "field_declaration", "parameter_declaration"}:
        if cur.type in {"function_definition", "compound_statement", "translation_unit"}:
            return ""
        cur = cur.parent
    if cur is None:
        return ""
    ctype = cur.child_by_field_name("type")
    quals = [text(c) for c in cur.children if c.type in {"type_qualifier", "sized_type_specifier"} and c != ctype]
    return " ".join([*(q for q in quals if q not in {"const", "volatile", "__device__", "__constant__"}), text(ctype)])


def _file_scope_declaration(root: Node, name: str) -> tuple[Node, Node] | None:
    """(declaration, declarator) of `name` at file scope (outside every function), the last one in the file."""
    found: tuple[Node, Node] | None = None
    stack = list(root.named_children)
    while stack:
        n = stack.pop()
        if n.type in {"linkage_specification", "declaration_list", "namespace_definition", "preproc_if", "preproc_ifdef",
                      "preproc_else", "preproc_elif"}:
            stack.extend(n.named_children)
            continue
        if n.type != "declaration":
            continue
        for d in n.children_by_field_name("declarator"):
            inner = d.child_by_field_name("declarator") if d.type in {"init_declarator", "function_declarator"} else d
            if d.type == "function_declarator" and (d.child_by_field_name("parameters") is None or inner is None
                                                     or text(inner) != name):
                continue
            if _declared(inner if inner is not None else d) == name and (found is None or n.start_byte > found[0].start_byte):
                found = (n, d)
    return found


def _functions(root: Node) -> list[Node]:
    out = []
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "function_definition":
            out.append(n)
            continue
        stack.extend(n.named_children)
    return sorted(out, key=lambda n: n.start_byte)


def _shadowed(fn: Node, name: str) -> bool:
    """`name` is a parameter or a local variable of `fn` somewhere in it."""
    stack = [fn]
    while stack:
        n = stack.pop()
        if n.type in {"parameter_declaration", "optional_parameter_declaration"}:
            d = n.child_by_field_name("declarator")
            if d is not None and _declared(d) == name:
                return True
        elif n.type == "declaration":
            for d in n.children_by_field_name("declarator"):
                if _declared(d) == name and not (d.type == "function_declarator" and d.child_by_field_name("parameters")
                                                 is not None and text(d.child_by_field_name("declarator")) != name):
                    return True
        if n.type in {"lambda_expression"}:
            continue
        stack.extend(n.named_children)
    return False


def _declared(decl: Node) -> str:
    names = re.findall(r"[A-Za-z_]\w*", text(decl).split("=")[0].split("[")[0].split("(")[0])
    return names[-1] if names else ""


def _value_text(value: Node, decl: Node) -> str:
    if value.type == "argument_list":  # dim3 grid(a, b, c)
        return "dim3(" + ", ".join(text(c) for c in value.named_children) + ")"
    if value.type == "initializer_list":
        return "{" + ", ".join(text(c) for c in value.named_children) + "}"
    return text(value)


def _mentions_address_of(node: Node, var: str) -> bool:
    return re.search(r"&\s*" + re.escape(var) + r"\b", text(node)) is not None


def _assigned_to(node: Node) -> str:
    cur = node.parent
    while cur is not None and cur.type in {"cast_expression", "parenthesized_expression", "call_expression", "argument_list"}:
        cur = cur.parent
    if cur is None:
        return ""
    if cur.type == "assignment_expression":
        return text(cur.child_by_field_name("left")).strip()
    if cur.type == "init_declarator":
        return _declared(cur.child_by_field_name("declarator"))  # type: ignore[arg-type]
    return ""


class Program:
    """The host side of a tree, parsed on demand."""

    def __init__(self, files: dict[Path, SourceFile]) -> None:
        self.files = files
        self._trees: dict[str, object] = {}
        self.decide: Decide | None = None  # set by whoever evaluates values (infer.Values): decides `if` conditions
        # and evaluates an expression in a scope, converted to a declared type (None: not known)
        self.fold: Callable[[str, Scope, str], float | int | None] | None = None
        self._global_writes: dict[tuple[str, str, int], tuple[Found | None, str]] = {}
        self._definitions: dict[str, list[tuple[SourceFile, Node]]] = {}
        self._by_reference: dict[tuple[str, int], bool] = {}
        # set when main needs its arguments (file:line of its exit or unguarded argv read): the default run is then the run line
        # found beside the sources (run_args: argv[1:], run_from: where it was read), or not known (run_args None)
        self.args_required = ""
        self.macros: Macros | None = None  # the launching unit's, set by infer.Values: #if branches they drop
        self._branches: dict[str, tuple[list[tuple[int, int]], list[tuple[int, int]]]] = {}
        self.run_args: tuple[str, ...] | None = None
        self.run_from = ""

    def dropped(self, source: SourceFile, node: Node) -> bool:
        """Whether `node` lies in a preprocessor branch that the unit's macros drop (see pp_branches)."""
        if self.macros is None or b"#" not in source.data:
            return False
        return any(a <= node.start_byte < b for a, b in self._ranges(source)[0])

    def undecided_branch(self, source: SourceFile, node: Node) -> tuple[int, int] | None:
        """The byte range of a preprocessor branch around `node` that the unit's macros do not decide, or None."""
        if self.macros is None or b"#" not in source.data:
            return None
        return next(((a, b) for a, b in self._ranges(source)[1] if a <= node.start_byte < b), None)

    def _ranges(self, source: SourceFile) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        if source.rel not in self._branches:
            self._branches[source.rel] = branch_ranges(source.data, self.macros or {})
        return self._branches[source.rel]

    def definitions_of(self, name: str) -> list[tuple[SourceFile, Node]]:
        """(file, function_definition) of every function of the program named `name` (host or device)."""
        if name not in self._definitions:
            found = []
            for source in self.files.values():
                if name.encode() not in source.data or language_of(source.rel) == "opencl":
                    continue
                found += [(source, f) for f in _functions(self.tree_of(source).root_node) if _function_name(f) == name]
            self._definitions[name] = found
        return self._definitions[name]

    def by_reference(self, function: str, position: int) -> bool:
        """Whether some function of the program named `function` takes its argument at `position` by non-const
        reference (`void layout(int n, dim3& g, dim3& b)`), so that a call may write the variable passed there."""
        key = (function, position)
        if key not in self._by_reference:
            self._by_reference[key] = False
            for source in self.files.values():
                if function.encode() not in source.data or language_of(source.rel) == "opencl":
                    continue
                stack = [self.tree_of(source).root_node]
                while stack:
                    n = stack.pop()
                    stack.extend(n.named_children)
                    inner = n.child_by_field_name("declarator") if n.type == "function_declarator" else None
                    if inner is None or text(inner).split("::")[-1].strip() != function:
                        continue
                    plist = n.child_by_field_name("parameters")
                    params = [c for c in plist.named_children if c.type.endswith("parameter_declaration")] if plist else []
                    if position < len(params) and _non_const_reference(params[position]):
                        self._by_reference[key] = True
        return self._by_reference[key]

    def tree_of(self, source: SourceFile):  # type: ignore[no-untyped-def]
        if source.rel not in self._trees:
            self._trees[source.rel] = parse(source.data, language_of(source.rel, source.data))
        return self._trees[source.rel]

    def scope_at(self, source: SourceFile, offset: int, depth: int = 0) -> Scope:
        root = self.tree_of(source).root_node
        node = root.descendant_for_byte_range(offset, offset)
        while node is not None and node.type != "function_definition":
            node = node.parent
        return Scope(source, node, offset, self, depth)

    def file_scope(self, source: SourceFile) -> Scope:
        return Scope(source, None, len(source.data), self)

    @staticmethod
    def calls_in(fn: Node) -> list[Node]:
        """Every call expression in a function."""
        out = []
        stack = [fn]
        while stack:
            n = stack.pop()
            if n.type == "call_expression":
                out.append(n)
            stack.extend(n.named_children)
        return out

    def all_calls(self, source: SourceFile, name: str) -> list[Node]:
        out = []
        stack = [self.tree_of(source).root_node]
        while stack:
            n = stack.pop()
            if n.type == "call_expression" and text(n.child_by_field_name("function")).split("<")[0].split("::")[-1].strip() == name:
                out.append(n)
            stack.extend(n.named_children)
        return sorted(out, key=lambda n: n.start_byte)

    def only_allocation(self, var: str, source_file: SourceFile) -> Found | None:
        """The one device allocation of a global pointer in the launching file (`cudaMalloc(&u_device, size_u)` in a
        setup function), when there is exactly one and nothing else there assigns the pointer; else None. (Other
        files may be other programs of the same suite with a global of the same name.)"""
        hits: list[tuple[SourceFile, Node]] = []
        assign = re.compile(rb"(?<![\w.>])" + re.escape(var.encode()) + rb"\s*=(?!=)")
        for source in (source_file,):
            if var.encode() not in source.data or language_of(source.rel) == "opencl":
                continue
            if assign.search(source.data):
                return None
            for fn in _ALLOC:
                if fn.encode() not in source.data:
                    continue
                for call in self.all_calls(source, fn):
                    args = call.child_by_field_name("arguments")
                    items = args.named_children if args is not None else []
                    if len(items) >= 2 and _mentions_address_of(items[0], var):
                        hits.append((source, call))
        if len(hits) != 1:
            return None
        source, call = hits[0]
        size = call.child_by_field_name("arguments").named_children[1]  # type: ignore[union-attr]
        scope = self.scope_at(source, call.start_byte)
        return Found(text(size), f"{source.rel}:{call.start_point[0] + 1}", scope, call.start_byte)

    def element_uses(self, source: SourceFile, base: str, index: int, fn: Node | None) -> str:
        """Why the element `base[index]` cannot be followed as a variable of its own ("" when it can): every use of
        `base` in the file (in `fn` alone for a local array) must be an element at a constant index; writes of
        `base[index]` (assigned, ++, or its address taken) not both in `fn` (where `reaching` weighs them) and in
        other functions (where `_global_write` wants one write); addresses of other elements only handed to a scanf
        (which writes that element alone); no other file that may write it (extern, or a function that writes it
        without a variable of its own)."""
        root = self.tree_of(source).root_node
        needle = base.encode()
        if re.search(rb"^[ \t]*#[ \t]*define\b[^\n]*\b" + re.escape(needle) + rb"\b", source.data, re.M):
            return f"{base} is named in a macro (its uses there are not seen)"
        local = fn is not None and _shadowed(fn, base)
        if fn is not None and local and not _shadowed_at_top(fn, base):
            return f"{base} is a local of an inner block of {_function_name(fn)}()"
        stack: list[Node] = [fn if fn is not None and local else root]
        writers: set[int] = set()
        while stack:
            n = stack.pop()
            if n.type == "function_definition" and n is not fn and _shadowed(n, base):
                if not _shadowed_at_top(n, base):
                    return f"{base} is both a global and a local of {_function_name(n)}() at {self._where(source, n)}"
                continue  # that function's own variable
            stack.extend(n.children)
            if n.type != "identifier" or text(n) != base:
                continue
            where = self._where(source, n)
            parent = n.parent
            if parent is not None and parent.type in {"array_declarator", "init_declarator", "pointer_declarator"}:
                continue
            if parent is None or parent.type != "subscript_expression" or parent.named_children[0] != n:
                return f"{base} is used as a whole at {where} (it may be written through)"
            idx = parent.named_children[1] if len(parent.named_children) > 1 else None
            lit = idx.named_children[0] if idx is not None and len(idx.named_children) == 1 else None
            j = int(text(lit)) if lit is not None and lit.type == "number_literal" and text(lit).isdigit() else None
            outer = parent.parent
            while outer is not None and outer.type == "parenthesized_expression":
                outer = outer.parent
            written = outer is not None and (
                outer.type == "assignment_expression" and outer.child_by_field_name("left") == parent
                or outer.type == "update_expression")
            addressed = outer is not None and outer.type == "pointer_expression" and text(outer).lstrip().startswith("&")
            if not written and not addressed:
                continue
            if j is None:
                return f"an element of {base} at an index not known before the run is written at {where}"
            if j == index:
                writer = outer
                while writer is not None and writer.type != "function_definition":
                    writer = writer.parent
                writers.add(writer.start_byte if writer is not None else -1)
                continue
            if addressed and outer is not None and not _scanf_argument(outer):
                return f"the address of {base}[{j}] is handed on at {where}"
        if local:
            return ""
        if fn is not None and fn.start_byte in writers and len(writers) > 1:
            return f"{base}[{index}] is written both in {_function_name(fn)}() and in other functions"
        ext = re.compile(rb"\bextern\b[^;{}()]*\b" + re.escape(needle) + rb"\b")
        for other in self.files.values():
            if other is not source and needle in other.data and ext.search(other.data):
                return f"{base} is declared extern in {other.rel}: another unit may write it"
        elsewhere = self._written_elsewhere(source, base)
        return f"{base} is also written at {elsewhere}" if elsewhere else ""

    def written_in_functions(self, name: str) -> str:
        """file:line of a write of the global `name` inside some function of the program ('' when none): an
        assignment, a compound assignment or ++/--, or its address handed on."""
        pat = re.compile(rb"(?<![\w.>])" + re.escape(name.encode()) + rb"\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)|(?:\+\+|--)\s*"
                         + re.escape(name.encode()) + rb"\b|\b" + re.escape(name.encode()) + rb"\s*(?:\+\+|--)|&\s*"
                         + re.escape(name.encode()) + rb"\b(?!\s*[.\[])")
        for source in self.files.values():
            if name.encode() not in source.data:
                continue
            for m in pat.finditer(source.data):
                node = self.tree_of(source).root_node.descendant_for_byte_range(m.start(), m.start())
                inside = node
                while inside is not None and inside.type != "function_definition":
                    inside = inside.parent
                local = node is not None and node.parent is not None and node.parent.type == "init_declarator"
                if inside is not None and not local:
                    return f"{source.rel}:{source.data.count(NL, 0, m.start()) + 1}"
        return ""

    def calls_of(self, name: str, depth: int, defined_in: SourceFile | None = None,
                 definition: Node | None = None) -> list[tuple[Scope, list[str], str]]:
        """(caller scope, argument texts, file:line) of every call of the function `name`. With its definition given:
        a `static` one is called only from its own file; a call in another file that defines a function of the same
        name calls that one (another program of the same tree: NPB's MG/mg.cu and MG/mg-no-cast.cu)."""
        out = []
        needle = name.encode()
        static = definition is not None and any(text(c) == "static" for c in definition.children
                                                if c.type == "storage_class_specifier")
        for source in self.files.values():
            if needle not in source.data or language_of(source.rel) == "opencl":
                continue
            if defined_in is not None and source is not defined_in and (
                    static or any(_function_name(f) == name for f in _functions(self.tree_of(source).root_node))):
                continue
            for call in self.all_calls(source, name):
                args = call.child_by_field_name("arguments")
                if args is None:
                    continue
                scope = self.scope_at(source, call.start_byte, depth)
                out.append((scope, [text(a) for a in args.named_children], f"{source.rel}:{call.start_point[0] + 1}"))
        return out

    def set_decide(self, decide: Decide) -> None:
        """Who decides `if` conditions from now on; what was found with the one before is found again."""
        self.decide = decide
        self._global_writes.clear()

    def global_write(self, source: SourceFile, name: str, launching: Node | None) -> tuple[Found | None, str]:
        key = (source.rel, name, launching.start_byte if launching is not None else -1)
        if key not in self._global_writes:
            self._global_writes[key] = self._global_write(source, name, launching)
        return self._global_writes[key]

    def _global_write(self, source: SourceFile, name: str, launching: Node | None) -> tuple[Found | None, str]:
        """The one write that gives a file-scope variable of `source` (or a field `obj.f` of a file-scope object) its
        value, wherever it happens in the unit: launch sizes computed in a setup function into globals
        (`blocks_per_grid = ceil(NX / threads); cudaMalloc(&d_x, size_of_x)`) and used in another function.

        (found, "") when there is exactly one write in the translation unit's file (the file-scope initializer
        counts as one) and it runs whenever its function runs: not in a loop, switch or `?:`, no `return` before it,
        every `if` around it decided by `self.decide` (the write in a branch known not to run is no write); its
        function is not the launching one (there the write does not reach the launch, else `reaching` had it) and is
        called somewhere. (None, why) when the variable is written more than once, under a condition not known
        before the run, changed by `+=`/`++`/its address, or declared `extern` elsewhere (another unit may write it).
        (None, "") when `name` is not a variable declared at file scope in `source`."""
        element = re.fullmatch(r"([A-Za-z_]\w*)\[(\d+)\]", name)
        if "->" in name or "[" in name and not element:
            return None, ""
        base = name.split(".")[0].split("[")[0].strip()
        if element:  # `grid_points[0]` of `static int grid_points[3]`: one write, as a variable of its own
            why_not = self.element_uses(source, base, int(element.group(2)), None)
            if why_not:
                return None, why_not
        root = self.tree_of(source).root_node
        decl = _file_scope_declaration(root, base)
        if decl is None:
            return None, ""
        declaration, declarator = decl
        loc = f"{source.rel}:{declaration.start_point[0] + 1}"
        if any(text(c) == "extern" for c in declaration.children if c.type == "storage_class_specifier"):
            return None, f"{base} is declared extern at {loc}: it is defined, and may be written, in another unit"
        ext = re.compile(rb"\bextern\b[^;{}()]*\b" + re.escape(base.encode()) + rb"\b\s*[;,\[=]")
        for other in self.files.values():
            if other is not source and base.encode() in other.data and ext.search(other.data):
                return None, f"{base} is declared extern in {other.rel}: another unit may write it"
        elsewhere = self._written_elsewhere(source, base)
        if elsewhere:
            return None, f"{base} is also written at {elsewhere} (a header or another unit that shares it)"
        writes: list[tuple[Node, Node | None, str, list[str]]] = []  # (write, its function or None, value, decisions)
        if name == base and declarator.type == "init_declarator" and declarator.child_by_field_name("value") is not None:
            value = declarator.child_by_field_name("value")
            writes.append((declarator, None, _value_text(value, declarator), []))  # type: ignore[arg-type]
        elif name == base and declarator.type == "function_declarator":  # `dim3 grid(64, 64);` at file scope
            params = declarator.child_by_field_name("parameters")
            writes.append((declarator, None, text(declaration.child_by_field_name("type")) + "("
                           + ", ".join(text(c) for c in params.named_children) + ")", []))  # type: ignore[union-attr]
        skipped: list[str] = []
        needle = base.encode()
        for fn in _functions(root):
            if needle not in source.data[fn.start_byte:fn.end_byte]:
                continue
            found = _writes_in(fn, name, self.by_reference) + (_writes_in(fn, base, self.by_reference) if name != base else [])
            parts = _part_writes(fn, name)
            if parts and not _shadowed(fn, base):  # `grid.x = n / 64` changes the dim3 `grid`
                return None, f"{name} is changed by '{' '.join(text(parts[0]).split())[:40]}' at {self._where(source, parts[0])}"
            if not found:
                continue
            if _shadowed(fn, base):
                if any(kind != "decl" for _n, kind, _v in found) and not _shadowed_at_top(fn, base):
                    return None, f"{base} is both a global and a local of {_function_name(fn)}() at {self._where(source, fn)}"
                continue
            scope = Scope(source, fn, fn.end_byte, self)
            for node, kind, value in found:
                where = self._where(source, node)
                why: list[str] = []
                state = scope._branch_state(node, why)
                if state == "dead":  # `fscanf(fp, "%d", &nx)` under an `if` that does not hold writes nothing
                    skipped.append(f"the write at {where} is in a branch that does not run ({why[-1]})")
                    continue
                if kind != "def" or value is None or text(node.child_by_field_name("left") or node).strip() != name \
                        and node.type == "assignment_expression":
                    return None, f"{name} is changed by '{' '.join(text(node).split())[:40]}' at {where}"
                if state != "live":
                    return None, f"{name} is written at {where} under a condition or in a loop not known before the run"
                early = []
                for r in (r for r in _returns_in(fn) if r.start_byte < node.start_byte):
                    rwhy: list[str] = []
                    if scope._branch_state(r, rwhy) == "dead":  # `if (n > MAX) return 0;` that does not hold
                        why.append(f"the return at {self._where(source, r)} does not run ({rwhy[-1]})")
                    else:
                        early.append(r)
                if early:
                    return None, f"{name} is written at {where} after a return at {self._where(source, early[0])}"
                declarator_of = node.child_by_field_name("declarator")
                expr = _value_text(value, declarator_of) if declarator_of is not None else text(value)
                writes.append((node, fn, expr, why))
        if not writes:
            return None, ""
        if len(writes) > 1:
            return None, (f"{name} is written at {len(writes)} places: "
                          + ", ".join(self._where(source, w[0]) for w in writes[:4]))
        node, wfn, expr, why = writes[0]
        where = self._where(source, node)
        if wfn is not None and launching is not None and wfn.start_byte == launching.start_byte:
            return None, f"{name} is written at {where}, after the launch in the launching function"
        fname = _function_name(wfn) if wfn is not None else ""
        if wfn is not None and fname != "main" and not self.all_calls(source, fname) and \
                not self.calls_of(fname, 4, source, wfn):
            return None, f"{name} is written at {where} in {fname}(), which nothing calls"
        ctype = _declared_type(declarator) if name == base else ""
        origin = (f"the one write of the global {name}, in {fname}() at {where}" if wfn is not None
                  else f"the initializer of the global {name} at {where}, never written elsewhere")
        origin += "".join(f"; {w}" for w in why + skipped)
        scope = Scope(source, wfn, node.start_byte, self) if wfn is not None else self.file_scope(source)
        return Found(expr, where, scope, node.start_byte, "", ctype, origin), ""

    def _written_elsewhere(self, source: SourceFile, base: str) -> str:
        """file:line of a write of `base` (or of a part of it) inside a function of another file that has no
        file-scope variable of that name itself (a header the unit includes, or another unit using it); ""."""
        b = re.escape(base.encode())
        pat = re.compile(rb"(?<![\w.>])" + b + rb"\s*(?:(?:\.|->)\s*\w+\s*|\[[^\]\n]*\]\s*)*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
                         rb"|(?:\+\+|--)\s*" + b + rb"\b|(?<![\w.>])" + b + rb"\s*(?:\+\+|--)|&\s*" + b + rb"\b")
        for other in self.files.values():
            if other is source or base.encode() not in other.data or language_of(other.rel) == "opencl":
                continue
            hits = list(pat.finditer(other.data))
            if not hits:
                continue
            root = self.tree_of(other).root_node
            if _file_scope_declaration(root, base) is not None:
                continue  # that file's own variable of the same name (another program of the tree)
            for m in hits:
                node = root.descendant_for_byte_range(m.start(), m.start())
                while node is not None and node.type != "function_definition":
                    node = node.parent
                if node is not None and not _shadowed(node, base):
                    return f"{other.rel}:{other.data.count(NL, 0, m.start()) + 1}"
        return ""

    @staticmethod
    def _where(source: SourceFile, node: Node) -> str:
        return f"{source.rel}:{node.start_point[0] + 1}"


def _non_const_reference(param: Node) -> bool:
    decl = param.child_by_field_name("declarator")
    if decl is None or decl.type != "reference_declarator" or text(decl).lstrip().startswith("&&"):
        return False
    return not any(c.type == "type_qualifier" and text(c) == "const" for c in param.children)


def _function_name(fn: Node) -> str:
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    inner = decl.child_by_field_name("declarator") if decl is not None else None
    return text(inner).split("::")[-1] if inner is not None else ""


def _shadowed_at_top(fn: Node, name: str) -> bool:
    """`name` is a parameter of `fn` or declared directly in its body: every use in `fn` is the local one."""
    decl = fn.child_by_field_name("declarator")
    while decl is not None and decl.type != "function_declarator":
        decl = decl.child_by_field_name("declarator")
    params = decl.child_by_field_name("parameters") if decl is not None else None
    for p in params.named_children if params is not None else []:
        d = p.child_by_field_name("declarator")
        if d is not None and _declared(d) == name:
            return True
    body = fn.child_by_field_name("body")
    for st in body.named_children if body is not None else []:
        if st.type == "declaration" and any(_declared(d) == name for d in st.children_by_field_name("declarator")):
            # a use before the declaration would be the global's: only accept when no write precedes it
            return not any(w.start_byte < st.start_byte for w, _k, _v in _writes_in(fn, name) if _k != "decl")
    return False


def _part_writes(fn: Node, name: str) -> list[Node]:
    """Writes of a part of `name` in `fn`: `name.x = v`, `name[i] += v`, `name->f++`."""
    pat = re.compile(r"\s*" + re.escape(name) + r"\s*(?:\.|->|\[)")
    out = []
    stack = [fn]
    while stack:
        n = stack.pop()
        target = n.child_by_field_name("left") if n.type == "assignment_expression" else (
            n.child_by_field_name("argument") if n.type == "update_expression" else None)
        if target is not None and pat.match(text(target)):
            out.append(n)
        stack.extend(n.named_children)
    return sorted(out, key=lambda n: n.start_byte)


def _returns_in(fn: Node) -> list[Node]:
    out = []
    stack = [fn]
    while stack:
        n = stack.pop()
        if n.type == "return_statement":
            out.append(n)
        if n.type == "lambda_expression":
            continue
        stack.extend(n.named_children)
    return sorted(out, key=lambda n: n.start_byte)
