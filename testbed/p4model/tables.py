"""Match-action tables of the builtin P4 target.

A Table holds the entries the control plane (or the program's const
entries) installed and answers per-packet lookups.  The lookup structure
is chosen once, when the table is built, from the kinds of its keys:

* only exact keys: one dict keyed by the key tuple (one probe);
* one lpm key plus exact keys: one dict per prefix length, probed from the
  longest present length down (the lengths are kept sorted);
* anything with ternary / range / optional keys (or several lpm keys):
  the entries sorted by priority, largest first, then by age; the first
  entry whose masked key matches wins.  Every entry's mask-able fields are
  folded into one big integer mask/value pair, so a probe is one AND and
  one compare (plus the range checks, if any).

'selector' keys are not part of an entry's match: they only feed the
action selector's hash, which the pipeline computes.  `lookup()` takes the
values of the non-selector keys, in key order.

Every control-plane write is validated as a P4Runtime server does and
refused with a ControlPlaneError carrying the gRPC code.
"""

from __future__ import annotations

from bisect import insort
from dataclasses import dataclass, field
from typing import Optional

from testbed.p4model.errors import ControlPlaneError
from testbed.p4model.runtime.meters import MeterState

# bmv2 keeps a value of type `error` in a 32-bit field holding its number (declaration order), and
# a table keyed on one matches that number; p4c's P4Info gives such a key no bitwidth.
ERROR_FIELD_WIDTH = 32

MATCH_KINDS = frozenset({"exact", "lpm", "ternary", "range", "optional", "selector"})
_PRIORITY_KINDS = frozenset({"ternary", "range", "optional"})
COUNTER_KINDS = frozenset({"packets", "bytes", "packets_and_bytes"})
METER_KINDS = frozenset({"packets", "bytes"})


@dataclass(frozen=True)
class MatchField:
    """One key of a table, in key order."""

    name: str
    match_kind: str
    width: int


@dataclass
class ActionCall:
    """What an entry (or an action-profile member) runs."""

    action: str
    args: tuple = ()


@dataclass(eq=False)
class TableEntry:
    """One entry.  `match` has one item per non-selector key: exact int,
    lpm (value, prefix_len), ternary (value, mask), range (lo, hi),
    optional int or None (wildcard)."""

    match: tuple
    priority: int = 0
    action: Optional[ActionCall] = None
    member_id: Optional[int] = None
    group_id: Optional[int] = None
    is_const: bool = False
    counter_packets: int = 0
    counter_bytes: int = 0
    meter: Optional[MeterState] = None
    # order of insertion; breaks priority ties (older wins).  Internal.
    seq: int = field(default=0, repr=False, compare=False)


