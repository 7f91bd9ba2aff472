"""v1model's per-packet shortcuts against the general path they stand for:
which packet-context requests a program can make (CompiledProgram.requests),
a plain program's ingress and egress that skip looking for them,
egress_now against egress with zero-wait queue metadata, and ingress's
inline first pass against the after-ingress path."""

from __future__ import annotations

import random
import re
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from testbed.errors import TestbedError
from testbed.p4model.runtime import hashing
from testbed.p4model.clock import ManualClock
from testbed.p4model.backend.python.program import REQUESTS
from testbed.p4model.runtime.tables import ActionCall, TableEntry
from testbed.p4model.v1model import INGRESS_CLONE, NORMAL, REPLICATION, QueueMeta

from .conftest import PROGRAMS, load_program

P4SRC = Path(__file__).resolve().parents[3] / "p4src"
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


# -- CompiledProgram.requests --------------------------------------------------

# what each program's statements can ask of the packet context (read off the
# sources: a meter's execute_meter is no request, a direct meter on a table is)
EXPECTED_REQUESTS = {
    "basic_ipv4.p4": set(),
    "p4info_features.p4": {"digest", "direct_meter"},
    "stf_features.p4": {"clone"},
    "v1m_externs.p4": {"digest"},
    "v1m_flow.p4": {"clone", "resubmit", "recirculate", "truncate"},
}
_REQUEST_WORDS = re.compile(r"\b(clone\w*|resubmit\w*|recirculate\w*|truncate|digest|direct_meter)\b")


def _code(path: Path) -> str:
    """The program text without comments."""
    return re.sub(r"//[^\n]*|/\*.*?\*/", "", path.read_text(), flags=re.S)


@pytest.mark.parametrize("name", sorted(EXPECTED_REQUESTS))
def test_requests_are_what_the_program_asks_for(name):
    """requests names exactly the clone/digest/resubmit/recirculate/truncate/
    direct-meter requests some statement of the program makes."""
    requests = load_program(name).compiled.requests
    assert requests == EXPECTED_REQUESTS[name]
    assert requests <= set(REQUESTS)


def test_programs_naming_no_request_make_none():
    """Every loadable test program whose source names none of the request
    externs has an empty requests set, so it runs plain."""
    checked = []
    for path in sorted(PROGRAMS.glob("*.p4")):
        if _REQUEST_WORDS.search(_code(path)):
            continue
        pipe = load_program(path.name)
        assert pipe.compiled.requests == set(), path.name
        assert pipe.switch._plain, path.name
        checked.append(path.name)
    assert "basic_ipv4.p4" in checked and len(checked) >= 10


def test_requests_follow_the_statements_compiled():
    """The same source with and without the egress requests (#ifdef REQUESTS):
    only the compiled statements count."""
    assert load_program("v1m_queue_meta.p4").compiled.requests == set()
    pipe = load_program("v1m_queue_meta.p4", defines={"REQUESTS": "1"})
    assert pipe.compiled.requests == {"clone", "recirculate", "truncate"}
    assert not pipe.switch._plain


# -- a plain program: the shortcut gives what the general path gives ----------


def _ipv4(dst: int, src: int = 0x0A000009, tos: int = 0, payload: bytes = b"\xde\xad\xbe\xef") -> bytes:
    """Ethernet + IPv4 (UDP protocol number, valid header checksum) + payload."""
    ip = struct.pack("!BBHHHBBHII", 0x45, tos, 20 + len(payload), 1, 0, 64, 17, 0, src, dst)
    ip = ip[:10] + hashing.csum16(ip).to_bytes(2, "big") + ip[12:]
    return bytes.fromhex("000000000001" "0000000000aa" "0800") + ip + payload


def _stf_setup(pipe, stf: Path) -> list:
    """Apply the control-plane lines of an STF file (as `testbed stf` does);
    its packets are returned as seed frames (port, bytes)."""
    from testbed.p4model.control_plane import ControlPlane
    from testbed.p4model.p4info import generate
    from testbed.p4model.stf import build
    from testbed.p4model.stf.parser import IGNORED, parse_file

    info = generate(pipe.program)
    builder = build.Builder(ControlPlane(pipe, info), info)
    seeds = []
    for cmd in parse_file(stf):
        if cmd.kind == "packet":
            seeds.append((cmd.port, bytes.fromhex(cmd.data)))
        elif cmd.kind != "expect" and cmd.kind not in IGNORED:
            getattr(builder, cmd.kind)(cmd)
    return seeds


