"""How many tokens a conversation takes: the provider's own count of the last request it
answered, plus an estimate of what was added since.

The estimate reads four characters as a token (what English text averages on the common
tokenizers, a little high for most: a trigger it feeds fires early rather than late), plus a
few tokens a message for its role and framing and a fixed cost for each image and document.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...dto import Message, MessageRole

__all__ = ["conversation_tokens", "estimate_tokens"]

_CHARS_PER_TOKEN = 4
_PER_MESSAGE = 4
_PER_ATTACHMENT = 800


def _message_tokens(message: Message) -> int:
    chars = len(message.content)
    for call in message.tool_calls or ():
        chars += len(call.function.name) + len(call.function.arguments)
    for block in message.thinking or ():
        chars += len(block.text) + len(block.redacted or "") + len(block.signature or "")
    attachments = len(message.images) + len(message.documents)
    return _PER_MESSAGE + -(-chars // _CHARS_PER_TOKEN) + attachments * _PER_ATTACHMENT


def estimate_tokens(messages: Sequence[Message]) -> int:
    """The estimated size of `messages` in tokens (see the module docstring)."""
    return sum(_message_tokens(message) for message in messages)


def conversation_tokens(messages: Sequence[Message]) -> int:
    """The size of `messages`: the usage the provider reported for the latest reply among them
    (its prompt and its completion, so everything up to and including that reply), plus an
    estimate of the messages after it; all estimated when no reply carries usage."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        usage = message.usage
        if message.role != MessageRole.ASSISTANT or usage is None:
            continue
        if usage.cache_hit or usage.prompt_tokens <= 0:
            break  # a cached reply counts nothing: estimate instead
        return (
            usage.prompt_tokens + usage.completion_tokens + estimate_tokens(messages[index + 1 :])
        )
    return estimate_tokens(messages)
