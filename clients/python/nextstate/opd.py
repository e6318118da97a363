"""On-policy distillation (OPD) for the slime adapter: the teacher's
log-probs of each turn's response, which slime's loss reads from
``Sample.teacher_log_probs`` with ``--use-opd --opd-type sglang``.

The teacher is an SGLang server's ``/generate`` at slime's ``--rm-url``, as
slime's OPD example sets it. :class:`TeacherScorer` scores a turn with one
prefill that generates nothing::

    POST <url> {"input_ids": [...], "return_logprob": true, "logprob_start_len": 0,
                "sampling_params": {"max_new_tokens": 0, "skip_special_tokens": false,
                                    "temperature": <--rollout-temperature, when set>}}

and takes the response tokens' log-probs from the answer's
``meta_info.input_token_logprobs`` (one ``[log-prob, id, ...]`` per input
token). The ids it scores (:func:`teacher_tokens`): for a turn the judge
gave a hint, the teacher context (``metadata.opd.teacher_prompt``, the
hint-augmented prompt, through the policy's chat template) then the turn's
response ids; for the others, the turn's own tokens.

Reads slime's ``args`` (``use_opd``, ``opd_type``, ``rm_url``,
``rollout_temperature``: :func:`teacher_for`), each nextstate sample's
``metadata.opd``, and each converted sample's ``tokens`` and
``response_length``. Writes only the converted samples'
``teacher_log_probs`` (:func:`attach_teacher_log_probs`, which
:func:`nextstate.slime_adapter.convert_groups` calls). Errors: ValueError
for a missing ``--rm-url``, a hinted turn without the policy's tokenizer, a
turn without both a prompt and a response, or an answer without one
log-prob per input token; RuntimeError for an HTTP error from the teacher.
With ``--opd-type megatron`` slime's teacher scores each turn's own tokens
and cannot see a hint: :func:`teacher_for` says so once, in the log.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import urllib.error
import urllib.request
from typing import Any, Callable, Mapping, Optional, Sequence

from .chat import Tokenizer, prompt_ids
from .groups import Trajectory

log = logging.getLogger("nextstate")

_warned_megatron_opd = False


def teacher_prompt(metadata: Any) -> Any:
    """A turn's teacher context from its sample's ``metadata``
    (``metadata.opd.teacher_prompt``: the prompt with the judge's hint), or
    None without a hint."""
    return ((metadata or {}).get("opd") or {}).get("teacher_prompt")


def needs_tokenizer(args: Any, samples: Sequence[Mapping[str, Any]]) -> bool:
    """Whether OPD under slime's ``args`` renders a teacher context for one
    of ``samples``, which takes the policy's tokenizer."""
    return bool(getattr(args, "use_opd", False)) and any(teacher_prompt(s.get("metadata")) for s in samples)


def teacher_tokens(sample: Mapping[str, Any], converted: Any, tokenizer: Optional[Tokenizer]) -> list[int]:
    """The ids the teacher scores for a turn: with a hint, the teacher
    context (``metadata.opd.teacher_prompt`` through the chat template)
    then the turn's response ids; without one, the turn's own tokens."""
    tokens = list(converted.tokens)
    tp = teacher_prompt(sample.get("metadata"))
    if not tp:
        return tokens
    if tokenizer is None:
        raise ValueError(f"sample of trajectory {sample.get('index')} has a hint: its teacher context needs the "
                         "policy's tokenizer (set args.hf_checkpoint)")
    n = converted.response_length
    return prompt_ids(tokenizer, tp) + tokens[len(tokens) - n:]


Post = Callable[[str, dict[str, Any], float], Any]


def _post_json(url: str, payload: dict[str, Any], timeout: float) -> Any:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"teacher {url}: HTTP {e.code}: {e.read()[:200]!r}") from None


