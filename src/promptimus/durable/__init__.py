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
imported by this package, never by `import promptimus`. DBOS logs only warnings and errors
unless asked for (`show_dbos_logs()`, or ``PROMPTIMUS_DBOS_LOG_LEVEL=INFO``). See the
documentation's "Durable runs" page (docs/concepts/durable-runs.md).
"""

from .engine import dbos as _dbos

_dbos()  # a clear error when the extra is missing

from .logs import quiet_dbos_logs, show_dbos_logs  # noqa: E402

quiet_dbos_logs()  # DBOS's INFO lines only when asked for (PROMPTIMUS_DBOS_LOG_LEVEL)

from .agent import DurableAgent  # noqa: E402
from .steps import OUTCOME_UNKNOWN, DurableExecutor  # noqa: E402

__all__ = ["OUTCOME_UNKNOWN", "DurableAgent", "DurableExecutor", "show_dbos_logs"]
