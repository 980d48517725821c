"""The stderr of an MCP server subprocess, forwarded line by line to a `logging` logger.

The SDK's `stdio_client` hands the child a real file for its stderr, so this is an OS pipe whose
read end a daemon thread drains: each line goes to the logger and the last few are kept, so an
error about a server that died can quote them.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
from typing import TextIO

logger = logging.getLogger("promptimus.mcp.server_stderr")

_TAIL_LINES = 20


class StderrLog:
    """An OS pipe for a server's stderr; lines go to `logger` and the last ones are kept."""

    def __init__(self, server: str) -> None:
        self.server = server
        read_fd, write_fd = os.pipe()
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._reader = os.fdopen(read_fd, encoding="utf-8", errors="replace")
        self._tail: collections.deque[str] = collections.deque(maxlen=_TAIL_LINES)
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, name="mcp-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        with self._reader:
            for line in self._reader:
                text = line.rstrip("\n")
                with self._lock:
                    self._tail.append(text)
                logger.info("[%s] %s", self.server, text)

    def tail(self, wait: float = 1.0) -> str:
        """The last lines the server wrote (waits up to `wait` s for the pipe to drain)."""
        self.close()
        self._thread.join(wait)
        with self._lock:
            return "\n".join(self._tail)

    def close(self) -> None:
        """Close our copy of the write end (the child keeps its own until it exits)."""
        if not self.writer.closed:
            self.writer.close()
