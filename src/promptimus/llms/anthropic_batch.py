"""Anthropic's Message Batches API for `Anthropic`: many Messages requests as one batch, at
half price.

Each request is the body `Anthropic` would post to ``/v1/messages`` (``custom_id`` its
position), sent with ``messages.batches.create``, polled with ``messages.batches.retrieve``
until its ``processing_status`` is ``ended`` and read back with ``messages.batches.results``,
all through the official SDK's client of the provider and its retry layer. Each reply is read as
a direct reply is (`reply_to_message`)."""

from __future__ import annotations

from typing import Any

from promptimus.dto import Message
from promptimus.errors import (
    BatchExpired,
    BatchFailed,
    BatchRequestFailed,
    BatchUnsupported,
    PromptimusError,
)
from promptimus.llms.anthropic_format import reply_to_message
from promptimus.llms.batch_api import (
    BatchRequest,
    BatchStatus,
    BatchWaiting,
    ProviderBatch,
    wait_for_batch,
)
from promptimus.llms.server_said import said_by_server
from promptimus.transport.secret_scrub import redact_secrets

__all__ = ["AnthropicBatchAPI"]

_TRANSPORT_OPTIONS = ("timeout", "extra_headers", "extra_query", "extra_body", "stream")


class AnthropicBatchAPI(ProviderBatch):
    """The Message Batches API of one `Anthropic` provider (see the module docstring)."""

    kind = "anthropic-batch"
    default_host = "api.anthropic.com"

    def _request(self, index: int, request: BatchRequest) -> dict[str, Any]:
        params = self._provider._params(request.history, dict(request.params))
        body = {key: value for key, value in params.items() if key not in _TRANSPORT_OPTIONS}
        body.update(params.get("extra_body") or {})
        return {"custom_id": f"request-{index}", "params": body}

    async def _sdk(self, call: Any, what: str) -> Any:
        provider = self._provider
        context = f"batch {what} for model {provider.model_name!r} at {self._where()}"
        return await provider.retry.run(call, context=context, redact=provider.secrets())

    async def run(
        self, requests: list[BatchRequest], waiting: BatchWaiting
    ) -> list[Message | BaseException]:
        sent = [self._request(index, request) for index, request in enumerate(requests)]
        batches = self._provider._client.connection().client.messages.batches
        try:
            batch = await self._sdk(lambda: batches.create(requests=sent), "create")
        except PromptimusError as exc:
            status = getattr(exc.__cause__, "status_code", None)
            if status in (404, 405):
                raise BatchUnsupported(
                    f"the server at {self._where()} has no Message Batches API (it answered "
                    f"{status}): evaluate without batch=True there."
                ) from None
            if status == 400:
                raise BatchFailed(
                    f"Anthropic at {self._where()} refused the batch: {exc}"
                ) from None
            raise
        waiting.on_status(_status(batch))
        batch = await wait_for_batch(
            batch,
            lambda old: self._sdk(lambda: batches.retrieve(old.id), "poll"),
            lambda current: current.processing_status != "ended",
            _status,
            lambda current: self._sdk(lambda: batches.cancel(current.id), "cancel"),
            waiting,
        )
        where = f"the Anthropic batch {batch.id} at {self._where()}"
        counts = batch.request_counts
        if counts.expired:
            raise BatchExpired(
                f"{where} expired with {counts.expired} of its requests unanswered (24 "
                "hours): retry later, or evaluate fewer examples at once."
            )
        if counts.canceled:
            raise BatchFailed(f"{where} was canceled before {counts.canceled} requests ran.")
        found: dict[str, Any] = {}

        async def read() -> None:
            async for entry in await batches.results(batch.id):
                found[entry.custom_id] = entry.result

        await self._sdk(read, "results")
        return [self._result(batch.id, found.get(item["custom_id"])) for item in sent]

    def _result(self, batch_id: str, result: Any) -> Message | BaseException:
        if result is None:
            return BatchRequestFailed(
                f"the Anthropic batch {batch_id} gave no result for a request."
            )
        if result.type == "succeeded":
            try:
                message = reply_to_message(result.message.to_dict(mode="json", warnings=False))
            except PromptimusError as exc:
                return exc
            if message.model_name is None:
                message.model_name = self._provider.model_name
            return message
        error = getattr(result, "error", None)
        said = (
            error.to_dict(mode="json", warnings=False)
            if error is not None
            else {"type": result.type}
        )
        inner = said.get("error", said) if isinstance(said, dict) else said
        text = (
            f"a request of the Anthropic batch {batch_id} ended {result.type}: "
            f"{said_by_server(inner)}"
        )
        return BatchRequestFailed(redact_secrets(text, self._provider.secrets()))


def _status(batch: Any) -> BatchStatus:
    counts = batch.request_counts
    total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
    return BatchStatus(
        "anthropic",
        batch.id,
        batch.processing_status,
        total - counts.processing,
        total,
        counts.errored,
    )