def _switch_l3_cpu_setup(pipe) -> list:
    """Routes (one to the CPU port), a DSCP priority; IPv4 and PacketOut seeds."""
    lpm = next(t for t in pipe.tables if t.endswith("ipv4_lpm"))
    prio = next(t for t in pipe.tables if t.endswith("dscp_prio"))
    action = {a.rsplit(".", 1)[-1]: a for t in (lpm, prio) for a in pipe.tables[t].action_names}
    for i in range(4):
        pipe.tables[lpm].insert(TableEntry(match=((0x0A000000 | (i << 8), 24),),
                                           action=ActionCall(action["set_nhop"], (0x020000000100 + i, 1 + i))))
    pipe.tables[lpm].insert(TableEntry(match=((0x0A000500, 24),), action=ActionCall(action["send_to_cpu"], ())))
    pipe.tables[prio].insert(TableEntry(match=(46,), action=ActionCall(action["set_prio"], (5,))))
    seeds = [(1, _ipv4(0x0A000005 | (i << 8), tos=(46 << 2) | (i & 3))) for i in range(6)]
    seeds += [(255, (p << 7).to_bytes(2, "big") + _ipv4(0x0B000001)) for p in (1, 2, 3)]
    return seeds


def _generic_seeds() -> list:
    """For programs that read an op byte first and forward without tables."""
    return [(port, bytes([op, port]) + bytes(range(2, 48))) for op in range(16) for port in (0, 1, 3)]


FABRIC_STF = ("fabric_forwarding.stf", "fabric_ecmp.stf", "fabric_spray_random.stf")


def _load_case(path: Path, setup):
    """Two pipelines of `path` (same seed, same state) and the seed frames."""
    from testbed.p4model.pipeline import load

    pair = []
    for _ in range(2):
        pipe = load(path, clock=ManualClock(), seed=1)
        pipe.pre.set_clone_session(5, [(0, 4)])
        pipe.pre.set_group(7, [(1, 3), (2, 2)])
        seeds = setup(pipe)
        pair.append(pipe)
    return pair[0], pair[1], seeds


@pytest.fixture(scope="module")
def plain_twins():
    """name -> (plain pipeline, the same with _plain off, seed frames), for
    every plain test program and fabric.p4 with three of its STF set-ups."""
    cases = {}
    for path in sorted(PROGRAMS.glob("*.p4")):
        try:
            probe = load_program(path.name)
        except TestbedError:  # a program the target cannot load (yet)
            continue
        if probe.compiled.requests:
            continue
        stf = path.with_suffix(".stf")
        if path.name == "switch_l3_cpu.p4":
            setup = _switch_l3_cpu_setup
        elif stf.exists():
            setup = lambda pipe, stf=stf: _stf_setup(pipe, stf)  # noqa: E731
        else:
            setup = lambda pipe: _generic_seeds()  # noqa: E731
        cases[path.name] = _load_case(path, setup)
    for name in FABRIC_STF:
        plain, general, seeds = _load_case(P4SRC / "fabric.p4",
                                           lambda pipe, n=name: _stf_setup(pipe, P4SRC / "tests" / n))
        if plain.switch._plain:
            cases[name] = plain, general, seeds
    for plain, general, _ in cases.values():
        assert plain.switch._plain
        general.switch._plain = False
    return cases


def _mutate(data: bytes, edits, cut) -> bytes:
    """`data` with bytes overwritten (edits: (position, value), the position
    taken modulo the length) and cut to `cut` bytes when that is given."""
    out = bytearray(data)
    for pos, value in edits:
        if out:
            out[pos % len(out)] = value
    return bytes(out if cut is None else out[:cut])


def _same(plain, general, port: int, data: bytes) -> list:
    out = plain.process(port, data)
    assert out == general.process(port, data)
    assert plain.stats == general.stats
    return out


def _state(pipe) -> tuple:
    return ({n: list(r.values) for n, r in pipe.registers.items()},
            {n: (list(c.packets), list(c.bytes)) for n, c in pipe.counters.items()})


