"""The native fabric engine: many switches of native pipelines, their
traffic managers and the cables between them in C (engine.c), driven by
one event heap with no Python on the packet path.  binding.NativeFabric
builds it from loaded native pipelines and configured traffic managers.
See docs/p4model-native.md, "The fabric engine"."""

from testbed.p4model.engine.binding import NativeFabric, engine_library

__all__ = ["NativeFabric", "engine_library"]
