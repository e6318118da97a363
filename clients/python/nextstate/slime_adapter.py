"""A slime rollout function that trains on nextstate's sample stream.

slime (github.com/THUDM/slime) calls a custom rollout function
(``--rollout-function-path``) as
``generate_rollout(args, rollout_id, data_source, evaluation=False)`` and
takes back groups of ``Sample`` objects (``RolloutFnTrainOutput``). This one
generates nothing: agents act in nextstate sessions (``nextstate run``, your
own harness), the server turns each finished trajectory into samples, one
per turn, and :func:`generate_rollout` pulls them from the stream until it
has ``args.rollout_batch_size`` groups of ``args.n_samples_per_prompt``
trajectories, converts them to slime ``Sample`` objects, acknowledges them
once converted, and returns them::

    NEXTSTATE_URL=ws://trainer-gw:7070 NEXTSTATE_TOKEN=... NEXTSTATE_RUN=grpo-1 \\
    python train.py ... --rollout-function-path nextstate.slime_adapter.generate_rollout \\
        --custom-reward-post-process-path nextstate.slime_adapter.post_process_rewards \\
        --use-dynamic-batch-size --max-tokens-per-gpu 8192 \\
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
``nextstate_layout``           ``NEXTSTATE_SLIME_LAYOUT``          ``turns``
``nextstate_text_turns``       ``NEXTSTATE_TEXT_TURNS``            ``tokenize``
``nextstate_settle``           ``NEXTSTATE_SAMPLES_SETTLE``        ``2`` seconds (0: off)
``nextstate_timeout``          ``NEXTSTATE_ROLLOUT_TIMEOUT``       ``0`` (wait as long as it takes)
``nextstate_max_buffer``       ``NEXTSTATE_MAX_BUFFER``            ``65536`` samples
``nextstate_eval_run``         ``NEXTSTATE_EVAL_RUN``              none (evaluation is refused)
=============================  ==================================  =============================

**Layout ``turns``** (the default, for upstream slime). Each sample is one
turn, as the gym recorded it (its token ids and log-probs are the truth;
nothing is re-tokenized). The output is ``list[list[list[Sample]]]``
(group × trajectory × turns) and every turn of a trajectory carries the
trajectory's ``index`` as ``rollout_id``, upstream slime's contract for
several training samples of one rollout: its data-parallel split keeps a
rollout's samples in one step and counts ``--global-batch-size`` in
rollouts, and its loss averages each rollout once, not once per turn.
slime's own reward normalization cannot do GRPO here: it normalizes by
group only when the batch has exactly ``n_samples_per_prompt ×
rollout_batch_size`` samples, so multi-turn trajectories would be z-scored
as one pooled group, each weighted by its turn count. The adapter therefore
computes each group's advantages over its trajectories (one reward per
trajectory, slime's formula per group: ``(r − mean)``, divided by the
sample standard deviation + 1e-6 for grpo, gspo and cispo when
``--disable-grpo-std-normalization`` is not given), writes them to
``metadata.nextstate.advantage`` on every turn, and
:func:`post_process_rewards`, slime's ``--custom-reward-post-process-path``,
hands them to slime. Without that flag (and with an estimator slime
normalizes for) :func:`generate_rollout` refuses to start. A training
step holds whole trajectories, so its sample count varies: with more than
one data-parallel rank slime's static micro-batches fail on a count that
is not a multiple of the rank count, and ``--use-dynamic-batch-size`` is
needed (the adapter warns without it).

Why not one sample per trajectory (the conversation as one token chain,
slime/agent/trajectory.py's shape)? That needs every turn's prompt ids to
extend the previous turn's tokens exactly, which chat templates break
(Qwen3 drops earlier turns' reasoning, templates re-render tool calls), and
where they do slime's own TrajectoryManager forks the chain into several
samples of one rollout, under the same normalization problem. Per-turn
samples with ``rollout_id`` and per-group advantages are right for every
trajectory the gym records, including text-only turns.

**Layout ``openclaw-rl``**, for OpenClaw-RL's fork of slime, not upstream:
``list[list[Sample]]`` (each group's turns in order) without
``rollout_id``; the fork groups a trajectory's turns by their shared
``index`` ("dynamic_history") and its ``step_wise`` estimator reads
``metadata.step_wise``. No advantages are computed.

**Masking.** Trajectories with an infrastructure failure (``remove_sample``,
status ``aborted``) are dropped before grouping; their groups wait for valid
trajectories (see :mod:`nextstate.groups`).

**Text-only turns** (an agent that sent no token ids). ``tokenize``: the
turn is tokenized with the policy's tokenizer (slime's ``--hf-checkpoint``)
as the gym's trainer does: the prompt through the chat template with the
generation prompt, then the response and the end-of-turn token
(``<|im_end|>``, else the tokenizer's EOS). It has no rollout log-probs, and
slime reads ``rollout_log_probs`` for the whole batch only if its first
sample has them, so in a batch that mixes such turns with turns that carry
log-probs the log-probs are removed from every sample, counted in
``nextstate/rollout_log_probs_dropped`` and logged; when slime is set to
need them (``--use-rollout-logprobs``, ``--use-tis``,
``--get-mismatch-metrics``) the batch is refused instead. ``drop``: text-only
turns are left out (``nextstate/text_turns_dropped``); a trajectory with no
token turn at all is dropped before grouping, as masked ones are, so its
group waits for another.

**OPD.** With ``--use-opd --opd-type sglang``, slime's loss reads
``Sample.teacher_log_probs`` of every sample. The adapter fills them from the
teacher server at ``--rm-url`` (an SGLang ``/generate`` endpoint, as slime's
OPD example sets it): each turn is scored under its teacher context, the
hint-augmented ``metadata.opd.teacher_prompt`` through the chat template
then the same response ids when the judge gave a hint, the turn's own
tokens otherwise (:mod:`nextstate.opd`). With ``--opd-type megatron``
slime's teacher scores the turn's own ``tokens`` and cannot see a hint; the
adapter says so once.

**Evaluation** (``evaluation=True``) reads the run ``NEXTSTATE_EVAL_RUN``:
every complete trajectory it has once its stream is quiet, each task's
trajectories together, however many the run played per task.

**At-least-once.** Samples are acknowledged after conversion; with a state
file, a restarted trainer resumes after the last batch it converted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, Sequence

from . import opd
from .chat import Tokenizer, end_of_turn_id, prompt_ids, tokenize_turn  # noqa: F401 (re-exported)
from .client import Client, ReconnectPolicy
from .groups import GroupAssembler, Trajectory
from .opd import Post, TeacherScorer, teacher_for, teacher_tokens  # noqa: F401 (re-exported)
from .samples import SampleStream

log = logging.getLogger("nextstate")

LAYOUTS = ("turns", "openclaw-rl")
TEXT_TURNS = ("tokenize", "drop")
STATUSES = ("completed", "truncated", "aborted", "failed", "pending")

REWARD_HOOK = "nextstate.slime_adapter.post_process_rewards"
"""The value of slime's ``--custom-reward-post-process-path`` that layout
``turns`` needs."""

# slime's advantage estimators whose rewards its rollout manager normalizes
# by group, and those of them it also divides by the standard deviation.
GROUP_ESTIMATORS = ("grpo", "gspo", "cispo", "reinforce_plus_plus_baseline")
STD_ESTIMATORS = ("grpo", "gspo", "cispo")
EPS = 1e-6

# The layouts of earlier versions, and what replaced them.
_OLD_LAYOUTS = {"auto": "turns", "trajectory": "turns", "flat": "openclaw-rl"}


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
    teacher_log_probs: Optional[list[float]] = None
    remove_sample: bool = False
    status: str = "completed"
    metadata: dict[str, Any] = field(default_factory=dict)


def convert_sample(sample: Mapping[str, Any], offset: Optional[int] = None, *,
                   tokenizer: Optional[Tokenizer] = None, reward_key: Optional[str] = None,
                   sample_cls: Optional[type] = None, rollout_id: bool = True) -> Any:
    """One nextstate sample as a slime ``Sample`` (``sample_cls``; default
    slime's if importable, else :class:`PlainSample`).

    ``rollout_id`` (true: layout ``turns``) sets ``Sample.rollout_id`` to
    the trajectory's ``index``; ``metadata.nextstate`` gains ``offset``. A
    turn without token ids is tokenized with ``tokenizer``
    (:func:`tokenize_turn`; ValueError without one) and has no rollout
    log-probs. ``reward`` is a float; ``reward_key`` (slime's
    ``--reward-key``) makes it a dict holding the sequence score under that
    key and the outcome under ``outcome_reward``.
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
                             "set args.hf_checkpoint, set NEXTSTATE_TEXT_TURNS=drop, or have the agent send "
                             "token ids in its turns")
        tokens, rlen = tokenize_turn(tokenizer, prompt, response)
        loss_mask = [0 if sample.get("remove_sample") else 1] * rlen
        logprobs = None
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
    try:
        reward: Any = float(sample.get("reward", 0.0))
    except (TypeError, ValueError):
        raise ValueError(f"{where}: reward {sample.get('reward')!r}, want a number") from None
    if reward_key:
        outcome = (metadata.get("step_wise") or {}).get("outcome_reward", reward)
        reward = {reward_key: reward, "outcome_reward": float(outcome)}
    fields = dict(
        group_index=int(sample["group_index"]), index=int(sample["index"]),
        rollout_id=int(sample["index"]) if rollout_id else None,
        prompt=prompt, tokens=tokens, response=response, response_length=rlen, reward=reward,
        loss_mask=[int(m) for m in loss_mask],
        rollout_log_probs=None if logprobs is None else [float(x) for x in logprobs],
        remove_sample=bool(sample.get("remove_sample", False)), metadata=metadata,
    )
    status_type = getattr(cls, "Status", None)
    fields["status"] = status_type(status) if status_type is not None else status
    return _make(cls, fields)


