"""Assembling GRPO groups of whole trajectories from the sample stream.

The stream carries one sample per trained turn (docs/formats.md, "Training
samples"): ``index`` numbers the trajectory (all its turns share it) and
``group_index`` the task's group, the same for every trajectory of one (run,
task). The store writes a trajectory's samples in one transaction, so they
have consecutive offsets and arrive together, in order.

:class:`GroupAssembler` takes samples in offset order and hands out groups of
``n`` complete trajectories. A trajectory is complete when

* its samples say how many turns it has (``metadata.nextstate.turns``) and
  all have arrived, or
* a sample of another trajectory arrived after it (the store writes each
  trajectory's samples together), or
* :meth:`GroupAssembler.settle` is called: the caller saw the stream go
  quiet while nothing held it back, so nothing more of it is on the way.

A trajectory any of whose samples is masked (``remove_sample`` true or status
``aborted``: an infrastructure failure says nothing about the agent) is
dropped whole: slime's group normalization would still count its reward.
Its offsets are reported as processed, and its group waits for ``n`` valid
trajectories (a rerun of the failed trial fills it). With ``drop_text_only``,
a trajectory none of whose turns carries token ids is dropped the same way
(counted apart, in ``dropped_text_only``), for a consumer that leaves text-only
turns out of training.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional


@dataclass
class Trajectory:
    """The samples of one trajectory, in offset order."""

    index: int
    group_index: int
    offsets: list[int] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    turns: Optional[int] = None  # from metadata.nextstate.turns, when the server says it
    complete: bool = False

    @property
    def masked(self) -> bool:
        """An infrastructure failure masked it: drop it."""
        return any(bool(s.get("remove_sample")) or s.get("status") == "aborted" for s in self.samples)

    @property
    def text_only(self) -> bool:
        """No turn carries token ids (its agent sent text only)."""
        return not any(s.get("tokens") for s in self.samples)

    @property
    def reward(self) -> float:
        """The trajectory's sequence score (the same on each of its samples)."""
        return float(self.samples[0].get("reward", 0.0)) if self.samples else 0.0


def check_sample(sample: Any, offset: int) -> None:
    """Raises ValueError saying what is wrong if ``sample`` is not a training
    sample this package can group and convert."""
    if not isinstance(sample, Mapping):
        raise ValueError(f"sample at offset {offset} is a {type(sample).__name__}, want a JSON object")
    for k in ("group_index", "index"):
        if not isinstance(sample.get(k), int) or isinstance(sample.get(k), bool):
            raise ValueError(f"sample at offset {offset}: {k!r} is {sample.get(k)!r}, want an integer")
    if not isinstance(sample.get("status", "completed"), str):
        raise ValueError(f"sample at offset {offset}: 'status' is {sample.get('status')!r}, want a string")


class GroupAssembler:
    """Collects samples (in offset order) into groups of ``n`` complete,
    unmasked trajectories; see the module doc."""

    def __init__(self, n: int, *, drop_text_only: bool = False) -> None:
        if n < 1:
            raise ValueError(f"n_samples_per_prompt {n}: want 1 or more trajectories per group")
        self.n = n
        self.drop_text_only = drop_text_only
        self.dropped_text_only = 0
        self._open: Optional[Trajectory] = None  # the trajectory whose samples are arriving
        self._by_index: dict[int, Trajectory] = {}
        # group_index -> complete valid trajectories, oldest first
        self._groups: dict[int, collections.deque[Trajectory]] = {}
        self._ready: collections.OrderedDict[int, None] = collections.OrderedDict()  # groups with >= n, in order
        self._dropped: list[int] = []  # offsets of masked trajectories, to report processed
        self.dropped_trajectories = 0
        self.last_offset = 0

    @property
    def held(self) -> int:
        """Samples held: in open or complete trajectories not handed out."""
        return sum(len(t.offsets) for t in self._by_index.values())

    @property
    def ready(self) -> int:
        """How many groups can be taken now."""
        return sum(len(self._groups[g]) // self.n for g in self._ready)

    @property
    def pending_groups(self) -> int:
        """Groups with some trajectories but not enough to take."""
        return sum(1 for g, q in self._groups.items() if len(q) < self.n) + (
            1 if self._open is not None and self._open.group_index not in self._groups else 0)

    def add(self, offset: int, sample: Mapping[str, Any]) -> None:
        """Adds the sample at ``offset``; offsets must increase."""
        check_sample(sample, offset)
        if offset <= self.last_offset:
            return  # seen already
        self.last_offset = offset
        idx = int(sample["index"])
        t = self._by_index.get(idx)
        if t is None:
            if self._open is not None:
                self._complete(self._open)  # the store writes a trajectory's samples together
            t = Trajectory(index=idx, group_index=int(sample["group_index"]))
            self._by_index[idx] = t
            self._open = t
        elif t.complete:
            raise ValueError(f"sample at offset {offset} belongs to trajectory {idx}, which had ended: "
                             "a trajectory's samples must have consecutive offsets")
        t.offsets.append(offset)
        t.samples.append(dict(sample))
        turns = ((sample.get("metadata") or {}).get("nextstate") or {}).get("turns")
        if isinstance(turns, int) and turns > 0:
            t.turns = turns
        if t.turns is not None and len(t.samples) >= t.turns:
            self._complete(t)

    def settle(self) -> None:
        """Completes the trajectory whose samples were arriving: the caller
        knows no more of it is on the way."""
        if self._open is not None:
            self._complete(self._open)

    def _complete(self, t: Trajectory) -> None:
        if t.complete:
            return
        t.complete = True
        if self._open is t:
            self._open = None
        text_only = self.drop_text_only and t.text_only
        if t.masked or text_only:
            del self._by_index[t.index]
            self._dropped.extend(t.offsets)
            if t.masked:
                self.dropped_trajectories += 1
            else:
                self.dropped_text_only += 1
            return
        q = self._groups.setdefault(t.group_index, collections.deque())
        q.append(t)
        if len(q) >= self.n and t.group_index not in self._ready:
            self._ready[t.group_index] = None

    def take_dropped(self) -> list[int]:
        """The offsets of masked trajectories dropped since the last call."""
        out, self._dropped = self._dropped, []
        return out

    def take_all(self) -> list[list[Trajectory]]:
        """Every complete trajectory held, whatever the group sizes, as one
        group per ``group_index`` (the group first completed first; within
        a group by index). For evaluation, where each task's trajectories
        are all wanted however many the run played."""
        out: dict[int, list[Trajectory]] = {}
        for g, q in self._groups.items():
            out.setdefault(g, []).extend(q)
            for t in q:
                del self._by_index[t.index]
        self._groups.clear()
        self._ready.clear()
        return [sorted(ts, key=lambda t: t.index) for ts in out.values()]

    @property
    def complete_trajectories(self) -> int:
        """Complete, valid trajectories held."""
        return sum(len(q) for q in self._groups.values())

    def take(self, groups: int) -> list[list[Trajectory]]:
        """Up to ``groups`` groups of ``n`` trajectories each, the groups
        that became ready first, first; within a group by index."""
        out: list[list[Trajectory]] = []
        while len(out) < groups and self._ready:
            g = next(iter(self._ready))
            q = self._groups[g]
            group = [q.popleft() for _ in range(self.n)]
            for t in group:
                del self._by_index[t.index]
            if len(q) < self.n:
                del self._ready[g]
            if not q:
                del self._groups[g]
            out.append(sorted(group, key=lambda t: t.index))
        return out
