"""The semantic guard: a bug of ours met while loading a program reaches
the user as one line naming the P4 construct being handled, never as a
traceback.

`internal_error(exc)` finds that construct by walking the exception's
frames from the innermost out for the first IR node (anything with a
`loc`), location or parse-tree node (front end) they hold, so no stage
has to keep a "current position" up to date.
"""

from __future__ import annotations

from lark import Tree

from testbed.p4model.errors import P4InternalError
from testbed.p4model.frontend import ir


def internal_error(exc: BaseException, where: str = "") -> P4InternalError:
    """The one-line error for an unexpected exception while loading."""
    loc, construct = locate(exc)
    return P4InternalError(loc, construct or where or "loading", exc, where)


def locate(exc: BaseException):
    """(Loc, construct description) of the innermost frame of `exc` that
    holds a located P4 construct; (None, None) if none does."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        found = _in_frame(frame)
        if found is not None:
            return found
    return None, None


def _located(loc) -> bool:
    return isinstance(loc, ir.Loc) and loc.line > 0


def _in_frame(frame):
    values = list(frame.f_locals.values())
    for v in values:
        loc = getattr(v, "loc", None) if not isinstance(v, type) else None
        if _located(loc):
            return loc, _describe(v)
    for v in values:
        if _located(v):
            return v, frame.f_code.co_name.strip("_").replace("_", " ")
    owner = frame.f_locals.get("self")
    to_loc = getattr(owner, "loc", None)
    if callable(to_loc) and hasattr(owner, "source"):
        for v in values:
            if isinstance(v, Tree) and not v.meta.empty:
                loc = to_loc(v)
                if _located(loc):
                    return loc, str(v.data).replace("_", " ")
    return None


def _describe(node) -> str:
    kind = type(node).__name__
    name = getattr(node, "name", None)
    return f"{kind} {name}" if isinstance(name, str) and name else kind
