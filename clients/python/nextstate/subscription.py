"""Event subscriptions (``events.subscribe``) that survive what would end them.

A :class:`Subscription` delivers recorded events in seq order, each once:
the stored ones after ``after_seq`` first, then live ones. When the server
ends it (``events.ended``: a slow consumer), when the connection drops, or
when its reader falls behind the client's ``event_buffer``, it subscribes
again from the last seq it queued, as the Go client does::

    sub = await client.subscribe(run="demo", types=["step", "reward"], after_seq=0)
    async for ev in sub:
        print(ev["seq"], ev["type"], ev.get("reward"))
    # or: ev = await sub.next(timeout=5)
    await sub.close()

Iteration ends after :meth:`Subscription.close` or the client's close; it
raises when the subscription cannot go on (the client gave up reconnecting,
or the server refused to subscribe again).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Optional

from ._resubscribe import _Resubscriber

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger("nextstate")


class Subscription(_Resubscriber):
    """A resubscribing stream of events; see the module doc. Make one with
    :meth:`nextstate.client.Client.subscribe`."""

    def __init__(self, client: "Client", params: dict[str, Any]) -> None:
        super().__init__(client)
        self._params = params
        self._last_seq = int(params.get("after_seq", 0))  # the highest seq queued
        self._floor: Optional[int] = None  # resume point when nothing was queued after a live-only start

    @property
    def id(self) -> Optional[str]:
        """The current server-side subscription id (it changes on resubscribing)."""
        return self._cur[1] if self._cur else None

    @property
    def last_seq(self) -> int:
        """The highest seq queued for the reader."""
        return self._last_seq

    # -- the policy --------------------------------------------------------

    def _resume_point(self) -> int:
        if self._last_seq >= 0:
            return self._last_seq
        return self._floor if self._floor is not None else -1

    def _subscribe_params(self) -> dict[str, Any]:
        p = dict(self._params)
        p["after_seq"] = self._resume_point()
        return p

    def _took(self, result: dict[str, Any]) -> None:
        if self._floor is None:
            self._floor = int(result.get("last_seq", 0))

    def _item(self, method: str, params: dict[str, Any]) -> None:
        if method != "events.event":
            return
        ev = params.get("event")
        if not isinstance(ev, dict) or int(ev.get("seq", 0)) <= self._last_seq:
            return
        if len(self._queue) >= self._c.event_buffer:
            log.info("subscription reader is behind; resubscribing from %d once it catches up",
                     self._last_seq)
            self._resubscribe()
            return
        self._queue.append(ev)
        self._last_seq = int(ev["seq"])
        self._has.set()

    def _may_resubscribe(self) -> bool:
        # Not while the reader is behind: once it has read half the buffer.
        return len(self._queue) <= self._c.event_buffer // 2

    def _delivered(self, item: Any) -> None:
        if self._wants_subscription():
            self._wake.set()

    async def __anext__(self) -> dict[str, Any]:
        return await super().__anext__()

    async def next(self, timeout: Optional[float] = None) -> dict[str, Any]:
        """The next event; raises ``asyncio.TimeoutError`` after ``timeout``
        seconds without one, ``StopAsyncIteration`` once the stream ended."""
        return await super().next(timeout)

    async def close(self) -> None:
        """Ends the subscription, on the server too. Events not yet read
        are dropped. Idempotent."""
        await super().close()
        self._queue.clear()


__all__ = ["Subscription"]
