"""OpenAI's Batch API on the fake server: ``/v1/files`` and ``/v1/batches``.

What the public API reference describes, small: upload a JSONL file (``POST /v1/files``,
multipart, ``purpose=batch``), create a batch over it (``POST /v1/batches`` with
``input_file_id``, ``endpoint="/v1/chat/completions"``, ``completion_window="24h"``), poll it
(``GET /v1/batches/{id}``: ``validating`` → ``in_progress`` → ``completed``), read the results
(``GET /v1/files/{output_file_id}/content``: one line per request that got a 200, the others in
the ``error_file_id``), cancel it (``POST /v1/batches/{id}/cancel``) or list them
(``GET /v1/batches``). Every line is answered by the server's own chat completions handler,
so the chat script, its faults (a ``Fault.status(500)`` line fails alone) and the server-wide
checks apply as to a live request.

A test can make the next batches end badly: ``expire = True`` ends them ``expired`` (every
request in the error file with ``batch_expired``), ``fail = True`` ends them ``failed`` with a
validation error, as the API does for a malformed input file (which also fails it).
``polls_before_done`` is how many retrievals see the batch unfinished.
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from promptimus.testing import payloads
from promptimus.testing.http import HttpConnection, HttpRequest

__all__ = ["OpenAIBatches"]

Answer = Callable[[dict[str, Any]], Awaitable[tuple[int, Any]]]

_ENDPOINTS = frozenset({"/v1/chat/completions"})


@dataclass
class _File:
    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int = field(default_factory=lambda: int(time.time()))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.content),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
        }


class OpenAIBatches:
    """The files and batches of one fake server (see the module docstring)."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self.files: dict[str, _File] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        """Every batch created, by id, as the API shows it."""
        self.polls_before_done = 1
        self.expire = False
        self.fail = False
        self._polls: dict[str, int] = {}
        self._lines: dict[str, list[dict[str, Any]]] = {}
        self._ids = itertools.count(1)

    def clear(self) -> None:
        self.files.clear()
        self.batches.clear()
        self._polls.clear()
        self._lines.clear()

    @staticmethod
    def handles(path: str) -> bool:
        return path == "/v1/files" or path.startswith(("/v1/files/", "/v1/batches"))

    async def serve(self, request: HttpRequest, conn: HttpConnection) -> None:
        parts = request.path.rstrip("/").split("/")[2:]  # after "/v1"
        method = request.method
        try:
            if parts == ["files"] and method == "POST":
                await _json(conn, self._upload(request))
            elif len(parts) == 2 and parts[0] == "files" and method == "GET":
                await _json(conn, self._file(parts[1]).to_json())
            elif len(parts) == 3 and parts[::2] == ["files", "content"] and method == "GET":
                await conn.send(
                    200, self._file(parts[1]).content, content_type="application/octet-stream"
                )
            elif parts == ["batches"] and method == "POST":
                await _json(conn, await self._create(_body(request)))
            elif parts == ["batches"] and method == "GET":
                data = list(self.batches.values())
                await _json(conn, _page(data))
            elif len(parts) == 2 and parts[0] == "batches" and method == "GET":
                await _json(conn, await self._retrieve(parts[1]))
            elif len(parts) == 3 and parts[::2] == ["batches", "cancel"] and method == "POST":
                await _json(conn, self._cancel(parts[1]))
            else:
                await _error(conn, 404, f"fake server: no route {method} {request.path}")
        except _Refused as exc:
            await _error(conn, exc.status, str(exc))

    # --- files ------------------------------------------------------------------------------

    def _upload(self, request: HttpRequest) -> dict[str, Any]:
        fields = _multipart(request)
        purpose = fields.get("purpose", (None, b""))[1].decode()
        if "file" not in fields:
            raise _Refused(400, "fake server: the upload has no 'file' part")
        if purpose != "batch":
            raise _Refused(400, f"fake server: purpose {purpose!r} is not 'batch'")
        filename, content = fields["file"]
        file = _File(f"file-fake-{next(self._ids)}", filename or "upload.jsonl", purpose, content)
        self.files[file.id] = file
        return file.to_json()

    def _file(self, file_id: str) -> _File:
        file = self.files.get(file_id)
        if file is None:
            raise _Refused(404, f"fake server: no file {file_id!r}")
        return file

    def _store(self, name: str, lines: list[dict[str, Any]]) -> str:
        text = "".join(json.dumps(line) + "\n" for line in lines).encode()
        file = _File(f"file-fake-{next(self._ids)}", name, "batch_output", text)
        self.files[file.id] = file
        return file.id

    # --- batches ----------------------------------------------------------------------------

    async def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        endpoint = body.get("endpoint")
        if endpoint not in _ENDPOINTS:
            raise _Refused(400, f"fake server: endpoint {endpoint!r} is not /v1/chat/completions")
        if body.get("completion_window") != "24h":
            raise _Refused(400, "fake server: completion_window must be '24h'")
        file = self._file(str(body.get("input_file_id")))
        now = int(time.time())
        batch: dict[str, Any] = {
            "id": f"batch_fake_{next(self._ids)}",
            "object": "batch",
            "endpoint": endpoint,
            "errors": None,
            "input_file_id": file.id,
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "expires_at": now + 86400,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
            "metadata": body.get("metadata"),
        }
        self.batches[batch["id"]] = batch
        self._polls[batch["id"]] = 0
        problems, lines = _read_lines(file.content, str(endpoint))
        if self.fail and not problems:
            problems = [{"code": "invalid_request", "message": "fake server: batch failed"}]
        if problems:
            batch.update(
                status="failed", failed_at=now, errors={"object": "list", "data": problems}
            )
            return dict(batch)
        batch["request_counts"]["total"] = len(lines)
        self._lines[batch["id"]] = lines
        return dict(batch)

    async def _retrieve(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches.get(batch_id)
        if batch is None:
            raise _Refused(404, f"fake server: no batch {batch_id!r}")
        if batch["status"] in ("validating", "in_progress"):
            self._polls[batch_id] += 1
            if self._polls[batch_id] > self.polls_before_done:
                await self._finish(batch)
            else:
                batch.update(status="in_progress", in_progress_at=batch["created_at"])
        elif batch["status"] == "cancelling":
            await self._finish(batch, cancelled=True)
        return dict(batch)

    def _cancel(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches.get(batch_id)
        if batch is None:
            raise _Refused(404, f"fake server: no batch {batch_id!r}")
        if batch["status"] in ("validating", "in_progress"):
            batch.update(status="cancelling", cancelling_at=int(time.time()))
        return dict(batch)

    async def _finish(self, batch: dict[str, Any], *, cancelled: bool = False) -> None:
        """Answer every line (or none, when it expired or was cancelled) and end the batch."""
        lines = self._lines.pop(batch["id"], [])
        now = int(time.time())
        outputs: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for line in lines:
            request_id = f"batch_req_fake_{next(self._ids)}"
            if cancelled or self.expire:
                code = "batch_cancelled" if cancelled else "batch_expired"
                reason = "cancelled" if cancelled else "expired"
                error = {
                    "code": code,
                    "message": f"This request could not be executed before the batch was {reason}.",
                }
                errors.append(
                    {
                        "id": request_id,
                        "custom_id": line["custom_id"],
                        "response": None,
                        "error": error,
                    }
                )
                continue
            status, body = await self._answer(line["body"])
            if body is None:
                body = payloads.error_body(status)
            entry = {
                "id": request_id,
                "custom_id": line["custom_id"],
                "response": {"status_code": status, "request_id": request_id, "body": body},
                "error": None,
            }
            (outputs if status == 200 else errors).append(entry)
        counts = {"total": len(lines), "completed": len(outputs), "failed": len(errors)}
        batch["request_counts"] = counts
        if outputs:
            batch["output_file_id"] = self._store(f"{batch['id']}_output.jsonl", outputs)
        if errors:
            batch["error_file_id"] = self._store(f"{batch['id']}_error.jsonl", errors)
        if cancelled:
            batch.update(status="cancelled", cancelled_at=now)
        elif self.expire:
            batch.update(status="expired", expired_at=now)
        else:
            batch.update(status="completed", finalizing_at=now, completed_at=now)


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _read_lines(content: bytes, endpoint: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The input file's requests, or the problems that fail its batch (as the API words them)."""
    problems: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    seen: set[str] = set()
    models: set[str] = set()
    for number, raw in enumerate(content.decode("utf-8", "replace").splitlines(), start=1):
        try:
            line = json.loads(raw)
        except ValueError:
            line = None
        if not isinstance(line, dict) or not isinstance(line.get("body"), dict):
            problems.append(_problem("invalid_json_line", "not a request object", number))
            continue
        custom_id = line.get("custom_id")
        if not isinstance(custom_id, str) or custom_id in seen:
            problems.append(
                _problem("duplicate_custom_id", "custom_id missing or repeated", number)
            )
            continue
        if line.get("method") != "POST" or line.get("url") != endpoint:
            problems.append(_problem("mismatched_endpoint", f"url must be {endpoint}", number))
            continue
        if line["body"].get("stream"):
            problems.append(_problem("invalid_request", "stream is not allowed", number))
            continue
        seen.add(custom_id)
        models.add(str(line["body"].get("model")))
        lines.append(line)
    if len(models) > 1:
        problems.append(_problem("mismatched_model", "every request must use one model", None))
    if not lines and not problems:
        problems.append(_problem("empty_file", "the input file has no requests", None))
    return problems, lines


def _problem(code: str, message: str, line: int | None) -> dict[str, Any]:
    return {"code": code, "message": f"fake server: {message}", "param": None, "line": line}


def _multipart(request: HttpRequest) -> dict[str, tuple[str | None, bytes]]:
    """The parts of a ``multipart/form-data`` body: name → (filename, content)."""
    head = f"Content-Type: {request.headers.get('content-type', '')}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + request.body)
    fields: dict[str, tuple[str | None, bytes]] = {}
    if not message.is_multipart():
        raise _Refused(400, "fake server: an upload must be multipart/form-data")
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = (part.get_filename(), payload)
    return fields


def _body(request: HttpRequest) -> dict[str, Any]:
    try:
        body = json.loads(request.body)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise _Refused(400, "fake server: the request body must be a JSON object")
    return body


def _page(data: list[dict[str, Any]]) -> dict[str, Any]:
    first = data[0]["id"] if data else None
    last = data[-1]["id"] if data else None
    return {"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": False}


async def _json(conn: HttpConnection, data: Any) -> None:
    await conn.send(200, json.dumps(data).encode())


async def _error(conn: HttpConnection, status: int, message: str) -> None:
    await conn.send(status, json.dumps(payloads.error_body(status, message)).encode())
