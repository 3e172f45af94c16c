"""A kernel's own shared histogram as bin-major copies, one per thread modulo `copies` (shared-histogram{copies=N}).

A warp adding into a 64-bin histogram of random bytes puts several lanes on one bank (bin % 32) and some on one
address: the adds serialize. With 32 copies laid out `bin * 32 + lane`, each lane owns a bank.
"""
from __future__ import annotations

import re

from s2s.lang.edits import Edit, Refused, Rewrite
from s2s.lang.kernel_facts import KernelFacts

from ..common.tree import body_node, fresh, indent_of, node_at, statements, text


def spread(source: bytes, facts: KernelFacts, copies: int, types: set[str]) -> Rewrite | Refused:
    """A kernel's own shared histogram `__shared__ T A[SIZE]` as `copies` sub-histograms, bin-major: an atomicAdd into
    A[E] goes to the thread's copy, a read of A[E] sums the copies, a store `A[E] = V;` puts V in the first copy and 0
    in the others. The sum of the copies is then the original's A[E] at every barrier, whatever the kernel does."""
    body = body_node(source, facts)
    for declared in facts.shared:
        found = re.search(r"(\w+)\s*\[[^\[\]]*\]\s*;?\s*$", declared)
        if found is None:
            continue
        name = found.group(1)
        decl = next((s for s in statements(body) if s.type == "declaration"
                     and re.fullmatch(rf"__shared__\s+([\w\s]+?)\s+{name}\s*\[([^\[\]]+)\]\s*;", text(source, s))), None)
        m = re.fullmatch(rf"__shared__\s+([\w\s]+?)\s+{name}\s*\[([^\[\]]+)\]\s*;", text(source, decl)) if decl else None
        if decl is None or m is None or " ".join(m.group(1).split()) not in types:
            continue
        ty, size = " ".join(m.group(1).split()), m.group(2).strip()
        uses = [u for u in facts.subscripts if u.array == name]
        body_text = source[facts.body_start:facts.body_end].decode("utf-8", "replace")
        if len(re.findall(rf"(?<![\w.]){name}\b", body_text)) != len(uses) + 1:
            return Refused(f"`{name}` is used other than as `{name}[index]`")
        n = {w: fresh(facts, source, f"{name}_{w}") for w in ("cp", "sum", "at", "v", "c")}
        edits = [Edit(decl.start_byte, decl.end_byte,
                      f"__shared__ {ty} {name}[({size}) * {copies}];\n{indent_of(source, decl.start_byte)}"
                      f"const int {n['cp']} = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) & {copies - 1};\n"
                      f"{indent_of(source, decl.start_byte)}auto {n['sum']} = [&](long long {n['at']}) {{ {ty} {n['v']} = 0; "
                      f"for (int {n['c']} = 0; {n['c']} < {copies}; ++{n['c']}) {n['v']} += {name}[{n['at']} * {copies} + "
                      f"(({n['c']} + {n['at']}) & {copies - 1})]; return {n['v']}; }};")]
        for u in uses:
            node = node_at(source, facts, u.start, u.end, "subscript_expression")
            parent = node.parent if node is not None else None
            if node is None or parent is None or re.search(rf"\b{name}\b", u.index):
                return Refused(f"`{name}[{u.index}]` is not a plain subscript")
            call = parent.parent.parent if parent.parent is not None else None
            if parent.type == "pointer_expression" and call is not None and call.type == "call_expression" \
                    and text(source, call.child_by_field_name("function")) == "atomicAdd" \
                    and parent.parent.named_children[0] == parent:  # type: ignore[union-attr]
                edits.append(Edit(u.start, u.end, f"{name}[({u.index}) * {copies} + {n['cp']}]"))
            elif parent.type == "assignment_expression" and parent.child_by_field_name("left") == node:
                stmt = parent.parent
                if text(source, parent.child_by_field_name("operator")) != "=" or stmt is None or stmt.type != "expression_statement":
                    return Refused(f"`{text(source, parent)}`: only `{name}[i] = v;` stores and atomicAdd updates spread")
                value = text(source, parent.child_by_field_name("right"))
                if re.search(rf"\b{name}\b", value):
                    return Refused(f"`{text(source, parent)}` reads {name} while storing it")
                edits.append(Edit(stmt.start_byte, stmt.end_byte,
                                  f"{{ const long long {n['at']} = ({u.index}); const {ty} {n['v']} = ({value}); "
                                  f"for (int {n['c']} = 0; {n['c']} < {copies}; ++{n['c']}) "
                                  f"{name}[{n['at']} * {copies} + {n['c']}] = {n['c']} == 0 ? {n['v']} : ({ty})0; }}"))
            elif u.write or parent.type in {"pointer_expression", "update_expression"}:
                return Refused(f"`{text(source, parent)}`: only `{name}[i] = v;` stores and atomicAdd updates spread")
            else:
                edits.append(Edit(u.start, u.end, f"{n['sum']}({u.index})"))
        return Rewrite(tuple(edits), None, f"{copies} copies of the shared histogram {name}")
    return Refused("no `__shared__ T name[SIZE];` of int, unsigned, float or double at the top of the body")
