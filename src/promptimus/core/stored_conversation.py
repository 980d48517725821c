"""A stored conversation as one `Session` sees it: an append-only log of turns in a session store,
and the state it replays to.

The store keeps, per conversation, numbered turns (1, 2, 3, ...: a store never leaves a gap, so
turn n+1 exists only once turn n does). A turn is one unit: the changes every stateful value
(`StoredState`, e.g. a memory) made during one outermost module call, as JSON:

    {"v": 1, "id": "<random>", "changes": [["root.predictor", ["extend", [...messages...]]], ...]}

(`id` makes every turn unique, so a turn read back is known to be the very turn cached.)

This cache holds the state the turns 1..`last_seq` replay to. A turn starts by reading what was
appended since (`refresh`: one read, which also brings the turns other workers appended), works
on copies (`Turn`), and appends its changes when it succeeded (`commit`). So a turn sees every
turn finished before it began, in any process, and never one still in flight; two turns of one
conversation that run at once each see the history without the other, and both are kept, in
the order they were appended.

A conversation erased (deleted, expired) and started anew under the same id numbers its turns
from 1 again, so a turn number alone does not say which conversation the cache holds. The cache
keeps the identity (a digest) of one turn it read from the store, the anchor, and each refresh
reads from the anchor on: if the store's turn of that number is another one, the conversation
the cache holds is gone, and the whole of the new one is read.
"""

from __future__ import annotations

import functools
import hashlib
import json
import secrets
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, Self

from ..errors import SessionStateError, SessionStoreCorrupt

if TYPE_CHECKING:
    from ..protocols.session_store import SessionStore, StoredTurn

FORMAT_VERSION = 1


class StoredState(Protocol):
    """What a value kept in a stored session does: replay changes read from the store (oldest
    first), and give a copy of itself whose changes are handed, as JSON-ready data, to
    `record`."""

    def fork(self, record: Callable[[Any], None]) -> Self: ...

    def replay(self, changes: Sequence[Any]) -> None: ...