class TeacherScorer:
    """Scores turns under the OPD teacher served by SGLang at ``url`` (its
    ``/generate``): the log-prob of each response token given the tokens
    before it, from a prefill that generates nothing."""

    def __init__(self, url: str, *, temperature: Optional[float] = None, timeout: float = 300.0,
                 workers: int = 8, post: Optional[Post] = None) -> None:
        if not url:
            raise ValueError("OPD needs the teacher's URL: set --rm-url to its SGLang /generate endpoint")
        self.url = url
        self.temperature = temperature
        self.timeout = timeout
        self.workers = max(1, workers)
        self._post = post or _post_json

    def score(self, tokens: Sequence[int], response_length: int) -> list[float]:
        """The teacher's log-probs of the last ``response_length`` of ``tokens``."""
        if response_length <= 0 or response_length >= len(tokens):
            raise ValueError(f"teacher: {response_length} response tokens of {len(tokens)}: want a prompt and a response")
        params: dict[str, Any] = {"max_new_tokens": 0, "skip_special_tokens": False}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        res = self._post(self.url, {"input_ids": list(tokens), "sampling_params": params, "return_logprob": True,
                                    "logprob_start_len": 0}, self.timeout)
        try:
            entries = res["meta_info"]["input_token_logprobs"]
        except (KeyError, TypeError):
            raise ValueError(f"teacher {self.url}: no meta_info.input_token_logprobs in its answer "
                             f"{str(res)[:200]!r}") from None
        # One entry per input token, [log-prob, id, ...]; the first has none.
        if len(entries) != len(tokens):
            raise ValueError(f"teacher {self.url}: {len(entries)} input log-probs for {len(tokens)} tokens")
        out = []
        for e in entries[len(tokens) - response_length:]:
            lp = e[0] if isinstance(e, (list, tuple)) and e else None
            if not isinstance(lp, (int, float)):
                raise ValueError(f"teacher {self.url}: a response token has log-prob entry {e!r}")
            out.append(float(lp))
        return out

    def score_many(self, items: Sequence[tuple[Sequence[int], int]]) -> list[list[float]]:
        """:meth:`score` of each ``(tokens, response_length)``, ``workers`` at a time."""
        if len(items) <= 1 or self.workers == 1:
            return [self.score(t, n) for t, n in items]
        with concurrent.futures.ThreadPoolExecutor(max_workers=self.workers) as ex:
            return list(ex.map(lambda it: self.score(*it), items))


def attach_teacher_log_probs(teacher: TeacherScorer, sources: Sequence[tuple[Mapping[str, Any], Any]],
                             tokenizer: Optional[Tokenizer]) -> int:
    """Sets ``teacher_log_probs`` of each converted sample of ``sources``
    (``(nextstate sample, converted sample)`` pairs) to ``teacher``'s
    scores of its :func:`teacher_tokens`; returns how many it scored."""
    lps = teacher.score_many([(teacher_tokens(s, x, tokenizer), x.response_length) for s, x in sources])
    for (_, x), lp in zip(sources, lps):
        x.teacher_log_probs = lp
    return len(lps)


def teacher_for(args: Any, groups: Sequence[Sequence[Trajectory]]) -> Optional[TeacherScorer]:
    """The teacher that fills ``teacher_log_probs`` under slime's ``args``:
    one at ``--rm-url`` with ``--use-opd --opd-type sglang``, else None."""
    global _warned_megatron_opd
    if not getattr(args, "use_opd", False):
        return None
    kind = getattr(args, "opd_type", None)
    if kind == "sglang":
        return TeacherScorer(getattr(args, "rm_url", None) or "", temperature=getattr(args, "rollout_temperature", None))
    if kind == "megatron" and not _warned_megatron_opd and any(
            (s.get("metadata") or {}).get("opd") for g in groups for t in g for s in t.samples):
        _warned_megatron_opd = True
        log.warning("nextstate: --opd-type megatron scores each turn's own tokens: the judge's hints "
                    "(metadata.opd.teacher_prompt) do not reach the teacher; use --opd-type sglang with --rm-url "
                    "to score turns under their hints")
    return None


__all__ = ["TeacherScorer", "teacher_for", "teacher_tokens", "teacher_prompt", "needs_tokenizer",
           "attach_teacher_log_probs"]
