"""The board: runs recorded to one SQLite file, and a local web page that shows them with
training runs, stored conversations, durable runs waiting for approval and checkpoint diffs.

    from promptimus.board import record

    with record("runs.sqlite"):
        await agent.run("Refund order 42")

    $ promptimus board runs.sqlite --fits checkpoints/ --sessions app.db

Recording needs nothing extra; the web page needs `pip install "promptimus[board]"` (Starlette
and uvicorn, imported only by `promptimus board`). See docs/howto/board.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .recorder import Recording as Recording
    from .recorder import record as record

__getattr__, __dir__ = lazy_exports(
    __name__, {"record": "recorder", "Recording": "recorder"}, globals()
)

__all__ = ["Recording", "record"]
