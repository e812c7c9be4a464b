"""Decoding: greedy, beam search and sampling, batched, with an incremental key/value cache.

"The decoder is auto-regressive, consuming the previously generated symbols as additional input when
generating the next." With the cache each step feeds only the newest token to the decoder.
"""
import math

import torch
import torch.nn.functional as F

from .data import BOS, EOS, PAD
from .model import subsequent_mask


def _strip(row):
    """Token ids up to (not including) the first </s>."""
    out = []
    for t in row:
        if t == EOS:
            break
        out.append(t)
    return out


class IncrementalDecoder:
    """One decoder position at a time, over keys and values kept from earlier steps.

    The decoder layer's equations written out flat, reading the model's own weights (eval mode, no
    dropout): x += W^O Attn(LN(x)) over the target prefix, x += W^O Attn(LN(x)) over the memory,
    x += FFN(LN(x)), then the final LN. `model.decode(memory, src_mask, tgt, None, cache)` computes the
    same through the modules and is the reference in the tests; this form skips their per-call Python
    work (about a quarter of a step for one sentence on a CPU), projects Q, K and V with one product,
    writes keys and values into buffers allocated once, and runs attention in the precision the model
    asks for (`attn_dtype`, float32 in `half_precision_decoder`).
    """

    def __init__(self, model, memory, src_mask, max_len):
        layers = model.decoder.layers
        a = layers[0].self_attn
        self.h, self.d_k, self.t = a.h, a.d_k, 0
        self.dtype = model.tgt_embed[0].lut.weight.dtype  # the decoder's precision
        self.adtype = a.attn_dtype or self.dtype  # attention's precision
        B = memory.size(0)
        # the memory's mask, (B, 1, 1, S), or None when it hides nothing
        self.mask = None if bool(src_mask.all()) else src_mask.unsqueeze(1)
        self.layers = []
        for layer in layers:  # the weights each step reads, looked up once
            sa, ca, ff = layer.self_attn, layer.src_attn, layer.feed_forward
            qkv = sa.qkv or sa.stacked_qkv()
            mk = ca.linears[1](memory).view(B, -1, self.h, self.d_k).transpose(1, 2).to(self.adtype)  # (B,H,S,K)
            mv = ca.linears[2](memory).view(B, -1, self.h, self.d_k).transpose(1, 2).to(self.adtype)
            k = memory.new_empty(B, self.h, max_len, self.d_k, dtype=self.adtype)  # (B, H, max_len, K)
            self.layers.append(dict(
                norms=[(s.norm.a_2, s.norm.b_2, s.norm.eps) for s in layer.sublayer], qkv=qkv,
                self_out=(sa.linears[3].weight, sa.linears[3].bias), src_q=(ca.linears[0].weight, ca.linears[0].bias),
                src_out=(ca.linears[3].weight, ca.linears[3].bias), w_1=(ff.w_1.weight, ff.w_1.bias),
                w_2=(ff.w_2.weight, ff.w_2.bias), mk=mk, mv=mv, k=k, v=torch.empty_like(k)))
        emb = model.tgt_embed[0]
        self.lut, self.scale = emb.lut.weight, math.sqrt(emb.d_model)
        self.pe = model.tgt_embed[1].pe[0, :max_len].to(self.dtype)  # (max_len, D), rounded once
        norm = model.decoder.norm
        self.final_norm = (norm.a_2, norm.b_2, norm.eps)
        self.capacity = max_len

    def step(self, tokens):
        """Feed the newest token of each row (B,); returns the final-norm output at that position (B, D)."""
        t, B, H, K, dt, adt = self.t, tokens.size(0), self.h, self.d_k, self.dtype, self.adtype
        D = H * K
        if t >= self.capacity:
            raise ValueError(f"the decoder was set up for {self.capacity} steps")
        x = torch.add(self.pe[t], F.embedding(tokens, self.lut), alpha=self.scale)  # (B, D): PE + sqrt(D) emb
        # one position per row: (B, H, 1, K) and (B, D) share a memory layout, so heads split by views
        for c in self.layers:
            (g0, b0, e0), (g1, b1, e1), (g2, b2, e2) = c["norms"]
            # self-attention over the prefix: this position's q, k, v in one product
            y = F.layer_norm(x, (D,), g0, b0, e0)
            qkv = F.linear(y, *c["qkv"]).to(adt).view(B, 3, H, 1, K)
            c["k"][:, :, t:t + 1] = qkv[:, 1]
            c["v"][:, :, t:t + 1] = qkv[:, 2]
            y = F.scaled_dot_product_attention(qkv[:, 0], c["k"][:, :, :t + 1], c["v"][:, :, :t + 1])  # (B,H,1,K)
            x = x + F.linear(y.view(B, D).to(dt), *c["self_out"])
            # attention over the memory, whose keys and values were projected once
            y = F.layer_norm(x, (D,), g1, b1, e1)
            q = F.linear(y, *c["src_q"]).to(adt).view(B, H, 1, K)
            y = F.scaled_dot_product_attention(q, c["mk"], c["mv"], attn_mask=self.mask)
            x = x + F.linear(y.view(B, D).to(dt), *c["src_out"])
            # position-wise feed-forward
            y = F.layer_norm(x, (D,), g2, b2, e2)
            x = x + F.linear(F.linear(y, *c["w_1"]).relu_(), *c["w_2"])
        self.t += 1
        return F.layer_norm(x, (D,), *self.final_norm)

    def reorder(self, index):
        """Keep rows `index` of every buffer (beam search reorders its hypotheses each step)."""
        if self.mask is not None:
            self.mask = self.mask.index_select(0, index)
        for c in self.layers:
            for key in ("k", "v", "mk", "mv"):
                c[key] = c[key].index_select(0, index)


