"""Decoding: greedy, beam search and sampling, batched, with an incremental key/value cache.

"The decoder is auto-regressive, consuming the previously generated symbols as additional input when
generating the next." With the cache each step feeds only the newest token to the decoder. Beside it:
the model with its decoder in float16 that `Translator` uses for one sentence on a CPU.
"""
import copy
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from .data import BOS, EOS
from .instrument import Cache, attention_name, switched_off
from .model import EncoderDecoder, subsequent_mask


def _strip(row, eos=EOS):
    """Token ids up to (not including) the first </s>."""
    out = []
    for t in row:
        if t == eos:
            break
        out.append(t)
    return out


def decoder_weights(model):
    """What a decoder step reads beside the modules: per layer, W^Q W^K W^V of self-attention stacked into one
    (3D, D) matrix and its bias (one product for all three), read by the paper's names (`w_q`, `w_k`, `w_v`).
    Read afresh for each batch from a plain model (training changes its weights), once for a
    HalfPrecisionDecoder."""
    layers = []
    for layer in model.decoder.layers:
        sa = layer.self_attn
        layers.append(dict(qkv=(torch.cat([sa.w_q.weight, sa.w_k.weight, sa.w_v.weight]),
                                torch.cat([sa.w_q.bias, sa.w_k.bias, sa.w_v.bias]))))
    return dict(layers=layers)


