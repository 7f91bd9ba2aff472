"""P4-16 source text -> lark parse tree (LALR).

Why a post-lexer: P4 is only LALR-parsable when the lexer knows which
identifiers are type names (p4c's lexer does the same).  Declarations
precede their uses in P4, so one forward pass over the token list can tell
types from values: `header X`, `struct X`, `enum [bit<8>] X`, `extern X`,
`parser X`, `control X`, `package X`, `typedef ... X;`, `type ... X;`
declare global type names; `<T, U>` after a declared name declares type
parameters scoped to that declaration.  The same pass folds annotations
into single tokens (bodies are unparsed in P4) and disambiguates `>>` and
`<` (see grammar.lark).

Errors come out as one-line P4Error at the ORIGINAL file:line:col.
"""

from __future__ import annotations

from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from testbed.p4model.errors import P4Error
from testbed.p4model.frontend.preprocess import Source

GRAMMAR_PATH = Path(__file__).with_name("grammar.lark")

_TYPE_START_KEYWORDS = {"bit", "int", "varbit", "bool", "tuple", "string", "void", "_", "error", "list"}
_TYPE_END_VALUES = {"void", "bool", "bit", "int", "string", "error", "match_kind", ">", "]"}
_DECL_KEYWORDS = {"header", "header_union", "struct", "parser", "control", "package"}


class P4PostLex:
    """Token-stream pass: type names, annotations, `>>` and `<` marking."""

    always_accept = ("IDENTIFIER", "AT", "OTHER_CHAR")

    def __init__(self) -> None:
        self.text = ""
        self.source: Source | None = None

    def process(self, stream):
        return iter(_Classifier(self, list(stream)).run())

    def _error(self, tok, message):
        loc = self.source.loc(tok.line, tok.column) if self.source else None
        raise P4Error(loc, message)