def test_plain_twins_cover_the_programs(plain_twins):
    """The plain/general comparison runs on basic_ipv4, switch_l3_cpu, the
    queue-metadata program and fabric.p4 (while fabric.p4 is plain) at least."""
    from testbed.p4model.pipeline import load

    assert {"basic_ipv4.p4", "switch_l3_cpu.p4", "v1m_queue_meta.p4"} <= set(plain_twins)
    assert len(plain_twins) >= 15
    if not load(P4SRC / "fabric.p4", clock=ManualClock()).compiled.requests:
        assert set(FABRIC_STF) <= set(plain_twins)


def test_plain_path_equals_general_path_on_a_fixed_sample(plain_twins):
    """Seed frames, mutated seeds and random bytes: same outputs, stats and
    register/counter contents with and without the plain shortcut; every
    program forwards some of them and mutated seeds are mostly forwarded."""
    rng = random.Random(7)
    mutated = forwarded_mutated = 0
    for name, (plain, general, seeds) in plain_twins.items():
        sent = 0
        for port, data in seeds:
            sent += len(_same(plain, general, port, data))
        for _ in range(60):
            port, data = rng.choice(seeds)
            edits = [(rng.randrange(1 << 16), rng.randrange(256)) for _ in range(rng.randrange(3))]
            cut = rng.choice([None, None, None, rng.randrange(len(data) + 1)])
            out = _same(plain, general, port, _mutate(data, edits, cut))
            sent += len(out)
            mutated += 1
            forwarded_mutated += bool(out)
        for _ in range(30):
            sent += len(_same(plain, general, rng.choice([0, 1, 2, 255]), rng.randbytes(rng.randrange(80))))
        assert sent > 0, f"{name}: nothing forwarded, the comparison would be vacuous"
        assert plain.stats["transmitted"] == sent
        assert _state(plain) == _state(general), name
    assert forwarded_mutated >= mutated // 3


@st.composite
def _frames(draw, seeds):
    if draw(st.integers(0, 3)) == 0:
        port = draw(st.one_of(st.sampled_from([0, 1, 2, 3, 255]), st.integers(0, 511)))
        return port, draw(st.binary(max_size=96))
    port, data = draw(st.sampled_from(seeds))
    edits = draw(st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=3))
    cut = draw(st.one_of(st.none(), st.integers(0, len(data))))
    return port, _mutate(data, edits, cut)


@settings(max_examples=150, **SETTINGS)
@given(data=st.data())
def test_plain_path_equals_general_path(plain_twins, data):
    """Random frames (random bytes, and mutated seed frames each program
    routes): a plain program gives the same outputs and stats whether or not
    v1model takes the plain shortcut."""
    name = data.draw(st.sampled_from(sorted(plain_twins)), label="program")
    plain, general, seeds = plain_twins[name]
    for port, frame in data.draw(st.lists(_frames(seeds), min_size=1, max_size=4), label="frames"):
        _same(plain, general, port, frame)


# -- egress_now == egress(job, QueueMeta(now, 0, 0, 0, now)) --------------------

CTL = 2           # ctl_t: op, port
QMETA = 35        # qmeta_t's bytes
_FAR_QUEUE = QueueMeta(1_000, 3, 250, 2, 1_250)   # for jobs egress made (clones, recirculations)


def _qmeta(frame: bytes) -> dict:
    q = frame[CTL:CTL + QMETA]
    take = iter((4, 4, 4, 4, 6, 6, 2, 4, 1))
    names = ("enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth", "egress_global_timestamp",
             "ingress_global_timestamp", "egress_port", "packet_length", "instance_type")
    out, at = {}, 0
    for name in names:
        n = next(take)
        out[name] = int.from_bytes(q[at:at + n], "big")
        at += n
    return out


@pytest.fixture(scope="module", params=["plain", "requests"])
def queue_twins(request):
    """Two pipelines of v1m_queue_meta.p4, plain or built with its egress
    requests (E2E clone, recirculation, truncation)."""
    defines = {"REQUESTS": "1"} if request.param == "requests" else None
    pair = []
    for _ in range(2):
        pipe = load_program("v1m_queue_meta.p4", defines=defines)
        pipe.pre.set_clone_session(5, [(0, 4)])
        pair.append(pipe)
    assert pair[0].switch._plain == (request.param == "plain")
    return pair


