"""A run slot taken by the A2A endpoint for a message, handed to the run that message starts.

The endpoint takes the slot before the request reaches the a2a-sdk handler, so a server at its
limit answers 503 with Retry-After before any task exists. The executor claims it when it starts
the run (the run then releases it when it ends); a message that starts no run (a bad request, a
task already finished, an approval answer that does not parse) leaves it unclaimed, and the
endpoint releases it when the answer is sent.
"""

from __future__ import annotations

from .served_run import RunSlots

__all__ = ["TICKET", "RunTicket"]

TICKET = "promptimus.run_ticket"


class RunTicket:
    __slots__ = ("_claimed", "_slots")

    def __init__(self, slots: RunSlots) -> None:
        slots.take()
        self._slots = slots
        self._claimed = False

    def claim(self) -> bool:
        """Hand the slot to a run (True once); the run releases it."""
        if self._claimed:
            return False
        self._claimed = True
        return True

    def release_unclaimed(self) -> None:
        if not self._claimed:
            self._claimed = True
            self._slots.release()
