"""Which packet path a run's builtin switches take, decided once at the run's start.

Rule: the scenario and the machine propose one (testbed.targets.packet_path:
native for `switch.backend: native`, and for auto when a C compiler is there and
the switches do not log every packet).  A native proposal is then held against the program:
its front end runs and the native back end lowers and builds it (cached, so
the switches load it in milliseconds).  When it cannot, auto runs the Python
path and the run's notes say why in one line; an explicit native stops the
run with that line.
"""

from __future__ import annotations

from pathlib import Path

from testbed.errors import TestbedError
from testbed.targets import PER_PACKET_LOG_LEVELS, packet_path

REPO = Path(__file__).resolve().parents[2]


def native_problem(program: Path) -> str | None:
    """Why `program` cannot run on the native back end, in one line; None when it can."""
    from testbed.p4model.backend.native import NativeBuildError, NativeUnsupported
    from testbed.p4model.backend.native.build import build
    from testbed.p4model.backend.native.program import lower
    from testbed.p4model.frontend import load_program

    try:
        ir = load_program(program)
        source = lower(ir)[0]
        build(source, program.name, ir.main.loc)
    except (NativeUnsupported, NativeBuildError) as error:
        return str(error)
    except TestbedError as error:  # the program itself does not load: the switches will say so
        return str(error)
    return None


def choose(scenario) -> tuple[str, str | None]:
    """(the packet path, a note for the run or None); raises TestbedError for a native path the
    program cannot take when the scenario asked for native."""
    switch = scenario.switch
    proposed = packet_path(switch.target, switch.backend, switch.log_level)
    if proposed != "native":
        if switch.backend == "auto" and switch.log_level in PER_PACKET_LOG_LEVELS:
            return "python", (f"switch.backend auto ran the Python packet path: switch.log_level "
                              f"{switch.log_level} logs every packet, which only the Python path does")
        return proposed, None
    problem = native_problem(REPO / switch.program)
    if problem is None:
        if switch.log_level in PER_PACKET_LOG_LEVELS:  # only backend native gets here with such a level
            return "native", (f"switch.backend native wrote no per-packet log: switch.log_level "
                              f"{switch.log_level} logs every packet only on the Python path")
        return "native", None
    if switch.backend == "native":
        raise TestbedError(f"switch.backend native: {problem}")
    return "python", f"switch.backend auto ran the Python packet path: {problem}"
