"""A variant's ideal: the fluid model (telemetry.fluid) run on its planned messages and placement.

Units: a flow's progress is counted in bits of DATA cells on the wire (each
message is its cell count x the DATA cell's wire size, no retransmissions).
Its usage is 1 on its data path (1/k on each of k sprayed paths) plus, on the
links its peer's control cells take, the control bytes the run's hosts sent
per byte of DATA they received (ACKs, NACKs, credits: measured per host from
the agents' per-type send counts), so the ideal pays for the transport's own
control traffic but for no loss.  Messages start at their planned time, back
to back per flow; dependencies between messages (collectives) are not
modelled, so for them the ideal is a lower bound.
"""

from __future__ import annotations

from testbed.cells import segment, wire
from testbed.telemetry import fluid, placement
from testbed.telemetry.links import LinkLoad, host_split, by_tier


def _flows(planned: list[dict]) -> dict[tuple[str, str], list[dict]]:
    flows: dict[tuple[str, str], list[dict]] = {}
    for m in sorted(planned, key=lambda m: m["start_us"]):  # stable: the agents' order
        flows.setdefault((m["src"], m["dst"]), []).append(m)
    return flows


def data_wire_bytes(size_bytes: int, cell_size: int) -> int:
    cells = segment.cell_count(size_bytes + segment.TRAILER_LEN, cell_size)
    return cells * wire.wire_bytes(cell_size, wire.DATA)


def is_spray(load_balancing: str) -> bool:
    return load_balancing.startswith("spray")


def ideal_for_variant(topology, scenario: dict, planned: list[dict], host_stats: dict[str, dict],
                      loads: list[LinkLoad], scenario_obj=None, packet_slot_bytes: int | None = None) -> dict | None:
    """Ideal figures and the placement they assume; None when nothing was planned.
    `packet_slot_bytes`: on bmv2 a link is a packets/s queue, so a control cell costs
    as much of it as a data cell of this wire size; the control load is counted so.
    `scenario_obj` (the variant's Scenario) lets ECMP paths be traced through the fabric plan.
    Messages between two GPUs of one server take their local channel, not the fabric: they are
    left out of the fluid model (the collectives' own ideal covers them)."""
    planned = [m for m in planned if not topology.same_server(m["src"], m["dst"])]
    if not planned:
        return None
    cell_size = scenario["fabric"]["cell_size"]
    flows = _flows(planned)
    capacity = {load.link: load.rate_mbps * 1e6 for load in loads}
    data_bytes = {k: sum(data_wire_bytes(m["size_bytes"], cell_size) for m in ms) for k, ms in flows.items()}
    names = {k: f"{k[0]}->{k[1]}" for k in flows}
    candidates = {names[k]: placement.candidate_paths(topology, *k) for k in flows}
    reverse = {names[k]: placement.candidate_paths(topology, k[1], k[0]) for k in flows}
    spray = is_spray(scenario["fabric"]["load_balancing"])
    measured_data = {load.link: load.data_bytes for load in loads if load.data_bytes is not None}
    measured_control = {load.link: load.control_bytes for load in loads if load.control_bytes is not None}
    volumes = {names[k]: float(v) for k, v in data_bytes.items()}
    how = {}
    distinguishing = {link for paths in candidates.values() for path in paths for link in path
                      if sum(1 for p in paths if link in p) < len(paths)}
    traced = None
    if not spray and scenario_obj is not None:
        pairs = list(flows) + [(dst, src) for src, dst in flows]
        traced = placement.traced_paths(topology, scenario_obj, host_stats, pairs)
    control_paths = None
    if spray:
        data_paths = {n: paths for n, paths in candidates.items()}
        how["data"] = "split evenly over every equal-cost path"
        # ACKs and credits are sprayed too (they echo the mirrored entropy, or the switches
        # spray every cell): evenly over the reverse paths, like the data.
        control_paths = reverse
        how["control"] = "split evenly over the reverse paths, sprayed like the data"
    elif traced is not None:
        data_paths = {names[k]: [traced[k]] for k in flows}
        control_paths = {names[k]: [traced[(k[1], k[0])]] for k in flows}
        how["data"] = ("one path per flow, traced through the fabric plan (testbed.control.trace) with the "
                       "flow's UDP source port")
        how["control"] = "the receiver's own flow towards the sender, traced the same way"
        if all(load.data_bytes is not None for load in loads if load.tier != "host->tor"):
            how["data_unexplained_share"] = placement.unexplained_share(
                {n: p[0] for n, p in data_paths.items()}, volumes, measured_data, distinguishing)
    elif all(load.data_bytes is not None for load in loads if load.tier not in ("host->tor",)):
        chosen, residual = placement.infer_single_paths(candidates, volumes, measured_data)
        data_paths = {n: [p] for n, p in chosen.items()}
        how["data"] = "one path per flow, inferred from the switches' DATA bytes per port"
        how["data_unexplained_share"] = residual
    else:
        return {"unavailable": "ECMP paths neither traced (no source ports) nor inferred (no DATA bytes per port)"}
    control_ratio = _control_ratio(flows, host_stats, data_bytes, cell_size)
    # on bmv2 a switch port is a packets/s queue: there a control cell costs a data cell's slot, while
    # the receiver's own NIC (its agent's pacer) still sends bits
    slot_ratio = (_control_ratio(flows, host_stats, data_bytes, cell_size, packet_slot_bytes)
                  if packet_slot_bytes else control_ratio)
    if packet_slot_bytes:
        how["packet_slots"] = (f"every packet a switch sends costs one {packet_slot_bytes} B data cell's time "
                               "(bmv2's packets/s queues); host NICs send bytes")
    control_volume = {names[k]: volumes[names[k]] * control_ratio.get(k[1], 0.0) for k in flows}
    switch_egress_split = all(load.control_bytes is not None for load in loads if load.tier != "host->tor")
    if control_paths is not None:
        pass
    elif switch_egress_split and any(control_volume.values()):
        chosen, residual = placement.infer_single_paths(reverse, control_volume, measured_control)
        control_paths = {n: [p] for n, p in chosen.items()}
        how["control"] = "one reverse path per flow, inferred from the switches' control bytes per port"
        how["control_unexplained_share"] = residual
    else:
        control_paths = reverse
        how["control"] = "split evenly over the reverse paths"
    model_flows = []
    for k, messages in flows.items():
        n = names[k]
        usage = fluid.usage_from_paths(data_paths[n])
        ratio, slots = control_ratio.get(k[1], 0.0), slot_ratio.get(k[1], 0.0)
        if ratio:
            control = fluid.usage_from_paths(control_paths[n], slots)
            host_links = {link: share * ratio / slots for link, share in control.items()
                          if topology.node(link.split(":", 1)[0]).is_host}
            fluid.add_usage(usage, {**control, **host_links})
        sizes = [(data_wire_bytes(m["size_bytes"], cell_size) * 8.0, m["start_us"] / 1e6) for m in messages]
        model_flows.append(fluid.FluidFlow(n, sizes, usage))
    result = fluid.simulate(model_flows, capacity)
    return _figures(result, flows, names, loads, how, data_paths)


