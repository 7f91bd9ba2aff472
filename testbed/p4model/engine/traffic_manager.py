"""EngineTrafficManager: a switch's TrafficManager whose packets live in the native engine.

Rule: the settings stay in this object (the TM's text commands and the controller's plan set
them as before) and every change is copied into the engine at once; the queue, port and PFC
counters and the dequeue lag are read back from the engine in the Python TM's own row shapes,
so everything that reads a TM (tm_stats, queue_stats, a run's costs) reads the engine's."""

from __future__ import annotations

from testbed.p4model.engine.binding import NativeFabric
from testbed.p4model.tm.model import CLASSES, TMConfigError, TrafficManager, check_port


class EngineTrafficManager(TrafficManager):
    """A TrafficManager whose settings are copied into the engine and whose counters come from it."""

    _engine: NativeFabric
    _index: int

    def bind(self, engine: NativeFabric, index: int) -> None:
        self._engine, self._index = engine, index

    def _sync(self) -> None:
        self._engine.sync_tm(self._index, self)

    def _advance(self) -> None:  # the engine holds the packets: nothing to advance here
        pass

    def _on_queues(self, setting, value, port, priority) -> int:
        n = super()._on_queues(setting, value, port, priority)
        self._sync()
        return n

    def _on_ports(self, setting, value, port) -> int:
        n = super()._on_ports(setting, value, port)
        self._sync()
        return n

    def set_pfc(self, xoff, xon, priority=0, pool=None) -> dict:
        result = super().set_pfc(xoff, xon, priority, pool)
        try:
            self._sync()
        except ValueError as error:
            raise TMConfigError(str(error)) from None
        return result

    def queue_stats(self, port: int | None = None) -> list[dict]:
        if port is not None:
            check_port(port)
        rows = []
        for number in sorted(self._ports):
            if port is not None and number != port:
                continue
            for prio, q in enumerate(self._ports[number].queues):
                e = self._engine.queue_stats(self._index, number, prio) or {}
                get = e.get
                rows.append({
                    "port": number, "priority": prio, "depth": get("depth", 0), "bytes": get("bytes", 0),
                    "max_depth": get("max_depth", 0), "limit_packets": q.limit, "limit_bytes": q.byte_limit,
                    "rate_pps": q.rate_pps, **({"weight": q.weight} if q.weight else {}),
                    "enqueued": get("enqueued", 0) + get("passed", 0),
                    "dequeued": get("dequeued", 0) + get("passed", 0),
                    "dropped_full": get("dropped_full", 0),
                    "enqueued_bytes": get("enq_bytes", 0) + get("passed_bytes", 0),
                    "dequeued_bytes": get("deq_bytes", 0) + get("passed_bytes", 0),
                    "dropped_bytes": get("drop_bytes", 0),
                    "by_class": {str(c): {"packets": e["class_packets"][c], "bytes": e["class_bytes"][c],
                                          "dropped": e["class_drops"][c]}
                                 for c in range(CLASSES) if e and (e["class_packets"][c] or e["class_drops"][c])},
                })
        return rows

    def port_stats(self, port: int | None = None) -> list[dict]:
        if port is not None:
            check_port(port)
        rows = []
        for n, p in sorted(self._ports.items()):
            if port is not None and n != port:
                continue
            e = self._engine.port_stats(self._index, n) or {}
            depth = sum((self._engine.queue_stats(self._index, n, prio) or {}).get("depth", 0)
                        for prio in range(len(p.queues)))
            rows.append({
                "port": n, "rate_bps": p.rate_bps, "delay_us": p.delay_ns / 1000, "depth": depth,
                "dropped_priority": e.get("dropped_priority", 0),
                "dropped_priority_bytes": e.get("dropped_priority_bytes", 0), "loss": p.loss,
                "lost_link_by_class": {str(c): k for c, k in enumerate(e.get("lost_by_class", ())) if k},
                "pfc_pauses_received": e.get("pauses_received", 0),
                "pfc_resumes_received": e.get("resumes_received", 0),
                "pfc_paused_us": e.get("paused_ns", 0) / 1000,
            })
        return rows

    def pfc_stats(self) -> dict | None:
        self.pfc_sent = {}
        for n in self._ports:
            e = self._engine.port_stats(self._index, n) or {}
            if e.get("pfc_xoff_sent") or e.get("pfc_xon_sent"):
                self.pfc_sent[n] = [e["pfc_xoff_sent"], e["pfc_xon_sent"]]
        return super().pfc_stats()

    def stats(self) -> dict:
        self.dequeue_lag = self._engine.lag(self._index, "dequeue")
        return super().stats()
