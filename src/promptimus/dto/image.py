"""`ImageContent`: an image attached to a message."""

from __future__ import annotations

import base64
from typing import IO

from pydantic import BaseModel, ConfigDict

from .._compat_seam import compat_calls
from ..errors import InvalidArgument


def _read_all(buffer: bytes | bytearray | memoryview | IO[bytes]) -> bytes:
    if isinstance(buffer, bytes | bytearray | memoryview):
        return bytes(buffer)
    read = getattr(buffer, "read", None)
    if read is None:
        raise InvalidArgument(
            f"ImageContent.from_buffer needs bytes or a binary file-like object, got "
            f"{type(buffer).__name__}."
        )
    # the whole image, wherever the stream stands, and the stream is left where it was
    position = buffer.tell() if buffer.seekable() else None
    if position is not None:
        buffer.seek(0)
    try:
        data = read()
    finally:
        if position is not None:
            buffer.seek(position)
    if not isinstance(data, bytes | bytearray):
        raise InvalidArgument(
            "ImageContent.from_buffer read text, not bytes: open the file in binary mode "
            "(open(path, 'rb')) or pass a BytesIO."
        )
    return bytes(data)


class ImageContent(BaseModel):
    """An image attached to a message, as an http(s) URL or a base64 `data:` URL."""

    model_config = ConfigDict(frozen=True)

    url: str
    detail: str | None = None

    @classmethod
    @compat_calls("dto:from_buffer_arguments")
    def from_buffer(
        cls,
        buffer: bytes | bytearray | memoryview | IO[bytes],
        mime_type: str = "image/png",
        detail: str | None = None,
    ) -> ImageContent:
        """A `data:` URL image from `bytes` or a binary file-like object (`BytesIO`, a file
        opened with `"rb"`): `ImageContent.from_buffer(buffer, "image/jpeg")`. The whole stream
        is read from its start and its position is restored."""
        encoded = base64.b64encode(_read_all(buffer)).decode("ascii")
        return cls(url=f"data:{mime_type};base64,{encoded}", detail=detail)
