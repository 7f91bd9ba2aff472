"""The error a bad scenario file raises: exactly `file:line: message`."""

from __future__ import annotations

from testbed.errors import TestbedError


class ScenarioError(TestbedError):
    """A scenario file that cannot be used; str() is one line naming file and line."""

    def __init__(self, file: str, line: int | None, message: str):
        self.file = file
        self.line = line
        self.message = message
        where = f"{file}:{line}" if line is not None else file
        super().__init__(f"{where}: {message}")
