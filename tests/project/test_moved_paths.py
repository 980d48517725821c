"""Names that moved to another tier are still served, as the very same objects, at every path
they had: the provider Protocols (now `promptimus.protocols`), `SearchHit` (`promptimus.dto`),
provider calls, usage, pricing and budgets (`promptimus.observe`), `LLMReranker`
(`promptimus.modules`), `Prompt`, `DynamicPrompt` and the template helpers
(`promptimus.prompts`), the run records (`promptimus.dto`)."""

from __future__ import annotations

import importlib

import pytest

import promptimus as pm

SAME = [
    ("promptimus.llms.base", "LLMProtocol", "promptimus.protocols", "LLMProtocol"),
    ("promptimus.llms", "LLMProtocol", "promptimus.protocols", "LLMProtocol"),
    ("promptimus.embedders.base", "EmbedderProtocol", "promptimus.protocols", "EmbedderProtocol"),
    ("promptimus.embedders.base", "Embedding", "promptimus.protocols", "Embedding"),
    ("promptimus.embedders", "EmbedderProtocol", "promptimus.protocols", "EmbedderProtocol"),
    ("promptimus.rerankers.base", "RerankerProtocol", "promptimus.protocols", "RerankerProtocol"),
    ("promptimus.rerankers.base", "FusionProtocol", "promptimus.protocols", "FusionProtocol"),
    ("promptimus.rerankers", "RerankerProtocol", "promptimus.protocols", "RerankerProtocol"),
    ("promptimus.modules", "RerankerProtocol", "promptimus.protocols", "RerankerProtocol"),
    (
        "promptimus.vector_stores.base",
        "VectorStoreProtocol",
        "promptimus.protocols",
        "VectorStoreProtocol",
    ),
    (
        "promptimus.vector_stores",
        "VectorStoreProtocol",
        "promptimus.protocols",
        "VectorStoreProtocol",
    ),
    ("promptimus.vector_stores.base", "Where", "promptimus.protocols", "Where"),
    ("promptimus.vector_stores.base", "SearchHit", "promptimus.dto", "SearchHit"),
    ("promptimus.vector_stores", "SearchHit", "promptimus.dto", "SearchHit"),
    ("promptimus.vector_stores.base", "Metadata", "promptimus.dto", "Metadata"),
    (
        "promptimus.core.provider_calls",
        "provider_call",
        "promptimus.observe.provider_calls",
        "provider_call",
    ),
    (
        "promptimus.core.provider_calls",
        "register_provider_call_observer",
        "promptimus.observe.provider_calls",
        "register_provider_call_observer",
    ),
    (
        "promptimus.core.provider_calls",
        "ProviderCall",
        "promptimus.observe.provider_calls",
        "ProviderCall",
    ),
    ("promptimus.tracing.usage", "track_usage", "promptimus.observe.usage", "track_usage"),
    ("promptimus.tracing.usage", "UsageReport", "promptimus.observe.usage", "UsageReport"),
    ("promptimus.tracing.budget", "budget", "promptimus.observe.budget", "budget"),
    ("promptimus.tracing.budget", "Budget", "promptimus.observe.budget", "Budget"),
    ("promptimus.tracing.pricing", "Pricing", "promptimus.observe.pricing", "Pricing"),
    ("promptimus.tracing.pricing", "cost_of", "promptimus.observe.pricing", "cost_of"),
    (
        "promptimus.tracing.module_path",
        "absolute_path",
        "promptimus.observe.module_path",
        "absolute_path",
    ),
    ("promptimus.tracing", "track_usage", "promptimus.observe.usage", "track_usage"),
    ("promptimus.tracing", "Budget", "promptimus.observe.budget", "Budget"),
    ("promptimus.tracing", "absolute_path", "promptimus.observe.module_path", "absolute_path"),
    ("promptimus", "track_usage", "promptimus.observe.usage", "track_usage"),
    ("promptimus", "budget", "promptimus.observe.budget", "budget"),
    ("promptimus.rerankers", "LLMReranker", "promptimus.modules.llm_reranker", "LLMReranker"),
    ("promptimus.rerankers.llm", "LLMReranker", "promptimus.modules.llm_reranker", "LLMReranker"),
    ("promptimus.rerankers.llm", "parse_scores", "promptimus.modules.llm_reranker", "parse_scores"),
    ("promptimus.modules", "LLMReranker", "promptimus.modules.llm_reranker", "LLMReranker"),
    ("promptimus", "Prompt", "promptimus.prompts", "Prompt"),
    ("promptimus.modules", "Prompt", "promptimus.prompts", "Prompt"),
    ("promptimus.modules.prompt", "Prompt", "promptimus.prompts.prompt", "Prompt"),
    ("promptimus.agents", "DynamicPrompt", "promptimus.prompts", "DynamicPrompt"),
    ("promptimus.modules", "DynamicPrompt", "promptimus.prompts", "DynamicPrompt"),
    (
        "promptimus.agents.dynamic_prompt",
        "DynamicPrompt",
        "promptimus.prompts.dynamic_prompt",
        "DynamicPrompt",
    ),
    ("promptimus.agents.dynamic_prompt", "PromptFn", "promptimus.prompts", "PromptFn"),
    ("promptimus.template", "format_template", "promptimus.prompts", "format_template"),
    ("promptimus.template", "parse_template", "promptimus.prompts", "parse_template"),
    ("promptimus.template", "template_fields", "promptimus.prompts", "template_fields"),
    ("promptimus.agents", "RunRecord", "promptimus.dto", "RunRecord"),
    ("promptimus.agents.run_record", "RunRecord", "promptimus.dto.run_record", "RunRecord"),
    ("promptimus.agents.run_record", "StepRecord", "promptimus.dto", "StepRecord"),
    ("promptimus.agents.run_record", "ToolCallRecord", "promptimus.dto", "ToolCallRecord"),
    ("promptimus.modules", "ToolCallRecord", "promptimus.dto", "ToolCallRecord"),
]


@pytest.mark.parametrize(("old", "name", "new", "new_name"), SAME)
def test_the_old_path_serves_the_same_object(old: str, name: str, new: str, new_name: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {old} import {name} as found", namespace)  # the import statement users write
    assert namespace["found"] is getattr(importlib.import_module(new), new_name)


@pytest.mark.parametrize("name", ["usage", "budget", "pricing", "module_path"])
def test_moved_tracing_modules_are_the_observe_modules(name: str) -> None:
    old = importlib.import_module(f"promptimus.tracing.{name}")
    assert old is importlib.import_module(f"promptimus.observe.{name}")


def test_the_public_faces_name_the_moved_modules() -> None:
    assert pm.tracing.usage is importlib.import_module("promptimus.observe.usage")
    assert pm.rerankers.LLMReranker.__module__ == "promptimus.modules.llm_reranker"