def _make(cls: type, fields: dict[str, Any]) -> Any:
    # An older Sample class (OpenClaw-RL's fork) may lack a field this
    # adapter sets; one left None can be left out, one with a value cannot.
    if dataclasses.is_dataclass(cls):
        names = {f.name for f in dataclasses.fields(cls)}
        for k in [k for k in fields if k not in names]:
            if fields[k] is not None:
                raise ValueError(f"{cls.__module__}.{cls.__name__} has no field {k!r}, which this layout sets: "
                                 "is this the slime the layout is for?")
            del fields[k]
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


def group_advantages(rewards: Sequence[float], estimator: Optional[str], *, normalize: bool = True,
                     std_normalize: bool = True) -> list[float]:
    """The advantages of one group's trajectories from their rewards, as
    slime computes them for a group: for an estimator of
    :data:`GROUP_ESTIMATORS` with ``normalize``, ``r − mean``, divided by
    the sample standard deviation + 1e-6 for one of :data:`STD_ESTIMATORS`
    with ``std_normalize``; else the rewards as they are. A group of one
    has no standard deviation: its advantage is 0."""
    rs = [float(r) for r in rewards]
    if not rs:
        return []
    if estimator not in GROUP_ESTIMATORS or not normalize:
        return rs
    mean = sum(rs) / len(rs)
    out = [r - mean for r in rs]
    if estimator in STD_ESTIMATORS and std_normalize:
        if len(rs) == 1:
            return [0.0]
        std = math.sqrt(sum(a * a for a in out) / (len(rs) - 1))
        out = [a / (std + EPS) for a in out]
    return out


