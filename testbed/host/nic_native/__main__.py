"""`python -m testbed.host.nic_native`: build the native NIC ahead of the first run (the install step)."""

from testbed.host.nic_native import NativeUnavailable, build

try:
    print(f"native NIC: {build()}")
except NativeUnavailable as e:
    print(f"native NIC not built ({e}); agents use the pure-Python NIC")
