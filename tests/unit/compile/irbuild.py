"""Hand-built IR for compiler tests that must not depend on the front end:
a small builder for v1model programs (types, externs, blocks)."""

from __future__ import annotations

from testbed.p4model.frontend import ir

L = ir.Loc("t.p4", 1, 1)


def bit(w, signed=False):
    return ir.BitT(w, signed)


def const(v, t):
    return ir.Const(v, type=t, loc=L)


def ref(target):
    return ir.VarRef(target, type=target.type, loc=L)


def mem(base, name):
    t = ir.strip_newtype(base.type)
    if isinstance(t, ir.StructLikeT):
        ft = t.field(name).type
    elif isinstance(t, ir.StackT) and name in ("next", "last"):
        ft = t.element
    else:
        ft = ir.BitT(32)
    return ir.Member(base, name, type=ft, loc=L)


def assign(lhs, rhs):
    return ir.Assign(lhs, rhs, loc=L)


def binop(op, a, b, t=None):
    if t is None:
        t = ir.BoolT() if op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||") else a.type
    return ir.Binary(op, a, b, type=t, loc=L)


def hdr_type(name, fields):
    return ir.HeaderT(name, [ir.Field(n, bit(w) if isinstance(w, int) else w) for n, w in fields])


def struct_type(name, fields):
    return ir.StructT(name, [ir.Field(n, t) for n, t in fields])


ERRORS = ir.ErrorT(["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds",
                    "HeaderTooShort", "ParserTimeout", "ParserInvalidArgument"])
MATCH_KINDS = ir.MatchKindT(["exact", "ternary", "lpm", "range", "selector", "optional"])
HASH_ALGO = ir.EnumT("HashAlgorithm", ["crc32", "crc32_custom", "crc16", "crc16_custom",
                                       "random", "identity", "csum16", "xor16"])
COUNTER_TYPE = ir.EnumT("CounterType", ["packets", "bytes", "packets_and_bytes"])

SM = struct_type("standard_metadata_t", [
    ("ingress_port", bit(9)), ("egress_spec", bit(9)), ("egress_port", bit(9)),
    ("instance_type", bit(32)), ("packet_length", bit(32)), ("enq_timestamp", bit(32)),
    ("enq_qdepth", bit(19)), ("deq_timedelta", bit(32)), ("deq_qdepth", bit(19)),
    ("ingress_global_timestamp", bit(48)), ("egress_global_timestamp", bit(48)),
    ("mcast_grp", bit(16)), ("egress_rid", bit(16)), ("checksum_error", bit(1)),
    ("parser_error", ERRORS), ("priority", bit(3))])

_T = ir.BitT(8)   # placeholder for generic params
PACKET_IN = ir.ExternDecl("packet_in", [], [
    ir.ExternMethod("extract", [ir.Param("hdr", _T, "out")], ir.VoidT()),
    ir.ExternMethod("lookahead", [], _T),
    ir.ExternMethod("advance", [ir.Param("bits", bit(32), "in")], ir.VoidT()),
    ir.ExternMethod("length", [], bit(32)),
])
PACKET_OUT = ir.ExternDecl("packet_out", [], [
    ir.ExternMethod("emit", [ir.Param("hdr", _T, "in")], ir.VoidT())])
REGISTER = ir.ExternDecl("register", ["T"], [
    ir.ExternMethod("register", [ir.Param("size", bit(32))], ir.VoidT()),
    ir.ExternMethod("read", [ir.Param("result", _T, "out"), ir.Param("index", bit(32), "in")], ir.VoidT()),
    ir.ExternMethod("write", [ir.Param("index", bit(32), "in"), ir.Param("value", _T, "in")], ir.VoidT())])
COUNTER = ir.ExternDecl("counter", [], [
    ir.ExternMethod("count", [ir.Param("index", bit(32), "in")], ir.VoidT())])


def method(decl, name):
    for m in decl.methods:
        if m.name == name:
            return m
    raise KeyError(name)


def efn(name, params=()):
    return ir.ExternFunctionDecl(name, list(params), ir.VoidT())


MARK_TO_DROP = efn("mark_to_drop", [ir.Param("standard_metadata", SM, "inout")])
UPDATE_CHECKSUM = efn("update_checksum", [ir.Param("condition", ir.BoolT(), "in"),
                                          ir.Param("data", _T, "in"),
                                          ir.Param("checksum", _T, "inout"),
                                          ir.Param("algo", HASH_ALGO)])
VERIFY_CHECKSUM = efn("verify_checksum", [ir.Param("condition", ir.BoolT(), "in"),
                                          ir.Param("data", _T, "in"),
                                          ir.Param("checksum", _T, "in"),
                                          ir.Param("algo", HASH_ALGO)])
HASH = efn("hash", [ir.Param("result", _T, "out"), ir.Param("algo", HASH_ALGO, "in"),
                    ir.Param("base", _T, "in"), ir.Param("data", _T, "in"), ir.Param("max", _T, "in")])


def xcall(target, decl, name, args, t=ir.VoidT()):
    return ir.ExternMethodCall(target, method(decl, name), list(args), type=t, loc=L)


def fcall(decl, args):
    return ir.ExternFunctionCall(decl, list(args), type=ir.VoidT(), loc=L)


def stmt(call):
    return ir.CallStmt(call, loc=L)


def instance(name, decl):
    t = ir.ParserT(decl) if isinstance(decl, ir.ParserDecl) else ir.ControlT(decl)
    return ir.Instance(name, t, cp_name=name, loc=L)


def empty_control(name, params):
    return ir.ControlDecl(name, params, apply=ir.Block([]))


def program(parser, verify, ingress, egress, compute, deparser):
    blocks = []
    for role, decl in zip(("parser", "verify_checksum", "ingress", "egress", "compute_checksum",
                           "deparser"), (parser, verify, ingress, egress, compute, deparser)):
        blocks.append((role, instance(decl.name, decl)))
    main = ir.Instance("main", ir.VoidT(), args=[b for _, b in blocks])
    return ir.Program([], main, blocks, ERRORS, MATCH_KINDS, source_files=["t.p4"])


class V1:
    """Params of each v1model block for header type H and metadata M."""

    def __init__(self, H, M):
        self.H, self.M = H, M
        self.pk = ir.Param("packet", ir.ExternT(PACKET_IN), "")
        self.po = ir.Param("packet", ir.ExternT(PACKET_OUT), "")

    def parser_params(self):
        return [self.pk, ir.Param("hdr", self.H, "out"), ir.Param("meta", self.M, "inout"),
                ir.Param("sm", SM, "inout")]

    def control_params(self):
        return [ir.Param("hdr", self.H, "inout"), ir.Param("meta", self.M, "inout"),
                ir.Param("sm", SM, "inout")]

    def ck_params(self):
        return [ir.Param("hdr", self.H, "inout"), ir.Param("meta", self.M, "inout")]

    def deparser_params(self):
        return [self.po, ir.Param("hdr", self.H, "in")]
