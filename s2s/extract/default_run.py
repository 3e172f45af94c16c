"""Which run static values describe: one without arguments, or, for an application that exits unless given
arguments (`if (argc != 4) { usage(); return 1; }` in main) or reads them without a test of argc (`n =
std::stoi(argv[1]);`), the run line its authors wrote down (s2s.scan.run_line).

Command-line values of that run are read as C reads them: argv[i] is a number only when it is a plain decimal
(`10000`, `0.5`) that atoi, atof and strtol read alike; anything else (`1e3`, `0x10`, `010`, a file name) is not known.
"""
from __future__ import annotations

import re
from pathlib import Path

from tree_sitter import Node

from s2s.lang.cexpr import try_evaluate
from s2s.lang.parsing import text
from s2s.scan.run_line import default_run

from .hostcode import Program

_EXIT = re.compile(r"\breturn\b|\b(?:exit|abort|MPI_Abort|MPI_Finalize)\s*\(")
# functions that read a number from a string, and whether they give an integer
_PARSERS = {"atoi": True, "atol": True, "atoll": True, "strtol": True, "strtoll": True, "strtoul": True,
            "strtoull": True, "stoi": True, "stol": True, "stoll": True, "stoul": True, "stoull": True,
            "atof": False, "strtod": False, "strtof": False, "stod": False, "stof": False}


def _exit_without_arguments(fn: Node, program: Program) -> Node | None:
    """An `if` among main's own statements whose condition holds when argc is 1 and whose branch leaves main."""
    body = fn.child_by_field_name("body")
    for stmt in body.named_children if body is not None else []:
        cond = stmt.child_by_field_name("condition") if stmt.type == "if_statement" else None
        branch = stmt.child_by_field_name("consequence") if cond is not None else None
        if cond is None or branch is None or not re.search(r"\bargc\b", text(cond)):
            continue
        holds = try_evaluate(text(cond), lambda name: 1 if name == "argc" else None, lambda _t: None)
        if holds and _leaves(text(branch), program):
            return stmt
    return None


def _unguarded_argument(fn: Node) -> Node | None:
    """A read of argv[1], argv[2], ... in main that no test of argc guards (`n = std::stoi(argv[1]);` with no `if
    (argc > 1)` or `argc > 1 ? ... : ...` around it): a run without arguments reads past argv's end."""
    stack = [fn]
    reads: list[Node] = []
    while stack:
        n = stack.pop()
        stack.extend(n.named_children)
        if n.type == "subscript_expression":
            reads.append(n)
    for n in sorted(reads, key=lambda r: r.start_byte):
        if n.type != "subscript_expression" or not re.fullmatch(r"argv\s*\[\s*[1-9]\d*\s*\]", text(n)):
            continue
        cur = n.parent
        guarded = False
        while cur is not None and cur != fn:
            if cur.type in {"if_statement", "while_statement", "for_statement", "switch_statement",
                            "conditional_expression", "do_statement", "case_statement"} or (
                    cur.type == "binary_expression" and re.search(r"&&|\|\|", text(cur))):
                cond = cur.child_by_field_name("condition") or cur
                guarded = guarded or bool(re.search(r"\b(?:argc|getopt\w*)\b", text(cond)))
            cur = cur.parent
        if not guarded:
            return n
    return None


def _leaves(branch: str, program: Program) -> bool:
    """Whether a branch returns or exits, itself or through a function of the program it calls (`usage(argv[0]);`
    whose body calls exit)."""
    if _EXIT.search(branch):
        return True
    return any(re.search(r"\b(?:exit|abort)\s*\(", text(fn)) for name in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", branch))
               for _s, fn in program.definitions_of(name))


def settle_run(program: Program, launch_file: str, tree: Path) -> str:
    """Set program.args_required, run_args and run_from for the application whose kernel is launched in launch_file
    (its main in the same directory, else the nearest above); a note for the MEP, "" when the run has no arguments."""
    here = Path(launch_file).parent
    mains = [(s, f) for s, f in program.definitions_of("main") if here.is_relative_to(Path(s.rel).parent)]
    if not mains:
        return ""
    source, fn = max(mains, key=lambda m: len(Path(m[0].rel).parent.parts))
    stmt = _exit_without_arguments(fn, program) or _unguarded_argument(fn)
    if stmt is None:
        return ""
    program.args_required = f"{source.rel}:{stmt.start_point[0] + 1}"
    app_dir = (tree / source.rel).parent
    found = default_run(app_dir, tree)
    if found is None:
        return (f"the application needs its arguments ({program.args_required}) and no run line was found "
                "(a Makefile's run target, a *.sh script, a README line starting with ./): values from its arguments "
                "are FILL-IN")
    program.run_args, program.run_from = found.args, f"{found.where}: {found.text}"
    return (f"the application needs its arguments ({program.args_required}): values are those of the run line at "
            f"{program.run_from}")


def argv_value(program: Program, index: int) -> float | int | None:
    """argv[index] of the default run as a number, when it is a plain decimal; None otherwise."""
    args = program.run_args
    if args is None or not 1 <= index <= len(args):
        return None
    arg = args[index - 1]
    if re.fullmatch(r"-?(?:0|[1-9]\d*)", arg):
        return int(arg)
    if re.fullmatch(r"-?(?:0|[1-9]\d*)\.\d*", arg):
        return float(arg)
    return None


def parse_number(name: str, args: list[float | int]) -> float | int | None:
    """atoi(x), strtol(x, NULL, 10), std::stof(x), ... of a number already read from argv: that number, as an int
    for the integer parsers (atoi of 2.5 is 2); None for a function not listed or a base other than 10 or 0."""
    fn = name.split("::")[-1]
    if fn not in _PARSERS or not args:
        return None
    if fn.startswith("strto") and _PARSERS[fn] and (len(args) < 3 or args[2] not in (0, 10)):
        return None
    return int(args[0]) if _PARSERS[fn] else float(args[0])
