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

    always_accept = ("IDENTIFIER", "AT")

    def __init__(self) -> None:
        self.text = ""
        self.source: Source | None = None

    def process(self, stream):
        toks = list(stream)
        return iter(self._classify(toks))

    def _error(self, tok, message):
        loc = self.source.loc(tok.line, tok.column) if self.source else None
        raise P4Error(loc, message)

    def _classify(self, toks: list[Token]) -> list[Token]:
        out: list[Token] = []
        types: set[str] = set()
        scopes: list[tuple[set, int]] = []    # (type parameter names, brace level)
        brace = 0
        extern_body = None        # brace level of the extern body we are in
        extern_pending = False
        enum_pending = False
        register_at = -1          # token index of a typedef/type name
        n = len(toks)

        def is_type(v: str) -> bool:
            if v in types:
                return True
            for names, _ in scopes:
                if v in names:
                    return True
            return False

        def matching(i: int, open_v: str, close_v: str) -> int:
            depth = 0
            for j in range(i, n):
                v = toks[j].value
                if v == open_v and toks[j].type != "STRING_LITERAL":
                    depth += 1
                elif v == close_v and toks[j].type != "STRING_LITERAL":
                    depth -= 1
                    if depth == 0:
                        return j
            return -1

        def matching_angle(i: int) -> int:
            depth = 0
            for j in range(i, n):
                v = toks[j].value
                if toks[j].type in ("STRING_LITERAL",):
                    continue
                if v == "<":
                    depth += 1
                elif v == ">":
                    depth -= 1
                    if depth == 0:
                        return j
                elif v in (";", "{", "}", "(", ")"):
                    return -1
            return -1

        i = 0
        while i < n:
            t = toks[i]
            ty, v = t.type, t.value
            if ty == "AT":
                if i + 1 >= n:
                    self._error(t, "syntax error: annotation name expected after '@'")
                nt = toks[i + 1]
                if not (nt.type in ("IDENTIFIER",) or nt.value.isidentifier()):
                    self._error(nt, f"syntax error: unexpected {nt.value!r} after '@'")
                i += 2
                if nt.value == "pragma" and i < n and toks[i].line == nt.line:
                    # `@pragma name args...` runs to the end of the line and
                    # is the annotation `name` with body `args` (as p4c)
                    out.append(Token.new_borrow_pos("ANNOTATION_NAME", toks[i].value, t))
                    j = i + 1
                    while j < n and toks[j].line == nt.line:
                        j += 1
                    if j > i + 1:
                        body = self.text[toks[i + 1].start_pos:toks[j - 1].end_pos]
                        out.append(Token.new_borrow_pos("ANNOTATION_BODY", body, toks[i + 1]))
                    i = j
                    continue
                out.append(Token.new_borrow_pos("ANNOTATION_NAME", nt.value, t))
                if i < n and toks[i].value in ("(", "["):
                    open_v = toks[i].value
                    close_v = ")" if open_v == "(" else "]"
                    j = matching(i, open_v, close_v)
                    if j < 0:
                        self._error(toks[i], f"syntax error: unterminated annotation body of @{nt.value}")
                    body = self.text[toks[i].end_pos:toks[j].start_pos]
                    kind = "ANNOTATION_BODY" if open_v == "(" else "STRUCT_ANNOTATION_BODY"
                    out.append(Token.new_borrow_pos(kind, body, toks[i]))
                    i = j + 1
                continue

            prev = out[-1] if out else None
            decl_context = brace == 0 or brace == extern_body
            if ty == "IDENTIFIER":
                nxt = toks[i + 1].value if i + 1 < n else ""
                declare = False
                if prev is not None and prev.type != "IDENTIFIER" and prev.type != "TYPE_IDENTIFIER":
                    pv = prev.value
                    if pv in _DECL_KEYWORDS and prev.type != "STRING_LITERAL":
                        declare = True
                    elif pv == "extern" and nxt in ("{", "<"):
                        declare = True
                        extern_pending = True
                if enum_pending and nxt == "{":
                    declare = True
                    enum_pending = False
                if i == register_at:
                    declare = True
                if (decl_context and not declare and i + 2 < n and toks[i + 1].type == "IDENTIFIER"
                        and toks[i + 2].value == "<"):
                    # `T lookahead<T>()`: the return type uses a type
                    # parameter declared after the method name
                    close = matching_angle(i + 2)
                    if close > 0 and close + 1 < n and toks[close + 1].value == "(":
                        scopes.append(({toks[j].value for j in range(i + 3, close)
                                        if toks[j].type == "IDENTIFIER"}, brace))
                if declare:
                    types.add(v)
                if declare or is_type(v):
                    t = Token.new_borrow_pos("TYPE_IDENTIFIER", v, t)
                out.append(t)
                i += 1
                continue

            if ty == "STRING_LITERAL" or ty == "INTEGER":
                out.append(t)
                i += 1
                continue

            if v == "enum" and decl_context:
                enum_pending = True
            elif v in ("typedef", "type") and brace == 0 and (prev is None or prev.value in (";", "}") or prev.type in ("ANNOTATION_NAME", "ANNOTATION_BODY", "STRUCT_ANNOTATION_BODY")):
                j = i + 1
                depth = 0
                while j < n:
                    vv = toks[j].value
                    if vv in ("{", "("):
                        depth += 1
                    elif vv in ("}", ")"):
                        depth -= 1
                    elif vv == ";" and depth == 0:
                        break
                    j += 1
                if j < n and toks[j - 1].type == "IDENTIFIER":
                    register_at = j - 1
            elif v == "{":
                brace += 1
                if extern_pending:
                    extern_body = brace
                    extern_pending = False
            elif v == "}":
                brace -= 1
                if extern_body is not None and brace < extern_body:
                    extern_body = None
                out.append(t)
                i += 1
                while scopes and scopes[-1][1] == brace and brace >= 0:
                    scopes.pop()
                continue
            elif v == ";":
                out.append(t)
                i += 1
                while scopes and scopes[-1][1] == brace:
                    scopes.pop()
                continue
            elif v == "<" and prev is not None and prev.type in ("IDENTIFIER", "TYPE_IDENTIFIER"):
                before = out[-2] if len(out) >= 2 else None
                close = matching_angle(i)
                after = toks[close + 1].value if 0 <= close < n - 1 else ""
                if (decl_context and before is not None and close > 0 and after in ("(", "{")
                        and (before.value in _DECL_KEYWORDS or before.value == "extern"
                             or before.type == "TYPE_IDENTIFIER" or before.value in _TYPE_END_VALUES
                             or before.type == "_R_ANGLE_SHIFT" or before.value == "abstract")
                        and before.type not in ("STRING_LITERAL", "INTEGER")):
                    # type parameter list of a declaration: `extern void f<T>(...)`
                    names = set()
                    for j in range(i + 1, close):
                        if toks[j].type == "IDENTIFIER":
                            names.add(toks[j].value)
                    scopes.append((names, brace))
                elif prev.type == "IDENTIFIER" and i + 1 < n:
                    nt = toks[i + 1]
                    starts_type = (nt.type != "IDENTIFIER" and nt.value in _TYPE_START_KEYWORDS
                                   and not (nt.value == "error" and i + 2 < n and toks[i + 2].value == "."))
                    if nt.type == "IDENTIFIER" and is_type(nt.value):
                        follow = toks[i + 2].value if i + 2 < n else ""
                        starts_type = follow not in (".", "(")
                    if starts_type:
                        t = Token.new_borrow_pos("_L_ANGLE_ARGS", "<", t)
            elif v == ">" and i + 1 < n and toks[i + 1].value == ">" and toks[i + 1].start_pos == t.end_pos:
                t = Token.new_borrow_pos("_R_ANGLE_SHIFT", ">", t)
            out.append(t)
            i += 1
        return out


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
