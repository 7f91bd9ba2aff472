"""Name-based access to a P4Info: the controller speaks in names, P4Runtime in ids.

Values are encoded as P4Runtime 1.x canonical byte strings (big-endian,
no leading zero bytes, at least one byte), and checked against the
declared bit width so that a controller bug is an error here, not a
silent wrong entry in the switch.
"""

from __future__ import annotations

import ipaddress

from p4.config.v1 import p4info_pb2

from testbed.errors import TestbedError


class P4InfoError(TestbedError):
    """A name or value that does not fit the program's P4Info."""


def encode_value(value, bitwidth: int, what: str) -> bytes:
    """int, IPv4 string or MAC string -> canonical bytes, checked against bitwidth."""
    if isinstance(value, str):
        if value.count(":") == 5:
            number = int(value.replace(":", ""), 16)
        elif value.count(".") == 3:
            number = int(ipaddress.IPv4Address(value))
        else:
            number = int(value, 0)
    elif isinstance(value, bool):
        number = int(value)
    elif isinstance(value, int):
        number = value
    else:
        raise P4InfoError(f"{what}: cannot encode {value!r} as a P4 value")
    if number < 0 or number >= (1 << bitwidth):
        raise P4InfoError(f"{what}: value {value!r} does not fit in {bitwidth} bits")
    return number.to_bytes(max(1, (number.bit_length() + 7) // 8), "big")


def decode_value(data: bytes) -> int:
    return int.from_bytes(data, "big")


class P4InfoIndex:
    """Lookups by name (full name or alias) for every object kind the controller uses."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._by_kind: dict[str, dict[str, object]] = {}
        for kind in ("tables", "actions", "counters", "direct_counters", "meters",
                     "direct_meters", "registers", "action_profiles", "digests",
                     "controller_packet_metadata", "value_sets"):
            names: dict[str, object] = {}
            for item in getattr(p4info, kind):
                names[item.preamble.name] = item
                names.setdefault(item.preamble.alias, item)
            self._by_kind[kind] = names

    def _get(self, kind: str, name: str):
        try:
            return self._by_kind[kind][name]
        except KeyError:
            known = sorted({i.preamble.name for i in getattr(self.p4info, kind)})
            raise P4InfoError(f"the program has no {kind[:-1].replace('_', ' ')} named {name!r} "
                              f"(it has: {', '.join(known) or 'none'})") from None

    def table(self, name: str) -> p4info_pb2.Table:
        return self._get("tables", name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self._get("actions", name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self._get("counters", name)

    def register(self, name: str) -> p4info_pb2.Register:
        return self._get("registers", name)

    def meter(self, name: str) -> p4info_pb2.Meter:
        return self._get("meters", name)

    def action_profile(self, name: str) -> p4info_pb2.ActionProfile:
        return self._get("action_profiles", name)

    def packet_metadata(self, name: str) -> p4info_pb2.ControllerPacketMetadata:
        return self._get("controller_packet_metadata", name)

    def has(self, kind: str, name: str) -> bool:
        return name in self._by_kind.get(kind, {})

    def names(self, kind: str) -> list[str]:
        return sorted({i.preamble.name for i in getattr(self.p4info, kind)})

    @staticmethod
    def match_field(table: p4info_pb2.Table, name: str) -> p4info_pb2.MatchField:
        """By full name, else by last name component (so `dstAddr` finds `hdr.ipv4.dstAddr`)."""
        for field in table.match_fields:
            if field.name == name:
                return field
        short = name.split(".")[-1]
        matches = [f for f in table.match_fields if f.name.split(".")[-1] == short]
        if len(matches) == 1:
            return matches[0]
        raise P4InfoError(f"table {table.preamble.name} has no match field {name!r} "
                          f"(it has: {', '.join(f.name for f in table.match_fields)})")

    @staticmethod
    def param(action: p4info_pb2.Action, name: str) -> p4info_pb2.Action.Param:
        for param in action.params:
            if param.name == name:
                return param
        raise P4InfoError(f"action {action.preamble.name} has no parameter {name!r} "
                          f"(it has: {', '.join(p.name for p in action.params) or 'none'})")
