"""The `promptimus` command line: `show`, `diff`, `run`, `chat`, `mcp` and `board` (see
`promptimus --help`).

Imported only by the console script and `python -m promptimus`, never by `import promptimus`.
"""

from __future__ import annotations

from .main import main

__all__ = ["main"]
