"""The program compiler: walks the six v1model blocks of an ir.Program and
generates one Python function per parser state, parser, control apply,
action, function and table apply; creates the run-time objects (tables,
registers, counters, meters, action profiles, value sets, hashers) the
generated code refers to by global name; then `compile()`s and `exec`s
the module once.
"""

from __future__ import annotations

import functools

import os
from dataclasses import dataclass, field
from pathlib import Path

from testbed.p4model.runtime import externs as rtx
from testbed.p4model.runtime import tables as runtime_tables
from testbed.p4model.runtime import tableinfo
from testbed.p4model.backend.python.effects import ExitAnalysis, sees_outer_state
from testbed.p4model.backend.python.emitter import Names, Source, py_ident
from testbed.p4model.backend.python.exprs import ExprMixin, to_unsigned
from testbed.p4model.backend.python.externs import ExternMixin, enum_member
from testbed.p4model.backend.python.helpers import RuntimeState, make_helpers
from testbed.p4model.backend.python.stmts import FuncCtx, StmtMixin, param_convention
from testbed.p4model.backend.python.types import LIST_TYPES, TypeClasses, is_composite, scalar_type, width_of
from testbed.p4model.errors import P4Error, P4InternalError, P4Unsupported
from testbed.p4model.frontend import ir
from testbed.p4model.guard import internal_error
from testbed.p4model.runtime.packet import ValueSet

PARSER_STATE_LIMIT = 10000   # bound on state transitions per packet (no hang)
ROLES = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")
# Requests a statement can leave in the packet context (RT.pkt) for the
# architecture to act on after a control; a program that makes none lets
# v1model skip looking for them on every packet.
REQUESTS = ("truncate", "digest", "clone", "resubmit", "recirculate", "direct_meter")


@dataclass
class CompiledProgram:
    """Everything the v1model architecture needs from one program."""

    source: str
    namespace: dict
    rt: RuntimeState
    blocks: dict                      # role -> generated function
    hdr_class: type
    meta_class: type
    sm_class: type
    tables: dict = field(default_factory=dict)
    registers: dict = field(default_factory=dict)
    counters: dict = field(default_factory=dict)
    meters: dict = field(default_factory=dict)
    action_profiles: dict = field(default_factory=dict)
    direct_counters: dict = field(default_factory=dict)
    direct_meters: dict = field(default_factory=dict)
    value_sets: dict = field(default_factory=dict)
    hashers: list = field(default_factory=list)
    empty_blocks: set = field(default_factory=set)  # roles whose control does nothing (not called)
    requests: set = field(default_factory=set)  # the REQUESTS some statement of the program makes
    filename: str = "<p4>"
    _source: Source = None

    def loc_for_line(self, lineno: int):
        return self._source.loc_for_line(lineno) if self._source else None


def _const_int(e, what: str) -> int:
    if isinstance(e, ir.Const) and isinstance(e.value, (int, bool)):
        return int(e.value)
    raise P4Error(getattr(e, "loc", None), f"{what} must be a compile-time constant")


def _annotated_const_priorities(t: ir.TableDecl, fields, entries) -> None:
    """Priorities of `const entries` some of which carry `@priority(n)`.

    p4c's bmv2 back end writes each const entry's JSON priority as its
    `@priority` value, else its 1-based position in the list, and bmv2
    matches the numerically smallest priority first.  The runtime Table
    wants "larger wins", so the bmv2 value b becomes max(b) + 1 - b (equal
    values keep the listed order).  Without any `@priority` the table's
    own listed-order numbering applies unchanged."""
    if not any(f.match_kind in ("ternary", "range", "optional") for f in fields):
        return
    decls = t.entries
    if any(d.priority is not None for d in decls):
        return
    bmv2 = []
    for i, decl in enumerate(decls):
        ann = ir.find_annotation(decl.annotations, "priority")
        if ann is None:
            bmv2.append(i + 1)
            continue
        args = ann.args or []
        if len(args) != 1 or not isinstance(args[0], int) or isinstance(args[0], bool) or args[0] < 0:
            raise P4Error(decl.loc, f"table {t.name}: @priority needs one non-negative integer")
        bmv2.append(args[0])
    if len(bmv2) == len(decls) and all(b == i + 1 for i, b in enumerate(bmv2)):
        return
    top = max(bmv2, default=0) + 1
    for entry, b in zip(entries, bmv2):
        entry.priority = top - b


