"""`python -m testbed.compiled`: build the transport ahead of its first use (the install step).

A build that cannot be made is said in one line and is no failure: the source runs interpreted."""

from testbed.compiled import CompileUnavailable, build

try:
    print(f"transport compiled: {build()}")
except CompileUnavailable as e:
    print(f"transport not compiled ({e}); it runs interpreted")
