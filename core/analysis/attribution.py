"""Why the decoder chose a token: its probability attributed to the input pieces, beside the attention.

Attention weights say where a head read from; they do not say what the output depends on (cross-attention
piles onto <s> and the full stop, which carry little). Two attributions of one output token's log-probability
answer that question directly, for every source piece and every earlier target piece:

- gradient x input: the gradient of log p(y_t) with respect to a piece's embedding (after the sqrt(d_model)
  scale, before the positional encoding), dotted with that embedding. It is the first-order change of
  log p(y_t) when the piece's embedding is scaled towards zero: a local, linear reading.
- occlusion: how much p(y_t) drops when that one piece is replaced by <unk>, the model run again. It is a
  global, counterfactual reading: one batched forward pass over all positions.

    att = attribute(model, src_ids, tgt_ids, t)   # tgt_ids = <s> y_1 ... y_n; explains y_{t+1} at position t
"""
from dataclasses import dataclass

import torch

from ..data import EOS, UNK
from ..model import subsequent_mask


@dataclass
class Attribution:
    """One output token's probability attributed to the source pieces and to the target pieces before it."""
    position: int            # decoder position t (its output is the token explained)
    token: int               # the token explained, y_{t+1}
    probability: float       # p(token | source, <s> y_1 .. y_t)
    grad_src: torch.Tensor   # gradient x input per source piece                              (S,)
    grad_tgt: torch.Tensor   # gradient x input per target piece <s> y_1 .. y_t                (t+1,)
    occl_src: torch.Tensor   # p(token) - p(token with source piece j replaced by <unk>)      (S,)
    occl_tgt: torch.Tensor   # p(token) - p(token with target piece j replaced by <unk>)      (t+1,); <s> kept: 0


def _log_prob(model, src_vectors, tgt_vectors, src_mask, position, token):
    """log p(token) at decoder `position` from embedded source and target pieces (before the positional
    encoding): (B,) for batches of B rows."""
    memory = model.encoder(model.src_embed[1](src_vectors), src_mask)
    T = tgt_vectors.size(1)
    out = model.decoder(model.tgt_embed[1](tgt_vectors), memory, src_mask, subsequent_mask(T).to(memory.device))
    return model.generator(out[:, position])[:, token]


def gradient_x_input(model, src, tgt, position, token):
    """(grad_src (S,), grad_tgt (T,), log p) for one row of source ids `src` (1, S) and decoder inputs `tgt`
    (1, T): per piece, the embedding's gradient of log p(token) at `position` dotted with the embedding."""
    src_mask = torch.ones_like(src, dtype=torch.bool).unsqueeze(-2)  # one sentence: no padding to hide
    with torch.enable_grad():
        e_src = model.src_embed[0](src).detach().requires_grad_(True)  # (1, S, D)
        e_tgt = model.tgt_embed[0](tgt).detach().requires_grad_(True)  # (1, T, D)
        logp = _log_prob(model, e_src, e_tgt, src_mask, position, token)[0]
        g_src, g_tgt = torch.autograd.grad(logp, (e_src, e_tgt))
    return (g_src * e_src).sum(-1)[0].detach(), (g_tgt * e_tgt).sum(-1)[0].detach(), logp.detach()


@torch.no_grad()
def occlusion(model, src, tgt, position, token, unk=UNK):
    """(occl_src (S,), occl_tgt (position+1,), p): the drop in p(token) at `position` when one piece at a time
    is replaced by `unk`, in one batched pass for the source (the decoder inputs kept) and one for the target
    pieces up to `position` (the encoder's output reused). The first target piece, <s>, is never replaced."""
    S, T = src.size(1), tgt.size(1)
    src_rows = src.repeat(S + 1, 1)                      # row 0 unchanged, row 1 + j with piece j occluded
    src_rows[torch.arange(1, S + 1), torch.arange(S)] = unk
    src_mask = torch.ones_like(src_rows, dtype=torch.bool).unsqueeze(-2)  # copies of one sentence: no padding
    memory = model.encode(src_rows, src_mask)            # (S+1, S, D)
    tgt_mask = subsequent_mask(T).to(src.device)
    p_src = model.generator(model.decode(memory, src_mask, tgt.expand(S + 1, T), tgt_mask)[:, position])[:, token]
    p_src = p_src.exp()
    n = position + 1                                     # target pieces that position can see
    tgt_rows = tgt.repeat(n, 1)                          # row j with target piece j occluded, j >= 1
    tgt_rows[torch.arange(1, n), torch.arange(1, n)] = unk
    out = model.decode(memory[:1].expand(n, -1, -1), src_mask[:1].expand(n, -1, -1), tgt_rows, tgt_mask)
    p_tgt = model.generator(out[:, position])[:, token].exp()
    p = p_src[0]
    occl_tgt = p - p_tgt
    occl_tgt[0] = 0.0                                    # row 0 is the unchanged input: <s> is not occluded
    return p - p_src[1:], occl_tgt, p


def attribute(model, src_ids, tgt_ids, position, token=None, eos=EOS, unk=UNK):
    """The attributions of the token output at decoder `position`: by default the next piece of `tgt_ids`
    (`eos` after the last), else `token`. `src_ids` are the source ids with <s> and </s>, `tgt_ids` the decoder
    inputs <s> y_1 ... y_n (a converted model's: as its Translator makes them; pass its `eos_id` and `unk_id`)."""
    device = next(model.parameters()).device
    src = torch.tensor([src_ids], device=device)
    tgt = torch.tensor([tgt_ids[:position + 1]], device=device)  # later pieces cannot matter: the mask hides them
    if token is None:
        token = (list(tgt_ids[1:]) + [eos])[position]
    was_training = model.training
    model.eval()
    try:
        g_src, g_tgt, _ = gradient_x_input(model, src, tgt, position, token)
        o_src, o_tgt, p = occlusion(model, src, tgt, position, token, unk)
    finally:
        model.train(was_training)
    return Attribution(position, int(token), float(p), g_src.cpu(), g_tgt.cpu(), o_src.cpu(), o_tgt.cpu())
