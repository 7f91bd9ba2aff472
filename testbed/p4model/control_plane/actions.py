"""Actions: a P4Runtime Action <-> the runtime ActionCall, and a table's action scopes.

An unknown action or parameter id, a parameter given twice or missing, or a
value wider than its parameter is INVALID_ARGUMENT.  A TABLE_ONLY action as a
default, or a DEFAULT_ONLY action in an entry, is PERMISSION_DENIED (PI).
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane.p4info_index import (
    Action, Index, Table, decode_value, encode_value, error)


class Actions:
    """The P4Info's actions, looked up by id (writes) and by name (reads)."""

    def __init__(self, info: Index) -> None:
        self.info = info
        self._by_name: dict[str, Action] | None = None

    def call(self, action: p4runtime_pb2.Action, where: str):
        """A runtime ActionCall from a P4Runtime Action, every parameter checked."""
        from testbed.p4model.runtime.tables import ActionCall

        info = Index.get(self.info.actions, action.action_id, "action")
        if len(action.params) != len(info.params):
            raise error("INVALID_ARGUMENT", f"{where}: action {info.name} takes "
                                            f"{len(info.params)} parameters, got "
                                            f"{len(action.params)} (Unexpected number of action "
                                            f"parameters)")
        values = {}
        for p in action.params:
            param = info.param_by_id.get(p.param_id)
            if param is None:
                raise error("INVALID_ARGUMENT", f"{where}: action {info.name} has no parameter "
                                                f"with id {p.param_id} (Unknown action parameter)")
            if p.param_id in values:
                raise error("INVALID_ARGUMENT", f"{where}: action {info.name}: parameter "
                                                f"{param.name} given twice")
            values[p.param_id] = decode_value(p.value, param.width,
                                              f"{where}: action {info.name}, parameter {param.name}")
        return ActionCall(info.name, tuple(values[p.id] for p in info.params))

    def proto(self, call) -> p4runtime_pb2.Action:
        """The P4Runtime Action of a runtime ActionCall, byte strings canonical."""
        info = self.by_name(call.action)
        action = p4runtime_pb2.Action(action_id=info.id)
        for param, value in zip(info.params, call.args):
            action.params.add(param_id=param.id, value=encode_value(value))
        return action

    def by_name(self, name: str) -> Action:
        if self._by_name is None:
            self._by_name = {a.name: a for a in self.info.actions.values()}
        try:
            return self._by_name[name]
        except KeyError:
            raise error("INTERNAL", f"the pipeline runs action {name}, which the P4Info does "
                                    f"not list") from None

    def check_scope(self, table: Table, action_id: int, default: bool) -> None:
        """The action is one of the table's, in the role (default or entry) its scope allows."""
        Index.get(self.info.actions, action_id, "action")
        scope = table.action_scopes.get(action_id)
        name = self.info.actions[action_id].name
        if scope is None:
            raise error("INVALID_ARGUMENT", f"table {table.name}: Invalid action for table "
                                            f"({name})")
        if scope == p4info_pb2.ActionRef.TABLE_ONLY and default:
            raise error("PERMISSION_DENIED", f"table {table.name}: Cannot use TABLE_ONLY action "
                                             f"{name} as default action")
        if scope == p4info_pb2.ActionRef.DEFAULT_ONLY and not default:
            raise error("PERMISSION_DENIED", f"table {table.name}: Cannot use DEFAULT_ONLY "
                                             f"action {name} in table entry")

    def canonical(self, action: p4runtime_pb2.Action) -> None:
        """Rewrite a stored Action's parameters in P4Info order with canonical byte strings."""
        info = self.info.actions[action.action_id]
        values = {p.param_id: int.from_bytes(p.value, "big") for p in action.params}
        del action.params[:]
        for param in info.params:
            action.params.add(param_id=param.id, value=encode_value(values[param.id]))
