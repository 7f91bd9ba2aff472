"""The one error type that reaches the user as a single clear line.

Every layer raises a subclass of TestbedError carrying the evidence (file,
line, value, log path) in its message; the CLI prints str(error) and exits
non-zero, never a traceback.
"""


class TestbedError(Exception):
    """An error meant for the user: its message is one sentence with the evidence."""

    __test__ = False  # keep pytest from collecting it as a test class