def _egress_now(pipe, job, now_us: int):
    """egress_now as (packets, jobs): it returns a lone frame for job.port as bytes."""
    result = pipe.unguarded.egress_now(job, now_us)
    if isinstance(result, bytes):
        return [(job.port, result)], []
    return result


def _drain(pipe, jobs, now_us: int, now: bool) -> list:
    """Egress jobs an egress pass made, and theirs (bounded): egress_now at
    `now_us` when `now`, else egress with the same queue metadata spelt out."""
    seen, queue = [], list(jobs)
    while queue and len(seen) < 16:
        job = queue.pop(0)
        seen.append(("job", job.port, job.sm.instance_type, job.passes))
        if now:
            packets, more = _egress_now(pipe, job, now_us)
        else:
            packets, more = pipe.unguarded.egress(job, QueueMeta(now_us, 0, 0, 0, now_us))
        seen += list(packets)
        queue += more
    return seen


@settings(max_examples=100, **SETTINGS)
@given(now_us=st.integers(0, 1 << 64), op=st.integers(0, 5), out_port=st.integers(0, 255),
       in_port=st.integers(0, 511), payload=st.binary(max_size=24))
@example(now_us=(1 << 32) + 5, op=0, out_port=3, in_port=1, payload=b"x")
@example(now_us=(1 << 48) + (1 << 32) + 7, op=0, out_port=3, in_port=1, payload=b"")
@example(now_us=(1 << 32) - 1, op=2, out_port=9, in_port=1, payload=b"clone")
@example(now_us=(1 << 33), op=3, out_port=9, in_port=1, payload=b"recirculate")
def test_egress_now_is_egress_with_a_queue_left_at_once(queue_twins, now_us, op, out_port, in_port, payload):
    """egress_now(job, t) gives what egress(job, QueueMeta(t, 0, 0, 0, t))
    gives, for a plain program and one with egress requests; the frame shows
    enq_timestamp / egress_global_timestamp = t masked to 32 / 48 bits,
    zero depths and wait, and ingress(port, data, t)'s timestamp."""
    a, b = queue_twins
    data = bytes([op, out_port]) + payload
    jobs_a = a.unguarded.ingress(in_port, data, now_us)
    jobs_b = b.unguarded.ingress(in_port, data, now_us)
    assert len(jobs_a) == len(jobs_b) == 1
    packets_a, jobs_after_a = _egress_now(a, jobs_a[0], now_us)
    rb = b.unguarded.egress(jobs_b[0], QueueMeta(now_us, 0, 0, 0, now_us))
    assert list(packets_a) == list(rb.packets)
    assert _drain(a, jobs_after_a, now_us, True) == _drain(b, rb.jobs, now_us, False)
    assert a.stats == b.stats
    for port, frame in packets_a:
        assert port == out_port
        if len(frame) < CTL + QMETA:   # truncated (op 4 with REQUESTS)
            continue
        q = _qmeta(frame)
        assert (q["enq_timestamp"], q["egress_global_timestamp"]) == (now_us & 0xFFFFFFFF, now_us & (1 << 48) - 1)
        assert q["enq_qdepth"] == q["deq_timedelta"] == q["deq_qdepth"] == 0
        assert q["ingress_global_timestamp"] == now_us & (1 << 48) - 1
        assert (q["egress_port"], q["packet_length"], q["instance_type"]) == (out_port, len(data), NORMAL)


def test_egress_after_a_wait_shows_the_queue(queue_twins):
    """egress with real queue metadata shows it (so the zero-wait fields
    above are egress_now's doing, not the program ignoring the TM)."""
    a, _ = queue_twins
    (job,) = a.unguarded.ingress(1, bytes([0, 2]) + b"q", 10)
    (port, frame), = a.unguarded.egress(job, QueueMeta(20, 3, 40, 2, 60)).packets
    q = _qmeta(frame)
    assert (port, q["enq_timestamp"], q["enq_qdepth"], q["deq_timedelta"], q["deq_qdepth"],
            q["egress_global_timestamp"], q["ingress_global_timestamp"]) == (2, 20, 3, 40, 2, 60, 10)


# -- ingress: the inline first pass against the after-ingress path ------------

