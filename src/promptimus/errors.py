"""The error hierarchy. Every error promptimus raises on purpose is a `PromptimusError`.

Messages say what went wrong *and* what to do about it.
"""

from __future__ import annotations


class PromptimusError(Exception):
    """Base class of every error promptimus raises on purpose."""


# --- module tree -------------------------------------------------------------------------------


class ModuleError(PromptimusError):
    """A module tree was used in a way it does not allow."""


class RecursiveModule(ModuleError):
    """Registering a module would make the tree contain a cycle."""


class ParamNotSet(PromptimusError):
    """A parameter's value was read before it was set."""


class InvalidParameterValue(PromptimusError, TypeError):
    """A parameter was given a value of a type checkpoints cannot hold."""


class ProviderNotSet(PromptimusError):
    """A module asked for a provider that neither it nor any ancestor has."""


class LLMNotSet(ProviderNotSet):
    """No LLM was set on the module or any of its ancestors."""


class EmbedderNotSet(ProviderNotSet):
    """No embedder was set on the module or any of its ancestors."""


class VectorStoreNotSet(ProviderNotSet):
    """No vector store was set on the module or any of its ancestors."""


class RerankerNotSet(ProviderNotSet):
    """No reranker was set on the module or any of its ancestors."""


# --- checkpoints -------------------------------------------------------------------------------


class CheckpointError(PromptimusError):
    """A checkpoint could not be saved or loaded. The module was left untouched."""


class CheckpointSyntaxError(CheckpointError):
    """The checkpoint is not valid TOML."""


class CheckpointMismatch(CheckpointError):
    """The checkpoint's keys or value types do not fit the module."""


class CheckpointReferenceError(CheckpointError):
    """A `${file:...}` or `${pkg:...}` reference could not be resolved."""


class UnsafeReference(CheckpointReferenceError):
    """A `${file:...}` reference points outside the checkpoint's folder."""


# --- calling modules ---------------------------------------------------------------------------


class SyncCallInLoop(PromptimusError):
    """`run_sync` was called from inside a running event loop."""


class PromptFormatError(PromptimusError):
    """A prompt template could not be formatted with the given variables."""


class MaxIterExceeded(PromptimusError):
    """An agent used up its step budget without producing a final answer."""

    def __init__(self, message: str, messages: list | None = None) -> None:
        super().__init__(message)
        self.messages = list(messages or [])


class FailedToParseOutput(PromptimusError):
    """Structured output failed validation on every attempt."""

    def __init__(self, message: str, raw: list[str] | None = None, errors: list[str] | None = None):
        super().__init__(message)
        self.raw = list(raw or [])
        self.errors = list(errors or [])


class ToolError(PromptimusError):
    """A tool was defined or called incorrectly."""


# --- providers ---------------------------------------------------------------------------------


class ProviderError(PromptimusError):
    """A provider (LLM, embedder, store, reranker) failed in a way the caller must handle."""


class ProviderConfigError(ProviderError):
    """A provider is missing configuration (API key, base URL, model name)."""


class ProviderUnavailable(ProviderError):
    """The provider could not be reached, or kept failing after every retry."""


class RetryBudgetExhausted(ProviderUnavailable):
    """Every retry failed; the last error is attached as `__cause__`."""


class ProviderResponseError(ProviderError):
    """The provider answered with an error that retrying will not fix (4xx, malformed body)."""


class OutputTruncated(ProviderError):
    """The model stopped because it hit its token limit (finish_reason == "length")."""


class ModelResolutionError(ProviderConfigError):
    """A model string like "openai:gpt-4o-mini" could not be resolved to a provider."""


# --- test doubles (added by the llms helper) ---------------------------------------------------


class ScriptExhausted(PromptimusError):
    """A ``ScriptedLLM`` was called more times than it has scripted replies."""


class InvalidArgument(PromptimusError, ValueError):
    """A function was called with an argument it cannot use."""
