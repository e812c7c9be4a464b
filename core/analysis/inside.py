"""Inside the trained model: its modules and parameters, and one teacher-forced pass over a sentence that
records what every layer does to it.

The recording is core/instrument.py's one instrumented run (`run_with_cache`), which leaves the modules as it
found them: the classes of core/model.py stay as the paper reads. It runs the float32 model (`Translator.model`), also where the translation was
decoded by the float16-decoder twin (`Translator.half_model`).

    tree = module_tree(model)                          # every module, its parameters, its share
    rec = record(model, src_ids, tgt_ids)              # the states of one pass (Recording)
    lens = logit_lens(model, rec)                      # what each decoder layer would output
"""
import math
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from ..instrument import KINDS, attention_name, intervened, run_with_cache  # KINDS: the three attentions
from ..model import LayerNorm, subsequent_mask

# ---- the modules and their parameters ---------------------------------------------------------------

@dataclass
class Node:
    """A module of the model: its path ("" for the whole), class, parameters counted once (its own and its
    children's), and its own parameters as (name, shape, count, the path it is tied to or None)."""
    name: str
    parent: str | None
    cls: str
    params: int = 0
    own: list = field(default_factory=list)

    @property
    def depth(self):
        return 0 if not self.name else self.name.count(".") + 1


def module_tree(model):
    """Every module of `model` in the order of `named_modules`, as Nodes. A parameter shared by several
    modules (tied weights) is counted in the first that holds it (the name `named_parameters` gives it);
    the others list it as tied, so the counts add up to the model's number of distinct parameters."""
    nodes, owner = {}, {}
    for name, module in model.named_modules(remove_duplicate=False):
        node = nodes[name] = Node(name, name.rpartition(".")[0] if name else None, type(module).__name__)
        for pname, p in module.named_parameters(recurse=False):
            path = f"{name}.{pname}" if name else pname
            tied = owner.setdefault(id(p), path)
            node.own.append((pname, tuple(p.shape), p.numel(), None if tied == path else tied))
            if tied == path:  # counted here, and in every module above
                parent = name
                while parent is not None:
                    nodes[parent].params += p.numel()
                    parent = nodes[parent].parent
    return list(nodes.values())


def tying(model):
    """Tied parameters: [(paths sharing one tensor, its size)], and the parameters tying saves (each tensor
    stored once instead of once per path)."""
    paths = {}
    for name, module in model.named_modules(remove_duplicate=False):
        for pname, p in module.named_parameters(recurse=False):
            paths.setdefault(id(p), (p.numel(), []))[1].append(f"{name}.{pname}" if name else pname)
    groups = [(names, n) for n, names in paths.values() if len(names) > 1]
    return groups, sum(n * (len(names) - 1) for names, n in groups)


# ---- LayerNorm in two forms --------------------------------------------------------------------------

def layer_norm_standard(x, gain, bias, eps=1e-6):
    """Ba et al.'s form, as torch.nn.LayerNorm and our LayerNorm: gain * (x - mean) / sqrt(var + eps) + bias,
    with the biased variance (divided by n)."""
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return gain * (x - mean) / torch.sqrt(var + eps) + bias


def layer_norm_annotated(x, gain, bias, eps=1e-6):
    """The Annotated Transformer's form: gain * (x - mean) / (std + eps) + bias, with the unbiased standard
    deviation (divided by n - 1), as `x.std(-1)` computes it."""
    mean = x.mean(-1, keepdim=True)
    return gain * (x - mean) / (x.std(-1, keepdim=True) + eps) + bias


# ---- one recorded pass -------------------------------------------------------------------------------

@dataclass
class Recording:
    """The states of one teacher-forced pass of the float32 model over a source and its decoder inputs.

    stream[side]: the residual stream (stages, L, D) after the embedding + PE, each sub-layer and the final
    LayerNorm, named by stages[side]; norms: each LayerNorm's path -> (input, output), (L, D) each;
    q, k, attn[kind]: per-layer queries and keys (layers, H, Lq|Lk, d_k) and the attention weights the model
    kept (layers, H, Lq, Lk); masks[kind]: (Lq, Lk) bool; ffn[side]: the ReLU outputs (layers, L, d_ff);
    dec_layers: each decoder layer's output (layers, T, D); top: the output's most probable token at each
    position (T) and its log-probability top_logp (T). (The full output is not kept: output_logp gives it.)"""
    src_ids: list
    tgt_ids: list
    stream: dict
    stages: dict
    norms: dict
    q: dict
    k: dict
    attn: dict
    masks: dict
    ffn: dict
    dec_layers: torch.Tensor
    top: torch.Tensor
    top_logp: torch.Tensor


