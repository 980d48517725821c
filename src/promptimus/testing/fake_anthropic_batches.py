"""Anthropic's Message Batches API on the fake server: ``/v1/messages/batches``.

As the public API reference describes it, small: create a batch (``POST /v1/messages/batches``
with ``requests``: ``{"custom_id", "params"}`` each, ``params`` a Messages request), poll it
(``GET /v1/messages/batches/{id}``: ``processing_status`` ``in_progress`` → ``ended``, with
``request_counts`` and, once ended, a ``results_url``), read its results
(``GET .../{id}/results``: JSONL, one ``{"custom_id", "result"}`` per request, ``result.type``
``succeeded`` / ``errored`` / ``canceled`` / ``expired``), cancel it (``POST .../{id}/cancel``)
or list them. Every request is answered by the server's own Messages handler, so its script,
faults (a ``Fault.status(529)`` request ends ``errored``) and checks apply as to a live one.

``expire = True`` makes the next batches end with every request ``expired``; ``fail = True``
refuses the next creation with a 400 ``invalid_request_error``; ``polls_before_done`` is how
many retrievals see a batch in progress.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from promptimus.testing.fake_anthropic_script import anthropic_error
from promptimus.testing.http import HttpConnection, HttpRequest

__all__ = ["AnthropicBatches"]

Answer = Callable[[dict[str, Any]], Awaitable[tuple[int, Any]]]

_PREFIX = "/v1/messages/batches"
_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ERROR_TYPES = {400: "invalid_request_error", 404: "not_found_error"}


class AnthropicBatches:
    """The message batches of one fake server (see the module docstring)."""

    def __init__(self, answer: Answer, base_url: Callable[[], str]) -> None:
        self._answer = answer
        self._base_url = base_url
        self.batches: dict[str, dict[str, Any]] = {}
        """Every batch created, by id, as the API shows it."""
        self.polls_before_done = 1
        self.expire = False
        self.fail = False
        self._polls: dict[str, int] = {}
        self._requests: dict[str, list[dict[str, Any]]] = {}
        self._results: dict[str, list[dict[str, Any]]] = {}
        self._ids = itertools.count(1)

    def clear(self) -> None:
        self.batches.clear()
        self._polls.clear()
        self._requests.clear()
        self._results.clear()

    @staticmethod
    def handles(path: str) -> bool:
        return path == _PREFIX or path.startswith(_PREFIX + "/")

    async def serve(self, request: HttpRequest, conn: HttpConnection) -> None:
        parts = request.path.rstrip("/").removeprefix(_PREFIX).strip("/").split("/")
        parts = [part for part in parts if part]
        method = request.method
        try:
            if not parts and method == "POST":
                await _json(conn, self._create(_body(request)))
            elif not parts and method == "GET":
                data = [self._shown(batch) for batch in self.batches.values()]
                first = data[0]["id"] if data else None
                last = data[-1]["id"] if data else None
                page = {"data": data, "has_more": False, "first_id": first, "last_id": last}
                await _json(conn, page)
            elif len(parts) == 1 and method == "GET":
                await _json(conn, await self._retrieve(parts[0]))
            elif len(parts) == 2 and parts[1] == "results" and method == "GET":
                await self._send_results(conn, parts[0])
            elif len(parts) == 2 and parts[1] == "cancel" and method == "POST":
                await _json(conn, self._cancel(parts[0]))
            else:
                raise _Refused(404, f"fake server: no route {method} {request.path}")
        except _Refused as exc:
            kind = _ERROR_TYPES.get(exc.status, "api_error")
            await _send(conn, exc.status, anthropic_error(kind, str(exc)))

    # --- batches ----------------------------------------------------------------------------

    def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            raise _Refused(400, "fake server: requests: a non-empty list is required")
        seen: set[str] = set()
        for index, item in enumerate(requests):
            custom_id = item.get("custom_id") if isinstance(item, dict) else None
            if not isinstance(custom_id, str) or not _CUSTOM_ID.match(custom_id):
                raise _Refused(400, f"fake server: requests.{index}.custom_id is not valid")
            if custom_id in seen:
                raise _Refused(400, f"fake server: custom_id {custom_id!r} is repeated")
            seen.add(custom_id)
            params = item.get("params")
            if not isinstance(params, dict):
                raise _Refused(400, f"fake server: requests.{index}.params must be an object")
            if params.get("stream"):
                raise _Refused(400, f"fake server: requests.{index}.params: stream is not allowed")
        if self.fail:
            raise _Refused(400, "fake server: the batch was refused")
        now = datetime.now(UTC)
        batch_id = f"msgbatch_fake_{next(self._ids)}"
        batch: dict[str, Any] = {
            "id": batch_id,
            "type": "message_batch",
            "processing_status": "in_progress",
            "request_counts": _counts(processing=len(requests)),
            "created_at": now,
            "expires_at": now + timedelta(hours=24),
            "ended_at": None,
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": None,
        }
        self.batches[batch_id] = batch
        self._polls[batch_id] = 0
        self._requests[batch_id] = list(requests)
        return self._shown(batch)

    async def _retrieve(self, batch_id: str) -> dict[str, Any]:
        batch = self._batch(batch_id)
        if batch["processing_status"] == "in_progress":
            self._polls[batch_id] += 1
            if self._polls[batch_id] > self.polls_before_done:
                await self._finish(batch)
        elif batch["processing_status"] == "canceling":
            await self._finish(batch, canceled=True)
        return self._shown(batch)

    def _cancel(self, batch_id: str) -> dict[str, Any]:
        batch = self._batch(batch_id)
        if batch["processing_status"] == "in_progress":
            batch["processing_status"] = "canceling"
            batch["cancel_initiated_at"] = datetime.now(UTC)
        return self._shown(batch)

    async def _finish(self, batch: dict[str, Any], *, canceled: bool = False) -> None:
        results: list[dict[str, Any]] = []
        counts = _counts()
        for item in self._requests.pop(batch["id"], []):
            if canceled or self.expire:
                result: dict[str, Any] = {"type": "canceled" if canceled else "expired"}
            else:
                status, body = await self._answer(item["params"])
                if status == 200 and isinstance(body, dict):
                    result = {"type": "succeeded", "message": body}
                else:
                    error = body if isinstance(body, dict) else anthropic_error(status)
                    result = {"type": "errored", "error": error}
            counts[result["type"]] += 1
            results.append({"custom_id": item["custom_id"], "result": result})
        self._results[batch["id"]] = results
        batch.update(
            processing_status="ended",
            request_counts=counts,
            ended_at=datetime.now(UTC),
            results_url=f"{self._base_url()}{_PREFIX}/{batch['id']}/results",
        )

    async def _send_results(self, conn: HttpConnection, batch_id: str) -> None:
        batch = self._batch(batch_id)
        if batch["processing_status"] != "ended":
            raise _Refused(400, f"fake server: batch {batch_id} has not ended")
        text = "".join(json.dumps(line) + "\n" for line in self._results[batch_id])
        await conn.send(200, text.encode(), content_type="application/binary")

    def _batch(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches.get(batch_id)
        if batch is None:
            raise _Refused(404, f"fake server: no batch {batch_id!r}")
        return batch

    @staticmethod
    def _shown(batch: dict[str, Any]) -> dict[str, Any]:
        return {
            key: value.isoformat().replace("+00:00", "Z") if isinstance(value, datetime) else value
            for key, value in batch.items()
        }


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _counts(processing: int = 0) -> dict[str, int]:
    return {"processing": processing, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        body = json.loads(request.body)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise _Refused(400, "fake server: the request body must be a JSON object")
    return body


async def _json(conn: HttpConnection, data: Any) -> None:
    await _send(conn, 200, data)


async def _send(conn: HttpConnection, status: int, data: Any) -> None:
    await conn.send(status, json.dumps(data).encode(), headers={"request-id": "req_fake"})
