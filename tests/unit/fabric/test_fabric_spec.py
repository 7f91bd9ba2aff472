"""The fabric spec: simple_switch argv per switch plus links in memory; one-line errors."""

import json

import pytest

from testbed.p4model.fabric.spec import SpecError, load_spec, parse_spec


def switch(name, grpc, thrift, ifaces=(), links=None):
    argv = [a for i in ifaces for a in ("-i", i)] + ["--thrift-port", str(thrift), "--no-p4", "--",
                                                     "--grpc-server-addr", f"127.0.0.1:{grpc}"]
    return {"name": name, "argv": argv, "links": links or {}}


def good():
    return {"switches": [
        switch("leaf1", 50001, 9091, ["1@leaf1-eth1"], {"3": {"peer": "spine1", "peer_port": 1, "name": "leaf1-eth3"}}),
        switch("spine1", 50002, 9092, [], {"1": {"peer": "leaf1", "peer_port": 3, "name": "spine1-eth1"}}),
    ]}


def test_a_good_spec_parses_with_options_and_links():
    spec = parse_spec(good())
    leaf, spine = spec.switches
    assert leaf.options.interfaces == {1: "leaf1-eth1"} and leaf.options.grpc_port == 50001
    assert leaf.links[3].peer == "spine1" and leaf.links[3].peer_port == 1
    assert spine.links[1].name == "spine1-eth1"


@pytest.mark.parametrize("change, message", [
    (lambda d: d["switches"][1]["links"].clear(), "spine1 port 1 is not linked back"),
    (lambda d: d["switches"][0]["links"]["3"].update(peer="spine9"), "its peer spine9 is not in this spec"),
    (lambda d: d["switches"][0]["links"].update({"1": {"peer": "spine1", "peer_port": 1, "name": "x"}}),
     "the port is also an interface"),
    (lambda d: d["switches"].append(dict(d["switches"][0])), "switch leaf1 is given twice"),
    (lambda d: d["switches"][1]["argv"].extend(["--thrift-port", "9091"]), "control port 9091 is also"),
    (lambda d: d["switches"][0]["argv"].append("--bogus"), "switch leaf1: unrecognized arguments: --bogus"),
    (lambda d: d["switches"][0]["argv"].extend(["--priority-queues", "9"]), "--priority-queues 9 must be in 1..8"),
    (lambda d: d["switches"][0]["links"]["3"].pop("name"), "expected exactly the keys peer, peer_port, name"),
    (lambda d: d.update(extra=1), "unknown key(s) in the spec: extra"),
])
def test_a_bad_spec_is_one_sentence_naming_the_place(change, message):
    data = good()
    change(data)
    with pytest.raises(SpecError) as raised:
        parse_spec(data)
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_a_file_that_is_not_json_names_the_file(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text("{")
    with pytest.raises(SpecError, match="spec.json: not JSON"):
        load_spec(str(path))
    path.write_text(json.dumps(good()))
    assert len(load_spec(str(path)).switches) == 2
