"""gRPC errors in the shape P4Runtime clients parse.

Two kinds:

* RPC-level errors (bad device id, not primary, no pipeline, malformed
  request): a gRPC status code and a one-sentence message;
* Write batches with failed updates: gRPC UNKNOWN whose binary status
  details (trailing metadata `grpc-status-details-bin`) are a
  google.rpc.Status carrying one Any-packed p4.v1.Error *per update*, in
  update order, canonical_code OK for the updates that succeeded.  This is
  what PI (behind simple_switch_grpc) sends and what p4runtime-shell's
  P4RuntimeErrorIterator unpacks (it skips OK entries and reports the
  others by index; note that p4runtime-shell 0.0.6's iterator never
  advances past an OK entry, so it can only parse batches in which every
  update failed -- the shell itself writes one update per request, and we
  keep PI's format, which other clients rely on).

grpcio has no helper for rich status without the grpcio-status package, so
`RichStatus` implements the small grpc.Status interface itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from testbed.p4model.errors import ControlPlaneError

DETAILS_KEY = "grpc-status-details-bin"


def grpc_code(name: str) -> grpc.StatusCode:
    """'INVALID_ARGUMENT' -> grpc.StatusCode.INVALID_ARGUMENT (UNKNOWN for anything else)."""
    return getattr(grpc.StatusCode, name, grpc.StatusCode.UNKNOWN)


def canonical_code(name: str) -> int:
    """'INVALID_ARGUMENT' -> google.rpc.Code number."""
    return code_pb2.Code.Value(name) if name in code_pb2.Code.keys() else code_pb2.UNKNOWN


class RpcError(Exception):
    """Raised inside a handler to end the RPC with `code` and `message`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @classmethod
    def from_control_plane(cls, error: ControlPlaneError) -> "RpcError":
        return cls(error.code, error.message)


@dataclass(frozen=True)
class RichStatus(grpc.Status):
    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple


def write_error_status(results: list[tuple[str, str]]) -> RichStatus:
    """results: (code name, message) per update, 'OK' for the ones applied."""
    status = status_pb2.Status(code=code_pb2.UNKNOWN)
    failed = 0
    for code, message in results:
        error = p4runtime_pb2.Error(canonical_code=canonical_code(code), message=message)
        if code != "OK":
            failed += 1
        status.details.add().Pack(error)
    status.message = f"{failed} of {len(results)} update(s) failed" if failed else "Write failed"
    return RichStatus(grpc.StatusCode.UNKNOWN, status.message,
                      ((DETAILS_KEY, status.SerializeToString()),))


def parse_write_error(error: grpc.RpcError) -> list[tuple[int, str]]:
    """Client side, for tests: (canonical_code, message) per update from an UNKNOWN error."""
    for key, value in error.trailing_metadata() or ():
        if key == DETAILS_KEY:
            status = status_pb2.Status.FromString(value)
            out = []
            for item in status.details:
                p4_error = p4runtime_pb2.Error()
                if not item.Unpack(p4_error):
                    raise ValueError("a status detail is not a p4.v1.Error")
                out.append((p4_error.canonical_code, p4_error.message))
            return out
    raise ValueError("the error carries no binary status details")