def _err(code: str, message: str) -> ControlPlaneError:
    return ControlPlaneError(code, message)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Table:
    """A P4 table: entries, default action, and a fast lookup."""

    def __init__(self, name: str, fields: list, action_names: list,
                 default: ActionCall, default_is_const: bool, size: int,
                 const_entries=(), entries_are_const: bool = True,
                 implementation=None,
                 direct_counter_kind: Optional[str] = None,
                 direct_meter_kind: Optional[str] = None,
                 clock=None,
                 action_params: Optional[dict] = None,
                 table_only: frozenset = frozenset(),
                 default_only: frozenset = frozenset()) -> None:
        """`action_params` (optional): action name -> tuple of parameter
        widths, used to check the count and range of action data.
        `table_only` / `default_only`: actions annotated @tableonly /
        @defaultonly (refused as default / as entry action)."""
        self.name = name
        self.fields = list(fields)
        for f in self.fields:
            if f.match_kind not in MATCH_KINDS:
                raise ValueError(f"table {name}: unknown match kind {f.match_kind!r}")
            if f.width < 0:
                raise ValueError(f"table {name}: negative width for {f.name}")
        self.match_fields = [f for f in self.fields if f.match_kind != "selector"]
        self.selector_fields = [f for f in self.fields if f.match_kind == "selector"]
        self.action_names = list(action_names)
        self._action_set = frozenset(action_names)
        self.action_params = dict(action_params) if action_params else None
        self.table_only = frozenset(table_only)
        self.default_only = frozenset(default_only)
        self.size = size
        self.entries_are_const = entries_are_const
        self.implementation = implementation
        if direct_counter_kind is not None and direct_counter_kind not in COUNTER_KINDS:
            raise ValueError(f"table {name}: bad direct counter kind {direct_counter_kind!r}")
        if direct_meter_kind is not None and direct_meter_kind not in METER_KINDS:
            raise ValueError(f"table {name}: bad direct meter kind {direct_meter_kind!r}")
        self.direct_counter_kind = direct_counter_kind
        self.direct_meter_kind = direct_meter_kind
        self.clock = clock
        self.needs_priority = any(f.match_kind in _PRIORITY_KINDS for f in self.match_fields)
        self._initial_default = default
        self.default = default
        self.default_is_const = default_is_const
        self._seq = 0
        self._by_id: dict = {}   # identity key -> entry
        kinds = [f.match_kind for f in self.match_fields]
        n_lpm = kinds.count("lpm")
        if all(k == "exact" for k in kinds):
            self._matcher = _ExactMatcher()
        elif n_lpm == 1 and not self.needs_priority:
            self._matcher = _LpmMatcher(self.match_fields)
        else:
            self._matcher = _PriorityMatcher(self.match_fields)
        self.lookup = self._matcher.lookup
        self._install_const(list(const_entries))

    # ---------------------------------------------------------------- lookup

    def lookup(self, key: tuple):  # replaced per instance by the matcher's
        """The matching entry for the non-selector key values, or None."""
        return self._matcher.lookup(key)

    # -------------------------------------------------------------- entries

    def _install_const(self, entries: list) -> None:
        """Program-given entries (`const entries` or `entries`).  In a
        priority table entries without an explicit priority get n, n-1,
        ..., 1 in listed order, so the earlier listed wins, as p4c's bmv2
        back end does.  They are const (kept by clear(), read back with
        is_const) only when the table's entries are const."""
        n = len(entries)
        for i, entry in enumerate(entries):
            if self.needs_priority and not entry.priority:
                entry.priority = n - i
            entry.is_const = self.entries_are_const
            self._check_entry(entry, const=True)
            ident = self._ident(entry.match, entry.priority)
            if ident in self._by_id:
                raise _err("ALREADY_EXISTS",
                           f"table {self.name}: duplicate const entry {entry.match}")
            self._add(entry, ident)

    def _ident(self, match: tuple, priority: int):
        return (match, priority) if self.needs_priority else match

    def _add(self, entry: TableEntry, ident) -> None:
        self._seq += 1
        entry.seq = self._seq
        if self.direct_meter_kind is not None and entry.meter is None:
            entry.meter = MeterState(self.direct_meter_kind, self.clock)
        self._by_id[ident] = entry
        self._matcher.add(entry)
        self._ref(entry, +1)

    def _ref(self, entry: TableEntry, delta: int) -> None:
        profile = self.implementation
        if profile is None:
            return
        if entry.member_id is not None:
            profile.ref_member(entry.member_id, delta)
        elif entry.group_id is not None:
            profile.ref_group(entry.group_id, delta)

    def _check_writable(self) -> None:
        if self.entries_are_const:
            raise _err("PERMISSION_DENIED",
                       f"table {self.name} has const entries; it cannot be written")

    def insert(self, entry: TableEntry) -> None:
        self._check_writable()
        self._check_entry(entry)
        ident = self._ident(entry.match, entry.priority)
        if ident in self._by_id:
            raise _err("ALREADY_EXISTS", f"table {self.name}: entry already exists")
        if len(self._by_id) >= self.size:
            raise _err("RESOURCE_EXHAUSTED",
                       f"table {self.name} is full ({self.size} entries)")
        entry.is_const = False
        self._add(entry, ident)

    def modify(self, entry: TableEntry) -> None:
        """Replace the action (or member / group) of an existing entry.
        Its direct counter values and meter state stay; a meter config
        given with the new entry replaces the old one."""
        self._check_writable()
        self._check_entry(entry)
        old = self._by_id.get(self._ident(entry.match, entry.priority))
        if old is None:
            raise _err("NOT_FOUND", f"table {self.name}: no such entry to modify")
        self._ref(entry, +1)
        self._ref(old, -1)
        old.action = entry.action
        old.member_id = entry.member_id
        old.group_id = entry.group_id
        if entry.meter is not None and old.meter is not None and entry.meter is not old.meter:
            config = entry.meter.get_config()
            if config is None:
                old.meter.reset_config()
            else:
                old.meter.set_config(*config)

    def delete(self, match: tuple, priority: int = 0) -> None:
        self._check_writable()
        match = self._canonical_match(match)
        ident = self._ident(match, priority)
        entry = self._by_id.get(ident)
        if entry is None:
            raise _err("NOT_FOUND", f"table {self.name}: no such entry to delete")
        del self._by_id[ident]
        self._matcher.remove(entry)
        self._ref(entry, -1)

    def find(self, match: tuple, priority: int = 0) -> Optional[TableEntry]:
        try:
            match = self._canonical_match(match)
        except (ControlPlaneError, TypeError):
            return None
        return self._by_id.get(self._ident(match, priority))

    def entries(self) -> list:
        """All entries (const ones included) in insertion order."""
        return sorted(self._by_id.values(), key=lambda e: e.seq)

    def __len__(self) -> int:
        return len(self._by_id)

    def clear(self) -> None:
        """Remove every non-const entry and restore nothing else."""
        for ident, entry in list(self._by_id.items()):
            if not entry.is_const:
                del self._by_id[ident]
                self._matcher.remove(entry)
                self._ref(entry, -1)

    # ------------------------------------------------------- default action

    def set_default(self, call: ActionCall) -> None:
        if self.default_is_const:
            raise _err("PERMISSION_DENIED",
                       f"table {self.name}: the default action is const")
        self._check_action(call, default=True)
        self.default = call

    def reset_default(self) -> None:
        """Back to the program's default_action (P4Runtime: a MODIFY of the
        default entry without an action)."""
        if self.default_is_const:
            raise _err("PERMISSION_DENIED",
                       f"table {self.name}: the default action is const")
        self.default = self._initial_default

    # ----------------------------------------------------------- validation

    def _canonical_match(self, match) -> tuple:
        if not isinstance(match, tuple):
            try:
                match = tuple(match)
            except TypeError:
                raise _err("INVALID_ARGUMENT",
                           f"table {self.name}: match must be a sequence") from None
        if len(match) != len(self.match_fields):
            raise _err("INVALID_ARGUMENT",
                       f"table {self.name}: {len(match)} match fields given, "
                       f"{len(self.match_fields)} expected")
        out = []
        for f, item in zip(self.match_fields, match):
            out.append(_check_field(self.name, f, item))
        return tuple(out)

    def _check_entry(self, entry: TableEntry, const: bool = False) -> None:
        if not isinstance(entry, TableEntry):
            raise _err("INVALID_ARGUMENT", f"table {self.name}: not a table entry")
        entry.match = self._canonical_match(entry.match)
        if not _is_int(entry.priority) or entry.priority < 0:
            raise _err("INVALID_ARGUMENT",
                       f"table {self.name}: bad priority {entry.priority!r}")
        if self.needs_priority:
            if entry.priority == 0:
                raise _err("INVALID_ARGUMENT",
                           f"table {self.name}: a priority (> 0) is required "
                           "for tables with ternary, range or optional keys")
            if entry.priority >= 1 << 31:
                raise _err("INVALID_ARGUMENT", f"table {self.name}: priority out of range")
        elif entry.priority != 0:
            raise _err("INVALID_ARGUMENT",
                       f"table {self.name}: a priority is not allowed for tables "
                       "with only exact and lpm keys")
        if self.implementation is None or (const and entry.action is not None):
            if entry.member_id is not None or entry.group_id is not None:
                raise _err("INVALID_ARGUMENT",
                           f"table {self.name} is direct: entries need an action, "
                           "not a member or group")
            if entry.action is None:
                raise _err("INVALID_ARGUMENT", f"table {self.name}: entry has no action")
            self._check_action(entry.action, default=False)
            return
        if entry.action is not None:
            raise _err("INVALID_ARGUMENT",
                       f"table {self.name} uses action profile "
                       f"{self.implementation.name}: entries take a member or group")
        if (entry.member_id is None) == (entry.group_id is None):
            raise _err("INVALID_ARGUMENT",
                       f"table {self.name}: give exactly one of member id and group id")
        profile = self.implementation
        if entry.member_id is not None:
            if not profile.has_member(entry.member_id):
                raise _err("NOT_FOUND", f"table {self.name}: member {entry.member_id} "
                                        f"does not exist in {profile.name}")
        else:
            if not profile.with_selector:
                raise _err("INVALID_ARGUMENT",
                           f"action profile {profile.name} has no selector: "
                           "groups are not allowed")
            if not profile.has_group(entry.group_id):
                raise _err("NOT_FOUND", f"table {self.name}: group {entry.group_id} "
                                        f"does not exist in {profile.name}")

    def _check_action(self, call, default: bool) -> None:
        if not isinstance(call, ActionCall):
            raise _err("INVALID_ARGUMENT", f"table {self.name}: not an action call")
        if call.action not in self._action_set:
            raise _err("INVALID_ARGUMENT",
                       f"table {self.name}: action {call.action} is not in its action list")
        if default and call.action in self.table_only:
            raise _err("INVALID_ARGUMENT",
                       f"table {self.name}: action {call.action} is @tableonly")
        if not default and call.action in self.default_only:
            raise _err("INVALID_ARGUMENT",
                       f"table {self.name}: action {call.action} is @defaultonly")
        check_action_args(self.name, call, self.action_params)


