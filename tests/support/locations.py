"""Where the suite's shared files are, so a test names them without counting parent folders.

Test files and subprocess helpers read these instead of `Path(__file__).parents[N]`: a test
moved to another folder keeps working.
"""

from __future__ import annotations

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
"""tests/support/: the helpers, importable by module name (pytest's `pythonpath`)."""

REPO = SUPPORT.parents[1]
"""The repository's root (pyproject.toml, src/, notebooks/)."""

FIXTURES = SUPPORT / "fixtures"
"""Data files the tests read: `original/` holds checkpoints written by promptimus 0.1."""

MCP_SERVERS = SUPPORT / "mcp_servers"
"""MCP servers and serve targets that the tests start as subprocesses."""