@dataclass
class Options:
    """How :func:`convert_groups` builds a batch; :meth:`from_args` reads
    them from slime's ``args``."""

    layout: str = "turns"
    text_turns: str = "tokenize"
    reward_key: Optional[str] = None
    # slime's --advantage-estimator, rewards_normalization and
    # grpo_std_normalization; estimator None computes no advantages.
    advantage_estimator: Optional[str] = "grpo"
    rewards_normalization: bool = True
    grpo_std_normalization: bool = True
    # slime needs rollout_log_probs on every sample: refuse a batch that would lose them.
    need_log_probs: bool = False

    def __post_init__(self) -> None:
        check_layout(self.layout)
        if self.text_turns not in TEXT_TURNS:
            raise ValueError(f"NEXTSTATE_TEXT_TURNS={self.text_turns!r}: want one of {', '.join(TEXT_TURNS)}")

    @classmethod
    def from_args(cls, args: Any, layout: str = "turns", text_turns: str = "tokenize", *,
                  evaluation: bool = False) -> "Options":
        """Options from slime's ``args`` (missing attributes: slime's defaults)."""
        return cls(
            layout=layout, text_turns=text_turns,
            reward_key=getattr(args, "eval_reward_key" if evaluation else "reward_key", None),
            advantage_estimator=None if evaluation else getattr(args, "advantage_estimator", "grpo"),
            rewards_normalization=bool(getattr(args, "rewards_normalization", True)),
            grpo_std_normalization=bool(getattr(args, "grpo_std_normalization", True)),
            need_log_probs=not evaluation and any(
                bool(getattr(args, a, False)) for a in ("use_rollout_logprobs", "use_tis", "get_mismatch_metrics")),
        )


