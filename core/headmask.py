"""Switching attention heads off: each head's output zeroed before W^O, the output projection.

MultiHeadAttention(Q, K, V) = Concat(head_1, ..., head_h) W^O. With head i switched off its slice of the
concatenation is zero, so the sub-layer's output is the sum of the other heads' terms head_j W^O_j plus W^O's
bias; everything before W^O, the switched-off head's own attention weights included, is computed as usual.

The mask lives beside the model, not inside it: `switched_off` registers a forward pre-hook on the W^O of
each attention sub-layer with a head off (the modules' path, encoder, full decode and kept maps alike), and
records the mask where `IncrementalDecoder` (core/decode.py) reads it for its own fused step. With no head
off nothing is registered and every output is bit-identical to the plain model's.

A head is named by a triple (kind, layer, head): kind one of "encoder", "decoder", "cross", layer and head
counted from 0.
"""
from contextlib import contextmanager

import torch

from .model import attention_modules

KINDS = ("encoder", "decoder", "cross")


def model_shape(model):
    """(layers, heads) of the model's attention stacks."""
    a = model.encoder.layers[0].self_attn
    return len(model.encoder.layers), a.h


def check_heads(heads_off, layers, heads):
    """The triples of `heads_off` as a sorted tuple of (kind, layer, head) without repeats; a ValueError that
    names the first bad one otherwise."""
    out = set()
    for item in heads_off or ():
        if not isinstance(item, (tuple, list)) or len(item) != 3:
            raise ValueError(f"heads_off: {item!r} is not a (kind, layer, head) triple")
        kind, layer, head = item
        if kind not in KINDS:
            raise ValueError(f"heads_off: {item!r}: kind must be one of {', '.join(map(repr, KINDS))}")
        for name, value, n in (("layer", layer, layers), ("head", head, heads)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n:
                raise ValueError(f"heads_off: {item!r}: {name} must be a whole number from 0 to {n - 1}")
        out.add((kind, int(layer), int(head)))
    return tuple(sorted(out, key=lambda t: (KINDS.index(t[0]), t[1], t[2])))


def keep_mask(heads_off, layers, heads):
    """{kind: (1, layers, heads) float tensor, 1 where the head is on, 0 where off} for the kinds with a head
    off; {} when none is."""
    keep = {}
    for kind, layer, head in check_heads(heads_off, layers, heads):
        keep.setdefault(kind, torch.ones(1, layers, heads))[0, layer, head] = 0.0
    return keep


def _zero_heads(keep, h):
    """A pre-hook for W^O: multiply the concatenated head outputs (R, L, h * d_k) by keep (R or 1, h)."""
    def hook(module, args):
        x = args[0]
        shape = x.shape
        m = keep.to(x.device, x.dtype).view(keep.size(0), *(1,) * (x.dim() - 2), h, 1)
        return (x.view(*shape[:-1], h, -1).mul(m).view(shape),) + tuple(args[1:])
    return hook


@contextmanager
def switched_off(model, heads_off=None, keep=None):
    """Within this block the heads named in `heads_off` (triples) are switched off in every path of `model`.

    Instead of triples, `keep` may give per-row masks {kind: (R, layers, heads)}: row r of every batch of R rows
    (sentences, or sentences x variants) runs with its own heads kept; R = 1 applies one mask to all rows."""
    if keep is None:
        keep = keep_mask(heads_off, *model_shape(model))
    handles = []
    for kind, mods in attention_modules(model).items():
        if kind in keep:
            for layer, m in enumerate(mods):
                handles.append(m.linears[-1].register_forward_pre_hook(_zero_heads(keep[kind][:, layer], m.h)))
    previous = getattr(model, "heads_keep", None)
    model.heads_keep = keep or None
    try:
        yield model
    finally:
        model.heads_keep = previous
        for handle in handles:
            handle.remove()


def kept_heads(model):
    """The per-row masks {kind: (R, layers, heads)} in force for `model` (inside `switched_off`), else None."""
    return getattr(model, "heads_keep", None)