FLOW_CTL = 11   # v1m_flow.p4's ctl_t


def _flow_pkt(op: int, tail: bytes = b"payload") -> bytes:
    return bytes([op]) + bytes(FLOW_CTL - 1) + tail


@pytest.fixture()
def flow():
    pipe = load_program("v1m_flow.p4")
    pipe.pre.set_clone_session(5, [(0, 4)])
    pipe.pre.set_group(7, [(1, 3), (2, 2)])
    return pipe


def _copies(jobs) -> list:
    return [(j.port, j.sm.instance_type, j.sm.egress_rid, j.passes) for j in jobs]


def test_packet_asking_nothing_is_one_normal_job(flow):
    """A program with requests (not plain): a packet that asks for none is
    one unicast job, NORMAL, on egress_spec's port, stamped with now_us."""
    assert not flow.switch._plain
    (job,) = flow.unguarded.ingress(0, _flow_pkt(0), 1234)
    assert (job.port, job.priority, job.sm.instance_type, job.passes) == (1, 0, NORMAL, 0)
    assert job.length == job.ingress_length == len(_flow_pkt(0))
    assert job.sm.ingress_global_timestamp == 1234
    assert flow.stats["received"] == 1 and flow.stats["dropped"] == 0


def test_requests_give_one_job_per_copy(flow):
    """I2E clone: the clone (to the session's port) then the original;
    multicast: one REPLICATION job per group member with its rid; resubmit:
    one NORMAL job of the second pass; drops (also of a multicast): none."""
    assert _copies(flow.unguarded.ingress(0, _flow_pkt(2), 0)) == [(4, INGRESS_CLONE, 0, 0), (1, NORMAL, 0, 0)]
    assert _copies(flow.unguarded.ingress(0, _flow_pkt(3), 0)) == [(3, REPLICATION, 1, 0), (2, REPLICATION, 2, 0)]
    assert _copies(flow.unguarded.ingress(0, _flow_pkt(1), 0)) == [(1, NORMAL, 0, 1)]
    assert flow.unguarded.ingress(0, _flow_pkt(6), 0) == []
    assert flow.unguarded.ingress(0, _flow_pkt(11), 0) == []
    assert flow.stats["clones"] == 1 and flow.stats["replicas"] == 2 and flow.stats["resubmits"] == 1
    assert flow.stats["dropped"] == 2


def _general_ingress(pipe, port: int, data: bytes) -> list:
    """Ingress through the general path only (what ingress() did before its
    first pass was written out): one pass, the after-ingress decisions, then
    resubmitted passes."""
    switch = pipe.switch
    switch.stats["received"] += 1
    jobs: list = []
    preserve = switch._ingress_pass(port, data, NORMAL, None, 0, jobs)
    switch._resubmit(port, data, preserve, 0, jobs)
    return jobs


def _egress_all(pipe, jobs) -> list:
    out = []
    for job in jobs:
        out.append((job.port, job.priority, job.sm.instance_type, job.sm.egress_rid, job.passes,
                    job.length, job.ingress_length, job.truncate, bytes(job.payload)))
        packets, more = pipe.unguarded.egress(job, _FAR_QUEUE)
        out += list(packets)
        if more:
            out.append(_egress_all(pipe, more))
    return out


@pytest.fixture(scope="module")
def flow_twins():
    pair = []
    for _ in range(2):
        pipe = load_program("v1m_flow.p4")
        pipe.pre.set_clone_session(5, [(0, 4)])
        pipe.pre.set_group(7, [(1, 3), (2, 2)])
        pair.append(pipe)
    return pair


@settings(max_examples=150, **SETTINGS)
@given(op=st.integers(0, 14), port=st.integers(0, 511), tail=st.binary(max_size=16))
def test_inline_first_pass_equals_the_after_ingress_path(flow_twins, op, port, tail):
    """Every op of v1m_flow.p4 (unicast, clone, multicast, resubmit, drop,
    exit, truncate, recirculation): ingress()'s inline first pass gives the
    jobs, egress outputs and stats the general after-ingress path gives."""
    fast, general = flow_twins
    data = _flow_pkt(op, tail)
    assert _egress_all(fast, fast.unguarded.ingress(port, data)) == \
        _egress_all(general, _general_ingress(general, port, data))
    assert fast.stats == general.stats
