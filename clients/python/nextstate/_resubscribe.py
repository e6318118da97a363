"""The one resubscriber: what keeps a client-side stream going across what
would end its server-side subscription, for :class:`~nextstate.subscription.Subscription`
(events) and :class:`~nextstate.samples.SampleStream` (samples), as the Go
client's resubscriber does.

A stream subscribes (``events.subscribe``), queues what its subscription
sends for the reader, and when the server ends it (``events.ended``) or the
connection drops, subscribes again, with the client's reconnect backoff,
until it is closed, the client gives up, or the server refuses for good
(:data:`~nextstate.errors.TERMINAL_CODES`). The server-side subscription it
replaces or drops is unsubscribed. What differs between streams is their
policy, the methods a subclass defines: where a new subscription starts
(:meth:`_Resubscriber._subscribe_params`), what it learns from the answer
(:meth:`_Resubscriber._took`), what it does with a notification
(:meth:`_Resubscriber._item`), when it may subscribe again
(:meth:`_Resubscriber._may_resubscribe`), and work of its own between
subscriptions (:meth:`_Resubscriber._pending`, :meth:`_Resubscriber._step`:
the samples stream's acknowledgements).
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


class _Resubscriber:
    """The shared machinery of a resubscribing stream; see the module doc."""

    _what = "subscription"  # for logs

    def __init__(self, client: "Client") -> None:
        self._c = client
        self._queue: collections.deque[Any] = collections.deque()
        self._has = asyncio.Event()  # the queue has items, or the stream ended
        self._wake = asyncio.Event()  # the manager has work
        self._cur: Optional[tuple[int, str]] = None  # (connection, server subscription id)
        self._need = True
        self._closed = False
        self._err: Optional[BaseException] = None
        self._task: Optional[asyncio.Task] = None

    # -- the policy: what a stream defines --------------------------------

    def _subscribe_params(self) -> dict[str, Any]:
        """The params of the next ``events.subscribe``, ``after_seq`` set to
        where the stream resumes."""
        raise NotImplementedError

    def _took(self, result: dict[str, Any]) -> None:
        """Learns from a subscribe answer (its ``last_seq``)."""

    def _item(self, method: str, params: dict[str, Any]) -> None:
        """Handles a notification of the current subscription other than
        ``events.ended``."""
        raise NotImplementedError

    def _may_resubscribe(self) -> bool:
        """Whether a stream that needs a subscription may ask for it now."""
        return True

    def _pending(self) -> bool:
        """Whether :meth:`_step` has work."""
        return False

    async def _step(self) -> None:
        """Work of the stream's own between subscriptions, when :meth:`_pending`."""

    def _delivered(self, item: Any) -> None:
        """Called with each item the reader takes."""

    # -- the machinery ---------------------------------------------------

    @property
    def error(self) -> Optional[BaseException]:
        """Why the stream ended, if it failed."""
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

    async def _subscribe(self) -> None:
        await self._c._call("events.subscribe", self._subscribe_params(), retry=False,
                            on_result=self._subscribed, timeout=60)

    def _subscribed(self, gen: int, result: Any) -> None:
        """Runs in the reader with the subscribe answer, before any
        notification of the new subscription is read."""
        result = result or {}
        sid = str(result.get("subscription", ""))
        if self._closed:
            self._c._notify_server(gen, "events.unsubscribe", {"subscription": sid})
            return
        self._drop_current()
        self._took(result)
        self._cur = (gen, sid)
        self._need = False
        self._c._routes[sid] = self

    def _drop_current(self) -> None:
        if self._cur is None:
            return
        gen, sid = self._cur
        self._cur = None
        if self._c._routes.get(sid) is self:
            del self._c._routes[sid]
        self._c._notify_server(gen, "events.unsubscribe", {"subscription": sid})

    def _resubscribe(self) -> None:
        """Drops the current subscription and asks the manager for a new one."""
        self._drop_current()
        self._need = True
        self._wake.set()

    def _notify(self, gen: int, method: str, params: dict[str, Any]) -> None:
        if self._cur != (gen, params.get("subscription")):
            return  # a subscription we dropped
        if method == "events.ended":
            log.info("%s %s ended by the server (%s); resubscribing", self._what,
                     params.get("subscription"), params.get("reason"))
            self._cur = None
            self._need = True
            self._wake.set()
            return
        self._item(method, params)

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

    def _wants_subscription(self) -> bool:
        return self._need and self._may_resubscribe()

    async def _run(self) -> None:
        failures = 0
        while not self._closed:
            if self._wants_subscription():
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
                    log.warning("resubscribing (%s) failed (attempt %d): %s", self._what, failures, e)
                    policy = self._c.reconnect
                    await asyncio.sleep(policy.backoff(failures) if policy else 1.0)
                continue
            if not self._need and self._pending():
                await self._step()
                continue
            self._wake.clear()
            if self._wants_subscription() or (not self._need and self._pending()):
                continue
            await self._wake.wait()

    def __aiter__(self):
        return self

    async def __anext__(self) -> Any:
        while True:
            if self._queue:
                item = self._queue.popleft()
                self._delivered(item)
                return item
            if self._closed:
                if self._err is not None and not isinstance(self._err, ClientClosedError):
                    raise self._err
                raise StopAsyncIteration
            self._has.clear()
            await self._has.wait()

    async def next(self, timeout: Optional[float] = None) -> Any:
        """The next item; raises ``asyncio.TimeoutError`` after ``timeout``
        seconds without one, ``StopAsyncIteration`` once the stream ended."""
        return await asyncio.wait_for(self.__anext__(), timeout)

    async def close(self) -> None:
        """Ends the stream, on the server too. Idempotent."""
        if not self._closed:
            self._closed = True
            self._drop_current()
            self._c._streams.discard(self)
            self._has.set()
            self._wake.set()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
