"""The RL objectives written plainly in PyTorch, the reference of the Go
trainer's Objective terms (trainer/objective.go), through autograd over the
whole model of qwen3.py.

  qwen3.py objective DIR IN.json OUT.safetensors
    IN: {"seqs": [[ids...], ...], "rows": [[seq, pos], ...], "targets": [[id × K], ...] (target 0
         the sampled token), "seq_of_row": [s, ...], "seqsum_constant": c,
         "terms": [{"name", "kind": ppo|kl|entropy|sft|topk, "weight", "agg": token|seq|seqsum, ...}]}
    ppo: "adv", "old", "rollout" (or null), "clip_low", "clip_high", "dual_clip", "tis_cap",
         "mask_low", "mask_high"; kl: "ref", "estimator" (1, 2, 3); topk: "teacher" [[lp × K'], ...]
    OUT holds "grad.NAME" of every parameter; prints {"loss": L, "terms": {name: value}}.
"""
import json

import torch

from train import full_params, write_safetensors


def row_logprobs(model, seqs, rows, targets):
    """Each row's log-softmax over the vocabulary, and its targets' log-probs and entropy."""
    by_seq = {}
    for i, (s, p) in enumerate(rows):
        by_seq.setdefault(s, []).append((i, p))
    lps, ents, order = [], [], []
    for s, items in sorted(by_seq.items()):
        logits = model.forward(torch.tensor([seqs[s]]), model.new_cache(), 0)[0]
        ls = torch.log_softmax(logits[[p for _, p in items]], dim=-1)
        tg = torch.tensor([targets[i] for i, _ in items])
        lps.append(ls.gather(1, tg))
        ents.append(-(ls.exp() * ls).sum(-1))
        order += [i for i, _ in items]
    inv = torch.tensor(order).argsort()
    return torch.cat(lps)[inv], torch.cat(ents)[inv]


def term_loss(t, lp, ent):
    """The term's per-row loss [S]."""
    k = t["kind"]
    lp0 = lp[:, 0]
    if k == "ppo":
        adv = torch.tensor(t["adv"])
        old = torch.tensor(t["old"]) if t.get("old") is not None else lp0.detach()
        lo, hi = t.get("clip_low") or 0.2, t.get("clip_high") or 0.28
        w = torch.ones_like(lp0)
        keep = torch.ones_like(lp0)
        if t.get("rollout") is not None:
            rr = torch.exp(old - torch.tensor(t["rollout"]))
            if t.get("mask_low"):
                keep = keep * (rr >= t["mask_low"])
            if t.get("mask_high"):
                keep = keep * (rr <= t["mask_high"])
            if t.get("tis_cap"):
                w = torch.clamp(rr, max=t["tis_cap"])
        ratio = torch.exp(lp0 - old)
        obj = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - lo, 1 + hi) * adv)
        if t.get("dual_clip", 0) > 1:
            obj = torch.where(adv < 0, torch.maximum(obj, t["dual_clip"] * adv), obj)
        return -w * obj * keep
    if k == "kl":
        x = torch.tensor(t["ref"]) - lp0
        est = t.get("estimator", 1)
        if est == 2:
            return x * x / 2
        if est == 3:
            return torch.exp(x) - x - 1
        return -x
    if k == "entropy":
        return -ent
    if k == "sft":
        return -lp0
    if k == "topk":
        s, q = lp[:, 1:], torch.tensor(t["teacher"])
        p = s.exp()
        rs = torch.log(torch.clamp(1 - p.sum(-1), min=1e-12))
        rt = torch.log(torch.clamp(1 - q.exp().sum(-1), min=1e-12))
        return (p * (s - q)).sum(-1) + rs.exp() * (rs - rt)
    raise ValueError("unknown term kind " + k)


def agg_weights(agg, seq_of_row, constant):
    n = len(seq_of_row)
    if agg == "token":
        return torch.full((n,), 1.0 / n)
    counts = {}
    for s in seq_of_row:
        counts[s] = counts.get(s, 0) + 1
    if agg == "seqsum":
        return torch.full((n,), 1.0 / (len(counts) * constant))
    return torch.tensor([1.0 / (len(counts) * counts[s]) for s in seq_of_row])


def cmd_objective(model, req, out):
    torch.set_default_dtype(torch.float32)
    named = full_params(model)
    for t in named.values():
        t.requires_grad_(True)
    lp, ent = row_logprobs(model, req["seqs"], req["rows"], req["targets"])
    total, terms = 0, {}
    for t in req["terms"]:
        w = agg_weights(t.get("agg", "token"), req["seq_of_row"], req.get("seqsum_constant", 1024))
        v = (term_loss(t, lp, ent) * w).sum()
        terms[t["name"]] = v.item()
        total = total + t["weight"] * v
    total.backward()
    write_safetensors(out, {"grad." + k: t.grad for k, t in named.items()})
    print(json.dumps({"loss": total.item(), "terms": terms}))