class IncrementalDecoder:
    """One decoder position at a time, over keys and values kept from earlier steps.

    A step runs the model's own modules (eval mode, no dropout): the target embedding, each decoder layer's
    sub-layer connections with its norms (pre- or post-norm, whichever classes the model was built with), its
    feed-forward network and its attention's W^O (`MultiHeadedAttention.concat`), then the stack's final norm.
    What it does its own way is only the attention over the prefix and the memory: Q, K and V of self-attention
    come from one product, keys and values are written into buffers allocated once (the memory's projected once),
    and attention runs in float32 whatever the decoder's precision, as `attention` does. The modules' masked full
    decode computes the same and is the reference in the tests. Heads are switched off by `keep` (per-row masks
    {kind: (R or 1, layers, heads)}, core/instrument.py's `keep_mask`): their outputs are zeroed before W^O, as
    `instrument.switched_off` does in the modules' own path, and a row's mask follows it when rows reorder.

    With `record=True` each step also computes its attention weights explicitly, softmax(q K^T / sqrt(d_k)),
    and `attention()` gives them under the names of core/instrument.py, as a recorded teacher-forced run of
    the modules would (`decoder.layers.1.src_attn:weights`, (B, H, T, S)).
    """

    def __init__(self, model, memory, src_mask, max_len, copies=1, keep=None, record=False):
        """`copies` > 1: memory and src_mask hold B / copies distinct rows, each standing for `copies` rows of
        the batch, whole batch after whole batch (row r reads memory row r mod B / copies): their keys and
        values are projected once and repeated."""
        w = model.step_weights if isinstance(model, HalfPrecisionDecoder) else decoder_weights(model)
        self.decoder, self.embed = model.decoder, model.tgt_embed[0]
        self.pe = model.tgt_embed[1].pe[0]  # (max_len, D): the sinusoids of each position
        a = model.decoder.layers[0].self_attn
        self.h, self.d_k, self.t, self.capacity = a.h, a.d_k, 0, max_len
        self.dtype = self.embed.lut.weight.dtype  # the decoder's precision
        B = memory.size(0) * copies
        # the memory's mask, (B, 1, 1, S), or None when it hides nothing
        self.mask = None if bool(src_mask.all()) else src_mask.unsqueeze(1).repeat(copies, 1, 1, 1)
        self.recorded = [] if record else None  # per step: {name: (B, H, 1, L)}
        self.layers = []
        for i, (c, layer) in enumerate(zip(w["layers"], model.decoder.layers)):
            ca = layer.src_attn
            # keys and values of the memory, projected once: (B, H, S, K)
            mk, mv = (ca._split(memory, lin).float().repeat(copies, 1, 1, 1) for lin in (ca.w_k, ca.w_v))
            k = memory.new_empty(B, self.h, max_len, self.d_k, dtype=torch.float32)  # (B, H, max_len, K)
            # heads switched off: 1 = on, 0 = off, (B or 1, H, 1, 1); None when all are on
            masks = {name: keep[kind][:, i].float().view(-1, self.h, 1, 1) if kind in (keep or {}) else None
                     for name, kind in (("self_keep", "decoder"), ("src_keep", "cross"))}
            self.layers.append(dict(c, mk=mk, mv=mv, k=k, v=torch.empty_like(k), **masks))

    def step(self, tokens):
        """Feed the newest token of each row (B,); returns the final-norm output at that position (B, D)."""
        t = self.t
        if t >= self.capacity:
            raise ValueError(f"the decoder was set up for {self.capacity} steps")
        x = (self.embed(tokens) + self.pe[t].to(self.dtype)).unsqueeze(1)  # (B, 1, D): embedding + PE
        weights = {} if self.recorded is not None else None
        for i, (c, layer) in enumerate(zip(self.layers, self.decoder.layers)):
            x = layer.sublayer[0](x, lambda y: self._self_attention(y, c, i, layer.self_attn, weights))
            x = layer.sublayer[1](x, lambda y: self._source_attention(y, c, i, layer.src_attn, weights))
            x = layer.sublayer[2](x, layer.feed_forward)
        self.t += 1
        if weights is not None:
            self.recorded.append(weights)
        return self.decoder.norm(x)[:, 0]

    def _self_attention(self, y, c, i, mha, weights):
        """Self-attention over the prefix: this position's q, k, v in one product, k and v kept."""
        t, B, H, K = self.t, y.size(0), self.h, self.d_k
        qkv = F.linear(y, *c["qkv"]).float().view(B, 3, H, 1, K)
        c["k"][:, :, t:t + 1] = qkv[:, 1]
        c["v"][:, :, t:t + 1] = qkv[:, 2]
        y = self._attend(qkv[:, 0], c["k"][:, :, :t + 1], c["v"][:, :, :t + 1], None,
                         weights, attention_name("decoder", i))  # (B, H, 1, K)
        if c["self_keep"] is not None:
            y = y * c["self_keep"]
        return mha.concat(y.to(self.dtype))

    def _source_attention(self, y, c, i, mha, weights):
        """Attention over the memory, whose keys and values were projected once."""
        q = mha._split(y, mha.w_q).float()  # (B, H, 1, K)
        y = self._attend(q, c["mk"], c["mv"], self.mask, weights, attention_name("cross", i))
        if c["src_keep"] is not None:
            y = y * c["src_keep"]
        return mha.concat(y.to(self.dtype))

    def _attend(self, q, k, v, mask, weights, name):
        """softmax(q K^T / sqrt(d_k)) V for one position (B, H, 1, K); the fused kernel, or with `weights` (a
        dict) the explicit product, its weights kept there under `name`."""
        if weights is None:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_k)  # (B, H, 1, L)
        if mask is not None:
            scores = scores.masked_fill(~mask, -1e9)
        p = scores.softmax(-1)
        weights[name] = p
        return p @ v

    def attention(self):
        """{name: weights} of the steps so far, recorded with `record=True`: self-attention (B, H, T, T), zero
        above the diagonal as under the subsequent mask, and cross-attention (B, H, T, S)."""
        if self.recorded is None:
            raise ValueError("this decoder was set up without record=True")
        out = Cache()
        T = len(self.recorded)
        for name in self.recorded[0] if T else ():
            rows = [step[name] for step in self.recorded]
            if name.endswith(".self_attn:weights"):
                rows = [F.pad(r, (0, T - r.size(-1))) for r in rows]
            out[name] = torch.cat(rows, dim=2)
        return out

    def reorder(self, index):
        """Keep rows `index` of every buffer (beam search reorders its hypotheses each step)."""
        if self.mask is not None:
            self.mask = self.mask.index_select(0, index)
        t = self.t
        for c in self.layers:
            for key in ("mk", "mv"):
                c[key] = c[key].index_select(0, index)
            for key in ("k", "v"):  # only the t positions written so far: the rest of the buffer is unused
                kept = c[key].new_empty(index.numel(), *c[key].shape[1:])
                kept[:, :, :t] = c[key][:, :, :t].index_select(0, index)
                c[key] = kept
            for key in ("self_keep", "src_keep"):  # per-row masks follow their rows
                if c[key] is not None and c[key].size(0) > 1:
                    c[key] = c[key].index_select(0, index)
        if self.recorded:  # the recorded weights follow their rows
            self.recorded = [{name: w.index_select(0, index) for name, w in step.items()} for step in self.recorded]


