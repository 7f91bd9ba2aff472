"""Controller roles of the builtin P4Runtime server: who may write what.

The model is Stratum's P4RoleConfig, in a file the switch reads at start
(`--p4rt-role-config FILE`, YAML or JSON):

    default_role:
      clients: [testbed controller]   # who may use the default role (optional)
    roles:
      monitor:
        write: none              # reads only
        clients: [testbed telemetry]
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
* Every role may read (a read changes nothing), within the `clients` rule.
* `clients` binds a role to the common names of the TLS client certificates
  that may use it (p4model/tls.py, with client authentication): a stream,
  Write, pipeline change or Read in that role from any other client (or
  over a plain connection) gets PERMISSION_DENIED.  A role without
  `clients` takes any client that reached the server.

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
    clients: frozenset[str] | None = None  # certificate common names that may use it; None: any

    @property
    def read_only(self) -> bool:
        return not self.write_all and not self.tables


FULL = Role("", write_all=True)


class RoleConfig:
    """The roles a switch knows; `None` config (no file) means every role name has full access."""

    def __init__(self, roles: dict[str, Role] | None = None, default: Role = FULL) -> None:
        self.roles = roles
        self.default = default

    def role(self, name: str) -> Role:
        """The role `name` asks for; RpcError NOT_FOUND when a config exists and lacks it."""
        if not name:
            return self.default
        if self.roles is None:
            return Role(name, write_all=True)
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

    def unknown_tables(self, p4info) -> list[str]:
        """'role: table' for each table a role names that the program lacks (it can never be written)."""
        if self.roles is None:
            return []
        known = set().union(*_table_names(p4info).values()) if p4info.tables else set()
        return [f"{role.name}: {table}" for role in self.roles.values() for table in sorted(role.tables)
                if table not in known]

    @staticmethod
    def check_client(role: Role, client: str | None) -> None:
        """PERMISSION_DENIED unless `client` (its certificate's common name; None: no certificate)
        may use `role`."""
        if role.clients is not None and client not in role.clients:
            who = f"client {client!r}" if client else "a client without a certificate"
            what = f"role {role.name!r}" if role.name else "the default role"
            raise RpcError("PERMISSION_DENIED", f"{who} may not act in {what}")

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
    if not isinstance(data, dict) or not isinstance(data.get("roles"), dict) \
            or set(data) - {"roles", "default_role"}:
        raise TestbedError(f"{where}: a role config is a mapping `roles:` of role name -> its rights "
                           "(and optionally `default_role: {clients: [...]}`)")
    roles = {}
    for name, body in data["roles"].items():
        roles[str(name)] = _role(where, str(name), body)
    default = FULL
    if "default_role" in data:
        body = data["default_role"]
        if not isinstance(body, dict) or set(body) != {"clients"}:
            raise TestbedError(f"{where}: default_role takes only `clients: [NAME, ...]` (it always has "
                               "full access)")
        default = Role("", write_all=True, clients=_clients(f"{where}: default_role", body["clients"]))
    return RoleConfig(roles, default)


def _clients(place: str, names) -> frozenset[str]:
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise TestbedError(f"{place}: clients must be a non-empty list of certificate common names")
    return frozenset(names)


def _role(where: str, name: str, body) -> Role:
    place = f"{where}: role {name!r}"
    if not name:
        raise TestbedError(f"{place}: the default role (no name) always has full access; name the role")
    if not isinstance(body, dict) or set(body) - {"write", "tables", "clients"} or \
            ("write" in body) == ("tables" in body):
        raise TestbedError(f"{place}: give either `write: none`, `write: all` or `tables: [NAME, ...]` "
                           "(and optionally `clients: [NAME, ...]`)")
    clients = _clients(place, body["clients"]) if "clients" in body else None
    if "write" in body:
        if body["write"] not in ("none", "all"):
            raise TestbedError(f"{place}: write is {body['write']!r}; expected none or all")
        return Role(name, write_all=body["write"] == "all", clients=clients)
    tables = body["tables"]
    if not isinstance(tables, list) or not tables or not all(isinstance(t, str) and t for t in tables):
        raise TestbedError(f"{place}: tables must be a non-empty list of table names")
    return Role(name, tables=frozenset(tables), clients=clients)
