"""Logging of the switch process, with bmv2's level names.

Quiet by default (warnings and errors on standard error).  `--log-file`
and/or `--log-console` choose destinations; `--log-level debug` adds one
line per packet (port in, outcome: queued for which port / dropped and
why), `trace` is debug plus the P4Runtime requests.  `off` silences all.
"""

from __future__ import annotations

import logging
import sys

TRACE = 5
LEVELS = {"trace": TRACE, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
          "error": logging.ERROR, "off": logging.CRITICAL + 10}
FORMAT = "%(asctime)s.%(msecs)03d %(levelname)s %(name)s: %(message)s"


def setup(level: str, log_file: str | None, console: bool) -> logging.Logger:
    logging.addLevelName(TRACE, "TRACE")
    root = logging.getLogger("testbed")
    for handler in list(root.handlers):
        root.removeHandler(handler)
        handler.close()
    root.setLevel(LEVELS[level])
    root.propagate = False
    formatter = logging.Formatter(FORMAT, datefmt="%H:%M:%S")
    handlers: list[logging.Handler] = []
    if log_file:
        handlers.append(logging.FileHandler(log_file))
    if console or not log_file:
        handlers.append(logging.StreamHandler(sys.stderr))
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    return root
