"""A memory rebuilt from a stored conversation's changes is the memory that made them.

`Memory.replay` skips the changes a window of `size` messages can no longer show; these
properties check that shortcut against the plain, one change at a time, replay.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from promptimus.dto import Message, MessageRole
from promptimus.modules.memory import Memory

ROLES = [MessageRole.USER, MessageRole.ASSISTANT, MessageRole.TOOL]


def message(role: MessageRole, n: int) -> Message:
    return Message(role=role, content=f"{role.value} {n}")


messages = st.lists(
    st.builds(message, st.sampled_from(ROLES), st.integers(0, 99)), min_size=1, max_size=8
)
changes = st.one_of(
    st.builds(lambda ms: ("extend", ms), messages),
    st.just(("reset",)),
    st.builds(lambda n: ("drop_last", n), st.integers(1, 3)),
    st.builds(lambda m: ("replace_last", m), messages.map(lambda ms: ms[0])),
)


def recorded(size: int, script: list[tuple[Any, ...]]) -> tuple[Memory, list[Any]]:
    """Run `script` on a recorded copy of an empty memory: what it ends as, what it recorded."""
    log: list[Any] = []
    memory = Memory(size).fork(log.append)
    for op, *args in script:
        if op == "replace_last" and not memory.data:
            continue  # replace_last on an empty memory raises before recording anything
        getattr(memory, op)(*args)
    return memory, log


@settings(max_examples=300, deadline=None)
@given(size=st.integers(0, 12), script=st.lists(changes, max_size=25))
def test_replaying_all_changes_at_once_rebuilds_the_memory(
    size: int, script: list[tuple[Any, ...]]
) -> None:
    original, log = recorded(size, script)
    at_once = Memory(size)
    at_once.replay(log)
    one_by_one = Memory(size)
    for change in log:
        one_by_one.replay([change])
    assert at_once.as_list() == original.as_list()
    assert one_by_one.as_list() == original.as_list()


def test_a_long_log_of_appends_decodes_only_the_window() -> None:
    log: list[Any] = [["extend", [{"role": "user", "content": "broken"}, {"nonsense": 1}]]]
    log += [["extend", [{"role": "user", "content": f"u{n}"}]] for n in range(5)]
    memory = Memory(3)
    memory.replay(log)  # the malformed first change is past the window: never decoded
    assert [m.content for m in memory.as_list()] == ["u2", "u3", "u4"]