class ProgramCompiler(ExprMixin, StmtMixin, ExternMixin):
    def __init__(self, program: ir.Program, clock, rng, drop_port: int = 511) -> None:
        self.program = program
        self.clock = clock
        self.rng = rng
        self.drop_port = drop_port
        self.names = Names()
        self.src_types = Source()
        self.src = Source()
        errors = program.error_type.members

        def code(name):
            return errors.index(name) if name in errors else 0
        self.err_too_short = code("PacketTooShort")
        self.types = TypeClasses(self.src_types, self.names, code("StackOutOfBounds"),
                                 self.err_too_short, code("HeaderTooShort"), code("ParserInvalidArgument"))
        self.rt = RuntimeState()
        self.globals: dict = {}
        self.empty_fns: set[str] = set()
        self.requests: set[str] = set()  # what the program can ask of the packet context (REQUESTS)
        self.fc: FuncCtx = FuncCtx({})
        self.instance_names: dict = {}      # id(Instance) -> global name
        self.actions: dict = {}             # id(ActionDecl) -> (fn, ctl_args)
        self.functions: dict = {}           # id(FunctionDecl) -> fn
        self.blocks_fn: dict = {}           # id(Instance) -> (fn, params)
        self.tables_fn: dict = {}           # id(TableDecl) -> fn
        self.field_lists: dict = {}         # key -> fn name
        self._chain_args = None             # set while writing an acyclic parser
        self._skip_states: dict = {}        # states the acyclic parser being written jumps over
        self._inline_states: dict = {}      # states written into their one predecessor
        self.out = CompiledProgram("", {}, self.rt, {}, None, None, None)
        self.defs: list[Source] = []
        self.exits = ExitAnalysis()          # which actions/controls can end in exit

    # ------------------------------------------------------- def buffers

    def _begin_def(self):
        """Start a top-level def in its own buffer (defs may be requested
        while another def is being written, e.g. a sub-control applied from
        the middle of an apply body)."""
        saved = (self.src, self.fc)
        self.src = Source()
        return saved

    def _end_def(self, saved) -> None:
        self.src.blank()
        self.defs.append(self.src)
        self.src, self.fc = saved

    # -------------------------------------------------------- registry

    def add_global(self, stem: str, obj, kind: str = "", label: str = "") -> str:
        name = self.names.new(stem)
        self.globals[name] = obj
        if kind == "hash":
            self.out.hashers.append((label, obj))
        return name

    def instance_code(self, inst: ir.Instance, loc) -> str:
        name = self.instance_names.get(id(inst))
        if name is None:
            name = self.make_extern(inst)
        return name

    # ------------------------------------------------------------- entry

    def compile(self) -> CompiledProgram:
        prog = self.program
        for decl in prog.declarations:
            if isinstance(decl, ir.Instance) and isinstance(decl.type, ir.ExternT):
                self.make_extern(decl)
        block_fns = {}
        for role in ROLES:
            try:
                inst = prog.block(role)
            except KeyError:
                raise P4Error(prog.main.loc, f"v1model main package lacks its {role} block") from None
            fn, _ = self.sub_block_fn(inst, inst.loc, toplevel=True)
            block_fns[role] = fn
        ingress = prog.block("ingress").type.decl
        hdr_t, meta_t, sm_t = (p.type for p in ingress.params[:3])
        classes = {k: self.types.class_of(t) for k, t in (("hdr", hdr_t), ("meta", meta_t), ("sm", sm_t))}
        self.meta_type, self.sm_type = meta_t, sm_t
        self._gen_field_lists()
        return self._finish(block_fns, classes)

    def _finish(self, block_fns: dict, classes: dict) -> CompiledProgram:
        header = Source()
        header.line('"""Generated by testbed.p4model.backend.python from ' +
                    ", ".join(self.program.source_files[:1] or ["<program>"]) + '."""')
        merged = Source()
        merged.lines = header.lines + self.src_types.lines
        for part in self.defs + [self.src]:
            offset = len(merged.lines)
            merged.lines.extend(part.lines)
            merged.locs.update({line + offset: loc for line, loc in part.locs.items()})
        source = merged.text()
        namespace = make_helpers(self.rt, self.err_too_short)
        namespace.update(self.globals)
        namespace["DROP_PORT"] = self.drop_port
        namespace["RNG"] = self.rng
        filename = f"<p4:{Path(self.program.source_files[0]).name if self.program.source_files else 'program'}>"
        dump = os.environ.get("TESTBED_P4_DUMP")
        if dump:
            d = Path(dump)
            d.mkdir(parents=True, exist_ok=True)
            name = Path(self.program.source_files[0]).stem if self.program.source_files else "program"
            path = d / f"{name}.py"
            path.write_text(source)
            filename = str(path)
        try:
            code = _compiled(source, filename)
        except SyntaxError as e:   # a generator bug: report the P4 construct it came from
            raise P4InternalError(merged.loc_for_line(e.lineno or 0), "generated code", e) from e
        exec(code, namespace)
        out = self.out
        out.source = source
        out.namespace = namespace
        out.blocks = {role: namespace[fn] for role, fn in block_fns.items()}
        out.empty_blocks = {role for role, fn in block_fns.items() if fn in self.empty_fns}
        out.requests = set(self.requests)
        out.hdr_class = namespace[classes["hdr"]]
        out.meta_class = namespace[classes["meta"]]
        out.sm_class = namespace[classes["sm"]]
        out.filename = filename
        out._source = merged
        out.field_list_fns = {k: namespace[v] for k, v in self.field_lists.items()}
        return out

    # ----------------------------------------------------------- externs

    def make_extern(self, inst: ir.Instance) -> str:
        t = inst.type
        kind = t.decl.name
        cp = inst.cp_name or inst.name
        args = inst.args
        out = self.out
        if kind == "register":
            size = _const_int(args[0], "register size")
            vt = scalar_type(t.type_args[0]) if t.type_args else ir.BitT(32)
            obj = rtx.RegisterArray(cp, size, width_of(vt), isinstance(vt, ir.BitT) and vt.signed)
            out.registers[cp] = obj
        elif kind == "counter":
            obj = rtx.CounterArray(cp, _const_int(args[0], "counter size"), enum_member(args[1]))
            out.counters[cp] = obj
        elif kind == "meter":
            obj = rtx.MeterArray(cp, _const_int(args[0], "meter size"), enum_member(args[1]), self.clock)
            out.meters[cp] = obj
        elif kind in ("direct_counter", "direct_meter"):
            obj = (kind, enum_member(args[0]), inst)
        elif kind == "action_profile":
            obj = rtx.ActionProfile(cp, _const_int(args[0], "action profile size"), False)
            out.action_profiles[cp] = obj
        elif kind == "action_selector":
            obj = rtx.ActionProfile(cp, _const_int(args[1], "action selector size"), True)
            obj.selector_algorithm = enum_member(args[0])
            out.action_profiles[cp] = obj
        else:
            raise P4Unsupported(inst.loc, f"extern {kind}")
        name = self.add_global("X_" + py_ident(cp), obj)
        self.instance_names[id(inst)] = name
        return name

    # ------------------------------------------------- parsers & controls

    def sub_block_fn(self, inst: ir.Instance, loc, toplevel: bool = False):
        """The generated function of a parser/control instance (made on
        first use) and its P4 params."""
        done = self.blocks_fn.get(id(inst))
        if done is not None:
            return done
        t = inst.type
        if isinstance(t, ir.ParserT):
            fn = self._gen_parser(inst, t.decl, toplevel)
        elif isinstance(t, ir.ControlT):
            fn = self._gen_control(inst, t.decl, toplevel)
        else:
            raise P4Unsupported(loc, f"apply of {inst.name}")
        self.blocks_fn[id(inst)] = (fn, t.decl.params)
        return fn, t.decl.params

    def _frame(self, stem: str, scalars: list, composites: list) -> str:
        """A per-instance frame object holding scalar params and locals."""
        cls = self.names.new("Fr_" + stem)
        s = self.src_types
        slots = [n for n, _ in scalars] + [n for n, _ in composites]
        # the zero values first: they may add classes to src_types, which
        # must not land inside this one
        inits = [f"self.{n} = {self.types.zero(t)}" for n, t in scalars + composites]
        s.line(f"class {cls}:")
        s.indent()
        s.line(f"__slots__ = {tuple(slots)!r}")
        s.line("def __init__(self):")
        s.indent()
        for line in inits:
            s.line(line)
        if not slots:
            s.line("pass")
        s.dedent()
        s.dedent()
        s.blank()
        fname = self.names.new("F_" + stem)
        self.src_types.line(f"{fname} = {cls}()")
        self.src_types.blank()
        return fname

    def _bind_block(self, stem: str, decl):
        """Env, python arg names, frame name, scalar out names for a block."""
        env = {}
        args = []
        scalars, composites = [], []
        for p in decl.params:
            pt = ir.strip_newtype(p.type)
            if isinstance(pt, ir.ExternT):
                name = "pk" if pt.decl.name == "packet_in" else "po"
                env[id(p)] = name
                args.append(name)
            elif is_composite(p.type):
                name = "p_" + py_ident(p.name)
                env[id(p)] = name
                args.append(name)
            else:
                name = "p_" + py_ident(p.name)
                args.append(name)
                scalars.append(("a_" + py_ident(p.name), p.type))
        local_vars = [d for d in decl.locals if isinstance(d, ir.Var)]
        for v in local_vars:
            slot = "l_" + py_ident(v.name)
            if any(slot == s for s, _ in scalars + composites):
                slot = self.names.new(slot)
            (composites if is_composite(v.type) else scalars).append((slot, v.type))
            v._slot = slot
        frame = self._frame(stem, scalars, composites)
        for p in decl.params:
            if not is_composite(p.type) and not isinstance(ir.strip_newtype(p.type), ir.ExternT):
                env[id(p)] = f"{frame}.a_{py_ident(p.name)}"
        for v in local_vars:
            env[id(v)] = f"{frame}.{v._slot}"
        outs = [env[id(p)] for p in param_convention(decl.params)
                if not isinstance(ir.strip_newtype(p.type), ir.ExternT)]
        for d in decl.locals:
            if isinstance(d, ir.Instance) and isinstance(d.type, ir.ExternT):
                self.instance_code(d, d.loc)
            elif isinstance(d, ir.ValueSetDecl):
                width = width_of(d.element_type) if not isinstance(
                    ir.strip_newtype(d.element_type), ir.StructT) else ir.strip_newtype(d.element_type).bit_width()
                vs = ValueSet(d.cp_name or d.name, d.size, width)
                self.out.value_sets[d.cp_name or d.name] = vs
                env[id(d)] = self.add_global("VS_" + py_ident(d.name), vs)
        return env, args, frame, outs, scalars, composites, local_vars

    def _entry(self, decl, env, frame, scalars, composites, local_vars, toplevel, outs_reset=True):
        """Prologue of a block function: scalar params into the frame,
        locals reset, out composites reset, local initialisers."""
        for p in decl.params:
            pt = ir.strip_newtype(p.type)
            if isinstance(pt, ir.ExternT):
                continue
            if is_composite(p.type):
                if p.direction == "out" and not toplevel:
                    self.emit(f"{env[id(p)]}._reset()")
            else:
                value = "p_" + py_ident(p.name) if p.direction != "out" else self.types.zero(p.type)
                self.emit(f"{env[id(p)]} = {value}")
        for v in local_vars:
            code = env[id(v)]
            if is_composite(v.type) and not isinstance(ir.strip_newtype(v.type), LIST_TYPES):
                self.emit(f"{code}._reset()")
            else:
                self.emit(f"{code} = {self.types.zero(v.type)}")
        for st in decl.local_inits:
            self.stmt(st)

    def _gen_control(self, inst: ir.Instance, decl: ir.ControlDecl, toplevel: bool) -> str:
        stem = py_ident(inst.cp_name or inst.name)
        env, args, frame, outs, scalars, composites, local_vars = self._bind_block(stem, decl)
        ctl_args = [env[id(p)] for p in decl.params
                    if is_composite(p.type) or isinstance(ir.strip_newtype(p.type), ir.ExternT)]
        # actions and tables first (they are separate functions)
        for d in decl.locals:
            if isinstance(d, ir.ActionDecl):
                self._gen_action(d, env, ctl_args)
        for d in decl.locals:
            if isinstance(d, ir.TableDecl):
                self._gen_table(d, env, ctl_args)
        fn = self.names.new("ctl_" + stem)
        saved = self._begin_def()
        self.fc = FuncCtx(env, ctl_args, outs, kind="control")
        self.src.loc(decl.loc)
        self.emit(f"def {fn}({', '.join(args)}):")
        self.src.indent()
        entry_lines = len(self.src.lines)
        self._entry(decl, env, frame, scalars, composites, local_vars, toplevel)
        if toplevel and not decl.apply.stmts and len(self.src.lines) == entry_lines and not outs:
            self.empty_fns.add(fn)  # nothing to run: the architecture may skip the call
        if toplevel:
            self.emit("try:")
            self.src.indent()
            self.block(decl.apply.stmts)
            self.src.dedent()
            self.emit("except ExitControl:")
            self.src.indent()
            self.emit("pass")
            self.src.dedent()
        elif outs and self.exits.control(decl):
            self.exit_copy_out(decl.apply.stmts)
        else:
            self.block(decl.apply.stmts)
        if outs:
            self.emit(self.fc.return_code(None))
        self.src.dedent()
        self._end_def(saved)
        return fn

    # ------------------------------------------------------------- parser

    def _gen_parser(self, inst: ir.Instance, decl: ir.ParserDecl, toplevel: bool) -> str:
        stem = py_ident(inst.cp_name or inst.name)
        env, args, frame, outs, scalars, composites, local_vars = self._bind_block(stem, decl)
        if "pk" not in args:
            raise P4Error(decl.loc, f"parser {decl.name} has no packet_in parameter")
        # state functions take the cursor and the composite params
        state_args = ["pk"] + [env[id(p)] for p in decl.params
                               if is_composite(p.type)]
        state_fns = {s.name: self.names.new(f"ps_{stem}_{s.name}") for s in decl.states}
        # an acyclic state graph cannot loop: states then call their successor
        # directly (no driver loop, no step counter)
        outer_chain, outer_skips = self._chain_args, self._skip_states
        self._chain_args = None if self._has_cycle(decl) else ", ".join(state_args)
        # a state that only moves on (no statements, one target) is not called:
        # transitions to it go to its target (acyclic graphs only, so this ends)
        self._skip_states = {} if self._chain_args is None else {
            s.name: s.transition for s in decl.states if not s.stmts and isinstance(s.transition, str)}
        outer_inline, self._inline_states = self._inline_states, self._states_to_inline(decl)
        for state in decl.states:
            if state.name in self._skip_states or state.name in self._inline_states:
                continue
            saved = self._begin_def()
            self.fc = FuncCtx(env, [], [], kind="parser")
            self.src.loc(state.loc)
            self.emit(f"def {state_fns[state.name]}({', '.join(state_args)}):")
            self.src.indent()
            self._gen_state_body(state, state_fns)
            self.src.dedent()
            self._end_def(saved)
        fn = self.names.new("prs_" + stem)
        saved = self._begin_def()
        self.fc = FuncCtx(env, [], outs, kind="parser")
        # the cursor is always the first python argument
        py_args = ["pk"] + [a for a in args if a != "pk"]
        self.src.loc(decl.loc)
        self.emit(f"def {fn}({', '.join(py_args)}):")
        self.src.indent()
        before_entry = len(self.src.lines)
        self._entry(decl, env, frame, scalars, composites, local_vars, toplevel)
        if "start" not in state_fns:
            raise P4Error(decl.loc, f"parser {decl.name} has no start state")
        first = self._resolve_state("start")
        if (self._chain_args is not None and not outs and py_args == state_args and first in state_fns
                and len(self.src.lines) == before_entry):
            # the parser only calls its first state: it is that state (one call less per packet)
            del self.src.lines[before_entry - 1:]
            self.src.dedent()
            self.emit(f"{fn} = {state_fns[first]}")
            self._chain_args, self._skip_states, self._inline_states = outer_chain, outer_skips, outer_inline
            self._end_def(saved)
            return fn
        if self._chain_args is not None:
            self.emit(self._state_ref("start", state_fns, decl.loc))
        else:
            self.emit(f"st = {state_fns['start']}")
            self.emit("n = 0")
            self.emit("while st is not None:")
            self.src.indent()
            self.emit("n += 1")
            self.emit(f"if n > {PARSER_STATE_LIMIT}: raise PacketAbort("
                      f"{str(decl.loc) + ': parser ' + decl.name + ' does not terminate'!r})")
            self.emit(f"st = st({', '.join(state_args)})")
            self.src.dedent()
        self._chain_args, self._skip_states, self._inline_states = outer_chain, outer_skips, outer_inline
        if outs:
            self.emit(self.fc.return_code(None))
        self.src.dedent()
        self._end_def(saved)
        # sub-parser calls pass the cursor first, then the other params
        return fn

    def _gen_state_body(self, state, state_fns: dict) -> None:
        for st in state.stmts:
            self.stmt(st)
        self._gen_transition(state.transition, state_fns, state.loc)

    def _resolve_state(self, name: str) -> str:
        while name in self._skip_states:
            name = self._skip_states[name]
        return name

    def _states_to_inline(self, decl: ir.ParserDecl) -> dict:
        """States of an acyclic parser that exactly one transition leads to
        (not the start state, which the parser function calls): their code
        is written into that transition instead of a function of their own,
        one call less per packet.  Every state body ends in a return, so the
        code after the inlined body is never reached from it."""
        if self._chain_args is None:
            return {}
        refs: dict[str, int] = {}
        for st in decl.states:
            if st.name in self._skip_states:
                continue
            tr = st.transition
            targets = [tr] if isinstance(tr, str) else [t for _, t in tr.cases] if isinstance(tr, ir.Select) else []
            for target in targets:
                target = self._resolve_state(target)
                refs[target] = refs.get(target, 0) + 1
        first = self._resolve_state("start")
        return {st.name: st for st in decl.states
                if refs.get(st.name) == 1 and st.name != first and st.name not in self._skip_states}

    @staticmethod
    def _has_cycle(decl: ir.ParserDecl) -> bool:
        succ = {}
        for st in decl.states:
            tr = st.transition
            if isinstance(tr, str):
                succ[st.name] = [tr]
            elif isinstance(tr, ir.Select):
                succ[st.name] = [target for _, target in tr.cases]
            else:
                succ[st.name] = []
        state = {}   # 1 visiting, 2 done

        def visit(n) -> bool:
            if state.get(n) == 1:
                return True
            if state.get(n) == 2 or n not in succ:
                return False
            state[n] = 1
            if any(visit(m) for m in succ[n]):
                return True
            state[n] = 2
            return False
        return any(visit(n) for n in succ)

    def _state_ref(self, name: str, state_fns: dict, loc) -> str:
        name = self._resolve_state(name)
        if name in ("accept", "reject"):
            return "None"   # bmv2 back end: reject behaves as accept, NoError
        if name not in state_fns:
            raise P4Error(loc, f"transition to unknown state {name}")
        if self._chain_args is not None:
            return f"{state_fns[name]}({self._chain_args})"
        return state_fns[name]

    def _gen_transition(self, tr, state_fns: dict, loc) -> None:
        if tr is None:
            self.emit("return None")
            return
        if isinstance(tr, str):
            inline = self._inline_states.get(self._resolve_state(tr))
            if inline is not None:
                self.src.loc(inline.loc)
                self._gen_state_body(inline, state_fns)
            else:
                self.emit(f"return {self._state_ref(tr, state_fns, loc)}")
            return
        keys = []
        for i, k in enumerate(tr.keys):
            name = f"k{i}"
            self.emit(f"{name} = {self.ex(k)}")
            keys.append((name, k.type))
        for keyset, target in tr.cases:
            cond = self._keyset_cond(keyset, keys)
            inline = self._inline_states.get(self._resolve_state(target))
            if inline is not None:
                if cond == "True":
                    self._gen_state_body(inline, state_fns)
                    return
                self.emit(f"if {cond}:")
                self.src.indent()
                self.src.loc(inline.loc)
                self._gen_state_body(inline, state_fns)
                self.src.dedent()
                continue
            ref = self._state_ref(target, state_fns, tr.loc)
            if cond == "True":
                self.emit(f"return {ref}")
                return
            self.emit(f"if {cond}: return {ref}")
        self.emit("return None")   # no match: accept with NoError (bmv2 back end)

    def _keyset_cond(self, ks, keys) -> str:
        if isinstance(ks, ir.KeysetTuple) and len(keys) > 1:
            conds = [self._keyset_one(item, [key]) for item, key in zip(ks.items, keys)]
            conds = [c for c in conds if c != "True"]
            return " and ".join(conds) if conds else "True"
        if isinstance(ks, ir.KeysetTuple) and len(ks.items) == 1:
            ks = ks.items[0]
        return self._keyset_one(ks, keys)

    def _keyset_one(self, ks, keys) -> str:
        if isinstance(ks, ir.KeysetDefault):
            return "True"
        if isinstance(ks, ir.KeysetValueSet):
            key = self._concat_keys(keys)
            return f"{self.fc.env[id(ks.value_set)]}.matches({key})"
        k, kt = keys[0] if len(keys) == 1 else (self._concat_keys(keys), None)
        if isinstance(ks, ir.KeysetMask):
            m = self.ex(ks.mask)
            return f"({to_unsigned(k, kt) if kt else k} & {m}) == ({self.ex(ks.value)} & {m})"
        if isinstance(ks, ir.KeysetRange):
            return f"{self.ex(ks.lo)} <= {k} <= {self.ex(ks.hi)}"
        return f"{k} == {self.ex(ks)}"

    def _concat_keys(self, keys) -> str:
        code = "0"
        for name, t in keys:
            w = width_of(t)
            code = f"(({code} << {w}) | {to_unsigned(name, t)})"
        return code

    # ------------------------------------------------------------ actions

    def ctl_args_for(self, action: ir.ActionDecl) -> list[str]:
        info = self.actions.get(id(action))
        if info is None:
            self._gen_action(action, {}, [])
            info = self.actions[id(action)]
        return info[1]

    def action_fn(self, action: ir.ActionDecl, loc) -> str:
        if id(action) not in self.actions:
            self._gen_action(action, {}, [])
        return self.actions[id(action)][0]

    def _callee_prologue(self, params, env):
        """Python arg names for a callee's params; env bindings; outs."""
        names = []
        outs = []
        for p in params:
            name = "a_" + py_ident(p.name)
            env[id(p)] = name
            names.append(name)
            if p.direction in ("out", "inout") and not is_composite(p.type):
                outs.append(name)
        return names, outs

    def _gen_action(self, action: ir.ActionDecl, ctl_env: dict, ctl_args: list) -> None:
        if id(action) in self.actions:
            return
        fn = self.names.new("act_" + py_ident(action.cp_name or action.name))
        self.actions[id(action)] = (fn, list(ctl_args))
        env = dict(ctl_env)
        names, outs = self._callee_prologue(action.params, env)
        saved = self._begin_def()
        self.fc = FuncCtx(env, ctl_args, outs, kind="action")
        self.src.loc(action.loc)
        self.emit(f"def {fn}({', '.join(list(ctl_args) + names)}):")
        self.src.indent()
        self._param_fixups(action.params, env)
        if outs and self.exits.action(action):
            self.exit_copy_out(action.body.stmts)
        else:
            self.block(action.body.stmts)
        if outs:
            self.emit(self.fc.return_code(None))
        self.src.dedent()
        self._end_def(saved)

    def _param_fixups(self, params, env) -> None:
        """Normalise incoming values: action data from the control plane is
        unsigned; out params start at zero / reset."""
        for p in params:
            name = env[id(p)]
            st = scalar_type(p.type)
            if p.direction == "out":
                if is_composite(p.type):
                    if not isinstance(ir.strip_newtype(p.type), LIST_TYPES):
                        self.emit(f"{name}._reset()")
                else:
                    self.emit(f"{name} = {self.types.zero(p.type)}")
            elif p.direction == "":
                if isinstance(st, ir.BoolT):
                    self.emit(f"{name} = bool({name})")
                elif isinstance(st, ir.BitT) and st.signed:
                    half = 1 << (st.width - 1)
                    self.emit(f"{name} = (({name} & {hex((1 << st.width) - 1)}) ^ {hex(half)}) - {hex(half)}")

    def function_fn(self, fdecl: ir.FunctionDecl) -> str:
        fn = self.functions.get(id(fdecl))
        if fn is not None:
            return fn
        fn = self.names.new("fn_" + py_ident(fdecl.name))
        self.functions[id(fdecl)] = fn
        env = {}
        names, outs = self._callee_prologue(fdecl.params, env)
        saved = self._begin_def()
        returns = not isinstance(fdecl.return_type, ir.VoidT)
        self.fc = FuncCtx(env, [], outs, returns_value=returns, kind="function")
        self.src.loc(fdecl.loc)
        self.emit(f"def {fn}({', '.join(names)}):")
        self.src.indent()
        self._param_fixups(fdecl.params, env)
        self.block(fdecl.body.stmts)
        if outs or returns:
            self.emit(self.fc.return_code(None))
        self.src.dedent()
        self._end_def(saved)
        return fn

    # ------------------------------------------------------------- tables

    def call_table(self, e: ir.TableApply) -> str:
        fn = self.tables_fn.get(id(e.table))
        if fn is None:
            raise P4Unsupported(e.loc, f"apply of table {e.table.name} outside its control")
        return f"{fn}({', '.join(self.fc.ctl_args)})"

    def _gen_table(self, t: ir.TableDecl, env: dict, ctl_args: list) -> None:
        cp = t.cp_name or t.name
        fields = []
        for k in t.keys:
            kt = scalar_type(k.expr.type)
            if isinstance(kt, ir.ErrorT):
                # matched as bmv2 does: the error's number (declaration order) in a 32-bit field
                fields.append(runtime_tables.MatchField(tableinfo.key_name(k), k.match_kind, runtime_tables.ERROR_FIELD_WIDTH))
                continue
            if not isinstance(kt, (ir.BitT, ir.BoolT)) and kt.bit_width() is None:
                raise P4Unsupported(k.loc if getattr(k, "loc", None) else t.loc,
                                    f"table key of type {ir.type_str(k.expr.type)}")
            fields.append(runtime_tables.MatchField(tableinfo.key_name(k), k.match_kind, width_of(k.expr.type)))
        impl_name = impl = None
        if t.implementation is not None:
            impl_name = self.instance_code(t.implementation, t.loc)
            impl = self.globals[impl_name]
        dc_kind = dm_kind = None
        dm_key = None
        if t.counters is not None:
            kind, dc_kind, inst = self.globals[self.instance_code(t.counters, t.loc)]
            self.out.direct_counters[t.counters.cp_name or t.counters.name] = cp
        if t.meters is not None:
            kind, dm_kind, inst = self.globals[self.instance_code(t.meters, t.loc)]
            self.out.direct_meters[t.meters.cp_name or t.meters.name] = cp
            dm_key = id(inst)
        refs = tableinfo.action_refs(t)   # + the implicit NoAction @defaultonly
        action_params = {}
        for ref in refs:
            a = ref.action
            action_params[a.cp_name] = tuple(width_of(p.type) for p in a.data_params())
        default = runtime_tables.ActionCall(t.default_action.action.cp_name,
                                 tuple(self._const_arg(x) for x in t.default_action.args))
        entries = [self._const_entry(t, fields, decl) for decl in t.entries]
        _annotated_const_priorities(t, fields, entries)
        table_only = frozenset(r.action.cp_name for r in refs
                               if ir.find_annotation(r.annotations, "tableonly"))
        default_only = frozenset(r.action.cp_name for r in refs
                                 if ir.find_annotation(r.annotations, "defaultonly"))
        try:
            table = runtime_tables.Table(cp, fields, [r.action.cp_name for r in refs], default,
                              t.default_is_const, t.size or 1024, entries, t.entries_are_const and bool(t.entries),
                              implementation=impl, direct_counter_kind=dc_kind,
                              direct_meter_kind=dm_kind, clock=self.clock,
                              action_params=action_params, table_only=table_only,
                              default_only=default_only)
        except Exception as exc:   # const entries the runtime refuses
            raise P4Error(t.loc, f"table {cp}: {getattr(exc, 'message', exc)}") from None
        self.out.tables[cp] = table
        tname = self.add_global("T_" + py_ident(cp), table)
        # dispatch map: action cp_name -> function taking (ctl args..., *data)
        dispatch = {}
        dnames = {}
        for ref in refs:
            dnames[ref.action.cp_name] = self._table_action_fn(ref, env, ctl_args)
        amap = self.names.new("AM_" + py_ident(cp))
        fn = self.names.new("tbl_" + py_ident(cp))
        self.tables_fn[id(t)] = fn
        saved = self._begin_def()
        self.fc = FuncCtx(env, ctl_args, [], kind="control")
        self.src.loc(t.loc)
        self.emit(f"def {fn}({', '.join(ctl_args)}):")
        self.src.indent()
        keys = []
        sel = []
        for k in t.keys:
            code = to_unsigned(self.ex(k.expr), k.expr.type)
            width = runtime_tables.ERROR_FIELD_WIDTH if isinstance(scalar_type(k.expr.type), ir.ErrorT) else width_of(k.expr.type)
            (sel if k.match_kind == "selector" else keys).append((code, width))
        key = "(" + "".join(f"{c}, " for c, _ in keys) + ")"
        self.emit(f"e = {tname}.lookup({key})")
        self.emit("if e is None:")
        self.src.indent()
        self.emit(f"c = {tname}.default")
        self.emit("hit = False")
        if dm_key is not None:
            self.requests.add("direct_meter")
            self.emit(f"RT.pkt.set_meter_result({dm_key}, 0)")
        self.src.dedent()
        self.emit("else:")
        self.src.indent()
        self.emit("hit = True")
        if dc_kind is not None:
            self.emit("e.counter_packets += 1; e.counter_bytes += RT.pkt.ingress_length")
        if dm_key is not None:
            self.emit(f"RT.pkt.set_meter_result({dm_key}, e.meter.execute(RT.pkt.ingress_length) "
                      "if e.meter is not None else 0)")
        if impl is not None:
            if sel:
                algo = getattr(impl, "selector_algorithm", "crc16")
                hf = self.hasher_by_name(algo)
                total = sum(w for _, w in sel)
                pad = -total % 8
                parts, shift = [], total + pad
                for c, w in sel:
                    shift -= w
                    parts.append(f"({c} << {shift})" if shift else c)
                packed = f"({' | '.join(parts)}).to_bytes({(total + pad) // 8}, 'big')"
                self.emit(f"c = {impl_name}.resolve(e, {hf}({packed}) if e.group_id is not None else 0)")
            else:
                self.emit(f"c = {impl_name}.resolve(e, 0)")
            self.emit("if c is None:")
            self.src.indent()
            self.emit(f"c = {tname}.default; hit = False")
            self.src.dedent()
        else:
            self.emit("c = e.action")
        self.src.dedent()
        self.emit("a = c.action")
        lead = "".join(x + ", " for x in ctl_args)
        arities = sorted({len(widths) for widths in action_params.values()})
        if len(arities) <= 3:
            # the action data as positional arguments, one branch per number of
            # parameters the table's actions take: a call with *args costs about
            # twice a plain one; any other count keeps that call (and its error)
            self.emit("d = c.args")
            self.emit("n = len(d)")
            for i, k in enumerate(arities):
                self.emit(f"{'if' if i == 0 else 'elif'} n == {k}: "
                          f"{amap}[a]({lead}{''.join(f'd[{j}], ' for j in range(k))})")
            self.emit(f"else: {amap}[a]({lead}*d)")
        else:
            self.emit(f"{amap}[a]({lead}*c.args)")
        self.emit("return hit, a")
        self.src.dedent()
        self._end_def(saved)
        self.globals[amap] = dispatch
        self._pending_dispatch = getattr(self, "_pending_dispatch", [])
        self._pending_dispatch.append((dispatch, dnames))

    def hasher_by_name(self, algo: str) -> str:
        from testbed.p4model.runtime import hashing
        if algo not in hashing.ALGORITHMS:
            raise P4Unsupported(None, f"action selector algorithm {algo}")
        return self.add_global("HF", hashing.make_hasher(algo), kind="hash", label=algo)

    def _table_action_fn(self, ref: ir.ActionRef, env: dict, ctl_args: list) -> str:
        """The function a table calls for one of its actions: the action
        itself, or a wrapper binding the directional args of the list."""
        action = ref.action
        directional = [p for p in action.params if p.direction != ""]
        if not directional and self.ctl_args_for(action) == list(ctl_args):
            return self.action_fn(action, ref.loc)
        fn = self.names.new("tact_" + py_ident(action.cp_name))
        data = action.data_params()
        saved = self._begin_def()
        self.fc = FuncCtx(env, ctl_args, [], kind="control")
        names = [f"d{i}" for i in range(len(data))]
        self.emit(f"def {fn}({', '.join(list(ctl_args) + names)}):")
        self.src.indent()
        fake_args = list(ref.args)
        for p, n in zip(data, names):
            var = ir.Var(n, p.type)
            self.fc.env[id(var)] = n
            fake_args.append(ir.VarRef(var, type=p.type))
        self.gen_call(self.action_fn(action, ref.loc), action.params, fake_args,
                      self.ctl_args_for(action), False, False,
                      may_exit=self.exits.action(action), copy_composites=sees_outer_state(action))
        self.src.dedent()
        self._end_def(saved)
        return fn

    def _const_arg(self, e) -> int:
        if isinstance(e, ir.Const):
            v = e.value
            if isinstance(v, bool):
                return int(v)
            t = scalar_type(e.type) if e.type is not None else None
            if isinstance(t, ir.BitT) and v < 0:
                return v & ((1 << t.width) - 1)
            return v
        raise P4Error(getattr(e, "loc", None), "action argument must be a compile-time constant")

    def _const_entry(self, t: ir.TableDecl, fields, decl: ir.TableEntryDecl):
        match = []
        non_sel = [f for f in fields if f.match_kind != "selector"]
        keys = decl.keys
        if len(keys) == 1 and isinstance(keys[0], ir.KeysetTuple):
            keys = keys[0].items
        for f, ks in zip(non_sel, keys):
            full = (1 << f.width) - 1
            kind = f.match_kind
            if isinstance(ks, ir.KeysetDefault):
                item = {"exact": None, "lpm": (0, 0), "ternary": (0, 0),
                        "range": (0, full), "optional": None}[kind]
                if kind == "exact":
                    raise P4Error(ks.loc, "default keyset on an exact key")
            elif isinstance(ks, ir.KeysetMask):
                v, m = self._const_arg(ks.value) & full, self._const_arg(ks.mask) & full
                if kind == "lpm":
                    plen = bin(m).count("1")
                    item = (v & m, plen)
                else:
                    item = (v & m, m)
            elif isinstance(ks, ir.KeysetRange):
                item = (self._const_arg(ks.lo) & full, self._const_arg(ks.hi) & full)
            else:
                v = self._const_arg(ks) & full
                item = {"exact": v, "lpm": (v, f.width), "ternary": (v, full),
                        "range": (v, v), "optional": v}[kind]
            match.append(item)
        call = runtime_tables.ActionCall(decl.action.action.cp_name,
                              tuple(self._const_arg(a) for a in decl.action.args))
        return runtime_tables.TableEntry(tuple(match), priority=decl.priority or 0, action=call, is_const=True)

    # -------------------------------------------------------- field lists

    def field_list_from_index(self, e) -> str:
        index = _const_int(e, "field list index")
        key = ("index", index)
        if key not in self.field_lists:
            self.field_lists[key] = self.names.new(f"fl_{index}")
        return self.field_lists[key]

    def field_list_from_data(self, data) -> str:
        paths = []
        items = data.items if isinstance(data, ir.ListExpr) else (
            list(data.fields.values()) if isinstance(data, ir.StructExpr) else [data])
        for item in items:
            path = self._meta_path(item)
            if path is not None:
                paths.append(path)
        key = ("paths", tuple(paths))
        if not paths:
            return "NO_FIELDS"
        if key not in self.field_lists:
            self.field_lists[key] = self.names.new("fl_data")
        return self.field_lists[key]

    def _meta_path(self, e):
        names = []
        while isinstance(e, ir.Member):
            names.append(e.name)
            e = e.base
        if not isinstance(e, ir.VarRef) or not isinstance(e.target, ir.Param):
            return None
        return (e.target.type, tuple(reversed(names)))

    def _gen_field_lists(self) -> None:
        s = self.src
        s.line("def NO_FIELDS(om, osm, nm, nsm):")
        s.indent()
        s.line("pass")
        s.dedent()
        for key, fn in self.field_lists.items():
            s.line(f"def {fn}(om, osm, nm, nsm):")
            s.indent()
            lines = []
            if key[0] == "index":
                lines = self._annotated_copies(self.meta_type, key[1], ())
            else:
                for root_t, path in key[1]:
                    root = ("m" if root_t is self.meta_type else
                            "sm" if root_t is self.sm_type else None)
                    if root is None or not path:
                        continue
                    dotted = "." + ".".join(path)
                    lines.append(f"n{root}{dotted} = _cp(o{root}{dotted})")
            for line in lines or ["pass"]:
                s.line(line)
            s.dedent()
        self.globals["_cp"] = lambda v: v._copy() if hasattr(v, "_copy") else v

    def _annotated_copies(self, t, index: int, path: tuple) -> list[str]:
        t = ir.strip_newtype(t)
        lines = []
        if not isinstance(t, ir.StructT):
            return lines
        for f in t.fields:
            ann = ir.find_annotation(f.annotations, "field_list")
            p = path + (f.name,)
            if ann is not None and index in self._ann_ints(ann):
                dotted = "." + ".".join(p)
                lines.append(f"nm{dotted} = _cp(om{dotted})")
            elif isinstance(ir.strip_newtype(f.type), ir.StructT):
                lines += self._annotated_copies(f.type, index, p)
        return lines

    @staticmethod
    def _ann_ints(ann) -> list[int]:
        if ann.args:
            return [a for a in ann.args if isinstance(a, int)]
        out = []
        for tok in ann.body.replace(",", " ").split():
            try:
                out.append(int(tok, 0))
            except ValueError:
                pass
        return out


@functools.lru_cache(maxsize=16)
def _compiled(source: str, filename: str):
    """compile() of a generated module, once per text: every switch of a fabric generates the
    same text, and compiling it is half of making a switch (exec stays per instance)."""
    return compile(source, filename, "exec")


def compile_program(program: ir.Program, clock, rng, drop_port: int = 511) -> CompiledProgram:
    """Compile, with the semantic guard: a bug of ours (an exception that
    is not a P4Error) becomes one line at the P4 construct being compiled."""
    pc = ProgramCompiler(program, clock, rng, drop_port)
    try:
        out = pc.compile()
    except P4Error:
        raise
    except Exception as e:  # noqa: BLE001 - the contract is one line, never a traceback
        raise internal_error(e, ", ".join(program.source_files[:1])) from e
    ns = out.namespace
    for dispatch, dnames in getattr(pc, "_pending_dispatch", []):
        for action, fn in dnames.items():
            dispatch[action] = ns[fn]
    return out
