"""The front end of the builtin P4-16 target: preprocess -> parse -> typed IR.

    from testbed.p4model.frontend import load_program
    program = load_program("prog.p4", include_dirs=["inc"], defines={"X": "1"})

Every problem in the program raises P4Error (one line, `file:line:col:
message`); constructs the target does not implement raise P4Unsupported
(`file:line:col: unsupported: <construct>`).
"""

from __future__ import annotations

from pathlib import Path

from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import ir

__all__ = ["load_program", "load_source", "ir"]


# the programs this process loaded: preprocessed text and origins -> its IR (the LOADED_KEPT newest)
LOADED: dict[tuple, ir.Program] = {}
LOADED_KEPT = 8


def load_program(path, include_dirs=(), defines=None) -> ir.Program:
    """Load a P4-16 v1model program from a file into the typed IR.

    The IR is read-only once made (every back end and every switch of a fabric share one), so a
    second load of the same preprocessed program (the same text from the same files and lines:
    the includes and defines as they are now) returns the same IR without parsing again."""
    from testbed.p4model.frontend.lower import lower
    from testbed.p4model.frontend.parser import parse_source
    from testbed.p4model.frontend.preprocess import preprocess

    try:
        source = preprocess(Path(path), include_dirs, defines)
        key = (source.text, tuple(source.origins))
        program = LOADED.get(key)
        if program is None:
            program = LOADED[key] = lower(parse_source(source), source)
            while len(LOADED) > LOADED_KEPT:
                LOADED.pop(next(iter(LOADED)))
        return program
    except P4Error:
        raise
    except RecursionError:
        raise P4Error(None, f"{path}: program nested too deeply") from None
    except Exception as e:  # noqa: BLE001 - the contract is one line, never a traceback
        # A front-end bug must still reach the user as one line, at the
        # construct being lowered; tests assert that no program produces it.
        from testbed.p4model.guard import internal_error
        raise internal_error(e, str(path)) from e


def load_source(text: str, name: str = "<input>.p4", include_dirs=(), defines=None) -> ir.Program:
    """Load a program given as text (tests, tools); `#include "x"` resolves
    relative to the current directory."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / Path(name).name
        p.write_text(text)
        try:
            return load_program(p, include_dirs, defines)
        except P4Error as e:
            raise _rename(e, str(p), name) from None


def _rename(e: P4Error, tmp: str, name: str) -> P4Error:
    loc = e.loc
    if loc is not None and getattr(loc, "file", None) == tmp:
        loc = ir.Loc(name, loc.line, loc.col)
    new = type(e).__new__(type(e))
    P4Error.__init__(new, loc, e.message)
    return new