class _Classifier:
    """One forward pass over a program's tokens (see the module docstring).

    State: the global type names, the scopes of type parameters (names and
    the brace level that ends them), the brace level, the extern body being
    declared (its methods may be generic), a pending `enum` and the index of
    the name a `typedef`/`type` declares."""

    def __init__(self, postlex: P4PostLex, toks: list[Token]) -> None:
        self.postlex = postlex
        self.toks = toks
        self.n = len(toks)
        self.out: list[Token] = []
        self.types: set[str] = set()
        self.scopes: list[tuple[set, int]] = []    # (type parameter names, brace level)
        self.brace = 0
        self.extern_body = None        # brace level of the extern body we are in
        self.extern_pending = False
        self.enum_pending = False
        self.register_at = -1          # token index of a typedef/type name

    def run(self) -> list[Token]:
        i = 0
        while i < self.n:
            t = self.toks[i]
            if t.type == "AT":
                i = self._annotation(i)
            elif t.type == "IDENTIFIER":
                i = self._identifier(i)
            elif t.type == "OTHER_CHAR":
                self.postlex._error(t, f"syntax error: unexpected character {t.value!r}")
            elif t.type in ("STRING_LITERAL", "INTEGER"):
                self.out.append(t)
                i += 1
            else:
                i = self._punctuation(i)
        return self.out

    # ---------------------------------------------------------- helpers

    def is_type(self, v: str) -> bool:
        return v in self.types or any(v in names for names, _ in self.scopes)

    def _matching(self, i: int, open_v: str, close_v: str) -> int:
        """Index of the bracket closing the one at i (strings skipped), or -1."""
        depth = 0
        for j in range(i, self.n):
            tok = self.toks[j]
            if tok.type == "STRING_LITERAL":
                continue
            if tok.value == open_v:
                depth += 1
            elif tok.value == close_v:
                depth -= 1
                if depth == 0:
                    return j
        return -1

    def _matching_angle(self, i: int) -> int:
        """Index of the `>` closing the `<` at i within one statement, or -1."""
        depth = 0
        for j in range(i, self.n):
            tok = self.toks[j]
            if tok.type == "STRING_LITERAL":
                continue
            if tok.value == "<":
                depth += 1
            elif tok.value == ">":
                depth -= 1
                if depth == 0:
                    return j
            elif tok.value in (";", "{", "}", "(", ")"):
                return -1
        return -1

    def _pop_scopes(self) -> None:
        while self.scopes and self.scopes[-1][1] == self.brace and self.brace >= 0:
            self.scopes.pop()

    def _decl_context(self) -> bool:
        return self.brace == 0 or self.brace == self.extern_body

    # ------------------------------------------------------ annotations

    def _annotation(self, i: int) -> int:
        """`@name`, `@name(body)`, `@name[body]` or `@pragma name body` ->
        ANNOTATION_NAME (+ the body's raw text); returns the next index."""
        toks, t = self.toks, self.toks[i]
        if i + 1 >= self.n:
            self.postlex._error(t, "syntax error: annotation name expected after '@'")
        nt = toks[i + 1]
        if not (nt.type == "IDENTIFIER" or nt.value.isidentifier()):
            self.postlex._error(nt, f"syntax error: unexpected {nt.value!r} after '@'")
        i += 2
        if nt.value == "pragma" and i < self.n and toks[i].line == nt.line:
            return self._pragma(i, t, nt.line)
        self.out.append(Token.new_borrow_pos("ANNOTATION_NAME", nt.value, t))
        if i < self.n and toks[i].value in ("(", "[") and toks[i].type != "STRING_LITERAL":
            open_v = toks[i].value
            close_v = ")" if open_v == "(" else "]"
            j = self._matching(i, open_v, close_v)
            if j < 0:
                self.postlex._error(toks[i], f"syntax error: unterminated annotation body of @{nt.value}")
            body = self.postlex.text[toks[i].end_pos:toks[j].start_pos]
            kind = "ANNOTATION_BODY" if open_v == "(" else "STRUCT_ANNOTATION_BODY"
            self.out.append(Token.new_borrow_pos(kind, body, toks[i]))
            i = j + 1
        return i

    def _pragma(self, i: int, at: Token, line: int) -> int:
        """`@pragma name args...` runs to the end of the line and is the
        annotation `name` with body `args` (as p4c)."""
        toks = self.toks
        self.out.append(Token.new_borrow_pos("ANNOTATION_NAME", toks[i].value, at))
        j = i + 1
        while j < self.n and toks[j].line == line:
            j += 1
        if j > i + 1:
            body = self.postlex.text[toks[i + 1].start_pos:toks[j - 1].end_pos]
            self.out.append(Token.new_borrow_pos("ANNOTATION_BODY", body, toks[i + 1]))
        return j

    # ------------------------------------------------------ identifiers

    def _identifier(self, i: int) -> int:
        """An identifier: declares a type name after `header`, `struct`,
        `extern X {`, `enum X {`, as a typedef's name; a TYPE_IDENTIFIER when
        it names a type in scope."""
        toks, t = self.toks, self.toks[i]
        v = t.value
        prev = self.out[-1] if self.out else None
        nxt = toks[i + 1].value if i + 1 < self.n else ""
        declare = False
        if prev is not None and prev.type not in ("IDENTIFIER", "TYPE_IDENTIFIER", "STRING_LITERAL"):
            if prev.value in _DECL_KEYWORDS:
                declare = True
            elif prev.value == "extern" and nxt in ("{", "<"):
                declare = True
                self.extern_pending = True
        if self.enum_pending and nxt == "{":
            declare = True
            self.enum_pending = False
        if i == self.register_at:
            declare = True
        if (self._decl_context() and not declare and i + 2 < self.n and toks[i + 1].type == "IDENTIFIER"
                and toks[i + 2].value == "<"):
            self._method_type_params(i)
        if declare:
            self.types.add(v)
        if declare or self.is_type(v):
            t = Token.new_borrow_pos("TYPE_IDENTIFIER", v, t)
        self.out.append(t)
        return i + 1

    def _method_type_params(self, i: int) -> None:
        """`T lookahead<T>()`: the return type uses a type parameter
        declared after the method name."""
        toks = self.toks
        close = self._matching_angle(i + 2)
        if close > 0 and close + 1 < self.n and toks[close + 1].value == "(":
            self.scopes.append(({toks[j].value for j in range(i + 3, close)
                                 if toks[j].type == "IDENTIFIER"}, self.brace))

    def _typedef_name(self, i: int) -> None:
        """Remember the name a `typedef ... X;` / `type ... X;` declares
        (the last identifier before the `;` at nesting depth 0)."""
        toks = self.toks
        j = i + 1
        depth = 0
        while j < self.n:
            vv = toks[j].value
            if vv in ("{", "("):
                depth += 1
            elif vv in ("}", ")"):
                depth -= 1
            elif vv == ";" and depth == 0:
                break
            j += 1
        if j < self.n and toks[j - 1].type == "IDENTIFIER":
            self.register_at = j - 1

    # ------------------------------------------------ everything else

    def _punctuation(self, i: int) -> int:
        """Keywords and symbols: track braces and scopes, mark `<` and `>`."""
        toks, t = self.toks, self.toks[i]
        v = t.value
        prev = self.out[-1] if self.out else None
        if v == "enum" and self._decl_context():
            self.enum_pending = True
        elif v in ("typedef", "type") and self.brace == 0 and (
                prev is None or prev.value in (";", "}")
                or prev.type in ("ANNOTATION_NAME", "ANNOTATION_BODY", "STRUCT_ANNOTATION_BODY")):
            self._typedef_name(i)
        elif v == "{":
            self.brace += 1
            if self.extern_pending:
                self.extern_body = self.brace
                self.extern_pending = False
        elif v == "}":
            self.brace -= 1
            if self.extern_body is not None and self.brace < self.extern_body:
                self.extern_body = None
            self.out.append(t)
            self._pop_scopes()
            return i + 1
        elif v == ";":
            self.out.append(t)
            while self.scopes and self.scopes[-1][1] == self.brace:
                self.scopes.pop()
            return i + 1
        elif v == "<" and prev is not None and prev.type in ("IDENTIFIER", "TYPE_IDENTIFIER"):
            t = self._left_angle(i, t, prev)
        elif v == ">" and i + 1 < self.n and toks[i + 1].value == ">" and toks[i + 1].start_pos == t.end_pos:
            t = Token.new_borrow_pos("_R_ANGLE_SHIFT", ">", t)
        self.out.append(t)
        return i + 1

    def _left_angle(self, i: int, t: Token, prev: Token) -> Token:
        """A `<` after a name: a declaration's type parameter list (opens a
        scope), explicit type arguments of a call (_L_ANGLE_ARGS) or `less`."""
        toks = self.toks
        before = self.out[-2] if len(self.out) >= 2 else None
        close = self._matching_angle(i)
        after = toks[close + 1].value if 0 <= close < self.n - 1 else ""
        if (self._decl_context() and before is not None and close > 0 and after in ("(", "{")
                and (before.value in _DECL_KEYWORDS or before.value == "extern"
                     or before.type == "TYPE_IDENTIFIER" or before.value in _TYPE_END_VALUES
                     or before.type == "_R_ANGLE_SHIFT" or before.value == "abstract")
                and before.type not in ("STRING_LITERAL", "INTEGER")):
            # type parameter list of a declaration: `extern void f<T>(...)`
            self.scopes.append(({toks[j].value for j in range(i + 1, close) if toks[j].type == "IDENTIFIER"},
                                self.brace))
            return t
        if prev.type == "IDENTIFIER" and i + 1 < self.n:
            nt = toks[i + 1]
            starts_type = (nt.type != "IDENTIFIER" and nt.value in _TYPE_START_KEYWORDS
                           and not (nt.value == "error" and i + 2 < self.n and toks[i + 2].value == "."))
            if nt.type == "IDENTIFIER" and self.is_type(nt.value):
                follow = toks[i + 2].value if i + 2 < self.n else ""
                starts_type = follow not in (".", "(")
            if starts_type:
                return Token.new_borrow_pos("_L_ANGLE_ARGS", "<", t)
        return t


