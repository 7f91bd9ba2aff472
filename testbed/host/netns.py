"""Opening sockets inside another network namespace, from a process that stays in its own.

A socket belongs to the network namespace it was created in, for its whole life, whichever
namespace its process is in later. So one process can serve hosts of several namespaces
(`testbed hosts`, `testbed.host.group`): while a host's sockets are opened, the calling thread
enters that host's namespace with setns(2) (Python 3.11 has no os.setns: libc through
ctypes), and returns to the namespace it came from right after. setns changes the calling
thread only; the other threads (a NIC's pacing thread) are not moved.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from contextlib import contextmanager
from typing import Iterator

from testbed.errors import TestbedError

CLONE_NEWNET = 0x40000000  # <sched.h>


class NetnsError(TestbedError):
    """A namespace that cannot be entered (missing path, not a network namespace, no privilege)."""


_libc: ctypes.CDLL | None = None


def _setns(fd: int, what: str) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        needs = " (entering a namespace needs CAP_SYS_ADMIN)" if err == 1 else ""
        raise NetnsError(f"cannot enter the network namespace {what}: {os.strerror(err)}{needs}")


class NetNamespace:
    """A network namespace named by a path (/proc/<pid>/ns/net, /run/netns/<name>)."""

    def __init__(self, path: str) -> None:
        self.path = str(path)

    def __repr__(self) -> str:
        return f"NetNamespace({self.path!r})"

    @contextmanager
    def entered(self) -> Iterator[None]:
        """The calling thread in this namespace inside the block, back in its own after it (also
        when the block raises)."""
        try:
            target = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            raise NetnsError(f"network namespace {self.path} cannot be opened: {e.strerror}") from None
        try:
            own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            os.close(target)
            raise NetnsError(f"this thread's own network namespace cannot be opened: {e.strerror}") from None
        try:
            _setns(target, self.path)
            try:
                yield
            finally:
                _setns(own, "this process started in")
        finally:
            os.close(target)
            os.close(own)


@contextmanager
def entered(ns: NetNamespace | None) -> Iterator[None]:
    """`ns.entered()`, or nothing at all for None (the current namespace)."""
    if ns is None:
        yield
    else:
        with ns.entered():
            yield
