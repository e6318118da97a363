"""A slime rollout function that trains on nextstate's sample stream.

slime calls a custom rollout function (``--rollout-function-path``) as
``generate_rollout(args, rollout_id, data_source, evaluation=False)`` and
takes back groups of ``Sample`` objects (``RolloutFnTrainOutput``). This one
generates nothing: agents act in nextstate sessions (``nextstate run``, your
own harness), the server turns each finished trajectory into samples, and
:func:`generate_rollout` pulls them from the stream until it has
``args.rollout_batch_size`` groups of ``args.n_samples_per_prompt``
trajectories, converts them to slime ``Sample`` objects, acknowledges them
once converted, and returns them::

    NEXTSTATE_URL=ws://trainer-gw:7070 NEXTSTATE_TOKEN=... NEXTSTATE_RUN=grpo-1 \\
    python train.py ... --rollout-function-path nextstate.slime_adapter.generate_rollout \\
        --rollout-batch-size 32 --n-samples-per-prompt 8

Settings, from ``args`` attributes when set, else environment variables:

=============================  ==================================  =============================
args attribute                 environment variable                default
=============================  ==================================  =============================
``nextstate_url``              ``NEXTSTATE_URL``                   ``ws://127.0.0.1:7070``
``nextstate_token``            ``NEXTSTATE_TOKEN``                 none
``nextstate_run``              ``NEXTSTATE_RUN``                   all runs
``nextstate_env``              ``NEXTSTATE_ENV``                   all env kinds
``nextstate_after``            ``NEXTSTATE_SAMPLES_AFTER``         ``0`` (from the first; -1: new)
``nextstate_window``           ``NEXTSTATE_SAMPLES_WINDOW``        ``1024`` (1 to 4096)
``nextstate_state_file``       ``NEXTSTATE_SAMPLES_STATE``         none (resume point on disk)
``nextstate_layout``           ``NEXTSTATE_SLIME_LAYOUT``          ``auto``
``nextstate_settle``           ``NEXTSTATE_SAMPLES_SETTLE``        ``2`` seconds (0: off)
``nextstate_timeout``          ``NEXTSTATE_ROLLOUT_TIMEOUT``       ``0`` (wait as long as it takes)
``nextstate_max_buffer``       ``NEXTSTATE_MAX_BUFFER``            ``65536`` samples
``nextstate_eval_run``         ``NEXTSTATE_EVAL_RUN``              none (evaluation is refused)
=============================  ==================================  =============================

**Shape.** Each sample is one trained turn; the samples of one trajectory
share ``index``. Layout ``trajectory`` returns ``list[list[list[Sample]]]``
(group × trajectory × turns) with ``rollout_id`` = the trajectory's index on
every turn, slime's convention for several training samples from one
rollout; ``flat`` returns ``list[list[Sample]]`` (each group's turns in
order); ``auto`` is ``flat`` when every trajectory has one turn, else
``trajectory``.

**Masking.** Trajectories with an infrastructure failure (``remove_sample``,
status ``aborted``) are dropped before grouping; their groups wait for valid
trajectories (see :mod:`nextstate.groups`).

**Text-only turns.** A turn whose agent sent no token ids has ``tokens``
``[]``; it is tokenized with slime's tokenizer of ``args.hf_checkpoint``
(chat template on the prompt, then the response) and trained without
rollout log-probs.

**At-least-once.** Samples are acknowledged after conversion; with a state
file, a restarted trainer resumes after the last batch it converted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from .client import Client, ReconnectPolicy
from .groups import GroupAssembler, Trajectory
from .samples import SampleStream

log = logging.getLogger("nextstate")

LAYOUTS = ("auto", "trajectory", "flat")
STATUSES = ("completed", "truncated", "aborted", "failed", "pending")


@dataclass
class PlainSample:
    """slime's ``Sample`` fields this adapter sets, for use without slime
    (tests, other trainers). ``status`` is the status's string value."""

    group_index: Optional[int] = None
    index: Optional[int] = None
    rollout_id: Optional[int] = None
    prompt: Any = ""
    tokens: list[int] = field(default_factory=list)
    response: str = ""
    response_length: int = 0
    reward: Any = None
    loss_mask: Optional[list[int]] = None
    rollout_log_probs: Optional[list[float]] = None
    remove_sample: bool = False
    status: str = "completed"
    metadata: dict[str, Any] = field(default_factory=dict)