class StoredConversation:
    """The cached replay of one conversation's turn log (see the module docstring)."""

    __slots__ = (
        "_keys",
        "anchor_digest",
        "anchor_seq",
        "last_seq",
        "loaded",
        "session_id",
        "store",
        "unclaimed",
        "values",
    )

    def __init__(self, store: SessionStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.loaded = False
        self.last_seq = 0
        # a turn read from the store (its number and digest) that belongs to the conversation
        # cached here: 0 for none
        self.anchor_seq = 0
        self.anchor_digest = b""
        self.values: dict[str, StoredState] = {}
        # changes read for keys no module has asked for yet: replayed when one does
        self.unclaimed: dict[str, list[Any]] = {}
        self._keys: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    def base(self, key: str, owner: Any, factory: Callable[[], Any]) -> StoredState:
        """The replayed state under `key`, created with `factory()` and the changes read for
        it when first asked for."""
        known = self._keys.get(owner)
        if known is None:
            self._keys[owner] = key
        elif known != key:
            raise SessionStateError(
                f"{known} and {key} share one {type(owner).__name__} (shared_memory=), but a "
                "session store keeps each module's conversation under its own path. Give each "
                "module its own memory, or run them in a Session without a store."
            )
        value = self.values.get(key)
        if value is None:
            value = factory()
            self._replay(value, self.unclaimed.pop(key, []), key)  # the whole log at once
            self.values[key] = value
        return value

    def forget(self) -> None:
        """Drop the cache: the next turn reads the whole conversation again."""
        self.loaded = False
        self.last_seq = 0
        self.anchor_seq = 0
        self.anchor_digest = b""
        self.values = {}
        self.unclaimed = {}

    async def refresh(self) -> None:
        """Catch up with the store: read the turns from the anchor on (the anchor itself must
        still be there, the very turn read before: if it is not, the conversation was deleted,
        expired or trimmed past it, and the whole of it is read again)."""
        since = self.anchor_seq if self.loaded else 0
        turns = await self.store.load_turns(self.session_id, since)
        if since:
            if turns and turns[0].seq == since and _digest(turns[0]) == self.anchor_digest:
                self._absorb(turns[1:])
                self._anchor(turns)
                return
            turns = await self.store.load_turns(self.session_id, 0)
        self.forget()
        self.loaded = True
        self._absorb(turns, first=True)
        self._anchor(turns)

    def _anchor(self, turns: list[StoredTurn]) -> None:
        """Anchor on the newest of `turns` (one read, so one conversation) the cache holds."""
        for turn in reversed(turns):
            if turn.seq <= self.last_seq:
                if turn.seq > self.anchor_seq:
                    self.anchor_seq, self.anchor_digest = turn.seq, _digest(turn)
                return

    def _absorb(self, turns: list[StoredTurn], *, first: bool = False) -> None:
        """Apply the turns that directly follow `last_seq` (the rest were applied already by
        a concurrent refresh or commit of this session, or come after a turn not read yet)."""
        for turn in turns:
            if first and not self.last_seq:
                self.last_seq = turn.seq - 1  # older turns may have been trimmed (max_turns)
            if turn.seq <= self.last_seq:
                continue
            if turn.seq != self.last_seq + 1:
                return  # the next refresh reads from last_seq again
            for key, change in self._decode(turn):
                self._apply(key, change)
            self.last_seq = turn.seq

    async def commit(self, turn: Turn) -> None:
        """Append `turn`'s changes as one turn (nothing for a turn that changed nothing)."""
        if not turn.changes:
            return
        payload = json.dumps(
            {"v": FORMAT_VERSION, "id": secrets.token_hex(8), "changes": turn.changes},
            ensure_ascii=True,  # a lone surrogate (a model may send one) cannot be UTF-8
            separators=(",", ":"),
        )
        seq = await self.store.append_turn(self.session_id, payload)
        # applied here without reading it back; the anchor stays on a turn read from the store,
        # so the next refresh still finds out if the conversation was erased meanwhile (and
        # this turn went to a new one)
        if self.loaded and seq == self.last_seq + 1:
            for key, change in turn.changes:
                self._apply(key, change)
            self.last_seq = seq
        elif seq <= self.last_seq:
            self.forget()  # the numbering started again: the conversation was deleted meanwhile

    def _apply(self, key: str, change: Any) -> None:
        value = self.values.get(key)
        if value is None:
            self.unclaimed.setdefault(key, []).append(change)
        else:
            self._replay(value, [change], key)

    def _replay(self, value: StoredState, changes: list[Any], key: str) -> None:
        try:
            value.replay(changes)
        except (ValueError, TypeError, KeyError, IndexError, RecursionError) as exc:
            raise SessionStoreCorrupt(
                f"{self.store!r}: a change to {key} in session {self.session_id!r} cannot be "
                f"replayed ({type(exc).__name__}: {exc}). Delete the conversation "
                "(`await store.delete(id)`) or repair that turn."
            ) from None

    def _decode(self, turn: StoredTurn) -> list[tuple[str, Any]]:
        try:
            data = json.loads(turn.payload)
            if not isinstance(data, dict) or data.get("v") != FORMAT_VERSION:
                raise ValueError(f"not a version {FORMAT_VERSION} turn")
            if not isinstance(data["changes"], list):
                raise ValueError("its changes are not a list")
            if not all(isinstance(c, list) and len(c) == 2 for c in data["changes"]):
                raise ValueError("a change that is not a [key, change] pair")
            changes = [(key, change) for key, change in data["changes"]]
            if not all(isinstance(key, str) for key, _ in changes):
                raise ValueError("a change without a text key")
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            raise SessionStoreCorrupt(
                f"{self.store!r}: turn {turn.seq} of session {self.session_id!r} cannot be "
                f"read ({type(exc).__name__}: {exc}). Delete the conversation "
                "(`await store.delete(id)`) or repair that turn."
            ) from None
        return changes


def _digest(turn: StoredTurn) -> bytes:
    """What tells a stored turn from another of the same number."""
    return hashlib.blake2b(turn.payload.encode("utf-8", "surrogatepass"), digest_size=16).digest()


# Per thread (a loop runs in one thread, and this cache is not locked): the conversations read
# lately, per store, so each request's new Session finds what earlier ones read.
CACHED_CONVERSATIONS = 1024
_cache = threading.local()


def stored_conversation(store: SessionStore, session_id: str) -> StoredConversation:
    """This thread's `StoredConversation` of `session_id` in `store` (the least recently used
    of more than `CACHED_CONVERSATIONS` per store is dropped: read again when next used)."""
    stores: weakref.WeakKeyDictionary[Any, OrderedDict[str, StoredConversation]] | None
    stores = getattr(_cache, "stores", None)
    if stores is None:
        stores = _cache.stores = weakref.WeakKeyDictionary()
    recent = stores.get(store)
    if recent is None:
        recent = stores[store] = OrderedDict()
    conversation = recent.get(session_id)
    if conversation is None:
        conversation = recent[session_id] = StoredConversation(store, session_id)
        if len(recent) > CACHED_CONVERSATIONS:
            recent.popitem(last=False)
    else:
        recent.move_to_end(session_id)
    return conversation


class Turn:
    """One turn in progress: its own copy of each state it touched, and their changes."""

    __slots__ = ("changes", "conversation", "values")

    def __init__(self, conversation: StoredConversation) -> None:
        self.conversation = conversation
        self.values: dict[str, StoredState] = {}
        self.changes: list[tuple[str, Any]] = []

    def belongs_to(self, conversation: StoredConversation | None) -> bool:
        """Whether this is a turn of `conversation` (the cache may hold a newer object for it)."""
        return (
            conversation is not None
            and conversation.store is self.conversation.store
            and conversation.session_id == self.conversation.session_id
        )

    def value(self, key: str, owner: Any, factory: Callable[[], Any]) -> StoredState:
        value = self.values.get(key)
        if value is None:
            base = self.conversation.base(key, owner, factory)
            value = self.values[key] = base.fork(functools.partial(self._record, key))
        return value

    def _record(self, key: str, change: Any) -> None:
        self.changes.append((key, change))