def check_layout(layout: str) -> None:
    """Raises ValueError for a layout this adapter does not have."""
    if layout in _OLD_LAYOUTS:
        raise ValueError(f"NEXTSTATE_SLIME_LAYOUT={layout!r} is gone: use {_OLD_LAYOUTS[layout]!r} "
                         f"(layouts: {', '.join(LAYOUTS)}; see nextstate.slime_adapter's doc)")
    if layout not in LAYOUTS:
        raise ValueError(f"NEXTSTATE_SLIME_LAYOUT={layout!r}: want one of {', '.join(LAYOUTS)}")


def check_slime_args(args: Any, layout: str) -> None:
    """Raises ValueError when slime's ``args`` would train layout ``turns``
    wrongly: an estimator slime normalizes by group, without
    :data:`REWARD_HOOK` as ``--custom-reward-post-process-path``. Warns
    once without ``--use-dynamic-batch-size``: slime's static micro-batches
    need each step's sample count to be a multiple of the data-parallel
    size, which turns per trajectory do not keep."""
    global _warned_static_batches
    if layout == "turns" and getattr(args, "use_dynamic_batch_size", True) is False and not _warned_static_batches:
        _warned_static_batches = True
        log.warning("nextstate: without --use-dynamic-batch-size, slime's training steps need a sample count that "
                    "is a multiple of data-parallel size × --micro-batch-size, which one sample per turn does not "
                    "guarantee: with more than one data-parallel rank, pass --use-dynamic-batch-size "
                    "--max-tokens-per-gpu N")
    if layout != "turns" or not hasattr(args, "advantage_estimator"):
        return
    if args.advantage_estimator not in GROUP_ESTIMATORS or not getattr(args, "rewards_normalization", True):
        return
    hook = getattr(args, "custom_reward_post_process_path", None)
    if hook != REWARD_HOOK:
        raise ValueError(
            f"nextstate: with --advantage-estimator {args.advantage_estimator}, slime normalizes rewards by group "
            f"only when a batch has n_samples_per_prompt × rollout_batch_size samples, which one sample per turn "
            f"breaks; add --custom-reward-post-process-path {REWARD_HOOK} (it hands slime the per-group "
            f"advantages the adapter computes; now: {hook!r}), or set NEXTSTATE_SLIME_LAYOUT=openclaw-rl for "
            f"OpenClaw-RL's fork of slime")


@dataclass
class Batch:
    """A converted batch: slime's samples in the layout's shape, and what
    the conversion did, as metrics."""

    samples: list[Any]
    text_turns_tokenized: int = 0
    text_turns_dropped: int = 0
    rollout_log_probs_dropped: int = 0
    teacher_scored: int = 0

    def leaves(self) -> list[Any]:
        """Every sample, in order."""
        return _leaves(self.samples)

    def metrics(self) -> dict[str, float]:
        return {"nextstate/text_turns_tokenized": self.text_turns_tokenized,
                "nextstate/text_turns_dropped": self.text_turns_dropped,
                "nextstate/rollout_log_probs_dropped": self.rollout_log_probs_dropped,
                "nextstate/teacher_scored": self.teacher_scored}


