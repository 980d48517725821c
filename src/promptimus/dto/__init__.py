"""Plain data exchanged with providers: messages, tool requests, images, usage, stream deltas.

One concept per submodule (`dto.message`, `dto.image`, `dto.tool`, `dto.usage`, `dto.delta`);
every name is importable from `promptimus.dto` itself.
"""

from .delta import MessageDelta, ToolCallDelta
from .image import ImageContent
from .message import History, Message, MessageRole
from .tool import ToolCalls, ToolFunction, ToolRequest
from .usage import Usage

__all__ = [
    "History",
    "ImageContent",
    "Message",
    "MessageDelta",
    "MessageRole",
    "ToolCallDelta",
    "ToolCalls",
    "ToolFunction",
    "ToolRequest",
    "Usage",
]
