"""Errors of the builtin P4 target.

P4Error: a problem in a P4 program, reported as one line
`file:line:col: message` (load time) — never a traceback.
ControlPlaneError: a control-plane request the switch refuses; `code` is
the gRPC status name a P4Runtime server returns for it.
"""

from __future__ import annotations

from testbed.errors import TestbedError

GRPC_CODES = {
    "INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "OUT_OF_RANGE",
    "RESOURCE_EXHAUSTED", "PERMISSION_DENIED", "FAILED_PRECONDITION",
    "UNIMPLEMENTED", "INTERNAL", "UNKNOWN",
}


class P4Error(TestbedError):
    """A program the builtin target cannot load, located in its source."""

    def __init__(self, loc, message: str) -> None:
        self.loc = loc
        self.message = message
        super().__init__(f"{loc}: {message}" if loc is not None else message)


class P4Unsupported(P4Error):
    """A valid P4-16 construct the builtin target does not implement yet."""

    def __init__(self, loc, construct: str) -> None:
        super().__init__(loc, f"unsupported: {construct}")


class P4NoMain(P4Error):
    """The program declares no `main` package instance: nothing to run (p4c
    still writes an empty P4Info for it)."""


class P4InternalError(P4Error):
    """A bug of the builtin target met while loading a valid-looking
    program, reported (one line) at the P4 construct it was handling."""

    def __init__(self, loc, construct: str, exc: BaseException, where: str = "") -> None:
        detail = " ".join(f"{type(exc).__name__}: {exc}".split())
        at = f"at {loc}" if loc is not None else f"in {where or 'the program'}"
        self.construct = construct
        TestbedError.__init__(self, f"internal error {at} ({construct}): {detail}")
        self.loc = loc
        self.message = f"internal error ({construct}): {detail}"


class ControlPlaneError(TestbedError):
    """A refused control-plane request; `code` is a gRPC status name."""

    def __init__(self, code: str, message: str) -> None:
        if code not in GRPC_CODES:
            raise ValueError(f"unknown gRPC status name {code!r}")
        self.code = code
        self.message = message
        super().__init__(message)


class PacketError(TestbedError):
    """A packet the pipeline cannot process for a reason the program did not
    cover (e.g. an assert() that failed); the switch logs it and drops the
    packet, it never stops forwarding."""