def convert_groups(groups: Sequence[Sequence[Trajectory]], options: Optional[Options] = None, *,
                   tokenizer: Optional[Tokenizer] = None, sample_cls: Optional[type] = None,
                   teacher: Optional[TeacherScorer] = None) -> Batch:
    """Groups of trajectories (from :class:`~nextstate.groups.GroupAssembler`)
    as a batch for slime, in ``options.layout`` (see the module doc): text-only
    turns tokenized or left out, log-probs kept only if every sample has them,
    per-group advantages in ``metadata.nextstate.advantage`` (layout
    ``turns``), and with ``teacher`` every sample's ``teacher_log_probs``."""
    o = options or Options()
    turns = o.layout == "turns"
    b = Batch(samples=[])
    trajs_of: list[list[list[Any]]] = []
    sources: list[tuple[Mapping[str, Any], Any]] = []  # (nextstate sample, converted) for OPD
    for g in groups:
        trajs = []
        for t in g:
            out = []
            for off, s in zip(t.offsets, t.samples):
                if not s.get("tokens"):
                    if o.text_turns == "drop":
                        b.text_turns_dropped += 1
                        continue
                    b.text_turns_tokenized += 1
                x = convert_sample(s, off, tokenizer=tokenizer, reward_key=o.reward_key, sample_cls=sample_cls,
                                   rollout_id=turns)
                out.append(x)
                sources.append((s, x))
            if not out:
                raise ValueError(f"trajectory {t.index} has no turn left to train on (all text-only, with "
                                 "NEXTSTATE_TEXT_TURNS=drop): the group assembler should have dropped it")
            trajs.append(out)
        trajs_of.append(trajs)
    flat = [x for trajs in trajs_of for t in trajs for x in t]
    with_lp = sum(1 for x in flat if x.rollout_log_probs is not None)
    if 0 < with_lp < len(flat):
        # slime reads rollout_log_probs for a batch only if its first sample
        # has them, and then from every sample.
        if o.need_log_probs:
            raise ValueError(
                f"nextstate: {len(flat) - with_lp} of the batch's {len(flat)} turns carry no rollout log-probs "
                "(their agents sent text only) and slime is set to need them (--use-rollout-logprobs, --use-tis "
                "or --get-mismatch-metrics): set NEXTSTATE_TEXT_TURNS=drop, or have every agent send token ids "
                "and log-probs")
        for x in flat:
            x.rollout_log_probs = None
        b.rollout_log_probs_dropped = with_lp
        log.warning("nextstate: the batch mixes %d turns with rollout log-probs and %d text-only turns without: "
                    "log-probs removed from all (slime recomputes them); set NEXTSTATE_TEXT_TURNS=drop to keep "
                    "them", with_lp, len(flat) - with_lp)
    if turns and o.advantage_estimator is not None:
        for g, trajs in zip(groups, trajs_of):
            adv = group_advantages([_reward_of(t[0].reward, o.reward_key) for t in trajs], o.advantage_estimator,
                                   normalize=o.rewards_normalization, std_normalize=o.grpo_std_normalization)
            for t, a in zip(trajs, adv):
                for x in t:
                    x.metadata.setdefault("nextstate", {})["advantage"] = a
    if teacher is not None:
        b.teacher_scored = opd.attach_teacher_log_probs(teacher, sources, tokenizer)
    b.samples = [trajs if turns else [x for t in trajs for x in t] for trajs in trajs_of]
    return b


def _reward_of(reward: Any, reward_key: Optional[str]) -> float:
    return float(reward[reward_key] if reward_key else reward)


