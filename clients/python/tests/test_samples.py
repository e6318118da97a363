"""The sample stream and the slime adapter against a live server: samples
in offset order, the window, acknowledging, resuming after a drop and after
a restart, the HTTP pull, and groups for slime."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
import types
import unittest.mock

import nextstate as ns
from nextstate import slime_adapter as sa
from nextstate.samples import SampleStream, fetch_samples, iter_samples_http, read_offset

from .live import TOKEN, URL, WAIT, LiveTest, play_guess
from .test_slime_adapter import END, FakeTokenizer, slime_args


class SamplesBase(LiveTest):
    """Helpers; a server without the samples stream fails every test."""

    async def asyncSetUp(self) -> None:
        await super().asyncSetUp()
        try:
            probe = await SampleStream.open(self.c, after_seq=-1, run=self.run_id, window=1)
        except ns.InvalidParamsError as e:
            self.fail(f"the server has no samples stream: {e}")
        await probe.close()

    async def play(self, seeds: list[int], task: str = "guess-1-100", turn: bool = True) -> list[list[ns.StepResult]]:
        """Plays one guess episode per seed in this test's run, each to its end."""
        out = []
        for seed in seeds:
            s, _ = await self.c.create(task_id=task, seed=seed, run=self.run_id)
            out.append(await play_guess(s, turn=turn))
            await s.close()
        return out

    async def stored(self, n: int) -> list[ns.SampleRecord]:
        """Waits until the run has n samples in the store (they are built
        off the step path, once a trajectory is complete) and returns them."""
        deadline = time.monotonic() + WAIT
        while True:
            recs = await asyncio.to_thread(
                lambda: list(iter_samples_http(URL, run=self.run_id, token=TOKEN, page=3)))
            if len(recs) >= n or time.monotonic() > deadline:
                self.assertEqual(len(recs), n, "samples stored for the run")
                return recs
            await asyncio.sleep(0.05)


