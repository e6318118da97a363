"""The live server the conformance tests run against.

run_tests.sh starts ``nextstate serve`` and passes its address and token in
``NEXTSTATE_URL`` and ``NEXTSTATE_TOKEN``; without them the live tests skip
and say so.
"""

from __future__ import annotations

import os
import unittest
import uuid
from typing import Any, Optional

from nextstate import Client, ReconnectPolicy, Session, observation_text, text_action

URL = os.environ.get("NEXTSTATE_URL", "")
TOKEN = os.environ.get("NEXTSTATE_TOKEN") or None
FAST = ReconnectPolicy(initial_backoff=0.02, max_backoff=0.2, max_attempts=50)
WAIT = 30.0  # seconds a test waits for something that should come


class LiveTest(unittest.IsolatedAsyncioTestCase):
    """A test with a connected client ``self.c`` and a fresh run name
    ``self.run_id`` (so that run filters see this test's data only)."""

    async def asyncSetUp(self) -> None:
        if not URL:
            self.skipTest("no live server: run clients/python/run_tests.sh, which starts one "
                          "(or set NEXTSTATE_URL and NEXTSTATE_TOKEN)")
        self.c = await self.client()
        self.run_id = f"py-{self.id().rsplit('.', 1)[-1]}-{uuid.uuid4().hex[:8]}"

    async def client(self, **kw: Any) -> Client:
        """Another connected client, closed at the end of the test."""
        kw.setdefault("reconnect", FAST)
        c = await Client(URL, token=TOKEN, **kw).connect()
        self.addAsyncCleanup(c.close)
        return c


async def play_guess(s: Session, low: int = 1, high: int = 100, turn: bool = False) -> list:
    """Binary search on a guess-v1 session until the episode ends; returns
    the step results. With ``turn`` each step carries a policy turn with
    token ids and log-probs."""
    results = []
    while True:
        g = (low + high) // 2
        t: Optional[dict[str, Any]] = None
        if turn:
            t = {"messages": [{"role": "user", "content": f"guess in [{low}, {high}]"}], "response": str(g),
                 "prompt_ids": [100, low, high], "response_ids": [200 + g % 50], "logprobs": [-0.5],
                 "model": "test-policy"}
        r = await s.step(text_action(str(g)), turn=t)
        results.append(r)
        obs = observation_text(r.observation)
        if r.done:
            return results
        if obs == "higher":
            low = g + 1
        elif obs == "lower":
            high = g - 1
        else:
            raise AssertionError(f"unexpected guess-v1 observation {obs!r}")
