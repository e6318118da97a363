"""A plain-PyTorch Qwen3 forward: the reference the Go model is tested and
benchmarked against. It reads a Hugging Face model folder (config.json and
model.safetensors or shards with model.safetensors.index.json; F32, F16 and
BF16) with nothing but torch and the standard library.

  qwen3.py logits DIR IN.json OUT.f32     IN: {"seqs": [[ids...], ...]}; OUT: every
                                          sequence's logits [T, V], f32 LE, concatenated
  qwen3.py generate DIR IN.json           greedy; IN: {"seqs": [...], "steps": n}; prints JSON
  qwen3.py bench DIR IN.json              IN: {"prefill": T, "batches": [1, 8], "decode": n,
                                          "prompt": P, "threads": k, "repeat": r}; prints JSON
  qwen3.py train DIR IN.json OUT.st       autograd and torch.optim.AdamW (see train.py)
  qwen3.py bench-train DIR IN.json        training tokens/s (see train.py)
  qwen3.py objective DIR IN.json OUT.st   the RL objectives' loss and gradients (see objective.py)
"""
import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[b:e]), dtype=DTYPES[info["dtype"]])
        out[name] = t.float().reshape(info["shape"]).clone()
    return out


def read_folder(d):
    cfg = json.load(open(os.path.join(d, "config.json")))
    idx = os.path.join(d, "model.safetensors.index.json")
    w = {}
    if os.path.exists(idx):
        for shard in sorted(set(json.load(open(idx))["weight_map"].values())):
            w.update(read_safetensors(os.path.join(d, shard)))
    else:
        w = read_safetensors(os.path.join(d, "model.safetensors"))
    return cfg, w


def rms_norm(x, w, eps):
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Qwen3:
    def __init__(self, d):
        cfg, w = read_folder(d)
        self.cfg, self.w = cfg, w
        self.L = cfg["num_hidden_layers"]
        self.H = cfg["num_attention_heads"]
        self.KV = cfg.get("num_key_value_heads", self.H)
        self.D = cfg.get("head_dim") or cfg["hidden_size"] // self.H
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.theta = cfg.get("rope_theta", 1e6)
        self.head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
        D = self.D
        self.inv_freq = 1.0 / (self.theta ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))

    def new_cache(self):
        return [None] * self.L

    def linear(self, name, x):
        """The projection called name (e.g. model.layers.0.mlp.up_proj) of x."""
        return F.linear(x, self.w[name + ".weight"])

    def forward(self, ids, cache, start):
        """ids [B, T] at positions start..start+T-1; cache: per layer (k, v) [B, KV, L, D] or None."""
        w, H, KV, D, eps = self.w, self.H, self.KV, self.D, self.eps
        B, T = ids.shape
        x = w["model.embed_tokens.weight"][ids]
        pos = torch.arange(start, start + T)
        freqs = pos.float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        L = start + T
        mask = torch.arange(L)[None, :] <= pos[:, None]  # [T, L]
        for i in range(self.L):
            p = f"model.layers.{i}."
            h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
            q = self.linear(p + "self_attn.q_proj", h).view(B, T, H, D)
            k = self.linear(p + "self_attn.k_proj", h).view(B, T, KV, D)
            v = self.linear(p + "self_attn.v_proj", h).view(B, T, KV, D).transpose(1, 2)
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps).transpose(1, 2)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if cache[i] is not None:
                k = torch.cat((cache[i][0], k), dim=2)
                v = torch.cat((cache[i][1], v), dim=2)
            cache[i] = (k, v)
            k = k.repeat_interleave(H // KV, dim=1)
            v = v.repeat_interleave(H // KV, dim=1)
            s = (q @ k.transpose(-1, -2)) / math.sqrt(D)
            s = s.masked_fill(~mask, float("-inf"))
            a = torch.softmax(s, dim=-1) @ v
            a = a.transpose(1, 2).reshape(B, T, H * D)
            x = x + self.linear(p + "self_attn.o_proj", a)
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
            g = self.linear(p + "mlp.gate_proj", h)
            u = self.linear(p + "mlp.up_proj", h)
            x = x + self.linear(p + "mlp.down_proj", F.silu(g) * u)
        x = rms_norm(x, w["model.norm.weight"], eps)
        return F.linear(x, self.head)


def cmd_logits(model, req, out):
    with torch.inference_mode(), open(out, "wb") as f:
        for seq in req["seqs"]:
            logits = model.forward(torch.tensor([seq]), model.new_cache(), 0)[0]
            f.write(logits.contiguous().numpy().astype("<f4").tobytes())


def cmd_generate(model, req):
    outs = []
    with torch.inference_mode():
        for seq in req["seqs"]:
            cache = model.new_cache()
            logits = model.forward(torch.tensor([seq]), cache, 0)
            toks, n = [], len(seq)
            for _ in range(req["steps"]):
                t = int(logits[0, -1].argmax())
                toks.append(t)
                logits = model.forward(torch.tensor([[t]]), cache, n)
                n += 1
            outs.append(toks)
    print(json.dumps({"tokens": outs}))


def cmd_bench(model, req):
    torch.set_num_threads(req.get("threads") or os.cpu_count())
    V = model.cfg["vocab_size"]
    g = torch.Generator().manual_seed(0)
    rep = req.get("repeat", 3)
    res = {"threads": torch.get_num_threads(), "torch": torch.__version__}
    with torch.inference_mode():
        T = req["prefill"]
        ids = torch.randint(0, V, (1, T), generator=g)
        model.forward(ids[:, :8], model.new_cache(), 0)  # warm up
        best = math.inf
        for _ in range(rep):
            t0 = time.perf_counter()
            model.forward(ids, model.new_cache(), 0)
            best = min(best, time.perf_counter() - t0)
        res["prefill_tokens_per_s"] = T / best
        res["decode"] = {}
        for B in req["batches"]:
            P, n = req["prompt"], req["decode"]
            best = math.inf
            for _ in range(rep):
                cache = model.new_cache()
                logits = model.forward(torch.randint(0, V, (B, P), generator=g), cache, 0)
                tok = logits[:, -1].argmax(-1, keepdim=True)
                t0 = time.perf_counter()
                for i in range(n):
                    logits = model.forward(tok, cache, P + i)
                    tok = logits[:, -1].argmax(-1, keepdim=True)
                best = min(best, time.perf_counter() - t0)
            res["decode"][str(B)] = B * n / best
    print(json.dumps(res))


def main():
    cmd, d, inp = sys.argv[1], sys.argv[2], sys.argv[3]
    req = json.load(open(inp))
    torch.set_num_threads(req.get("threads") or torch.get_num_threads())
    model = Qwen3(d)
    if cmd == "logits":
        cmd_logits(model, req, sys.argv[4])
    elif cmd == "generate":
        cmd_generate(model, req)
    elif cmd == "bench":
        cmd_bench(model, req)
    elif cmd == "train":
        import train
        train.cmd_train(model, req, sys.argv[4])
    elif cmd == "objective":
        import objective
        objective.cmd_objective(model, req, sys.argv[4])
    elif cmd == "bench-train":
        import train
        train.cmd_bench_train(model, req)
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
