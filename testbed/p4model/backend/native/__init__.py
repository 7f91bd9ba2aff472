"""The native back end: the front end's IR lowered to C (emit_types,
emit_code, program), compiled and cached (build) and driven through its C
ABI (binding.NativePipeline).  See docs/p4model-native.md."""

from testbed.p4model.backend.native.build import compiler
from testbed.p4model.backend.native.errors import NativeBuildError, NativeUnsupported

__all__ = ["compiler", "NativeBuildError", "NativeUnsupported"]
