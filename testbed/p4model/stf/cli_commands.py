"""STF control lines -> simple_switch_CLI commands, for the bmv2 target.

Names are resolved as the builtin target resolves them (names.py: a table
or action by exact name or unique suffix, a key field by `.`-suffix), but
against the bmv2 JSON that p4c-bm2-ss wrote, whose table keys and action
parameters are in the order the CLI wants.  Key values are spelt for the
CLI from their match kind (values.py): exact `v`, lpm `v/len`, ternary
`v&&&mask`, range `lo->hi`; a key the line leaves out is don't-care (exact
0, as the reference harness writes).  An STF priority p becomes bmv2
priority 10000 - p (bmv2 prefers the smaller value, STF the larger), given
only to tables with ternary or range keys.  The other control lines
(mirroring_*, mc_*, counter_*, register_*, meter_*) are CLI commands
already and pass through.
"""

from __future__ import annotations

from testbed.p4model.stf import names, values
from testbed.p4model.stf.parser import StfError

_PRIORITY_BASE = 10000


class CliTranslator:
    """Turns parsed STF control commands into CLI lines for one bmv2 JSON."""

    def __init__(self, bmv2_json: dict, path: str = "<stf>") -> None:
        self.path = path
        header_types = {t["name"]: {f[0]: f[1] for f in t["fields"]}
                        for t in bmv2_json.get("header_types", [])}
        self.widths = {}
        for h in bmv2_json.get("headers", []):
            fields = header_types.get(h["header_type"], {})
            self.widths[h["name"]] = dict(fields, **{"$valid$": 1})
        self.tables = {}
        for pipe in bmv2_json.get("pipelines", []):
            for t in pipe.get("tables", []):
                self.tables[t["name"]] = t
        self.params = {}
        for a in bmv2_json.get("actions", []):
            self.params[a["name"]] = [(p["name"], p["bitwidth"]) for p in a["runtime_data"]]

    def _fail(self, cmd, message: str) -> StfError:
        return StfError(self.path, cmd.line, message)

    def _width(self, key: dict) -> int:
        target = key.get("target")
        if isinstance(target, list) and len(target) == 2:
            width = self.widths.get(target[0], {}).get(target[1])
            if width:
                return width
        return 128

    def _table(self, cmd) -> dict:
        try:
            return self.tables[names.resolve(cmd.table, self.tables, "table")]
        except names.NameError_ as exc:
            raise self._fail(cmd, str(exc)) from None

    def _action(self, cmd, table: dict) -> list:
        own = {name: self.params.get(name, []) for name in table.get("actions", [])}
        try:
            name = names.resolve(cmd.action.name, own, f"action of table {table['name']}")
        except names.NameError_ as exc:
            raise self._fail(cmd, str(exc)) from None
        given = dict(cmd.action.args)
        words = [name]
        for param, _width in own[name]:
            if param not in given:
                raise self._fail(cmd, f"action {name} needs parameter {param}")
            words.append(str(self._number(cmd, given.pop(param), f"parameter {param}")))
        if given:
            raise self._fail(cmd, f"action {name} has no parameter {sorted(given)[0]!r}")
        return words

    def _number(self, cmd, text: str, what: str) -> int:
        try:
            return values.number(text)
        except values.ValueError_ as exc:
            raise self._fail(cmd, f"{what}: {exc}") from None

    def _key(self, cmd, key: dict, text) -> str:
        kind, width = key["match_type"], self._width(key)
        try:
            if kind in ("exact", "valid"):
                return str(values.number(text)) if text is not None else "0"
            if kind == "lpm":
                value, length = values.lpm(text, width) if text is not None else (0, 0)
                return f"{value}/{length}"
            if kind == "ternary":
                value, mask = values.ternary(text, width) if text is not None else (0, 0)
                return f"{value & mask}&&&{mask}"
            if kind == "range":
                low, high = (values.value_range(text) if text is not None
                             else (0, (1 << width) - 1))
                return f"{low}->{high}"
        except values.ValueError_ as exc:
            raise self._fail(cmd, f"key {key['name']}: {exc}") from None
        raise self._fail(cmd, f"key {key['name']}: match kind {kind!r} is not supported "
                              f"by the bmv2 runner")

    def command(self, cmd) -> str:
        if cmd.kind == "add":
            table = self._table(cmd)
            fields = [k["name"] for k in table["key"]]
            given = {}
            for name, text in cmd.keys:
                try:
                    given[names.resolve_key(name, fields, table["name"])] = text
                except names.NameError_ as exc:
                    raise self._fail(cmd, str(exc)) from None
            keys = [self._key(cmd, k, given.get(k["name"])) for k in table["key"]]
            action = self._action(cmd, table)
            prio = []
            if any(k["match_type"] in ("ternary", "range") for k in table["key"]):
                if cmd.priority is None:
                    raise self._fail(cmd, f"table {table['name']} has ternary or range keys: "
                                          f"its entries need a priority")
                prio = [str(_PRIORITY_BASE - cmd.priority)]
            return " ".join(["table_add", table["name"], action[0], *keys, "=>", *action[1:],
                             *prio])
        if cmd.kind == "setdefault":
            table = self._table(cmd)
            return " ".join(["table_set_default", table["name"], *self._action(cmd, table)])
        return " ".join([cmd.kind, *cmd.words])
