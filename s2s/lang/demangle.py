"""A small Itanium C++ ABI demangler for GPU kernel names, and name normalisation for profiles.

`demangle_name` returns the qualified function name with template arguments but
without the parameter list (``_ZN6linalg11matvec_rowsEPKfS1_Pfi`` ->
``linalg::matvec_rows``).  It covers what CUDA/HIP kernels use: nested and
anonymous namespaces, template arguments (types, integer/bool literals, packs),
substitutions and template parameters.  Anything it does not understand gives a
best-effort name or None; it never raises.

`normalize_profile_name` turns whatever a profiler prints (mangled, demangled
with return type and parameters, plain) into ``(qualified, template_args)``.
"""
from __future__ import annotations

import re

_BUILTIN = {
    "v": "void", "w": "wchar_t", "b": "bool", "c": "char", "a": "signed char",
    "h": "unsigned char", "s": "short", "t": "unsigned short", "i": "int",
    "j": "unsigned int", "l": "long", "m": "unsigned long", "x": "long long",
    "y": "unsigned long long", "n": "__int128", "o": "unsigned __int128",
    "f": "float", "d": "double", "e": "long double", "g": "__float128", "z": "...",
}
_BUILTIN_D = {
    "d": "decimal64", "e": "decimal128", "f": "decimal32", "h": "half",
    "i": "char32_t", "s": "char16_t", "u": "char8_t", "a": "auto",
    "c": "decltype(auto)", "n": "decltype(nullptr)",
}
_STD_SUBS = {
    "t": "std", "a": "std::allocator", "b": "std::basic_string", "s": "std::string",
    "i": "std::istream", "o": "std::ostream", "d": "std::iostream",
}
_OPERATORS = {
    "nw": "new", "na": "new[]", "dl": "delete", "da": "delete[]", "ps": "+", "ng": "-",
    "ad": "&", "de": "*", "co": "~", "pl": "+", "mi": "-", "ml": "*", "dv": "/",
    "rm": "%", "an": "&", "or": "|", "eo": "^", "aS": "=", "pL": "+=", "mI": "-=",
    "mL": "*=", "dV": "/=", "rM": "%=", "aN": "&=", "oR": "|=", "eO": "^=", "ls": "<<",
    "rs": ">>", "lS": "<<=", "rS": ">>=", "eq": "==", "ne": "!=", "lt": "<", "gt": ">",
    "le": "<=", "ge": ">=", "ss": "<=>", "nt": "!", "aa": "&&", "oo": "||", "pp": "++",
    "mm": "--", "cm": ",", "pm": "->*", "pt": "->", "cl": "()", "ix": "[]", "qu": "?",
}
_INT_SUFFIX = {
    "int": "", "unsigned int": "u", "long": "l", "unsigned long": "ul",
    "long long": "ll", "unsigned long long": "ull",
}
_FLOATS = ("float", "double", "long double")
_HOLE = "\x00"  # where the declarator goes in a function or array type
ANONYMOUS = "(anonymous namespace)"


class _Unsupported(Exception):
    """Raised inside the parser for input it does not handle."""


