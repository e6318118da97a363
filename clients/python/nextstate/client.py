"""The asyncio client of a nextstate server (protocol ``nextstate.v1``).

One :class:`Client` holds one WebSocket to ``/v1/ws`` and multiplexes every
call over it: JSON-RPC 2.0 requests matched to their answers by id, any
number of sessions, and subscriptions fed by server notifications. It
mirrors the Go client (``client/``):

* **Reconnecting.** When the connection drops, the client redials with
  exponential backoff (:class:`ReconnectPolicy`; ``reconnect=None`` turns it
  off) and sends again the calls that are safe to send twice: reads
  (``server.info``, ``env.list``, ``env.describe``, ``task.list``,
  ``session.resume``), ``session.close``, and steps with a step id, which the
  server answers from its record (``StepResult.replayed``) instead of running
  them twice. Calls that are not safe to repeat (``session.create``,
  ``session.reset``, ``reward.add``, a step without a step id) are never sent
  twice: if the connection dropped after one was written it raises
  :class:`~nextstate.errors.ConnectionLostError` with ``outcome_unknown``.
  Calls made while redialing wait for the new connection. Subscriptions
  resubscribe from the last seq they delivered.
* **Errors** are the :mod:`nextstate.errors` class of the wire code.
* **Keepalive.** The websockets library answers the server's pings and sends
  its own every ``ping_interval`` seconds; run model calls off the event
  loop (``asyncio.to_thread``) so that it can.

Example::

    async with Client("ws://127.0.0.1:7070", token="TOKEN") as c:
        s, first = await c.create(task_id="guess-1-100", seed=7, run="demo")
        res = await s.step(text_action("50"))
        await s.close()
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import random
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional

from . import _ws
from .errors import (
    ClientClosedError,
    ConnectionLostError,
    FrameTooLargeError,
    NextstateError,
    error_from_wire,
)
from .session import Session
from .wire import ResetResult

if TYPE_CHECKING:
    from .subscription import Subscription

PROTOCOL = "nextstate.v1"
"""The protocol version, also the WebSocket subprotocol."""
PATH = "/v1/ws"
"""Where a server serves its WebSocket; appended to a URL without a path."""
MAX_FRAME_BYTES = 4 << 20
"""The server's default cap on an incoming frame (``server.info`` says it)."""
READ_FACTOR = 16
"""How much larger than the request cap a message from the server may be."""

log = logging.getLogger("nextstate")


@dataclass
class ReconnectPolicy:
    """How a :class:`Client` redials after its connection drops.

    ``initial_backoff`` is the wait before the first redial (seconds); each
    failed redial doubles it up to ``max_backoff``; after ``max_attempts``
    failed redials in a row (negative: no limit) the client gives up and
    every call fails with :class:`ConnectionLostError`.
    """

    initial_backoff: float = 0.1
    max_backoff: float = 5.0
    max_attempts: int = 10

    def backoff(self, attempt: int) -> float:
        """The wait before redial ``attempt`` (from 1): exponential, capped,
        its upper half jittered so that clients of a restarted server do not
        all redial at once."""
        d = max(self.initial_backoff, 0.001)
        for _ in range(1, attempt):
            if d >= self.max_backoff:
                break
            d *= 2
        d = min(d, max(self.max_backoff, self.initial_backoff))
        return d / 2 + random.uniform(0, d / 2)


def ws_url(raw: str) -> str:
    """The WebSocket URL to dial for what the user gave: ``ws://``,
    ``wss://``, ``http://`` or ``https://`` host:port, with :data:`PATH`
    appended when there is no path."""
    u = urllib.parse.urlsplit(raw)
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(u.scheme)
    if scheme is None:
        raise ValueError(f"bad server URL {raw!r}: want ws://, wss://, http:// or https://host:port")
    if not u.netloc:
        raise ValueError(f"bad server URL {raw!r}: no host")
    path = u.path if u.path not in ("", "/") else PATH
    return urllib.parse.urlunsplit((scheme, u.netloc, path, u.query, ""))


class _Call:
    """One request waiting for its answer."""

    __slots__ = ("id", "method", "frame", "retry", "future", "gen", "written", "pin", "on_result", "abandoned")

    def __init__(self, id: Optional[int], method: str, frame: str, retry: bool,
                 on_result: Optional[Callable[[int, Any], None]] = None, pin: Optional[int] = None) -> None:
        self.id = id  # None: a notification, never answered
        self.method = method
        self.frame = frame
        self.retry = retry  # safe to send again after a reconnect
        self.future: Optional[asyncio.Future] = None
        self.gen: Optional[int] = None  # the connection it is queued on; None while waiting for one
        self.written: Optional[int] = None  # the connection it was last written to
        self.pin = pin  # the only connection it means anything on
        self.on_result = on_result  # runs in the reader, before the next message
        self.abandoned = False


