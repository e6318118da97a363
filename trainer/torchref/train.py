"""Autograd, torch.optim.AdamW and a plainly written LoRA on the Qwen3 of
qwen3.py: the reference the Go trainer's gradients, optimizer steps and
adapters are checked against, and the PyTorch side of `bench train`.

  qwen3.py train DIR IN.json OUT.safetensors
    IN: {"seqs": [[ids...], ...], "rows": [[seq, pos], ...] or null (every position but the last),
         "lrs": [lr of each step], "betas": [b1, b2], "eps": e, "weight_decay": wd,
         "max_grad_norm": g (0: no clipping), "lora": null or {"dir": PEFT folder, "r": r, "alpha": a}}
    Each step is the mean cross-entropy of every scored row's next token over
    the whole batch, backward, clipping, one AdamW step (decay on tensors of 2+
    dimensions). OUT holds "grad.NAME" (the first step's gradients) and
    "final.NAME" (the parameters after the last step) of every trainable
    tensor; prints {"losses": [...]} (each step's loss before its update).
  qwen3.py bench-train DIR IN.json
    IN: {"batch": B, "seq": T, "steps": n, "threads": k, "lora": null or {"r", "alpha", "targets"},
         "data": [[ids...] × B] or null (random)};
    prints {"tokens_per_s", "step_s", "torch": version, "threads": k, "peak_rss_bytes",
    "sgemm_gflops"}: forward, backward and AdamW on the B sequences of T tokens, the best of
    n steps after a warm-up one; sgemm_gflops is torch.mm's best on 1024³.
    With "rl": {"prompt": P, "adv": [a × B], "old": [[lp × (T−P)] × B], "teacher": [[ids...] × B],
    "kl": c}, a step is the RL step instead: the frozen reference's forward (the initial weights;
    the base under LoRA) and the teacher's (the reference on the hint-augmented contexts) without
    gradients, then the policy's: PPO's clipped surrogate on the response tokens (the last T−P)
    with the advantage a + (teacher − old), plus c times the k3 KL to the reference, token means.
"""
import copy
import json
import math
import os
import struct
import time

import torch
import torch.nn.functional as F

from qwen3 import read_safetensors

PROJ = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
        "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}


def write_safetensors(path, tensors):
    header, off, blobs = {}, 0, []
    for name, t in tensors.items():
        b = t.detach().contiguous().float().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    js = json.dumps(header).encode()
    js += b" " * (-len(js) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(js)))
        f.write(js)
        for b in blobs:
            f.write(b)


class LoRA:
    """y = x·Wᵀ + (alpha/r)·(x·Aᵀ)·Bᵀ for each adapted projection, W frozen."""

    def __init__(self, model, adapters, r, alpha):
        self.model, self.scale = model, alpha / r
        self.a, self.b = {}, {}
        for name, t in adapters.items():
            # base_model.model.<module>.lora_A.weight
            mod = name[len("base_model.model."):].rsplit(".lora_", 1)[0]
            (self.a if ".lora_A." in name else self.b)[mod] = t
        self.base = model.linear
        model.linear = self.linear

    def linear(self, name, x):
        y = self.base(name, x)
        if name in self.a:
            y = y + (x @ self.a[name].T) @ self.b[name].T * self.scale
        return y

    def named(self):
        out = {}
        for mod in self.a:
            out["base_model.model." + mod + ".lora_A.weight"] = self.a[mod]
            out["base_model.model." + mod + ".lora_B.weight"] = self.b[mod]
        return out


def mean_ce(model, seqs, rows):
    """Each scored row's next-token negative log-likelihood, averaged."""
    total, n = 0.0, 0
    by_seq = {}
    for s, p in rows:
        by_seq.setdefault(s, []).append(p)
    for s, pos in sorted(by_seq.items()):
        ids = torch.tensor([seqs[s]])
        logits = model.forward(ids, model.new_cache(), 0)[0]
        lp = torch.log_softmax(logits[pos], dim=-1)
        tgt = torch.tensor([seqs[s][p + 1] for p in pos])
        total = total + (-lp.gather(1, tgt[:, None])).sum()
        n += len(pos)
    return total / n


def full_params(model):
    """Every parameter tensor by name, the head once when tied."""
    named = dict(model.w)
    if model.cfg.get("tie_word_embeddings"):
        named.pop("lm_head.weight", None)
    return named


def optimizer(named, req):
    decay = [t for _, t in named.items() if t.dim() >= 2]
    plain = [t for _, t in named.items() if t.dim() < 2]
    b1, b2 = req.get("betas", [0.9, 0.999])
    return torch.optim.AdamW([{"params": decay, "weight_decay": req.get("weight_decay", 0.0)},
                              {"params": plain, "weight_decay": 0.0}],
                             lr=1.0, betas=(b1, b2), eps=req.get("eps", 1e-8))


