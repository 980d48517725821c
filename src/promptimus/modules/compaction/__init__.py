"""Compaction: a conversation kept under its trigger by clearing old tool results and thinking,
then summarizing the oldest turns (see `Compactor`)."""

from __future__ import annotations

from .clear_thinking import ClearThinking
from .clear_tool_results import ClearToolResults, cleared_note
from .compactor import Compaction, Compactor
from .context_windows import CONTEXT_WINDOWS, known_context_window
from .step import CompactionStep, StepResult
from .summarize import DEFAULT_SUMMARY_PROMPT, SUMMARY_HEADER, Summarize
from .token_count import conversation_tokens, estimate_tokens

__all__ = [
    "CONTEXT_WINDOWS",
    "DEFAULT_SUMMARY_PROMPT",
    "SUMMARY_HEADER",
    "ClearThinking",
    "ClearToolResults",
    "Compaction",
    "CompactionStep",
    "Compactor",
    "StepResult",
    "Summarize",
    "cleared_note",
    "conversation_tokens",
    "estimate_tokens",
    "known_context_window",
]
