"""register and counter instances -> arrays in the switch instance's C
memory (tb_inst), read and written in place by the Python control plane
through objects.NativeRegister / NativeCounter.

Rule (bmv2, as the Python target): register.read leaves its destination
unchanged when the index is out of range, register.write stores the value
wrapped to the register's width and ignores an index out of range;
counter.count adds one packet and the packet's received length to the
index, ignoring one out of range."""

from __future__ import annotations

from testbed.p4model.backend.native.emit_types import mask, scalar_width
from testbed.p4model.backend.native.errors import NativeUnsupported
from testbed.p4model.frontend import ir


class ExternInfo:
    """One register or counter: its C id (per kind), cp name, size, width."""

    def __init__(self, kind: str, cid: int, inst, size: int, width: int) -> None:
        self.kind, self.cid, self.inst, self.size, self.width = kind, cid, inst, size, width
        self.name = inst.cp_name or inst.name


class ExternMixin:
    def extern_of(self, target, loc) -> ExternInfo:
        if not isinstance(target, ir.InstanceRef):
            raise NativeUnsupported(loc, "an extern passed as an argument")
        inst = target.target
        got = self.externs.get(id(inst))
        if got is not None:
            return got
        kind = inst.type.decl.name
        if kind not in ("register", "counter") or not inst.args or not isinstance(inst.args[0], ir.Const):
            raise NativeUnsupported(inst.loc, f"the instance {inst.name} ({kind})")
        size = int(inst.args[0].value)
        if kind == "register":
            vt = inst.type.type_args[0] if inst.type.type_args else ir.BitT(32)
            width = scalar_width(vt, inst.loc)
        else:
            width = 64
        cid = sum(1 for x in self.externs.values() if x.kind == kind)
        info = ExternInfo(kind, cid, inst, size, width)
        self.externs[id(inst)] = info
        return info

    def extern_call(self, c) -> bool:
        """C for register.read/write and counter.count; False if not one."""
        if not isinstance(c, ir.ExternMethodCall) or not isinstance(c.target.type, ir.ExternT):
            return False
        kind, method = c.target.type.decl.name, c.method.name
        if (kind, method) not in (("register", "read"), ("register", "write"), ("counter", "count")):
            return False
        x = self.extern_of(c.target, c.loc)
        if kind == "register":
            arr = f"s->inst->reg[{x.cid}]"
            if method == "read":
                i = self.fresh("i")
                self.emit(f"{{ uint64_t {i} = {self.ex(c.args[1])};")
                self.emit(f"  if ({i} < {x.size}) {self.lvalue(c.args[0])} = {arr}[{i}] & {mask(self.width(c.args[0]))}; }}")
            else:
                i, v = self.fresh("i"), self.fresh("v")
                self.emit(f"{{ uint64_t {i} = {self.ex(c.args[0])}; uint64_t {v} = {self.ex(c.args[1])};")
                self.emit(f"  if ({i} < {x.size}) {arr}[{i}] = {v} & {mask(x.width)}; }}")
        else:
            i = self.fresh("i")
            self.emit(f"{{ uint64_t {i} = {self.ex(c.args[0])};")
            self.emit(f"  if ({i} < {x.size}) {{ s->inst->cnt_p[{x.cid}][{i}] += 1; "
                      f"s->inst->cnt_b[{x.cid}][{i}] += s->ingress_length; }} }}")
        return True