def check_action_args(owner: str, call: ActionCall, action_params: Optional[dict]) -> None:
    """Action data: the right count, each an int that fits its width."""
    if not isinstance(call.args, tuple):
        try:
            call.args = tuple(call.args)
        except TypeError:
            raise _err("INVALID_ARGUMENT", f"{owner}: action data must be a sequence") from None
    for arg in call.args:
        if not _is_int(arg) or arg < 0:
            raise _err("INVALID_ARGUMENT", f"{owner}: bad action argument {arg!r}")
    if action_params is None:
        return
    widths = action_params.get(call.action)
    if widths is None:
        return
    if len(call.args) != len(widths):
        raise _err("INVALID_ARGUMENT",
                   f"{owner}: action {call.action} takes {len(widths)} arguments, "
                   f"{len(call.args)} given")
    for i, (arg, width) in enumerate(zip(call.args, widths)):
        if arg >> width:
            raise _err("INVALID_ARGUMENT",
                       f"{owner}: argument {i + 1} of {call.action} ({arg:#x}) "
                       f"does not fit {width} bits")


def _fits(value, width: int) -> bool:
    return _is_int(value) and value >= 0 and not value >> width


def _check_field(table: str, f: MatchField, item):
    """Validate one match item against its key; return it in canonical form."""
    kind, width = f.match_kind, f.width
    where = f"table {table}, key {f.name}"
    if kind == "exact":
        if not _fits(item, width):
            raise _err("INVALID_ARGUMENT", f"{where}: exact value {item!r} does not fit {width} bits")
        return item
    if kind == "optional":
        if item is None:
            return None
        if not _fits(item, width):
            raise _err("INVALID_ARGUMENT", f"{where}: value {item!r} does not fit {width} bits")
        return item
    if not (isinstance(item, tuple) and len(item) == 2):
        if isinstance(item, list) and len(item) == 2:
            item = tuple(item)
        else:
            raise _err("INVALID_ARGUMENT", f"{where}: expected a pair for a {kind} key, got {item!r}")
    a, b = item
    if kind == "lpm":
        if not _is_int(b) or not 0 <= b <= width:
            raise _err("INVALID_ARGUMENT", f"{where}: prefix length {b!r} not in 0..{width}")
        if not _fits(a, width):
            raise _err("INVALID_ARGUMENT", f"{where}: value {a!r} does not fit {width} bits")
        if a & ((1 << (width - b)) - 1):
            raise _err("INVALID_ARGUMENT",
                       f"{where}: value {a:#x} has bits set beyond the /{b} prefix")
        return (a, b)
    if kind == "ternary":
        if not _fits(a, width) or not _fits(b, width):
            raise _err("INVALID_ARGUMENT", f"{where}: value/mask do not fit {width} bits")
        if a & ~b:
            raise _err("INVALID_ARGUMENT",
                       f"{where}: value {a:#x} has bits outside mask {b:#x}")
        return (a, b)
    if kind == "range":
        if not _fits(a, width) or not _fits(b, width):
            raise _err("INVALID_ARGUMENT", f"{where}: range bounds do not fit {width} bits")
        if a > b:
            raise _err("INVALID_ARGUMENT", f"{where}: empty range {a}..{b}")
        return (a, b)
    raise _err("INVALID_ARGUMENT", f"{where}: match kind {kind} takes no entry value")