def post_process_rewards(args: Any, samples: Sequence[Any]) -> tuple[list[float], list[float]]:
    """slime's ``--custom-reward-post-process-path`` for layout ``turns``:
    the raw rewards (as slime reads them, under ``args.reward_key`` when
    set) and the advantages :func:`convert_groups` computed per group,
    from ``metadata.nextstate.advantage``."""
    key = getattr(args, "reward_key", None)
    raw, adv = [], []
    for i, s in enumerate(samples):
        a = ((getattr(s, "metadata", None) or {}).get("nextstate") or {}).get("advantage")
        if a is None:
            raise ValueError(f"sample {i} (index {getattr(s, 'index', None)}) has no metadata.nextstate.advantage: "
                             f"{REWARD_HOOK} takes the samples of nextstate.slime_adapter.generate_rollout "
                             "with NEXTSTATE_SLIME_LAYOUT=turns only")
        raw.append(_reward_of(s.reward, key))
        adv.append(float(a))
    return raw, adv


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
    layout: str = "turns"
    text_turns: str = "tokenize"
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
                 "layout": "NEXTSTATE_SLIME_LAYOUT", "text_turns": "NEXTSTATE_TEXT_TURNS",
                 "settle": "NEXTSTATE_SAMPLES_SETTLE", "timeout": "NEXTSTATE_ROLLOUT_TIMEOUT",
                 "max_buffer": "NEXTSTATE_MAX_BUFFER", "eval_run": "NEXTSTATE_EVAL_RUN"}
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
        check_layout(s.layout)
        if s.text_turns not in TEXT_TURNS:
            raise ValueError(f"NEXTSTATE_TEXT_TURNS={s.text_turns!r}: want one of {', '.join(TEXT_TURNS)}")
        return s


class StreamBatcher:
    """Reads a :class:`SampleStream` into a :class:`GroupAssembler` until
    enough groups are ready. It lives on one event loop."""

    def __init__(self, stream: SampleStream, n: int, *, settle: float = 2.0, max_buffer: int = 65536,
                 drop_text_only: bool = False) -> None:
        self.stream = stream
        self.groups = GroupAssembler(n, drop_text_only=drop_text_only)
        self.settle = settle
        self.max_buffer = max_buffer

    async def collect(self, want: int, timeout: float = 0.0) -> list[list[Trajectory]]:
        """Waits until ``want`` groups are ready and takes them. ``timeout``
        (seconds, 0: none) bounds the wait: TimeoutError says what is held."""
        await self._fill(lambda: self.groups.ready >= want, want, timeout)
        return self.groups.take(want)

    async def collect_available(self, timeout: float = 0.0) -> list[list[Trajectory]]:
        """Waits until the stream is quiet (``settle`` seconds without a
        sample, with nothing holding it back) and at least one trajectory is
        complete, then takes every complete trajectory, one group per task
        whatever its size (:meth:`GroupAssembler.take_all`)."""
        if self.settle <= 0:
            raise ValueError("evaluation waits for a quiet stream: set NEXTSTATE_SAMPLES_SETTLE above 0")
        await self._fill(None, 1, timeout)
        return self.groups.take_all()

    async def _fill(self, enough: Optional[Callable[[], bool]], want: int, timeout: float) -> None:
        # enough None: until the stream is quiet and a trajectory is complete.
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while enough is None or not enough():
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
                    if enough is None and self.groups.complete_trajectories > 0:
                        break
                elif self.groups.held >= self.max_buffer:
                    if enough is None and self.groups.complete_trajectories > 0:
                        break
                    # Nothing more can come in, and what is held makes no batch.
                    raise RuntimeError(self._status(want, "the buffer is full and holds no complete batch")) from None
                continue
            self.groups.add(rec.offset, rec.sample)
            if self.groups.held < self.max_buffer:
                self.stream.release(rec.offset)  # keep the window open while we gather groups
        self.stream.commit(self.groups.take_dropped())

    def _quiet_not_blocked(self) -> bool:
        # The stream is quiet. If the window is not what holds it back, the
        # trajectory whose samples were arriving has all of them.
        return self.stream.unacknowledged < self.stream.window

    def _status(self, want: int, why: str) -> str:
        return (f"nextstate: {why}: want {want} groups of {self.groups.n} trajectories; {self.groups.ready} ready, "
                f"{self.groups.pending_groups} incomplete, {self.groups.held} samples held, "
                f"{self.groups.dropped_trajectories} masked and {self.groups.dropped_text_only} text-only "
                f"trajectories dropped. Check that the run's samples per task (k) matches n_samples_per_prompt, "
                f"or raise NEXTSTATE_MAX_BUFFER")

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
            b = self.batchers[key] = StreamBatcher(stream, n, settle=s.settle, max_buffer=s.max_buffer,
                                                   drop_text_only=s.text_turns == "drop")
        return b


