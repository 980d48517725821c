"""Plain data: what is exchanged with providers (messages, tool requests, images, usage, stream
deltas, search hits) and what an agent run records (run, step and tool-call records).

One concept per submodule (`dto.message`, `dto.image`, `dto.document`, `dto.thinking`,
`dto.hosted`, `dto.tool`, `dto.usage`, `dto.delta`, `dto.search_hit`, `dto.run_record`); every
name is importable from `promptimus.dto` itself.
"""

from .delta import MessageDelta, ToolCallDelta
from .document import DocumentContent
from .hosted import HostedToolCall
from .image import ImageContent
from .message import History, Message, MessageRole
from .run_record import RunRecord, StepRecord, ToolCallRecord
from .search_hit import Metadata, SearchHit
from .thinking import ThinkingBlock
from .tool import ToolCalls, ToolFunction, ToolRequest
from .usage import Usage

__all__ = [
    "DocumentContent",
    "History",
    "HostedToolCall",
    "ImageContent",
    "Message",
    "MessageDelta",
    "MessageRole",
    "Metadata",
    "RunRecord",
    "SearchHit",
    "StepRecord",
    "ThinkingBlock",
    "ToolCallDelta",
    "ToolCallRecord",
    "ToolCalls",
    "ToolFunction",
    "ToolRequest",
    "Usage",
]