Tokenizer = Any  # a Hugging Face tokenizer: apply_chat_template and encode


def tokenize_turn(tokenizer: Tokenizer, prompt: Any, response: str) -> tuple[list[int], int]:
    """Token ids of a text-only turn: the prompt through the chat template
    (with the generation prompt), then the response; and the response's
    length in tokens."""
    if isinstance(prompt, str):
        p_ids = list(tokenizer.encode(prompt, add_special_tokens=False))
    else:
        p_ids = list(tokenizer.apply_chat_template(list(prompt), tokenize=True, add_generation_prompt=True))
    r_ids = list(tokenizer.encode(response, add_special_tokens=False))
    return p_ids + r_ids, len(r_ids)


def convert_sample(sample: Mapping[str, Any], offset: Optional[int] = None, *,
                   tokenizer: Optional[Tokenizer] = None, reward_key: Optional[str] = None,
                   sample_cls: Optional[type] = None) -> Any:
    """One nextstate sample as a slime ``Sample`` (``sample_cls``; default
    slime's if importable, else :class:`PlainSample`).

    ``rollout_id`` is the trajectory's ``index``; ``metadata.nextstate``
    gains ``offset``. A turn without token ids is tokenized with
    ``tokenizer`` (ValueError without one). ``reward_key`` (slime's
    ``--reward-key``) makes ``reward`` a dict holding the sequence score
    under that key and the outcome under ``outcome_reward``.
    """
    where = f"sample at offset {offset}" if offset is not None else "sample"
    cls = sample_cls or slime_sample_class() or PlainSample
    status = str(sample.get("status", "completed"))
    if status not in STATUSES:
        raise ValueError(f"{where}: status {status!r}, want one of {', '.join(STATUSES)}")
    tokens = [int(t) for t in sample.get("tokens") or []]
    response = str(sample.get("response", ""))
    rlen = int(sample.get("response_length", 0))
    loss_mask = sample.get("loss_mask")
    logprobs = sample.get("rollout_log_probs")
    prompt = sample.get("prompt", "")
    if not tokens:
        if tokenizer is None:
            raise ValueError(f"{where} has no token ids (its agent sent text only) and no tokenizer was given: "
                             "set args.hf_checkpoint, or have the agent send token ids in its turns")
        tokens, rlen = tokenize_turn(tokenizer, prompt, response)
        loss_mask, logprobs = [1] * rlen, None
    if not 0 <= rlen <= len(tokens):
        raise ValueError(f"{where}: response_length {rlen} is outside the {len(tokens)} tokens")
    if not loss_mask:
        loss_mask = [1] * rlen
    if len(loss_mask) != rlen:
        raise ValueError(f"{where}: {len(loss_mask)} loss_mask entries for {rlen} response tokens; want one each")
    if logprobs is not None and len(logprobs) != rlen:
        raise ValueError(f"{where}: {len(logprobs)} rollout_log_probs for {rlen} response tokens; want one each")
    metadata = _copy_metadata(sample.get("metadata"))
    if offset is not None:
        metadata.setdefault("nextstate", {})["offset"] = offset
    reward: Any = float(sample.get("reward", 0.0))
    if reward_key:
        outcome = (metadata.get("step_wise") or {}).get("outcome_reward", reward)
        reward = {reward_key: reward, "outcome_reward": float(outcome)}
    fields = dict(
        group_index=int(sample["group_index"]), index=int(sample["index"]), rollout_id=int(sample["index"]),
        prompt=prompt, tokens=tokens, response=response, response_length=rlen, reward=reward,
        loss_mask=[int(m) for m in loss_mask],
        rollout_log_probs=None if logprobs is None else [float(x) for x in logprobs],
        remove_sample=bool(sample.get("remove_sample", False)), metadata=metadata,
    )
    status_type = getattr(cls, "Status", None)
    fields["status"] = status_type(status) if status_type is not None else status
    return cls(**fields)