# ---------------------------------------------------------------- matchers


class _ExactMatcher:
    """All keys exact: the entry's match tuple is the dict key."""

    def __init__(self) -> None:
        self._table: dict = {}
        self.lookup = self._table.get

    def add(self, entry: TableEntry) -> None:
        self._table[entry.match] = entry

    def remove(self, entry: TableEntry) -> None:
        self._table.pop(entry.match, None)


class _LpmMatcher:
    """One lpm key plus exact keys: one dict per prefix length.  `_levels`
    is (prefix_len, mask, dict) sorted longest first; only lengths that
    have entries are present."""

    def __init__(self, fields: list) -> None:
        self._index = next(i for i, f in enumerate(fields) if f.match_kind == "lpm")
        self._width = fields[self._index].width
        self._single = len(fields) == 1
        self._by_len: dict = {}
        self._levels: list = []
        self.lookup = self._lookup_single if self._single else self._lookup_multi

    def _mask(self, plen: int) -> int:
        w = self._width
        return ((1 << plen) - 1) << (w - plen)

    def _dict_key(self, match: tuple):
        value = match[self._index][0]
        if self._single:
            return value
        i = self._index
        return (match[:i] + match[i + 1:], value)

    def add(self, entry: TableEntry) -> None:
        plen = entry.match[self._index][1]
        level = self._by_len.get(plen)
        if level is None:
            level = self._by_len[plen] = {}
            self._rebuild()
        level[self._dict_key(entry.match)] = entry

    def remove(self, entry: TableEntry) -> None:
        plen = entry.match[self._index][1]
        level = self._by_len.get(plen)
        if level is None:
            return
        level.pop(self._dict_key(entry.match), None)
        if not level:
            del self._by_len[plen]
            self._rebuild()

    def _rebuild(self) -> None:
        self._levels = [(plen, self._mask(plen), self._by_len[plen])
                        for plen in sorted(self._by_len, reverse=True)]

    def _lookup_single(self, key: tuple):
        value = key[0]
        for _plen, mask, level in self._levels:
            entry = level.get(value & mask)
            if entry is not None:
                return entry
        return None

    def _lookup_multi(self, key: tuple):
        i = self._index
        value = key[i]
        rest = key[:i] + key[i + 1:]
        for _plen, mask, level in self._levels:
            entry = level.get((rest, value & mask))
            if entry is not None:
                return entry
        return None


