"""Forms the P4 programs of real fabrics use (SONiC PINS, DASH, ONF's
fabric.p4, switch.p4), each in a small self-contained program, checked
against the P4Info p4c gives them: multi-line string literals in
annotations (comments inside are text), free-form annotation bodies as
single-space token lists, string values in structured annotations, global
field names in key names, size semantics of selectors, externs declared
through a typedef name."""

from __future__ import annotations

import pytest

from testbed.p4model.errors import P4Error
from testbed.p4model.frontend import load_source
from testbed.p4model.p4info import generate

TAIL = """
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out p, in H h) { apply { } }
V1Switch(P(), C(), I(), E(), C(), D()) main;
"""

HEAD = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct H { eth_t eth; }
struct M { bit<10> vrf; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.eth); transition accept; }
}
"""


def info_of(ingress: str, top: str = "", head: str = HEAD):
    return generate(load_source(head + top + ingress + TAIL, "forms.p4"))


def test_multiline_string_annotation_keeps_its_text_and_comments():
    info = info_of('''
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action a() { }
    @entry_restriction("
    // The VRF ID 0 (or '' in P4Runtime) is the default VRF.
    vrf_id != 0;
  ") @p4runtime_role("sdn_controller")
    table t {
        key = { m.vrf: exact @name("vrf_id"); }
        actions = { a; }
    }
    apply { t.apply(); }
}''')
    [t] = info.tables
    assert list(t.preamble.annotations) == [
        '@entry_restriction("\n    // The VRF ID 0 (or \'\' in P4Runtime) is the default VRF.\n'
        '    vrf_id != 0;\n  ")',
        '@p4runtime_role("sdn_controller")']


def test_multiline_string_keeps_later_line_numbers():
    with pytest.raises(P4Error) as e:
        info_of('''
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    @doc("one
    two // not a comment
    three")
    action a() { undefined_name = 1; }
    apply { }
}''')
    # the error is on the line of `undefined_name` (4 lines below the string's start)
    line = (HEAD + 'control I(inout H h, inout M m, inout standard_metadata_t sm) {\n').count("\n") + 1 + 4
    assert f":{line}:" in str(e.value), str(e.value)


def test_free_form_annotation_body_is_its_tokens():
    info = info_of('''
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    @scrabble(
        - What's six by nine?
          0xdeadbeef &&& 8w3
    )
    action a() { }
    table t { key = { } actions = { a; } }
    apply { t.apply(); }
}''')
    action = [a for a in info.actions if a.preamble.name.endswith(".a")][0]
    assert list(action.preamble.annotations) == [
        "@scrabble(- What ' s six by nine ? 0xdeadbeef &&& 8w3)"]


def test_a_stray_character_outside_annotations_is_one_line():
    with pytest.raises(P4Error) as e:
        info_of('''
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1 ' 2; }
}''')
    assert "unexpected character \"'\"" in str(e.value)
    assert "\n" not in str(e.value)


def test_string_values_of_structured_annotations_stay_strings():
    info = info_of('''
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action a() { }
    @SaiTable[name="vrf", isobject="true", api="a&&b", flag=true, n=!false]
    table t { key = { } actions = { a; } }
    apply { t.apply(); }
}''')
    [t] = info.tables
    [sa] = t.preamble.structured_annotations
    values = {kv.key: kv.value for kv in sa.kv_pair_list.kv_pairs}
    assert values["isobject"].string_value == "true"
    assert values["api"].string_value == "a&&b"
    assert values["flag"].bool_value is True
    assert values["n"].bool_value is True


def test_a_global_field_name_replaces_the_whole_key_name():
    head = HEAD.replace("struct M { bit<10> vrf; }",
                        'struct l3_t { bit<10> rmac_group; }\n'
                        'struct M { bit<10> vrf; @name(".l3_metadata") l3_t l3; @name("local") l3_t l3b; }')
    head = head.replace("struct H { eth_t eth; }", 'struct H { @name(".ethernet") eth_t eth; eth_t[2] tag; }')
    info = info_of('''
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action a() { }
    table t {
        key = {
            m.l3.rmac_group: exact;
            m.l3b.rmac_group: exact;
            h.eth.src: ternary;
            h.eth.isValid(): exact;
            h.eth.type & 0xff: ternary;
        }
        actions = { a; }
    }
    apply { t.apply(); }
}''', head=head)
    [t] = info.tables
    assert [f.name for f in t.match_fields] == [
        "l3_metadata.rmac_group", "m.local.rmac_group", "ethernet.src", "ethernet.$valid$",
        "ethernet.type & 0xff"]


def test_selector_with_only_max_group_size_has_no_size_semantics():
    info = info_of('''
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action a() { }
    @max_group_size(16)
    action_selector(HashAlgorithm.crc16, 1024, 16) plain;
    @max_group_size(8) @selector_size_semantics("sum_of_weights")
    action_selector(HashAlgorithm.crc16, 1024, 16) weighted;
    table t { key = { h.eth.src: selector; } actions = { a; } implementation = plain; }
    table u { key = { h.eth.src: selector; } actions = { a; } implementation = weighted; }
    apply { t.apply(); u.apply(); }
}''')
    semantics = {p.preamble.name: p.WhichOneof("selector_size_semantics") for p in info.action_profiles}
    assert semantics == {"I.plain": None, "I.weighted": "sum_of_weights"}


def test_an_extern_declared_through_a_typedef_has_no_p4info_entry():
    info = info_of('''
typedef register<bit<69>> table_t;
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    table_t(16) hidden_regs;
    register<bit<8>>(4) plain_regs;
    apply {
        bit<69> v; hidden_regs.read(v, 0); hidden_regs.write(1, v);
        plain_regs.write(0, 1);
    }
}''')
    assert [r.preamble.name for r in info.registers] == ["I.plain_regs"]
