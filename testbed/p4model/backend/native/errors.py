"""Errors of the native back end, each one line.

NativeUnsupported: the lowering met a construct it does not translate yet;
the message names the construct and its P4 source location (file:line:col).
NativeBuildError: the C compiler refused the generated code; the message
names the program and the first compiler diagnostic, never a traceback."""

from __future__ import annotations

from testbed.p4model.errors import P4Error


class NativeUnsupported(P4Error):
    """A construct the native back end does not lower (the caller may fall
    back to the Python pipeline)."""

    def __init__(self, loc, construct: str) -> None:
        super().__init__(loc, f"native back end does not support {construct}")
        self.construct = construct


class NativeBuildError(P4Error):
    """The system C compiler failed on generated code."""

    def __init__(self, loc, program: str, diagnostic: str) -> None:
        super().__init__(loc, f"native build of {program} failed: {diagnostic}")
