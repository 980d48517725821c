"""The error hierarchy. Every error promptimus raises on purpose is a `PromptimusError`, and its
message says what went wrong *and* what to do about it. Some errors are also a built-in
exception (in parentheses), so `except ValueError:` and friends keep catching them.

    PromptimusError
    ├── InvalidArgument (ValueError)
    │   ├── UnencodableText
    │   ├── InvalidStoreAddress · InvalidSessionId · InvalidWorkflowId
    │   └── InvalidAgentRequest · NotAModel (also TypeError)
    ├── OptionalDependencyMissing (ImportError)
    ├── ModuleError
    │   ├── RecursiveModule
    │   └── ModuleTooDeep
    ├── ParamNotSet
    ├── InvalidParameterValue (TypeError)
    ├── ProviderNotSet
    │   ├── LLMNotSet · EmbedderNotSet · VectorStoreNotSet · RerankerNotSet
    ├── SyncCallInLoop
    ├── PromptFormatError
    ├── CheckpointError
    │   ├── CheckpointSyntaxError
    │   ├── CheckpointMismatch
    │   ├── CheckpointTooDeep
    │   ├── CheckpointWriteError (OSError)
    │   └── CheckpointReferenceError
    │       ├── UnsafeReference
    │       └── ReferenceTooLarge
    ├── FileRefused
    │   ├── NotARegularFile
    │   └── FileTooLarge
    ├── ProviderError
    │   ├── ProviderConfigError
    │   │   ├── ModelResolutionError
    │   │   └── CrossOriginRedirect
    │   ├── UnknownRequestOption (TypeError)
    │   ├── ProviderUnavailable
    │   │   ├── RetryBudgetExhausted
    │   │   │   └── ProviderTimeout (TimeoutError)
    │   │   ├── StreamInterrupted
    │   │   └── AllProvidersFailed
    │   ├── ProviderResponseError
    │   │   ├── RequestRejected
    │   │   │   └── ContextWindowExceeded
    │   │   └── MalformedReply
    │   │       └── EmptyReply · ErrorInReply · EventLineTooLong
    │   └── OutputTruncated
    ├── ResponseCacheError
    ├── VectorStoreError
    │   ├── TextSearchUnsupported (NotImplementedError)
    │   ├── InvalidFilter (ValueError)
    │   ├── InvalidEmbedding (ValueError)
    │   ├── VectorIndexCorrupted
    │   └── VectorStoreRecoveryError
    ├── EmptyMemory (IndexError)
    ├── FailedToParseOutput
    ├── ToolError
    │   ├── ToolArgumentsError
    │   ├── ToolExecutionError
    │   │   ├── ToolTimeout
    │   │   ├── ToolResultNotSerializable
    │   │   └── MCPResultUnknown (also an MCPError)
    │   ├── DuplicateToolName
    │   └── InvalidToolName (ValueError)
    ├── ModelJSONTooComplex (json.JSONDecodeError)
    ├── ReactParseError
    ├── MaxIterExceeded
    ├── AgentNestingTooDeep
    ├── ApprovalRequired
    │   └── SubAgentPaused
    ├── GuardrailError
    │   ├── GuardrailTripped
    │   └── InvalidVerdict (TypeError)
    ├── RunStateError
    │   └── RunStateMismatch · RunStateConsumed · MissingApproval
    ├── MCPError
    ├── SessionStateError
    ├── SessionStoreError
    │   ├── SessionStoreUnavailable
    │   │   └── SessionStoreAuthenticationFailed
    │   └── SessionStoreFull · SessionStoreCorrupt
    ├── DurableError
    │   └── DurableSetupError · DurableInputMismatch · DurableRunNotFound · DurableApprovalError
    │       · DurableRunStopped · DurableSessionError (InvalidWorkflowId: also InvalidArgument)
    ├── BudgetExceeded
    ├── EvalError
    │   ├── DatasetError (ValueError)
    │   │   └── EmptyDataset · ExampleInputsMismatch (also TypeError)
    │   ├── MetricResultError (TypeError)
    │   ├── CallBudgetExceeded
    │   ├── BatchError: BatchUnsupported · BatchExpired · BatchFailed · BatchRequestFailed
    │   └── RunnerError
    │       ├── NotPicklable
    │       │   └── ModuleNotPicklable
    │       ├── WorkerSetupFailed
    │       │   └── WorkersFailedToStart
    │       └── WorkersUnavailable · WorkerLost
    ├── OptimizationError
    │   ├── NothingToTrain · EmptyTrainingData · BudgetTooSmall
    │   └── ObjectiveError
    │       └── InvalidObjective · UnknownObjective (also ValueError) · NoCandidateFits
    │           · UnpricedModel
    └── ScriptExhausted · FakeServerError · InvalidEmbeddingDimensions (ValueError)

The sections below follow the tiers: the base and argument errors, the module tree, checkpoints,
providers, stores, prebuilt modules, tools, agents, MCP, budgets, evaluation and training, and
the test doubles.
"""

