"""Decoding: greedy, beam search and sampling, batched, with an incremental key/value cache.

"The decoder is auto-regressive, consuming the previously generated symbols as additional input when
generating the next." With the cache each step feeds only the newest token to the decoder.
"""
import torch

from .data import BOS, EOS, PAD
from .model import reorder_cache, subsequent_mask


def _strip(row):
    """Token ids up to (not including) the first </s>."""
    out = []
    for t in row:
        if t == EOS:
            break
        out.append(t)
    return out


@torch.inference_mode()
def greedy_decode(model, src, src_mask, max_len, bos=BOS, eos=EOS):
    """Pick the most probable next token at each step; returns a list of id lists (no <s>, </s>)."""
    memory = model.encode(src, src_mask)
    ys = torch.full((src.size(0), 1), bos, dtype=torch.long, device=src.device)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    cache = {}
    for _ in range(max_len):
        out = model.decode(memory, src_mask, ys[:, -1:], None, cache=cache)  # (B, 1, D)
        next_word = model.generator.proj(out[:, -1]).argmax(dim=-1)  # log_softmax keeps the argmax
        next_word = next_word.masked_fill(done, eos)
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
    ys = torch.full((src.size(0), 1), bos, dtype=torch.long, device=src.device)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    cache = {}
    for _ in range(max_len):
        out = model.decode(memory, src_mask, ys[:, -1:], None, cache=cache)
        logits = model.generator(out[:, -1]) / max(temperature, 1e-5)
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
    cache = {}
    base = (torch.arange(B, device=src.device) * k).unsqueeze(1)  # (B, 1)
    for step in range(1, max_len + 1):
        out = model.decode(memory, src_mask, ys[:, -1:], None, cache=cache)
        logp = model.generator(out[:, -1]).float()  # (B*k, V)
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
        reorder_cache(cache, rows)
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