class SamplesTest(SamplesBase):
    async def test_samples_in_order(self) -> None:
        episodes = await self.play([7, 8])
        total = sum(len(e) for e in episodes)
        stream = await SampleStream.open(self.c, run=self.run_id, window=64)
        recs = [await stream.next(WAIT) for _ in range(total)]
        offsets = [r.offset for r in recs]
        self.assertEqual(offsets, sorted(set(offsets)), "offsets strictly increase")
        self.assertEqual(offsets, list(range(offsets[0], offsets[0] + total)), "a run's trajectories are consecutive")
        first = recs[0].sample
        self.assertEqual(first["tokens"][:3], [100, 1, 100], "prompt ids then response ids, from the turn")
        self.assertEqual((first["response_length"], first["loss_mask"], first["rollout_log_probs"]), (1, [1], [-0.5]))
        self.assertEqual(first["status"], "completed")
        self.assertEqual(first["reward"], 1.0, "the verifier's outcome, no judge")
        self.assertFalse(first["remove_sample"])
        self.assertEqual(first["metadata"]["nextstate"]["step"], 1)
        self.assertEqual(first["metadata"]["nextstate"]["task"], "guess-1-100")
        # One index per trajectory, one group for the task's trajectories in the run.
        by_traj: dict[int, list[int]] = {}
        for r in recs:
            by_traj.setdefault(r.sample["index"], []).append(r.sample["metadata"]["step_wise"]["step_indices"][0])
        self.assertEqual(list(by_traj.values()), [list(range(len(e))) for e in episodes])
        self.assertEqual(len({r.sample["group_index"] for r in recs}), 1)
        await stream.ack(offsets[-1])
        self.assertEqual(stream.committed, offsets[-1])
        await stream.close()

    async def test_text_only_samples(self) -> None:
        [episode] = await self.play([7], turn=False)
        recs = await self.stored(len(episode))
        first = recs[0].sample
        self.assertEqual((first["tokens"], first["response_length"], first["response"]), ([], 0, "50"))
        self.assertIn("Guess the secret integer", first["prompt"][0]["content"], "the context is built from the record")
        self.assertEqual([m["role"] for m in recs[1].sample["prompt"]], ["user", "assistant", "user"])
        with self.assertRaisesRegex(ValueError, "no token ids"):
            sa.convert_sample(first, recs[0].offset, sample_cls=sa.PlainSample)
        out = sa.convert_sample(first, recs[0].offset, tokenizer=FakeTokenizer(), sample_cls=sa.PlainSample)
        self.assertEqual(out.tokens[-3:], [ord("5"), ord("0"), END], "the reply, then the end of the turn")
        self.assertEqual((out.response_length, out.loss_mask, out.rollout_log_probs), (3, [1, 1, 1], None))

    async def test_window_holds_back_until_ack(self) -> None:
        [episode] = await self.play([7])
        self.assertGreaterEqual(len(episode), 4)
        await self.stored(len(episode))
        stream = await SampleStream.open(self.c, run=self.run_id, window=2)
        a, b = await stream.next(WAIT), await stream.next(WAIT)
        with self.assertRaises(asyncio.TimeoutError):
            await stream.next(1.0)  # two in flight: the server waits for an ack
        await stream.ack(a.offset)
        c = await stream.next(WAIT)
        self.assertEqual(c.offset, b.offset + 1)
        await stream.close()

    async def test_resume_after_dropped_connection(self) -> None:
        [episode] = await self.play([7])
        n = len(episode)
        await self.stored(n)
        stream = await SampleStream.open(self.c, run=self.run_id, window=2)
        a = await stream.next(WAIT)
        await stream.ack(a.offset)
        b = await stream.next(WAIT)  # delivered, not acknowledged when the connection drops
        self.c._drop_connection()
        rest = []
        for _ in range(n - 2):
            rest.append(await stream.next(WAIT))
            await stream.ack(rest[-1].offset)
        self.assertEqual([r.offset for r in rest], list(range(b.offset + 1, b.offset + n - 1)),
                         "after the reconnect the stream goes on with no gap and no repeat")
        self.assertEqual(stream.committed, rest[-1].offset)
        await stream.close()

    async def test_restart_from_state_file(self) -> None:
        [episode] = await self.play([7])
        recs = await self.stored(len(episode))
        with tempfile.TemporaryDirectory() as d:
            state = os.path.join(d, "offset")
            c1 = await self.client()
            s1 = await SampleStream.open(c1, run=self.run_id, state_file=state)
            for _ in range(2):
                r = await s1.next(WAIT)
            await s1.ack(r.offset)
            third = await s1.next(WAIT)  # seen, never processed: it comes again
            await c1.close()
            self.assertEqual(read_offset(state), recs[1].offset)
            c2 = await self.client()
            s2 = await SampleStream.open(c2, run=self.run_id, state_file=state)
            again = await s2.next(WAIT)
            self.assertEqual((again.offset, again.sample), (third.offset, third.sample))
            await s2.close()

    async def test_only_new_samples(self) -> None:
        [old] = await self.play([7])
        await self.stored(len(old))
        stream = await SampleStream.open(self.c, run=self.run_id, after_seq=-1)
        [new] = await self.play([9])
        got = [await stream.next(WAIT) for _ in range(len(new))]
        self.assertEqual({r.sample["metadata"]["nextstate"]["session"] for r in got}, {new[0].session})
        await stream.close()

    async def test_http_pull(self) -> None:
        [episode] = await self.play([7])
        recs = await self.stored(len(episode))
        page = await asyncio.to_thread(fetch_samples, URL, run=self.run_id, limit=2, token=TOKEN)
        self.assertEqual([x["offset"] for x in page["samples"]], [r.offset for r in recs[:2]])
        self.assertEqual(page["last_seq"], recs[1].offset)
        stream = await SampleStream.open(self.c, run=self.run_id)
        streamed = [await stream.next(WAIT) for _ in recs]
        self.assertEqual(streamed, recs, "the stream and the HTTP pull give the same samples")
        await stream.close()
        with self.assertRaises(ns.InvalidParamsError):
            await asyncio.to_thread(fetch_samples, URL, after_seq=-5, token=TOKEN)
        with self.assertRaises(ns.UnauthorizedError):
            await asyncio.to_thread(fetch_samples, URL, token="wrong")

    async def test_bad_parameters(self) -> None:
        with self.assertRaisesRegex(ValueError, "window 0: want 1 to 4096"):
            SampleStream(self.c, window=0)
        with self.assertRaises(ns.InvalidParamsError):
            await self.c.call("events.subscribe", {"stream": "samples", "window": 5000, "after_seq": 0})
        with self.assertRaises(ns.InvalidParamsError) as cm:
            await self.c.call("events.subscribe", {"stream": "rivers", "after_seq": 0})
        self.assertIn("samples", cm.exception.accepted)
        with self.assertRaises(ns.UnknownSubscriptionError):
            await self.c.call("samples.ack", {"subscription": "sub_999", "offset": 1})