class _Conn:
    """One WebSocket with its reader and writer tasks."""

    def __init__(self, ws: Any, gen: int, queue_len: int) -> None:
        self.ws = ws
        self.gen = gen
        self.out: asyncio.Queue = asyncio.Queue(maxsize=queue_len)
        self.done = asyncio.Event()
        self.err: Optional[BaseException] = None
        self.tasks: list[asyncio.Task] = []

    def fail(self, err: BaseException) -> None:
        if not self.done.is_set():
            self.err = err
            self.done.set()


class Client:
    """A connection to a nextstate server that survives drops.

    Create it with :meth:`connect` (or ``async with Client(url, ...)``) and
    :meth:`close` it when done. All methods are coroutines of the loop that
    connected it.

    ``url``: the server, ``ws://host:port`` or ``http://host:port``;
    ``token``: sent as ``Authorization: Bearer``; ``headers``: more handshake
    headers; ``reconnect``: the redial policy, ``None`` for none;
    ``ping_interval``: seconds between keepalive pings (``None``: off);
    ``max_frame``: the request size cap (the server's ``max_frame_bytes``);
    ``queue_len``: requests waiting for the writer; ``event_buffer``: events
    a subscription holds for its reader before it resubscribes later.
    """

    def __init__(self, url: str, *, token: Optional[str] = None, headers: Optional[Mapping[str, str]] = None,
                 reconnect: Optional[ReconnectPolicy] = ReconnectPolicy(), open_timeout: float = 10.0,
                 ping_interval: Optional[float] = 15.0, max_frame: int = MAX_FRAME_BYTES,
                 queue_len: int = 256, event_buffer: int = 1024) -> None:
        self.url = ws_url(url)
        self.token = token
        self._headers = dict(headers or {})
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self.reconnect = reconnect
        self.open_timeout = open_timeout
        self.ping_interval = ping_interval
        self.max_frame = max_frame
        self.queue_len = max(1, queue_len)
        self.event_buffer = max(2, event_buffer)
        self._ids = itertools.count(1)
        self._pending: dict[int, _Call] = {}
        self._conn: Optional[_Conn] = None
        self._gen = 0
        self._closed = False
        self._dead: Optional[NextstateError] = None
        self._supervisor: Optional[asyncio.Task] = None
        self._routes: dict[str, Any] = {}  # server subscription id on the current connection -> stream
        self._streams: set[Any] = set()  # Subscription and SampleStream objects
        self._drop_response: Optional[str] = None  # test hook: lose the next answer to this method

    # -- connection -----------------------------------------------------------

    async def connect(self) -> "Client":
        """Dials the server; raises what the handshake failed with (an
        :class:`~nextstate.errors.UnauthorizedError` for a wrong token)."""
        if self._conn is not None or self._closed:
            raise NextstateError("client already connected or closed")
        self._start(await self._dial())
        self._supervisor = asyncio.get_running_loop().create_task(self._supervise())
        return self

    async def __aenter__(self) -> "Client":
        return await self.connect()

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    @property
    def connected(self) -> bool:
        """Whether a connection is up now."""
        return self._conn is not None and not self._conn.done.is_set()

    async def _dial(self) -> _Conn:
        ws = await _ws.connect(self.url, headers=self._headers, subprotocol=PROTOCOL,
                               open_timeout=self.open_timeout, ping_interval=self.ping_interval,
                               max_size=self.max_frame * READ_FACTOR)
        self._gen += 1
        return _Conn(ws, self._gen, self.queue_len)

    def _start(self, conn: _Conn) -> None:
        self._conn = conn
        loop = asyncio.get_running_loop()
        conn.tasks = [loop.create_task(self._read_loop(conn)), loop.create_task(self._write_loop(conn))]

    async def _supervise(self) -> None:
        """Waits for the connection to drop, settles its calls, redials."""
        while True:
            conn = self._conn
            assert conn is not None
            await conn.done.wait()
            await self._stop_conn(conn)
            if self._closed:
                return
            if self.reconnect is None:
                log.warning("connection to %s lost (%s); reconnecting is off", self.url, conn.err)
                self._die(conn, ConnectionLostError(
                    f"connection to {self.url} lost ({conn.err}) and reconnecting is off"))
                return
            log.warning("connection to %s lost (%s); reconnecting", self.url, conn.err)
            self._conn_lost(conn)
            try:
                await self._redial()
            except ClientClosedError:
                return
            except NextstateError as e:
                log.error("giving up on %s: %s", self.url, e)
                self._die(None, e)
                return

    async def _stop_conn(self, conn: _Conn) -> None:
        for t in conn.tasks:
            t.cancel()
        await asyncio.gather(*conn.tasks, return_exceptions=True)
        await _ws.abort(conn.ws)
        while not conn.out.empty():  # free callers blocked on a full queue
            conn.out.get_nowait()

    def _conn_lost(self, conn: _Conn) -> None:
        self._conn = None
        for cid, call in list(self._pending.items()):
            if call.gen != conn.gen and call.pin != conn.gen:
                continue
            call.gen = None
            written = call.written == conn.gen
            if call.pin == conn.gen or (written and not call.retry):
                del self._pending[cid]
                self._settle(call, exc=_lost(call.method, written, conn.err))
        self._routes.clear()
        for s in list(self._streams):
            s._conn_lost()

    async def _redial(self) -> None:
        policy = self.reconnect
        assert policy is not None
        last: Optional[BaseException] = None
        attempt = 0
        while True:
            attempt += 1
            await asyncio.sleep(policy.backoff(attempt))
            if self._closed:
                raise ClientClosedError("client is closed")
            try:
                conn = await self._dial()
            except Exception as e:  # noqa: BLE001 - every dial failure is retried or reported
                last = e
                log.warning("redial %d to %s failed: %s", attempt, self.url, e)
                if _ws.permanent(e) or (policy.max_attempts > 0 and attempt >= policy.max_attempts):
                    raise ConnectionLostError(
                        f"gave up reconnecting to {self.url} after {attempt} attempts (last: {last})") from e
                continue
            if self._closed:
                await _ws.abort(conn.ws)
                raise ClientClosedError("client is closed")
            self._start(conn)
            resend = sorted((c for c in self._pending.values() if c.gen is None), key=lambda c: c.id or 0)
            log.info("reconnected to %s, resending %d calls", self.url, len(resend))
            for call in resend:
                call.gen = conn.gen
                await conn.out.put(call)
            for s in list(self._streams):
                s._reconnected()
            return

    def _die(self, conn: Optional[_Conn], err: NextstateError) -> None:
        self._dead = err
        self._conn = None
        for cid, call in list(self._pending.items()):
            del self._pending[cid]
            written = conn is not None and call.written == conn.gen
            self._settle(call, exc=_lost(call.method, written, err))
        self._routes.clear()
        for s in list(self._streams):
            s._fail(err)

    async def close(self) -> None:
        """Closes the connection. Calls in flight fail with
        :class:`ClientClosedError` and subscriptions end. Sessions on the
        server live on until their idle timeout: close them first if they
        are done. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for s in list(self._streams):
            s._fail(ClientClosedError("client is closed"))
        conn = self._conn
        if conn is not None:
            await _ws.close(conn.ws)
            conn.fail(ClientClosedError("client is closed"))
        if self._supervisor is not None:  # it may be waiting to redial
            self._supervisor.cancel()
            await asyncio.gather(self._supervisor, return_exceptions=True)
        for c in {id(x): x for x in (conn, self._conn) if x is not None}.values():
            await self._stop_conn(c)
        self._conn = None
        for cid, call in list(self._pending.items()):
            del self._pending[cid]
            self._settle(call, exc=ClientClosedError(f"{call.method}: client is closed"))

    # -- reading and writing --------------------------------------------------

    async def _write_loop(self, conn: _Conn) -> None:
        try:
            while True:
                call: _Call = await conn.out.get()
                if call.abandoned or (call.pin is not None and call.pin != conn.gen):
                    continue
                call.written = conn.gen
                await conn.ws.send(call.frame)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - any write failure ends the connection
            conn.fail(e)

    async def _read_loop(self, conn: _Conn) -> None:
        try:
            async for data in conn.ws:
                if not self._dispatch(conn, data):
                    return
            conn.fail(ConnectionLostError("the server closed the connection"))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - any read failure ends the connection
            conn.fail(e)

    def _dispatch(self, conn: _Conn, data: Any) -> bool:
        try:
            msg = json.loads(data)
        except (TypeError, ValueError) as e:
            log.warning("unreadable message from the server: %s", e)
            return True
        if not isinstance(msg, dict):
            log.warning("unexpected message from the server: %.200r", msg)
            return True
        if "method" in msg and "id" not in msg:
            params = msg.get("params") or {}
            route = self._routes.get(params.get("subscription", "")) if isinstance(params, dict) else None
            if route is not None:
                if msg["method"] == "events.ended":
                    self._routes.pop(params.get("subscription", ""), None)
                try:
                    route._notify(conn.gen, msg["method"], params)
                except Exception:  # noqa: BLE001 - a stream's bug must not end the connection
                    log.exception("handling a %s notification", msg["method"])
            return True
        cid = msg.get("id")
        if not isinstance(cid, int):
            log.warning("server error for no request: %s", msg.get("error"))
            return True
        call = self._pending.get(cid)
        if call is None or call.gen != conn.gen:
            return True  # its caller gave up
        if self._drop_response is not None and self._drop_response == call.method:
            self._drop_response = None  # test hook: lose this answer with the connection
            conn.fail(ConnectionLostError("test hook dropped the response"))
            return False
        del self._pending[cid]
        if "error" in msg and msg["error"] is not None:
            self._settle(call, exc=error_from_wire(msg["error"]))
            return True
        result = msg.get("result")
        if call.on_result is not None:
            try:
                call.on_result(conn.gen, result)
            except Exception as e:  # noqa: BLE001 - handed to the caller instead
                self._settle(call, exc=e)
                return True
        self._settle(call, result=result)
        return True

    def _drop_connection(self) -> None:
        """Test hook: drops the current connection as a network failure
        would (no close handshake); the client then reconnects."""
        conn = self._conn
        if conn is not None:
            t = getattr(conn.ws, "transport", None)
            if t is not None:
                t.abort()
            conn.fail(ConnectionLostError("test hook dropped the connection"))

    @staticmethod
    def _settle(call: _Call, result: Any = None, exc: Optional[BaseException] = None) -> None:
        f = call.future
        if f is None or f.done():
            return
        if exc is not None:
            f.set_exception(exc)
        else:
            f.set_result(result)

    # -- calls ---------------------------------------------------------------

    async def call(self, method: str, params: Optional[Mapping[str, Any]] = None, *, retry: bool = False,
                   timeout: Optional[float] = None) -> Any:
        """Sends a request and returns its ``result``. ``retry`` says the
        request may be sent again after a reconnect (it is harmless twice).
        Raises the :mod:`nextstate.errors` class of an error answer."""
        return await self._call(method, params, retry=retry, timeout=timeout)

    async def _call(self, method: str, params: Optional[Mapping[str, Any]], *, retry: bool,
                    timeout: Optional[float] = None, on_result: Optional[Callable[[int, Any], None]] = None,
                    pin: Optional[int] = None) -> Any:
        if self._closed:
            raise ClientClosedError(f"{method}: client is closed")
        if self._dead is not None:
            raise ConnectionLostError(f"{method}: {self._dead}")
        cid = next(self._ids)
        try:
            frame = json.dumps({"jsonrpc": "2.0", "id": cid, "method": method, "params": dict(params or {})},
                               separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{method}: params are not JSON (numbers must be finite): {e}") from None
        if len(frame.encode()) > self.max_frame:
            raise FrameTooLargeError(-32011, f"{method}: request of {len(frame.encode())} bytes is over the "
                                             f"{self.max_frame}-byte frame limit")
        conn = self._conn
        if self._supervisor is None:
            raise NextstateError(f"{method}: the client is not connected: call connect() first")
        if pin is not None and (conn is None or conn.gen != pin or conn.done.is_set()):
            raise ConnectionLostError(f"{method}: the connection it was for is gone")
        call = _Call(cid, method, frame, retry, on_result, pin)
        call.future = asyncio.get_running_loop().create_future()
        self._pending[cid] = call
        try:
            if conn is not None and not conn.done.is_set():
                call.gen = conn.gen
                await conn.out.put(call)
            return await asyncio.wait_for(asyncio.shield(call.future), timeout)
        except (asyncio.CancelledError, asyncio.TimeoutError):
            call.abandoned = True
            if self._pending.get(cid) is call:
                del self._pending[cid]
            if call.future.done() and not call.future.cancelled():
                call.future.exception()  # mark retrieved
            raise

    def _notify_server(self, gen: int, method: str, params: Mapping[str, Any]) -> None:
        """Queues a JSON-RPC notification on connection ``gen`` if it is the
        current one and its queue has room; nothing waits for it."""
        conn = self._conn
        if conn is None or conn.gen != gen or conn.done.is_set():
            return
        frame = json.dumps({"jsonrpc": "2.0", "method": method, "params": dict(params)}, separators=(",", ":"))
        try:
            conn.out.put_nowait(_Call(None, method, frame, False, pin=gen))
        except asyncio.QueueFull:
            pass

    # -- methods -------------------------------------------------------------

    async def server_info(self) -> dict[str, Any]:
        """``server.info``: name, version, protocol, envs, max_frame_bytes,
        sessions, max_sessions, last_seq."""
        return await self._call("server.info", None, retry=True)

    async def envs(self) -> list[dict[str, Any]]:
        """``env.list``: one ``{name, description, tasks}`` per kind."""
        return (await self._call("env.list", None, retry=True))["envs"]

    async def describe(self, env: str) -> dict[str, Any]:
        """``env.describe``: the kind's spec (schemas, limits, tasks) and
        ``part_schemas``."""
        return await self._call("env.describe", {"env": env}, retry=True)

    async def tasks(self, env: str = "", split: str = "") -> list[dict[str, Any]]:
        """``task.list``: the catalog's tasks of ``env`` in ``split`` (empty:
        all), without verifier inputs."""
        p = {k: v for k, v in (("env", env), ("split", split)) if v}
        return (await self._call("task.list", p, retry=True))["tasks"]

    async def create(self, *, env: Optional[str] = None, task_id: Optional[str] = None,
                     task: Optional[Mapping[str, Any]] = None, seed: Optional[int] = None,
                     options: Optional[Mapping[str, Any]] = None, run: Optional[str] = None,
                     labels: Optional[Mapping[str, str]] = None) -> tuple["Session", ResetResult]:
        """``session.create``: admits a session and runs its first reset.
        Returns the :class:`Session` and the first :class:`ResetResult`.
        Never sent twice: a lost answer raises :class:`ConnectionLostError`."""
        p = _params(env=env, task_id=task_id, task=task, seed=seed, options=options, run=run, labels=labels)
        res = ResetResult.from_dict(await self._call("session.create", p, retry=False))
        s = self.attach(res.session)
        s._observe(res.seq)
        return s, res

    def attach(self, session_id: str) -> "Session":
        """A :class:`Session` handle for an existing session id (made by
        this client or another). Sends nothing; use :meth:`Session.resume`
        to catch up on its events."""
        return Session(self, session_id)

    async def add_reward(self, session: str, step_id: str, reward: float, source: str,
                         info: Optional[Mapping[str, Any]] = None) -> int:
        """``reward.add``: records a late reward for a recorded step and
        returns the reward event's seq. Never sent twice."""
        p = _params(session=session, step_id=step_id, reward=float(reward), source=source, info=info)
        return int((await self._call("reward.add", p, retry=False))["seq"])

    async def subscribe(self, *, after_seq: int = 0, run: Optional[str] = None, env: Optional[str] = None,
                        session: Optional[str] = None, types: Optional[Iterable[str]] = None) -> "Subscription":
        """``events.subscribe``: a :class:`~nextstate.subscription.Subscription`
        of recorded events matching the filters, stored ones after
        ``after_seq`` first (``-1``: live only, from now), then live ones.
        Iterate it with ``async for``; it resubscribes through drops."""
        from .subscription import Subscription

        p = _params(run=run, env=env, session=session, types=list(types) if types else None)
        p["after_seq"] = int(after_seq)
        sub = Subscription(self, p)
        await sub._start()
        return sub

    async def unsubscribe(self, subscription: str) -> dict[str, Any]:
        """``events.unsubscribe`` of a server subscription id on this
        connection (the ``subscription`` of a raw ``events.subscribe``)."""
        return await self._call("events.unsubscribe", {"subscription": subscription}, retry=False)


def _params(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


def _lost(method: str, written: bool, cause: Optional[BaseException]) -> ConnectionLostError:
    if written:
        return ConnectionLostError(f"{method}: the connection was lost after the request was sent, "
                                   f"so its outcome is unknown ({cause})", outcome_unknown=True)
    return ConnectionLostError(f"{method}: connection lost ({cause})")

