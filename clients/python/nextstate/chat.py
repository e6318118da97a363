"""Token ids of a turn as the gym's trainer makes them, from a Hugging Face
tokenizer: a prompt through the chat template (:func:`prompt_ids`), and a
text-only turn as prompt, response and end-of-turn token
(:func:`tokenize_turn`). The slime adapter tokenizes text-only turns with
them, and :mod:`nextstate.opd` renders teacher contexts with
:func:`prompt_ids`. It reads only the tokenizer it is given.
"""

from __future__ import annotations

from typing import Any, Mapping

Tokenizer = Any  # a Hugging Face tokenizer: apply_chat_template, encode, convert_tokens_to_ids


def prompt_ids(tokenizer: Tokenizer, prompt: Any) -> list[int]:
    """The ids of a prompt as the serving engine saw it: chat messages
    through the chat template with the generation prompt, a string as it
    is."""
    if isinstance(prompt, str):
        return [int(t) for t in tokenizer.encode(prompt, add_special_tokens=False)]
    # return_dict=False: transformers 5 returns a dict by default.
    ids = tokenizer.apply_chat_template(list(prompt), tokenize=True, add_generation_prompt=True, return_dict=False)
    if isinstance(ids, Mapping):  # a tokenizer that ignores return_dict
        ids = ids["input_ids"]
    return [int(t) for t in ids]


def end_of_turn_id(tokenizer: Tokenizer) -> int:
    """The token that ends a sampled reply: ``<|im_end|>`` when the
    tokenizer has it (as the gym's trainer), else its EOS token."""
    tid = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if isinstance(tid, int) and tid != getattr(tokenizer, "unk_token_id", None):
        return tid
    eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        return eos
    raise ValueError("the tokenizer has neither <|im_end|> nor an EOS token: cannot end a text-only reply")


def tokenize_turn(tokenizer: Tokenizer, prompt: Any, response: str) -> tuple[list[int], int]:
    """Token ids of a text-only turn, as the gym's trainer makes them: the
    prompt (:func:`prompt_ids`), then the response and the end-of-turn
    token; and the response's length in tokens."""
    r_ids = [int(t) for t in tokenizer.encode(response, add_special_tokens=False)] + [end_of_turn_id(tokenizer)]
    return prompt_ids(tokenizer, prompt) + r_ids, len(r_ids)


__all__ = ["Tokenizer", "prompt_ids", "end_of_turn_id", "tokenize_turn"]
