"""Meters and direct meters.

Only MODIFY exists (INSERT and DELETE are INVALID_ARGUMENT).  A config with
-1 anywhere, or none at all, resets the meter to unconfigured (always green,
PI's old spelling); rates or bursts below -1 are INVALID_ARGUMENT.  A write
or read without an index covers every cell.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane.context import Context, cells
from testbed.p4model.control_plane.direct import direct_read_entries, direct_target, entry_key
from testbed.p4model.control_plane.p4info_index import MODIFY, Index, error, kind_name


def meter_config(config: p4runtime_pb2.MeterConfig):
    """(cir, cburst, pir, pburst), or None for "unconfigured" (PI keeps -1
    as the old spelling of an always-green meter)."""
    values = (config.cir, config.cburst, config.pir, config.pburst)
    if any(v < -1 for v in values):
        raise error("INVALID_ARGUMENT", "Negative meter rate or burst")
    if -1 in values:
        return None
    if config.cburst > 0xFFFFFFFF or config.pburst > 0xFFFFFFFF:
        raise error("UNIMPLEMENTED", "meter burst too large")
    return values


def set_meter_proto(proto: p4runtime_pb2.MeterConfig, config) -> None:
    proto.cir, proto.cburst, proto.pir, proto.pburst = config


def apply_meter_config(meter, config) -> None:
    """Set a meter state's rates, or reset it for None."""
    if config is None:
        meter.reset_config()
    else:
        meter.set_config(*config)


def new_meter_state(ctx: Context, runtime):
    """A fresh direct meter for an entry of the runtime table `runtime`, on the pipeline's clock."""
    from testbed.p4model.runtime.meters import MeterState

    return MeterState(runtime.direct_meter_kind or "packets",
                      getattr(ctx.pipeline, "clock", None) or runtime.clock)


class Meters:
    """MeterEntry writes and reads."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def write(self, kind: int, entry: p4runtime_pb2.MeterEntry) -> None:
        meter = Index.get(self.ctx.info.meters, entry.meter_id, "meter")
        name = meter.preamble.name
        if kind != MODIFY:
            raise error("INVALID_ARGUMENT", f"meter {name}: {kind_name(kind)} update "
                                            f"type not supported for meters")
        selected = cells(entry, meter.size, f"meter {name}")
        config = meter_config(entry.config) if entry.HasField("config") else None
        runtime = self.ctx.runtime("meters", name)
        for i in selected:
            if config is None:
                runtime.reset_config(i)
            else:
                runtime.set_config(i, *config)

    def read(self, request: p4runtime_pb2.MeterEntry) -> list:
        out = []
        for meter in self.ctx.info.selected(self.ctx.info.meters, request.meter_id, "meter"):
            runtime = self.ctx.runtime("meters", meter.preamble.name)
            for i in cells(request, meter.size, f"meter {meter.preamble.name}"):
                entity = p4runtime_pb2.Entity()
                me = entity.meter_entry
                me.meter_id = meter.preamble.id
                me.index.index = i
                config = runtime.get_config(i)
                if config is not None:
                    set_meter_proto(me.config, config)
                out.append(entity)
        return out


class DirectMeters:
    """DirectMeterEntry writes and reads: the meter of one table entry."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def write(self, kind: int, entry: p4runtime_pb2.DirectMeterEntry) -> None:
        if kind != MODIFY:
            raise error("INVALID_ARGUMENT", f"{kind_name(kind)} "
                                            f"update type not supported for meters")
        table, runtime, found = direct_target(self.ctx, entry, "Meter")
        config = meter_config(entry.config) if entry.HasField("config") else None
        if found.meter is None:
            found.meter = new_meter_state(self.ctx, runtime)
        apply_meter_config(found.meter, config)

    def read(self, request: p4runtime_pb2.DirectMeterEntry) -> list:
        table, entries = direct_read_entries(self.ctx, request, "Meter")
        out = []
        for e in entries:
            entity = p4runtime_pb2.Entity()
            dme = entity.direct_meter_entry
            entry_key(table, e, dme.table_entry)
            config = e.meter.get_config() if e.meter is not None else None
            if config is not None:
                set_meter_proto(dme.config, config)
            out.append(entity)
        return out