_PARSER: Lark | None = None
_POSTLEX = P4PostLex()


def _lark() -> Lark:
    global _PARSER
    if _PARSER is None:
        _PARSER = Lark(GRAMMAR_PATH.read_text(), parser="lalr", lexer="basic",
                       postlex=_POSTLEX, propagate_positions=True, maybe_placeholders=False, cache=True,
                       start="start")
    return _PARSER


_READABLE = {
    "TYPE_IDENTIFIER": "a type name", "IDENTIFIER": "a name", "INTEGER": "an integer",
    "STRING_LITERAL": "a string", "ANNOTATION_NAME": "an annotation", "$END": "end of file",
    "_R_ANGLE_SHIFT": "'>'", "_L_ANGLE_ARGS": "'<'", "COMPOUND_OP": "'+='",
}


def _describe_terminal(name: str) -> str:
    if name in _READABLE:
        return _READABLE[name]
    try:
        term = _lark().get_terminal(name)
        return repr(term.pattern.value) if term.pattern.type == "str" else name.lower()
    except (KeyError, AttributeError):
        return name.lower()


_NAME_KEYWORDS = {"APPLY", "KEY", "ACTIONS", "STATE", "ENTRIES", "TYPE", "PRIORITY", "LIST"}


def _expected_list(names) -> list[str]:
    """Readable, short list of what the parser would have accepted: words
    first ('a name', ...), keywords usable as names folded into 'a name'."""
    names = {n for n in names if not n.startswith("__")}
    if "IDENTIFIER" in names:
        names -= _NAME_KEYWORDS
    described = {_describe_terminal(n) for n in names}
    words = sorted(d for d in described if not d.startswith("'"))
    symbols = sorted(d for d in described if d.startswith("'"))
    result = words + symbols
    if len(result) > 8:
        result = result[:8] + ["..."]
    return result


