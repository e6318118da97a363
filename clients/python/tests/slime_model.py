"""Upstream slime's side of the rollout-function contract, modeled so the
adapter's tests can check what slime does with its samples without slime,
Ray, torch or a GPU.

Each behaviour is written from slime's source, github.com/THUDM/slime at
commit SLIME_COMMIT, and cites the file and line it follows; it is our own
code, kept to what the adapter touches: the ``Sample`` fields and
``from_dict``, the check and flattening of a rollout function's nested
output, the reward post-processing and the condition under which it
normalizes per group, the conversion to training data (rollout ids, loss
masks, per-rollout mask sums, the log-prob fields, the OPD field), the
tensors the data becomes, and the split into training steps by rollout.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

SLIME_COMMIT = "624b824a898ab0ec1fcb4d373004c7f3852bf515"


@dataclass
class Sample:
    """The fields of slime's Sample that a rollout function sets and the
    manager reads (slime/utils/types.py:93-146), with slime's defaults."""

    class Status(enum.Enum):  # types.py:130-138
        PENDING = "pending"
        COMPLETED = "completed"
        TRUNCATED = "truncated"
        ABORTED = "aborted"
        FAILED = "failed"

    group_index: Optional[int] = None
    index: Optional[int] = None
    rollout_id: Optional[int] = None  # types.py:98-106: the rollout a training sample belongs to
    prompt: Any = ""
    tokens: list = field(default_factory=list)
    response: str = ""
    response_length: int = 0
    label: Optional[str] = None
    reward: Any = None  # types.py:118: a float, or a dict read under --reward-key
    loss_mask: Optional[list] = None
    rollout_log_probs: Optional[list] = None
    remove_sample: bool = False
    teacher_log_probs: Optional[list] = None  # types.py:128: read by OPD
    status: "Sample.Status" = Status.PENDING
    metadata: dict = field(default_factory=dict)
    train_metadata: Optional[dict] = None

    @staticmethod
    def from_dict(data: dict) -> "Sample":
        """types.py:229-244: ``status`` must be one of Status's values; keys
        that are fields go to the constructor, any other key becomes an
        attribute of the sample."""
        d = dict(data)
        d["status"] = Sample.Status(d["status"])
        names = set(Sample.__dataclass_fields__)
        s = Sample(**{k: v for k, v in d.items() if k in names})
        for k, v in d.items():
            if k not in names:
                setattr(s, k, v)
        return s

    def get_reward_value(self, args: Any) -> Any:
        """types.py:246-247: the reward, or its entry under args.reward_key."""
        return self.reward[args.reward_key] if args.reward_key else self.reward


def check_rollout_ids(node: Any, depth: int = 0) -> None:
    """slime/observability/rollout_data_utils.py:92-122
    (validate_rollout_id_annotated, called at slime/ray/rollout.py:601): a
    list of two or more Samples nested two or more levels deep is one
    rollout's training samples, and all of them must carry the same,
    non-None rollout_id. Shallower lists are not checked."""
    if isinstance(node, Sample):
        return
    assert isinstance(node, list), f"a rollout output holds a {type(node).__name__}"
    if node and isinstance(node[0], Sample):
        if depth >= 2 and len(node) > 1:
            ids = [s.rollout_id for s in node]
            assert None not in ids, f"rollout_id is unset on some of {len(node)} samples of one rollout"
            assert len(set(ids)) == 1, f"samples of one rollout carry rollout_ids {ids}"
        return
    for x in node:
        check_rollout_ids(x, depth + 1)


def flatten(data: list) -> list:
    """slime/ray/rollout.py:603-604: nested lists are flattened level by
    level, as long as the first element is a list."""
    while isinstance(data[0], list):
        data = [y for x in data for y in x]
    return data


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def _std(xs: Sequence[float]) -> float:
    # torch.std's default: the sample standard deviation (n - 1); NaN for one value.
    if len(xs) < 2:
        return math.nan
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def post_process_rewards(args: Any, samples: list, hook: Optional[Callable] = None) -> tuple[list, list]:
    """slime/ray/rollout.py:608-633 (_post_process_rewards).

    * With --custom-reward-post-process-path, the hook's answer is used as
      it is (rollout.py:609-610).
    * Else, for grpo, gspo, cispo and reinforce_plus_plus_baseline with
      rewards normalization on, the rewards are centred per group of
      n_samples_per_prompt *only when there are exactly
      n_samples_per_prompt × rollout_batch_size samples*; otherwise the whole
      batch is one group (rollout.py:614-622). grpo, gspo and cispo also
      divide by the standard deviation + 1e-6 when grpo std normalization
      is on (rollout.py:627-629).
    * Else the raw rewards are returned as they are (rollout.py:633).
    """
    if hook is not None:
        return hook(args, samples)
    raw = [s.get_reward_value(args) for s in samples]
    if args.advantage_estimator not in ("grpo", "gspo", "cispo", "reinforce_plus_plus_baseline") or \
            not args.rewards_normalization:
        return raw, raw
    n = args.n_samples_per_prompt
    groups = [raw[i:i + n] for i in range(0, len(raw), n)] if len(raw) == n * args.rollout_batch_size else [raw]
    out = []
    for g in groups:
        m = _mean(g)
        c = [float(r) - m for r in g]
        if args.advantage_estimator in ("grpo", "gspo", "cispo") and args.grpo_std_normalization:
            sd = _std(c)
            c = [x / (sd + 1e-6) for x in c]
        out.extend(c)
    return raw, out


