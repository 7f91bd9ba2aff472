"""Digest configurations: which digests the controller wants streamed, and how.

INSERT of a configured digest is ALREADY_EXISTS; MODIFY or DELETE of one not
configured is NOT_FOUND.  A config must be given and none of its values may
be negative.  The P4Runtime server streams a digest's lists only once it is
configured.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from testbed.p4model.control_plane.context import Context
from testbed.p4model.control_plane.p4info_index import DELETE, INSERT, MODIFY, Index, error


class Digests:
    """DigestEntry writes and reads; the configurations are kept as written."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.configs: dict[int, p4runtime_pb2.DigestEntry] = {}

    def write(self, kind: int, entry: p4runtime_pb2.DigestEntry) -> None:
        digest = Index.get(self.ctx.info.digests, entry.digest_id, "digest")
        name = digest.preamble.name
        exists = entry.digest_id in self.configs
        if kind == DELETE:
            if not exists:
                raise error("NOT_FOUND", f"digest {name} is not configured")
            del self.configs[entry.digest_id]
            return
        if kind == INSERT and exists:
            raise error("ALREADY_EXISTS", f"digest {name} is already configured")
        if kind == MODIFY and not exists:
            raise error("NOT_FOUND", f"digest {name} is not configured")
        if not entry.HasField("config"):
            raise error("INVALID_ARGUMENT", f"digest {name}: config must be set")
        config = entry.config
        if config.max_timeout_ns < 0 or config.max_list_size < 0 or config.ack_timeout_ns < 0:
            raise error("INVALID_ARGUMENT", f"digest {name}: negative config value")
        stored = p4runtime_pb2.DigestEntry()
        stored.CopyFrom(entry)
        self.configs[entry.digest_id] = stored

    def config(self, digest_id: int):
        """The DigestEntry.Config a controller set for a digest, or None."""
        stored = self.configs.get(digest_id)
        return stored.config if stored is not None else None

    def read(self, request: p4runtime_pb2.DigestEntry) -> list:
        if request.digest_id:
            Index.get(self.ctx.info.digests, request.digest_id, "digest")
            ids = [request.digest_id] if request.digest_id in self.configs else []
        else:
            ids = sorted(self.configs)
        out = []
        for digest_id in ids:
            entity = p4runtime_pb2.Entity()
            entity.digest_entry.CopyFrom(self.configs[digest_id])
            out.append(entity)
        return out