class CastLinear(nn.Module):
    """x W^T + b computed in the precision W is stored in and returned in `out_dtype`."""

    def __init__(self, linear, out_dtype):
        super().__init__()
        self.weight, self.bias, self.out_dtype = linear.weight, linear.bias, out_dtype

    def forward(self, x):
        return F.linear(x.to(self.weight.dtype), self.weight, self.bias).to(self.out_dtype)


class HalfPrecisionDecoder(EncoderDecoder):
    """The model set up for decoding one sentence at a time on a CPU (`Translator.half_model`; why and how
    fast: docs/performance.md): the encoder shared in float32, a copy of the decoder and the output
    projection in `dtype`, attention in float32 over keys and values of the memory projected in float32.

    Its modules compute what IncrementalDecoder computes from it: the attention layers' projections are
    CastLinear, giving Q, K and V in float32 and taking W^O's input back to `dtype`. The weights a step
    reads are looked up once here, a snapshot of this copy (which nothing trains).
    """

    def __init__(self, model, dtype=torch.float16):
        tgt_embed = copy.deepcopy(model.tgt_embed).to(dtype)
        generator = copy.deepcopy(model.generator).to(dtype)
        if model.generator.proj.weight is model.tgt_embed[0].lut.weight:
            generator.proj.weight = tgt_embed[0].lut.weight  # keep one copy of the tied matrix
        decoder = copy.deepcopy(model.decoder).to(dtype)
        for layer in decoder.layers:
            for lin in layer.src_attn.linears[1:3]:  # W^K, W^V of the memory
                lin.float()
            for attn in (layer.self_attn, layer.src_attn):
                attn.linears = nn.ModuleList([CastLinear(lin, torch.float32) for lin in attn.linears[:3]]
                                             + [CastLinear(attn.linears[3], dtype)])
        super().__init__(model.encoder, decoder, model.src_embed, tgt_embed, generator)
        self.train(model.training)
        with torch.no_grad():
            self.step_weights = decoder_weights(self)  # what IncrementalDecoder reads, looked up once


def _encode(model, src, src_mask, keep, per_row=True):
    """The memory, with the encoder's heads of `keep` switched off (one mask for every row unless `per_row`)."""
    if not per_row and keep and any(m.size(0) > 1 for m in keep.values()):
        raise ValueError("beam search takes one mask of heads for every sentence")
    with switched_off(model, keep=keep or {}):
        return model.encode(src, src_mask)


def _generate(next_token, src, max_len, bos, eos):
    """The loop every decoder here shares: starting from <s>, append next_token(prefix) to each row until
    every row has produced </s> (rows that have get </s> from then on) or after max_len tokens. `prefix`
    is the list of (B,) token tensors so far. Returns id lists without <s> and </s>."""
    ys = [torch.full((src.size(0),), bos, dtype=torch.long, device=src.device)]
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        next_word = next_token(ys).masked_fill(done, eos)
        ys.append(next_word)
        done |= next_word == eos
        if done.all():
            break
    return [_strip(r, eos) for r in torch.stack(ys, 1)[:, 1:].tolist()]


