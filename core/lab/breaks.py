"""The breaks: each of the code's choices undone on a model built by make_model, or in what the loop passes."""
import math
from contextlib import nullcontext

import torch
import torch.nn as nn

from ..data import PAD, Batch
from ..model import MultiHeadedAttention, PostNormSublayerConnection, make_model, subsequent_mask
from ..train import rate, seeded
from ..words import said
from .tasks import FACTOR, HIGH_LR_FACTOR, SIZE, VOCAB, WARMUP

# Each break by its name, and what it does as the locale tables say it (lab.break.<name>, core/words.py)
BREAKS = {name: said(f"lab.break.{name}") for name in (
    "shared_layers", "plain_list", "no_subsequent_mask", "no_padding_mask", "no_positional_encoding", "no_scale",
    "no_warmup", "high_lr", "post_norm", "default_init", "no_embedding_scale", "untied")}
BREAKS["high_lr"] = said("lab.break.high_lr", factor=HIGH_LR_FACTOR)


class QueryScale(nn.Module):
    """W^Q's output times sqrt(d_k): the attention's later division by sqrt(d_k) then cancels (no_scale)."""

    def __init__(self, linear, factor):
        super().__init__()
        self.linear = linear
        self.factor = factor

    def forward(self, x):
        return self.linear(x) * self.factor


def _post_norm(model):
    """Every sub-layer connection in the paper's order, its norm and dropout kept; no final norm."""
    for stack in (model.encoder, model.decoder):
        for layer in stack.layers:
            for i, old in enumerate(layer.sublayer):
                if not isinstance(old, PostNormSublayerConnection):  # a shared layer is met N times
                    new = PostNormSublayerConnection(layer.size, old.dropout.p)
                    new.norm, new.dropout = old.norm, old.dropout  # the same modules, the paper's order
                    layer.sublayer[i] = new
        stack.norm = nn.Identity()  # each layer already ends in a norm: no final one in the paper


def _default_init(model):
    """Every nn.Linear and nn.Embedding as PyTorch initialises it, the embeddings last: the tied matrix is
    the embedding's N(0, 1), as make_model ties the generator to the embedding."""
    for kind in (nn.Linear, nn.Embedding):
        for m in held_modules(model):  # a plain list's layers too
            if isinstance(m, kind):
                m.reset_parameters()


def build_model(breaks=(), seed=0, size=SIZE, layers=0):
    """make_model at the lab's size (N = `layers` in each stack if given), its weights drawn from a generator of
    its own seeded with `seed` (core.train.seeded: the weights torch.manual_seed(seed) gave, the process's global
    generator untouched), with the named structural breaks applied to its modules. `seed=None` draws the
    weights from the global generator without seeding it (where only the shapes matter)."""
    with nullcontext() if seed is None else seeded(seed):
        return _broken(breaks, dict(size, N=layers) if layers else size)


def _broken(breaks, size):
    model = make_model(VOCAB, VOCAB, tie_weights="untied" not in breaks, **size)
    N = size["N"]
    for stack in (model.encoder, model.decoder):
        if "shared_layers" in breaks:
            stack.layers = nn.ModuleList([stack.layers[0]] * N)  # one object N times: [layer] * N
        if "plain_list" in breaks:
            layers = list(stack.layers)
            del stack.layers  # a Module refuses a list in place of a registered child: drop it first
            stack.layers = layers  # a plain attribute now: parameters() never reaches these layers
    if "no_positional_encoding" in breaks:
        for embed in (model.src_embed, model.tgt_embed):
            embed[1] = embed[1].dropout  # PositionalEncoding without its addition: only its dropout stays
    if "no_embedding_scale" in breaks:
        for embed in (model.src_embed, model.tgt_embed):
            embed[0] = embed[0].lut  # the bare nn.Embedding (the same, possibly tied, matrix)
    if "no_scale" in breaks:
        for m in attention_layers(model):
            m.linears[0] = QueryScale(m.linears[0], math.sqrt(m.d_k))
    if "post_norm" in breaks:
        _post_norm(model)
    if "default_init" in breaks:
        _default_init(model)
    return model


def attention_layers(model):
    """Every MultiHeadedAttention the layers hold, plain list included (distinct objects)."""
    seen = {}
    for m in held_modules(model):
        if isinstance(m, MultiHeadedAttention):
            seen[id(m)] = m
    return list(seen.values())


def held_modules(module, seen=None):
    """Every module reachable from `module`: registered children and modules kept in plain lists or tuples."""
    seen = set() if seen is None else seen
    if id(module) in seen:
        return []
    seen.add(id(module))
    out = [module]
    children = list(module._modules.values())
    for v in vars(module).values():
        if isinstance(v, (list, tuple)):
            children += [m for m in v if isinstance(m, nn.Module)]
    for c in children:
        if c is not None:
            out += held_modules(c, seen)
    return out


def held_parameters(model):
    """The distinct parameters the model's modules hold, found by walking them (plain lists included)."""
    params = {}
    for m in held_modules(model):
        for p in m._parameters.values():
            if p is not None:
                params[id(p)] = p
    return list(params.values())


def count(params):
    return sum(p.numel() for p in params)


def masks(batch_src, tgt_in, breaks):
    """The source and target masks the model gets, as Batch makes them unless a mask break removes one."""
    src_mask = (batch_src != PAD).unsqueeze(-2)  # (B, 1, S)
    if "no_padding_mask" in breaks:
        src_mask = torch.ones_like(src_mask)
        tgt_mask = subsequent_mask(tgt_in.size(1)).expand(tgt_in.size(0), -1, -1)  # (B, T, T)
    else:
        tgt_mask = Batch.make_std_mask(tgt_in, PAD)
    if "no_subsequent_mask" in breaks:
        tgt_mask = (tgt_in != PAD).unsqueeze(-2).expand(-1, tgt_in.size(1), -1)  # padding only
        if "no_padding_mask" in breaks:
            tgt_mask = torch.ones_like(tgt_mask)
    return src_mask, tgt_mask.to(tgt_in.device)  # subsequent_mask is made on the CPU


def lr_lambda(breaks, d_model=SIZE["d_model"]):
    """The rate of each optimizer step (Adam's lr is 1, LambdaLR multiplies it by this)."""
    if "no_warmup" in breaks:
        peak = rate(WARMUP, d_model, FACTOR, WARMUP)
        return lambda step: peak
    factor = FACTOR * (HIGH_LR_FACTOR if "high_lr" in breaks else 1.0)
    return lambda step: rate(step, d_model, factor, WARMUP)

