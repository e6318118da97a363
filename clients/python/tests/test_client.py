"""Conformance of the Python client against a live nextstate server
(docs/protocol.md): methods, errors, subscriptions, resuming."""

from __future__ import annotations

import asyncio
import json
import socket

import nextstate as ns
from nextstate import text_action, tool_call_action

from .live import TOKEN, URL, WAIT, LiveTest, play_guess


class InfoTest(LiveTest):
    async def test_server_info(self) -> None:
        info = await self.c.server_info()
        self.assertEqual(info["name"], "nextstate")
        self.assertEqual(info["protocol"], ns.PROTOCOL)
        self.assertIn("echo-v1", info["envs"])
        self.assertIn("guess-v1", info["envs"])
        self.assertEqual(info["max_frame_bytes"], 4 << 20)
        self.assertGreaterEqual(info["max_sessions"], 1)

    async def test_env_list_describe_tasks(self) -> None:
        envs = {e["name"]: e for e in await self.c.envs()}
        self.assertIn("guess-v1", envs)
        self.assertGreaterEqual(envs["guess-v1"]["tasks"], 3)
        spec = await self.c.describe("guess-v1")
        self.assertEqual(spec["name"], "guess-v1")
        self.assertIn("parts", spec["action_schema"]["properties"])
        self.assertIn("text", spec["part_schemas"])
        self.assertTrue(all("verifier" not in t for t in spec["tasks"]))
        tasks = await self.c.tasks(env="guess-v1", split="test")
        self.assertEqual([t["id"] for t in tasks], ["guess-1-50"])
        self.assertEqual(tasks[0]["data"], {"low": 1, "high": 50})
        with self.assertRaises(ns.UnknownEnvError) as cm:
            await self.c.describe("nope-v1")
        self.assertEqual(cm.exception.code, -32002)
        self.assertIn("guess-v1", cm.exception.accepted)

    async def test_unknown_method_and_bad_params(self) -> None:
        with self.assertRaises(ns.MethodNotFoundError) as cm:
            await self.c.call("session.fly")
        self.assertIn("session.step", cm.exception.accepted)
        with self.assertRaises(ns.InvalidParamsError) as cm2:
            await self.c.call("session.step", {"session": "s_0", "stepid": "x", "action": text_action("1")})
        self.assertEqual(cm2.exception.code, -32602)

    async def test_wrong_token(self) -> None:
        if TOKEN is None:
            self.skipTest("the server runs without a token")
        with self.assertRaises(ns.UnauthorizedError) as cm:
            await ns.Client(URL, token="wrong-" + TOKEN, reconnect=None).connect()
        self.assertEqual(cm.exception.code, -32010)