def _copy_metadata(md: Any) -> dict[str, Any]:
    if not isinstance(md, Mapping):
        return {}
    return {k: dict(v) if isinstance(v, Mapping) else v for k, v in md.items()}


def slime_sample_class() -> Optional[type]:
    """slime's ``Sample`` class, or None when slime is not installed."""
    try:
        from slime.utils.types import Sample  # type: ignore[import-not-found]
    except ImportError:
        return None
    return Sample


def convert_groups(groups: Sequence[Sequence[Trajectory]], *, layout: str = "auto",
                   tokenizer: Optional[Tokenizer] = None, reward_key: Optional[str] = None,
                   sample_cls: Optional[type] = None) -> list[Any]:
    """Groups of trajectories (from :class:`~nextstate.groups.GroupAssembler`)
    as slime's rollout output, in ``layout`` (see the module doc)."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r}: want one of {', '.join(LAYOUTS)}")
    if layout == "auto":
        layout = "flat" if all(len(t.samples) == 1 for g in groups for t in g) else "trajectory"
    out: list[Any] = []
    for g in groups:
        trajs = [[convert_sample(s, o, tokenizer=tokenizer, reward_key=reward_key, sample_cls=sample_cls)
                  for o, s in zip(t.offsets, t.samples)] for t in g]
        out.append(trajs if layout == "trajectory" else [s for t in trajs for s in t])
    return out


@dataclass
class Settings:
    """The adapter's settings (see the module doc for each)."""

    url: str = "ws://127.0.0.1:7070"
    token: Optional[str] = None
    run: Optional[str] = None
    env: Optional[str] = None
    after_seq: int = 0
    window: int = 1024
    state_file: Optional[str] = None
    layout: str = "auto"
    settle: float = 2.0
    timeout: float = 0.0
    max_buffer: int = 65536
    eval_run: Optional[str] = None

    @classmethod
    def from_args(cls, args: Any, environ: Optional[Mapping[str, str]] = None) -> "Settings":
        """Settings from ``args`` attributes (``nextstate_url``, ...), else
        the environment (``NEXTSTATE_URL``, ...), else the defaults."""
        env = os.environ if environ is None else environ
        names = {"url": "NEXTSTATE_URL", "token": "NEXTSTATE_TOKEN", "run": "NEXTSTATE_RUN",
                 "env": "NEXTSTATE_ENV", "after_seq": "NEXTSTATE_SAMPLES_AFTER",
                 "window": "NEXTSTATE_SAMPLES_WINDOW", "state_file": "NEXTSTATE_SAMPLES_STATE",
                 "layout": "NEXTSTATE_SLIME_LAYOUT", "settle": "NEXTSTATE_SAMPLES_SETTLE",
                 "timeout": "NEXTSTATE_ROLLOUT_TIMEOUT", "max_buffer": "NEXTSTATE_MAX_BUFFER",
                 "eval_run": "NEXTSTATE_EVAL_RUN"}
        attrs = {"after_seq": "nextstate_after"}
        s = cls()
        for f in dataclasses.fields(cls):
            v = getattr(args, attrs.get(f.name, f"nextstate_{f.name}"), None)
            if v is None:
                v = env.get(names[f.name]) or None
            if v is None:
                continue
            try:
                setattr(s, f.name, type(getattr(s, f.name))(v) if getattr(s, f.name) is not None else str(v))
            except ValueError:
                raise ValueError(f"{names[f.name]}={v!r}: want a {type(getattr(s, f.name)).__name__}") from None
        if s.layout not in LAYOUTS:
            raise ValueError(f"NEXTSTATE_SLIME_LAYOUT={s.layout!r}: want one of {', '.join(LAYOUTS)}")
        return s


