"""The training-sample stream: a reader of ``events.subscribe`` with
``stream: "samples"``, and the HTTP pull ``GET /v1/samples``.

A sample is rl.Sample's JSON (the fields of slime's ``Sample``:
``group_index``, ``index``, ``prompt``, ``response``, ``tokens``,
``response_length``, ``loss_mask``, ``rollout_log_probs``, ``reward``,
``status``, ``remove_sample``, ``metadata``). Every stored sample has an
``offset``, a positive integer increasing in store order.

The stream is at-least-once and resumable::

    async with Client(url, token=token) as c:
        stream = await SampleStream.open(c, run="train-1", window=256, state_file="samples.offset")
        async for rec in stream:
            train_on(rec.sample)
            await stream.ack(rec.offset)      # every sample up to rec.offset is processed

* **Back-pressure.** The server sends at most ``window`` samples past the
  last acknowledged one, then waits; nothing is dropped.
* **Acknowledging.** :meth:`SampleStream.ack` says every sample up to an
  offset is processed. A consumer that finishes samples out of order (one
  that batches them by group) calls :meth:`SampleStream.commit` with the
  offsets it finished; the stream acknowledges the longest finished prefix.
  :meth:`SampleStream.release` lets the server send more without marking
  anything processed, for a consumer that must hold more than ``window``
  samples to make a batch.
* **Resuming.** After a dropped connection (or an ``events.ended``) the
  stream subscribes again from :attr:`SampleStream.committed`, the last
  offset of that prefix, and skips what it already delivered. With
  ``state_file`` the committed offset is also written to disk after every
  commit and read at start, so a restarted process resumes where the last
  one stopped; samples delivered but not committed then come again.

Without a WebSocket, :func:`fetch_samples` and :func:`iter_samples_http`
read the same samples page by page over HTTP.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Optional

from ._resubscribe import _Resubscriber
from .errors import ClientClosedError, NextstateError, RPCError, error_from_wire

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger("nextstate")

MAX_WINDOW = 4096
"""The largest ``window`` the server accepts."""


@dataclass(frozen=True)
class SampleRecord:
    """One stored sample and its offset."""

    offset: int
    sample: dict[str, Any]


class SampleStream(_Resubscriber):
    """A resumable, acknowledged stream of training samples; see the module
    doc. Make one with :meth:`open`.

    ``after_seq``: start after this offset (0: from the first sample, -1:
    only new ones), unless ``state_file`` holds a committed offset;
    ``window``: the most unacknowledged samples in flight (1 to 4096);
    ``run``, ``env``, ``session``: filters.
    """

    def __init__(self, client: "Client", *, after_seq: int = 0, window: int = 64, run: Optional[str] = None,
                 env: Optional[str] = None, session: Optional[str] = None, state_file: Optional[str] = None) -> None:
        if not 1 <= int(window) <= MAX_WINDOW:
            raise ValueError(f"window {window}: want 1 to {MAX_WINDOW} unacknowledged samples")
        if int(after_seq) < -1:
            raise ValueError(f"after_seq {after_seq}: want an offset, 0 for the first sample, or -1 for new ones")
        super().__init__(client)
        self.window = int(window)
        self.run, self.env, self.session = run, env, session
        self.state_file = state_file
        start = int(after_seq)
        saved = read_offset(state_file) if state_file else None
        if saved is not None:
            start = saved
        # committed: the resume point; None until a live-only start learns it.
        self._committed: Optional[int] = None if start == -1 else start
        self._queued_high = max(start, 0)  # highest offset queued or delivered in this process
        self._held: collections.deque[int] = collections.deque()  # delivered, not yet committed, in order
        self._finished: set[int] = set()  # committed out of order, above the prefix
        self._released = 0  # the consumer lets the server send past this
        self._sub_high = 0  # highest offset the current subscription sent
        self._acked = 0  # highest offset acknowledged on the current subscription

    @classmethod
    async def open(cls, client: "Client", **kw: Any) -> "SampleStream":
        """Subscribes and returns the stream; raises what the server
        refused the subscription with (a server without the samples stream
        answers :class:`~nextstate.errors.InvalidParamsError`)."""
        s = cls(client, **kw)
        await s._start()
        return s

    @property
    def committed(self) -> int:
        """The offset a new subscription resumes after: every sample up to
        it is processed."""
        return self._committed if self._committed is not None else 0

    # -- the policy --------------------------------------------------------

    _what = "sample stream"

    def _subscribe_params(self) -> dict[str, Any]:
        p: dict[str, Any] = {"stream": "samples", "after_seq": -1 if self._committed is None else self._committed,
                             "window": self.window}
        if self.run:
            p["run"] = self.run
        if self.env:
            p["env"] = self.env
        if self.session:
            p["session"] = self.session
        return p

    def _took(self, result: dict[str, Any]) -> None:
        if self._committed is None:
            self._committed = int(result.get("last_seq", 0))
            self._queued_high = max(self._queued_high, self._committed)
        self._sub_high = self._acked = self._committed

    def _item(self, method: str, params: dict[str, Any]) -> None:
        if method != "samples.sample":
            return
        try:
            off = int(params["offset"])
            sample = params["sample"]
        except (KeyError, TypeError, ValueError):
            log.warning("unreadable samples.sample notification: %.200r", params)
            return
        self._sub_high = max(self._sub_high, off)
        if off <= self._queued_high:
            # Seen before in this process (sent again after a resubscribe):
            # skip it, and let the window move if the consumer is past it.
            if off <= max(self.committed, self._released):
                self._wake.set()
            return
        self._queue.append(SampleRecord(off, sample))
        self._queued_high = off
        self._has.set()

    def _ack_target(self) -> int:
        return min(max(self.committed, self._released), self._sub_high)

    def _pending(self) -> bool:
        return self._cur is not None and self._ack_target() > self._acked

    async def _step(self) -> None:
        """Acknowledges what the consumer is done with (or released)."""
        target = self._ack_target()
        gen, sid = self._cur
        try:
            await self._c._call("samples.ack", {"subscription": sid, "offset": target}, retry=False,
                                pin=gen, timeout=60)
            if self._cur == (gen, sid):
                self._acked = max(self._acked, target)
        except NextstateError as e:
            # The connection is gone, or the server no longer has the
            # subscription: start over from the committed offset.
            log.debug("samples.ack %d: %s", target, e)
            if isinstance(e, ClientClosedError):
                self._fail(e)
                return
            if self._cur == (gen, sid):
                self._resubscribe()

    def _delivered(self, item: Any) -> None:
        self._held.append(item.offset)

    # -- reading and acknowledging -----------------------------------------

    async def __anext__(self) -> SampleRecord:
        return await super().__anext__()

    async def next(self, timeout: Optional[float] = None) -> SampleRecord:
        """The next sample; ``asyncio.TimeoutError`` after ``timeout``
        seconds without one, ``StopAsyncIteration`` once the stream ended."""
        return await super().next(timeout)

    async def ack(self, offset: int) -> None:
        """Marks every delivered sample up to ``offset`` processed; the
        stream acknowledges it to the server in the background, which lets
        the server send the next ones."""
        while self._held and self._held[0] <= offset:
            self._finished.discard(self._held.popleft())
        self._finished = {o for o in self._finished if o > offset}
        self._advance(offset)

    def commit(self, offsets: Iterable[int]) -> int:
        """Marks these delivered samples processed, in any order, and
        acknowledges the longest processed prefix; returns
        :attr:`committed`."""
        self._finished.update(int(o) for o in offsets)
        top = None
        while self._held and self._held[0] in self._finished:
            top = self._held.popleft()
            self._finished.discard(top)
        if top is not None:
            self._advance(top)
        return self.committed

    def release(self, offset: int) -> None:
        """Lets the server send samples past ``offset`` (delivered ones) without
        marking them processed: the resume point stays at :attr:`committed`."""
        if offset > self._released:
            self._released = int(offset)
            self._wake.set()

    def _advance(self, offset: int) -> None:
        if self._committed is None or offset > self._committed:
            self._committed = int(offset)
            if self.state_file:
                write_offset(self.state_file, self._committed)
        self._wake.set()

    @property
    def held(self) -> int:
        """Samples delivered and not yet processed."""
        return len(self._held)

    @property
    def unacknowledged(self) -> int:
        """Samples received that the server still counts against the window:
        queued, or delivered and neither processed nor released."""
        top = max(self.committed, self._released)
        return len(self._queue) + sum(1 for o in self._held if o > top)


def read_offset(path: str) -> Optional[int]:
    """The committed offset saved in ``path``; None if there is no file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read().strip()
    except FileNotFoundError:
        return None
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"{path}: want a sample offset (an integer), found {text[:40]!r}") from None
    if n < 0:
        raise ValueError(f"{path}: want a sample offset of 0 or more, found {n}")
    return n


