"""P4Runtime server of the builtin switch.

server       P4RuntimeServer: the gRPC servicer (Capabilities, StreamChannel,
             Set/GetForwardingPipelineConfig, Write, Read)
device       Device / DirectDevice: how the server reaches the packet thread
arbitration  primary/backup election per (device, role); election id 0 refused
roles        the role config: read-only and table-limited roles
config       P4 source as p4_device_config; P4Info-vs-program check
packetio     packet_in / packet_out controller headers
digests      DigestList batching, timeouts, acks
status       gRPC status codes and per-update p4.v1.Error details
"""

from testbed.p4model.p4runtime.device import Device, DirectDevice
from testbed.p4model.p4runtime.server import P4RuntimeServer

__all__ = ["Device", "DirectDevice", "P4RuntimeServer"]