class StreamBatcher:
    """Reads a :class:`SampleStream` into a :class:`GroupAssembler` until
    enough groups are ready. It lives on one event loop."""

    def __init__(self, stream: SampleStream, n: int, *, settle: float = 2.0, max_buffer: int = 65536) -> None:
        self.stream = stream
        self.groups = GroupAssembler(n)
        self.settle = settle
        self.max_buffer = max_buffer

    async def collect(self, want: int, timeout: float = 0.0) -> list[list[Trajectory]]:
        """Waits until ``want`` groups are ready and takes them. ``timeout``
        (seconds, 0: none) bounds the wait: TimeoutError says what is held."""
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while self.groups.ready < want:
            self.stream.commit(self.groups.take_dropped())
            wait = self.settle if self.settle > 0 else None
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(self._status(want, f"no batch within {timeout:g}s"))
                wait = left if wait is None else min(wait, left)
            try:
                rec = await self.stream.next(wait)
            except asyncio.TimeoutError:
                if self._quiet_not_blocked():
                    self.groups.settle()
                elif self.groups.held >= self.max_buffer:
                    # Nothing more can come in, and what is held makes no batch.
                    raise RuntimeError(self._status(want, "the buffer is full and holds no complete batch")) from None
                continue
            self.groups.add(rec.offset, rec.sample)
            if self.groups.held < self.max_buffer:
                self.stream.release(rec.offset)  # keep the window open while we gather groups
        self.stream.commit(self.groups.take_dropped())
        return self.groups.take(want)

    def _quiet_not_blocked(self) -> bool:
        # The stream is quiet. If the window is not what holds it back, the
        # trajectory whose samples were arriving has all of them.
        return self.stream.unacknowledged < self.stream.window

    def _status(self, want: int, why: str) -> str:
        return (f"nextstate: {why}: want {want} groups of {self.groups.n} trajectories; {self.groups.ready} ready, "
                f"{self.groups.pending_groups} incomplete, {self.groups.held} samples held, "
                f"{self.groups.dropped_trajectories} masked trajectories dropped. Check that the run's samples per "
                f"task (k) matches n_samples_per_prompt, or raise NEXTSTATE_MAX_BUFFER")

    def done(self, groups: Sequence[Sequence[Trajectory]]) -> int:
        """Marks the samples of ``groups`` processed; returns the committed offset."""
        return self.stream.commit(o for g in groups for t in g for o in t.offsets)


