"""Controller roles of the builtin P4Runtime server: who may write what.

The model is Stratum's P4RoleConfig, in a file the switch reads at start
(`--p4rt-role-config FILE`, YAML or JSON):

    roles:
      monitor:
        write: none              # reads only
      tenant_acl:
        tables: [MyIngress.acl]  # writes entries of these tables only
      ops:
        write: all               # full access, like the default role

* A role's streams arbitrate among themselves (arbitration.py, per
  (device, role)); its primary writes what the role allows.
* The default role (no role name) keeps full access, as the P4Runtime spec
  says of a stream that names no role.
* `tables`: table entries of those tables, by full name or alias, and the
  direct counter and meter entries of those tables.  Every other entity
  (indirect counters, registers, meters, action profiles, the packet
  replication engine, other tables) is outside the role.
* Only a full-access role may change the pipeline or send PacketOut.
* A Write whose updates are not all inside its role is refused whole with
  PERMISSION_DENIED naming the first update outside it; nothing of the
  batch is applied.
* With a role config, a role name it does not list is refused (NOT_FOUND),
  on the stream and in Write and Read.  Without one, any role name has full
  access (PI's behaviour; nothing is restricted).
* Reads are open to every role: a read changes nothing.

Bad files are refused at start in one line naming the file and the place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from testbed.errors import TestbedError
from testbed.p4model.p4runtime.status import RpcError

_TABLE_BOUND = ("direct_counter_entry", "direct_meter_entry")


@dataclass(frozen=True)
class Role:
    """What one role may do: write everything, nothing, or the entries of some tables."""

    name: str
    write_all: bool = False
    tables: frozenset[str] = frozenset()

    @property
    def read_only(self) -> bool:
        return not self.write_all and not self.tables


FULL = Role("", write_all=True)


class RoleConfig:
    """The roles a switch knows; `None` config (no file) means every role name has full access."""

    def __init__(self, roles: dict[str, Role] | None = None) -> None:
        self.roles = roles

    def role(self, name: str) -> Role:
        """The role `name` asks for; RpcError NOT_FOUND when a config exists and lacks it."""
        if not name or self.roles is None:
            return Role(name, write_all=True) if name else FULL
        found = self.roles.get(name)
        if found is None:
            raise RpcError("NOT_FOUND", f"role {name!r} is not in this switch's role config "
                                        f"(roles: {', '.join(sorted(self.roles)) or 'none'})")
        return found

    def check_write(self, role: Role, updates, p4info) -> None:
        """PERMISSION_DENIED unless every update is inside `role` (see the module docstring)."""
        if role.write_all:
            return
        if role.read_only:
            raise RpcError("PERMISSION_DENIED", f"role {role.name!r} is read-only: it may not Write")
        names = _table_names(p4info)
        for index, update in enumerate(updates):
            kind = update.entity.WhichOneof("entity")
            if kind == "table_entry":
                table_id = update.entity.table_entry.table_id
            elif kind in _TABLE_BOUND:
                table_id = getattr(update.entity, kind).table_entry.table_id
            else:
                raise RpcError("PERMISSION_DENIED", f"update {index}: role {role.name!r} may write only "
                                                    f"entries of its tables, not a {kind or 'empty entity'}")
            table = names.get(table_id)
            if table is None or not (table & role.tables):
                shown = sorted(table)[0] if table else f"id {table_id:#x}"
                raise RpcError("PERMISSION_DENIED", f"update {index}: table {shown} is outside role "
                                                    f"{role.name!r} (its tables: {', '.join(sorted(role.tables))})")

    @staticmethod
    def check_pipeline(role: Role, what: str) -> None:
        if not role.write_all:
            raise RpcError("PERMISSION_DENIED", f"{what} needs a full-access role; role {role.name!r} "
                                                "is limited")


def _table_names(p4info) -> dict[int, set[str]]:
    return {t.preamble.id: {n for n in (t.preamble.name, t.preamble.alias) if n} for t in p4info.tables}


def load_role_config(path: str | Path | None) -> RoleConfig:
    """The file's roles (TestbedError naming file and place), or no config for None."""
    if path is None:
        return RoleConfig(None)
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise TestbedError(f"{where}: cannot read the role config: {error.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise TestbedError(f"{where}{line}: the role config is not YAML or JSON") from None
    if not isinstance(data, dict) or set(data) != {"roles"} or not isinstance(data["roles"], dict):
        raise TestbedError(f"{where}: a role config is one mapping `roles:` of role name -> its rights")
    roles = {}
    for name, body in data["roles"].items():
        roles[str(name)] = _role(where, str(name), body)
    return RoleConfig(roles)


def _role(where: str, name: str, body) -> Role:
    place = f"{where}: role {name!r}"
    if not name:
        raise TestbedError(f"{place}: the default role (no name) always has full access; name the role")
    if not isinstance(body, dict) or not body or set(body) - {"write", "tables"}:
        raise TestbedError(f"{place}: give `write: none` or `write: all`, or `tables: [NAME, ...]`")
    if "write" in body and "tables" in body:
        raise TestbedError(f"{place}: give either `write` or `tables`, not both")
    if "write" in body:
        if body["write"] not in ("none", "all"):
            raise TestbedError(f"{place}: write is {body['write']!r}; expected none or all")
        return Role(name, write_all=body["write"] == "all")
    tables = body["tables"]
    if not isinstance(tables, list) or not tables or not all(isinstance(t, str) and t for t in tables):
        raise TestbedError(f"{place}: tables must be a non-empty list of table names")
    return Role(name, tables=frozenset(tables))
