"""Samples that `nextstate train`'s own runner produced: run_tests.sh trains
one step of a tiny model against the live server (train --server), and
its samples, read back from that server as slime would read them, go
through the slime adapter as they are."""

from __future__ import annotations

import os
import unittest

from nextstate import slime_adapter as sa
from nextstate.groups import GroupAssembler
from nextstate.samples import iter_samples_http

from . import slime_model as slime
from .live import TOKEN, URL
from .test_slime_adapter import slime_args


class TrainSamplesTest(unittest.TestCase):
    def test_train_samples_convert(self) -> None:
        run = os.environ.get("NEXTSTATE_TRAIN_RUN")
        if not run:
            self.fail("NEXTSTATE_TRAIN_RUN is unset: run_tests.sh trains a step against the server first")
        recs = list(iter_samples_http(URL, run=run, token=TOKEN))
        self.assertGreater(len(recs), 0, f"samples of {run}")
        for r in recs:
            s = r.sample
            origin = s["metadata"]["nextstate"]
            self.assertEqual(origin.get("weight_version"), 0, "the first batch is played by version 0")
            self.assertEqual(len(s["rollout_log_probs"]), s["response_length"], "a log-prob per response token")
            self.assertGreater(len(s["tokens"]), s["response_length"], "the prompt's token ids too")
            out = sa.convert_sample(s, r.offset, sample_cls=sa.PlainSample)
            self.assertEqual(out.tokens, s["tokens"])
            self.assertEqual(out.rollout_log_probs, s["rollout_log_probs"])
            self.assertEqual(out.metadata["nextstate"]["offset"], r.offset)
            self.assertIsInstance(s["reward"], float, "slime declares reward a float")
            slime.Sample.from_dict(s)
        # The run's one group of k=2 trajectories, as upstream slime would train it.
        g = GroupAssembler(2)
        for r in recs:
            g.add(r.offset, r.sample)
        g.settle()
        groups = g.take(1)
        self.assertEqual(len(groups), 1, "one group of 2 trajectories")
        b = sa.convert_groups(groups, sample_cls=slime.Sample)
        args = slime_args(n_samples_per_prompt=2, rollout_batch_size=1, global_batch_size=2)
        flat, data, steps = slime.train_on(args, b.samples, hook=sa.post_process_rewards)
        self.assertEqual(len(flat), len(recs))
        self.assertEqual(len(data["rollout_log_probs"]), len(recs))
        self.assertEqual(sorted(set(data["rollout_ids"])), sorted(t.index for t in groups[0]))
        self.assertEqual(len(steps), 1)
