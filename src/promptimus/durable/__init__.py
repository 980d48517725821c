"""Durable agent runs on DBOS: a run survives a crash, a deploy or a kill -9.

    from dbos import DBOS
    from promptimus.durable import DurableAgent

    DBOS(config={"name": "support-app", "system_database_url": "sqlite:///support.sqlite"})
    durable = DurableAgent(agent, name="support")   # before DBOS.launch()
    DBOS.launch()                                    # also recovers runs a crash interrupted
    result = await durable.run("Refund order 42", workflow_id="ticket-42")

A run starts from an empty conversation, whichever worker executes it; with
`DurableAgent(agent, name=..., store=<session store>)`, `run(..., session_id=...)` continues
that stored conversation (`promptimus.durable.conversation`).

Needs `pip install 'promptimus[dbos]'` (and `promptimus[postgres]` for PostgreSQL). DBOS is
imported by this package, never by `import promptimus`. See the README, "Durable runs", and
docs/concepts/durable-runs.md.
"""

from .engine import dbos as _dbos

_dbos()  # a clear error when the extra is missing

from .agent import DurableAgent  # noqa: E402
from .steps import OUTCOME_UNKNOWN, DurableExecutor  # noqa: E402

__all__ = ["OUTCOME_UNKNOWN", "DurableAgent", "DurableExecutor"]
