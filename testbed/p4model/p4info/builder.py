"""Build the P4Info message of a program, equal to p4c's (p4runtime 1.4 fields).

Two passes as in p4c: collect every control-plane symbol (names and @id
values) so that ids and aliases can be computed globally, then emit the
messages in p4c's order (see program.py).
"""

from __future__ import annotations

import re
from typing import Optional

from p4.config.v1 import p4info_pb2

from testbed.p4model.runtime import tableinfo
from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import ir
from testbed.p4model.frontend.annotations import name_annotation
from testbed.p4model.p4info import annots as anno
from testbed.p4model.p4info import naming as nm
from testbed.p4model.p4info import program as pv
from testbed.p4model.p4info.typespec import (TypeInfoBuilder, bytestring, newtype_name,
                                             type_cp_name, width)

DEFAULT_TABLE_SIZE = 1024

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_COUNTER_UNITS = {"packets": p4info_pb2.CounterSpec.PACKETS, "bytes": p4info_pb2.CounterSpec.BYTES,
                  "packets_and_bytes": p4info_pb2.CounterSpec.BOTH}
_METER_UNITS = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}
_EXTERN_PREFIX = {"counter": nm.COUNTER, "direct_counter": nm.DIRECT_COUNTER, "meter": nm.METER,
                  "direct_meter": nm.DIRECT_METER, "register": nm.REGISTER,
                  "action_profile": nm.ACTION_PROFILE, "action_selector": nm.ACTION_PROFILE}
_PROFILE_ONLY = ("max_group_size", "selector_size_semantics", "max_member_weight")


def _extern_name(instance: ir.Instance) -> str:
    return instance.type.decl.name if isinstance(instance.type, ir.ExternT) else ""


def _through_typedef(instance: ir.Instance) -> bool:
    """p4c's P4Runtime serializer resolves an instance's extern type by the
    name it is written with: one declared through a typedef name is not an
    extern to it (no P4Info entry, no type_info)."""
    return isinstance(instance.type, ir.ExternT) and bool(instance.type.typedef)


def _hidden(annotations) -> bool:
    return any(a.name == "hidden" for a in annotations)


def _const_int(value) -> Optional[int]:
    if isinstance(value, ir.Cast):
        value = value.operand
    if isinstance(value, ir.Const) and isinstance(value.value, (int, bool)):
        return int(value.value)
    if isinstance(value, int):
        return value
    return None


def _enum_member(value) -> Optional[str]:
    if isinstance(value, ir.Const) and isinstance(value.type, ir.EnumT):
        members = value.type.members
        if value.type.underlying is None and 0 <= value.value < len(members):
            return members[value.value]
        for name, v in value.type.values.items():
            if v == value.value:
                return name
    return None


def _digest_type(call: ir.ExternFunctionCall) -> Optional[ir.Type]:
    if call.decl.name != "digest":
        return None
    if call.type_args:
        return call.type_args[0]
    if len(call.args) == 2:
        return call.args[1].type
    return None