@torch.inference_mode()
def greedy_decode(model, src, src_mask, max_len, bos=BOS, eos=EOS):
    """Pick the most probable next token at each step; returns a list of id lists (no <s>, </s>)."""
    memory = model.encode(src, src_mask)
    dec = IncrementalDecoder(model, memory, src_mask, max_len)
    next_word = torch.full((src.size(0),), bos, dtype=torch.long, device=src.device)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    out = []
    for _ in range(max_len):
        # log_softmax keeps the argmax; argmax over float16 has no fast CPU kernel, float32 does
        next_word = model.generator.proj(dec.step(next_word)).float().argmax(dim=-1)
        next_word = next_word.masked_fill(done, eos)
        out.append(next_word)
        done |= next_word == eos
        if done.all():
            break
    return [_strip(r) for r in torch.stack(out, 1).tolist()]


@torch.inference_mode()
def greedy_decode_modules(model, src, src_mask, max_len, bos=BOS, eos=EOS):
    """Greedy decoding with the cache held by the modules themselves (`model.decode(..., cache=...)`)."""
    memory = model.encode(src, src_mask)
    ys = torch.full((src.size(0), 1), bos, dtype=torch.long, device=src.device)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    cache = {}
    for _ in range(max_len):
        out = model.decode(memory, src_mask, ys[:, -1:], None, cache=cache)  # (B, 1, D)
        next_word = model.generator.proj(out[:, -1]).float().argmax(dim=-1).masked_fill(done, eos)  # as above
        ys = torch.cat([ys, next_word.unsqueeze(1)], dim=1)
        done |= next_word == eos
        if done.all():
            break
    return [_strip(r) for r in ys[:, 1:].tolist()]


@torch.inference_mode()
def greedy_decode_uncached(model, src, src_mask, max_len, bos=BOS, eos=EOS):
    """The Annotated Transformer's loop: re-decode the whole prefix at every step (the reference)."""
    memory = model.encode(src, src_mask)
    ys = torch.full((src.size(0), 1), bos, dtype=torch.long, device=src.device)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        out = model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)).to(src.device))
        next_word = model.generator(out[:, -1]).argmax(dim=-1).masked_fill(done, eos)
        ys = torch.cat([ys, next_word.unsqueeze(1)], dim=1)
        done |= next_word == eos
        if done.all():
            break
    return [_strip(r) for r in ys[:, 1:].tolist()]


