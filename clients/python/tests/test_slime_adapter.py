"""The slime adapter's grouping and conversion, on hand-made samples (no
server, no slime)."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import types
import unittest
from typing import Any, Optional

from nextstate import slime_adapter as sa
from nextstate.groups import GroupAssembler
from nextstate.samples import SampleRecord


def sample(group: int, index: int, step: int = 1, *, reward: float = 1.0, status: str = "completed",
           remove: bool = False, tokens: Optional[list[int]] = None, rlen: int = 2, turns: Optional[int] = None,
           hint: Optional[str] = None) -> dict[str, Any]:
    """A sample as rl.BuildSamples writes it (docs/formats.md)."""
    toks = [10, 11, 12, 20 + step, 30 + step] if tokens is None else tokens
    md: dict[str, Any] = {
        "step_wise": {"step_scores": [0.5], "step_scores_with_outcome": [1.5], "step_indices": [step - 1],
                      "step_token_spans": [[0, rlen]] if toks else [], "outcome_reward": reward},
        "nextstate": {"session": f"s_{index}", "episode": 1, "step": step, "step_id": f"st-{step}",
                      "env": "guess-v1", "task": f"t{group}", "judged": True},
    }
    if turns is not None:
        md["nextstate"]["turns"] = turns
    if hint:
        md["opd"] = {"hint": hint, "teacher_prompt": [{"role": "user", "content": "q\n\n[Hint from hindsight]\n" + hint}]}
    return {"group_index": group, "index": index, "prompt": [{"role": "user", "content": "q"}],
            "response": f"answer {step}", "tokens": toks, "response_length": rlen if toks else 0,
            "loss_mask": ([0] * rlen if remove else [1] * rlen) if toks else [],
            "rollout_log_probs": [-0.1] * rlen if toks else None, "reward": reward, "status": status,
            "remove_sample": remove, "metadata": md}


class FakeTokenizer:
    """Enough of a Hugging Face tokenizer for text-only turns."""

    def apply_chat_template(self, messages: list[dict[str, Any]], tokenize: bool, add_generation_prompt: bool) -> list[int]:
        assert tokenize and add_generation_prompt
        return [1] + [ord(c) for m in messages for c in m["content"]] + [2]

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        assert not add_special_tokens
        return [ord(c) for c in text]


@dataclasses.dataclass
class SlimeLikeSample:
    """The shape of slime's Sample: a dataclass with a Status enum."""

    class Status(enum.Enum):
        PENDING = "pending"
        COMPLETED = "completed"
        TRUNCATED = "truncated"
        ABORTED = "aborted"
        FAILED = "failed"

    group_index: Optional[int] = None
    index: Optional[int] = None
    rollout_id: Optional[int] = None
    prompt: Any = ""
    tokens: list = dataclasses.field(default_factory=list)
    response: str = ""
    response_length: int = 0
    reward: Any = None
    loss_mask: Optional[list] = None
    rollout_log_probs: Optional[list] = None
    remove_sample: bool = False
    status: "SlimeLikeSample.Status" = Status.PENDING
    metadata: dict = dataclasses.field(default_factory=dict)


