"""`DocumentContent`: a document (a PDF) attached to a message."""

from __future__ import annotations

import base64
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from ..errors import InvalidArgument


class DocumentContent(BaseModel):
    """A document attached to a message: base64 `data` of `media_type` (a PDF by default) and
    an optional `name`. Providers that read documents get it natively (an Anthropic `document`
    block, Gemini inline data); the others get a placeholder that describes it."""

    model_config = ConfigDict(frozen=True)

    data: str
    media_type: str = "application/pdf"
    name: str | None = None

    @classmethod
    def from_bytes(
        cls, data: bytes, media_type: str = "application/pdf", name: str | None = None
    ) -> DocumentContent:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidArgument(
                f"DocumentContent.from_bytes needs bytes, got {type(data).__name__}: read the "
                "file in binary mode, or use DocumentContent.from_path(path)."
            )
        encoded = base64.b64encode(bytes(data)).decode("ascii")
        return cls(data=encoded, media_type=media_type, name=name)

    @classmethod
    def from_path(cls, path: str | Path, media_type: str = "application/pdf") -> DocumentContent:
        """The file at `path`, named by its file name."""
        file = Path(path)
        return cls.from_bytes(file.read_bytes(), media_type, file.name)

    def raw(self) -> bytes:
        """The document's bytes."""
        return base64.b64decode(self.data)
