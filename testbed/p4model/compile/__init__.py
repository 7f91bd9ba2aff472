"""IR -> Python compiler of the builtin P4 target.

`compile_program(program, clock, rng)` generates Python source specialised
for one program (one function per parser state, parser, control, action,
function and table apply; one slotted class per header/struct/union type),
compiles it once and returns a CompiledProgram that v1model.py runs.
Set TESTBED_P4_DUMP=dir to keep the generated source for debugging.
"""

from testbed.p4model.backend.python.program import CompiledProgram, compile_program

__all__ = ["CompiledProgram", "compile_program"]