class SessionTest(LiveTest):
    async def test_echo_create_step_close(self) -> None:
        s, first = await self.c.create(task_id="echo-smoke", run=self.run_id, labels={"policy": "test"})
        self.assertTrue(s.id.startswith("s_"))
        self.assertEqual(first.episode, 1)
        self.assertEqual(first.task, "echo-smoke")
        self.assertEqual(first.text, "Say anything; say /done to finish.")
        r = await s.step(text_action("hello", "world"))
        self.assertEqual(r.observation, {"parts": [{"type": "text", "text": "hello"}, {"type": "text", "text": "world"}]})
        self.assertEqual((r.step, r.reward, r.terminated, r.truncated, r.replayed), (1, 0.0, False, False, False))
        self.assertTrue(r.step_id.startswith(s.id))
        self.assertGreater(r.seq, first.seq)
        r = await s.step(text_action("/done"))
        self.assertTrue(r.terminated)
        await s.close()
        await s.close()  # idempotent
        with self.assertRaises(ns.UnknownSessionError) as cm:
            await s.step(text_action("again"))
        self.assertEqual(cm.exception.code, -32001)
        self.assertEqual(cm.exception.session, s.id)
        self.assertTrue(cm.exception.step_id.startswith(s.id))
        res = await s.resume(0)
        self.assertFalse(res.live)
        self.assertEqual([e["type"] for e in res.events], ["session.created", "reset", "step", "step", "session.closed"])
        self.assertEqual(res.events[0]["labels"], {"policy": "test"})

    async def test_guess_verifier_reward(self) -> None:
        s, first = await self.c.create(task_id="guess-1-100", seed=7, run=self.run_id)
        self.assertEqual(first.info, {"low": 1, "high": 100})
        self.assertEqual(first.limits["max_steps"], 10)
        results = await play_guess(s)
        last = results[-1]
        self.assertEqual(last.text, "correct")
        self.assertTrue(last.terminated)
        self.assertEqual(last.reward, 1.0)
        self.assertEqual(last.info.get("reward_source"), "verifier")
        self.assertNotIn("verifier", last.info, "the verifier's details never reach the agent")
        self.assertTrue(all(r.reward == 0.0 for r in results[:-1]))
        with self.assertRaises(ns.EpisodeOverError) as cm:
            await s.step(text_action("49"))
        self.assertEqual(cm.exception.code, -32007)
        again = await s.reset(seed=8)
        self.assertEqual(again.episode, 2)
        events = (await s.resume(last.seq - 1)).events
        self.assertEqual(events[0]["info"].get("reward_source"), "verifier")
        self.assertNotIn("verifier", events[0]["info"], "a resumed step carries no verifier details (Event.Public)")
        self.assertNotIn("\"secret\"", json.dumps(events), "the secret never comes back to a client")
        await s.close()

    async def test_bad_action(self) -> None:
        s, _ = await self.c.create(task_id="guess-1-100", run=self.run_id)
        with self.assertRaises(ns.BadActionError) as cm:
            await s.step(text_action("50", "51"), step_id="two-parts")
        e = cm.exception
        self.assertEqual(e.code, -32004)
        self.assertEqual(e.step_id, "two-parts")
        self.assertTrue(any("maxItems" in p for p in e.problems), e.problems)
        with self.assertRaises(ns.BadActionError):
            await s.step(tool_call_action("guess", {"n": 50}))
        r = await s.step(text_action("50"))
        self.assertEqual(r.step, 1, "a rejected action consumes no step")
        refused = [e for e in (await s.resume(0)).events if e["type"] == "step.refused"]
        self.assertEqual([(e["step"], e["failure"]["reason"]) for e in refused], [(1, "bad_action"), (1, "bad_action")],
                         "each refusal is recorded, numbered as the step it would have been")
        self.assertEqual(refused[0]["step_id"], "two-parts")
        await s.close()

    async def test_unknown_session_and_task(self) -> None:
        with self.assertRaises(ns.UnknownSessionError) as cm:
            await self.c.attach("s_000000000000000000000000").step(text_action("1"), step_id="x-1")
        self.assertEqual((cm.exception.code, cm.exception.step_id), (-32001, "x-1"))
        with self.assertRaises(ns.UnknownTaskError):
            await self.c.create(task_id="no-such-task")
        with self.assertRaises(ns.BadRequestError):
            await self.c.create(run=self.run_id)

    async def test_params_that_are_not_json(self) -> None:
        with self.assertRaisesRegex(ValueError, "reward.add: params are not JSON"):
            await self.c.add_reward("s_0", "st-1", float("nan"), "human")
        with self.assertRaisesRegex(ValueError, "session.step: params are not JSON"):
            await self.c.attach("s_0").step({"parts": [{"type": "text", "text": object()}]})
        self.assertEqual((await self.c.server_info())["name"], "nextstate", "the connection is fine")

    async def test_reward_add(self) -> None:
        s, _ = await self.c.create(task_id="echo-smoke", run=self.run_id)
        r = await s.step(text_action("hi"), step_id="st-1")
        seq = await s.add_reward("st-1", 0.25, "judge:prm", {"vote": "good"})
        self.assertGreater(seq, r.seq)
        ev = (await s.resume(r.seq)).events
        self.assertEqual([(e["type"], e["step_id"], e["reward"], e["source"]) for e in ev],
                         [("reward", "st-1", 0.25, "judge:prm")])
        self.assertEqual(ev[0]["info"], {"vote": "good"})
        self.assertEqual(ev[0]["run"], self.run_id)
        with self.assertRaises(ns.BadRequestError):
            await s.add_reward("never-sent", 1.0, "human")
        with self.assertRaises(ns.InvalidParamsError):
            await self.c.call("reward.add", {"session": s.id, "step_id": "st-1", "source": "human"})
        await s.close()

    async def test_many_sessions_on_one_connection(self) -> None:
        sessions = [(await self.c.create(task_id="echo-smoke", run=self.run_id))[0] for _ in range(20)]

        async def talk(i: int, s: ns.Session) -> list[str]:
            return [(await s.step(text_action(f"{i}-{k}"))).text for k in range(5)]

        got = await asyncio.gather(*(talk(i, s) for i, s in enumerate(sessions)))
        self.assertEqual(got, [[f"{i}-{k}" for k in range(5)] for i in range(20)])
        await asyncio.gather(*(s.close() for s in sessions))


