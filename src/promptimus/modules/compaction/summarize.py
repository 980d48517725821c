"""`Summarize`: the oldest turns replaced by one summary message a model writes."""

from __future__ import annotations

from ...argument_checks import positive_int
from ...dto import Message, MessageRole, Usage
from ...errors import EmptyReply, SummaryFailed
from ...prompts.prompt import Prompt
from .step import CompactionStep, StepResult

__all__ = ["DEFAULT_SUMMARY_PROMPT", "SUMMARY_HEADER", "Summarize"]

DEFAULT_SUMMARY_PROMPT = """\
You compact a conversation between a user and an assistant that uses tools, so that it can go \
on without its earlier part. Write a summary of the transcript you are given that keeps \
everything the assistant may need later: every fact, name, number, identifier, date and \
decision the user gave or a tool returned, what was asked and answered, what was tried and \
failed, and what is still open. Keep exact values verbatim. Write plain prose or a short list; \
do not call tools, do not answer the user, do not add anything the transcript does not say."""

SUMMARY_HEADER = "Summary of the earlier conversation:\n"
"""How a summary message begins, before the text the model wrote."""


class Summarize(CompactionStep):
    """Replaces every message before the protected last turns with one user message that
    summarizes them (`Message.summary_of` says how many it stands for). The summary is written
    by `prompt`, a `Prompt` whose text is a trainable `Parameter`, so `fit` can improve it and the
    checkpoint shows it; the request carries the transcript alone, no tools. Each message of
    the transcript is cut to `max_message_chars` characters, so the request stays small.

    A summary that is empty, cut off at its token limit, or a tool call raises `SummaryFailed`
    and replaces nothing."""

    name = "summarize"

    def __init__(self, prompt: str = DEFAULT_SUMMARY_PROMPT, max_message_chars: int = 2000) -> None:
        super().__init__()
        self.prompt = Prompt(prompt)
        self.max_message_chars = positive_int(max_message_chars, "Summarize max_message_chars")

    async def apply(self, messages: list[Message], boundary: int) -> StepResult | None:
        head = messages[:boundary]
        if not head or (len(head) == 1 and head[0].summary_of is not None):
            return None
        transcript = "\n\n".join(self._line(message) for message in head)
        request = Message(role=MessageRole.USER, content=f"Transcript:\n\n{transcript}")
        try:
            reply = await self.prompt.forward([request])
        except EmptyReply as exc:
            raise SummaryFailed(
                f"{self._where()} got an empty summary ({exc}); nothing was replaced. Give the "
                "summary's model more output tokens, or check its prompt."
            ) from exc
        text = reply.content.strip()
        problem = None
        if reply.tool_calls:
            problem = "a tool call instead of a summary"
        elif reply.finish_reason == "length":
            problem = "a summary cut off at its token limit"
        elif not text:
            problem = "an empty summary"
        if problem is not None:
            raise SummaryFailed(
                f"{self._where()} got {problem}; nothing was replaced. Give the summary's model "
                "more output tokens (max_tokens), or shorten what it summarizes (compact more "
                "often with a lower trigger)."
            )
        covered = sum(message.summary_of or 1 for message in head)
        summary = Message(role=MessageRole.USER, content=SUMMARY_HEADER + text, summary_of=covered)
        return StepResult([summary], reply.usage or Usage())

    def _where(self) -> str:
        return f"Summarize ({self.path})"

    def _line(self, message: Message) -> str:
        text = message.content
        if message.summary_of is not None:
            text = text.removeprefix(SUMMARY_HEADER)
        for call in message.tool_calls or ():
            text += f"\n[called {call.function.name}({call.function.arguments})]"
        limit = self.max_message_chars
        if len(text) > limit:
            text = text[:limit] + " [...]"
        role = "earlier summary" if message.summary_of is not None else message.role.value
        return f"{role}: {text}"
