"""ControlPlane: the one writer of a pipeline's control-plane state.

It routes each P4Runtime entity to the handler of its kind and holds
nothing of its own.  A refused update leaves the pipeline as it was: every
handler validates a request before it changes anything.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane.action_profiles import ActionProfiles
from testbed.p4model.control_plane.actions import Actions
from testbed.p4model.control_plane.context import Context
from testbed.p4model.control_plane.counters import Counters, DirectCounters
from testbed.p4model.control_plane.digests import Digests
from testbed.p4model.control_plane.matches import match_positions
from testbed.p4model.control_plane.meters import DirectMeters, Meters
from testbed.p4model.control_plane.p4info_index import DELETE, INSERT, MODIFY, Index, error
from testbed.p4model.control_plane.registers import Registers
from testbed.p4model.control_plane.replication import Replication
from testbed.p4model.control_plane.table_entries import TableEntries
from testbed.p4model.control_plane.value_sets import ValueSets


class ControlPlane:
    """Applies P4Runtime writes to a Pipeline and answers P4Runtime reads.

    State the pipeline does not keep in P4Runtime terms (action-profile
    members and groups as written, multicast groups, clone sessions, digest
    configurations, one-shot groups) is mirrored by the handlers; this object
    is the pipeline's only writer, so the mirror is exact."""

    def __init__(self, pipeline, p4info: p4info_pb2.P4Info) -> None:
        self.pipeline = pipeline
        self.p4info = p4info
        self.info = Index(p4info)
        for table in self.info.tables.values():
            table.positions = match_positions(pipeline, table)
        ctx = Context(pipeline, self.info)
        actions = Actions(self.info)
        profiles = ActionProfiles(ctx, actions)
        self._counters = Counters(ctx)
        self._registers = Registers(ctx)
        self._digests = Digests(ctx)
        tables = TableEntries(ctx, actions, profiles)
        direct_counters, meters, direct_meters = DirectCounters(ctx), Meters(ctx), DirectMeters(ctx)
        replication, value_sets = Replication(ctx), ValueSets(ctx)
        # entity kind (the Entity oneof) -> (write, read)
        self._handlers = {
            "table_entry": (tables.write, tables.read),
            "action_profile_member": (profiles.write_member, profiles.read_members),
            "action_profile_group": (profiles.write_group, profiles.read_groups),
            "counter_entry": (self._counters.write, self._counters.read),
            "direct_counter_entry": (direct_counters.write, direct_counters.read),
            "meter_entry": (meters.write, meters.read),
            "direct_meter_entry": (direct_meters.write, direct_meters.read),
            "register_entry": (self._registers.write, self._registers.read),
            "packet_replication_engine_entry": (replication.write, replication.read),
            "value_set_entry": (value_sets.write, value_sets.read),
            "digest_entry": (self._digests.write, self._digests.read),
        }

    def _handler(self, which: str | None) -> tuple:
        handler = self._handlers.get(which)
        if handler is None:
            if which == "extern_entry":
                raise error("UNIMPLEMENTED", "extern entries are not supported")
            raise error("UNKNOWN", "Incorrect entity type")
        return handler

    def write(self, update: p4runtime_pb2.Update) -> None:
        """Apply one update, or raise ControlPlaneError and change nothing."""
        kind = update.type
        if kind not in (INSERT, MODIFY, DELETE):
            raise error("INVALID_ARGUMENT", "Update type is not set" if kind == 0
                        else "Invalid update type")
        entity = update.entity
        which = entity.WhichOneof("entity")
        write, _read = self._handler(which)
        write(kind, getattr(entity, which))

    def read_later(self, entity: p4runtime_pb2.Entity):
        """read() in two steps, for the packet thread's sake: the switch state is taken now (call
        this inside Device.call: errors are raised here), and the returned function builds the
        messages, outside it. Counters and registers, which telemetry polls, defer the building:
        with pure-Python protobuf it is most of a poll's cost on the packet thread."""
        which = entity.WhichOneof("entity")
        if which == "counter_entry":
            values = self._counters.values(entity.counter_entry)
            return lambda: self._counters.encode(values)
        if which == "register_entry":
            values = self._registers.values(entity.register_entry)
            return lambda: self._registers.encode(values)
        found = self.read(entity)
        return lambda: found

    def read(self, entity: p4runtime_pb2.Entity) -> list:
        """The entities matching `entity`, wildcards as P4Runtime defines them."""
        which = entity.WhichOneof("entity")
        _write, read = self._handler(which)
        return read(getattr(entity, which))

    def digest_config(self, digest_id: int):
        """The DigestEntry.Config a controller set for a digest, or None: the
        P4Runtime server streams a digest's lists only once it is configured."""
        return self._digests.config(digest_id)