class _Parser:
    """Recursive-descent parser over the text after ``_Z``."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.pos = 0
        self.subs: list[str] = []
        self.tparams: list[str] = []
        self.partial = ""  # best-effort qualified name of the function seen so far
        self.method_quals = ""  # ``const`` of a member function, shown in local names

    # -- low level -------------------------------------------------------
    def peek(self, ahead: int = 0) -> str:
        i = self.pos + ahead
        return self.s[i] if i < len(self.s) else ""

    def expect(self, text: str) -> None:
        if not self.s.startswith(text, self.pos):
            raise _Unsupported(f"expected {text!r} at {self.pos}")
        self.pos += len(text)

    def number(self) -> int:
        negative = self.peek() == "n"
        if negative:
            self.pos += 1
        start = self.pos
        while self.peek().isdigit():
            self.pos += 1
        if start == self.pos:
            raise _Unsupported("expected a number")
        value = int(self.s[start:self.pos])
        return -value if negative else value

    def seq_index(self) -> int:
        """``_`` -> 0, ``<base-36 id>_`` -> id + 1 (substitutions and template params)."""
        start = self.pos
        while self.peek().isdigit() or self.peek().isupper():
            self.pos += 1
        ident = self.s[start:self.pos]
        self.expect("_")
        return int(ident, 36) + 1 if ident else 0

    # -- names -------------------------------------------------------------
    def function_name(self) -> str:
        """The <name> of an <encoding>; the parameter types after it are not needed."""
        if self.peek() in ("T", "G") and not self.peek(1).isdigit():
            raise _Unsupported("special name (vtable, guard variable, ...)")
        return self.name(top=True)

    def rest_is_parameters(self, name: str) -> bool:
        """Whether the text after the name is exactly its <bare-function-type> (or nothing: a variable)."""
        if not self.peek():
            return True
        last = name.rsplit("::", 1)[-1]
        if name.endswith(">") and not last.startswith(("~", "operator ")):
            self.type()  # the return type of a template function
        while self.peek():
            self.type()
        return True

    def name(self, top: bool = False) -> str:
        c = self.peek()
        if c == "N":
            return self.nested_name(top)
        if c == "Z":
            return self.local_name()
        if c == "S" and self.peek(1) == "t":
            self.pos += 2
            return self.maybe_template("std::" + self.unqualified(""), top)
        if c == "S":
            base = self.substitution()
            if self.peek() != "I":
                raise _Unsupported("bare substitution as a name")
            return self.with_args(base, top)
        return self.maybe_template(self.unqualified(""), top)

    def maybe_template(self, base: str, top: bool) -> str:
        if top:
            self.partial = base
        if self.peek() != "I":
            return base
        self.subs.append(base)
        return self.with_args(base, top)

    def nested_name(self, top: bool) -> str:
        self.expect("N")
        quals = {"r": " restrict", "V": " volatile", "K": " const"}
        method_quals = ""
        while self.peek() in quals and self.peek():
            method_quals = quals[self.peek()] + method_quals
            self.pos += 1
        if top:
            self.method_quals = method_quals
        if self.peek() in ("R", "O"):
            self.pos += 1
        cur, fresh = "", False
        while self.peek() != "E":
            if not self.peek():
                raise _Unsupported("unterminated nested name")
            if cur and not fresh:
                self.subs.append(cur)
            cur, fresh = self.prefix_component(cur, top)
            if top:
                self.partial = cur
        self.pos += 1
        return cur

    def prefix_component(self, cur: str, top: bool) -> tuple[str, bool]:
        """Extend `cur` by one component; the flag says it came from a substitution."""
        c = self.peek()
        if c == "S":
            return self.substitution(), True
        if c == "I":
            if not cur:
                raise _Unsupported("template arguments without a name")
            return self.with_args(cur, top), False
        if c == "T":
            return self.template_param(), False
        name = self.unqualified(cur)
        return (f"{cur}::{name}" if cur else name), False

    def local_name(self) -> str:
        self.expect("Z")
        outer = self.inner_encoding()
        if self.peek() == "s":
            self.pos += 1
            entity = "string literal"
        else:
            if self.peek() == "d":
                self.pos += 1
                if self.peek() != "_":
                    self.number()
                self.expect("_")
            entity = self.name()
        self.discriminator()
        return f"{outer}::{entity}"

    def inner_encoding(self) -> str:
        """A full <encoding> ending in ``E`` (local names, function literals): ``name(params)``."""
        saved = (self.tparams, self.partial)
        self.method_quals = ""
        name = self.name(top=True)
        method_quals = self.method_quals
        last = name.rsplit("::", 1)[-1]
        if name.endswith(">") and not last.startswith(("~", "operator ")):
            self.type()  # the return type of a template function
        params = self.types_until("E")
        self.pos += 1
        self.tparams, self.partial = saved
        return f"{name}({_param_list(params)}){method_quals}"

    def discriminator(self) -> None:
        if self.peek() != "_":
            return
        self.pos += 1
        if self.peek() == "_":
            self.pos += 1
            self.number()
            self.expect("_")
        elif self.peek().isdigit():
            self.pos += 1

    def unqualified(self, enclosing: str) -> str:
        c = self.peek()
        if c == "L" and self.peek(1).isdigit():  # internal linkage (GCC)
            self.pos += 1
            c = self.peek()
        if c.isdigit():
            name = self.source_name()
        elif c in ("C", "D") and self.peek(1) in "012345" and self.peek(1):
            self.pos += 2
            parts = split_qualified(enclosing)
            last = re.split(r"[<\[]", parts[-1], maxsplit=1)[0] if parts else ""
            name = last if c == "C" else "~" + last
        elif c == "U":
            name = self.unnamed_type()
        else:
            name = self.operator_name()
        while self.peek() == "B":
            self.pos += 1
            name += f"[abi:{self.source_name()}]"
        return name

    def source_name(self) -> str:
        length = self.number()
        ident = self.s[self.pos:self.pos + length]
        if length <= 0 or len(ident) != length:
            raise _Unsupported("bad source name length")
        self.pos += length
        return ANONYMOUS if ident.startswith("_GLOBAL__N") else ident

    def unnamed_type(self) -> str:
        self.expect("U")
        kind = self.peek()
        self.pos += 1
        if kind == "l":
            params = self.types_until("E")
            self.expect("E")
            index = self.closure_index()
            return f"{{lambda({_param_list(params)})#{index}}}"
        if kind == "t":
            return f"{{unnamed type#{self.closure_index()}}}"
        raise _Unsupported("unknown unnamed type")

    def closure_index(self) -> int:
        index = 1 if self.peek() == "_" else self.number() + 2
        self.expect("_")
        return index

    def operator_name(self) -> str:
        code = self.s[self.pos:self.pos + 2]
        if code == "cv":
            self.pos += 2
            return "operator " + _fill(self.type())
        if code == "li":
            self.pos += 2
            return 'operator"" ' + self.source_name()
        if code not in _OPERATORS:
            raise _Unsupported(f"unknown name start {code!r}")
        self.pos += 2
        symbol = _OPERATORS[code]
        return f"operator {symbol}" if symbol[0].isalpha() else f"operator{symbol}"

    def substitution(self) -> str:
        self.expect("S")
        c = self.peek()
        if c in _STD_SUBS:
            self.pos += 1
            return _STD_SUBS[c]
        index = self.seq_index()
        if index >= len(self.subs):
            raise _Unsupported("substitution out of range")
        return self.subs[index]

    def template_param(self) -> str:
        self.expect("T")
        index = self.seq_index()
        if index >= len(self.tparams):
            raise _Unsupported("template parameter out of range")
        return self.tparams[index]

    # -- template arguments ---------------------------------------------------
    def template_args_text(self, top: bool) -> str:
        args = self.template_args()
        if top:
            self.tparams = args
        return "<" + ", ".join(a for a in args if a) + ">"

    def with_args(self, base: str, top: bool) -> str:
        """``base<args>``; ``operator<< <T>`` keeps a space so the brackets stay readable."""
        args = self.template_args_text(top)
        return f"{base} {args}" if re.search(r"operator\W*[<>]$", base) else base + args

    def template_args(self) -> list[str]:
        self.expect("I")
        args: list[str] = []
        while self.peek() != "E":
            if not self.peek():
                raise _Unsupported("unterminated template arguments")
            args.append(self.template_arg())
        self.pos += 1
        return args

    def template_arg(self) -> str:
        c = self.peek()
        if c == "L":
            return self.expr_primary()
        if c == "J":
            self.pos += 1
            items: list[str] = []
            while self.peek() != "E":
                if not self.peek():
                    raise _Unsupported("unterminated pack")
                items.append(self.template_arg())
            self.pos += 1
            return ", ".join(i for i in items if i)
        if c == "X":
            raise _Unsupported("expression template argument")
        return _fill(self.type())

    def expr_primary(self) -> str:
        self.expect("L")
        if self.peek() == "_" and self.peek(1) == "Z":
            self.pos += 2
            return self.inner_encoding()
        kind = _fill(self.type())
        start = self.pos
        while self.peek() not in ("E", ""):
            self.pos += 1
        raw = self.s[start:self.pos]
        self.expect("E")
        return _literal(kind, raw)

    # -- types -------------------------------------------------------------
    def types_until(self, end: str) -> list[str]:
        out: list[str] = []
        while self.peek() != end:
            if not self.peek():
                raise _Unsupported("unterminated type list")
            out.append(_fill(self.type()))
        return out

    def type(self) -> str:
        c = self.peek()
        if c in _BUILTIN:
            self.pos += 1
            return _BUILTIN[c]
        if c == "D" and self.peek(1) in _BUILTIN_D and self.peek(1):
            self.pos += 2
            return _BUILTIN_D[self.s[self.pos - 1]]
        if c == "S" and self.peek(1) != "t":
            base = self.substitution()
            if self.peek() != "I":
                return base  # already in the table
            result = self.with_args(base, False)
        else:
            result = self.compound_type(c)
        self.subs.append(result)
        return result

    def compound_type(self, c: str) -> str:
        """Types that are candidates for substitution."""
        if c in ("r", "V", "K"):
            return self.qualified_type()
        if c in ("P", "R", "O"):
            self.pos += 1
            return _declarator(self.type(), {"P": "*", "R": "&", "O": "&&"}[c])
        if c == "F":
            return self.function_type()
        if c == "A":
            return self.array_type()
        if c == "M":
            self.pos += 1
            cls = _fill(self.type())
            return _declarator(self.type(), f"{cls}::*")
        if c == "T":
            param = self.template_param()
            if self.peek() == "I":
                self.subs.append(param)
                return self.with_args(param, False)
            return param
        if c == "S":  # St: a name in std::
            self.pos += 2
            return self.maybe_template("std::" + self.unqualified(""), False)
        if c == "D":
            return self.d_type()
        if c == "u":
            self.pos += 1
            return self.source_name()
        if c == "U":
            self.pos += 1
            qual = self.source_name()
            return f"{_fill(self.type())} {qual}"
        if c == "N" or c == "Z" or c.isdigit():
            return self.name()
        raise _Unsupported(f"unknown type code {c!r}")

    def qualified_type(self) -> str:
        quals: list[str] = []
        names = {"r": "restrict", "V": "volatile", "K": "const"}
        while self.peek() in names and self.peek():
            quals.append(names[self.peek()])
            self.pos += 1
        inner = self.type()
        return f"{inner} {' '.join(reversed(quals))}"

    def d_type(self) -> str:
        code = self.peek(1)
        if code == "p":
            self.pos += 2
            return _fill(self.type()) + "..."
        if code == "v":
            self.pos += 2
            count = self.number()
            self.expect("_")
            return f"{_fill(self.type())} __vector({count})"
        if code == "F":
            self.pos += 2
            bits = self.number()
            self.expect("_")
            return f"_Float{bits}"
        raise _Unsupported(f"unsupported type D{code}")

    def function_type(self) -> str:
        self.expect("F")
        if self.peek() == "Y":
            self.pos += 1
        ret = _fill(self.type())
        params: list[str] = []
        while self.peek() != "E":
            if self.peek() in ("R", "O") and self.peek(1) == "E":
                self.pos += 1
                continue
            if not self.peek():
                raise _Unsupported("unterminated function type")
            params.append(_fill(self.type()))
        self.pos += 1
        return f"{ret} {_HOLE}({_param_list(params)})"

    def array_type(self) -> str:
        self.expect("A")
        size = "" if self.peek() == "_" else str(self.number())
        self.expect("_")
        inner = self.type()
        if _HOLE in inner:
            return inner.replace(_HOLE, f"{_HOLE} [{size}]", 1).replace("] [", "][")
        return f"{inner} {_HOLE} [{size}]"


def _fill(text: str) -> str:
    """Close a declarator hole: ``void \\0(int)`` -> ``void (int)``."""
    return re.sub(r"\s+", " ", text.replace(_HOLE, "")).strip().replace(" )", ")")


def _declarator(inner: str, symbol: str) -> str:
    """Apply a pointer/reference/member-pointer declarator to `inner`."""
    if _HOLE not in inner:
        return inner + symbol
    at = inner.index(_HOLE)
    if at > 0 and inner[at - 1] in "*&":
        return inner[:at] + symbol + inner[at:]
    return inner.replace(_HOLE, f"({symbol}{_HOLE})", 1)


def _param_list(params: list[str]) -> str:
    return "" if params == ["void"] else ", ".join(params)


def _literal(kind: str, raw: str) -> str:
    """Format a template argument literal the way c++filt does."""
    value = "-" + raw[1:] if raw.startswith("n") else raw
    if kind == "bool" and value in ("0", "1"):
        return "true" if value == "1" else "false"
    if kind == "decltype(nullptr)" and not value:
        return "nullptr"
    if kind in _INT_SUFFIX:
        return value + _INT_SUFFIX[kind]
    if kind in _FLOATS:
        return f"({kind})[{value}]"
    return f"({kind}){value}"


def demangle_name(s: str) -> str | None:
    """Qualified name with template arguments, without parameters; None if not a mangled name.

    ``_Z7axpby_tIfLi256EEvT_PKS0_S0_PS0_i`` -> ``axpby_t<float, 256>``.  Clone and
    vendor suffixes (``.kd``, ``.cold.1``, ``$local``) are ignored.  Input the parser
    does not understand gives the part of the name read so far, or None.
    """
    text = re.split(r"[.$@]", s.strip(), maxsplit=1)[0]
    if not text.startswith("_Z") or len(text) < 3:
        return None
    name, complete = _demangle(text)
    if not complete:
        return _repair_length(text) or name
    return name


_ERRORS = (_Unsupported, IndexError, ValueError, KeyError, RecursionError)


def _demangle(text: str) -> tuple[str | None, bool]:
    """The name, and whether everything after it parsed as the parameter types."""
    parser = _Parser(text[2:])
    try:
        name = parser.function_name()
    except _ERRORS:
        return _fill(parser.partial) or None, False
    try:
        complete = parser.rest_is_parameters(name)
    except _ERRORS:
        complete = False
    return _fill(name) or None, complete


def _repair_length(text: str) -> str | None:
    """A hand-written ``_Z13matmul_naivePKf...`` (length off by one or two): the reading that parses fully."""
    match = re.match(r"_Z(L?)(\d+)", text)
    if not match:
        return None
    length = int(match.group(2))
    for delta in (-1, 1, -2, 2):
        if length + delta > 0:
            name, complete = _demangle(f"_Z{match.group(1)}{length + delta}{text[match.end():]}")
            if complete:
                return name
    return None


# -- normalisation of names printed by profilers ---------------------------------

_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
_OPERATOR_TOKEN = re.compile(
    r"operator\s*(\(\)|\[\]|<=>|<<=|>>=|<<|>>|->\*|->|<=|>=|<|>|new\[\]|delete\[\]|new|delete)"
)
_ANONYMOUS_SPELLINGS = re.compile(r"`anonymous namespace'|\{anonymous\}|<unnamed>|\(anonymous\)")
_CAST_SUFFIX = {
    "int": "", "unsigned int": "u", "unsigned": "u", "long": "l", "unsigned long": "ul",
    "long long": "ll", "unsigned long long": "ull",
}
_CAST = re.compile(r"\((bool|int|unsigned int|unsigned|long|unsigned long|long long|unsigned long long)\)\s*(-?\d+)")
_CLONE = re.compile(r"(\s*\[clone [^\]]*\])+$|\.kd$")
_TRAILING_QUALS = re.compile(r"(\s*(const|volatile|&&|&|noexcept))+$")


def _depths(text: str) -> list[int]:
    """Bracket nesting depth of each character; -1 marks the symbols of an ``operator`` token."""
    out: list[int] = []
    stack: list[str] = []
    i = 0
    while i < len(text):
        token = _operator_at(text, i)
        if token:
            out.extend([-1] * token)
            i += token
            continue
        ch = text[i]
        if ch in _OPEN:
            out.append(len(stack))
            stack.append(_OPEN[ch])
        elif ch in stack and not (ch == ">" and text[i - 1:i] == "-"):
            while stack[-1] != ch:  # drop an unbalanced '<' inside parentheses
                stack.pop()
            stack.pop()
            out.append(len(stack))
        else:
            out.append(len(stack))
        i += 1
    return out


def _operator_at(text: str, i: int) -> int:
    """Length of an ``operator<symbol>`` token starting at `i`, else 0."""
    if not text.startswith("operator", i) or (i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")):
        return 0
    match = _OPERATOR_TOKEN.match(text, i)
    return match.end() - i if match else 0


def _strip_params(text: str) -> str:
    """Drop a trailing parameter list (and ``const``/``&`` qualifiers after it)."""
    unqualified = _TRAILING_QUALS.sub("", text)
    if not unqualified.endswith(")"):
        return text
    depth = 0
    for j in range(len(unqualified) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(unqualified[j], 0)
        if depth == 0:
            head = unqualified[:j].rstrip()
            if not head or head.endswith("operator"):
                return text
            return head
    return text


def _strip_return_type(text: str) -> str:
    """Keep what follows the last top-level space: ``void ns::k<int>`` -> ``ns::k<int>``."""
    depths = _depths(text)
    limit = len(text)
    for match in re.finditer(r"(?<![\w])operator\b", text):
        if depths[match.start()] <= 0:
            limit = match.start()  # spaces inside ``operator unsigned int`` do not count
    spaces = [i for i, ch in enumerate(text[:limit]) if ch == " " and depths[i] == 0]
    return text[spaces[-1] + 1:].lstrip("*&") if spaces else text


def _split_template_args(text: str) -> tuple[str, str]:
    """Remove every top-level ``<...>``; return the name and the last component's arguments."""
    depths = _depths(text)
    pieces: list[str] = []
    start, i, args, args_end = 0, 0, "", -1
    while i < len(text):
        if text[i] == "<" and depths[i] == 0:
            close = next((k for k in range(i + 1, len(text)) if text[k] == ">" and depths[k] == 0), -1)
            if close < 0:
                break
            pieces.append(text[start:i])
            args, args_end = text[i + 1:close], close
            start = i = close + 1
            continue
        i += 1
    pieces.append(text[start:])
    if text[args_end + 1:].strip():
        args = ""
    return "".join(pieces).strip(), args