def _token_text(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    if tok.type == "ANNOTATION_NAME":
        return "'@" + tok.value + "'"
    text = str(tok.value)
    if len(text) > 30:
        text = text[:27] + "..."
    return repr(text)


def parse_source(source: Source) -> Tree:
    """Parse preprocessed text; raise P4Error with the original location."""
    parser = _lark()
    _POSTLEX.text = source.text
    _POSTLEX.source = source
    try:
        return parser.parse(source.text)
    except P4Error:
        raise
    except UnexpectedToken as e:
        tok = e.token
        expected = _expected_list(e.expected)
        line = getattr(tok, "line", None) or e.line
        col = getattr(tok, "column", None) or e.column
        if tok.type == "$END":
            last = source.text.rstrip().count("\n") + 1
            loc = source.loc(last, 1)
        else:
            loc = source.loc(line, col)
        raise P4Error(loc, f"syntax error: unexpected {_token_text(tok)}, expected {', '.join(expected)}") from None
    except UnexpectedCharacters as e:
        ch = source.text[e.pos_in_stream] if e.pos_in_stream < len(source.text) else "?"
        raise P4Error(source.loc(e.line, e.column), f"syntax error: unexpected character {ch!r}") from None
    except UnexpectedEOF:
        last = source.text.rstrip().count("\n") + 1
        raise P4Error(source.loc(last, 1), "syntax error: unexpected end of file") from None
    except UnexpectedInput as e:
        raise P4Error(source.loc(getattr(e, "line", 1), getattr(e, "column", 1)), f"syntax error: {e}") from None
    except LarkError as e:
        raise P4Error(None, f"syntax error: {str(e).splitlines()[0]}") from None
    except RecursionError:
        raise P4Error(None, "syntax error: program nested too deeply") from None