class AdapterLiveTest(SamplesBase):
    async def test_stream_batcher_groups(self) -> None:
        episodes = await self.play([7, 8, 9])
        stream = await SampleStream.open(self.c, run=self.run_id, window=4)
        b = sa.StreamBatcher(stream, 3, settle=0.3)
        groups = await b.collect(1, timeout=WAIT)
        self.assertEqual([len(t.samples) for t in groups[0]], [len(e) for e in episodes])
        out = sa.convert_groups(groups, sample_cls=sa.PlainSample).samples
        self.assertEqual([[s.metadata["nextstate"]["step"] for s in t] for t in out[0]],
                         [list(range(1, len(e) + 1)) for e in episodes])
        self.assertEqual({s.rollout_id for s in out[0][0]}, {groups[0][0].index})
        committed = b.done(groups)
        self.assertEqual(committed, groups[0][-1].offsets[-1])
        await stream.close()

    async def test_generate_rollout(self) -> None:
        await self.play([7, 8, 9, 10])
        env = {"NEXTSTATE_URL": URL, "NEXTSTATE_TOKEN": TOKEN or "", "NEXTSTATE_RUN": self.run_id,
               "NEXTSTATE_SAMPLES_SETTLE": "0.3", "NEXTSTATE_ROLLOUT_TIMEOUT": str(WAIT)}
        args = types.SimpleNamespace(rollout_batch_size=2, n_samples_per_prompt=2)
        with unittest.mock.patch.dict(os.environ, env):
            try:
                out = await asyncio.to_thread(sa.generate_rollout, args, 0, None, False)
            finally:
                await asyncio.to_thread(sa.close)
        self.assertEqual(len(out), 2, "rollout_batch_size groups")
        self.assertEqual([len(g) for g in out], [2, 2], "n_samples_per_prompt trajectories each")
        samples = [s for g in out for t in g for s in t]
        self.assertTrue(all(isinstance(s, sa.PlainSample) for s in samples), "plain samples without slime")
        self.assertTrue(all(s.reward == 1.0 and s.status == "completed" for s in samples))
        self.assertEqual(len({s.index for s in samples}), 4)
        self.assertTrue(all(s.rollout_id == s.index and s.metadata["nextstate"]["advantage"] == 0.0 for s in samples),
                        "equal rewards: advantage 0")

    async def test_generate_rollout_refuses_slime_without_the_hook(self) -> None:
        args = slime_args(custom_reward_post_process_path=None)
        with self.assertRaisesRegex(ValueError, "custom-reward-post-process-path"):
            await asyncio.to_thread(sa.generate_rollout, args, 0, None, False)

    async def test_evaluation_with_k_above_1(self) -> None:
        # An eval run with 3 trajectories of one task; slime's
        # n_samples_per_eval_prompt is left at its default, 1.
        episodes = await self.play([7, 8, 9])
        env = {"NEXTSTATE_URL": URL, "NEXTSTATE_TOKEN": TOKEN or "", "NEXTSTATE_EVAL_RUN": self.run_id,
               "NEXTSTATE_SAMPLES_SETTLE": "0.3", "NEXTSTATE_ROLLOUT_TIMEOUT": str(WAIT)}
        args = slime_args(rollout_batch_size=1, n_samples_per_prompt=1, n_samples_per_eval_prompt=1)
        await self.stored(sum(len(e) for e in episodes))
        with unittest.mock.patch.dict(os.environ, env):
            try:
                out = await asyncio.to_thread(sa.generate_rollout, args, 0, None, True)
            finally:
                await asyncio.to_thread(sa.close)
        [(name, data)] = out.items()
        self.assertEqual(name, f"nextstate/{self.run_id}")
        self.assertEqual(data["rewards"], [1.0, 1.0, 1.0], "every trajectory of the eval run")
        self.assertEqual(data["truncated"], [False] * 3)
        self.assertEqual(len(data["samples"]), sum(len(e) for e in episodes))
