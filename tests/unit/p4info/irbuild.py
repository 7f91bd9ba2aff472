"""Small helpers that build front-end IR by hand for P4Info unit tests,
so the generator's rules can be tested independently of the parser."""

from __future__ import annotations

from testbed.p4model.frontend import ir

COUNTER_TYPE = ir.EnumT("CounterType", ["packets", "bytes", "packets_and_bytes"])
METER_TYPE = ir.EnumT("MeterType", ["packets", "bytes"])
HASH_ALGORITHM = ir.EnumT("HashAlgorithm", ["crc32", "crc32_custom", "crc16", "crc16_custom",
                                            "random", "identity", "csum16", "xor16"])


def ann(name, body="", args=None):
    return ir.Annotation(name, body, args)


def const(value, width=32):
    return ir.Const(value, type=ir.BitT(width))


def enum_const(enum, member):
    return ir.Const(enum.members.index(member), type=enum)


def extern(name, params, type_params=()):
    ctor = ir.ExternMethod(name, [ir.Param(p, ir.BitT(32)) for p in params], ir.VoidT())
    return ir.ExternDecl(name, list(type_params), [ctor])


EXTERNS = {
    "counter": extern("counter", ["size", "type"]),
    "direct_counter": extern("direct_counter", ["type"]),
    "meter": extern("meter", ["size", "type"]),
    "direct_meter": extern("direct_meter", ["type"], ["T"]),
    "register": extern("register", ["size"], ["T"]),
    "action_profile": extern("action_profile", ["size"]),
    "action_selector": extern("action_selector", ["algorithm", "size", "outputWidth"]),
}


def instance(kind, cp_name, args, type_args=(), annotations=()):
    return ir.Instance(cp_name.rsplit(".", 1)[-1], ir.ExternT(EXTERNS[kind], list(type_args)),
                       list(args), list(annotations), cp_name)


def action(cp_name, params=(), annotations=(), body=None):
    return ir.ActionDecl(cp_name.rsplit(".", 1)[-1],
                         [ir.Param(n, t) for n, t in params], body or ir.Block(),
                         list(annotations), cp_name)


NO_ACTION = action("NoAction", annotations=[ann("noWarn", '"unused"', ["unused"])])


def key(name, width, kind, annotations=(), type_=None):
    t = type_ or ir.BitT(width)
    return ir.KeyElement(ir.VarRef(ir.Var(name, t), type=t), kind, name, list(annotations))


def table(cp_name, keys=(), actions=(), default=None, const_default=False, **kw):
    refs = [a if isinstance(a, ir.ActionRef) else ir.ActionRef(a) for a in actions]
    implicit = default is None
    default_ref = default if isinstance(default, ir.ActionRef) else ir.ActionRef(default or NO_ACTION)
    return ir.TableDecl(cp_name.rsplit(".", 1)[-1], list(keys), refs, default_ref,
                        default_is_const=const_default, default_is_implicit=implicit,
                        cp_name=cp_name, **kw)


def apply_all(*tables, extra=()):
    return ir.Block([ir.CallStmt(ir.TableApply(t)) for t in tables] + list(extra))


def control(name, locals_=(), apply=None):
    decl = ir.ControlDecl(name, [], locals=list(locals_), apply=apply or ir.Block())
    return ir.Instance(name, ir.ControlT(decl), cp_name=name)


def parser(name, locals_=()):
    decl = ir.ParserDecl(name, [], locals=list(locals_))
    return ir.Instance(name, ir.ParserT(decl), cp_name=name)


def program(ingress, egress=None, parser_=None, declarations=()):
    blocks = [("parser", parser_ or parser("P")), ("verify_checksum", control("V")),
              ("ingress", ingress), ("egress", egress or control("E")),
              ("compute_checksum", control("C")), ("deparser", control("D"))]
    main = ir.Instance("main", ir.ExternT(ir.ExternDecl("V1Switch", [], [])), [b for _r, b in blocks])
    return ir.Program(list(declarations) + [main], main, blocks, ir.ErrorT(["NoError"]),
                      ir.MatchKindT(["exact", "ternary", "lpm"]))
