"""Types of the nextstate wire protocol, as Python values.

Actions and observations are plain dicts in the wire's JSON shape,
``{"parts": [...]}`` (docs/protocol.md, "Types"); the helpers below build
the common ones. The results of ``session.create``/``session.reset`` and
``session.step`` are dataclasses with the documented fields; ``raw`` keeps
the whole answer, so fields a newer server adds are not lost.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

Action = dict[str, Any]
Observation = dict[str, Any]


def text_action(*texts: str) -> Action:
    """An action of text parts: ``text_action("50")``."""
    return {"parts": [{"type": "text", "text": t} for t in texts]}


def tool_call_action(name: str, arguments: Any, call_id: Optional[str] = None) -> Action:
    """An action of one tool call in the OpenAI shape. ``arguments`` is the
    JSON text the model wrote, or a value that is encoded to it."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id:
        call["id"] = call_id
    return {"parts": [{"type": "tool_call", "tool_call": call}]}


def tool_calls_action(tool_calls: list[Mapping[str, Any]]) -> Action:
    """An action of a chat model's ``tool_calls`` array (dicts in the OpenAI
    shape; with the openai SDK, ``[tc.model_dump() for tc in msg.tool_calls]``)."""
    return {"parts": [{"type": "tool_call", "tool_call": dict(tc)} for tc in tool_calls]}


def observation_text(observation: Optional[Mapping[str, Any]], sep: str = "\n") -> str:
    """The text of an observation's ``text`` and ``tool_result`` parts, joined
    by ``sep``; parts of other types are skipped."""
    out: list[str] = []
    for p in (observation or {}).get("parts") or []:
        if p.get("type") == "text":
            out.append(p.get("text", ""))
        elif p.get("type") == "tool_result":
            out.append((p.get("tool_result") or {}).get("content", ""))
    return sep.join(out)


@dataclass
class ResetResult:
    """The answer of ``session.create`` and ``session.reset``."""

    session: str
    episode: int
    observation: Observation
    seq: int
    task: Optional[str] = None
    instruction: Optional[str] = None
    info: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ResetResult":
        return cls(
            session=d.get("session", ""),
            episode=int(d.get("episode", 0)),
            observation=d.get("observation") or {"parts": []},
            seq=int(d.get("seq", 0)),
            task=d.get("task"),
            instruction=d.get("instruction"),
            info=dict(d.get("info") or {}),
            limits=dict(d.get("limits") or {}),
            raw=dict(d),
        )

    @property
    def text(self) -> str:
        """The observation's text."""
        return observation_text(self.observation)


@dataclass
class StepResult:
    """The answer of ``session.step``: Gymnasium's ``observation, reward,
    terminated, truncated, info`` plus where the step is in the record.
    ``replayed`` is true when the answer came from the record of an earlier
    request with the same step id; ``failure`` is set when the env failed."""

    observation: Observation
    reward: float
    terminated: bool
    truncated: bool
    session: str
    episode: int
    step: int
    seq: int
    step_id: Optional[str] = None
    info: dict[str, Any] = field(default_factory=dict)
    failure: Optional[dict[str, Any]] = None
    replayed: bool = False
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "StepResult":
        return cls(
            observation=d.get("observation") or {"parts": []},
            reward=float(d.get("reward", 0.0)),
            terminated=bool(d.get("terminated", False)),
            truncated=bool(d.get("truncated", False)),
            session=d.get("session", ""),
            episode=int(d.get("episode", 0)),
            step=int(d.get("step", 0)),
            seq=int(d.get("seq", 0)),
            step_id=d.get("step_id"),
            info=dict(d.get("info") or {}),
            failure=d.get("failure"),
            replayed=bool(d.get("replayed", False)),
            raw=dict(d),
        )

    @property
    def done(self) -> bool:
        """The episode is over: ``terminated or truncated``."""
        return self.terminated or self.truncated

    @property
    def text(self) -> str:
        """The observation's text."""
        return observation_text(self.observation)


@dataclass
class ResumeResult:
    """The events of a session after a seq (``session.resume``, all pages)."""

    session: str
    live: bool
    events: list[dict[str, Any]]
    last_seq: int
