"""Conversation memory: `Memory` (a bounded message log), `MemoryModule` (memory + prompt + LLM)
and `ResetMemoryContext` (clear every memory in one or more trees)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Self

from ..argument_checks import non_negative_int
from ..core import Module, current_session
from ..dto import History, Message, MessageRole
from ..errors import EmptyMemory, InvalidArgument
from ..prompts.base_prompt import BasePrompt
from ..prompts.prompt import Prompt

if TYPE_CHECKING:
    from .compaction import Compactor


def _bounded(messages: Iterable[Message], size: int) -> deque[Message]:
    window: deque[Message] = deque(messages)
    while len(window) > size:
        window.popleft()
    # A tool result whose request was evicted would be rejected by the API: drop it too.
    while window and window[0].role == MessageRole.TOOL:
        window.popleft()
    return window


class Memory:
    """The last `size` messages of a conversation. Evicting an assistant tool-call message also
    evicts the tool results that answered it."""

    def __init__(self, size: int = 10) -> None:
        self._size = non_negative_int(size, "Memory size (how many messages it keeps)")
        self.data: deque[Message] = deque()

    @property
    def size(self) -> int:
        return self._size

    @size.setter
    def size(self, size: int) -> None:
        self._size = non_negative_int(size, "Memory size (how many messages it keeps)")
        self.data = _bounded(self.data, size)

    def add_message(self, message: Message) -> Self:
        return self.extend((message,))

    def extend(self, history: Iterable[Message]) -> Self:
        self.data.extend(history)
        if len(self.data) > self._size or (self.data and self.data[0].role == MessageRole.TOOL):
            self.data = _bounded(self.data, self._size)
        return self

    def preview(self, new: Iterable[Message]) -> list[Message]:
        """The request for a turn: as much remembered history as fits, then all of `new` (a
        turn's own messages are never cut, even when they alone exceed the size)."""
        new = list(new)
        room = max(self._size - len(new), 0)
        old = list(self.data)[-room:] if room else []
        return [*_bounded(old, room), *new]

    def replace_last(self, message: Message) -> Self:
        if not self.data:
            raise EmptyMemory(
                "replace_last() on an empty memory: there is no message to replace; "
                "use add_message() instead."
            )
        self.data[-1] = message
        return self

    def drop_last(self, n: int = 1) -> Self:
        for _ in range(min(n, len(self.data))):
            self.data.pop()
        return self

    def reset(self) -> None:
        self.data.clear()

    def as_list(self) -> list[Message]:
        return list(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self) -> Iterator[Message]:
        return iter(list(self.data))

    def __enter__(self) -> Self:
        self.reset()
        return self

    def __exit__(self, *exc: object) -> None:
        self.reset()

    def __repr__(self) -> str:
        return f"Memory(size={self._size}, messages={len(self.data)})"

    # --- kept in a session store (see `promptimus.core.stored_conversation`) ---------------

    def fork(self, record: Callable[[Any], None]) -> RecordedMemory:
        """A copy whose every change is also handed to `record`, as JSON-ready data."""
        copy = RecordedMemory(self._size, record)
        copy.data = deque(self.data)
        return copy

    def replay(self, changes: Sequence[Any]) -> None:
        """Apply changes a `RecordedMemory` recorded, oldest first. Only what the window can
        still hold is decoded: appends that fill it make everything before them irrelevant."""
        for change in changes[self._replay_start(changes) :]:
            match change:
                case ["extend", list(messages)]:
                    if len(messages) > self._size:  # the rest would be evicted at once
                        messages = messages[len(messages) - self._size :]
                    self.extend(History.validate_python(messages))
                case ["reset"]:
                    self.reset()
                case ["drop_last", int(n)]:
                    self.drop_last(n)
                case ["replace_last", dict(message)]:
                    if self.data:  # the message it replaced may be gone from a trimmed log
                        self.replace_last(Message.model_validate(message))
                case _:
                    raise ValueError(f"not a memory change: {str(change)[:80]!r}")

    def _replay_start(self, changes: Sequence[Any]) -> int:
        """Where replaying `changes` may start and still end in the same window: at the last
        reset, or where the appends after it reach `size` messages (the window of a run of
        appends is the last `size` messages, less the tool results leading it, whatever it
        held before)."""
        appended = 0
        for index in range(len(changes) - 1, -1, -1):
            match changes[index]:
                case ["extend", list(messages)]:
                    appended += len(messages)
                    if appended >= self._size:
                        return index
                case ["reset"]:
                    return index
                case _:
                    return 0  # a drop or replace depends on what came before: all of it
        return 0


class RecordedMemory(Memory):
    """A memory's copy inside one turn of a stored conversation: each change is applied and
    recorded, so the turn can write it to the store once it succeeds. (Changes made by
    assigning to `.data` directly are not recorded.)"""

    def __init__(self, size: int, record: Callable[[Any], None]) -> None:
        super().__init__(size)
        self._record = record

    def extend(self, history: Iterable[Message]) -> Self:
        history = list(history)
        if history:
            dumped = History.dump_python(history, mode="json", exclude_defaults=True)
            self._record(["extend", dumped])
        return super().extend(history)

    def replace_last(self, message: Message) -> Self:
        if self.data:
            self._record(["replace_last", message.model_dump(mode="json", exclude_defaults=True)])
        return super().replace_last(message)

    def drop_last(self, n: int = 1) -> Self:
        if n > 0 and self.data:
            self._record(["drop_last", n])
        return super().drop_last(n)

    def reset(self) -> None:
        self._record(["reset"])
        super().reset()


def replace_history(memory: Memory, old: list[Message], new: list[Message]) -> bool:
    """Put `new` (a compacted history) in place of `old` at the end of `memory`, as one reset
    and one append (a stored conversation writes them as one turn). False, and nothing changed,
    when `memory` no longer ends with `old` (a concurrent turn added to it meanwhile)."""
    data = list(memory.data)
    if len(data) < len(old) or data[len(data) - len(old) :] != old:
        return False
    kept = data[: len(data) - len(old)]
    memory.reset()
    memory.extend([*kept, *new])
    return True


def as_messages(history: list[Message] | Message | str, role: MessageRole | str) -> list[Message]:
    if isinstance(history, str):
        return [Message(role=MessageRole(role), content=history)]
    if isinstance(history, Message):
        return [history]
    return list(history)


class MemoryModule(Module):
    """A prompt with a conversation memory.

    Each `forward` sends memory + new messages and, once the reply arrives, appends the new
    messages and the reply together. Two calls running at once therefore never see or interleave
    each other's half-finished exchanges, and a failed call leaves the memory as it was.

    The memory belongs to the current `Session` (see `promptimus.Session`); outside any session
    the module's own memory is used.

    With a `compactor` (a `promptimus.modules.Compactor`), a conversation over its trigger is
    compacted before the request, and the memory keeps the compacted history once the reply
    arrives (an agent whose predictor has one compacts before each step of its runs).
    """

    compactor: Compactor | None = None

    def __init__(
        self,
        memory_size: int = 10,
        shared_memory: Memory | None = None,
        system_prompt: str | None = None,
        new_message_role: MessageRole | str = MessageRole.USER,
        compactor: Compactor | None = None,
    ) -> None:
        super().__init__()
        size = non_negative_int(memory_size, "MemoryModule memory_size (messages it keeps)")
        try:
            self.new_message_role = MessageRole(new_message_role)
        except ValueError:
            roles = ", ".join(repr(r.value) for r in MessageRole)
            raise InvalidArgument(
                f"MemoryModule new_message_role must be one of {roles}, got {new_message_role!r}."
            ) from None
        # a Prompt; an agent with a callable prompt puts a DynamicPrompt here
        self.prompt: BasePrompt = Prompt(system_prompt)
        self._memory = shared_memory if shared_memory is not None else Memory(size)
        if compactor is not None:  # registered only when given: checkpoint keys stay as they were
            self.compactor = compactor

    @property
    def memory(self) -> Memory:
        session = current_session()
        if session is None:
            return self._memory
        base = self._memory  # sessions key on the Memory, so shared memories stay shared
        if session.store is None:
            return session.state(base, lambda: Memory(base.size))
        # a store keeps it under the module's path (see `promptimus.sessions`)
        return session.state(base, lambda: Memory(base.size), key=self.path)

    @memory.setter
    def memory(self, memory: Memory) -> None:
        self._memory = memory

    async def forward(self, history: list[Message] | Message | str, **kwargs: Any) -> Message:
        new = as_messages(history, self.new_message_role)
        memory = self.memory
        sent = memory.preview(new)
        old = sent[: len(sent) - len(new)]
        compacted: list[Message] | None = None
        compactor = self.compactor
        if compactor is not None and compactor.needed(sent, self.prompt.llm):
            done = await compactor(sent, self.prompt.llm, len(old))
            if done is not None:
                sent = done.messages
                compacted = sent[: len(sent) - len(new)]
        response = await self.prompt.forward(sent, **kwargs)
        if compacted is not None:
            replace_history(memory, old, compacted)
        memory.extend((*new, response))
        return response

    def add_message(self, message: Message) -> Self:
        self.memory.add_message(message)
        return self

    def extend(self, history: list[Message]) -> Self:
        self.memory.extend(history)
        return self

    def drop_last(self, n: int = 1) -> Self:
        self.memory.drop_last(n)
        return self

    def replace_last(self, message: Message) -> Self:
        self.memory.replace_last(message)
        return self

    def extra_repr(self) -> str:
        return f"memory_size={self._memory.size}"


class ResetMemoryContext:
    """Clears every `MemoryModule` in the given trees on enter and on exit (also on errors).

    The modules are found once, breadth first, when the context is created (diamonds counted
    once). Inside a `Session`, the session's memories are the ones cleared.
    """

    def __init__(self, *modules: Module) -> None:
        if not modules:
            raise InvalidArgument("ResetMemoryContext needs at least one module to reset.")
        self._memory_modules = self._collect(modules)

    @staticmethod
    def _collect(roots: Iterable[Module]) -> list[MemoryModule]:
        found: list[MemoryModule] = []
        seen: set[int] = set()
        queue: deque[Module] = deque(roots)
        while queue:
            module = queue.popleft()
            if id(module) in seen:
                continue
            seen.add(id(module))
            if isinstance(module, MemoryModule):
                found.append(module)
            queue.extend(module.children())
        return found

    @property
    def memory_modules(self) -> list[MemoryModule]:
        return list(self._memory_modules)

    def reset(self) -> None:
        for module in self._memory_modules:
            module.memory.reset()

    def __enter__(self) -> Self:
        self.reset()
        return self

    def __exit__(self, *exc: object) -> None:
        self.reset()

    async def __aenter__(self) -> Self:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()
