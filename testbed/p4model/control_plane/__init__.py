"""P4Runtime entities <-> the runtime objects of a loaded Pipeline.

`ControlPlane` (facade.py) is the only way control-plane state reaches a
pipeline.  The P4Runtime server hands it the Updates of a WriteRequest and
the Entities of a ReadRequest; the STF runner builds the same protobufs from
its text lines, so both mean exactly the same thing.  Each entity kind has
one handler module: table_entries, action_profiles, counters, meters,
registers, replication (multicast groups and clone sessions), value_sets,
digests.

The rule: behave as the reference server (p4lang/PI's DeviceMgr, what
simple_switch_grpc runs) wherever it defines a behaviour, and as the
P4Runtime 1.4 specification where PI stops short.  A refused update raises
ControlPlaneError with PI's status code and changes nothing.  The status
code of each mistake is listed in docs/p4model-contracts.md and in each
handler's docstring.
"""

from testbed.p4model.control_plane.facade import ControlPlane
from testbed.p4model.control_plane.p4info_index import decode_value, encode_value

__all__ = ["ControlPlane", "encode_value", "decode_value"]
