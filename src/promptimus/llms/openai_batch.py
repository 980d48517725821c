"""OpenAI's Batch API for `OpenAILike`: many chat requests as one JSONL file, at half price.

The requests are the JSON `OpenAILike` would post to ``/chat/completions`` (one line each,
``custom_id`` its position), uploaded with ``files.create(purpose="batch")``; the batch is
created over that file (``batches.create``, ``completion_window="24h"``), polled with
``batches.retrieve`` and read back from its output and error files (``files.content``), all
through the official SDK's client of the provider (its key, address, headers) and its retry
layer. Each reply is read as a direct reply is (`completion_to_message`)."""

from __future__ import annotations

import json
from typing import Any, Final

from promptimus.dto import Message
from promptimus.errors import (
    BatchExpired,
    BatchFailed,
    BatchRequestFailed,
    BatchUnsupported,
    PromptimusError,
)
from promptimus.llms.batch_api import (
    BatchRequest,
    BatchStatus,
    BatchWaiting,
    ProviderBatch,
    wait_for_batch,
)
from promptimus.llms.openai_format import completion_to_message
from promptimus.llms.server_said import said_by_server
from promptimus.transport.secret_scrub import redact_secrets

__all__ = ["OpenAIBatchAPI"]

ENDPOINT: Final = "/v1/chat/completions"
_TRANSPORT_OPTIONS = ("timeout", "extra_headers", "extra_query", "extra_body")
_RUNNING = frozenset({"validating", "in_progress", "finalizing", "cancelling"})


class OpenAIBatchAPI(ProviderBatch):
    """The batch API of one `OpenAILike` provider (see the module docstring)."""

    kind = "openai-batch"
    default_host = "api.openai.com"

    def _line(self, index: int, request: BatchRequest) -> dict[str, Any]:
        params = self._provider._params(request.history, dict(request.params))
        for option in ("stream", "stream_options"):
            params.pop(option, None)
        body = {key: value for key, value in params.items() if key not in _TRANSPORT_OPTIONS}
        body.update(params.get("extra_body") or {})
        return {"custom_id": f"request-{index}", "method": "POST", "url": ENDPOINT, "body": body}

    async def _sdk(self, call: Any, what: str) -> Any:
        """``call()`` through the provider's retry layer (errors named, the key scrubbed)."""
        provider = self._provider
        context = f"batch {what} for model {provider.model_name!r} at {self._where()}"
        return await provider.retry.run(call, context=context, redact=provider.secrets())

    async def run(
        self, requests: list[BatchRequest], waiting: BatchWaiting
    ) -> list[Message | BaseException]:
        lines = [self._line(index, request) for index, request in enumerate(requests)]
        client = self._provider._factory.get()
        data = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode()
        try:
            uploaded = await self._sdk(
                lambda: client.files.create(
                    file=("promptimus-batch.jsonl", data, "application/jsonl"), purpose="batch"
                ),
                "upload",
            )
        except PromptimusError as exc:
            if getattr(exc.__cause__, "status_code", None) in (404, 405):
                raise BatchUnsupported(
                    f"the server at {self._where()} has no batch API (its /files endpoint "
                    "answered 404): evaluate without batch=True there."
                ) from None
            raise
        batch = await self._sdk(
            lambda: client.batches.create(
                input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h"
            ),
            "create",
        )
        waiting.on_status(_status(batch))
        batch = await wait_for_batch(
            batch,
            lambda old: self._sdk(lambda: client.batches.retrieve(old.id), "poll"),
            lambda current: current.status in _RUNNING,
            _status,
            lambda current: self._sdk(lambda: client.batches.cancel(current.id), "cancel"),
            waiting,
        )
        self._check_ended(batch)
        found: dict[str, dict[str, Any]] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = await self._sdk(lambda fid=file_id: client.files.content(fid), "results")
                for text in content.text.splitlines():
                    if text.strip():
                        entry = json.loads(text)
                        found[str(entry.get("custom_id"))] = entry
        return [self._result(batch.id, found.get(line["custom_id"])) for line in lines]

    def _check_ended(self, batch: Any) -> None:
        where = f"the OpenAI batch {batch.id} at {self._where()}"
        if batch.status == "expired":
            raise BatchExpired(
                f"{where} expired before all its requests were answered (24 hours): retry "
                "later, or evaluate fewer examples at once."
            )
        if batch.status == "failed":
            problems = getattr(getattr(batch, "errors", None), "data", None) or []
            said = "; ".join(
                f"{p.code}: {p.message}" + (f" (line {p.line})" if p.line else "") for p in problems
            )
            said = redact_secrets(said, self._provider.secrets())
            raise BatchFailed(f"{where} failed: {said or 'no reason given'}.")
        if batch.status == "cancelled":
            raise BatchFailed(f"{where} was cancelled before it finished.")

    def _result(self, batch_id: str, entry: dict[str, Any] | None) -> Message | BaseException:
        if entry is None:
            return BatchRequestFailed(f"the OpenAI batch {batch_id} gave no result for a request.")
        response = entry.get("response") or {}
        status = response.get("status_code")
        body = response.get("body")
        if status == 200:
            try:
                message = completion_to_message(body)
            except PromptimusError as exc:
                return exc
            if message.model_name is None:
                message.model_name = self._provider.model_name
            return message
        error = entry.get("error") or (body.get("error") if isinstance(body, dict) else body)
        text = (
            f"a request of the OpenAI batch {batch_id} failed"
            + (f" with HTTP {status}" if isinstance(status, int) else "")
            + f": {said_by_server(error)}"
        )
        return BatchRequestFailed(
            redact_secrets(text, self._provider.secrets()),  # a server may quote the key
            status=status if isinstance(status, int) else None,
        )


def _status(batch: Any) -> BatchStatus:
    counts = batch.request_counts
    total = counts.total if counts is not None else 0
    done = (counts.completed + counts.failed) if counts is not None else 0
    failed = counts.failed if counts is not None else 0
    return BatchStatus("openai", batch.id, batch.status, done, total, failed)
