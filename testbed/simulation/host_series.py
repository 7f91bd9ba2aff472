"""The host series a simulated run writes in `records/<host>.stats.json` under "series".

One list per key, one entry per sample: the agent's keys (`t_s`, `in_order_cells` through the
NIC, `port_tx` frames per NIC port) and the simulator's own (`tx_bytes` and `rx_bytes`, frames on
the host's NIC ports, cumulative; `messages_delivered` to the host; `messages_acked`, its own
messages fully acknowledged). Both simulators' samplers (telemetry.py, program_telemetry.py) fill
it the same way from what their hosts count.
"""

from __future__ import annotations

KEYS = ("t_s", "in_order_cells", "port_tx", "tx_bytes", "rx_bytes", "messages_delivered", "messages_acked")


class HostSeries:
    """Every host's series, appended one sample at a time."""

    def __init__(self, hosts) -> None:
        self.series: dict[str, dict[str, list]] = {h: {key: [] for key in KEYS} for h in hosts}
        self._records_seen: dict[str, int] = {}
        self._acked: dict[str, int] = {}

    def append(self, host: str, t_s: float, in_order_cells: int, port_tx: list[int], tx_bytes: int,
               rx_bytes: int, runner) -> None:
        """One sample of `host` at `t_s`; `runner` is its WorkloadRunner (None: it runs none)."""
        s = self.series[host]
        s["t_s"].append(round(t_s, 6))
        s["in_order_cells"].append(in_order_cells)
        s["port_tx"].append(port_tx)
        s["tx_bytes"].append(tx_bytes)
        s["rx_bytes"].append(rx_bytes)
        s["messages_delivered"].append(len(runner.received) if runner is not None else 0)
        if runner is not None:  # records only grow: count the new ones
            seen = self._records_seen.get(host, 0)
            self._acked[host] = self._acked.get(host, 0) + sum(
                1 for r in runner.records[seen:] if r["kind"] == "message_sent")
            self._records_seen[host] = len(runner.records)
        s["messages_acked"].append(self._acked.get(host, 0))

    def document(self, host: str, period_s: float, cell_size: int) -> dict:
        """The "series" of `host`'s stats file."""
        return dict(self.series[host], period_s=period_s, data_cell_payload_bytes=cell_size)
