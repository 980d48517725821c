"""Plain data exchanged with providers: messages, tool requests, images, usage, stream deltas,
search hits.

One concept per submodule (`dto.message`, `dto.image`, `dto.tool`, `dto.usage`, `dto.delta`,
`dto.search_hit`); every name is importable from `promptimus.dto` itself.
"""

from .delta import MessageDelta, ToolCallDelta
from .image import ImageContent
from .message import History, Message, MessageRole
from .search_hit import Metadata, SearchHit
from .tool import ToolCalls, ToolFunction, ToolRequest
from .usage import Usage

__all__ = [
    "History",
    "ImageContent",
    "Message",
    "MessageDelta",
    "MessageRole",
    "Metadata",
    "SearchHit",
    "ToolCallDelta",
    "ToolCalls",
    "ToolFunction",
    "ToolRequest",
    "Usage",
]