class Generator:
    """One P4Info generation; `run()` returns the message."""

    def __init__(self, program: ir.Program) -> None:
        self.program = program
        self.info = p4info_pb2.P4Info()
        self.types = TypeInfoBuilder(self.info)
        self.symbols = nm.SymbolTable()
        self.views = pv.blocks(program)
        self.global_externs = pv.global_externs(program)
        self.controller_headers = pv.controller_headers(program)
        self._digest_names: dict[int, str] = {}
        self._emitted_actions: set[int] = set()
        self._emitted_digests: set[int] = set()

    # ------------------------------------------------------------ collect

    def _add(self, prefix: int, name: str, annotations=(), loc=None) -> None:
        try:
            self.symbols.add(prefix, name, anno.user_id(annotations))
        except nm.IdError as e:
            raise P4Error(loc, str(e)) from None

    def _digest_name(self, call: ir.ExternFunctionCall) -> Optional[str]:
        t = _digest_type(call)
        if t is None:
            return None
        if isinstance(t, (ir.StructLikeT, ir.EnumT, ir.NewT)):
            return type_cp_name(t)
        key = id(call)
        if key not in self._digest_names:
            self._digest_names[key] = f"digest_{len(self._digest_names)}"
        return self._digest_names[key]

    def _collect_extern(self, instance: ir.Instance) -> None:
        kind = _extern_name(instance)
        if kind in _EXTERN_PREFIX and not _through_typedef(instance):
            self._add(_EXTERN_PREFIX[kind], instance.cp_name, instance.annotations, instance.loc)

    def _collect(self) -> None:
        for instance in self.global_externs:
            self._collect_extern(instance)
        for view in self.views:
            if isinstance(view, pv.ControlView):
                for action in view.actions:
                    self._add(nm.ACTION, action.cp_name, action.annotations, action.loc)
                for call in pv.extern_calls([a.body for a in view.actions] + view.bodies):
                    name = self._digest_name(call)
                    if name is not None:
                        self._add(nm.DIGEST, name, (), call.loc)
            else:
                for vs in view.value_sets:
                    self._add(nm.VALUE_SET, vs.cp_name, vs.annotations, vs.loc)
        for view in self.views:
            for child in view.children:
                if isinstance(child, ir.TableDecl):
                    self._add(nm.TABLE, child.cp_name, child.annotations, child.loc)
                    for inst, prefix, prop in ((child.implementation, nm.ACTION_PROFILE, "implementation"),
                                               (child.counters, nm.DIRECT_COUNTER, "counters"),
                                               (child.meters, nm.DIRECT_METER, "meters")):
                        if inst is not None and not self._declared(inst):
                            if not inst.cp_name:
                                raise P4Error(inst.loc, f"table {child.cp_name}: the '{prop}' property "
                                                        "constructs an instance without a @name "
                                                        "annotation, which P4Runtime cannot name")
                            self.symbols.add(prefix, inst.cp_name)
                else:
                    self._collect_extern(child)
        for header in self.controller_headers:
            self._add(nm.CONTROLLER_HEADER, type_cp_name(header), header.annotations, header.loc)
        try:
            self.symbols.assign()
        except nm.IdError as e:
            raise P4Error(None, str(e)) from None

    def _declared(self, instance: ir.Instance) -> bool:
        """True for an instance declared as a control local (or globally),
        False for one constructed in a table property."""
        return id(instance) in self._declared_ids

    # ------------------------------------------------------------ emit

    def _preamble(self, preamble, prefix: int, name: str, annotations, skip=()) -> None:
        preamble.id = self.symbols.id(prefix, name)
        preamble.name = name
        preamble.alias = self.symbols.alias(name)
        anno.fill(preamble, annotations, skip)

    def _emit_action(self, action: ir.ActionDecl, with_params: bool = True) -> None:
        if _hidden(action.annotations):
            return
        action_id = self.symbols.id(nm.ACTION, action.cp_name)
        if action_id in self._emitted_actions:
            return
        self._emitted_actions.add(action_id)
        msg = self.info.actions.add()
        self._preamble(msg.preamble, nm.ACTION, action.cp_name, action.annotations)
        ids = self._param_ids(action)
        for param, pid in zip(action.data_params() if with_params else (), ids):
            p = msg.params.add()
            p.id = pid
            p.name = name_annotation(param.annotations) or param.name   # p4c: @name renames
            anno.fill(p, param.annotations)
            t = param.type
            if isinstance(t, ir.EnumT) and t.underlying is None:
                p.type_name.name = type_cp_name(t)
            else:
                p.bitwidth = width(t)
                if newtype_name(t):
                    p.type_name.name = newtype_name(t)
            self.types.record(t)

    def _param_ids(self, action: ir.ActionDecl) -> list[int]:
        """Ids of the action-data (directionless) parameters: p4c's front
        end turns directional parameters into locals bound at the call, so
        P4Info and the control plane see only the others."""
        try:
            return nm.field_ids([anno.user_id(p.annotations) for p in action.data_params()])
        except nm.IdError as e:
            raise P4Error(action.loc, f"action {action.cp_name}: {e}") from None

    def _emit_digests(self, view: pv.ControlView) -> None:
        bodies = [a.body for a in view.actions] + view.bodies
        for call in pv.extern_calls(bodies):
            self.types.touch()
            name = self._digest_name(call)
            if name is None:
                continue
            digest_id = self.symbols.id(nm.DIGEST, name)
            if digest_id in self._emitted_digests:
                continue
            self._emitted_digests.add(digest_id)
            msg = self.info.digests.add()
            self._preamble(msg.preamble, nm.DIGEST, name, ())
            msg.type_spec.CopyFrom(self.types.spec(_digest_type(call)))

    def _emit_value_set(self, vs: ir.ValueSetDecl) -> None:
        msg = self.info.value_sets.add()
        self._preamble(msg.preamble, nm.VALUE_SET, vs.cp_name, vs.annotations)
        msg.size = vs.size
        t = vs.element_type
        if isinstance(t, ir.NewT):
            t = ir.strip_newtype(t)
        if isinstance(t, ir.BitT):
            m = msg.match.add()
            m.id = 1
            m.bitwidth = t.width
            m.match_type = p4info_pb2.MatchField.EXACT
        elif isinstance(t, ir.StructT):
            ids = nm.field_ids([anno.user_id(f.annotations) for f in t.fields])
            for f, fid in zip(t.fields, ids):
                m = msg.match.add()
                m.id = fid
                m.name = f.name
                m.bitwidth = f.type.bit_width() or 0
                kind = anno.find(f.annotations, "match")
                kind_name = (anno.tokens(kind.body)[0] if kind is not None and kind.body else "exact")
                if kind_name in _MATCH_TYPES:
                    m.match_type = _MATCH_TYPES[kind_name]
                else:
                    m.other_match_type = kind_name
                anno.fill(m, f.annotations, skip=("match",))
        elif isinstance(t, ir.EnumT) and t.underlying is not None:
            for index, member in enumerate(t.members, 1):
                m = msg.match.add()
                m.id = index
                m.name = member
                m.bitwidth = t.underlying.width
                m.match_type = p4info_pb2.MatchField.EXACT
        else:
            raise P4Error(vs.loc, f"value_set {vs.name}: element type {t} is not bit<W>, "
                                  "a struct of bit<W> fields or a serializable enum")

    def _emit_table(self, table: ir.TableDecl) -> None:
        if _hidden(table.annotations):
            return
        self.types.touch()
        msg = self.info.tables.add()
        self._preamble(msg.preamble, nm.TABLE, table.cp_name, table.annotations)
        try:
            key_ids = nm.field_ids([anno.user_id(k.annotations) for k in table.keys])
        except nm.IdError as e:
            raise P4Error(table.loc, f"table {table.cp_name}: {e}") from None
        for key, kid in zip(table.keys, key_ids):
            if key.match_kind == "selector":
                continue
            t = key.expr.type
            self.types.record(t)
            m = msg.match_fields.add()
            m.id = kid
            m.name = tableinfo.key_name(key)
            anno.fill(m, key.annotations)
            m.bitwidth = width(t)
            if key.match_kind in _MATCH_TYPES:
                m.match_type = _MATCH_TYPES[key.match_kind]
            else:
                m.other_match_type = key.match_kind
            if newtype_name(t):
                m.type_name.name = newtype_name(t)
        for ref in tableinfo.action_refs(table):
            r = msg.action_refs.add()
            r.id = self.symbols.id(nm.ACTION, ref.action.cp_name)
            r.annotations.extend(anno.strings(ref.annotations))
            anno.fill_structured(r, ref.annotations)
            names = {a.name for a in ref.annotations}
            if "tableonly" in names and "defaultonly" in names:
                raise P4Error(ref.loc, f"table {table.cp_name}: action {ref.action.cp_name} is "
                                       "annotated with both @tableonly and @defaultonly")
            if "tableonly" in names:
                r.scope = p4info_pb2.ActionRef.TABLE_ONLY
            elif "defaultonly" in names:
                r.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
        if table.default_action is not None:
            # an implicit default (NoAction) is listed too: p4c's front end
            # writes `default_action = NoAction()` into such a table
            default = table.default_action
            default_id = self.symbols.id(nm.ACTION, default.action.cp_name)
            if table.default_is_const:
                msg.const_default_action_id = default_id
            call = msg.initial_default_action
            call.action_id = default_id
            self._default_args(call, default)
        size = table.size if table.size else DEFAULT_TABLE_SIZE
        msg.size = size
        if table.entries:
            msg.has_initial_entries = True
        if (table.entries or table.has_entries) and table.entries_are_const:
            msg.is_const_table = True     # p4c: also for `const entries = { }`
        self._table_properties(msg, table)

    def _default_args(self, call, ref: ir.ActionRef) -> None:
        action = ref.action
        ids = dict(zip((id(p) for p in action.data_params()), self._param_ids(action)))
        params = action.data_params()
        args = list(ref.args) + [p.default for p in params[len(ref.args):]]
        for param, arg in zip(params, args):
            value = _const_int(arg)
            if value is None:
                raise P4Error(ref.loc, f"default action {action.cp_name}: argument for "
                                       f"{param.name} is not a compile-time constant")
            a = call.arguments.add()
            a.param_id = ids[id(param)]
            a.value = bytestring(value, width(param.type) or 1)

    def _table_properties(self, msg, table: ir.TableDecl) -> None:
        impl = table.implementation
        if impl is not None:
            msg.implementation_id = self.symbols.id(nm.ACTION_PROFILE, impl.cp_name)
            if not self._declared(impl):
                self._emit_profile(impl)
        if table.counters is not None:
            c = table.counters
            msg.direct_resource_ids.append(self.symbols.id(nm.DIRECT_COUNTER, c.cp_name))
            d = self.info.direct_counters.add()
            self._preamble(d.preamble, nm.DIRECT_COUNTER, c.cp_name, c.annotations)
            d.spec.unit = _COUNTER_UNITS.get(_enum_member(pv.ctor_arg(c, "type", 0)) or "", 0)
            d.direct_table_id = msg.preamble.id
        if table.meters is not None:
            mtr = table.meters
            msg.direct_resource_ids.append(self.symbols.id(nm.DIRECT_METER, mtr.cp_name))
            d = self.info.direct_meters.add()
            self._preamble(d.preamble, nm.DIRECT_METER, mtr.cp_name, mtr.annotations)
            d.spec.unit = _METER_UNITS.get(_enum_member(pv.ctor_arg(mtr, "type", 0)) or "", 0)
            d.direct_table_id = msg.preamble.id
        if table.idle_timeout:
            msg.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL

    def _emit_profile(self, inst: ir.Instance) -> None:
        msg = self.info.action_profiles.add()
        self._preamble(msg.preamble, nm.ACTION_PROFILE, inst.cp_name, inst.annotations,
                       skip=_PROFILE_ONLY)
        tables = sorted((t.cp_name for t in self._tables
                         if t.implementation is not None and t.implementation.cp_name == inst.cp_name),
                        key=lambda n: n.encode())
        msg.table_ids.extend(self.symbols.id(nm.TABLE, n) for n in tables)
        selector = _extern_name(inst) == "action_selector"
        msg.with_selector = selector
        size = _const_int(pv.ctor_arg(inst, "size", 1 if selector else 0))
        msg.size = size or 0
        if selector:
            mgs = anno.find(inst.annotations, "max_group_size")
            semantics = anno.find(inst.annotations, "selector_size_semantics")
            weight = anno.find(inst.annotations, "max_member_weight")
            if mgs is not None:
                msg.max_group_size = anno.int_arg(mgs) or 0
            kind = anno.string_arg(semantics) if semantics is not None else None
            if kind is None and semantics is not None and semantics.body:
                kind = anno.tokens(semantics.body)[0]
            if kind == "sum_of_members":
                msg.sum_of_members.SetInParent()
                if weight is not None:
                    msg.sum_of_members.max_member_weight = anno.int_arg(weight) or 0
            elif kind == "sum_of_weights":
                msg.sum_of_weights.SetInParent()

    def _emit_extern(self, inst: ir.Instance) -> None:
        if _through_typedef(inst):
            return
        kind = _extern_name(inst)
        if kind not in _EXTERN_PREFIX:
            self.types.touch()
            return
        self.types.touch()
        if kind == "counter":
            msg = self.info.counters.add()
            self._preamble(msg.preamble, nm.COUNTER, inst.cp_name, inst.annotations)
            msg.spec.unit = _COUNTER_UNITS.get(_enum_member(pv.ctor_arg(inst, "type", 1)) or "", 0)
            msg.size = _const_int(pv.ctor_arg(inst, "size", 0)) or 0
        elif kind == "meter":
            msg = self.info.meters.add()
            self._preamble(msg.preamble, nm.METER, inst.cp_name, inst.annotations)
            msg.spec.unit = _METER_UNITS.get(_enum_member(pv.ctor_arg(inst, "type", 1)) or "", 0)
            msg.size = _const_int(pv.ctor_arg(inst, "size", 0)) or 0
        elif kind == "register":
            msg = self.info.registers.add()
            self._preamble(msg.preamble, nm.REGISTER, inst.cp_name, inst.annotations)
            msg.size = _const_int(pv.ctor_arg(inst, "size", 0)) or 0
            if inst.type.type_args:
                msg.type_spec.CopyFrom(self.types.spec(inst.type.type_args[0]))
        elif kind in ("action_profile", "action_selector"):
            self._emit_profile(inst)
        # direct_counter / direct_meter instances appear with their table.

    def _emit_controller_header(self, header: ir.HeaderT) -> None:
        if _hidden(header.annotations):
            return
        a = anno.find(header.annotations, "controller_header")
        controller_name = anno.string_arg(a) or type_cp_name(header)
        msg = self.info.controller_packet_metadata.add()
        msg.preamble.id = self.symbols.id(nm.CONTROLLER_HEADER, type_cp_name(header))
        msg.preamble.name = controller_name
        msg.preamble.alias = controller_name
        anno.fill(msg.preamble, header.annotations)
        fields = list(_flat_fields(header.fields))
        ids = nm.field_ids([anno.user_id(f_annos) for _n, _t, f_annos in fields])
        for (name, t, f_annos), fid in zip(fields, ids):
            if _hidden(f_annos):
                continue
            m = msg.metadata.add()
            m.id = fid
            m.name = name
            m.annotations.extend(anno.strings(f_annos))
            anno.fill_structured(m, f_annos)
            m.bitwidth = width(t)
            self.types.record(t)
            if newtype_name(t):
                m.type_name.name = newtype_name(t)

    def _emit_pkg_info(self) -> None:
        pkg = self.info.pkg_info
        pkg.arch = self.program.architecture or "v1model"
        annotations = self.program.main.annotations
        for a in annotations:
            kv = a.kv or _body_kv(a.body)
            if a.name == "pkginfo" and kv:
                for key, value in kv.items():
                    if key in ("name", "version", "organization", "contact", "url", "arch"):
                        setattr(pkg, key, str(value))
            if a.name == "platform_property" and kv:
                for key, value in kv.items():
                    if key in pkg.platform_properties.DESCRIPTOR.fields_by_name and isinstance(value, int):
                        setattr(pkg.platform_properties, key, value)
        anno.fill(pkg, annotations, skip=("pkginfo", "platform_property"))

    # ------------------------------------------------------------ run

    def run(self) -> p4info_pb2.P4Info:
        self._declared_ids = {id(d) for d in self.global_externs}
        self._tables: list[ir.TableDecl] = []
        for view in self.views:
            for child in view.children:
                if isinstance(child, ir.Instance):
                    self._declared_ids.add(id(child))
                else:
                    self._tables.append(child)
        self._collect()
        for inst in self.global_externs:
            self._emit_extern(inst)
        for view in self.views:
            if isinstance(view, pv.ControlView):
                for action in view.actions:
                    self._emit_action(action, with_params=id(action) not in view.called_only)
                self._emit_digests(view)
            else:
                for vs in view.value_sets:
                    self._emit_value_set(vs)
        for view in self.views:
            for child in view.children:
                if isinstance(child, ir.TableDecl):
                    self._emit_table(child)
                else:
                    self._emit_extern(child)
        for header in self.controller_headers:
            self._emit_controller_header(header)
        self._emit_pkg_info()
        return self.info


def _flat_fields(fields, prefix: str = ""):
    for f in fields:
        if isinstance(f.type, ir.StructT):
            yield from _flat_fields(f.type.fields, prefix + f.name + ".")
        else:
            yield prefix + f.name, f.type, f.annotations


def generate(program: ir.Program) -> p4info_pb2.P4Info:
    """The P4Info p4c would generate for `program` (a v1model program)."""
    return Generator(program).run()


def _body_kv(body) -> dict:
    """`k = "s", n = 10` written as a plain annotation body (p4c reads
    @pkginfo / @platform_property this way too): strings and integers."""
    out = {}
    for part in re.findall(r'(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|[-\w]+)', body or ""):
        key, raw = part
        if raw.startswith('"'):
            out[key] = raw[1:-1]
        else:
            try:
                out[key] = int(raw, 0)
            except ValueError:
                out[key] = raw
    return out