from __future__ import annotations

import json
from typing import Any

from ._compat_seam import compat_names

# --- the base and bad arguments ------------------------------------------------------------------


class PromptimusError(Exception):
    """Base class of every error promptimus raises on purpose."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled whole, whatever its own constructor takes: a durable run keeps the error that
        # stopped it for whoever reads the run later, a Ray worker sends it back to the driver.
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(cls: type[PromptimusError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """An unpickled error: its arguments and attributes as they were, its constructor not run
    again (it may take other arguments than the message it made)."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class InvalidArgument(PromptimusError, ValueError):
    """A function was called with an argument it cannot use."""


class UnencodableText(InvalidArgument):
    """A request holds text that UTF-8 cannot encode: a lone surrogate such as ``"\\ud800"``,
    usually from bytes decoded with ``errors="surrogateescape"`` (file names, environment
    variables, subprocess output). Raised before the request is sent; ``where`` names the
    field (``messages[2].content``)."""

    def __init__(self, message: str, *, where: str = "") -> None:
        super().__init__(message)
        self.where = where


class OptionalDependencyMissing(PromptimusError, ImportError):
    """A feature needs a package that is not installed; the message names the one to install."""


# --- the module tree and calling modules ---------------------------------------------------------


class ModuleError(PromptimusError):
    """A module tree was used in a way it does not allow."""


class RecursiveModule(ModuleError):
    """Registering a module would make the tree contain a cycle."""


class ModuleTooDeep(ModuleError):
    """Registering a module would make a tree deeper than `promptimus.core.MAX_MODULE_DEPTH`."""


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


class SyncCallInLoop(PromptimusError):
    """`run_sync` was called from inside a running event loop."""


class PromptFormatError(PromptimusError):
    """A prompt template could not be formatted with the given variables."""


# --- checkpoints and the files they read ---------------------------------------------------------


class CheckpointError(PromptimusError):
    """A checkpoint could not be saved or loaded. The module was left untouched."""


class CheckpointSyntaxError(CheckpointError):
    """The checkpoint is not valid TOML."""


class CheckpointMismatch(CheckpointError):
    """The checkpoint's keys or value types do not fit the module."""


class CheckpointTooDeep(CheckpointError):
    """A checkpoint nests tables or lists deeper than a module tree or a value can be
    (`promptimus.core.MAX_MODULE_DEPTH`, `promptimus.core.MAX_VALUE_DEPTH`)."""


class CheckpointWriteError(CheckpointError, OSError):
    """A checkpoint could not be written (the path is a folder, the disk or a file-size limit is
    full, a name cannot be encoded). The previous file, if any, is left as it was. An `OSError`
    too, so `except OSError` around a save keeps working."""


class CheckpointReferenceError(CheckpointError):
    """A `${file:...}` or `${pkg:...}` reference could not be resolved."""


class UnsafeReference(CheckpointReferenceError):
    """A `${file:...}` reference points outside the checkpoint's folder."""


class ReferenceTooLarge(CheckpointReferenceError):
    """A referenced file, or the checkpoint with every reference expanded, is larger than the
    limit `load()` was given (`max_file_bytes`, `max_expanded_chars`)."""