class SubscriptionTest(LiveTest):
    async def test_events_in_order(self) -> None:
        sub = await self.c.subscribe(run=self.run_id, types=["step", "reward"], after_seq=-1)
        s, _ = await self.c.create(task_id="echo-smoke", run=self.run_id)
        await s.step(text_action("a"), step_id="a")
        await s.step(text_action("b"), step_id="b")
        await s.add_reward("a", 1.0, "human")
        got = [await sub.next(WAIT) for _ in range(3)]
        self.assertEqual([(e["type"], e["step_id"]) for e in got], [("step", "a"), ("step", "b"), ("reward", "a")])
        self.assertEqual([e["seq"] for e in got], sorted(e["seq"] for e in got))
        await sub.close()
        with self.assertRaises(StopAsyncIteration):
            await sub.next(WAIT)
        await s.close()

    async def test_replay_from_after_seq(self) -> None:
        s, first = await self.c.create(task_id="echo-smoke", run=self.run_id)
        await s.step(text_action("x"))
        sub = await self.c.subscribe(session=s.id, after_seq=0)
        got = [(await sub.next(WAIT))["type"] for _ in range(3)]
        self.assertEqual(got, ["session.created", "reset", "step"])
        await sub.close()
        await s.close()

    async def test_reader_behind_the_buffer(self) -> None:
        c = await self.client(event_buffer=4)
        s, _ = await c.create(task_id="echo-smoke", run=self.run_id)
        for i in range(30):
            await s.step(text_action(str(i)))
        sub = await c.subscribe(session=s.id, after_seq=0)
        await asyncio.sleep(0.2)  # let the buffer overflow: the client resubscribes later
        got = [await sub.next(WAIT) for _ in range(32)]
        self.assertEqual([e["type"] for e in got[:2]], ["session.created", "reset"])
        self.assertEqual([e["observation"]["parts"][0]["text"] for e in got[2:]], [str(i) for i in range(30)],
                         "every event once, in order")
        self.assertEqual([e["seq"] for e in got], sorted({e["seq"] for e in got}))
        await sub.close()
        await s.close()

    async def test_bad_subscription(self) -> None:
        with self.assertRaises(ns.InvalidParamsError) as cm:
            await self.c.subscribe(types=["nope"])
        self.assertIn("step", cm.exception.accepted)
        with self.assertRaises(ns.UnknownSubscriptionError):
            await self.c.unsubscribe("sub_999")


