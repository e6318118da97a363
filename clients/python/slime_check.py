#!/usr/bin/env python3
"""Runs upstream slime's own code over the slime adapter's real output.

``tests/slime_model.py`` is a model of slime's side of the contract, written
from slime's source; this check runs the source itself. Given a checkout of
slime (``SLIME_DIR``), it imports slime's modules unchanged, with stub modules
in ``sys.modules`` only for the packages that cannot run here (Ray, SGLang,
wandb, httpx, and for the tokenizer's import path transformers and PIL: see
:func:`install_stubs`), and drives slime's ``RolloutManager`` in this process:

* its arguments come from slime's own parser (``add_slime_arguments``) with the
  flags the README tells users to pass;
* ``RolloutManager.generate`` runs as slime runs it: it loads
  ``nextstate.slime_adapter.generate_rollout`` (``--rollout-function-path``)
  and ``post_process_rewards`` (``--custom-reward-post-process-path``) with
  slime's ``load_function``, calls the rollout function, which reads a live
  nextstate server's sample stream, checks the rollout ids, flattens,
  post-processes the rewards, converts the samples to training data, splits
  them into steps and data-parallel ranks (``build_dp_schedule``) and
  tensorizes each rank's data;
* ``RolloutManager.eval`` runs the adapter's evaluation and slime's eval
  logging.

The trajectories are played here on the server (guess-v1: a bisecting agent
that wins and one that guesses out of range until the step limit), with token
ids and log-probs on every turn, text-only turns for mixed batches, and the
server's rule judge for hints. What slime gives is asserted (per-group
advantages, turns of a trajectory in one step, mixed batches, OPD teacher
log-probs, float rewards, every trajectory in evaluation) and compared with
what ``tests/slime_model.py`` predicts for the same output.

Usage (``make slime-check`` does this)::

    SLIME_DIR=/path/to/slime NEXTSTATE_BIN=bin/nextstate /usr/bin/python3 clients/python/slime_check.py

``NEXTSTATE_URL`` and ``NEXTSTATE_TOKEN`` point it at a running server (one
started with ``--judge-rules``); without them it starts ``NEXTSTATE_BIN
serve`` on a free loopback port with a temporary store, and always stops it.
It prints what slime computed and exits non-zero on the first disagreement.
It is not part of ``make test``: CI has no slime checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
import uuid
from typing import Any, Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import nextstate as ns  # noqa: E402
from nextstate import slime_adapter as sa  # noqa: E402
from nextstate.opd import teacher_prompt  # noqa: E402
from nextstate.samples import iter_samples_http  # noqa: E402
from tests import slime_model as model  # noqa: E402
from tests.fake_teacher import FakeTeacher  # noqa: E402

END = 7  # CharTokenizer's <|im_end|>
TEACHER_SCALE = 1000.0  # the fake teacher's log-prob of token t is -t/1000


class CheckFailed(AssertionError):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)
    print(f"  ok  {what}")


# ---------------------------------------------------------------------------
# Stubs: only packages that are not installed here (or need GPUs and
# clusters), only the names slime imports from them at module level. Using a
# stubbed class or function fails loudly, except ray.remote and ray.put,
# which run in this process.

STUBBED: list[str] = []


class Unavailable:
    """A class of a package this check stubs; making one fails."""

    def __init__(self, *a: Any, **k: Any) -> None:
        raise RuntimeError(f"slime_check: {type(self).__name__} belongs to a stubbed package: this path of slime "
                           "needs the real one")


def _unavailable(name: str) -> Callable[..., Any]:
    def f(*a: Any, **k: Any) -> Any:
        raise RuntimeError(f"slime_check: {name} is stubbed: this path of slime needs the real package")
    return f


def _cls(name: str) -> type:
    return type(name, (Unavailable,), {})


def _ray_remote(*a: Any, **k: Any) -> Any:
    # @ray.remote on a class or function leaves it as it is (slime's
    # RolloutManager becomes a plain class, run in this process);
    # @ray.remote(num_gpus=...) does the same.
    if len(a) == 1 and not k and callable(a[0]):
        return a[0]
    return lambda x: x


class CharTokenizer:
    """Stands in for the Hugging Face tokenizer slime's load_tokenizer
    returns (transformers is not installed here): one id per character, a
    chat template of [1] + characters + [2], and, like transformers 5,
    apply_chat_template answers a dict unless return_dict=False."""

    unk_token_id = None
    eos_token_id = 3

    def apply_chat_template(self, messages: list[dict[str, Any]], tokenize: bool = False,
                            add_generation_prompt: bool = False, return_dict: bool = True, **kw: Any) -> Any:
        ids = [1] + [ord(c) % 5000 + 10 for m in messages for c in str(m.get("content", ""))] + [2]
        return {"input_ids": ids, "attention_mask": [1] * len(ids)} if return_dict else ids

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return [ord(c) % 5000 + 10 for c in text]

    def convert_tokens_to_ids(self, token: str) -> Optional[int]:
        return {"<|im_end|>": END}.get(token)


class _AutoTokenizer:
    @staticmethod
    def from_pretrained(name: str, **kw: Any) -> CharTokenizer:
        return CharTokenizer()


def _stub(name: str, **attrs: Any) -> None:
    if name in sys.modules:
        return
    m = types.ModuleType(name)
    m.__path__ = []  # a package, so submodules can be stubbed under it
    m.__dict__.update(attrs)
    sys.modules[name] = m
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, m)
    STUBBED.append(name)


def _missing(top: str) -> bool:
    try:
        __import__(top)
        return False
    except ImportError:
        return True


def install_stubs() -> None:
    """Stubs each package below that cannot be imported here, with the names
    slime's modules import from it at module level (slime/ray/rollout.py,
    slime/ray/utils.py, slime/utils/data.py, slime/utils/health_monitor.py,
    slime/utils/http_utils.py, slime/observability/logging_utils.py,
    slime/backends/sglang_utils/*.py, slime/utils/processing_utils.py)."""
    if _missing("ray"):
        _stub("ray", remote=_ray_remote, put=lambda obj, **k: obj, get=_unavailable("ray.get"))
        _stub("ray.util")
        _stub("ray.util.scheduling_strategies", PlacementGroupSchedulingStrategy=_cls("PlacementGroupSchedulingStrategy"))
        _stub("ray.util.placement_group", PlacementGroup=_cls("PlacementGroup"),
              placement_group=_unavailable("ray.util.placement_group.placement_group"))
    if _missing("sglang"):
        _stub("sglang")
        _stub("sglang.srt")
        _stub("sglang.srt.constants", GPU_MEMORY_TYPE_CUDA_GRAPH="cuda_graph", GPU_MEMORY_TYPE_KV_CACHE="kv_cache",
              GPU_MEMORY_TYPE_WEIGHTS="weights")
        _stub("sglang.srt.server_args", ServerArgs=_cls("ServerArgs"))
        _stub("sglang.srt.utils", kill_process_tree=_unavailable("sglang.srt.utils.kill_process_tree"))
    if _missing("sglang_router"):
        _stub("sglang_router")
        _stub("sglang_router.launch_router", RouterArgs=_cls("RouterArgs"))
    if _missing("wandb"):
        _stub("wandb")  # used only with --use-wandb
    if _missing("httpx"):
        _stub("httpx", AsyncClient=_cls("AsyncClient"))
    if _missing("transformers"):
        _stub("transformers", AutoTokenizer=_AutoTokenizer, AutoProcessor=_cls("AutoProcessor"),
              PreTrainedTokenizerBase=_cls("PreTrainedTokenizerBase"), ProcessorMixin=_cls("ProcessorMixin"))
    if _missing("PIL"):
        _stub("PIL")
        _stub("PIL.Image")
    import torch

    if not hasattr(torch, "compile"):
        # torch < 2 (Debian's 1.13) has no torch.compile, which
        # slime/utils/ppo_utils.py applies as a decorator: leave functions as they are.
        torch.compile = lambda *a, **k: (lambda f: f)  # type: ignore[attr-defined]
        STUBBED.append("torch.compile")


# ---------------------------------------------------------------------------
# The server, the agents, the teacher.


class Server:
    """``nextstate serve`` on a free loopback port, or the one at NEXTSTATE_URL."""

    def __init__(self) -> None:
        self.proc: Optional[subprocess.Popen] = None
        self.tmp: Optional[str] = None
        self.url = os.environ.get("NEXTSTATE_URL", "")
        self.token = os.environ.get("NEXTSTATE_TOKEN") or None

    def start(self) -> None:
        if self.url:
            return
        binary = os.environ.get("NEXTSTATE_BIN") or os.path.join(ROOT, "bin", "nextstate")
        if not os.access(binary, os.X_OK):
            sys.exit(f"slime_check: no nextstate binary at {binary}: run 'make build' or set NEXTSTATE_BIN")
        self.tmp = tempfile.mkdtemp(prefix="nextstate-slime-check.")
        self.token = uuid.uuid4().hex
        with open(os.path.join(self.tmp, "token"), "w") as f:
            f.write(self.token + "\n")
        ready = os.path.join(self.tmp, "ready")
        self.log = open(os.path.join(self.tmp, "server.log"), "w")
        self.proc = subprocess.Popen([binary, "serve", "--addr", "127.0.0.1:0", "--ready-file", ready, "--data",
                                      os.path.join(self.tmp, "data"), "--token-file", os.path.join(self.tmp, "token"),
                                      "--judge-rules", "--drain", "5s", "--log-level", "warn"],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not (os.path.exists(ready) and os.path.getsize(ready) > 0):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                sys.exit("slime_check: the server did not become ready")
            time.sleep(0.1)
        with open(ready) as f:
            self.url = "ws://" + f.read().strip()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)


TASKS = {"guess-1-100": (1, 100), "guess-1-1000": (1, 1000), "guess-1-50": (1, 50)}


async def play(c: ns.Client, run: str, task: str, seed: int, *, win: bool, tokens: bool) -> int:
    """One guess-v1 episode: bisecting (wins, reward 1) or always guessing
    above the range (never wins: truncated at the step limit, reward 0).
    With ``tokens`` each turn carries token ids and log-probs. Returns the
    number of turns."""
    low, high = TASKS[task]
    s, _ = await c.create(task_id=task, seed=seed, run=run)
    n = 0
    while True:
        g = (low + high) // 2 if win else TASKS[task][1] + 1
        turn: dict[str, Any] = {"messages": [{"role": "user", "content": f"guess in [{low}, {high}]"}],
                                "response": str(g), "model": "slime-check"}
        if tokens:
            turn.update(prompt_ids=[100, 1000 + n, 2000 + g % 1000], response_ids=[3000 + g % 1000, END],
                        logprobs=[-0.25, -0.5])
        r = await s.step(ns.text_action(str(g)), turn=turn)
        n += 1
        if r.done:
            break
        obs = ns.observation_text(r.observation)
        if obs == "higher":
            low = g + 1
        elif obs == "lower":
            high = g - 1
    await s.close()
    return n


async def play_runs(srv: Server, plans: dict[str, list[tuple[str, bool, bool]]]) -> dict[str, list[int]]:
    """Plays each run's (task, win, tokens) episodes in order; returns the turn counts."""
    out: dict[str, list[int]] = {}
    async with ns.Client(srv.url, token=srv.token) as c:
        seed = 1
        for run, plan in plans.items():
            out[run] = []
            for task, win, tokens in plan:
                seed += 1
                out[run].append(await play(c, run, task, seed, win=win, tokens=tokens))
    return out


def stored(srv: Server, run: str, n: int) -> list[Any]:
    """The run's samples once the server has stored all n of them."""
    http = srv.url.replace("ws://", "http://", 1)
    deadline = time.monotonic() + 30
    while True:
        recs = list(iter_samples_http(http, run=run, token=srv.token))
        if len(recs) >= n or time.monotonic() > deadline:
            if len(recs) != n:
                raise CheckFailed(f"run {run}: {len(recs)} samples stored, want {n}")
            return recs
        time.sleep(0.1)


# ---------------------------------------------------------------------------
# slime's side.


def slime_args(srv: Server, run: str, flags: list[str], **ours: Any) -> argparse.Namespace:
    """slime's args from its own parser (slime/utils/arguments.py,
    add_slime_arguments) given ``flags``, plus the adapter's settings as
    args attributes (a user adds them with add_custom_arguments, or sets
    the environment variables)."""
    from slime.utils.arguments import get_slime_extra_args_provider

    p = argparse.ArgumentParser(allow_abbrev=False)
    get_slime_extra_args_provider()(p)
    # A step's turn count varies, so with several data-parallel ranks slime
    # needs dynamic micro-batches (see the README).
    args = p.parse_args(["--rollout-function-path", "nextstate.slime_adapter.generate_rollout",
                         "--eval-function-path", "nextstate.slime_adapter.generate_rollout",
                         "--use-dynamic-batch-size", "--max-tokens-per-gpu", "64"] + flags)
    # Set by parse_args' pre-parse (_pre_parse_mode), not by add_slime_arguments.
    args.load_debug_rollout_data, args.debug_rollout_only, args.debug_train_only = None, False, False
    settings = dict(nextstate_url=srv.url, nextstate_token=srv.token, nextstate_run=run, nextstate_settle=0.5,
                    nextstate_timeout=60.0)
    settings.update(ours)
    for k, v in settings.items():
        setattr(args, k, v)
    return args


class Manager:
    """slime's RolloutManager, in this process. Its __init__ starts Ray
    actors and SGLang servers, so this sets the attributes __init__ sets
    (slime/ray/rollout.py, RolloutManager.__init__) that generate() and
    eval() read, with slime's own load_function for the user's paths; every
    method called is slime's. The rollout functions are wrapped only to keep
    a copy of what they return."""

    def __init__(self, args: argparse.Namespace, dp_size: int = 2) -> None:
        from slime.ray.rollout import RolloutManager
        from slime.utils.misc import load_function

        assert isinstance(RolloutManager, type), "ray.remote left RolloutManager a class"
        self.outputs: list[Any] = []
        m = object.__new__(RolloutManager)
        m.pg, m.args, m.servers, m.data_source = None, args, {}, None
        m.generate_rollout = self._keep(load_function(args.rollout_function_path))
        m.eval_generate_rollout = self._keep(load_function(args.eval_function_path))
        m.custom_reward_post_process_func = None
        if args.custom_reward_post_process_path is not None:
            m.custom_reward_post_process_func = load_function(args.custom_reward_post_process_path)
        m.custom_convert_samples_to_train_data_func = None
        m.rollout_id = -1
        m._health_monitors = []
        m.set_train_parallel_config({"dp_size": dp_size, "cp_size": 1, "vpp_size": 1,
                                     "microbatch_group_size_per_vp_stage": 1})
        self.m = m

    def _keep(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def kept(*a: Any, **k: Any) -> Any:
            out = fn(*a, **k)
            self.outputs.append(out)
            return out
        return kept


def ranks_of(boxes: list[Any]) -> list[dict[str, Any]]:
    """Each DP rank's rollout_data from generate()'s Boxes (ray.put runs in process)."""
    return [b.inner for b in boxes]


def per_sample(ranks: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    """Global sample index -> its rank, training step, and the values of the
    per-sample keys, from each rank's partition and micro-batch schedule."""
    out: dict[int, dict[str, Any]] = {}
    for r, rd in enumerate(ranks):
        mbs = list(rd["micro_batch_indices"])
        step_of: dict[int, int] = {}
        k = 0
        for step, count in enumerate(rd["num_microbatches"]):
            for mb in mbs[k:k + count]:
                for local in mb:
                    step_of[local] = step
            k += count
        for local, g in enumerate(rd["partition"]):
            if g in out:
                raise CheckFailed(f"sample {g} is on ranks {out[g]['rank']} and {r}")
            d = {"rank": r, "step": step_of[local]}
            for key in ("rewards", "rollout_ids", "response_lengths", "loss_masks", "rollout_log_probs",
                        "teacher_log_probs", "tokens", "rollout_mask_sums", "truncated"):
                if key in rd:
                    d[key] = rd[key][local]
            out[g] = d
    return out


def to_model(node: Any) -> Any:
    """The same nested output with tests/slime_model.py's Sample in place of slime's."""
    if isinstance(node, list):
        return [to_model(x) for x in node]
    names = model.Sample.__dataclass_fields__
    kw = {k: getattr(node, k) for k in names if hasattr(node, k)}
    kw["status"] = model.Sample.Status(node.status.value)
    return model.Sample(**kw)


def compare_with_model(args: argparse.Namespace, output: list, ranks: list[dict[str, Any]], flat: list,
                       hook: Optional[Callable] = None) -> None:
    """What tests/slime_model.py predicts for ``output`` against what slime gave."""
    mflat, mdata, msteps = model.train_on(args, to_model(output), hook)
    got = per_sample(ranks)
    check(len(mflat) == len(flat), f"model: {len(mflat)} flat samples, as slime")
    kept = sorted(got)
    check(sorted(p for st in msteps for p in st) == kept, "model: the same samples kept after the step split")
    for g in kept:
        if abs(mdata["rewards"][g] - got[g]["rewards"]) > 1e-5 or mdata["rollout_ids"][g] != got[g]["rollout_ids"]:
            raise CheckFailed(f"model disagrees at sample {g}: reward {mdata['rewards'][g]} vs slime's "
                              f"{got[g]['rewards']}, rollout id {mdata['rollout_ids'][g]} vs {got[g]['rollout_ids']}")
        if float(got[g]["rollout_mask_sums"]) != mdata["rollout_mask_sums"][g]:
            raise CheckFailed(f"model disagrees at sample {g}: rollout_mask_sums {mdata['rollout_mask_sums'][g]} "
                              f"vs {float(got[g]['rollout_mask_sums'])}")
        if list(got[g]["loss_masks"].tolist()) != mdata["loss_masks"][g]:
            raise CheckFailed(f"model disagrees at sample {g}: loss mask")
        for key in ("rollout_log_probs", "teacher_log_probs"):
            if (key in got[g]) != (key in mdata):
                raise CheckFailed(f"model disagrees at sample {g}: {key} {'present' if key in mdata else 'absent'} "
                                  "in the model, not in slime")
    msteps_sets = [frozenset(mdata["rollout_ids"][p] for p in st) for st in msteps]
    ssteps: dict[int, set] = {}
    for g in kept:
        ssteps.setdefault(got[g]["step"], set()).add(got[g]["rollout_ids"])
    check(sorted(map(sorted, msteps_sets)) == sorted(map(sorted, ssteps.values())),
          "model: the same rollouts in each training step")
    check(mdata["raw_reward"] == [float(x) for x in ranks[0]["raw_reward"]], "model: the same raw rewards")


# ---------------------------------------------------------------------------
# The scenarios.


def grpo(srv: Server, run: str, turns: list[int], recs: list[Any]) -> None:
    print(f"\n[grpo] run {run}: 3 tasks x 2 trajectories, turns {turns}")
    from slime.observability.rollout_data_utils import load_debug_rollout_data, save_debug_rollout_data
    from slime.utils.ppo_utils import get_grpo_returns
    from slime.utils.types import Sample

    # Sample.from_dict takes every sample the server exported, as JSON.
    for r in recs:
        s = Sample.from_dict(r.sample)
        if type(s.reward) is not float or s.status.value != r.sample["status"]:
            raise CheckFailed(f"Sample.from_dict of offset {r.offset}: reward {s.reward!r}, status {s.status}")
    check(True, f"slime's Sample.from_dict takes all {len(recs)} exported samples; rewards are floats")

    flags = ["--rollout-batch-size", "3", "--n-samples-per-prompt", "2", "--global-batch-size", "6",
             "--custom-reward-post-process-path", sa.REWARD_HOOK]
    args = slime_args(srv, run, flags)
    mgr = Manager(args)
    ranks = ranks_of(mgr.m.generate(0))
    out = mgr.outputs[-1]
    output, metrics = out.samples, out.metrics
    check(all(isinstance(s, Sample) for g in output for t in g for s in t), "the adapter returns slime's Sample")
    check([len(g) for g in output] == [2, 2, 2], "3 groups of 2 trajectories")
    flat = [s for g in output for t in g for s in t]
    got = per_sample(ranks)
    check(sorted(got) == list(range(len(flat))), f"all {len(flat)} turns are trained, across {len(ranks)} DP ranks")
    check(all(ranks), "every DP rank has samples")
    adv: dict[int, set] = {}
    for g, d in got.items():
        adv.setdefault(flat[g].rollout_id, set()).add(round(float(d["rewards"]), 6))
    want = 1 / math.sqrt(2)
    print("  slime's advantages per trajectory (rollout_id: turns, raw reward, advantage):")
    for grp in output:
        for t in grp:
            a = adv[t[0].rollout_id]
            print(f"    {t[0].rollout_id}: {len(t)} turns, reward {t[0].reward}, advantage {sorted(a)}")
            if len(a) != 1:
                raise CheckFailed(f"trajectory {t[0].rollout_id}: turns with different advantages {a}")
            sign = 1 if t[0].reward > 0 else -1
            if abs(next(iter(a)) - sign * want) > 1e-4:
                raise CheckFailed(f"trajectory {t[0].rollout_id}: advantage {a}, want {sign * want:+.4f}")
    check(True, "per-group advantages are +-0.7071 for every turn, whatever the turn counts")
    raw = ranks[0]["raw_reward"]
    check(all(type(x) is float for x in raw), "raw_reward: Python floats")
    check(all(type(d["rewards"]) is float for d in got.values()), "rewards (the hook's advantages): Python floats")
    for rd in ranks:
        toks = get_grpo_returns(rd["rewards"], [torch_ones(n) for n in rd["response_lengths"]])
        for a, n, r in zip(toks, rd["response_lengths"], rd["rewards"]):
            if a.shape[0] != n or abs(float(a[0]) - r) > 1e-6:
                raise CheckFailed("get_grpo_returns: a token's advantage is not its sample's")
    check(True, "ppo_utils.get_grpo_returns: each response token carries its trajectory's advantage")
    lp = [d["rollout_log_probs"] for d in got.values()]
    check(all(str(x.dtype) == "torch.float32" and x.tolist() == [-0.25, -0.5] for x in lp),
          "rollout_log_probs reach training as float32 tensors, one per response token")
    sums = {flat[g].rollout_id: float(d["rollout_mask_sums"]) for g, d in got.items()}
    check(all(sums[t[0].rollout_id] == 2.0 * len(t) for grp in output for t in grp),
          "rollout_mask_sums: one denominator per trajectory (2 tokens x its turns)")
    check(metrics["nextstate/samples"] == len(flat), "the adapter's metrics reach slime")
    compare_with_model(args, output, ranks, flat, sa.post_process_rewards)

    # Steps of 2 rollouts: each trajectory's turns in one training step.
    mgr.m.args.global_batch_size = 2
    data = mgr.m._convert_samples_to_train_data(list(flat))
    ranks2 = ranks_of(mgr.m._split_train_data_by_dp(data))
    got2 = per_sample(ranks2)
    step_of: dict[int, set] = {}
    for g, d in got2.items():
        step_of.setdefault(d["rollout_ids"], set()).add(d["step"])
    check(all(len(v) == 1 for v in step_of.values()) and len(step_of) == 6,
          "--global-batch-size 2: every turn of a trajectory in one step, " +
          ", ".join(f"{rid}->step {next(iter(s))}" for rid, s in sorted(step_of.items())))
    steps = {}
    for rid, s in step_of.items():
        steps.setdefault(next(iter(s)), []).append(rid)
    check(sorted(len(v) for v in steps.values()) == [2, 2, 2], "3 steps of 2 trajectories each")
    compare_with_model(args, output, ranks2, flat, sa.post_process_rewards)

    # Static micro-batches (no --use-dynamic-batch-size) on 2 ranks need an
    # even sample count per step; one step of 49 turns has none.
    mgr.m.args.global_batch_size, mgr.m.args.use_dynamic_batch_size = 6, False
    try:
        mgr.m._split_train_data_by_dp(mgr.m._convert_samples_to_train_data(list(flat)))
        raise CheckFailed("static micro-batches took an odd step on 2 ranks")
    except AssertionError as e:
        if isinstance(e, CheckFailed):
            raise
        fits = model.static_steps_fit([len(flat)], args.micro_batch_size, 2)
        check("static path" in str(e) and not fits,
              f"without --use-dynamic-batch-size, 2 ranks: slime fails the step of {len(flat)} turns, as the model says")
    mgr.m.args.use_dynamic_batch_size = True

    # Without the hook: slime's own normalization pools the batch (the bug the hook avoids).
    mgr.m.custom_reward_post_process_func = None
    raw_r, pooled = mgr.m._post_process_rewards(list(flat))
    _, mpooled = model.post_process_rewards(args, to_model(flat))
    check(max(abs(a - b) for a, b in zip(pooled, mpooled)) < 1e-5,
          "without the hook slime z-scores the whole batch as one group, as the model says")
    first = {}
    for s, a in zip(flat, pooled):
        first.setdefault(s.rollout_id, a)
    print("  slime without the hook (pooled, weighted by turns): " +
          ", ".join(f"{rid}: {a:+.3f}" for rid, a in first.items()))
    mgr.m.custom_reward_post_process_func = sa.post_process_rewards

    # slime's debug-data dump and replay (Sample.to_dict, torch.save, Sample.from_dict).
    with tempfile.TemporaryDirectory() as d:
        tmpl = os.path.join(d, "rollout_{rollout_id}.pt")
        save_debug_rollout_data(tmpl, list(flat), rollout_id=0, evaluation=False)
        again = load_debug_rollout_data(tmpl, rollout_id=0)
        check([s.rollout_id for s in again] == [s.rollout_id for s in flat] and
              [s.metadata["nextstate"]["advantage"] for s in again] == [s.metadata["nextstate"]["advantage"]
                                                                         for s in flat],
              "slime's debug dump and replay keep rollout_id and the advantages")
        _, replayed = sa.post_process_rewards(args, again)
        check(replayed == mgr.m._post_process_rewards(list(flat))[1], "the hook gives the same on replayed samples")


def torch_ones(n: int) -> Any:
    import torch

    return torch.ones(n)


def mixed(srv: Server, run_tok: str, run_drop: str, recs_tok: list[Any]) -> None:
    print(f"\n[mixed] runs {run_tok} (text-only turns tokenized) and {run_drop} (dropped)")
    from slime.utils.types import Sample

    # slime on the server's samples as they are (Sample.from_dict), a token
    # turn first and a text-only turn second: the conversion's tensorizing crashes.
    token = next(r.sample for r in recs_tok if r.sample["tokens"])
    text = next(r.sample for r in recs_tok if not r.sample["tokens"])
    args = slime_args(srv, run_tok, ["--rollout-batch-size", "1", "--n-samples-per-prompt", "2",
                                     "--global-batch-size", "2", "--advantage-estimator", "reinforce_plus_plus"])
    mgr = Manager(args, dp_size=1)
    try:
        mgr.m._split_train_data_by_dp(mgr.m._convert_samples_to_train_data(
            [Sample.from_dict(token), Sample.from_dict(text)]))
        raise CheckFailed("slime trained a raw mixed batch (token turn first) without crashing")
    except TypeError as e:
        check(True, f"raw mix, token turn first: slime's tensorizing fails ({type(e).__name__}: {e})")
    data = mgr.m._convert_samples_to_train_data([Sample.from_dict(text), Sample.from_dict(token)])
    check("rollout_log_probs" not in data, "raw mix, text turn first: slime drops every log-prob silently")

    flags = ["--rollout-batch-size", "2", "--n-samples-per-prompt", "2", "--global-batch-size", "4",
             "--custom-reward-post-process-path", sa.REWARD_HOOK, "--hf-checkpoint", "slime-check/char"]
    args = slime_args(srv, run_tok, flags)
    mgr = Manager(args)
    ranks = ranks_of(mgr.m.generate(0))
    out = mgr.outputs[-1]
    flat = [s for g in out.samples for t in g for s in t]
    n_text = out.metrics["nextstate/text_turns_tokenized"]
    check(n_text > 0 and out.metrics["nextstate/rollout_log_probs_dropped"] > 0,
          f"tokenize: {n_text} text-only turns tokenized, log-probs of "
          f"{out.metrics['nextstate/rollout_log_probs_dropped']} turns dropped and counted")
    check(all("rollout_log_probs" not in rd for rd in ranks), "tokenize: slime trains the mix, without log-probs")
    check(all(s.tokens[-1] == END for s in flat), "tokenize: every turn ends with <|im_end|>")
    got = per_sample(ranks)
    check(len(got) == len(flat), f"tokenize: all {len(flat)} turns trained")
    compare_with_model(args, out.samples, ranks, flat, sa.post_process_rewards)

    refuse = slime_args(srv, run_tok, flags + ["--use-tis"])
    sa.close()
    try:
        Manager(refuse).m.generate(1)
        raise CheckFailed("--use-tis with a mixed batch was not refused")
    except ValueError as e:
        check("carry no rollout log-probs" in str(e), "--use-tis: the mixed batch is refused with a reason")
    sa.close()

    args = slime_args(srv, run_drop, flags, nextstate_text_turns="drop")
    mgr = Manager(args)
    ranks = ranks_of(mgr.m.generate(0))
    out = mgr.outputs[-1]
    flat = [s for g in out.samples for t in g for s in t]
    check(out.metrics["nextstate/dropped_text_only_trajectories"] == 1,
          "drop: the text-only trajectory was left out and counted")
    check(all("rollout_log_probs" in rd for rd in ranks), "drop: every turn keeps its log-probs in slime's data")
    compare_with_model(args, out.samples, ranks, flat, sa.post_process_rewards)


def opd(srv: Server, run: str) -> None:
    print(f"\n[opd] run {run}: teacher log-probs from an SGLang-shaped teacher, hints from the rule judge")
    teacher = FakeTeacher(scale=TEACHER_SCALE)
    try:
        url = teacher.url
        flags = ["--rollout-batch-size", "1", "--n-samples-per-prompt", "2", "--global-batch-size", "2",
                 "--custom-reward-post-process-path", sa.REWARD_HOOK, "--hf-checkpoint", "slime-check/char",
                 "--use-opd", "--opd-type", "sglang", "--rm-url", url]
        args = slime_args(srv, run, flags)
        mgr = Manager(args)
        ranks = ranks_of(mgr.m.generate(0))
        out = mgr.outputs[-1]
        flat = [s for g in out.samples for t in g for s in t]
        got = per_sample(ranks)
        hinted = sum(1 for s in flat if teacher_prompt(s.metadata))
        check(hinted > 0, f"{hinted} of {len(flat)} turns carry a judge's hint")
        for g, d in got.items():
            t = d["teacher_log_probs"]
            want = [-x / TEACHER_SCALE for x in flat[g].tokens[-flat[g].response_length:]]
            if str(t.dtype) != "torch.float32" or len(t) != d["response_lengths"] or \
                    max(abs(a - b) for a, b in zip(t.tolist(), want)) > 1e-6:
                raise CheckFailed(f"sample {g}: teacher_log_probs {t.tolist()}, want {want}")
        check(True, "teacher_log_probs reach every rank's training data: float32, one per response token")
        ctx_hits = sum(1 for r in teacher.requests if r["input_ids"][0] == 1)  # CharTokenizer's template opens with 1
        check(ctx_hits == hinted, f"the teacher scored {ctx_hits} turns under their hint's context")
        compare_with_model(args, out.samples, ranks, flat, sa.post_process_rewards)
    finally:
        teacher.close()


def evaluation(srv: Server, run: str, k: int) -> None:
    print(f"\n[eval] run {run}: 2 tasks x {k} trajectories, n_samples_per_eval_prompt 1")
    args = slime_args(srv, "unused", ["--rollout-batch-size", "1"], nextstate_eval_run=run)
    mgr = Manager(args)
    mgr.m.eval(0)  # the adapter's evaluation, then slime's log_eval_rollout_data
    data = mgr.outputs[-1].data
    [(name, d)] = data.items()
    check(len(d["rewards"]) == 2 * k and all(type(x) is float for x in d["rewards"]),
          f"{name}: all {2 * k} trajectories' rewards, as floats (slime logged them)")


def main() -> int:
    slime_dir = os.environ.get("SLIME_DIR") or (sys.argv[1] if len(sys.argv) > 1 else "")
    if not slime_dir or not os.path.isfile(os.path.join(slime_dir, "slime", "ray", "rollout.py")):
        print("slime_check: set SLIME_DIR to a checkout of github.com/THUDM/slime (its slime/ray/rollout.py)",
              file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.abspath(slime_dir))
    install_stubs()
    import slime.ray.rollout  # noqa: F401

    print(f"slime at {slime_dir} (the model cites slime {model.SLIME_COMMIT[:12]}); stubbed: {', '.join(STUBBED)}")
    srv = Server()
    srv.start()
    tag = uuid.uuid4().hex[:6]
    runs = {f"grpo-{tag}": [(t, w, True) for t in TASKS for w in (True, False)],
            # guess-1-100: a text-only trajectory first; then token trajectories.
            f"mixed-{tag}": [("guess-1-100", True, False), ("guess-1-100", False, True),
                             ("guess-1-50", True, True), ("guess-1-50", False, True)],
            f"drop-{tag}": [("guess-1-100", True, False), ("guess-1-100", False, True), ("guess-1-100", True, True),
                            ("guess-1-50", True, True), ("guess-1-50", False, True)],
            f"opd-{tag}": [("guess-1-50", True, True), ("guess-1-50", False, True)],
            f"eval-{tag}": [(t, w, True) for t in ("guess-1-100", "guess-1-50") for w in (True, False, True)]}
    try:
        turns = asyncio.run(play_runs(srv, runs))
        recs = {run: stored(srv, run, sum(n)) for run, n in turns.items()}
        grpo(srv, f"grpo-{tag}", turns[f"grpo-{tag}"], recs[f"grpo-{tag}"])
        mixed(srv, f"mixed-{tag}", f"drop-{tag}", recs[f"mixed-{tag}"])
        opd(srv, f"opd-{tag}")
        evaluation(srv, f"eval-{tag}", 3)
    except CheckFailed as e:
        print(f"\nFAIL: {e}", file=sys.stderr)
        return 1
    finally:
        sa.close()
        srv.stop()
    print("\nslime_check: slime's own code trains the adapter's output as the model says")
    return 0


if __name__ == "__main__":
    sys.exit(main())