def _normalize_args(args: str) -> str:
    text = re.sub(r"\s+", " ", args).strip()
    text = _CAST.sub(_uncast, text)
    return re.sub(r"\b(\d+)(ULL|LL|UL|U|L)\b", lambda m: m.group(1) + m.group(2).lower(), text)


def _uncast(match: re.Match[str]) -> str:
    kind, value = match.group(1), match.group(2)
    if kind == "bool":
        return {"0": "false", "1": "true"}.get(value, match.group(0))
    return value + _CAST_SUFFIX[kind]


def normalize_profile_name(name: str) -> tuple[str, str]:
    """``(qualified name without template args, template args text)`` of a profiler's kernel name.

    Accepts mangled names, demangled names with return type and parameters
    (``void linalg::matvec_rows<float>(const float*, float*, int)``), names with
    template arguments and plain names.  Template arguments are returned without
    the angle brackets (``"float, 256"``), empty when there are none.
    """
    text = _CLONE.sub("", name.strip())
    if text.startswith("_Z"):
        text = demangle_name(text) or re.split(r"[.$@]", text, maxsplit=1)[0]
    text = _ANONYMOUS_SPELLINGS.sub(ANONYMOUS, text)
    text = _strip_return_type(_strip_params(text.strip()))
    qualified, args = _split_template_args(text)
    return re.sub(r"\s+", " ", qualified), _normalize_args(args)


def split_qualified(qualified: str) -> tuple[str, ...]:
    """Scope components of a qualified name: ``a::b<c::d>::k`` -> ``("a", "b<c::d>", "k")``."""
    depths = _depths(qualified)
    parts: list[str] = []
    start = 0
    for i in range(len(qualified) - 1):
        if qualified[i:i + 2] == "::" and depths[i] == 0 and depths[i + 1] == 0 and i >= start:
            parts.append(qualified[start:i])
            start = i + 2
    parts.append(qualified[start:])
    return tuple(p for p in parts if p)


def base_name(qualified: str) -> str:
    """The unqualified name without template arguments: ``linalg::matvec_rows`` -> ``matvec_rows``."""
    name, _ = normalize_profile_name(qualified)
    parts = split_qualified(name)
    return parts[-1] if parts else name