class ConvertTest(unittest.TestCase):
    def test_fields(self) -> None:
        s = sample(3, 7, step=2, hint="Name the file once.")
        out = sa.convert_sample(s, 41, sample_cls=sa.PlainSample)
        self.assertEqual((out.group_index, out.index, out.rollout_id), (3, 7, 7))
        self.assertEqual(out.tokens, [10, 11, 12, 22, 32])
        self.assertEqual(out.response_length, 2)
        self.assertEqual(out.loss_mask, [1, 1])
        self.assertEqual(out.rollout_log_probs, [-0.1, -0.1])
        self.assertEqual(out.reward, 1.0)
        self.assertEqual(out.status, "completed")
        self.assertEqual(out.prompt, [{"role": "user", "content": "q"}])
        self.assertEqual(out.metadata["nextstate"]["offset"], 41)
        self.assertEqual(out.metadata["step_wise"]["step_indices"], [1])
        self.assertEqual(out.metadata["opd"]["hint"], "Name the file once.")
        self.assertNotIn("offset", s["metadata"]["nextstate"], "the input sample is not changed")

    def test_status_enum_of_the_sample_class(self) -> None:
        out = sa.convert_sample(sample(0, 1, status="truncated"), 1, sample_cls=SlimeLikeSample)
        self.assertIs(out.status, SlimeLikeSample.Status.TRUNCATED)
        self.assertIsInstance(out, SlimeLikeSample)

    def test_reward_key(self) -> None:
        out = sa.convert_sample(sample(0, 1, reward=0.25), 1, reward_key="nextstate", sample_cls=sa.PlainSample)
        self.assertEqual(out.reward, {"nextstate": 0.25, "outcome_reward": 0.25})

    def test_text_only_turn(self) -> None:
        s = sample(0, 1, tokens=[])
        with self.assertRaisesRegex(ValueError, "no token ids"):
            sa.convert_sample(s, 5, sample_cls=sa.PlainSample)
        out = sa.convert_sample(s, 5, tokenizer=FakeTokenizer(), sample_cls=sa.PlainSample)
        resp = [ord(c) for c in "answer 1"]
        self.assertEqual(out.tokens, [1, ord("q"), 2] + resp)
        self.assertEqual(out.response_length, len(resp))
        self.assertEqual(out.loss_mask, [1] * len(resp))
        self.assertIsNone(out.rollout_log_probs)

    def test_bad_samples(self) -> None:
        s = sample(0, 1)
        s["loss_mask"] = [1]
        with self.assertRaisesRegex(ValueError, "offset 9: 1 loss_mask entries for 2 response tokens"):
            sa.convert_sample(s, 9, sample_cls=sa.PlainSample)
        s = sample(0, 1, status="exploded")
        with self.assertRaisesRegex(ValueError, "status 'exploded', want one of"):
            sa.convert_sample(s, 9, sample_cls=sa.PlainSample)
        s = sample(0, 1)
        s["response_length"] = 9
        with self.assertRaisesRegex(ValueError, "response_length 9 is outside the 5 tokens"):
            sa.convert_sample(s, 9, sample_cls=sa.PlainSample)
        s = sample(0, 1)
        s["rollout_log_probs"] = [-1.0]
        with self.assertRaisesRegex(ValueError, "1 rollout_log_probs for 2 response tokens"):
            sa.convert_sample(s, 9, sample_cls=sa.PlainSample)