def _control_ratio(flows, host_stats, data_bytes, cell_size, slot_bytes=None) -> dict[str, float]:
    """Per receiving host: control bytes it sent per DATA byte it was planned to receive.
    NACKs are left out: they answer losses, and the fluid ideal loses nothing."""
    received: dict[str, int] = {}
    for (src, dst), nbytes in data_bytes.items():
        received[dst] = received.get(dst, 0) + nbytes
    out = {}
    for host, nbytes in received.items():
        split = host_split(host_stats.get(host), cell_size, slot_bytes, skip=frozenset({wire.NACK}))
        if split is not None and nbytes:
            out[host] = split[1] / nbytes
    return out


def _figures(result: fluid.FluidResult, flows, names, loads: list[LinkLoad], how: dict, data_paths) -> dict:
    start, end = result.start_s(), result.end_s()
    window = end - start
    payload = sum(m["size_bytes"] for ms in flows.values() for m in ms)
    per_message = []
    for k, messages in flows.items():
        for m, (first_tx, done) in zip(messages, result.messages[names[k]]):
            per_message.append({"src": k[0], "dst": k[1], "msg_id": m["msg_id"],
                                "queueing_ms": (first_tx - m["start_us"] / 1e6) * 1e3,
                                "completion_ms": (done - first_tx) * 1e3})
    from testbed.telemetry.messages import nearest_rank

    completion = [m["completion_ms"] for m in per_message]
    ideal_loads = []
    for load in loads:
        bits = result.link_bits.get(load.link, 0.0)
        util = bits / (window * load.rate_mbps * 1e6) if window > 0 else 0.0
        ideal_loads.append(LinkLoad(load.link, load.tier, load.source, load.peer, load.rate_mbps, round(bits / 8),
                                    None, None, util, None, None))
    return {
        "placement": how,
        "paths": {n: paths for n, paths in data_paths.items()},
        "window_s": [start, end],
        "goodput_mbps": payload * 8 / window / 1e6 if window > 0 else None,
        "completion_p50_ms": nearest_rank(completion, 50),
        "completion_p99_ms": nearest_rank(completion, 99),
        "completion_samples": len(completion),
        "messages": per_message,
        "link_utilisation": {load.link: load.utilisation for load in ideal_loads},
        "tiers": {t: {"utilisation_mean": v["utilisation_mean"]} for t, v in by_tier(ideal_loads).items()},
    }
