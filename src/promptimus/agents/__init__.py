"""Agents: the tool-calling loop (in phases, `agents.loop`), native and ReACT agents, events, run
records, dynamic prompts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "BaseAgent": "base_agent",
    "RunExecutor": "promptimus.agents.loop.executor",
    "ModelRequest": "promptimus.agents.loop.model_call",
    "RunResult": "run_result",
    "OpenaiToolCallingAgent": "openai_agent",
    "ToolCallingAgent": "react_agent",
    "DynamicPrompt": "promptimus.prompts.dynamic_prompt",
    "AgentEvent": "events",
    "TextDelta": "events",
    "ReasoningDelta": "events",
    "ToolCallEvent": "events",
    "ToolResultEvent": "events",
    "ToolErrorEvent": "events",
    "StepEnd": "events",
    "FinalResult": "events",
    "NeedsApproval": "events",
    "GuardrailEvent": "events",
    "PartialOutput": "events",
    "ToolProgress": "events",
    "SubAgentEvent": "events",
    "CompactionEvent": "events",
    "StepContext": "step_hooks",
    "StepUpdate": "step_hooks",
    "RunState": "run_state",
    "PendingToolCall": "run_state",
    "ResumeLedger": "resume_ledger",
    "ProcessResumeLedger": "resume_ledger",
    "SQLiteResumeLedger": "resume_ledger",
    "set_resume_ledger": "resume_ledger",
    "parse_react": "react_parser",
    "ReactAction": "react_parser",
    "ReactAnswer": "react_parser",
    "RunRecord": "run_record",
    "StepRecord": "run_record",
    "ToolCallRecord": "run_record",
    "current_record": "run_record",
    "capture_records": "run_record",
    "recording": "run_record",
}

if TYPE_CHECKING:
    from ..prompts.dynamic_prompt import DynamicPrompt as DynamicPrompt
    from .base_agent import BaseAgent as BaseAgent
    from .events import AgentEvent as AgentEvent
    from .events import CompactionEvent as CompactionEvent
    from .events import FinalResult as FinalResult
    from .events import GuardrailEvent as GuardrailEvent
    from .events import NeedsApproval as NeedsApproval
    from .events import PartialOutput as PartialOutput
    from .events import ReasoningDelta as ReasoningDelta
    from .events import StepEnd as StepEnd
    from .events import SubAgentEvent as SubAgentEvent
    from .events import TextDelta as TextDelta
    from .events import ToolCallEvent as ToolCallEvent
    from .events import ToolErrorEvent as ToolErrorEvent
    from .events import ToolProgress as ToolProgress
    from .events import ToolResultEvent as ToolResultEvent
    from .loop.executor import RunExecutor as RunExecutor
    from .loop.model_call import ModelRequest as ModelRequest
    from .openai_agent import OpenaiToolCallingAgent as OpenaiToolCallingAgent
    from .react_agent import ToolCallingAgent as ToolCallingAgent
    from .react_parser import ReactAction as ReactAction
    from .react_parser import ReactAnswer as ReactAnswer
    from .react_parser import parse_react as parse_react
    from .resume_ledger import ProcessResumeLedger as ProcessResumeLedger
    from .resume_ledger import ResumeLedger as ResumeLedger
    from .resume_ledger import SQLiteResumeLedger as SQLiteResumeLedger
    from .resume_ledger import set_resume_ledger as set_resume_ledger
    from .run_record import RunRecord as RunRecord
    from .run_record import StepRecord as StepRecord
    from .run_record import ToolCallRecord as ToolCallRecord
    from .run_record import capture_records as capture_records
    from .run_record import current_record as current_record
    from .run_record import recording as recording
    from .run_result import RunResult as RunResult
    from .run_state import PendingToolCall as PendingToolCall
    from .run_state import RunState as RunState
    from .step_hooks import StepContext as StepContext
    from .step_hooks import StepUpdate as StepUpdate


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = list(_LAZY)