class _Background:
    """An event loop on a daemon thread, holding the client and the streams
    across slime's synchronous calls."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="nextstate-adapter", daemon=True)
        self.thread.start()
        self.client: Optional[Client] = None
        self.batchers: dict[tuple[Optional[str], int], StreamBatcher] = {}

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def batcher(self, s: Settings, run: Optional[str], n: int, state_file: Optional[str]) -> StreamBatcher:
        if self.client is None:
            # A trainer waits for its server however long it is away.
            self.client = await Client(s.url, token=s.token, reconnect=ReconnectPolicy(max_attempts=-1)).connect()
        key = (run, n)
        b = self.batchers.get(key)
        if b is None:
            stream = await SampleStream.open(self.client, after_seq=s.after_seq, window=s.window, run=run,
                                             env=s.env, state_file=state_file)
            b = self.batchers[key] = StreamBatcher(stream, n, settle=s.settle, max_buffer=s.max_buffer)
        return b


_bg: Optional[_Background] = None
_bg_lock = threading.Lock()
_tokenizer: Any = None


def _background() -> _Background:
    global _bg
    with _bg_lock:
        if _bg is None:
            _bg = _Background()
        return _bg


def _load_tokenizer(args: Any) -> Optional[Tokenizer]:
    global _tokenizer
    if _tokenizer is None and getattr(args, "hf_checkpoint", None):
        from slime.utils.processing_utils import load_tokenizer  # type: ignore[import-not-found]

        _tokenizer = load_tokenizer(args.hf_checkpoint, trust_remote_code=True)
    return _tokenizer


def generate_rollout(args: Any, rollout_id: int, data_source: Any = None, evaluation: bool = False) -> Any:
    """slime's rollout function: ``args.rollout_batch_size`` groups of
    ``args.n_samples_per_prompt`` trajectories from the sample stream, as
    ``RolloutFnTrainOutput`` (a plain list of groups without slime).
    ``data_source`` is not used: the samples come from nextstate. With
    ``evaluation``, the groups come from the run ``NEXTSTATE_EVAL_RUN`` and
    the answer is slime's evaluation dict."""
    s = Settings.from_args(args)
    bg = _background()
    n = int(getattr(args, "n_samples_per_prompt", 1))
    want = int(getattr(args, "rollout_batch_size", 1))
    run, state = s.run, s.state_file
    if evaluation:
        if not s.eval_run:
            raise ValueError("nextstate: evaluation needs NEXTSTATE_EVAL_RUN (or args.nextstate_eval_run), "
                             "the run whose trajectories to evaluate on")
        run, state = s.eval_run, None
        n = int(getattr(args, "n_samples_per_eval_prompt", None) or n)
    started = time.monotonic()
    b: StreamBatcher = bg.run(bg.batcher(s, run, n, state))
    groups = bg.run(b.collect(want, s.timeout))
    converted = convert_groups(groups, layout=s.layout, tokenizer=_tokenizer_if_needed(args, groups),
                               reward_key=getattr(args, "eval_reward_key" if evaluation else "reward_key", None))
    committed = bg.run(_async(b.done, groups))  # acknowledged once converted
    rewards = [t.reward for g in groups for t in g]
    metrics = {
        "nextstate/wait_seconds": time.monotonic() - started,
        "nextstate/trajectories": len(rewards),
        "nextstate/samples": sum(len(t.samples) for g in groups for t in g),
        "nextstate/reward_mean": sum(rewards) / len(rewards) if rewards else 0.0,
        "nextstate/dropped_trajectories": b.groups.dropped_trajectories,
        "nextstate/committed_offset": committed,
    }
    log.info("nextstate: rollout %s: %d groups, %d samples, mean reward %.4f", rollout_id, len(groups),
             metrics["nextstate/samples"], metrics["nextstate/reward_mean"])
    if evaluation:
        flat = [x for g in converted for x in _leaves(g)]
        data = {f"nextstate/{run}": {"rewards": rewards, "truncated": [
            t.samples[0].get("status") == "truncated" for g in groups for t in g], "samples": flat}}
        return _slime_output(True, data, metrics)
    return _slime_output(False, converted, metrics)


async def _async(fn: Any, *a: Any) -> Any:
    return fn(*a)


def _tokenizer_if_needed(args: Any, groups: Sequence[Sequence[Trajectory]]) -> Optional[Tokenizer]:
    if all(s.get("tokens") for g in groups for t in g for s in t.samples):
        return None
    return _load_tokenizer(args)


def _leaves(x: Any) -> list[Any]:
    return [y for z in x for y in _leaves(z)] if isinstance(x, list) else [x]


def _slime_output(evaluation: bool, data: Any, metrics: dict[str, Any]) -> Any:
    try:
        from slime.rollout.base_types import RolloutFnEvalOutput, RolloutFnTrainOutput  # type: ignore
    except ImportError:
        return data
    return RolloutFnEvalOutput(data=data, metrics=metrics) if evaluation else RolloutFnTrainOutput(
        samples=data, metrics=metrics)


def close() -> None:
    """Closes the adapter's connection and stops its thread (tests, clean
    shutdowns); the next :func:`generate_rollout` starts over."""
    global _bg
    with _bg_lock:
        bg, _bg = _bg, None
    if bg is None:
        return

    async def shut() -> None:
        for b in bg.batchers.values():
            await b.stream.close()
        if bg.client is not None:
            await bg.client.close()

    bg.run(shut())
    bg.loop.call_soon_threadsafe(bg.loop.stop)
    bg.thread.join(5)
    bg.loop.close()


__all__ = ["generate_rollout", "convert_sample", "convert_groups", "PlainSample", "Settings", "StreamBatcher",
           "close", "tokenize_turn"]