@torch.inference_mode()
def sample_decode(model, src, src_mask, max_len, temperature=1.0, top_k=0, seed=None, bos=BOS, eos=EOS):
    """Sample each next token from softmax(logits / temperature), optionally among the top_k only."""
    gen = torch.Generator(device=src.device)
    if seed is not None:
        gen.manual_seed(seed)
    else:
        gen.seed()
    memory = model.encode(src, src_mask)
    dec = IncrementalDecoder(model, memory, src_mask, max_len)
    ys = torch.full((src.size(0), 1), bos, dtype=torch.long, device=src.device)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        logits = model.generator(dec.step(ys[:, -1])) / max(temperature, 1e-5)
        if top_k and top_k < logits.size(-1):
            kth = logits.topk(top_k, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        next_word = torch.multinomial(logits.softmax(-1), 1, generator=gen).squeeze(1)
        next_word = next_word.masked_fill(done, eos)
        ys = torch.cat([ys, next_word.unsqueeze(1)], dim=1)
        done |= next_word == eos
        if done.all():
            break
    return [_strip(r) for r in ys[:, 1:].tolist()]


def length_penalty(length, alpha):
    """GNMT's length penalty lp(Y) = ((5 + |Y|) / 6)^alpha; scores are log P / lp."""
    return ((5.0 + length) / 6.0) ** alpha


@torch.inference_mode()
def beam_search(model, src, src_mask, max_len, beam=4, alpha=0.6, bos=BOS, eos=EOS):
    """Beam search ("beam size of 4 and length penalty alpha = 0.6"), batched over sentences.

    Each step extends the `beam` live hypotheses of every sentence by their 2*beam best continuations;
    those that end in </s> join the sentence's finished pool (scored by log P / lp), the best `beam`
    others stay live. A sentence is done when its pool is full and no live hypothesis can still win.
    """
    B, k = src.size(0), beam
    memory = model.encode(src, src_mask).repeat_interleave(k, dim=0)  # (B*k, S, D)
    src_mask = src_mask.repeat_interleave(k, dim=0)
    ys = torch.full((B * k, 1), bos, dtype=torch.long, device=src.device)
    scores = torch.zeros(B, k, device=src.device)
    scores[:, 1:] = float("-inf")  # all beams start identical: keep one
    finished = [[] for _ in range(B)]  # (normalized score, ids)
    done = [False] * B
    dec = IncrementalDecoder(model, memory, src_mask, max_len)
    base = (torch.arange(B, device=src.device) * k).unsqueeze(1)  # (B, 1)
    for step in range(1, max_len + 1):
        logp = model.generator(dec.step(ys[:, -1])).float()  # (B*k, V)
        V = logp.size(-1)
        cand = (scores.view(-1, 1) + logp).view(B, k * V)
        top, idx = cand.topk(2 * k, dim=1)  # (B, 2k)
        beam_idx, tok = idx // V, idx % V
        is_eos = tok == eos
        for b, j in is_eos.nonzero().tolist():
            if done[b] or j >= k or top[b, j] == float("-inf"):
                continue  # only </s> among the best k continuations may finish
            hyp = ys[base[b, 0] + beam_idx[b, j], 1:].tolist()
            finished[b].append((top[b, j].item() / length_penalty(len(hyp) + 1, alpha), hyp))
        # keep the best k continuations that did not end
        keep = torch.sort(is_eos.int(), dim=1, stable=True).indices[:, :k]  # (B, k)
        scores = top.gather(1, keep)
        rows = (base + beam_idx.gather(1, keep)).view(-1)
        ys = torch.cat([ys.index_select(0, rows), tok.gather(1, keep).view(-1, 1)], dim=1)
        dec.reorder(rows)
        for b in range(B):
            if done[b] or len(finished[b]) < k:
                continue
            finished[b].sort(key=lambda x: -x[0])
            del finished[b][k:]
            best_live = scores[b, 0].item() / length_penalty(max_len, alpha) if alpha > 0 else scores[b, 0].item()
            if finished[b][-1][0] >= best_live:
                done[b] = True
        if all(done):
            break
    results = []
    for b in range(B):
        if not finished[b]:  # nothing ended within max_len: take the best live hypothesis
            finished[b].append((scores[b, 0].item(), ys[base[b, 0], 1:].tolist()))
        results.append(_strip(max(finished[b], key=lambda x: x[0])[1]))
    return results


def decode_batch(model, src, src_mask, max_len, method="greedy", beam=4, alpha=0.6,
                 temperature=1.0, top_k=0, seed=None):
    """Dispatch to one decoding method; returns id lists without <s> and </s>."""
    if method == "greedy" or (method == "beam" and beam <= 1):
        return greedy_decode(model, src, src_mask, max_len)
    if method == "beam":
        return beam_search(model, src, src_mask, max_len, beam=beam, alpha=alpha)
    if method == "sample":
        return sample_decode(model, src, src_mask, max_len, temperature=temperature, top_k=top_k, seed=seed)
    raise ValueError(f"unknown decoding method {method!r}")
