"""Which table entries a DirectCounterEntry or DirectMeterEntry addresses.

The entry must name a table that has the direct resource and, for one entry,
a match key that is installed.  The default entry's direct resources are
UNIMPLEMENTED, as is a read over every table at once.
"""

from __future__ import annotations

from testbed.p4model.control_plane.context import Context
from testbed.p4model.control_plane.matches import match_key, match_protos
from testbed.p4model.control_plane.p4info_index import Index, error


def _resource(table, kind_name: str) -> int:
    return table.direct_counter_id if kind_name == "Counter" else table.direct_meter_id


def direct_target(ctx: Context, entry, kind_name: str):
    """(table, runtime table, runtime entry) a Direct*Entry addresses
    (`kind_name` is 'Counter' or 'Meter')."""
    if not entry.HasField("table_entry"):
        raise error("INVALID_ARGUMENT", f"Missing table_entry field in Direct{kind_name}Entry")
    te = entry.table_entry
    table = Index.get(ctx.info.tables, te.table_id, "table")
    if not _resource(table, kind_name):
        raise error("INVALID_ARGUMENT", f"table {table.name}: Table has no direct "
                                        f"{kind_name.lower()}s")
    if te.is_default_action:
        raise error("UNIMPLEMENTED", f"table {table.name}: direct {kind_name.lower()}s of "
                                     f"the default entry are not supported")
    runtime = ctx.runtime("tables", table.name)
    match = match_key(table, te)
    found = runtime.find(match, te.priority)
    if found is None:
        raise error("INVALID_ARGUMENT", f"table {table.name}: Cannot map table entry to "
                                        f"handle (no such entry)")
    return table, runtime, found


def direct_read_entries(ctx: Context, request, kind: str) -> tuple:
    """The table and entries a direct counter/meter read names (`kind` is
    'Counter' or 'Meter'): one entry, or every entry of one table."""
    if not request.HasField("table_entry"):
        raise error("INVALID_ARGUMENT", f"Missing table_entry field in Direct{kind}Entry")
    te = request.table_entry
    if te.table_id == 0:
        raise error("UNIMPLEMENTED", f"Reading all direct {kind.lower()}s for ALL tables is not "
                                     "supported yet")
    if len(te.match) or te.is_default_action:
        table, _runtime, found = direct_target(ctx, request, kind)
        return table, [found]
    table = Index.get(ctx.info.tables, te.table_id, "table")
    if not _resource(table, kind):
        raise error("INVALID_ARGUMENT", f"table {table.name}: Table has no direct {kind.lower()}s")
    return table, ctx.runtime("tables", table.name).entries()


def entry_key(table, e, te) -> None:
    """Fill a Direct*Entry's table_entry with the key of runtime entry `e`: table, match, priority."""
    te.table_id = table.id
    te.match.extend(match_protos(table, e.match))
    te.priority = e.priority