@dataclass(frozen=True)
class Rules:
    """What a model's decoding adds to the paper's, beside its start and end tokens (`bos`, `eos`). The defaults
    are the shipped model's; a model converted from transformers (core.convert) carries the settings of its
    `generate` in config.json's "generation", and Translator.rules reads them.

    forbidden:      ids never generated (OPUS-MT's bad_words_ids forbid <pad>, which is also its decoder's start)
    eos_at_limit:   at the last step allowed only </s> may come, with log p = 0 (transformers' forced_eos_token_id)
    beam:           how beam search scores a finished hypothesis and when it stops: "gnmt", log P / lp(|Y|) with
                    GNMT's lp = ((5 + |Y|) / 6)^alpha, or "transformers", log P / |Y|^alpha as `generate` does,
                    where hypotheses that reach the limit finish too
    early_stopping: with beam="transformers", `generate`'s early_stopping: False, True or "never"
    """
    forbidden: tuple = ()
    eos_at_limit: bool = False
    beam: str = "gnmt"
    early_stopping: object = False


PAPER_RULES = Rules()


def allowed(scores, rules, step, max_len, eos):
    """scores (rows, V), logits or log-probabilities of step `step` (1: the first token) of at most max_len, with
    what `rules` rule out set to -inf: the forbidden ids and, at the last step where it must end, every token but
    </s> (whose score becomes 0, as transformers' ForcedEOSTokenLogitsProcessor sets it)."""
    if rules.eos_at_limit and step == max_len:
        out = torch.full_like(scores, float("-inf"))
        out[:, eos] = 0.0
        return out
    if rules.forbidden:
        scores = scores.index_fill(1, torch.tensor(rules.forbidden, device=scores.device), float("-inf"))
    return scores


def forced_tokens(prefix, rows, device, repeat=1):
    """Per-row forced first tokens as a (rows * repeat, P) tensor (each row `repeat` times, as beam search
    lays out its hypotheses), -1 where a row's prefix has ended; None for none. `prefix`: an id list per row."""
    if not prefix or not any(prefix):
        return None
    if len(prefix) != rows:
        raise ValueError(f"{len(prefix)} prefixes for {rows} rows")
    forced = torch.full((rows, max(len(p) for p in prefix)), -1, dtype=torch.long, device=device)
    for i, p in enumerate(prefix):
        forced[i, :len(p)] = torch.tensor(p, dtype=torch.long)
    return forced.repeat_interleave(repeat, dim=0)


@torch.inference_mode()
def greedy_decode(model, src, src_mask, max_len, bos=BOS, eos=EOS, prefix=None, keep=None, rules=PAPER_RULES):
    """Pick the most probable next token at each step; returns a list of id lists (no <s>, </s>). With
    `prefix` (an id list per row), each row first takes its prefix's tokens, then goes on by itself. `keep`:
    heads switched off, per-row masks as `instrument.switched_off` takes them (here and below). `rules`: the
    model's own (Rules; here and below)."""
    dec = IncrementalDecoder(model, _encode(model, src, src_mask, keep), src_mask, max_len, keep=keep)
    forced = forced_tokens(prefix, src.size(0), src.device)

    def next_token(ys):
        # log_softmax keeps the argmax; argmax over float16 has no fast CPU kernel, float32 does
        t = len(ys) - 1
        best = allowed(model.generator.proj(dec.step(ys[-1])).float(), rules, t + 1, max_len, eos).argmax(dim=-1)
        if forced is None or t >= forced.size(1):
            return best
        return torch.where(forced[:, t] >= 0, forced[:, t], best)

    return _generate(next_token, src, max_len, bos, eos)


@torch.inference_mode()
def greedy_decode_uncached(model, src, src_mask, max_len, bos=BOS, eos=EOS):
    """The Annotated Transformer's loop: re-decode the whole prefix at every step (the reference)."""
    memory = model.encode(src, src_mask)

    def next_token(ys):
        out = model.decode(memory, src_mask, torch.stack(ys, 1), subsequent_mask(len(ys)).to(src.device))
        return model.generator(out[:, -1]).argmax(dim=-1)

    return _generate(next_token, src, max_len, bos, eos)


