"""C-style preprocessor for P4-16 sources.

Why our own: p4c runs the C preprocessor before parsing; the builtin target
must accept the same sources without a C toolchain.  The output is one text
plus a line map, so that every later error (syntax, type) reports the
ORIGINAL file:line:col and not a position in the expanded text.

Supported: `#include <...>` / `"..."` (relative to the including file, then
the -I directories, then the package's own include directory), object-like
and function-like `#define` (with `#` stringification and `##` pasting),
`#undef`, `#if/#ifdef/#ifndef/#elif/#else/#endif` with integer expressions
and `defined`, `#error`, `#warning`, `#line` (ignored), `#pragma` (ignored),
line continuations and comments (not inside string literals, which may
span lines).  Include guards work because defines are
global; include cycles are detected by depth of the include stack.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from testbed.p4model.errors import P4Error, P4Unsupported
from testbed.p4model.frontend.ir import Loc

PACKAGE_INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include"
# Architecture files of targets other than v1model: including one is a
# clear "unsupported", not a missing file.
OTHER_ARCHITECTURES = {"psa.p4", "pna.p4", "tna.p4", "t2na.p4", "ebpf_model.p4", "ubpf_model.p4",
                       "xdp_model.p4", "dpdk/psa.p4", "dpdk/pna.p4", "v1model_bfrt.p4"}
MAX_INCLUDE_DEPTH = 64
MAX_EXPANSION_DEPTH = 200

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Tokens that matter for macro expansion: strings/chars (never expanded),
# identifiers, numbers (so that 8w0xFF is not split), anything else.
_PP_TOKEN = re.compile(
    r'"(?:\\.|[^"\\\n])*"?|\'(?:\\.|[^\'\\\n])*\'?|[A-Za-z_][A-Za-z0-9_]*|[0-9][A-Za-z0-9_]*|##|\s+|.',
    re.S)


@dataclass
class Macro:
    name: str
    body: str
    params: list[str] | None = None   # None: object-like
    variadic: bool = False


@dataclass
class Source:
    """The preprocessed program: `text` and, per output line (0-based), the
    (file, line) it came from."""

    text: str
    origins: list[tuple[str, int]]
    files: list[str] = field(default_factory=list)

    def loc(self, line: int, col: int) -> Loc:
        """Original location of 1-based (line, col) in `text`."""
        if 1 <= line <= len(self.origins):
            f, l = self.origins[line - 1]
            return Loc(f, l, col)
        if self.origins:
            f, l = self.origins[-1]
            return Loc(f, l, col)
        return Loc("<input>", line, col)


def _strip_comments(text: str, fname: str) -> str:
    """Replace comments by spaces, keeping newlines (so line numbers stay)."""
    out = []
    i, n = 0, len(text)
    line = 1
    while i < n:
        c = text[i]
        if c == '"':
            # a string literal may span lines (p4c's lexer reads it so, and
            # its cpp keeps comments): what looks like a comment inside is text
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                # a lone quote (as cpp reads one): the lexer reports it
                out.append(c)
                i += 1
                continue
            line += text.count("\n", i, j)
            out.append(text[i:j + 1])
            i = j + 1
            continue
        if c == "/" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "/":
                j = text.find("\n", i)
                if j < 0:
                    j = n
                # a `\` at the end of a // comment continues it (as in C)
                while j < n and j > 0 and text[j - 1] == "\\":
                    k = text.find("\n", j + 1)
                    out.append("\n")
                    j = k if k >= 0 else n
                out.append(" ")
                i = j
                continue
            if nxt == "*":
                j = text.find("*/", i + 2)
                if j < 0:
                    raise P4Error(Loc(fname, line, 1), "unterminated comment")
                chunk = text[i:j + 2]
                out.append(" " + "\n" * chunk.count("\n"))
                line += chunk.count("\n")
                i = j + 2
                continue
        if c == "\n":
            line += 1
        out.append(c)
        i += 1
    return "".join(out)


class _CondEval:
    """Evaluates `#if` expressions (C integer semantics, Python ints)."""

    _TOK = re.compile(r"\s*(0[xX][0-9a-fA-F]+|[0-9]+|[A-Za-z_]\w*|&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%()!~<>&|^?:])[uUlL]*")

    def __init__(self, text: str, loc: Loc):
        self.loc = loc
        self.toks = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = self._TOK.match(text, pos)
            if not m:
                raise P4Error(loc, f"invalid #if expression: {text!r}")
            self.toks.append(m.group(1))
            pos = m.end()
            while pos < len(text) and text[pos].isspace():
                pos += 1
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, expected=None):
        t = self.peek()
        if t is None or (expected is not None and t != expected):
            raise P4Error(self.loc, f"invalid #if expression: expected {expected or 'operand'}")
        self.i += 1
        return t

    def evaluate(self) -> int:
        v = self.ternary()
        if self.peek() is not None:
            raise P4Error(self.loc, f"invalid #if expression near {self.peek()!r}")
        return v

    def ternary(self):
        c = self.binary(0)
        if self.peek() == "?":
            self.take()
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            return a if c else b
        return c

    _LEVELS = [["||"], ["&&"], ["|"], ["^"], ["&"], ["==", "!="], ["<", ">", "<=", ">="],
               ["<<", ">>"], ["+", "-"], ["*", "/", "%"]]

    def binary(self, level):
        if level == len(self._LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._LEVELS[level]:
            op = self.take()
            right = self.binary(level + 1)
            if op in ("/", "%") and right == 0:
                raise P4Error(self.loc, "division by zero in #if")
            left = {
                "||": lambda a, b: int(bool(a) or bool(b)), "&&": lambda a, b: int(bool(a) and bool(b)),
                "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "&": lambda a, b: a & b,
                "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
                "<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b),
                "<=": lambda a, b: int(a <= b), ">=": lambda a, b: int(a >= b),
                "<<": lambda a, b: a << min(b, 4096), ">>": lambda a, b: a >> b,
                "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
                "/": lambda a, b: int(a / b), "%": lambda a, b: a - int(a / b) * b,
            }[op](left, right)
        return left

    def unary(self):
        t = self.take()
        if t == "!":
            return int(not self.unary())
        if t == "~":
            return ~self.unary()
        if t == "-":
            return -self.unary()
        if t == "+":
            return self.unary()
        if t == "(":
            v = self.ternary()
            self.take(")")
            return v
        if t[0].isdigit():
            return int(t, 0) if not (len(t) > 1 and t[0] == "0" and t[1].isdigit()) else int(t, 8)
        if _IDENT.fullmatch(t):
            return 0   # identifiers left after macro expansion are 0, as in C
        raise P4Error(self.loc, f"invalid #if expression near {t!r}")


class Preprocessor:
    def __init__(self, include_dirs=(), defines: dict[str, str] | None = None):
        self.include_dirs = [Path(d) for d in include_dirs]
        self.macros: dict[str, Macro] = {}
        for name, value in (defines or {}).items():
            self.macros[name] = Macro(name, "1" if value is None else str(value))
        self.out_lines: list[str] = []
        self.origins: list[tuple[str, int]] = []
        self.files: list[str] = []
        self.stack: list[str] = []

    # ---------------------------------------------------------------- files

    def run(self, path) -> Source:
        path = Path(path)
        if not path.is_file():
            raise P4Error(None, f"{path}: no such file")
        self._process_file(path, None)
        return Source("\n".join(self.out_lines) + "\n", self.origins, self.files)

    def _read(self, path: Path, loc: Loc | None) -> str:
        try:
            data = path.read_bytes()
        except OSError as e:
            raise P4Error(loc, f"cannot read {path}: {e.strerror}") from None
        return data.decode("utf-8", errors="replace")

    def _process_file(self, path: Path, loc: Loc | None) -> None:
        key = str(path.resolve())
        if key in self.stack:
            raise P4Error(loc, f"include cycle: {path} includes itself")
        if len(self.stack) >= MAX_INCLUDE_DEPTH:
            raise P4Error(loc, "#include nested too deeply")
        fname = str(path)
        if fname not in self.files:
            self.files.append(fname)
        text = _strip_comments(self._read(path, loc).replace("\r\n", "\n").replace("\r", "\n"), fname)
        self.stack.append(key)
        try:
            self._process_text(text, fname, path.parent)
        finally:
            self.stack.pop()

    def _find_include(self, name: str, angled: bool, here: Path, loc: Loc) -> Path:
        candidates = []
        if not angled:
            candidates.append(here / name)
        candidates.extend(d / name for d in self.include_dirs)
        candidates.append(PACKAGE_INCLUDE_DIR / name)
        if angled:
            candidates.append(here / name)
        for c in candidates:
            if c.is_file():
                return c
        if angled and name in OTHER_ARCHITECTURES:
            raise P4Unsupported(loc, f"architecture {name} (only v1model.p4)")
        raise P4Error(loc, f"#include file not found: {name}")

    # ---------------------------------------------------------------- lines

    def _process_text(self, text: str, fname: str, here: Path) -> None:
        raw = text.split("\n")
        # (active, seen_true_branch, in_else) per open conditional
        conds: list[list] = []
        i = 0
        pending: list[tuple[str, int]] = []   # logical text lines awaiting a complete macro call
        while i < len(raw):
            lineno = i + 1
            line = raw[i]
            i += 1
            while line.endswith("\\") and i <= len(raw):
                line = line[:-1] + (raw[i] if i < len(raw) else "")
                i += 1
            blank_extra = (i - lineno) - 1     # lines swallowed by continuations
            stripped = line.lstrip()
            active = all(c[0] for c in conds)
            loc = Loc(fname, lineno, len(line) - len(stripped) + 1)
            if stripped.startswith("#"):
                self._flush_pending(pending, fname)
                self._directive(stripped[1:].strip(), loc, conds, active, here)
                self._emit("", fname, lineno)
            elif active:
                self._text_line(line, fname, lineno, pending)
            else:
                self._emit("", fname, lineno)
            for k in range(blank_extra):
                self._emit("", fname, lineno + 1 + k)
        self._flush_pending(pending, fname)
        if conds:
            raise P4Error(Loc(fname, len(raw), 1), "unterminated #if")

    def _emit(self, text: str, fname: str, lineno: int) -> None:
        self.out_lines.append(text)
        self.origins.append((fname, lineno))

    def _text_line(self, line: str, fname: str, lineno: int, pending: list) -> None:
        """Expand macros; a function-like macro call whose arguments continue
        on later lines is joined with them first (reported at its first line)."""
        pending.append((line, lineno))
        joined = " ".join(l for l, _ in pending)
        if self._unbalanced_call(joined) and len(pending) < 200:
            return
        first = pending[0][1]
        n = len(pending)
        pending.clear()
        loc = Loc(fname, first, 1)
        self._emit(self.expand(joined, loc), fname, first)
        for k in range(1, n):
            self._emit("", fname, first + k)

    def _flush_pending(self, pending: list, fname: str) -> None:
        if pending:
            first = pending[0][1]
            joined = " ".join(l for l, _ in pending)
            n = len(pending)
            pending.clear()
            self._emit(self.expand(joined, Loc(fname, first, 1)), fname, first)
            for k in range(1, n):
                self._emit("", fname, first + k)

    def _unbalanced_call(self, text: str) -> bool:
        """True when `text` ends inside the argument list of a function-like macro."""
        toks = [m.group(0) for m in _PP_TOKEN.finditer(text)]
        depth = 0
        in_call = False
        j = 0
        while j < len(toks):
            t = toks[j]
            if not in_call:
                m = self.macros.get(t)
                if m is not None and m.params is not None:
                    k = j + 1
                    while k < len(toks) and toks[k].isspace():
                        k += 1
                    if k == len(toks):
                        return False
                    if toks[k] == "(":
                        in_call, depth, j = True, 0, k
                        continue
            else:
                if t == "(":
                    depth += 1
                elif t == ")":
                    depth -= 1
                    if depth == 0:
                        in_call = False
            j += 1
        return in_call

    # ----------------------------------------------------------- directives

    def _directive(self, d: str, loc: Loc, conds: list, active: bool, here: Path) -> None:
        m = _IDENT.match(d)
        name = m.group(0) if m else ""
        rest = d[m.end():].strip() if m else d
        if name in ("if", "ifdef", "ifndef"):
            if not active:
                conds.append([False, True, False])
                return
            if name == "if":
                value = self._eval(rest, loc)
            else:
                ident = _IDENT.match(rest)
                if not ident:
                    raise P4Error(loc, f"#{name} needs a macro name")
                value = (ident.group(0) in self.macros) == (name == "ifdef")
            conds.append([bool(value), bool(value), False])
            return
        if name == "elif":
            if not conds or conds[-1][2]:
                raise P4Error(loc, "#elif without #if")
            c = conds[-1]
            outer = all(x[0] for x in conds[:-1])
            if c[1] or not outer:
                c[0] = False
            else:
                c[0] = bool(self._eval(rest, loc))
                c[1] = c[0]
            return
        if name == "else":
            if not conds or conds[-1][2]:
                raise P4Error(loc, "#else without #if")
            c = conds[-1]
            c[0] = not c[1] and all(x[0] for x in conds[:-1])
            c[1] = True
            c[2] = True
            return
        if name == "endif":
            if not conds:
                raise P4Error(loc, "#endif without #if")
            conds.pop()
            return
        if not active:
            return
        if name == "define":
            self._define(rest, loc)
        elif name == "undef":
            ident = _IDENT.match(rest)
            if not ident:
                raise P4Error(loc, "#undef needs a macro name")
            self.macros.pop(ident.group(0), None)
        elif name == "include":
            self._include(rest, loc, here)
        elif name == "error":
            raise P4Error(loc, f"#error {rest}".rstrip())
        elif name in ("warning", "pragma", "line", "ident", ""):
            return
        elif d and d[0].isdigit():
            return    # `# 12 "file"` line markers from a previous cpp run
        else:
            raise P4Error(loc, f"unknown preprocessor directive #{name}")

    def _include(self, rest: str, loc: Loc, here: Path) -> None:
        if not (rest.startswith("<") or rest.startswith('"')):
            rest = self.expand(rest, loc).strip()
        m = re.match(r'<([^>]+)>|"([^"]+)"', rest)
        if not m:
            raise P4Error(loc, f"malformed #include {rest}")
        target = self._find_include(m.group(1) or m.group(2), m.group(1) is not None, here, loc)
        self._process_file(target, loc)

    def _define(self, rest: str, loc: Loc) -> None:
        m = _IDENT.match(rest)
        if not m:
            raise P4Error(loc, "#define needs a macro name")
        name = m.group(0)
        after = rest[m.end():]
        if after.startswith("("):
            close = after.find(")")
            if close < 0:
                raise P4Error(loc, f"unterminated parameter list in #define {name}")
            params = [p.strip() for p in after[1:close].split(",") if p.strip()]
            variadic = False
            if params and params[-1] == "...":
                params[-1] = "__VA_ARGS__"
                variadic = True
            for p in params:
                if not _IDENT.fullmatch(p):
                    raise P4Error(loc, f"invalid macro parameter {p!r} in #define {name}")
            self.macros[name] = Macro(name, after[close + 1:].strip(), params, variadic)
        else:
            self.macros[name] = Macro(name, after.strip())

    def _eval(self, expr: str, loc: Loc) -> int:
        # replace defined(X) / defined X before expansion
        def repl(m):
            return "1" if (m.group(1) or m.group(2)) in self.macros else "0"
        expr = re.sub(r"\bdefined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))", repl, expr)
        expanded = self.expand(expr, loc)
        return _CondEval(expanded, loc).evaluate()

    # ------------------------------------------------------------ expansion

    def expand(self, text: str, loc: Loc, hidden: frozenset = frozenset(), depth: int = 0) -> str:
        if depth > MAX_EXPANSION_DEPTH:
            raise P4Error(loc, "macro expansion too deep")
        if not self.macros or not any(m.group(0) in self.macros for m in _IDENT.finditer(text)):
            return text
        toks = [m.group(0) for m in _PP_TOKEN.finditer(text)]
        out = []
        j = 0
        while j < len(toks):
            t = toks[j]
            macro = self.macros.get(t)
            if macro is None or t in hidden:
                out.append(t)
                j += 1
                continue
            if macro.params is None:
                out.append(self.expand(macro.body, loc, hidden | {t}, depth + 1))
                j += 1
                continue
            k = j + 1
            while k < len(toks) and toks[k].isspace():
                k += 1
            if k >= len(toks) or toks[k] != "(":
                out.append(t)
                j += 1
                continue
            args, j = self._collect_args(toks, k, loc, t)
            out.append(self.expand(self._substitute(macro, args, loc, hidden, depth),
                                   loc, hidden | {t}, depth + 1))
        return "".join(out)

    def _collect_args(self, toks, k, loc, name):
        depth = 0
        args, cur = [], []
        j = k
        while j < len(toks):
            t = toks[j]
            if t == "(":
                depth += 1
                if depth > 1:
                    cur.append(t)
            elif t == ")":
                depth -= 1
                if depth == 0:
                    args.append("".join(cur).strip())
                    return args, j + 1
                cur.append(t)
            elif t == "," and depth == 1:
                args.append("".join(cur).strip())
                cur = []
            else:
                cur.append(t)
            j += 1
        raise P4Error(loc, f"unterminated call of macro {name}")

    def _substitute(self, macro: Macro, args: list[str], loc: Loc, hidden, depth) -> str:
        params = macro.params or []
        if args == [""] and not params:
            args = []
        if macro.variadic:
            fixed = len(params) - 1
            if len(args) < fixed:
                raise P4Error(loc, f"macro {macro.name} expects at least {fixed} arguments, got {len(args)}")
            args = args[:fixed] + [", ".join(args[fixed:])]
        elif len(args) != len(params):
            raise P4Error(loc, f"macro {macro.name} expects {len(params)} arguments, got {len(args)}")
        binding = dict(zip(params, args))
        body = [m.group(0) for m in _PP_TOKEN.finditer(macro.body)]
        out = []
        j = 0
        while j < len(body):
            t = body[j]
            if t == "#" and j + 1 < len(body):
                k = j + 1
                while k < len(body) and body[k].isspace():
                    k += 1
                if k < len(body) and body[k] in binding:
                    s = binding[body[k]].replace("\\", "\\\\").replace('"', '\\"')
                    out.append(f'"{s}"')
                    j = k + 1
                    continue
            if t == "##":
                while out and out[-1].isspace():
                    out.pop()
                j += 1
                while j < len(body) and body[j].isspace():
                    j += 1
                if j < len(body):
                    nxt = body[j]
                    out.append(binding.get(nxt, nxt))
                    j += 1
                continue
            if t in binding:
                # an argument next to ## is pasted unexpanded; others are expanded first
                k = j + 1
                while k < len(body) and body[k].isspace():
                    k += 1
                if k < len(body) and body[k] == "##":
                    out.append(binding[t])
                else:
                    out.append(self.expand(binding[t], loc, hidden, depth + 1))
            else:
                out.append(t)
            j += 1
        return "".join(out)


def parse_defines(items: list[str]) -> dict[str, str]:
    """p4c's -D arguments: 'NAME' defines NAME as 1, 'NAME=VALUE' as VALUE."""
    defines = {}
    for item in items:
        name, _, value = item.partition("=")
        defines[name] = value if value else "1"
    return defines


def preprocess(path, include_dirs=(), defines=None) -> Source:
    """Preprocess the file at `path`; see the module docstring."""
    return Preprocessor(include_dirs, defines).run(path)