class ResumeTest(LiveTest):
    async def test_dropped_answer_is_replayed(self) -> None:
        s, _ = await self.c.create(task_id="echo-smoke", run=self.run_id)
        sub = await self.c.subscribe(session=s.id, types=["step"], after_seq=0)
        self.c._drop_response = "session.step"  # lose the answer with the connection
        r = await s.step(text_action("once"))
        self.assertTrue(r.replayed, "the client sent the step again with its id; the server answered from its record")
        self.assertEqual(r.text, "once")
        # Another client, as after a restart: the same id is answered, not run again.
        other = await self.client()
        r2 = await other.attach(s.id).step(text_action("once"), step_id=r.step_id)
        self.assertTrue(r2.replayed)
        self.assertEqual((r2.seq, r2.step), (r.seq, r.step))
        with self.assertRaises(ns.StepIDReusedError):
            await other.attach(s.id).step(text_action("twice"), step_id=r.step_id)
        steps = [e for e in (await s.resume(0)).events if e["type"] == "step"]
        self.assertEqual(len(steps), 1, "the action ran once")
        # The subscription came through the drop without gaps or duplicates.
        await s.step(text_action("after"))
        got = [(await sub.next(WAIT))["observation"]["parts"][0]["text"] for _ in range(2)]
        self.assertEqual(got, ["once", "after"])
        await sub.close()
        await s.close()
        r3 = await other.attach(s.id).step(text_action("once"), step_id=r.step_id)
        self.assertTrue(r3.replayed, "a recorded step id is answered after the session closed, too")

    async def test_unsafe_call_is_not_resent(self) -> None:
        s, first = await self.c.create(task_id="echo-smoke", run=self.run_id)
        self.c._drop_response = "session.reset"
        with self.assertRaises(ns.ConnectionLostError) as cm:
            await s.reset(seed=3)
        self.assertTrue(cm.exception.outcome_unknown)
        res = await s.resume()  # what this handle has not seen: the reset happened
        self.assertEqual([(e["type"], e["episode"], e["seed"]) for e in res.events], [("reset", 2, 3)])
        self.assertTrue(res.live)
        await s.close()

    async def test_calls_wait_for_the_reconnect(self) -> None:
        s, _ = await self.c.create(task_id="echo-smoke", run=self.run_id)
        self.c._drop_connection()
        info, r = await asyncio.gather(self.c.server_info(), s.step(text_action("x")))
        self.assertEqual(info["protocol"], ns.PROTOCOL)
        self.assertEqual(r.text, "x")
        await s.close()

    async def test_give_up_and_close_while_redialing(self) -> None:
        with socket.socket() as sock:  # a port nobody listens on: the server "went away"
            sock.bind(("127.0.0.1", 0))
            gone = f"ws://127.0.0.1:{sock.getsockname()[1]}/v1/ws"
        c = await self.client(reconnect=ns.ReconnectPolicy(initial_backoff=0.01, max_backoff=0.02, max_attempts=3))
        c.url = gone
        c._drop_connection()
        with self.assertRaisesRegex(ns.ConnectionLostError, "gave up reconnecting .* after 3 attempts"):
            await c.server_info()
        with self.assertRaisesRegex(ns.ConnectionLostError, "gave up"):
            await c.envs()
        c2 = await self.client(reconnect=ns.ReconnectPolicy(initial_backoff=60, max_backoff=60))
        c2.url = gone
        c2._drop_connection()
        waiting = asyncio.ensure_future(c2.server_info())
        await asyncio.sleep(0.05)
        self.assertFalse(waiting.done(), "a call waits for the reconnect")
        await c2.close()  # does not wait for the backoff
        with self.assertRaises(ns.ClientClosedError):
            await waiting

    async def test_without_reconnect(self) -> None:
        c = await self.client(reconnect=None)
        c._drop_connection()
        with self.assertRaises(ns.ConnectionLostError):
            await c.server_info()
        with self.assertRaises(ns.ConnectionLostError):
            await c.envs()
        await c.close()
        with self.assertRaises(ns.ClientClosedError):
            await c.envs()