class _PriorityMatcher:
    """Ternary/range/optional tables (and tables with several lpm keys),
    by tuple-space search.  Every non-range key is a slice of one
    concatenated integer K; an entry is a (mask, value) pair over K plus
    range checks.  Entries are bucketed by mask, then by value, so a probe
    is one dict lookup per distinct mask (ACL-style tables have few).  The
    mask groups are visited best-first and the search stops as soon as no
    remaining group can beat the best match found.

    Rank (an int, smaller wins): larger priority first; with priority 0
    (multi-lpm tables) more mask bits first; then older first."""

    _SEQ_BITS = 48

    def __init__(self, fields: list) -> None:
        self._fields = fields
        offsets = []
        total = 0
        for f in reversed(fields):
            offsets.append(total)
            total += f.width
        self._offsets = list(reversed(offsets))
        self._total = total
        self._spec_bits = max(16, total.bit_length() + 1)
        self._widths = [f.width for f in fields]
        self._groups: dict = {}     # mask -> {value: [(rank, ranges, entry), ...]}
        self._best: dict = {}       # mask -> best rank in that group
        self._order: list = []      # [(best rank, mask, buckets)] best first
        self._compiled: dict = {}   # id(entry) -> (mask, value, rank)
        self.lookup = self._lookup_one if len(fields) == 1 else self._lookup_multi

    def _compile(self, entry: TableEntry):
        mask = 0
        value = 0
        ranges = []
        for i, (f, item) in enumerate(zip(self._fields, entry.match)):
            full = (1 << f.width) - 1
            kind = f.match_kind
            if kind == "exact":
                m, v = full, item
            elif kind == "optional":
                m, v = (0, 0) if item is None else (full, item)
            elif kind == "ternary":
                v, m = item
            elif kind == "lpm":
                v, plen = item
                m = ((1 << plen) - 1) << (f.width - plen)
            else:  # range
                lo, hi = item
                if lo != 0 or hi != full:
                    ranges.append((i, lo, hi))
                continue
            shift = self._offsets[i]
            mask |= m << shift
            value |= v << shift
        spec = 0 if entry.priority else self._total - bin(mask).count("1")
        rank = ((((1 << 32) - entry.priority) << self._spec_bits | spec)
                << self._SEQ_BITS) | entry.seq
        return mask, value, tuple(ranges), rank

    def add(self, entry: TableEntry) -> None:
        mask, value, ranges, rank = self._compile(entry)
        self._compiled[id(entry)] = (mask, value, rank)
        buckets = self._groups.setdefault(mask, {})
        insort(buckets.setdefault(value, []), (rank, ranges, entry), key=lambda r: r[0])
        best = self._best.get(mask)
        if best is None or rank < best:
            self._best[mask] = rank
            self._reorder()

    def remove(self, entry: TableEntry) -> None:
        compiled = self._compiled.pop(id(entry), None)
        if compiled is None:
            return
        mask, value, rank = compiled
        buckets = self._groups[mask]
        rows = buckets[value]
        rows[:] = [row for row in rows if row[2] is not entry]
        if not rows:
            del buckets[value]
        if not buckets:
            del self._groups[mask]
            del self._best[mask]
        elif rank == self._best[mask]:
            self._best[mask] = min(r[0][0] for r in buckets.values())
        else:
            return
        self._reorder()

    def _reorder(self) -> None:
        """The mask groups, best first (few: one per distinct mask)."""
        self._order = sorted(((self._best[mask], mask, buckets)
                              for mask, buckets in self._groups.items()),
                             key=lambda g: g[0])

    def _lookup_multi(self, key: tuple):
        k = 0
        for width, v in zip(self._widths, key):
            k = (k << width) | v
        return self._search(k, key)

    def _lookup_one(self, key: tuple):
        return self._search(key[0], key)

    def _search(self, k: int, key: tuple):
        best = None
        best_rank = 0
        for group_rank, mask, buckets in self._order:
            if best is not None and group_rank > best_rank:
                break
            rows = buckets.get(k & mask)
            if rows is None:
                continue
            for rank, ranges, entry in rows:
                if best is not None and rank > best_rank:
                    break
                for i, lo, hi in ranges:
                    if not lo <= key[i] <= hi:
                        break
                else:
                    best, best_rank = entry, rank
                    break
        return best
