"""resolve(): model strings, aliases, custom OpenAI-compatible providers, errors."""

from __future__ import annotations

import pytest

from promptimus.errors import ModelResolutionError, ProviderConfigError
from promptimus.llms import DummyLLm, OllamaProvider, OpenAILike, resolve

SECRET = "sk-resolve-secret-123456"


def test_objects_with_achat_pass_through() -> None:
    llm = DummyLLm()
    assert resolve(llm) is llm


def test_non_llm_object_is_refused() -> None:
    with pytest.raises(ModelResolutionError, match="achat"):
        resolve(42)  # type: ignore[arg-type]


def test_openai_spec_uses_env_key_and_base_url() -> None:
    env = {"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    llm = resolve("openai:gpt-4o-mini", env=env)
    assert isinstance(llm, OpenAILike)
    assert llm.model_name == "gpt-4o-mini"
    assert llm.base_url == "http://127.0.0.1:9/v1"
    assert SECRET not in repr(llm)


def test_model_names_keep_their_colons() -> None:
    llm = resolve("ollama:llama3.2:3b", env={})
    assert isinstance(llm, OllamaProvider)
    assert llm.model_name == "llama3.2:3b"


def test_ollama_host_env_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11500")
    assert resolve("ollama:qwen3", env={}).base_url == "http://gpu-box:11500/v1"  # type: ignore[union-attr]
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://other:1/v1")
    assert resolve("ollama:qwen3", env={}).base_url == "http://other:1/v1"  # type: ignore[union-attr]


def test_aliases_resolve_through_chains() -> None:
    env = {
        "PROMPTIMUS_MODEL_FAST": "cheap",
        "PROMPTIMUS_MODEL_CHEAP": "ollama:llama3.2:1b",
    }
    llm = resolve("fast", env=env)
    assert isinstance(llm, OllamaProvider) and llm.model_name == "llama3.2:1b"
    assert resolve("FAST", env=env).model_name == "llama3.2:1b"


def test_alias_names_with_dashes() -> None:
    env = {"PROMPTIMUS_MODEL_MY_MODEL": "ollama:phi4"}
    assert resolve("my-model", env=env).model_name == "phi4"


def test_alias_cycle_names_the_chain() -> None:
    env = {
        "PROMPTIMUS_MODEL_A": "b",
        "PROMPTIMUS_MODEL_B": "c",
        "PROMPTIMUS_MODEL_C": "a",
    }
    with pytest.raises(ModelResolutionError, match=r"a -> b -> c -> a"):
        resolve("a", env=env)


def test_custom_provider_from_env() -> None:
    env = {"GROQ_API_KEY": SECRET, "GROQ_API_BASE": "https://api.groq.example/openai/v1"}
    llm = resolve("groq:llama-3.3-70b", env=env)
    assert isinstance(llm, OpenAILike)
    assert llm.model_name == "llama-3.3-70b"
    assert llm.base_url == "https://api.groq.example/openai/v1"
    assert SECRET not in repr(llm)


async def test_custom_provider_without_key_never_borrows_openai_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("TOGETHER_API_KEY", raising=False)
    llm = resolve("together:mixtral", env={"TOGETHER_API_BASE": "http://127.0.0.1:9/v1"})
    with pytest.raises(ProviderConfigError, match="TOGETHER_API_KEY") as info:
        await llm.achat([])
    assert SECRET not in str(info.value)


def test_unknown_provider_lists_options_and_env_vars_without_values() -> None:
    env = {
        "OPENAI_API_KEY": SECRET,
        "GROQ_API_BASE": "https://groq.example/v1",
        "GROQ_API_KEY": SECRET,
        "PROMPTIMUS_MODEL_FAST": "groq:llama",
    }
    with pytest.raises(ModelResolutionError) as info:
        resolve("mistral:large", env=env)
    text = str(info.value)
    for expected in (
        "'mistral'",
        "openai",
        "ollama",
        "groq",
        "fast",
        "MISTRAL_API_BASE",
        "MISTRAL_API_KEY",
    ):
        assert expected in text
    assert SECRET not in text


def test_spec_without_colon_explains_the_form() -> None:
    with pytest.raises(ModelResolutionError, match='"provider:model"'):
        resolve("gpt-4o", env={})


def test_alias_to_a_bad_spec_mentions_the_alias() -> None:
    with pytest.raises(ModelResolutionError, match="via alias smart"):
        resolve("smart", env={"PROMPTIMUS_MODEL_SMART": "nonsense"})


def test_empty_model_is_refused() -> None:
    with pytest.raises(ModelResolutionError, match="provider and a model"):
        resolve("openai:", env={})


@pytest.mark.parametrize(
    ("spec", "meant"),
    [("openai/gpt-4o-mini", "openai:gpt-4o-mini"), ("ollama/llama3.2", "ollama:llama3.2")],
)
def test_a_slash_spelling_suggests_the_colon(spec: str, meant: str) -> None:
    with pytest.raises(ModelResolutionError) as caught:
        resolve(spec, env={})
    message = str(caught.value)
    assert message.startswith(f"Did you mean {meant!r}?")
    assert f"'openrouter:{spec}'" in message  # a model name that holds a slash keeps it


def test_a_name_without_slash_gets_no_suggestion() -> None:
    with pytest.raises(ModelResolutionError) as caught:
        resolve("gpt4", env={})
    assert "Did you mean" not in str(caught.value)
