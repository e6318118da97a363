"""The slime adapter's grouping and conversion, on hand-made samples (no
server, no slime), checked against a model of upstream slime's contract
(tests/slime_model.py, written from slime's source)."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
import math
import types
import unittest
from typing import Any, Optional

from nextstate import opd
from nextstate import slime_adapter as sa
from nextstate.groups import GroupAssembler, Trajectory
from nextstate.samples import SampleRecord

from . import slime_model as slime
from .fake_teacher import FakeTeacher

END = 7  # FakeTokenizer's <|im_end|>


def sample(group: int, index: int, step: int = 1, *, reward: Any = 1.0, status: str = "completed",
           remove: bool = False, tokens: Optional[list[int]] = None, rlen: int = 2, turns: Optional[int] = None,
           hint: Optional[str] = None, text_only: bool = False) -> dict[str, Any]:
    """A sample as rl.BuildSamples writes it (docs/formats.md)."""
    toks = [] if text_only else [10, 11, 12, 20 + step, 30 + step] if tokens is None else tokens
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
    """Enough of a Hugging Face tokenizer for text-only turns and teacher
    contexts. Like transformers 5, apply_chat_template answers a dict
    unless return_dict=False."""

    unk_token_id = None
    eos_token_id = 3

    def apply_chat_template(self, messages: list[dict[str, Any]], tokenize: bool, add_generation_prompt: bool,
                            return_dict: bool = True) -> Any:
        assert tokenize and add_generation_prompt
        ids = [1] + [ord(c) for m in messages for c in m["content"]] + [2]
        return {"input_ids": ids, "attention_mask": [1] * len(ids)} if return_dict else ids

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        assert not add_special_tokens
        return [ord(c) for c in text]

    def convert_tokens_to_ids(self, token: str) -> Optional[int]:
        return {"<|im_end|>": END}.get(token)


@dataclasses.dataclass
class ForkSample:
    """A Sample class without rollout_id and teacher_log_probs, as an older
    slime (OpenClaw-RL's fork) may have."""

    class Status(enum.Enum):
        COMPLETED = "completed"
        TRUNCATED = "truncated"

    group_index: Optional[int] = None
    index: Optional[int] = None
    prompt: Any = ""
    tokens: list = dataclasses.field(default_factory=list)
    response: str = ""
    response_length: int = 0
    reward: Any = None
    loss_mask: Optional[list] = None
    rollout_log_probs: Optional[list] = None
    remove_sample: bool = False
    status: Any = None
    metadata: dict = dataclasses.field(default_factory=dict)


def slime_args(**kw: Any) -> types.SimpleNamespace:
    """slime's args as its parser defaults them, for the parts the adapter and the model read."""
    a = dict(advantage_estimator="grpo", rewards_normalization=True, grpo_std_normalization=True, reward_key=None,
             n_samples_per_prompt=2, rollout_batch_size=3, global_batch_size=6,
             custom_reward_post_process_path=sa.REWARD_HOOK)
    a.update(kw)
    return types.SimpleNamespace(**a)


def assemble(samples: list[dict[str, Any]], n: int, **kw: Any) -> GroupAssembler:
    g = GroupAssembler(n, **kw)
    for off, s in enumerate(samples, 1):
        g.add(off, s)
    g.settle()
    return g


def trajectory(group: int, index: int, turns: int, reward: float, **kw: Any) -> list[dict[str, Any]]:
    return [sample(group, index, step, reward=reward, **kw) for step in range(1, turns + 1)]


class ConvertTest(unittest.TestCase):
    def test_fields(self) -> None:
        s = sample(3, 7, step=2, hint="Name the file once.")
        out = sa.convert_sample(s, 41, sample_cls=sa.PlainSample)
        self.assertEqual((out.group_index, out.index, out.rollout_id), (3, 7, 7))
        self.assertEqual(out.tokens, [10, 11, 12, 22, 32])
        self.assertEqual(out.response_length, 2)
        self.assertEqual(out.loss_mask, [1, 1])
        self.assertEqual(out.rollout_log_probs, [-0.1, -0.1])
        self.assertIsNone(out.teacher_log_probs)
        self.assertEqual(out.reward, 1.0)
        self.assertEqual(out.status, "completed")
        self.assertEqual(out.prompt, [{"role": "user", "content": "q"}])
        self.assertEqual(out.metadata["nextstate"]["offset"], 41)
        self.assertEqual(out.metadata["step_wise"]["step_indices"], [1])
        self.assertEqual(out.metadata["opd"]["hint"], "Name the file once.")
        self.assertNotIn("offset", s["metadata"]["nextstate"], "the input sample is not changed")
        self.assertIsNone(sa.convert_sample(s, 41, sample_cls=sa.PlainSample, rollout_id=False).rollout_id)

    def test_reward_is_a_float(self) -> None:
        # The server's JSON may say 1 (an int) where slime declares a float.
        out = sa.convert_sample(json.loads('{"group_index":0,"index":1,"tokens":[1,2],"response_length":1,'
                                           '"reward":1,"status":"completed"}'), 1, sample_cls=sa.PlainSample)
        self.assertIs(type(out.reward), float)
        with self.assertRaisesRegex(ValueError, "offset 2: reward 'high', want a number"):
            sa.convert_sample(sample(0, 1, reward="high"), 2, sample_cls=sa.PlainSample)

    def test_slime_from_dict(self) -> None:
        # Sample.from_dict takes the server's JSON as it is; unknown keys stay attributes.
        s = sample(3, 7, hint="Name the file once.")
        s["extra"] = "kept"
        x = slime.Sample.from_dict(s)
        self.assertIs(x.status, slime.Sample.Status.COMPLETED)
        self.assertEqual((x.index, x.rollout_id, x.extra), (7, None, "kept"))  # type: ignore[attr-defined]
        out = sa.convert_sample(s, 1, sample_cls=slime.Sample)
        self.assertIsInstance(out, slime.Sample)
        self.assertIs(out.status, slime.Sample.Status.COMPLETED)
        self.assertEqual(out.rollout_id, 7)

    def test_fork_sample_class(self) -> None:
        out = sa.convert_sample(sample(0, 1, status="truncated"), 1, sample_cls=ForkSample, rollout_id=False)
        self.assertIs(out.status, ForkSample.Status.TRUNCATED)
        with self.assertRaisesRegex(ValueError, "ForkSample has no field 'rollout_id'"):
            sa.convert_sample(sample(0, 1), 1, sample_cls=ForkSample)

    def test_reward_key(self) -> None:
        out = sa.convert_sample(sample(0, 1, reward=0.25), 1, reward_key="nextstate", sample_cls=sa.PlainSample)
        self.assertEqual(out.reward, {"nextstate": 0.25, "outcome_reward": 0.25})

    def test_text_only_turn(self) -> None:
        s = sample(0, 1, text_only=True)
        with self.assertRaisesRegex(ValueError, "no token ids"):
            sa.convert_sample(s, 5, sample_cls=sa.PlainSample)
        out = sa.convert_sample(s, 5, tokenizer=FakeTokenizer(), sample_cls=sa.PlainSample)
        resp = [ord(c) for c in "answer 1"] + [END]
        self.assertEqual(out.tokens, [1, ord("q"), 2] + resp, "chat template (as a list, not a dict), reply, end")
        self.assertEqual(out.response_length, len(resp))
        self.assertEqual(out.loss_mask, [1] * len(resp))
        self.assertIsNone(out.rollout_log_probs)

    def test_end_of_turn_falls_back_to_eos(self) -> None:
        class NoImEnd(FakeTokenizer):
            def convert_tokens_to_ids(self, token: str) -> Optional[int]:
                return None
        _, n = sa.tokenize_turn(NoImEnd(), "p", "ab")
        self.assertEqual(n, 3)
        self.assertEqual(sa.tokenize_turn(NoImEnd(), "p", "ab")[0][-1], 3)

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


class GroupAdvantageTest(unittest.TestCase):
    """Layout ``turns`` against slime's contract: per-group GRPO over
    trajectories of several turns."""

    # 3 tasks × 2 trajectories, 1 to 4 turns each.
    PLAN = [(0, 1, 3, 1.0), (0, 2, 1, 0.0), (1, 3, 2, 0.5), (1, 4, 4, 0.25), (2, 5, 1, 1.0), (2, 6, 2, 0.0)]

    def batch(self, **kw: Any) -> tuple[list[list[Trajectory]], sa.Batch]:
        samples = [s for g, i, n, r in self.PLAN for s in trajectory(g, i, n, r)]
        groups = assemble(samples, 2).take(3)
        return groups, sa.convert_groups(groups, sa.Options(**kw), sample_cls=slime.Sample)

    def test_per_group_advantages(self) -> None:
        groups, b = self.batch()
        self.assertEqual([[len(t) for t in g] for g in b.samples], [[3, 1], [2, 4], [1, 2]],
                         "group × trajectory × turns")
        args = slime_args()
        sa.check_slime_args(args, "turns")
        flat, data, steps = slime.train_on(args, b.samples, hook=sa.post_process_rewards)
        by_traj = {}
        for s, a in zip(flat, data["rewards"]):
            by_traj.setdefault(s.index, set()).add(round(a, 6))
        # Each group of two distinct rewards: ±(1/√2)·d/(d + ε) ≈ ±0.7071, whatever the turn counts.
        want = 1 / math.sqrt(2)
        for (g, i, n, r), sign in zip(self.PLAN, [1, -1, 1, -1, 1, -1]):
            [a] = by_traj[i]
            self.assertAlmostEqual(a, sign * want, places=4, msg=f"trajectory {i} of group {g}")
        self.assertEqual(data["raw_reward"], [r for g, i, n, r in self.PLAN for _ in range(n)])
        self.assertEqual(slime.grpo_token_advantages(data)[0], [data["rewards"][0]] * 2)
        # One rollout per trajectory: ids, loss denominators, and the step split keeps turns together.
        self.assertEqual(data["rollout_ids"], [i for g, i, n, r in self.PLAN for _ in range(n)])
        self.assertEqual(data["rollout_mask_sums"][:4], [6, 6, 6, 2])
        self.assertEqual(len(steps), 1)
        two = slime.steps_by_rollout(data["rollout_ids"], 2)
        self.assertEqual([sorted({data["rollout_ids"][p] for p in st}) for st in two], [[1, 2], [3, 4], [5, 6]])

    def test_slime_default_would_pool_the_batch(self) -> None:
        # Without the hook slime sees 13 samples, not 2 × 3, and z-scores them as one group:
        # advantages weighted by turn count and pooled across tasks (the bug this layout avoids).
        _, b = self.batch()
        args = slime_args(custom_reward_post_process_path=None)
        flat, data, _ = slime.train_on(args, b.samples)
        first = {s.index: a for s, a in zip(flat, data["rewards"])}
        per_sample = [r for g, i, n, r in self.PLAN for _ in range(n)]
        mean = sum(per_sample) / 13
        sd = math.sqrt(sum((r - mean) ** 2 for r in per_sample) / 12)
        for g, i, n, r in self.PLAN:
            self.assertAlmostEqual(first[i], (r - mean) / (sd + 1e-6), places=6)
        self.assertLess(first[3], 0.2, "0.5 beats 0.25 in its group, but not the pooled mean")
        with self.assertRaisesRegex(ValueError, "add --custom-reward-post-process-path "
                                                "nextstate.slime_adapter.post_process_rewards"):
            sa.check_slime_args(args, "turns")
        sa.check_slime_args(args, "openclaw-rl")  # the fork computes its own
        sa.check_slime_args(slime_args(custom_reward_post_process_path=None, rewards_normalization=False), "turns")
        sa.check_slime_args(slime_args(custom_reward_post_process_path=None, advantage_estimator="ppo"), "turns")

    def test_static_micro_batches(self) -> None:
        # One step of 6 trajectories holds 13 turns: slime's static micro-batches
        # cannot be shared evenly by 2 data-parallel ranks, so the adapter tells
        # users to pass --use-dynamic-batch-size.
        _, b = self.batch()
        _, _, steps = slime.train_on(slime_args(), b.samples, hook=sa.post_process_rewards)
        self.assertEqual([len(st) for st in steps], [13])
        self.assertFalse(slime.static_steps_fit([len(st) for st in steps], 1, 2))
        self.assertTrue(slime.static_steps_fit([len(st) for st in steps], 1, 1))
        sa._warned_static_batches = False
        with self.assertLogs("nextstate", "WARNING") as logs:
            sa.check_slime_args(slime_args(use_dynamic_batch_size=False), "turns")
        self.assertIn("pass --use-dynamic-batch-size", logs.output[0])

    def test_estimators(self) -> None:
        self.assertEqual(sa.group_advantages([1.0, 0.0, 0.5], "reinforce_plus_plus_baseline"), [0.5, -0.5, 0.0])
        self.assertEqual(sa.group_advantages([1.0, 0.0], "grpo", std_normalize=False), [0.5, -0.5])
        self.assertEqual(sa.group_advantages([1.0, 0.0], "ppo"), [1.0, 0.0])
        self.assertEqual(sa.group_advantages([1.0, 0.0], "grpo", normalize=False), [1.0, 0.0])
        self.assertEqual(sa.group_advantages([0.7], "grpo"), [0.0], "a group of one: no spread, no NaN")
        self.assertEqual(sa.group_advantages([0.3, 0.3], "grpo"), [0.0, 0.0])
        # The same formula as slime's per group, on a batch slime normalizes per group itself.
        rewards = [1.0, 0.0, 0.5, 0.25, 1.0, 1.0]
        samples = [slime.Sample(reward=r, response_length=1, status=slime.Sample.Status.COMPLETED) for r in rewards]
        _, want = slime.post_process_rewards(slime_args(custom_reward_post_process_path=None), samples)
        got = [a for k in range(0, 6, 2) for a in sa.group_advantages(rewards[k:k + 2], "grpo")]
        for x, y in zip(got, want):
            self.assertAlmostEqual(x, y, places=9)

    def test_repeated_group_index_and_reward_key(self) -> None:
        # Four trajectories of one task make two groups of two in one batch:
        # each is normalized on its own.
        samples = [s for i, r in ((1, 1.0), (2, 0.0), (3, 0.0), (4, 0.0)) for s in trajectory(0, i, 2, r)]
        groups = assemble(samples, 2).take(2)
        self.assertEqual([[t.group_index for t in g] for g in groups], [[0, 0], [0, 0]])
        b = sa.convert_groups(groups, sa.Options(reward_key="score"), sample_cls=slime.Sample)
        args = slime_args(reward_key="score", rollout_batch_size=2, global_batch_size=4)
        _, data, _ = slime.train_on(args, b.samples, hook=sa.post_process_rewards)
        self.assertAlmostEqual(data["rewards"][0], 1 / math.sqrt(2), places=4)
        self.assertEqual(data["rewards"][4:], [0.0] * 4, "the second group's rewards are equal")
        self.assertEqual(data["raw_reward"], [1.0, 1.0] + [0.0] * 6)

    def test_hook_refuses_foreign_samples(self) -> None:
        with self.assertRaisesRegex(ValueError, "sample 0 .* has no metadata.nextstate.advantage"):
            sa.post_process_rewards(slime_args(), [slime.Sample(index=3, reward=1.0)])

    def test_openclaw_layout(self) -> None:
        samples = [s for g, i, n, r in self.PLAN for s in trajectory(g, i, n, r)]
        groups = assemble(samples, 2).take(3)
        b = sa.convert_groups(groups, sa.Options(layout="openclaw-rl"), sample_cls=slime.Sample)
        self.assertEqual([[s.index for s in g] for g in b.samples], [[1, 1, 1, 2], [3, 3, 4, 4, 4, 4], [5, 6, 6]],
                         "each group's turns, flat; the fork groups a trajectory by its shared index")
        leaves = b.leaves()
        self.assertTrue(all(s.rollout_id is None for s in leaves))
        self.assertTrue(all("advantage" not in s.metadata["nextstate"] for s in leaves))
        self.assertEqual(leaves[0].metadata["step_wise"]["step_indices"], [0])
        slime.check_rollout_ids(b.samples)  # list[list[Sample]] is not checked for rollout ids

    def test_layout_names(self) -> None:
        with self.assertRaisesRegex(ValueError, "'trajectory' is gone: use 'turns'"):
            sa.Options(layout="trajectory")
        with self.assertRaisesRegex(ValueError, "'flat' is gone: use 'openclaw-rl'"):
            sa.Settings.from_args(types.SimpleNamespace(), {"NEXTSTATE_SLIME_LAYOUT": "flat"})
        with self.assertRaisesRegex(ValueError, "'deep': want one of turns, openclaw-rl"):
            sa.Options(layout="deep")


class MixedBatchTest(unittest.TestCase):
    """Turns with token ids and log-probs beside text-only turns."""

    def groups(self, *, drop: bool = False) -> tuple[GroupAssembler, list[list[Trajectory]]]:
        # Trajectory 1 opens with a text-only turn; 2 has tokens only; 3 is all text.
        samples = ([sample(0, 1, 1, text_only=True), sample(0, 1, 2)] + trajectory(0, 2, 2, 0.0) +
                   [sample(1, 3, 1, text_only=True, reward=0.5)] + trajectory(1, 4, 1, 0.0))
        g = assemble(samples, 2, drop_text_only=drop)
        return g, g.take(2)

    def test_slime_model_crashes_on_a_raw_mix(self) -> None:
        # What slime does with such a batch as it is (rollout.py:715-716).
        lp, no = slime.Sample(rollout_log_probs=[-0.1], response_length=1), slime.Sample(response_length=1)
        args = slime_args(advantage_estimator="ppo")
        with self.assertRaisesRegex(TypeError, "rollout_log_probs"):
            slime.train_data(args, [lp, no])
        self.assertNotIn("rollout_log_probs", slime.train_data(args, [no, lp]), "dropped when the first has none")

    def test_tokenize(self) -> None:
        _, groups = self.groups()
        with self.assertLogs("nextstate", "WARNING") as logs:
            b = sa.convert_groups(groups, tokenizer=FakeTokenizer(), sample_cls=slime.Sample)
        self.assertIn("log-probs removed from all", logs.output[0])
        self.assertEqual((b.text_turns_tokenized, b.rollout_log_probs_dropped), (2, 4))
        self.assertEqual(b.metrics()["nextstate/rollout_log_probs_dropped"], 4)
        flat, data, _ = slime.train_on(slime_args(rollout_batch_size=2, global_batch_size=4), b.samples,
                                       hook=sa.post_process_rewards)
        self.assertNotIn("rollout_log_probs", data)
        self.assertEqual(len(flat), 6)
        self.assertEqual(flat[0].tokens[-1], END)
        self.assertEqual(len({round(a, 6) for a in data["rewards"][:4]}), 1 + 1, "one advantage per trajectory")
        with self.assertRaisesRegex(ValueError, "no tokenizer was given"):
            sa.convert_groups(groups, sample_cls=slime.Sample)

    def test_tokenize_refused_when_slime_needs_log_probs(self) -> None:
        _, groups = self.groups()
        opts = sa.Options.from_args(slime_args(use_tis=True))
        self.assertTrue(opts.need_log_probs)
        with self.assertRaisesRegex(ValueError, "2 of the batch's 6 turns carry no rollout log-probs"):
            sa.convert_groups(groups, opts, tokenizer=FakeTokenizer(), sample_cls=slime.Sample)

    def test_drop(self) -> None:
        g, groups = self.groups(drop=True)
        self.assertEqual([[t.index for t in grp] for grp in groups], [[1, 2]],
                         "trajectory 3 (all text) was dropped: group 1 waits for another")
        self.assertEqual((g.dropped_text_only, g.dropped_trajectories, g.pending_groups), (1, 0, 1))
        self.assertEqual(g.take_dropped(), [5])
        g.add(100, sample(1, 5, 1, reward=1.0))
        g.settle()
        groups += g.take(2)
        self.assertEqual([[t.index for t in grp] for grp in groups], [[1, 2], [4, 5]])
        b = sa.convert_groups(groups, sa.Options(text_turns="drop"), sample_cls=slime.Sample)
        self.assertEqual((b.text_turns_dropped, b.rollout_log_probs_dropped), (1, 0))
        self.assertEqual([[len(t) for t in grp] for grp in b.samples], [[1, 2], [1, 1]])
        _, data, _ = slime.train_on(slime_args(rollout_batch_size=2, global_batch_size=4), b.samples,
                                    hook=sa.post_process_rewards)
        self.assertEqual(data["rollout_log_probs"], [[-0.1, -0.1]] * 5, "every turn keeps its log-probs")


class OPDTest(unittest.TestCase):
    def setUp(self) -> None:
        self.teacher = FakeTeacher(scale=100)
        self.addCleanup(self.teacher.close)
        self.url = self.teacher.url

    def test_teacher_log_probs(self) -> None:
        samples = [sample(0, 1, 1), sample(0, 1, 2, hint="Halve the range."), sample(0, 2, 1, text_only=True)]
        groups = assemble(samples, 2).take(1)
        args = slime_args(use_opd=True, opd_type="sglang", rm_url=self.url, rollout_temperature=0.8,
                          n_samples_per_prompt=2, rollout_batch_size=1, global_batch_size=2)
        teacher = sa.teacher_for(args, groups)
        assert teacher is not None
        b = sa.convert_groups(groups, sa.Options.from_args(args), tokenizer=FakeTokenizer(), sample_cls=slime.Sample,
                              teacher=teacher)
        self.assertEqual(b.teacher_scored, 3)
        flat = b.leaves()
        for x in flat:
            self.assertEqual(len(x.teacher_log_probs), x.response_length)
        # Without a hint the teacher scores the turn's own tokens.
        self.assertEqual(flat[0].teacher_log_probs, [-0.21, -0.31])
        by_len = {len(r["input_ids"]): r for r in self.teacher.requests}
        self.assertEqual(by_len[5]["input_ids"], [10, 11, 12, 21, 31])
        self.assertEqual(by_len[5]["sampling_params"], {"max_new_tokens": 0, "skip_special_tokens": False,
                                                        "temperature": 0.8})
        self.assertTrue(by_len[5]["return_logprob"])
        # With one, the teacher context (hint and all, through the chat template), then the same response ids.
        ctx = [1] + [ord(c) for c in "q\n\n[Hint from hindsight]\nHalve the range."] + [2]
        hinted = [r for r in self.teacher.requests if r["input_ids"][:len(ctx)] == ctx]
        self.assertEqual(len(hinted), 1)
        self.assertEqual(hinted[0]["input_ids"][len(ctx):], [22, 32], "the student's response ids")
        self.assertEqual(flat[1].teacher_log_probs, [-0.22, -0.32])
        self.assertEqual(flat[1].tokens, [10, 11, 12, 22, 32], "the student trains on its own context")
        _, data, _ = slime.train_on(args, b.samples, hook=sa.post_process_rewards)
        self.assertEqual(len(data["teacher_log_probs"]), 3, "every sample carries them, as slime's OPD needs")

    def test_teacher_selection_and_errors(self) -> None:
        groups = assemble([sample(0, 1, hint="Halve the range.")], 1).take(1)
        self.assertIsNone(sa.teacher_for(slime_args(use_opd=False), groups))
        with self.assertLogs("nextstate", "WARNING") as logs:
            opd._warned_megatron_opd = False
            self.assertIsNone(sa.teacher_for(slime_args(use_opd=True, opd_type="megatron"), groups))
        self.assertIn("do not reach the teacher", logs.output[0])
        with self.assertRaisesRegex(ValueError, "set --rm-url"):
            sa.teacher_for(slime_args(use_opd=True, opd_type="sglang", rm_url=None), groups)
        with self.assertRaisesRegex(ValueError, "its teacher context needs the policy's tokenizer"):
            sa.convert_groups(groups, sample_cls=slime.Sample, teacher=sa.TeacherScorer(self.url))
        short = sa.TeacherScorer(self.url, post=lambda url, payload, t: {"meta_info": {"input_token_logprobs": [[None]]}})
        with self.assertRaisesRegex(ValueError, "1 input log-probs for 3 tokens"):
            short.score([1, 2, 3], 1)
        with self.assertRaisesRegex(ValueError, "no meta_info.input_token_logprobs"):
            sa.TeacherScorer(self.url, post=lambda *a: {"error": "x"}).score([1, 2], 1)
        with self.assertRaisesRegex(ValueError, "want a prompt and a response"):
            sa.TeacherScorer(self.url).score([1, 2], 2)


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


class SettingsTest(unittest.TestCase):
    def test_sources(self) -> None:
        args = types.SimpleNamespace(nextstate_run="from-args", nextstate_window=None)
        env = {"NEXTSTATE_RUN": "from-env", "NEXTSTATE_SAMPLES_WINDOW": "256", "NEXTSTATE_URL": "ws://h:1",
               "NEXTSTATE_SAMPLES_SETTLE": "0.5", "NEXTSTATE_SLIME_LAYOUT": "openclaw-rl", "NEXTSTATE_TEXT_TURNS": "drop"}
        s = sa.Settings.from_args(args, env)
        self.assertEqual((s.run, s.window, s.url, s.settle, s.layout, s.text_turns),
                         ("from-args", 256, "ws://h:1", 0.5, "openclaw-rl", "drop"))
        self.assertEqual(sa.Settings.from_args(types.SimpleNamespace(), {}).layout, "turns")
        with self.assertRaisesRegex(ValueError, "NEXTSTATE_TEXT_TURNS='guess'"):
            sa.Settings.from_args(types.SimpleNamespace(), {"NEXTSTATE_TEXT_TURNS": "guess"})
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
        converted = sa.convert_groups(groups, sample_cls=sa.PlainSample).samples
        self.assertEqual(len(converted[0]), 2)
        b.done(groups)
        self.assertEqual(sorted(st.committed_offsets), [1, 2, 3, 4])

    async def test_collect_available_takes_whole_groups(self) -> None:
        # An eval run that played 3 trajectories of each of 2 tasks: all of
        # them come back, grouped by task, whatever n_samples_per_eval_prompt says.
        order = [(0, 1), (1, 2), (0, 3), (1, 4), (0, 5), (1, 6)]
        recs, off = [], 0
        for g, i in order:
            for step in (1, 2):
                off += 1
                recs.append(SampleRecord(off, sample(g, i, step, reward=float(i % 2))))
        st = FakeStream(recs)
        b = sa.StreamBatcher(st, 1, settle=0.01)  # type: ignore[arg-type]
        groups = await b.collect_available(timeout=5)
        self.assertEqual([[t.index for t in g] for g in groups], [[1, 3, 5], [2, 4, 6]])
        self.assertEqual(b.groups.held, 0)
        b.done(groups)
        self.assertEqual(sorted(st.committed_offsets), list(range(1, 13)))
        with self.assertRaisesRegex(ValueError, "NEXTSTATE_SAMPLES_SETTLE above 0"):
            await sa.StreamBatcher(FakeStream([]), 1, settle=0).collect_available()  # type: ignore[arg-type]
        with self.assertRaisesRegex(TimeoutError, "no batch within 0.05s"):
            await sa.StreamBatcher(FakeStream([]), 1, settle=0.01).collect_available(0.05)  # type: ignore[arg-type]

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