def write_offset(path: str, offset: int) -> None:
    """Saves ``offset`` to ``path`` atomically (a temporary file, renamed)."""
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(f"{offset}\n")
    os.replace(tmp, path)


def http_base(url: str) -> str:
    """The HTTP base URL of a server given as ws://, wss://, http:// or https://."""
    u = urllib.parse.urlsplit(url)
    scheme = {"ws": "http", "wss": "https", "http": "http", "https": "https"}.get(u.scheme)
    if scheme is None or not u.netloc:
        raise ValueError(f"bad server URL {url!r}: want http://host:port (or ws://)")
    return f"{scheme}://{u.netloc}"


def fetch_samples(url: str, *, after_seq: int = 0, limit: Optional[int] = None, run: Optional[str] = None,
                  env: Optional[str] = None, token: Optional[str] = None, timeout: float = 30.0) -> dict[str, Any]:
    """``GET /v1/samples``: one page of stored samples after ``after_seq``,
    ``{"samples": [{"offset", "sample"}, ...], "last_seq": L, "more": M}``
    (``last_seq``: the next ``after_seq``; ``more``: ``limit`` cut the page
    short). An error answer raises its :mod:`nextstate.errors` class."""
    q: dict[str, Any] = {"after_seq": int(after_seq)}
    if limit is not None:
        q["limit"] = int(limit)
    if run:
        q["run"] = run
    if env:
        q["env"] = env
    req = urllib.request.Request(f"{http_base(url)}/v1/samples?{urllib.parse.urlencode(q)}")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as e:
        body = e.read()
        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("error"), dict):
            raise error_from_wire(obj["error"]) from None
        raise RPCError(0, f"GET /v1/samples: HTTP {e.code}: {body[:200]!r}") from None


def iter_samples_http(url: str, *, after_seq: int = 0, page: int = 256, run: Optional[str] = None,
                      env: Optional[str] = None, token: Optional[str] = None) -> Iterator[SampleRecord]:
    """Every stored sample after ``after_seq``, page by page over HTTP, until
    the reader has caught up with the store (a page comes back empty)."""
    after = int(after_seq)
    while True:
        res = fetch_samples(url, after_seq=after, limit=page, run=run, env=env, token=token)
        items = res.get("samples") or []
        for it in items:
            after = int(it["offset"])
            yield SampleRecord(after, it["sample"])
        if not items or res.get("more") is False:
            return
