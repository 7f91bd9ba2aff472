"""Testbed for AI-training network fabrics: P4 switches, cell spraying, credit transport."""

__version__ = "0.1.0"
