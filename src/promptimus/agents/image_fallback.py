"""Images for a model that takes none: each image described in text instead.

Tool results may carry images (an MCP server's image content, a tool returning a `Message` with
`images`); agents show them to the model in user messages. A model without vision gets, in
their place, a line that names each image (`[image 1 (image/png): not shown, this model takes
no images]`) after the message's text, and the message's text keeps its own placeholders.
Whether a provider takes images is `capabilities(llm).images` (see
`promptimus.llms.capabilities`): set it to False for a text-only model, or let the agent learn
it: a request with images that the server rejects is sent once more with the images described,
and the provider remembers, so later steps and runs describe them from the start.
"""

from __future__ import annotations

import logging
from typing import Any

from ..dto import Message
from ..errors import ContextWindowExceeded, RequestRejected
from ..llms.capabilities import capabilities

__all__ = ["described_images", "refused_images", "takes_images"]

log = logging.getLogger("promptimus.agents")

_NOT_ABOUT_IMAGES = frozenset({401, 403, 404, 413, 429})


def takes_images(llm: Any) -> bool:
    """False once the provider is known to take no images."""
    return capabilities(llm).images is not False


def _kind(url: str) -> str:
    if url.startswith("data:"):
        return url[5:].split(";", 1)[0].split(",", 1)[0] or "image"
    return url.rsplit("/", 1)[-1][:60] or "image"


def described_images(messages: list[Message]) -> list[Message]:
    """`messages` with every image replaced by a line of text that names it."""
    out = []
    for message in messages:
        if not message.images:
            out.append(message)
            continue
        lines = [
            f"[image {number} ({_kind(image.url)}): not shown, this model takes no images]"
            for number, image in enumerate(message.images, 1)
        ]
        text = "\n".join([message.content, *lines]) if message.content else "\n".join(lines)
        out.append(message.model_copy(update={"content": text, "images": None}))
    return out


def refused_images(llm: Any, sent: list[Message], error: RequestRejected) -> bool:
    """After `error` rejected the request `sent`: True when the request carried images and
    the rejection may be about them. The provider then takes none from now on (logged once),
    and the caller sends the request again with the images described."""
    if not any(message.images for message in sent) or not takes_images(llm):
        return False
    if isinstance(error, ContextWindowExceeded) or error.status in _NOT_ABOUT_IMAGES:
        return False
    fields = error.rejected_fields
    if fields and not any(field.partition(".")[0] == "messages" for field in fields):
        return False
    capabilities(llm).images = False
    log.warning(
        "%r rejected a request with images (%s); images are described in text for this "
        "provider from now on",
        llm,
        error.server_message or error,
    )
    return True
