"""Sessions: handles on server-side sessions, made by
:meth:`nextstate.client.Client.create` and :meth:`~nextstate.client.Client.attach`."""

from __future__ import annotations

import asyncio
import itertools
import secrets
from typing import TYPE_CHECKING, Any, Mapping, Optional

from .errors import NextstateError
from .wire import Action, ResetResult, ResumeResult, StepResult

if TYPE_CHECKING:
    from .client import Client

RESUME_PAGE = 1000
"""Events asked for per ``session.resume`` page."""


class Session:
    """A handle on a server-side session. The session lives on the server:
    it outlives connections, and the handle keeps working across reconnects.
    Steps get step ids unique to the handle, so retried steps are answered
    from the record instead of running twice."""

    def __init__(self, client: Client, session_id: str) -> None:
        self.client = client
        self.id = session_id
        self._prefix = f"{session_id}-{secrets.token_hex(6)}-"
        self._n = itertools.count(1)
        self.last_seq = 0
        """The highest event seq this handle has seen in its own answers."""

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    def _observe(self, seq: int) -> None:
        self.last_seq = max(self.last_seq, int(seq))

    def next_step_id(self) -> str:
        """A fresh step id: the session id, a random part of this handle and
        a counter."""
        return f"{self._prefix}{next(self._n)}"

    async def step(self, action: Action, *, step_id: Optional[str] = None,
                   turn: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None) -> StepResult:
        """``session.step``: applies ``action`` and returns the next state.

        ``step_id`` defaults to a fresh one; pass the id of an earlier step
        whose outcome is unknown to retry it (the server answers from its
        record, ``replayed`` true). ``step_id=""`` sends none: the step is
        then never sent twice. ``turn`` is the policy's side of the step
        (``messages``, ``response``, ``prompt_ids``, ``response_ids``,
        ``logprobs``, ``model``), recorded for training samples. Errors
        (and the ``asyncio.TimeoutError`` of ``timeout``) carry
        ``session`` and ``step_id`` for a retry."""
        sid = self.next_step_id() if step_id is None else step_id
        p: dict[str, Any] = {"session": self.id, "action": action}
        if sid:
            p["step_id"] = sid
        if turn is not None:
            p["turn"] = dict(turn)
        try:
            res = StepResult.from_dict(await self.client._call("session.step", p, retry=bool(sid), timeout=timeout))
        except (NextstateError, asyncio.TimeoutError) as e:
            e.session, e.step_id = self.id, sid or None  # type: ignore[union-attr]
            raise
        self._observe(res.seq)
        return res

    async def reset(self, *, task_id: Optional[str] = None, task: Optional[Mapping[str, Any]] = None,
                    seed: Optional[int] = None, options: Optional[Mapping[str, Any]] = None) -> ResetResult:
        """``session.reset``: starts the next episode (same task unless
        ``task_id`` or ``task``). The seed defaults to 0, not random. Never
        sent twice: after a lost answer :meth:`resume` shows whether it ran."""
        p = _params(session=self.id, task_id=task_id, task=task, seed=seed, options=options)
        res = ResetResult.from_dict(await self.client._call("session.reset", p, retry=False))
        self._observe(res.seq)
        return res

    async def close(self) -> None:
        """``session.close``: ends the session and releases its env.
        Idempotent: closing a closed or unknown session is not an error."""
        await self.client._call("session.close", {"session": self.id}, retry=True)

    async def resume(self, after_seq: Optional[int] = None) -> ResumeResult:
        """``session.resume``: the session's recorded events with seq above
        ``after_seq`` (default :attr:`last_seq`: exactly what this handle has
        not seen), every page, and whether the session is still live."""
        after = self.last_seq if after_seq is None else int(after_seq)
        out = ResumeResult(session=self.id, live=False, events=[], last_seq=after)
        while True:
            r = await self.client._call("session.resume",
                                        {"session": self.id, "after_seq": out.last_seq, "limit": RESUME_PAGE},
                                        retry=True)
            out.live = bool(r.get("live"))
            evs = r.get("events") or []
            out.events.extend(evs)
            if evs:
                out.last_seq = int(evs[-1]["seq"])
                self._observe(out.last_seq)
            if not r.get("more") or not evs:
                return out

    async def add_reward(self, step_id: str, reward: float, source: str,
                         info: Optional[Mapping[str, Any]] = None) -> int:
        """``reward.add`` for a step of this session; returns the event's seq."""
        return await self.client.add_reward(self.id, step_id, reward, source, info)


def _params(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}
