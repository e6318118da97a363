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

import asyncio
import collections
import logging
from typing import TYPE_CHECKING, Any, Optional

from .errors import TERMINAL_CODES, ClientClosedError, NextstateError, RPCError

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger("nextstate")


class Subscription:
    """A resubscribing stream of events; see the module doc. Make one with
    :meth:`nextstate.client.Client.subscribe`."""

    def __init__(self, client: "Client", params: dict[str, Any]) -> None:
        self._c = client
        self._params = params
        self._queue: collections.deque[dict[str, Any]] = collections.deque()
        self._has = asyncio.Event()  # the queue has events, or the stream ended
        self._wake = asyncio.Event()  # the manager has work
        self._cur: Optional[tuple[int, str]] = None  # (connection, server subscription id)
        self._need = True
        self._last_seq = int(params.get("after_seq", 0))  # the highest seq queued
        self._floor: Optional[int] = None  # resume point when nothing was queued after a live-only start
        self._closed = False
        self._err: Optional[BaseException] = None
        self._task: Optional[asyncio.Task] = None

    @property
    def id(self) -> Optional[str]:
        """The current server-side subscription id (it changes on resubscribing)."""
        return self._cur[1] if self._cur else None

    @property
    def last_seq(self) -> int:
        """The highest seq queued for the reader."""
        return self._last_seq

    @property
    def error(self) -> Optional[BaseException]:
        """Why the subscription ended, if it failed."""
        return self._err

    async def _start(self) -> None:
        self._c._streams.add(self)
        try:
            await self._subscribe()
        except BaseException:
            self._c._streams.discard(self)
            self._closed = True
            raise
        self._task = asyncio.get_running_loop().create_task(self._run())

    def _resume_point(self) -> int:
        if self._last_seq >= 0:
            return self._last_seq
        return self._floor if self._floor is not None else -1

    async def _subscribe(self) -> None:
        p = dict(self._params)
        p["after_seq"] = self._resume_point()
        await self._c._call("events.subscribe", p, retry=False, on_result=self._subscribed, timeout=60)

    def _subscribed(self, gen: int, result: Any) -> None:
        """Runs in the reader with the subscribe answer, before any event of
        the new subscription is read."""
        sid = str((result or {}).get("subscription", ""))
        if self._closed:
            self._c._notify_server(gen, "events.unsubscribe", {"subscription": sid})
            return
        if self._cur is not None:
            self._drop_current()
        self._cur = (gen, sid)
        self._need = False
        self._c._routes[sid] = self
        if self._floor is None:
            self._floor = int((result or {}).get("last_seq", 0))

    def _drop_current(self) -> None:
        if self._cur is None:
            return
        gen, sid = self._cur
        self._cur = None
        if self._c._routes.get(sid) is self:
            del self._c._routes[sid]
        self._c._notify_server(gen, "events.unsubscribe", {"subscription": sid})

    def _notify(self, gen: int, method: str, params: dict[str, Any]) -> None:
        if self._cur != (gen, params.get("subscription")):
            return  # a subscription we dropped
        if method == "events.ended":
            log.info("subscription %s ended by the server (%s); resubscribing from %d",
                     params.get("subscription"), params.get("reason"), self._last_seq)
            self._cur = None
            self._need = True
            self._wake.set()
            return
        if method != "events.event":
            return
        ev = params.get("event")
        if not isinstance(ev, dict) or int(ev.get("seq", 0)) <= self._last_seq:
            return
        if len(self._queue) >= self._c.event_buffer:
            log.info("subscription reader is behind; resubscribing from %d once it catches up",
                     self._last_seq)
            self._drop_current()
            self._need = True
            self._wake.set()
            return
        self._queue.append(ev)
        self._last_seq = int(ev["seq"])
        self._has.set()

    def _conn_lost(self) -> None:
        self._cur = None
        self._need = True
        self._wake.set()

    def _reconnected(self) -> None:
        self._wake.set()

    def _fail(self, err: BaseException) -> None:
        if self._closed:
            return
        self._closed = True
        self._err = err
        self._has.set()
        self._wake.set()
        self._c._streams.discard(self)

    async def _run(self) -> None:
        failures = 0
        while not self._closed:
            if self._need and len(self._queue) <= self._c.event_buffer // 2:
                try:
                    await self._subscribe()
                    failures = 0
                except asyncio.CancelledError:
                    raise
                except NextstateError as e:
                    if self._closed:
                        return
                    if isinstance(e, ClientClosedError) or self._c._dead is not None or (
                            isinstance(e, RPCError) and e.code in TERMINAL_CODES):
                        self._fail(e)
                        return
                    failures += 1
                    log.warning("resubscribing failed (attempt %d): %s", failures, e)
                    policy = self._c.reconnect
                    await asyncio.sleep(policy.backoff(failures) if policy else 1.0)
                continue
            self._wake.clear()
            if self._need and len(self._queue) <= self._c.event_buffer // 2:
                continue
            await self._wake.wait()

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> dict[str, Any]:
        while True:
            if self._queue:
                ev = self._queue.popleft()
                if self._need and len(self._queue) <= self._c.event_buffer // 2:
                    self._wake.set()
                return ev
            if self._closed:
                if self._err is not None and not isinstance(self._err, ClientClosedError):
                    raise self._err
                raise StopAsyncIteration
            self._has.clear()
            await self._has.wait()

    async def next(self, timeout: Optional[float] = None) -> dict[str, Any]:
        """The next event; raises ``asyncio.TimeoutError`` after ``timeout``
        seconds without one, ``StopAsyncIteration`` once the stream ended."""
        return await asyncio.wait_for(self.__anext__(), timeout)

    async def close(self) -> None:
        """Ends the subscription, on the server too. Events not yet read
        are dropped. Idempotent."""
        if not self._closed:
            self._closed = True
            self._drop_current()
            self._c._streams.discard(self)
            self._has.set()
            self._wake.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        self._queue.clear()


__all__ = ["Subscription"]