class FileRefused(PromptimusError):
    """A checkpoint or a file it references may not be read. `reason` completes "the file ...".
    The checkpoint code turns it into a `CheckpointError` naming the checkpoint and the key."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class NotARegularFile(FileRefused):
    """The path is a folder, a FIFO, a device or a socket: only regular files are read."""


class FileTooLarge(FileRefused):
    """The file holds more bytes than the limit it was read with (`max_file_bytes`)."""


# --- providers: requests, replies and what wraps them --------------------------------------------


class ProviderError(PromptimusError):
    """A provider (LLM, embedder, store, reranker) failed in a way the caller must handle."""


class ProviderConfigError(ProviderError):
    """A provider is missing configuration (API key, base URL, model name)."""


class ModelResolutionError(ProviderConfigError):
    """A model string like "openai:gpt-4o-mini" could not be resolved to a provider."""


class UnknownRequestOption(ProviderError, TypeError):
    """A provider call was given a request option the API client does not know (a
    ``TypeError`` too, as the SDK's own methods raise for an unknown keyword)."""


class ProviderUnavailable(ProviderError):
    """The provider could not be reached, or kept failing after every retry."""


class RetryBudgetExhausted(ProviderUnavailable):
    """Every retry failed; the last error is attached as `__cause__`."""


class StreamInterrupted(ProviderUnavailable):
    """A streamed reply ended before the model finished it: no chunk carried a ``finish_reason``
    (the server died or closed the connection mid-stream, or sent its error in a form the SDK
    skips). What had arrived is attached: ``chunks``, ``content_chars``, ``tool_calls`` and the
    last ``finish_reason`` seen (None when the stream was cut)."""

    def __init__(
        self,
        message: str,
        *,
        chunks: int = 0,
        content_chars: int = 0,
        tool_calls: int = 0,
        finish_reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.chunks = chunks
        self.content_chars = content_chars
        self.tool_calls = tool_calls
        self.finish_reason = finish_reason


class AllProvidersFailed(ProviderUnavailable):
    """Every provider of a `FallbackLLM` failed with a provider error (unavailable, rate
    limited, 5xx, timeout, malformed reply). ``failures`` holds ``(model_name, error)`` per
    provider in the order tried; the last error is attached as ``__cause__``. A
    `ProviderUnavailable`, so a chain nested in another chain falls through too."""

    def __init__(self, message: str, failures: list[tuple[str, BaseException]]) -> None:
        super().__init__(message)
        self.failures = list(failures)


class ProviderResponseError(ProviderError):
    """The provider answered with an error that retrying will not fix (4xx, malformed body)."""


class RequestRejected(ProviderResponseError):
    """The server rejected the request itself (a 4xx, or an error body that is a request
    validation error): the same request would be rejected again, so it is not retried.
    ``status`` is the HTTP status (None for an error sent inside a stream); ``server_message``
    is what the server said; ``rejected_fields`` the request fields it named as invalid, as
    dotted paths (``("response_format.type",)``), empty when it named none."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        server_message: str = "",
        rejected_fields: tuple[str, ...] = (),
    ):
        super().__init__(message)
        self.status = status
        self.server_message = server_message
        self.rejected_fields = tuple(rejected_fields)


class ContextWindowExceeded(RequestRejected):
    """The request (prompt plus requested completion) is larger than the model's context window.
    ``context_window`` and ``prompt_tokens`` hold the numbers the server reported, if any."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        server_message: str = "",
        context_window: int | None = None,
        prompt_tokens: int | None = None,
    ) -> None:
        super().__init__(message, status=status, server_message=server_message)
        self.context_window = context_window
        self.prompt_tokens = prompt_tokens


class MalformedReply(ProviderResponseError):
    """A server answered ``200 OK`` with something that is not a valid reply: not JSON, not an
    object (an HTML error page, a JSON list), or a required field missing, null or of the wrong
    type. ``problem`` says what was wrong and ``source`` which request got it. A malformed reply
    is retried once (a proxy's error page or a glitch may pass), then raised."""

    def __init__(self, problem: str, *, source: str | None = None) -> None:
        self.problem = problem
        self.source = source
        super().__init__(self._describe())

    def _describe(self) -> str:
        return (
            f"{self.source or 'The server'} got a malformed reply: {self.problem}. Check that "
            "base_url points at an OpenAI-compatible API (often ending in /v1) and that no proxy "
            "or gateway answers in its place."
        )

    def located(self, source: str, problem: str | None = None) -> MalformedReply:
        """The same error, saying which request (provider, model, server) got the reply
        (``problem`` replaces the description, e.g. with a key masked)."""
        return type(self)(self.problem if problem is None else problem, source=source)


class EmptyReply(MalformedReply):
    """A well-formed reply with nothing in it: no text, no tool call and no refusal (the
    reasoning alone is not an answer). ``finish_reason`` is what the server reported; with
    ``"length"`` the model spent its whole token budget before writing anything (often on
    reasoning), which is not retried since the same budget would be spent the same way."""

    def __init__(
        self, problem: str = "", *, source: str | None = None, finish_reason: str | None = None
    ) -> None:
        self.finish_reason = finish_reason
        super().__init__(problem or "an empty answer", source=source)

    def _describe(self) -> str:
        where = self.source or "The server"
        said = f"finish_reason {self.finish_reason!r}"
        if self.finish_reason == "length":
            return (
                f"{where} got an empty answer ({self.problem}; {said}): the model spent its "
                "whole token budget before writing anything, often on reasoning. Raise "
                "max_tokens / max_completion_tokens or lower the reasoning effort."
            )
        return (
            f"{where} got an empty answer ({self.problem}; {said}): no text, no tool call and "
            "no refusal. The server or the model failed without saying so; check the server's "
            "log and the model's chat template."
        )

    def located(self, source: str, problem: str | None = None) -> EmptyReply:
        return type(self)(
            self.problem if problem is None else problem,
            source=source,
            finish_reason=self.finish_reason,
        )


class OutputTruncated(ProviderError):
    """The model stopped because it hit its token limit (finish_reason == "length")."""


class ContentFiltered(ProviderResponseError):
    """The provider stopped the reply with its content filter (a Responses API reply that is
    ``incomplete`` for ``content_filter``): the same request would be stopped again, so it is
    not retried. ``partial`` is the text written before it stopped."""

    def __init__(self, message: str, *, partial: str = "") -> None:
        super().__init__(message)
        self.partial = partial


class HostedToolUnsupported(ProviderConfigError):
    """A hosted tool (`promptimus.tools.HostedTool`: web search, file search, code interpreter,
    which the provider's server runs) was given to a provider whose API has none."""


class ResponseCacheError(PromptimusError):
    """A response cache (`MemoryCache`, `SQLiteCache`) was configured with values it cannot use,
    or its file cannot be opened as a cache."""


# --- vector stores -------------------------------------------------------------------------------


class VectorStoreError(PromptimusError):
    """A vector store was used in a way it does not allow, or its data could not be read."""


class TextSearchUnsupported(VectorStoreError, NotImplementedError):
    """``text_search`` was called on a store that only searches by embedding."""


class InvalidFilter(VectorStoreError, ValueError):
    """A ``where`` metadata filter uses an operator or shape the stores do not understand."""


class InvalidEmbedding(VectorStoreError, ValueError):
    """Embeddings have the wrong shape: mismatched lengths, dimensions, or counts."""


class VectorIndexCorrupted(VectorStoreError):
    """A store's on-disk vector index cannot be read (for instance after its process was killed
    mid-write) while its rows are still on disk. The message names the method that rebuilds
    the index from those rows (Chroma: ``ChromaVectorStore.rebuild()``)."""


class VectorStoreRecoveryError(VectorStoreError):
    """A rebuild could not recover every committed row, so it changed nothing; the message says
    which rows lack what."""


# --- prebuilt modules ----------------------------------------------------------------------------


class EmptyMemory(PromptimusError, IndexError):
    """A memory operation needs a message, but the memory holds none."""


class FailedToParseOutput(PromptimusError):
    """Structured output failed validation on every attempt."""

    def __init__(self, message: str, raw: list[str] | None = None, errors: list[str] | None = None):
        super().__init__(message)
        self.raw = list(raw or [])
        self.errors = list(errors or [])


# --- tools ---------------------------------------------------------------------------------------


class ToolError(PromptimusError):
    """A tool was defined or called incorrectly."""


class ToolArgumentsError(ToolError):
    """A tool was called with arguments that are not valid JSON or fail validation.

    The message is short and written for the model, so an agent can send it back as the tool
    result and let the model correct its call.
    """


class ToolExecutionError(ToolError):
    """The function behind a tool raised; the original exception is attached as `__cause__`."""


class ToolTimeout(ToolExecutionError):
    """A tool did not return within its timeout. The agent sends the message back to the model
    as the tool's result; a sync tool's thread may still be running (Python cannot stop it)."""


class ToolResultNotSerializable(ToolExecutionError):
    """A tool returned a value with no JSON form (an object of a plain class, a socket, ...).
    The agent sends the message back as the tool's result, and the run shows the tool failed;
    return text, a dict, a list, a number, a dataclass or a pydantic model instead."""


class DuplicateToolName(ToolError):
    """Two tools given to one agent or toolset share a name."""


class InvalidToolName(ToolError, ValueError):
    """A tool name does not match ``^[a-zA-Z0-9_-]{1,64}$`` (the OpenAI rule)."""


# --- agents --------------------------------------------------------------------------------------


class ModelJSONTooComplex(PromptimusError, json.JSONDecodeError):
    """JSON a model wrote is nested deeper, or holds a longer integer, than promptimus decodes
    (see `promptimus.model_json`). It is a `json.JSONDecodeError`, so code that sends malformed
    JSON back to the model handles it the same way; the message is written for the model."""


class ReactParseError(PromptimusError):
    """A ReACT reply could not be parsed. The message is written for the model: a ReACT agent
    sends it back as an observation so the model can correct its format."""


class MaxIterExceeded(PromptimusError):
    """An agent used up its step budget without producing a final answer."""

    def __init__(self, message: str, messages: list[Any] | None = None) -> None:
        super().__init__(message)
        self.messages = list(messages or [])


class AgentNestingTooDeep(PromptimusError):
    """Agent runs nested inside each other (an agent whose tool runs an agent, ...) deeper than
    the allowed depth, usually a tool that calls its own agent."""


class ApprovalRequired(PromptimusError):
    """A run stopped because the model called a tool that needs a person's approval.

    Raised by `agent(...)` / `agent.forward(...)`, which cannot return an output for a paused
    run; `agent.run(...)` returns the paused result instead. `.result` is that `RunResult`
    (`status="needs_approval"`, `.pending`, `.state`)."""

    def __init__(self, message: str, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class RunStateError(PromptimusError):
    """A paused run's state cannot be resumed as given (see the subclasses)."""


class RunStateMismatch(RunStateError):
    """The state belongs to another agent (another class, path or set of tool names)."""


class RunStateConsumed(RunStateError):
    """The state was already resumed once; a paused run continues at most once."""


class MissingApproval(RunStateError):
    """A resume did not decide every pending tool call (or named an id that is not pending)."""


class SubAgentPaused(ApprovalRequired):
    """An agent run as a tool (or called inside one) paused for approval. Its state cannot be
    resumed through the run that called it: `.result` is the sub-agent's paused `RunResult`,
    `.tool` the name of the tool call it paused in. Raised by the calling agent, in that call."""

    def __init__(self, message: str, result: Any = None, tool: str | None = None) -> None:
        super().__init__(message, result)
        self.tool = tool


# --- MCP -----------------------------------------------------------------------------------------


class MCPError(PromptimusError):
    """An MCP server could not be started, reached or used (`promptimus.mcp`)."""


class MCPResultUnknown(MCPError, ToolExecutionError):
    """The connection to an MCP server was lost after a tool call was sent, so whether the tool
    ran is unknown. The call is not repeated (the tool may not be safe to run twice); an agent
    sends the message to the model as the tool's error, and the next call reconnects."""


# --- budgets -------------------------------------------------------------------------------------


class BudgetExceeded(PromptimusError):
    """A `pm.budget(...)` limit was reached; the request that would exceed it was not sent."""


# --- evaluation and training ---------------------------------------------------------------------


class EvalError(PromptimusError):
    """An evaluation (`promptimus.evals`) was set up or run in a way it does not allow."""


class DatasetError(EvalError, ValueError):
    """A dataset row or file cannot be read as examples. `line` is the 1-based line (JSONL, CSV)
    or record number (`from_records`) of the bad row, when there is one."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class EmptyDataset(DatasetError):
    """An evaluation was asked to run on no examples."""


class MetricResultError(EvalError, TypeError):
    """A metric returned something other than a number or a `Score` (or a number that is not
    finite). The run stops at the first such result: every later score would be wrong too."""


class CallBudgetExceeded(EvalError):
    """An evaluation would make more module calls than its `CallCounter` allows. Raised before
    any call of that evaluation is made."""


class BatchError(EvalError):
    """A batch evaluation (`evaluate(..., batch=True)`) could not be done through the
    provider's batch API."""


class BatchUnsupported(BatchError):
    """A model the evaluated module uses has no batch API (only OpenAI's and Anthropic's are
    supported). Raised before any request is sent."""


class BatchExpired(BatchError):
    """A batch was not finished within the provider's completion window (24 hours): the
    evaluation has no complete result. Retry later, or with fewer examples."""


class BatchFailed(BatchError):
    """The provider failed, refused or cancelled a whole batch: no request of it was answered."""


class BatchRequestFailed(BatchError):
    """One request of a batch got an error instead of a reply: that example's row fails with
    it, the other rows stand. `status` is the HTTP status the provider gave, if any."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class OptimizationError(PromptimusError):
    """An optimizer or `fit` was given something it cannot train with. Raised before any model
    call, so nothing was spent and the module is unchanged."""


class NothingToTrain(OptimizationError):
    """The module has no trainable parameter: every text `Parameter` is frozen or unset."""


class EmptyTrainingData(OptimizationError):
    """A training or validation set holds no example."""


class BudgetTooSmall(OptimizationError):
    """The budget cannot even pay for the baseline evaluation of the validation set."""


class ObjectiveError(OptimizationError):
    """Training objectives (`fit(objectives=...)`) or a rule choosing among them (`Weighted`,
    `BestUnder`) were given something they cannot use."""


class InvalidObjective(ObjectiveError, InvalidArgument):
    """An objective or a selection rule was built from a bad value: a measure that is not
    callable, a direction other than "higher" or "lower", a weight or bound that is NaN,
    infinite, a string or a bool."""


class UnknownObjective(ObjectiveError, InvalidArgument):
    """A selection rule names an objective the training run did not declare."""


class NoCandidateFits(ObjectiveError):
    """No candidate on the frontier meets the bounds of a `BestUnder` rule."""


class UnpricedModel(ObjectiveError):
    """The `Cost` objective met a model its price table has no price for: its cost would be
    unknown, never zero."""


# --- runners: evaluate and fit on workers (promptimus.distributed) ------------------------------


class RunnerError(EvalError):
    """A runner could not run an evaluation on its workers."""


class NotPicklable(RunnerError):
    """What must travel to the workers (the module, the metric, `setup`) cannot be pickled; the
    message names the part. Raised before any example is run or counted."""


class ModuleNotPicklable(NotPicklable):
    """The module cannot travel to the workers: pickle refuses one of its attributes (a lambda,
    an open file, a client), which the message names by its path in the tree."""


class WorkerSetupFailed(RunnerError):
    """A worker could not take the module: unpickling it there, or `setup`, raised. Raised
    before any example is run or counted; the message quotes the worker's exception."""


class WorkersUnavailable(RunnerError):
    """The cluster could not be reached, or could not start the workers in time."""


class WorkerLost(RunnerError):
    """The same examples lost their worker on every attempt (something in them ends the
    process), so the evaluation stopped; the message names them."""


# --- test doubles (promptimus.testing, ScriptedLLM, HashingEmbedder) -----------------------------


class ScriptExhausted(PromptimusError):
    """A ``ScriptedLLM`` was called more times than it has scripted replies."""


class FakeServerError(PromptimusError):
    """The fake OpenAI server (``promptimus.testing``) could not start or stop."""


class InvalidEmbeddingDimensions(PromptimusError, ValueError):
    """An embedding was requested with fewer than one dimension."""


# --- session stores: conversations kept in SQLite, PostgreSQL or Redis -------------------------


class InvalidSessionId(InvalidArgument):
    """A session id a store cannot keep as plain data (empty, not text, a NUL character, a lone
    surrogate, or longer than `promptimus.core.session.MAX_SESSION_ID_CHARS`)."""


class SessionStateError(PromptimusError):
    """Conversation state of a `Session` with a store was used in a way the store cannot keep:
    read before anything was loaded, changed outside a turn, or one memory shared by two
    modules."""


class SessionStoreError(PromptimusError):
    """A session store failed; the message names the store (never the password in its URL)."""


class SessionStoreUnavailable(SessionStoreError):
    """The store cannot be reached or opened (server down, wrong address, timed out, a file
    that cannot be created)."""


class SessionStoreFull(SessionStoreError):
    """The store refused a write for lack of room (disk full, Redis `maxmemory`)."""


class SessionStoreCorrupt(SessionStoreError):
    """What the store holds cannot be read as conversations (not a database of ours, a damaged
    turn)."""


class DurableError(PromptimusError):
    """A durable agent run (`promptimus.durable`, on DBOS) was used in a way the engine cannot
    keep; the message says what to do."""


class DurableSetupError(DurableError):
    """DBOS is not set up for durable runs: no `DBOS(config=...)` yet, not launched, or a
    `DurableAgent` created after `DBOS.launch()` (its runs could not be recovered)."""


class DurableInputMismatch(DurableError):
    """A `workflow_id` already names a durable run with another input (or of another
    `DurableAgent`): a workflow id is the identity of one run."""


class DurableRunNotFound(DurableError, LookupError):
    """No durable run has the given `workflow_id`."""


class DurableApprovalError(DurableError):
    """An approval that does not fit the run: it is not paused, the call is not pending, or the
    call was already decided otherwise."""


class DurableRunStopped(DurableError):
    """The durable run ended without a result: cancelled, or abandoned after too many recovery
    attempts."""


class InvalidWorkflowId(DurableError, InvalidArgument):
    """A durable run's `workflow_id` that cannot name a run: not text, empty or only
    whitespace, a NUL character, a lone surrogate, longer than
    `promptimus.core.session.MAX_SESSION_ID_CHARS`, or holding the separator of the ids that
    durable runs reserve for their approvals."""


class DurableSessionError(DurableError):
    """A durable run was asked to keep a conversation it cannot keep: a `session_id` without a
    session store on the `DurableAgent`, or a run started inside a `Session` whose conversation
    a recovering process could not find."""


# --- guardrails ---------------------------------------------------------------------------------


class GuardrailError(PromptimusError):
    """A guardrail (`promptimus.guardrails`) stopped a run, or was used in a way it cannot be."""


class GuardrailTripped(GuardrailError):
    """A guardrail blocked a run: `guard` names it (its module path ending in its name,
    ``root.guardrails.no_refunds``), `kind` says what it
    guarded ("input", "output" or "tool") and `reason` why it blocked. `tool` names the tool
    call a tool guardrail stopped the run at."""

    def __init__(
        self,
        message: str,
        *,
        guard: str,
        kind: str,
        reason: str | None = None,
        tool: str | None = None,
    ) -> None:
        super().__init__(message)
        self.guard = guard
        self.kind = kind
        self.reason = reason
        self.tool = tool


class InvalidVerdict(GuardrailError, TypeError):
    """A guardrail's check returned something that is not a verdict (a `Verdict`, True, False
    or None), or a verdict its kind of guardrail cannot apply."""


# --- session stores: addresses and sign-in ------------------------------------------------------


class InvalidStoreAddress(InvalidArgument):
    """A session store's address cannot be used: a URL or libpq string that the driver would
    misread (an unencoded `/`, `#` or `@` in the password, a malformed `%` escape, an unclosed
    quote), or an SQLite path such as `":memory:"` that is not one shared file. The message says
    what to fix and never quotes the address (it may hold a password)."""


class SessionStoreAuthenticationFailed(SessionStoreUnavailable):
    """The store's server refused the user name or password; retrying would not help."""


# --- wire: replies and deadlines -----------------------------------------------------------------


class ProviderTimeout(RetryBudgetExhausted, TimeoutError):
    """A request took longer than its ``timeout`` on every attempt: the whole request, from
    sending it to the last byte of the reply (a stream: to each event), however slowly the
    server sends. A `RetryBudgetExhausted` too: each attempt the budget allowed timed out."""


class CrossOriginRedirect(ProviderConfigError):
    """The configured server redirected a request to another origin (scheme, host or port).
    The redirect is not followed: the request carries the API key, and a key is only ever sent
    to the server it was configured for. ``origin`` is the configured server's, ``target`` the
    one it pointed at (both without any password)."""

    def __init__(self, origin: str, target: str, status: int) -> None:
        self.origin = origin
        self.target = target
        self.status = status
        super().__init__(
            f"{origin} answered HTTP {status}, a redirect to another server ({target}); it was "
            "not followed, since the request carries the API key, which is only sent to the "
            "server configured. If the service has moved, set base_url to its new address."
        )

    def __reduce__(self) -> tuple[type[CrossOriginRedirect], tuple[str, str, int]]:
        return type(self), (self.origin, self.target, self.status)


class ErrorInReply(MalformedReply):
    """A server answered ``200 OK`` with an error object (``{"error": {...}}``, as some proxies
    and gateways do) instead of a reply. ``problem`` holds what the server said."""

    def _describe(self) -> str:
        return (
            f"{self.source or 'The server'} was answered with an error instead of a reply "
            f"(HTTP 200); the server said: {self.problem}. Check the server's or proxy's log: "
            "the request may be fine and the model unavailable."
        )


class EventLineTooLong(MalformedReply):
    """A server-sent event stream sent a line longer than the decoder takes (a proxy's page
    without newlines, a runaway event): the stream is not read further."""


# --- what a new user meets first: requests, inputs, models, workers -------------------------------


class InvalidAgentRequest(InvalidArgument, TypeError):
    """An agent was asked something that is not text, a `Message` or a list of Messages (a
    number, a dict of fields); nothing was sent."""


class ExampleInputsMismatch(DatasetError, TypeError):
    """An example's inputs do not fit the module's `forward` (a missing required argument, or
    one it does not take); found before any call is made."""


class NotAModel(InvalidArgument, TypeError):
    """`with_llm` was given something that is neither a model (an object with `achat`) nor a
    model string such as ``"openai:gpt-4o-mini"``."""


class WorkersFailedToStart(WorkerSetupFailed):
    """Ray's worker processes died while starting (a missing package, a wrong interpreter); the
    message quotes the error of one of them."""


# --- compaction ---------------------------------------------------------------------------------


class CompactionError(PromptimusError):
    """A conversation could not be compacted as asked."""


class SummaryFailed(CompactionError):
    """`Summarize` got no usable summary: the reply was empty, cut off at its token limit, or a
    tool call. Nothing was replaced: the conversation is as it was."""


class UnknownContextWindow(CompactionError, InvalidArgument):
    """`Compactor(trigger_fraction=...)` needs the model's context window, and the model is not
    in the table of known ones (`promptimus.modules.compaction.CONTEXT_WINDOWS`)."""


# --- replay ---------------------------------------------------------------------------------------


class ReplayMismatch(PromptimusError):
    """A strict replay cassette was asked a request it never recorded (a changed prompt, option
    or model): nothing was sent. The message shows the request's difference from the nearest
    recorded one; re-record the cassette (mode "record") if the change is intended."""

    def __init__(self, message: str, *, diff: str = "") -> None:
        super().__init__(message)
        self.diff = diff


class CassetteError(InvalidArgument):
    """A replay cassette cannot be used: an unknown mode, a file that is not a cassette, or a
    strict replay of a cassette that does not exist."""


# Older names (`ProviderRetryExceded`, ...) are served by `promptimus.compat.names`.
__getattr__ = compat_names(__name__)