def cmd_train(model, req, out):
    seqs = req["seqs"]
    rows = req.get("rows") or [[s, p] for s, q in enumerate(seqs) for p in range(len(q) - 1)]
    lora = None
    if req.get("lora"):
        lr = req["lora"]
        ad = read_safetensors(os.path.join(lr["dir"], "adapter_model.safetensors"))
        lora = LoRA(model, ad, lr["r"], lr["alpha"])
        named = lora.named()
    else:
        named = full_params(model)
    for t in named.values():
        t.requires_grad_(True)
    opt = optimizer(named, req)
    losses, grads = [], None
    for lr in req["lrs"]:
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad()
        loss = mean_ce(model, seqs, rows)
        loss.backward()
        losses.append(loss.item())
        if grads is None:
            grads = {"grad." + k: t.grad.clone() for k, t in named.items()}
        if req.get("max_grad_norm"):
            torch.nn.utils.clip_grad_norm_(list(named.values()), req["max_grad_norm"])
        opt.step()
    res = dict(grads or {})
    res.update({"final." + k: t for k, t in named.items()})
    write_safetensors(out, res)
    print(json.dumps({"losses": losses}))


def response_logprobs(model, ids, P):
    """Each sequence's log-probs of its tokens after the first P, [B, T−P]."""
    logits = model.forward(ids, model.new_cache(), 0)[:, P - 1:-1]
    return torch.log_softmax(logits, dim=-1).gather(2, ids[:, P:, None])[..., 0]


def rl_step(model, lora, named, opt, data, rl):
    """The RL step of bench-train: reference and teacher passes, PPO + k3 KL, AdamW."""
    P, c = rl["prompt"], rl["kl"]
    adv = torch.tensor(rl["adv"])[:, None]
    old = torch.tensor(rl["old"])
    teacher = torch.tensor(rl["teacher"], dtype=torch.int64)
    TP = teacher.shape[1] - (data.shape[1] - P)
    if lora:  # the reference is the base: the adapters switched off
        adapted, base = model.linear, model.__class__.linear.__get__(model)

        def ref_forward(ids, P):
            model.linear = base
            try:
                return response_logprobs(model, ids, P)
            finally:
                model.linear = adapted
    else:  # the reference is a copy of the initial weights
        ref = copy.copy(model)
        ref.w = {k: t.detach().clone() for k, t in model.w.items()}
        ref.head = ref.w["model.embed_tokens.weight"] if model.cfg.get("tie_word_embeddings") else ref.w["lm_head.weight"]

        def ref_forward(ids, P):
            return response_logprobs(ref, ids, P)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            ref_lp = ref_forward(data, P)
            teacher_lp = ref_forward(teacher, TP)
        a = adv + (teacher_lp - old)
        lp = response_logprobs(model, data, P)
        ratio = torch.exp(lp - lp.detach())
        pg = -torch.minimum(ratio * a, torch.clamp(ratio, 0.8, 1.28) * a)
        x = ref_lp - lp
        k3 = torch.exp(x) - x - 1
        loss = pg.mean() + c * k3.mean()
        loss.backward()
        opt.step()
    return step


def cmd_bench_train(model, req):
    import resource
    torch.set_num_threads(req.get("threads") or os.cpu_count())
    B, T, V = req["batch"], req["seq"], model.cfg["vocab_size"]
    g = torch.Generator().manual_seed(0)
    lr = req.get("lora")
    if lr:
        ad = {}
        for i in range(model.L):
            for proj in lr["targets"]:
                mod = "model.layers.%d.%s.%s" % (i, PROJ[proj], proj)
                w = model.w[mod + ".weight"]
                ad["base_model.model." + mod + ".lora_A.weight"] = torch.randn(lr["r"], w.shape[1], generator=g) * 0.01
                ad["base_model.model." + mod + ".lora_B.weight"] = torch.zeros(w.shape[0], lr["r"])
        named = LoRA(model, ad, lr["r"], lr["alpha"]).named()
    else:
        named = full_params(model)
    for t in named.values():
        t.requires_grad_(True)
    opt = optimizer(named, {"weight_decay": 0.0})
    for grp in opt.param_groups:
        grp["lr"] = 1e-5
    if req.get("data"):
        data = torch.tensor(req["data"], dtype=torch.int64)
    else:
        data = torch.randint(0, V, (B, T), generator=g)

    def step():
        opt.zero_grad(set_to_none=True)
        logits = model.forward(data, model.new_cache(), 0)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), data[:, 1:].reshape(-1))
        loss.backward()
        opt.step()

    if req.get("rl"):
        step = rl_step(model, lr, named, opt, data, req["rl"])

    step()  # warm-up: allocations, the optimizer's state
    best = math.inf
    for _ in range(req.get("steps", 3)):
        t0 = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    del opt, named
    a = torch.randn(1024, 1024, generator=g)
    mm = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        torch.mm(a, a.T)
        mm = min(mm, time.perf_counter() - t0)
    print(json.dumps({"tokens_per_s": B * T / best, "step_s": best, "torch": torch.__version__,
                      "threads": torch.get_num_threads(), "peak_rss_bytes": peak,
                      "sgemm_gflops": 2 * 1024 ** 3 / mm / 1e9}))