class AssemblerTest(unittest.TestCase):
    def feed(self, g: GroupAssembler, samples: list[dict[str, Any]], start: int = 1) -> int:
        for i, s in enumerate(samples):
            g.add(start + i, s)
        return start + len(samples)

    def test_groups_of_multi_turn_trajectories(self) -> None:
        g = GroupAssembler(2)
        # group 0: trajectories 1 (2 turns) and 2 (3 turns); group 1: trajectory 3.
        nxt = self.feed(g, [sample(0, 1, 1), sample(0, 1, 2), sample(1, 3, 1), sample(0, 2, 1), sample(0, 2, 2)])
        self.assertEqual(g.ready, 0, "trajectory 2 may still have turns on the way")
        nxt = self.feed(g, [sample(0, 2, 3)], nxt)
        g.settle()
        self.assertEqual(g.ready, 1)
        self.assertEqual(g.held, 6)
        [group] = g.take(5)
        self.assertEqual([t.index for t in group], [1, 2])
        self.assertEqual([len(t.samples) for t in group], [2, 3])
        self.assertEqual(group[1].offsets, [4, 5, 6])
        self.assertEqual(g.held, 1)
        self.assertEqual(g.pending_groups, 1)
        self.assertEqual(g.take(1), [])

    def test_turns_complete_a_trajectory(self) -> None:
        g = GroupAssembler(1)
        g.add(1, sample(0, 1, 1, turns=2))
        self.assertEqual(g.ready, 0)
        g.add(2, sample(0, 1, 2, turns=2))
        self.assertEqual(g.ready, 1, "the last of its turns completes it without waiting")

    def test_masked_trajectories_are_dropped(self) -> None:
        g = GroupAssembler(2)
        nxt = self.feed(g, [sample(0, 1), sample(0, 2, status="aborted", remove=True), sample(0, 3, 1),
                            sample(0, 3, 2, remove=True)])
        g.settle()
        self.assertEqual(g.ready, 0, "only one valid trajectory so far")
        self.assertEqual(sorted(g.take_dropped()), [2, 3, 4])
        self.assertEqual(g.dropped_trajectories, 2)
        self.feed(g, [sample(0, 4)], nxt)  # a rerun of the failed trial
        g.settle()
        [group] = g.take(1)
        self.assertEqual([t.index for t in group], [1, 4])
        self.assertEqual(g.take_dropped(), [])

    def test_order_repeats_and_extras(self) -> None:
        g = GroupAssembler(2)
        self.feed(g, [sample(5, 1), sample(6, 2), sample(6, 3), sample(5, 4), sample(5, 5), sample(5, 6)])
        g.add(3, sample(6, 3))  # sent again after a resubscribe: ignored
        g.settle()
        self.assertEqual(g.ready, 3)
        groups = g.take(2)
        self.assertEqual([[t.index for t in grp] for grp in groups], [[2, 3], [1, 4]],
                         "group 6 was ready first; each group's oldest trajectories go first")
        self.assertEqual([[t.index for t in grp] for grp in g.take(2)], [[5, 6]])

    def test_bad_input(self) -> None:
        g = GroupAssembler(1)
        with self.assertRaisesRegex(ValueError, "'index' is None, want an integer"):
            g.add(1, {"group_index": 0})
        with self.assertRaisesRegex(ValueError, "want a JSON object"):
            g.add(1, ["not", "a", "sample"])  # type: ignore[arg-type]
        g.add(1, sample(0, 1))
        g.add(2, sample(0, 2))
        with self.assertRaisesRegex(ValueError, "consecutive offsets"):
            g.add(3, sample(0, 1, 2))
        with self.assertRaisesRegex(ValueError, "want 1 or more"):
            GroupAssembler(0)


class LayoutTest(unittest.TestCase):
    def groups(self, turns: int) -> list:
        g = GroupAssembler(2)
        off = 1
        for idx in (1, 2):
            for step in range(1, turns + 1):
                g.add(off, sample(0, idx, step))
                off += 1
        g.settle()
        return g.take(1)

    def test_layouts(self) -> None:
        flat = sa.convert_groups(self.groups(1), sample_cls=sa.PlainSample)
        self.assertEqual(len(flat), 1)
        self.assertEqual([s.index for s in flat[0]], [1, 2], "auto: one turn each gives slime's list[list[Sample]]")
        nested = sa.convert_groups(self.groups(2), sample_cls=sa.PlainSample)
        self.assertEqual([[s.metadata["nextstate"]["step"] for s in t] for t in nested[0]], [[1, 2], [1, 2]])
        self.assertEqual({s.rollout_id for s in nested[0][1]}, {2}, "the turns of one rollout share rollout_id")
        flat2 = sa.convert_groups(self.groups(2), layout="flat", sample_cls=sa.PlainSample)
        self.assertEqual([s.index for s in flat2[0]], [1, 1, 2, 2])
        with self.assertRaisesRegex(ValueError, "layout 'deep'"):
            sa.convert_groups([], layout="deep")


