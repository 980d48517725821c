"""Prebuilt modules (Prompt, Memory, StructuralOutput, Retrieval, RAG, LLMReranker).

Names load on first use to keep `import promptimus.modules` light. The tools and rerankers are
re-exported here, where they were first; the agents, which sit a tier above, are still served
under this package by `promptimus.compat.names`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptimus._compat_seam import compat_names
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
    "Compactor": "compaction",
    "ClearToolResults": "compaction",
    "ClearThinking": "compaction",
    "Summarize": "compaction",
    "CompactionStep": "compaction",
    # re-exported from promptimus.rerankers and promptimus.protocols
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
}

if TYPE_CHECKING:
    from ..protocols import RerankerProtocol as RerankerProtocol
    from ..rerankers.rrf import RRFReranker as RRFReranker
    from ..tools.composite_tool import CompositeTool as CompositeTool
    from ..tools.run_context import RunContext as RunContext
    from ..tools.tool import SupportsHandoff as SupportsHandoff
    from ..tools.tool import Tool as Tool
    from ..tools.tool import handoff_messages as handoff_messages
    from ..tools.tool import tool_result_to_text as tool_result_to_text
    from ..tools.tool import toolset as toolset
    from .compaction import ClearThinking as ClearThinking
    from .compaction import ClearToolResults as ClearToolResults
    from .compaction import CompactionStep as CompactionStep
    from .compaction import Compactor as Compactor
    from .compaction import Summarize as Summarize
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


_lazy_getattr, __dir__ = lazy_exports(__name__, _LAZY, globals())
__getattr__ = compat_names(__name__, _lazy_getattr)


__all__ = list(_LAZY)
