"""Prebuilt modules (Prompt, Memory, StructuralOutput, Retrieval, RAG, LLMReranker).

Every name this package exported before tools and agents got packages of their own is still
exported here. Names load on first use to keep `import promptimus.modules` light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._lazy import lazy_exports

_LAZY: dict[str, str] = {
    "Prompt": "prompt",
    "Memory": "memory",
    "MemoryModule": "memory",
    "ResetMemoryContext": "memory",
    "as_messages": "memory",
    "StructuralOutput": "structural",
    "RetrievalModule": "retrieval",
    "RAGModule": "rag",
    "document_id": "retrieval",
    "LLMReranker": "llm_reranker",
    # the original exported the rerankers here too
    "RRFReranker": "promptimus.rerankers.rrf",
    "RerankerProtocol": "promptimus.protocols",
    # re-exported from promptimus.tools, where they live now
    "Tool": "promptimus.tools.tool",
    "toolset": "promptimus.tools.tool",
    "tool_result_to_text": "promptimus.tools.tool",
    "handoff_messages": "promptimus.tools.tool",
    "CompositeTool": "promptimus.tools.composite_tool",
    "RunContext": "promptimus.tools.run_context",
    "SupportsHandoff": "promptimus.tools.tool",
    # re-exported from promptimus.agents, where they live now
    "BaseAgent": "promptimus.agents.base_agent",
    "RunResult": "promptimus.agents.base_agent",
    "OpenaiToolCallingAgent": "promptimus.agents.openai_agent",
    "ToolCallingAgent": "promptimus.agents.react_agent",
    "DynamicPrompt": "promptimus.agents.dynamic_prompt",
    "AgentEvent": "promptimus.agents.events",
    "TextDelta": "promptimus.agents.events",
    "ReasoningDelta": "promptimus.agents.events",
    "ToolCallEvent": "promptimus.agents.events",
    "ToolResultEvent": "promptimus.agents.events",
    "ToolErrorEvent": "promptimus.agents.events",
    "StepEnd": "promptimus.agents.events",
    "FinalResult": "promptimus.agents.events",
    "parse_react": "promptimus.agents.react_parser",
    "ReactAction": "promptimus.agents.react_parser",
    "ReactAnswer": "promptimus.agents.react_parser",
    "RunRecord": "promptimus.agents.run_record",
    "StepRecord": "promptimus.agents.run_record",
    "ToolCallRecord": "promptimus.agents.run_record",
    "current_record": "promptimus.agents.run_record",
    "capture_records": "promptimus.agents.run_record",
    "recording": "promptimus.agents.run_record",
}

if TYPE_CHECKING:
    from ..agents.base_agent import BaseAgent as BaseAgent
    from ..agents.base_agent import RunResult as RunResult
    from ..agents.dynamic_prompt import DynamicPrompt as DynamicPrompt
    from ..agents.events import AgentEvent as AgentEvent
    from ..agents.events import FinalResult as FinalResult
    from ..agents.events import ReasoningDelta as ReasoningDelta
    from ..agents.events import StepEnd as StepEnd
    from ..agents.events import TextDelta as TextDelta
    from ..agents.events import ToolCallEvent as ToolCallEvent
    from ..agents.events import ToolErrorEvent as ToolErrorEvent
    from ..agents.events import ToolResultEvent as ToolResultEvent
    from ..agents.openai_agent import OpenaiToolCallingAgent as OpenaiToolCallingAgent
    from ..agents.react_agent import ToolCallingAgent as ToolCallingAgent
    from ..agents.react_parser import ReactAction as ReactAction
    from ..agents.react_parser import ReactAnswer as ReactAnswer
    from ..agents.react_parser import parse_react as parse_react
    from ..agents.run_record import RunRecord as RunRecord
    from ..agents.run_record import StepRecord as StepRecord
    from ..agents.run_record import ToolCallRecord as ToolCallRecord
    from ..agents.run_record import capture_records as capture_records
    from ..agents.run_record import current_record as current_record
    from ..agents.run_record import recording as recording
    from ..protocols import RerankerProtocol as RerankerProtocol
    from ..rerankers.rrf import RRFReranker as RRFReranker
    from ..tools.composite_tool import CompositeTool as CompositeTool
    from ..tools.run_context import RunContext as RunContext
    from ..tools.tool import SupportsHandoff as SupportsHandoff
    from ..tools.tool import Tool as Tool
    from ..tools.tool import handoff_messages as handoff_messages
    from ..tools.tool import tool_result_to_text as tool_result_to_text
    from ..tools.tool import toolset as toolset
    from .llm_reranker import LLMReranker as LLMReranker
    from .memory import Memory as Memory
    from .memory import MemoryModule as MemoryModule
    from .memory import ResetMemoryContext as ResetMemoryContext
    from .memory import as_messages as as_messages
    from .prompt import Prompt as Prompt
    from .rag import RAGModule as RAGModule
    from .retrieval import RetrievalModule as RetrievalModule
    from .retrieval import document_id as document_id
    from .structural import StructuralOutput as StructuralOutput


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = list(_LAZY)
