"""Testbed for AI-training network fabrics: P4 switches, cell spraying, credit transport."""

from testbed import compiled

__version__ = "0.1.0"

# Before any of the transport's modules is imported: its compiled build when one matches the source.
compiled.install()