_bg: Optional[_Background] = None
_bg_lock = threading.Lock()
_tokenizer: Any = None
_warned_static_batches = False


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
    ``evaluation``, every complete trajectory of the run
    ``NEXTSTATE_EVAL_RUN`` once its stream is quiet, as slime's evaluation
    dict."""
    s = Settings.from_args(args)
    if not evaluation:
        check_slime_args(args, s.layout)
    bg = _background()
    n = int(getattr(args, "n_samples_per_prompt", 1))
    want = int(getattr(args, "rollout_batch_size", 1))
    run, state = s.run, s.state_file
    if evaluation:
        if not s.eval_run:
            raise ValueError("nextstate: evaluation needs NEXTSTATE_EVAL_RUN (or args.nextstate_eval_run), "
                             "the run whose trajectories to evaluate on")
        run, state, n = s.eval_run, None, 1
    started = time.monotonic()
    b: StreamBatcher = bg.run(bg.batcher(s, run, n, state))
    groups = bg.run(b.collect_available(s.timeout) if evaluation else b.collect(want, s.timeout))
    opts = Options.from_args(args, s.layout, s.text_turns, evaluation=evaluation)
    batch = convert_groups(groups, opts, tokenizer=_tokenizer_if_needed(args, groups, evaluation, s.text_turns),
                           teacher=None if evaluation else teacher_for(args, groups))
    committed = bg.run(_async(b.done, groups))  # acknowledged once converted
    rewards = [t.reward for g in groups for t in g]
    metrics = {
        "nextstate/wait_seconds": time.monotonic() - started,
        "nextstate/trajectories": len(rewards),
        "nextstate/samples": len(batch.leaves()),
        "nextstate/reward_mean": sum(rewards) / len(rewards) if rewards else 0.0,
        "nextstate/dropped_trajectories": b.groups.dropped_trajectories,
        "nextstate/dropped_text_only_trajectories": b.groups.dropped_text_only,
        "nextstate/committed_offset": committed,
        **batch.metrics(),
    }
    log.info("nextstate: rollout %s: %d groups, %d samples, mean reward %.4f", rollout_id, len(groups),
             metrics["nextstate/samples"], metrics["nextstate/reward_mean"])
    if evaluation:
        data = {f"nextstate/{run}": {"rewards": rewards, "truncated": [
            t.samples[0].get("status") == "truncated" for g in groups for t in g], "samples": batch.leaves()}}
        return _slime_output(True, data, metrics)
    return _slime_output(False, batch.samples, metrics)


async def _async(fn: Any, *a: Any) -> Any:
    return fn(*a)


def _tokenizer_if_needed(args: Any, groups: Sequence[Sequence[Trajectory]], evaluation: bool,
                         text_turns: str) -> Optional[Tokenizer]:
    samples = [s for g in groups for t in g for s in t.samples]
    text = text_turns == "tokenize" and any(not s.get("tokens") for s in samples)
    hints = not evaluation and opd.needs_tokenizer(args, samples)
    return _load_tokenizer(args) if text or hints else None


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


__all__ = ["generate_rollout", "post_process_rewards", "convert_sample", "convert_groups", "group_advantages",
           "check_slime_args", "Options", "Batch", "PlainSample", "Settings", "StreamBatcher", "TeacherScorer",
           "teacher_tokens", "tokenize_turn", "prompt_ids", "close", "REWARD_HOOK"]