class SettingsTest(unittest.TestCase):
    def test_sources(self) -> None:
        args = types.SimpleNamespace(nextstate_run="from-args", nextstate_window=None)
        env = {"NEXTSTATE_RUN": "from-env", "NEXTSTATE_SAMPLES_WINDOW": "256", "NEXTSTATE_URL": "ws://h:1",
               "NEXTSTATE_SAMPLES_SETTLE": "0.5", "NEXTSTATE_SLIME_LAYOUT": "flat"}
        s = sa.Settings.from_args(args, env)
        self.assertEqual((s.run, s.window, s.url, s.settle, s.layout), ("from-args", 256, "ws://h:1", 0.5, "flat"))
        self.assertEqual(sa.Settings.from_args(types.SimpleNamespace(), {}).window, 1024)
        with self.assertRaisesRegex(ValueError, "NEXTSTATE_SAMPLES_WINDOW='many': want a int"):
            sa.Settings.from_args(types.SimpleNamespace(), {"NEXTSTATE_SAMPLES_WINDOW": "many"})
        with self.assertRaisesRegex(ValueError, "NEXTSTATE_SLIME_LAYOUT='deep'"):
            sa.Settings.from_args(types.SimpleNamespace(), {"NEXTSTATE_SLIME_LAYOUT": "deep"})


class FakeStream:
    """A SampleStream's consumer side, fed from a list, that records what
    the batcher releases and commits."""

    def __init__(self, records: list[SampleRecord], window: int = 64) -> None:
        self.records = list(records)
        self.window = window
        self.released: list[int] = []
        self.committed_offsets: list[int] = []
        self.delivered: list[int] = []

    async def next(self, timeout: Optional[float] = None) -> SampleRecord:
        if not self.records:
            raise asyncio.TimeoutError
        r = self.records.pop(0)
        self.delivered.append(r.offset)
        return r

    def release(self, offset: int) -> None:
        self.released.append(offset)

    def commit(self, offsets) -> int:
        self.committed_offsets.extend(offsets)
        return max(self.committed_offsets, default=0)

    @property
    def held(self) -> int:
        return len(set(self.delivered) - set(self.committed_offsets))

    @property
    def unacknowledged(self) -> int:
        return len(set(self.delivered) - set(self.committed_offsets) - set(self.released))


class BatcherTest(unittest.IsolatedAsyncioTestCase):
    async def test_collect_settles_and_commits_after_conversion(self) -> None:
        recs = [SampleRecord(1, sample(0, 1)), SampleRecord(2, sample(0, 2, remove=True, status="aborted")),
                SampleRecord(3, sample(0, 3, 1)), SampleRecord(4, sample(0, 3, 2))]
        st = FakeStream(recs)
        b = sa.StreamBatcher(st, 2, settle=0.01)  # type: ignore[arg-type]
        groups = await b.collect(1)
        self.assertEqual([[t.index for t in g] for g in groups], [[1, 3]])
        self.assertEqual(st.released, [1, 2, 3, 4], "the window stays open while groups form")
        self.assertEqual(st.committed_offsets, [2], "only the masked trajectory is processed before conversion")
        converted = sa.convert_groups(groups, sample_cls=sa.PlainSample)
        self.assertEqual(len(converted[0]), 2)
        b.done(groups)
        self.assertEqual(sorted(st.committed_offsets), [1, 2, 3, 4])

    async def test_timeout_says_what_is_held(self) -> None:
        st = FakeStream([SampleRecord(1, sample(0, 1))])
        b = sa.StreamBatcher(st, 2, settle=0.01)  # type: ignore[arg-type]
        with self.assertRaisesRegex(TimeoutError, r"want 1 groups of 2 trajectories; 0 ready, 1 incomplete, 1 samples"):
            await b.collect(1, timeout=0.05)

    async def test_full_buffer_and_window(self) -> None:
        # The buffer is full and the window holds unreleased samples: a quiet
        # stream says nothing about the open trajectory, and nothing more can
        # come in, so the batcher says so instead of waiting.
        st = FakeStream([SampleRecord(1, sample(0, 1, 1)), SampleRecord(2, sample(0, 1, 2))], window=2)
        b = sa.StreamBatcher(st, 1, settle=0.01, max_buffer=1)  # type: ignore[arg-type]
        with self.assertRaisesRegex(RuntimeError, "buffer is full and holds no complete batch: want 1 groups"):
            await b.collect(1)
        self.assertEqual(b.groups.ready, 0, "the open trajectory was not taken as complete")
        self.assertEqual(st.released, [], "nothing released past the buffer")


if __name__ == "__main__":
    unittest.main()
