"""Guardrails that are modules: checks around a run's input, its output and its tool calls.

    from promptimus.guardrails import InputGuardrail, OutputGuardrail, ToolGuardrail, Verdict

    def no_secrets(text: str) -> Verdict:
        return Verdict.replace(text.replace("hunter2", "[redacted]"))

    agent = pm.agents.OpenaiToolCallingAgent(
        "You help with orders.",
        [refund],
        guardrails=[
            InputGuardrail(no_secrets),
            OutputGuardrail(lambda text: "sorry" not in text.lower(), retry=1),
            ToolGuardrail(lambda name, args: args["amount"] <= 100, tools="refund"),
        ],
    )

A check is a function (sync or async) or a `Module` (a judge whose prompt is a trainable
`Parameter`), given the text (a tool guardrail: the call's name and validated arguments) and
returning a `Verdict`: `Verdict.allow()`, `Verdict.block(reason)`, `Verdict.replace(text)`
(True/None allow, False blocks). Both agent types take `guardrails=[...]`; `Guarded(module,
guardrails)` runs them around any module's `forward`. A block raises `GuardrailTripped`; what
every guardrail decided is in the run record (`record.guardrails`), the stream
(`GuardrailEvent`), the trace (each guardrail is a module call) and the usage (a judge's model
calls count under its path).
"""

from .guarded import Guarded
from .guardrail import Guardrail, InputGuardrail, OutputGuardrail, ToolGuardrail
from .screen import GuardOutcome, Guards, screen_text
from .verdict import Verdict, VerdictAction

__all__ = [
    "GuardOutcome",
    "Guarded",
    "Guardrail",
    "Guards",
    "InputGuardrail",
    "OutputGuardrail",
    "ToolGuardrail",
    "Verdict",
    "VerdictAction",
    "screen_text",
]