def stage_names(n_layers):
    """The residual stream's stages on each side, in the order the pass writes them, as keys: (layer, part) with
    part one of "embedding" (the embedding + PE), "self-attn", "cross-attn", "ffn" (after that sub-layer of that
    layer) and "final" (the final LayerNorm); layer is None for the first and the last. Their words are the
    locale tables' (locale/, inside.stage.*)."""
    enc = [(i, part) for i in range(n_layers) for part in ("self-attn", "ffn")]
    dec = [(i, part) for i in range(n_layers) for part in ("self-attn", "cross-attn", "ffn")]
    return {"encoder": [(None, "embedding"), *enc, (None, "final")],
            "decoder": [(None, "embedding"), *dec, (None, "final")]}


@torch.no_grad()
def record(model, src_ids, tgt_ids, heads_off=()):
    """One teacher-forced pass of `model` over source ids (<s> ... </s>) and decoder inputs (<s> y_1 ...),
    every state recorded (core/instrument.py, `run_with_cache`), the heads of `heads_off` switched off;
    returns a Recording."""
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)
    tgt = torch.tensor([tgt_ids], device=device)
    src_mask = torch.ones_like(src, dtype=torch.bool).unsqueeze(-2)  # one sentence: no padding
    tgt_mask = subsequent_mask(tgt.size(1)).to(device)
    logp, cache = run_with_cache(model, src, tgt, src_mask, tgt_mask, heads_off=heads_off)
    logp = logp[0].float()
    stages = stage_names(len(model.encoder.layers))

    def stream(side):
        embed = "src_embed" if side == "encoder" else "tgt_embed"
        subs = [f"{side}.layers.{i}.sublayer.{j}:out" for i in range(len(getattr(model, side).layers))
                for j in range(2 if side == "encoder" else 3)]
        return torch.stack([cache[n][0] for n in [f"{embed}:out", *subs, f"{side}.norm:out"]])

    def per_layer(path, what):
        return cache.stacked(path, what)[:, 0]

    S, T = src.size(1), tgt.size(1)
    return Recording(
        src_ids=list(src_ids), tgt_ids=list(tgt_ids),
        stream={side: stream(side) for side in ("encoder", "decoder")}, stages=stages,
        norms={name: (cache[f"{name}:in"][0], cache[f"{name}:out"][0]) for name in layer_norms(model)},
        q={kind: per_layer(attention_name(kind), "q") for kind in KINDS},
        k={kind: per_layer(attention_name(kind), "k") for kind in KINDS},
        attn={kind: per_layer(attention_name(kind), "weights") for kind in KINDS},
        masks={"encoder": src_mask[0].expand(S, S), "decoder": tgt_mask[0], "cross": src_mask[0].expand(T, S)},
        ffn={side: per_layer(f"{side}.layers.{{}}.feed_forward", "units") for side in ("encoder", "decoder")},
        dec_layers=per_layer("decoder.layers.{}", "out"), top=logp.argmax(-1), top_logp=logp.max(-1).values)


def record_inspection(translator, ins):
    """The Recording of an Inspection's source and decoder inputs, through the float32 model with the
    Inspection's heads switched off: the run whose attention maps the Inspection holds, every state kept."""
    sp = translator.tokenizer
    return record(translator.model, [sp.piece_to_id(p) for p in ins.src_tokens],
                  [sp.piece_to_id(p) for p in ins.tgt_tokens], ins.heads_off)


# ---- what the recording shows ------------------------------------------------------------------------

def layer_norms(model):
    """Every LayerNorm of the model by path, in order."""
    return {name: m for name, m in model.named_modules() if isinstance(m, LayerNorm)}


def scores(rec, kind, layer, head):
    """The raw scores Q K^T (Lq, Lk) of one head, its d_k, and the positions its mask allows."""
    q, k = rec.q[kind][layer, head], rec.k[kind][layer, head]
    return q @ k.T, q.size(-1), rec.masks[kind]


