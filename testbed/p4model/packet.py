"""Per-packet run-time support shared by every compiled program.

The compiler (testbed/p4model/backend/python) generates one Python class per P4
header/struct/union type; what those classes and the generated functions
need at run time, independent of the program, lives here: the parse
cursor, the header-stack base class, the control-flow exceptions (exit,
parser error, packet abort), value sets, and the per-packet context that
holds the v1model "hidden registers" (clone session, resubmit/recirculate
field lists, truncation, digest) which bmv2 keeps outside the PHV.
"""

from __future__ import annotations


class Cursor:
    """Read position in the packet being parsed (whole bytes, as bmv2)."""

    __slots__ = ("data", "off", "end")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.off = 0
        self.end = len(data)


class ParseError(Exception):
    """A parser error: stops parsing, sets standard_metadata.parser_error."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ExitControl(Exception):
    """`exit`: ends the current top-level control."""


class PacketAbort(Exception):
    """assert()/assume() failed or the program did something bmv2 would abort
    on: the packet is dropped and the message (with its source location)
    logged; the switch keeps running."""


class HeaderStack:
    """A header stack: `elems` are header (or union) objects, `nxt` is the
    index of the next free element (P4's nextIndex).

    The element objects are made on first use of `elems` (`__getattr__`
    runs only while the slot is unset): most packets never touch most
    stacks, and building ten option headers per packet cost more than
    parsing.  `_live` says whether they exist; a stack that is not live
    has every element invalid and zero, so emit, copy, compare and the
    generated checksum/deparser code skip it without making them."""

    __slots__ = ("elems", "nxt", "_live")
    size = 0
    _oob_code = 0  # error code of StackOutOfBounds, set per program
    _blank = ()  # `size` pristine elements, read-only: what a stack that is not live reads as

    def __init__(self) -> None:
        self.nxt = 0
        self._live = False

    def __getattr__(self, name):
        if name == "elems":
            elems = self.elems = self._new_elems()
            self._live = True
            return elems
        raise AttributeError(name)

    def _new_elems(self) -> list:  # generated per stack class
        raise NotImplementedError

    def _copy(self):
        n = self.__class__.__new__(self.__class__)
        n.nxt = self.nxt
        if self._live:
            n.elems = [e._copy() for e in self.elems]
            n._live = True
        else:
            n._live = False
        return n

    def _set(self, other) -> None:
        if other._live:
            for mine, theirs in zip(self.elems, other.elems):
                mine._set(theirs)
        elif self._live:  # in place (elements keep their identity), as from pristine elements
            for e in self.elems:
                e._reset()
        self.nxt = other.nxt

    def _reset(self) -> None:
        """Back to a new stack's state (fresh elements, as __init__ gave)."""
        if self._live:
            del self.elems
            self._live = False
        self.nxt = 0

    def _eq(self, other) -> bool:
        if not self._live and not other._live:
            return True
        return all(a._eq(b) for a, b in zip(self.elems, other.elems))

    def _next(self):
        """`stack.next` outside extract: the next free element."""
        if self.nxt >= self.size:
            raise ParseError(self._oob_code)
        return self.elems[self.nxt]

    def _last(self):
        if self.nxt == 0 or self.nxt > self.size:
            raise ParseError(self._oob_code)
        return self.elems[self.nxt - 1]

    def _extract_next(self, cur) -> None:
        i = self.nxt
        if i >= self.size:
            raise ParseError(self._oob_code)
        self.elems[i]._extract(cur)
        self.nxt = i + 1

    def _extract_next_vb(self, cur, bits) -> None:
        i = self.nxt
        if i >= self.size:
            raise ParseError(self._oob_code)
        self.elems[i]._extract_vb(cur, bits)
        self.nxt = i + 1

    def _get(self, index):
        """Element at a run-time index; out of range reads a detached
        invalid header (bmv2 would abort; we keep the packet going)."""
        if 0 <= index < self.size:
            return self.elems[index]
        dummy = self.elems[0].__class__()
        return dummy

    def push_front(self, count: int) -> None:
        elems = self.elems
        size = self.size
        for i in range(size - 1, -1, -1):
            if i >= count:
                elems[i]._set(elems[i - count])
            else:
                elems[i]._reset()
        self.nxt = min(self.nxt + count, size)

    def pop_front(self, count: int) -> None:
        elems = self.elems
        size = self.size
        for i in range(size):
            if i + count < size:
                elems[i]._set(elems[i + count])
            else:
                elems[i]._reset()
        self.nxt = max(self.nxt - count, 0)

    def _emit(self, out: list) -> None:
        if self._live:
            for e in self.elems:
                e._emit(out)

    def _nbytes(self) -> int:
        return sum(e._nbytes() for e in self.elems) if self._live else 0


class ValueSet:
    """A parser value_set: the control plane fills `members` with
    (value, mask) pairs over the concatenated select keys (mask all-ones
    for exact members); a select case matches when any member matches."""

    def __init__(self, name: str, size: int, width: int) -> None:
        self.name = name
        self.size = size
        self.width = width
        self.members: list[tuple[int, int]] = []

    def add(self, value: int, mask: int | None = None) -> None:
        from testbed.p4model.errors import ControlPlaneError

        if len(self.members) >= self.size:
            raise ControlPlaneError("RESOURCE_EXHAUSTED", f"value set {self.name} is full ({self.size})")
        full = (1 << self.width) - 1
        mask = full if mask is None else mask & full
        self.members.append((value & mask, mask))

    def clear(self) -> None:
        self.members.clear()

    def matches(self, key: int) -> bool:
        for value, mask in self.members:
            if key & mask == value:
                return True
        return False


class PacketContext:
    """What a packet carries through one pipeline pass besides its PHV: the
    hidden registers of bmv2's simple_switch (clone/resubmit/recirculate
    requests with their field lists, truncation, digest), the length
    register that setValid/setInvalid adjust, and the unparsed payload.

    Between ingress and egress the same object is the job the traffic
    manager queues (v1model.EgressJob): `port`, `priority`, `hdr`, `meta`
    and `passes` are set then (and are unset before), so a unicast packet
    needs no second object; egress reuses it for its own pass."""

    __slots__ = ("ingress_length", "length", "clone_session", "clone_fields",
                 "resubmit", "recirculate", "truncate", "digest", "payload",
                 "sm", "dm", "port", "priority", "hdr", "meta", "passes")

    def __init__(self, length: int, sm) -> None:
        self.ingress_length = length
        self.length = length
        self.clone_session = None
        self.clone_fields = ()
        self.resubmit = None
        self.recirculate = None
        self.truncate = 0
        self.digest = None
        self.payload = b""
        self.sm = sm
        self.dm = None  # direct meter colours of this pass: {key: colour}, made when a table sets one

    def set_meter_result(self, key, colour: int) -> None:
        if self.dm is None:
            self.dm = {}
        self.dm[key] = colour

    def meter_result(self, key) -> int:
        """The colour a direct meter's table gave this pass (0, green, if none)."""
        return 0 if self.dm is None else self.dm.get(key, 0)