def _tensor(values: Any, what: str) -> list:
    # slime/observability/rollout_data_utils.py:12-33: these keys become
    # float32 (or integer) tensors, one per sample; a None cannot.
    if values is None:
        raise TypeError(f"{what}: cannot make a tensor of None")
    return [float(v) for v in values]


def train_data(args: Any, samples: list, hook: Optional[Callable] = None) -> dict[str, Any]:
    """slime/ray/rollout.py:635-752 (_convert_samples_to_train_data), the
    keys the adapter's samples affect, then tensorized as
    rollout.py:816 does (rollout_data_utils.py:31-33)."""
    raw, rewards = post_process_rewards(args, samples, hook)
    assert len(raw) == len(samples) and len(rewards) == len(samples)  # rollout.py:642-643
    # rollout.py:647-655: a sample without rollout_id gets the smallest id
    # not yet in use, so each such sample is a rollout of its own.
    ids = [s.rollout_id for s in samples]
    used = {i for i in ids if i is not None}
    nxt = 0
    for k, rid in enumerate(ids):
        if rid is None:
            while nxt in used:
                nxt += 1
            ids[k] = nxt
            used.add(nxt)
    masks = []
    for s in samples:  # rollout.py:672-684
        m = [1] * s.response_length if s.loss_mask is None else list(s.loss_mask)
        assert len(m) == s.response_length, f"loss mask of {len(m)} for {s.response_length} response tokens"
        masks.append([0] * s.response_length if s.remove_sample else m)
    totals: dict[int, int] = {}
    for rid, m in zip(ids, masks):  # rollout.py:695-700: one denominator per rollout
        totals[rid] = totals.get(rid, 0) + sum(m)
    data: dict[str, Any] = {
        "tokens": [list(s.tokens) for s in samples], "response_lengths": [s.response_length for s in samples],
        "rewards": rewards, "raw_reward": raw, "rollout_ids": ids, "loss_masks": masks,
        "rollout_mask_sums": [totals[rid] for rid in ids],
    }
    # rollout.py:715-716 and 746-747: the first sample decides whether the
    # key exists; if it does, every sample's value is taken. slime makes the
    # tensors per data-parallel rank after the step split (rollout.py:816),
    # so a None in a rollout the split leaves out does not fail there; the
    # model tensorizes every sample.
    if samples[0].rollout_log_probs is not None:
        data["rollout_log_probs"] = [_tensor(s.rollout_log_probs, "rollout_log_probs") for s in samples]
    if samples[0].teacher_log_probs is not None:
        data["teacher_log_probs"] = [_tensor(s.teacher_log_probs, "teacher_log_probs") for s in samples]
    return data


def grpo_token_advantages(data: dict[str, Any]) -> list[list[float]]:
    """slime/utils/ppo_utils.py:361-368 (get_grpo_returns, used for grpo at
    slime/backends/megatron_utils/loss.py:763-765): each response token's
    advantage is its sample's post-processed reward."""
    return [[r] * n for r, n in zip(data["rewards"], data["response_lengths"])]


def steps_by_rollout(rollout_ids: Sequence[int], global_batch_size: int) -> list[list[int]]:
    """slime/utils/dp_schedule.py:128-148 (build_dp_schedule): samples are
    grouped by rollout id in first-seen order, each training step takes
    global_batch_size rollouts with all their samples, and rollouts past
    the last full step are left out; fewer rollouts than one step fail."""
    by: dict[int, list[int]] = {}
    for pos, rid in enumerate(rollout_ids):
        by.setdefault(rid, []).append(pos)
    order = list(by)
    steps = len(order) // global_batch_size
    assert steps >= 1, f"{len(order)} rollouts < global_batch_size {global_batch_size}"
    return [[p for rid in order[k * global_batch_size:(k + 1) * global_batch_size] for p in by[rid]]
            for k in range(steps)]


def static_steps_fit(step_sizes: Sequence[int], micro_batch_size: int, dp_size: int) -> bool:
    """slime/utils/dp_schedule.py:125 and 157-184 (build_dp_schedule
    without --use-dynamic-batch-size): each step's samples are cut into
    micro-batches of micro_batch_size, and their count must be a multiple
    of dp_size (times the virtual-pipeline group, not modeled), or slime
    fails the step. With --use-dynamic-batch-size the micro-batches are
    split until they fit (dp_schedule.py:170-176)."""
    return all(-(-n // micro_batch_size) % dp_size == 0 for n in step_sizes)


def train_on(args: Any, output: list, hook: Optional[Callable] = None) -> tuple[list, dict[str, Any], list]:
    """What slime's rollout manager does with a rollout function's samples
    (slime/ray/rollout.py:492-511, 583-606): check the rollout ids, flatten,
    convert to training data, split into steps. Returns the flat samples,
    the data and the steps."""
    check_rollout_ids(output)
    flat = flatten(output)
    data = train_data(args, flat, hook)
    return flat, data, steps_by_rollout(data["rollout_ids"], args.global_batch_size)