def softmax_stats(logits, mask=None):
    """For each row of `logits` (..., n) under `mask` (True: allowed): the softmax p, its largest weight, its
    entropy in nats, and the Frobenius norm of its Jacobian diag(p) - p p^T (how much gradient it passes:
    sum p_i^2 - 2 sum p_i^3 + (sum p_i^2)^2 under the root)."""
    if mask is not None:
        logits = logits.masked_fill(~mask, float("-inf"))
    p = logits.softmax(-1)
    entropy = -(p * p.clamp_min(1e-30).log()).sum(-1)
    s2, s3 = p.pow(2).sum(-1), p.pow(3).sum(-1)
    grad = (s2 - 2 * s3 + s2 * s2).clamp_min(0).sqrt()
    return p, p.max(-1).values, entropy, grad


@lru_cache(maxsize=4)
def random_scale_sweep(dks=(4, 8, 16, 32, 64, 128, 256, 512), n_keys=16, n_queries=256, seed=0):
    """Random queries and keys with unit-variance components as d_k grows: per d_k, the standard deviation
    of q.k, and the mean largest weight, entropy and Jacobian norm of the softmax without and with the
    1/sqrt(d_k) scale. Returns {name: [value per d_k]} with "dk" the d_k themselves."""
    g = torch.Generator().manual_seed(seed)
    out = {"dk": list(dks)}
    for dk in dks:
        q = torch.randn(n_queries, dk, generator=g, dtype=torch.float64)
        k = torch.randn(n_keys, dk, generator=g, dtype=torch.float64)
        raw = q @ k.T
        for name, s in (("plain", raw), ("scaled", raw / math.sqrt(dk))):
            _, top, ent, grad = softmax_stats(s)
            out.setdefault(f"{name}_std", []).append(s.std().item())
            out.setdefault(f"{name}_max", []).append(top.mean().item())
            out.setdefault(f"{name}_entropy", []).append(ent.mean().item())
            out.setdefault(f"{name}_grad", []).append(grad.mean().item())
    return out


@torch.no_grad()
def logit_lens(model, rec):
    """What the output projection would choose from each decoder layer's state (through the decoder's
    final LayerNorm, as the last layer's state goes): top ids (layers, T), their probabilities, and the
    probability each layer gives to the token the model finally chose."""
    dec = rec.dec_layers.to(next(model.parameters()).dtype)
    logp = model.generator(model.decoder.norm(dec)).float()  # (layers, T, V)
    top_p, top_i = logp.max(-1)
    chosen = rec.top
    p_chosen = logp.gather(-1, chosen.expand(logp.size(0), -1).unsqueeze(-1)).squeeze(-1)
    return top_i, top_p.exp(), p_chosen.exp()


def ffn_firing(rec, side):
    """How many d_ff units fire (ReLU output > 0) per layer and token (layers, L), and per layer and unit
    the number of tokens that fire it (layers, d_ff)."""
    on = rec.ffn[side] > 0
    return on.sum(-1), on.sum(1)


def stream_norms(rec, side):
    """The norm of each token's vector at every stage of the residual stream (stages, L), and each stage's
    change relative to the previous one, ||x_after - x_before|| / ||x_before|| (stages - 1, L)."""
    s = rec.stream[side]
    norms = s.norm(dim=-1)
    return norms, (s[1:] - s[:-1]).norm(dim=-1) / norms[:-1].clamp_min(1e-12)


@torch.no_grad()
def output_logp(model, rec):
    """The model's output log-probabilities (T, V) for the recorded pass: the generator applied to the last
    stage of the decoder's stream (the final LayerNorm's output)."""
    final = rec.stream["decoder"][-1].to(next(model.parameters()).dtype)
    return model.generator(final[None])[0].float()


@torch.no_grad()
def annotated_norm_effect(model, rec):
    """The pass again with every LayerNorm in the Annotated Transformer's form (each output replaced, in this
    thread's run alone): how far the output moves. Returns the largest |difference| of the output log-probabilities
    and the positions whose top token changes."""
    def swap(module, args, out):
        return layer_norm_annotated(args[0], module.a_2, module.b_2, module.eps)

    device = next(model.parameters()).device
    src = torch.tensor([rec.src_ids], device=device)
    tgt = torch.tensor([rec.tgt_ids], device=device)
    src_mask = torch.ones_like(src, dtype=torch.bool).unsqueeze(-2)  # one sentence: no padding
    with intervened() as run:
        for m in layer_norms(model).values():
            run.after(m, swap)
        out = model.decode(model.encode(src, src_mask), src_mask, tgt, subsequent_mask(tgt.size(1)).to(device))
        logp = model.generator(out)[0].float()
    changed = (logp.argmax(-1) != rec.top).nonzero().flatten().tolist()
    return (logp - output_logp(model, rec)).abs().max().item(), changed
