"""What every handler of the control plane shares: the pipeline it writes,
the P4Info index, and the runtime object behind a P4Info name.

A P4Info name the pipeline lacks is INTERNAL: the two came from one program,
so it is a bug of ours, not the controller's mistake.
"""

from __future__ import annotations

from testbed.p4model.control_plane.p4info_index import Index, error


class Context:
    """The pipeline and the P4Info index, as each handler reaches them."""

    def __init__(self, pipeline, info: Index) -> None:
        self.pipeline = pipeline
        self.info = info

    def runtime(self, kind: str, name: str):
        """The runtime object `name` among the pipeline's `kind` ('tables', 'counters', ...)."""
        objects = getattr(self.pipeline, kind, None) or {}
        try:
            return objects[name]
        except KeyError:
            raise error("INTERNAL", f"the pipeline has no {kind[:-1].replace('_', ' ')} "
                                    f"named {name} although the P4Info lists it") from None


def cells(entry, size: int, what: str) -> range:
    """The cells of an indexed extern (counter, meter, register) an entry's
    index selects: one, or all when it is unset.  A negative index is
    INVALID_ARGUMENT, one at or past the size OUT_OF_RANGE."""
    if not entry.HasField("index"):
        return range(size)
    index = entry.index.index
    if index < 0:
        raise error("INVALID_ARGUMENT", f"{what}: A negative number is not a valid index "
                                        f"value")
    if index >= size:
        raise error("OUT_OF_RANGE", f"{what}: index {index} is out of range (size {size})")
    return range(index, index + 1)