@torch.inference_mode()
def sample_decode(model, src, src_mask, max_len, temperature=1.0, top_k=0, seed=None, bos=BOS, eos=EOS,
                  keep=None, rules=PAPER_RULES):
    """Sample each next token from softmax(logits / temperature), optionally among the top_k only."""
    gen = torch.Generator(device=src.device)
    if seed is not None:
        gen.manual_seed(seed)
    else:
        gen.seed()
    dec = IncrementalDecoder(model, _encode(model, src, src_mask, keep), src_mask, max_len, keep=keep)

    def next_token(ys):
        logits = allowed(model.generator(dec.step(ys[-1])), rules, len(ys), max_len, eos) / max(temperature, 1e-5)
        if top_k and top_k < logits.size(-1):
            kth = logits.topk(top_k, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        return torch.multinomial(logits.softmax(-1), 1, generator=gen).squeeze(1)

    return _generate(next_token, src, max_len, bos, eos)


def default_max_len(src_len, max_src_tokens=128):
    """The longest output decoding allows for a source of src_len pieces: 1.5 times it plus 10, at most
    max_src_tokens + 32."""
    return min(int(1.5 * src_len) + 10, max_src_tokens + 32)


def length_penalty(length, alpha):
    """GNMT's length penalty lp(Y) = ((5 + |Y|) / 6)^alpha; scores are log P / lp."""
    return ((5.0 + length) / 6.0) ** alpha


def _only_forced(logp, forced, step):
    """log-probabilities (rows, V) where each row still inside its forced prefix (`forced`, from
    forced_tokens) keeps only its prefix's token at this step: every other token is -inf."""
    if forced is None or step > forced.size(1):
        return logp
    f = forced[:, step - 1]
    index = f.clamp(min=0).unsqueeze(1)
    only = torch.full_like(logp, float("-inf")).scatter_(1, index, logp.gather(1, index))
    return torch.where((f >= 0).unsqueeze(1), only, logp)


def finished_score(rules, total, length, alpha):
    """The score of a finished hypothesis of log P `total` (a 0-d float32 tensor) and `length` tokens after the
    start (its </s> included): log P / ((5 + |Y|) / 6)^alpha (GNMT), or log P / |Y|^alpha in float32 as
    transformers' `generate` computes it."""
    if rules.beam == "transformers":
        return (total / length ** alpha).item()
    return total.item() / length_penalty(length, alpha)


def best_possible(rules, best_live, step, max_len, alpha):
    """The best score the best live hypothesis (log P `best_live`, 0-d) may still finish with, as the rules reckon:
    once the k finished hypotheses of a sentence all score at least this, its search is over. GNMT: at the
    longest length (log P only falls); transformers: at its present length (early_stopping False), at the longest
    ("never" with alpha > 0), or never better than the worst finished (True: done as soon as k have finished)."""
    if rules.beam == "transformers":
        if rules.early_stopping is True:
            return float("-inf")
        n = max_len if rules.early_stopping == "never" and alpha > 0 else step
        return (best_live / n ** alpha).item()
    return best_live.item() / length_penalty(max_len, alpha) if alpha > 0 else best_live.item()


@dataclass(frozen=True)
class Hypothesis:
    """One hypothesis of a beam search's final pool (`beam_search(..., nbest=True)`).

    ids:      the output ids, without the start and </s>
    score:    what decoding ranked it by: log P / lp(length) (finished_score), or, for a hypothesis still live
              when nothing finished within max_len, its log P
    logp:     log P of the hypothesis as the decoding model computed it (natural log, </s> included)
    length:   the |Y| the length penalty counted: tokens after the start, </s> included where it ended with one
    finished: False for a live hypothesis taken because nothing finished within max_len
    """
    ids: list
    score: float
    logp: float
    length: int
    finished: bool = True


def _finish(finished, done, ends, top, tok, ys, base, beam_idx, k, step, eos, rules, alpha):
    """Add to each sentence's pool the candidates among its best k that end here: with </s>, or (transformers'
    rule) any at the last step. A pool holds (score, ids without </s>, log P, length, finished)."""
    for b, j in ends.nonzero().tolist():
        if done[b] or j >= k or top[b, j] == float("-inf"):
            continue  # only the best k continuations may finish
        hyp = ys[base[b, 0] + beam_idx[b, j], 1:].tolist() + ([] if tok[b, j] == eos else [tok[b, j].item()])
        finished[b].append((finished_score(rules, top[b, j], step, alpha), hyp, top[b, j].item(), step, True))


def _pool(finished, k, eos):
    """A sentence's final pool as Hypotheses, best first (ties in the order they joined it, as `max` picks the
    first best), at most k."""
    return [Hypothesis(_strip(ids, eos), score, logp, length, ended)
            for score, ids, logp, length, ended in sorted(finished, key=lambda x: -x[0])[:k]]


@torch.inference_mode()
def beam_search(model, src, src_mask, max_len, beam=4, alpha=0.6, bos=BOS, eos=EOS, prefix=None, tree=None, keep=None,
                rules=PAPER_RULES, nbest=False):
    """Beam search ("beam size of 4 and length penalty alpha = 0.6"), batched over sentences.

    Each step extends the `beam` live hypotheses of every sentence by their 2*beam best continuations;
    those that end in </s> join the sentence's finished pool (scored by log P / lp), the best `beam`
    others stay live. A sentence is done when its pool is full and no live hypothesis can still win.
    With `prefix` (an id list per sentence) the first steps may only take the prefix's tokens. Given a
    `SearchTree` as `tree` (one sentence), every candidate of every step is recorded in it. `keep`: one mask
    of heads switched off for every sentence. `rules.beam` chooses lp and the stopping test (finished_score,
    best_possible). Returns each sentence's best ids; with `nbest`, each sentence's final pool instead: up to
    `beam` Hypotheses, best first, the first being the ids returned without it."""
    B, k = src.size(0), beam
    forced = forced_tokens(prefix, B, src.device, repeat=k)  # (B*k, P) or None
    if tree is not None and B != 1:
        raise ValueError("a search tree records one sentence")
    memory = _encode(model, src, src_mask, keep, per_row=False).repeat_interleave(k, dim=0)  # (B*k, S, D)
    src_mask = src_mask.repeat_interleave(k, dim=0)
    ys = torch.full((B * k, 1), bos, dtype=torch.long, device=src.device)
    scores = torch.zeros(B, k, device=src.device)
    scores[:, 1:] = float("-inf")  # all beams start identical: keep one
    finished = [[] for _ in range(B)]  # (normalized score, ids)
    done = [False] * B
    dec = IncrementalDecoder(model, memory, src_mask, max_len, keep=keep)
    base = (torch.arange(B, device=src.device) * k).unsqueeze(1)  # (B, 1)
    for step in range(1, max_len + 1):
        logp = model.generator(dec.step(ys[:, -1])).float()
        logp = allowed(_only_forced(logp, forced, step), rules, step, max_len, eos)  # (B*k, V)
        V = logp.size(-1)
        cand = (scores.view(-1, 1) + logp).view(B, k * V)
        top, idx = cand.topk(2 * k, dim=1)  # (B, 2k)
        beam_idx, tok = idx // V, idx % V
        is_eos = tok == eos
        ends = is_eos | (step == max_len and rules.beam == "transformers")
        _finish(finished, done, ends, top, tok, ys, base, beam_idx, k, step, eos, rules, alpha)
        # keep the best k continuations that did not end
        keep = torch.sort(is_eos.int(), dim=1, stable=True).indices[:, :k]  # (B, k)
        if tree is not None and not done[0]:
            tree.record_step(step, scores[0], top[0], beam_idx[0], tok[0], keep[0], k, ends[0],
                             lambda total, n: finished_score(rules, torch.tensor(total), n, alpha))
        scores = top.gather(1, keep)
        rows = (base + beam_idx.gather(1, keep)).view(-1)
        ys = torch.cat([ys.index_select(0, rows), tok.gather(1, keep).view(-1, 1)], dim=1)
        dec.reorder(rows)
        for b in range(B):
            if done[b] or len(finished[b]) < k:
                continue
            finished[b].sort(key=lambda x: -x[0])
            del finished[b][k:]
            done[b] = finished[b][-1][0] >= best_possible(rules, scores[b, 0], step, max_len, alpha)
        if all(done):
            break
    results = []
    for b in range(B):
        if not finished[b]:  # nothing ended within max_len: take the best live hypothesis (score: its log P)
            finished[b].append((scores[b, 0].item(), ys[base[b, 0], 1:].tolist(), scores[b, 0].item(), step, False))
        results.append(_pool(finished[b], k, eos) if nbest else _strip(max(finished[b], key=lambda x: x[0])[1], eos))
    if tree is not None:
        tree.mark_returned(results[0].ids if nbest else results[0])
    return results


METHODS = ("greedy", "beam", "sample")  # what decode_batch dispatches to
DEFAULT_METHOD = "greedy"


@dataclass(frozen=True)
class Limit:
    """A decoding setting's range, first value and step: its slider on the page, and what a request is kept to."""
    lo: float
    hi: float
    default: float | None
    step: float

    @property
    def cast(self):
        """int for a setting counted in whole steps, else float."""
        return int if all(isinstance(v, int) for v in (self.lo, self.hi, self.step)) else float


# The settings a request may ask for (the Translate tab's sliders, its links and the /translate endpoint): sized for
# one sentence on a CPU. The length penalty's first value is the model's own (Translator.alpha).
DECODING_LIMITS = {
    "beam": Limit(1, 8, 4, 1),
    "alpha": Limit(0.0, 2.0, None, 0.1),
    "temperature": Limit(0.1, 2.0, 1.0, 0.05),
    "top_k": Limit(0, 50, 10, 1),
    "max_len": Limit(5, 200, 100, 1),
}


def decode_batch(model, src, src_mask, max_len, method="greedy", beam=4, alpha=0.6, temperature=1.0, top_k=0,
                 seed=None, prefix=None, keep=None, bos=BOS, eos=EOS, rules=PAPER_RULES, nbest=False):
    """Dispatch to one decoding method; returns id lists without <s> and </s>. `prefix` (greedy and beam
    search): an id list per row that each output starts with. `keep`: heads switched off (greedy_decode).
    `bos`, `eos`: the decoder's start and end tokens; `rules`: the model's own (Rules). `nbest` (beam search of
    2 or more only): each row's final pool of Hypotheses instead of its ids (beam_search)."""
    common = dict(bos=bos, eos=eos, keep=keep, rules=rules)
    if nbest and not (method == "beam" and beam > 1):
        raise ValueError("an n-best list comes from a beam search of 2 or more")
    if nbest:
        return beam_search(model, src, src_mask, max_len, beam=beam, alpha=alpha, prefix=prefix, nbest=True, **common)
    if method == "greedy" or (method == "beam" and beam <= 1):
        return greedy_decode(model, src, src_mask, max_len, prefix=prefix, **common)
    if method == "beam":
        return beam_search(model, src, src_mask, max_len, beam=beam, alpha=alpha, prefix=prefix, **common)
    if prefix is not None and any(prefix):
        raise ValueError("a prefix is taken by greedy decoding and beam search")
    if method == "sample":
        return sample_decode(model, src, src_mask, max_len, temperature=temperature, top_k=top_k, seed=seed,
                             **common)
    raise ValueError(f"unknown decoding method {method!r}")
