"""Prebuilt modules. Names load on first use to keep `import promptimus.modules` light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "Prompt": "prompt",
    "Memory": "memory",
    "MemoryModule": "memory",
    "ResetMemoryContext": "memory",
    "as_messages": "memory",
    "Tool": "tool",
    "toolset": "tool",
    "tool_result_to_text": "tool",
    "handoff_messages": "tool",
    "CompositeTool": "composite_tool",
    "RunContext": "run_context",
    "RunRecord": "run_record",
    "StepRecord": "run_record",
    "ToolCallRecord": "run_record",
    "current_record": "run_record",
    "capture_records": "run_record",
    "recording": "run_record",
    "OpenaiToolCallingAgent": "openai_agent",
    "ToolCallingAgent": "react_agent",
    "StructuralOutput": "structural",
    "DynamicPrompt": "dynamic_prompt",
    "BaseAgent": "base_agent",
    "RunResult": "base_agent",
    "AgentEvent": "events",
    "TextDelta": "events",
    "ReasoningDelta": "events",
    "ToolCallEvent": "events",
    "ToolResultEvent": "events",
    "ToolErrorEvent": "events",
    "StepEnd": "events",
    "FinalResult": "events",
    "parse_react": "react_parser",
    "ReactAction": "react_parser",
    "ReactAnswer": "react_parser",
    "RetrievalModule": "retrieval",
    "RAGModule": "rag",
    "document_id": "retrieval",
}

if TYPE_CHECKING:
    from .base_agent import BaseAgent as BaseAgent
    from .base_agent import RunResult as RunResult
    from .composite_tool import CompositeTool as CompositeTool
    from .dynamic_prompt import DynamicPrompt as DynamicPrompt
    from .events import AgentEvent as AgentEvent
    from .events import FinalResult as FinalResult
    from .events import ReasoningDelta as ReasoningDelta
    from .events import StepEnd as StepEnd
    from .events import TextDelta as TextDelta
    from .events import ToolCallEvent as ToolCallEvent
    from .events import ToolErrorEvent as ToolErrorEvent
    from .events import ToolResultEvent as ToolResultEvent
    from .memory import Memory as Memory
    from .memory import MemoryModule as MemoryModule
    from .memory import ResetMemoryContext as ResetMemoryContext
    from .openai_agent import OpenaiToolCallingAgent as OpenaiToolCallingAgent
    from .prompt import Prompt as Prompt
    from .rag import RAGModule as RAGModule
    from .react_agent import ToolCallingAgent as ToolCallingAgent
    from .react_parser import ReactAction as ReactAction
    from .react_parser import ReactAnswer as ReactAnswer
    from .react_parser import parse_react as parse_react
    from .retrieval import RetrievalModule as RetrievalModule
    from .retrieval import document_id as document_id
    from .run_context import RunContext as RunContext
    from .run_record import RunRecord as RunRecord
    from .run_record import StepRecord as StepRecord
    from .run_record import ToolCallRecord as ToolCallRecord
    from .run_record import capture_records as capture_records
    from .run_record import current_record as current_record
    from .run_record import recording as recording
    from .structural import StructuralOutput as StructuralOutput
    from .tool import Tool as Tool
    from .tool import handoff_messages as handoff_messages
    from .tool import tool_result_to_text as tool_result_to_text
    from .tool import toolset as toolset


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = list(_LAZY)
