"""The head atlas: what each attention head does over the validation set, and how much it matters.

    python -m core.analysis.heads --data DIR [--limit N] [--out assets/heads.json] [--threads 2]

For every head of the encoder self-attention, the decoder self-attention and the cross-attention, with the
validation pairs fed teacher-forced to the shipped model:

- how it attends: the mean entropy of its rows, the mean attended distance, the share of its attention on the
  same, previous and next position, on the first token (<s>), on </s> and on the final full stop (attention
  sinks); for cross-attention how close its alignment runs to the diagonal, how monotonic it is, and how often
  its argmax agrees with the argmax of its layer's average head;
- how much it matters: the change in validation loss (nats per target token) and in greedy BLEU (sacreBLEU)
  when that head alone is switched off (core/instrument.py), and per layer the loss with every head off but the
  single most important one, beside the loss with every head of the layer off.

The 72 single-head variants run as a batch dimension of head masks (rows = variants x sentences). In the loss
pass the layers below the one whose head is off run once for all its variants, the batches hold pairs of
similar target length, and the output projection runs only where the target is not padding; in greedy decoding
the encoder runs once where only decoder or cross heads vary, and each row is dropped once it has ended.
Finished stages are kept in a cache file, so an interrupted run resumes where it stopped. Writes
assets/heads.json: per-head numbers only, nothing of the data.
"""
import argparse
import contextlib
import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from sacrebleu.metrics import BLEU

from ..checkpoint import load_pretrained, load_tokenizer
from ..data import (
    ASSETS,
    BOS,
    EOS,
    PAD,
    UNK,
    Batch,
    default_data_dir,
    encode_pairs,
    load_split,
    nonblank_lines,
    pad_to,
)
from ..decode import IncrementalDecoder, _strip, default_max_len
from ..instrument import KINDS, attention_name, model_shape, run_with_cache, switched_off
from ..model import subsequent_mask
from ..translate import decoding_rules, special_ids
from ..words import listing, said, say

SELF_MEASURES = ("entropy", "distance", "same", "previous", "next", "first", "eos", "stop")
CROSS_MEASURES = ("entropy", "distance", "first", "eos", "stop", "diagonal", "monotonic", "agreement")
# name: unit ("share": of a row's attention or of rows, 0 to 1); what each measures is said in the locale tables
# (the Heads tab's menu, ui.heads.measure.<name>) and in this module's docstring
MEASURES = {"entropy": "nats", "distance": "positions", "same": "share", "previous": "share", "next": "share",
            "first": "share", "eos": "share", "stop": "share", "diagonal": "share", "monotonic": "share",
            "agreement": "share", "delta_loss": "nats per token", "delta_bleu": "BLEU"}
EPS = 1e-12
BLEU_CHUNK = 256  # sentences per stage of the BLEU part


@dataclass(frozen=True)
class Frame:
    """How a model frames its sentences: its special ids (core/translate.py special_ids; the shipped model's
    <pad> 0, <unk> 1, <s> 2, </s> 3 by default), the ids its decoding never produces, and its length limits. A
    model converted from Marian puts no <s> before a source (`bos` None) and starts the decoder with its <pad>
    (`start`), so a target's padding is told by its length, never by its ids."""
    pad: int = PAD
    unk: int = UNK
    eos: int = EOS
    bos: int | None = BOS
    start: int = BOS
    forbidden: tuple = ()
    eos_at_limit: bool = False  # the last step allowed gives </s> (core/decode.py Rules)
    max_src_tokens: int = 128
    max_out_tokens: int | None = None

    @classmethod
    def of(cls, config):
        ids = special_ids(config)
        rules = decoding_rules(config)
        return cls(pad=ids["pad"], unk=ids["unk"], eos=ids["eos"], bos=ids["bos"], start=ids["start"],
                   forbidden=tuple(rules.forbidden), eos_at_limit=rules.eos_at_limit,
                   max_src_tokens=int(config.get("max_src_tokens", 128)), max_out_tokens=config.get("max_out_tokens"))

    def max_len(self, src_len):
        """The longest output decoding allows for a source of `src_len` ids (as core.translate.Translator)."""
        n = default_max_len(src_len, self.max_src_tokens)
        return n if self.max_out_tokens is None else min(n, int(self.max_out_tokens))


SHIPPED = Frame()


def encode_examples(tokenizer, pairs, frame=SHIPPED, max_len=128):
    """(source ids, target ids) of each (German, English) pair as the model reads them: the source framed as
    Translator.encode_source frames it (<s> ... </s>, or ... </s>), the target as <start> ... </s>; each side cut
    to `max_len` ids."""
    if frame == SHIPPED:
        return encode_pairs(tokenizer, pairs, max_len=max_len)
    encode_target = getattr(tokenizer, "encode_target", tokenizer.encode)
    head = [] if frame.bos is None else [frame.bos]
    src_room = min(max_len, frame.max_src_tokens) - 1 - len(head)
    # the decoder reads <start> and the target's pieces: no more than the model has positions for
    tgt_room = max_len - 2 if frame.max_out_tokens is None else min(max_len - 2, int(frame.max_out_tokens) - 1)
    out = []
    for de, en in pairs:
        s, t = tokenizer.encode(de.strip()), encode_target(en.strip())
        out.append((head + s[:src_room] + [frame.eos], [frame.start] + t[:tgt_room] + [frame.eos]))
    return out


def teacher_batch(examples, idx, frame=SHIPPED):
    """A Batch of the examples `idx` fed teacher-forced, its target mask built from each target's length (a
    decoder's start may be its padding id, as Marian's is)."""
    tgts = [examples[i][1] for i in idx]
    b = Batch(pad_to([examples[i][0] for i in idx], frame.pad), pad_to(tgts, frame.pad), frame.pad)
    if frame.start == frame.pad:
        real = pad_to([[1] * (len(t) - 1) for t in tgts], 0).bool()  # (B, T): positions that are not padding
        b.tgt_mask = real.unsqueeze(-2) & subsequent_mask(b.tgt.size(1))
    return b


# ---- a measurement that can be stopped ----------------------------------------------------------------

class Stopped(Exception):
    """A measurement ended on request (Measuring.stop) before its atlas was done."""


_RUN = threading.local()  # the stop event of the measurement this thread runs, if any


def checkpoint():
    """Called between the small pieces of a measurement's work (a batch, a chunk of variants, a decoding step, a
    sentence translated): raises Stopped where the measurement this thread runs has been asked to stop."""
    stop = getattr(_RUN, "stop", None)
    if stop is not None and stop.is_set():
        raise Stopped()


def lower_priority(niceness=19):
    """Give this thread (and the threads it starts from now on: PyTorch's OpenMP team is made by the first thread
    that runs an operation in parallel, and inherits its priority) the lowest scheduling priority, so that a
    translation asked for meanwhile takes the processors first. Returns whether it could (Linux only)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
        return True
    except (AttributeError, OSError):
        return False


class Measuring:
    """The atlas of a translator's model (`measure`) measured in a thread of its own at the lowest priority
    (`lower_priority`): how far it is and an estimate of the time left can be read from any thread, and `stop()`
    ends it at its next checkpoint (a fraction of a stage). `result` is the atlas once done, `error` what it
    raised; `stopped` whether it ended on request; `finished` is set when the thread has ended, whichever way."""

    def __init__(self, translator, limit, data_dir=None, on_end=None, yielding=True):
        self.translator, self.limit, self.data_dir, self.on_end, self.yielding = (
            translator, limit, data_dir, on_end, yielding)
        self.stop_event, self.finished = threading.Event(), threading.Event()
        self.done, self.total, self.result, self.error, self.stopped = 0, None, None, None, False
        self.started = self.first_stage_at = self.last_at = None
        self.thread = threading.Thread(target=self._run, name="head-atlas", daemon=True)

    def start(self):
        self.started = time.perf_counter()
        self.thread.start()
        return self

    def _progress(self, done, total):
        self.last_at = time.perf_counter()
        if self.done == 0:
            self.first_stage_at = self.last_at
        self.done, self.total = done, total

    def _run(self):
        if self.yielding:
            lower_priority()
        _RUN.stop = self.stop_event
        try:
            self.result = measure(self.translator, self.limit, self.data_dir, progress=self._progress)
        except Stopped:
            self.stopped = True
        except Exception as e:  # noqa: BLE001 (kept for the caller to report)
            self.error = e
        finally:
            _RUN.stop = None
            try:
                if self.on_end is not None:  # before `finished`: what waits on it finds what on_end did
                    self.on_end(self)
            finally:
                self.finished.set()

    def stop(self):
        """Ask the measurement to end at its next checkpoint (it returns at once; `finished` says when it has)."""
        self.stop_event.set()

    def seconds_left(self):
        """An estimate of the seconds left: the stages to go times the time a stage has taken so far (the first
        stage, which also translates the sample where it has no references, counted apart from the others, and
        alone only until a second has ended), less the time the current stage has run; None before a stage has
        ended."""
        if not self.done or not self.total:
            return None
        if self.done == 1:
            each = self.first_stage_at - self.started
        else:
            each = (self.last_at - self.first_stage_at) / (self.done - 1)
        return max(0.0, each * (self.total - self.done) - (time.perf_counter() - self.last_at))


# ---- attention statistics -----------------------------------------------------------------------------

def map_sums(maps, kind, q_len, k_len, stop):
    """Sums over the valid query rows of one batch of maps (L, B, H, Tq, Tk), per head, and the number of rows
    each sum is over: ({measure: (L, H)}, {measure: count}). `q_len`, `k_len`: (B,) valid queries and keys;
    `stop`: (B,) the key position of the final full stop, -1 where there is none."""
    L, B, H, Tq, Tk = maps.shape
    i = torch.arange(Tq).view(1, Tq, 1)
    j = torch.arange(Tk).view(1, 1, Tk)
    rows = (i[..., 0] < q_len.view(B, 1)).float()  # (B, Tq) valid query rows
    if kind == "cross":  # the scaled diagonal: position i of T maps to i (S - 1) / (T - 1)
        diag = i * ((k_len - 1) / (q_len - 1).clamp_min(1)).view(B, 1, 1)
        dist = (diag - j).abs()
    else:
        dist = (i - j).abs().float().expand(B, Tq, Tk)
    sums, counts = {}, {}

    def add(name, per_row, valid):  # per_row (L, B, H, Tq), valid (B, Tq)
        sums[name] = (per_row * valid.view(1, B, 1, Tq)).sum((1, 3))
        counts[name] = float(valid.sum())

    add("entropy", -(maps * maps.clamp_min(EPS).log()).sum(-1), rows)
    add("distance", (maps * dist.view(1, B, 1, Tq, Tk)).sum(-1), rows)
    add("first", maps[..., 0], rows)
    has_stop = (stop >= 0).view(B, 1)
    at_stop = maps.gather(-1, stop.clamp_min(0).view(1, B, 1, 1, 1).expand(L, B, H, Tq, 1))[..., 0]
    sees_stop = (i[..., 0] >= stop.view(B, 1)) if kind == "decoder" else torch.ones(B, Tq, dtype=torch.bool)
    add("stop", at_stop, rows * (has_stop & sees_stop).float())
    if kind != "decoder":  # the decoder's input holds no </s>
        add("eos", maps.gather(-1, (k_len - 1).view(1, B, 1, 1, 1).expand(L, B, H, Tq, 1))[..., 0], rows)
    if kind == "cross":
        _alignment_sums(maps, rows, diag[..., 0], add)
    else:
        _position_sums(maps, rows, q_len, add)
    return sums, counts


def _position_sums(maps, rows, q_len, add):
    """Same, previous and next position (self-attention), each over the rows that have that position."""
    B, Tq = rows.shape
    pad = maps.new_zeros(*maps.shape[:3], 1)
    add("same", torch.diagonal(maps, dim1=-2, dim2=-1), rows)
    prev = torch.cat([pad, torch.diagonal(maps, offset=-1, dim1=-2, dim2=-1)], -1)  # row i: weight on i - 1
    nxt = torch.cat([torch.diagonal(maps, offset=1, dim1=-2, dim2=-1), pad], -1)  # row i: weight on i + 1
    i = torch.arange(Tq).view(1, Tq)
    add("previous", prev, rows * (i >= 1).float())
    add("next", nxt, rows * (i + 1 < q_len.view(B, 1)).float())


def _alignment_sums(maps, rows, diag, add):
    """Cross-attention: argmax near the scaled diagonal, monotonic steps, agreement with the average head."""
    B, Tq = rows.shape
    top = maps.argmax(-1)  # (L, B, H, Tq)
    add("diagonal", ((top - diag.view(1, B, 1, Tq)).abs() <= 1).float(), rows)
    steps = (top[..., 1:] >= top[..., :-1]).float()
    add("monotonic", torch.cat([steps, steps.new_zeros(*steps.shape[:3], 1)], -1),
        rows * torch.cat([rows[:, 1:], rows.new_zeros(B, 1)], 1))  # step i -> i + 1, both valid rows
    average = maps.mean(2, keepdim=True).argmax(-1)  # (L, B, 1, Tq)
    add("agreement", (top == average).float(), rows)


def stop_positions(seqs, lengths, stop_ids, offset):
    """(B,) the position of each sequence's final full stop (`offset` places before its end), -1 if none."""
    pos = (lengths - 1 - offset).clamp_min(0)
    last = seqs.gather(1, pos.view(-1, 1))[:, 0]
    hit = torch.zeros_like(last, dtype=torch.bool)
    for s in stop_ids:
        hit |= last == s
    return torch.where(hit, pos, torch.full_like(pos, -1))


@torch.inference_mode()
def attention_statistics(model, examples, batches, stop_ids, frame=SHIPPED):
    """{kind: {measure: (L, H) mean}} over the examples fed teacher-forced to the model, in `batches`."""
    sums, counts = {}, {}
    for idx in batches:
        checkpoint()
        b = teacher_batch(examples, idx, frame)
        _, cache = run_with_cache(model, b.src, b.tgt, b.src_mask, b.tgt_mask, names=["*:weights"], output=False)
        maps = {kind: cache.stacked(attention_name(kind), "weights") for kind in KINDS}
        # the decoder's input proper: <s> y_1 ... y_n, one position per target token (not the </s> that
        # a shorter row of the batch keeps in place of padding)
        s_len, t_len = (b.src != frame.pad).sum(1), (b.tgt_y != frame.pad).sum(1)
        s_stop, t_stop = stop_positions(b.src, s_len, stop_ids, 1), stop_positions(b.tgt, t_len, stop_ids, 0)
        for kind, (q, k, stop) in {"encoder": (s_len, s_len, s_stop), "decoder": (t_len, t_len, t_stop),
                                   "cross": (t_len, s_len, s_stop)}.items():
            s, c = map_sums(maps[kind], kind, q, k, stop)
            for name in s:
                sums.setdefault(kind, {}).setdefault(name, 0)
                sums[kind][name] = sums[kind][name] + s[name]
                counts.setdefault(kind, {}).setdefault(name, 0)
                counts[kind][name] += c[name]
    return {kind: {name: sums[kind][name] / max(counts[kind][name], 1) for name in sums[kind]} for kind in sums}


# ---- variants: which heads are on ----------------------------------------------------------------------

def single_head_variants(layers, heads, kinds=KINDS):
    """(name, {kind: (L, H) keep mask}) for the model as it is and for each head alone switched off."""
    out = [("none", {})]
    for kind in kinds:
        for layer in range(layers):
            for head in range(heads):
                keep = torch.ones(layers, heads)
                keep[layer, head] = 0
                out.append((f"{kind}:{layer}:{head}", {kind: keep}))
    return out


def layer_variants(kind, layer, best, layers, heads):
    """Every head of one layer off but `best`."""
    only = torch.ones(layers, heads)
    only[layer] = 0
    only[layer, best] = 1
    return [(f"{kind}:{layer}:only{best}", {kind: only})]


def row_masks(variants, rows, layers, heads):
    """Per-row keep masks {kind: (A * rows, L, H)} for the variants' keep dicts, variant-major."""
    kinds = {k for v in variants for k in v}
    return {k: torch.stack([v.get(k, torch.ones(layers, heads)) for v in variants]).repeat_interleave(rows, 0)
            for k in kinds}


def _repeat(x, n):
    return x.repeat(n, *(1,) * (x.dim() - 1))


def _encode_rows(model, src, src_mask, variants):
    """The memory of every (variant, sentence) row, variant-major: the encoder layers below the first one in
    which a variant switches a head off run once, the rest per row."""
    L, H = model_shape(model)
    e = first_off(variants, ("encoder",), L)
    x = model.src_embed(src)
    for layer in model.encoder.layers[:e]:
        x = layer(x, src_mask)
    mask, x = _repeat(src_mask, len(variants)), _repeat(x, len(variants))
    with switched_off(model, keep=row_masks(variants, src.size(0), L, H)):
        for layer in model.encoder.layers[e:]:
            x = layer(x, mask)
        return model.encoder.norm(x)


# ---- importance: the variants' forward pass ------------------------------------------------------------

def first_off(variants, kinds, layers):
    """The first layer in which one of the variants (keep dicts) switches off a head of one of `kinds`;
    `layers` where none does. The layers below it are the same for every variant."""
    found = [int((v[k] == 0).any(1).nonzero()[0, 0]) for v in variants for k in kinds if k in v and (v[k] == 0).any()]
    return min(found, default=layers)


def variant_states(model, src, src_mask, tgt, tgt_mask, variants, max_rows_tokens=8192):
    """The decoder's final-norm output of a teacher-forced batch under each variant (keep dicts), in chunks of
    variants: yields (the chunk's variant indices, states (len(chunk) B, T, D), variant-major). The layers below
    the first one in which the variants differ run once for the batch; only the layers from there on run once
    per variant (with the variants' per-row masks), at most max_rows_tokens rows x positions at a time."""
    L, H = model_shape(model)
    B, T = tgt.shape
    enc, dec = model.encoder.layers, model.decoder.layers
    e = first_off(variants, ("encoder",), L)
    x = model.src_embed(src)
    for layer in enc[:e]:
        x = layer(x, src_mask)
    d = first_off(variants, ("decoder", "cross"), L) if e == L else 0
    if e == L:  # the memory is every variant's: so are the decoder's layers below the first that differs
        memory = model.encoder.norm(x)
        y = model.tgt_embed(tgt)
        for layer in dec[:d]:
            y = layer(y, memory, src_mask, tgt_mask)
    size = max(1, max_rows_tokens // (B * max(T, src.size(1))))
    for a in range(0, len(variants), size):
        checkpoint()
        ks = list(range(a, min(a + size, len(variants))))
        A = len(ks)
        with switched_off(model, keep=row_masks([variants[k] for k in ks], B, L, H)):
            sm, tm = _repeat(src_mask, A), _repeat(tgt_mask, A)
            if e < L:
                h = _repeat(x, A)
                for layer in enc[e:]:
                    h = layer(h, sm)
                mem, h = model.encoder.norm(h), _repeat(model.tgt_embed(tgt), A)
            else:
                mem, h = _repeat(memory, A), _repeat(y, A)
            for layer in dec[d:]:
                h = layer(h, mem, sm, tm)
            yield ks, model.decoder.norm(h)


def _valid_logits(model, h, y, keep, rows=2048):
    """(logits (N, V), targets (N,)) at the positions `keep` (B, T) of the states h (B, T, D) and targets y
    (B, T), row after row, in pieces of `rows` positions."""
    h, y = h[keep], y[keep]
    for a in range(0, h.size(0), rows):
        yield model.generator.proj(h[a:a + rows]).float(), y[a:a + rows]


# ---- importance: loss -----------------------------------------------------------------------------------

@torch.inference_mode()
def variant_nll(model, batch, variants, max_rows_tokens=8192, pad=PAD):
    """Summed negative log-likelihood of the batch's targets under each variant (a list of keep dicts): the
    cross-entropy of the output projection's log-softmax at each target position that is not padding."""
    B, T = batch.tgt.shape
    out = [0.0] * len(variants)
    y = batch.tgt_y
    valid = y != pad
    for ks, h in variant_states(model, batch.src, batch.src_mask, batch.tgt, batch.tgt_mask, variants,
                                max_rows_tokens):
        h = h.view(len(ks), B, T, -1)
        for r, k in enumerate(ks):
            out[k] = sum(float(F.cross_entropy(z, t, reduction="sum")) for z, t in _valid_logits(model, h[r], y, valid))
    return out


def target_batches(examples, max_tokens):
    """Batches of pairs of similar target length (then source length), up to max_tokens padded target
    positions each: the decoder and the output projection, most of a teacher-forced pass, see little padding."""
    order = sorted(range(len(examples)), key=lambda i: (len(examples[i][1]), len(examples[i][0])))
    batches, cur = [], []
    for i in order:
        if cur and len(examples[i][1]) * (len(cur) + 1) > max_tokens:
            batches.append(cur)
            cur = []
        cur.append(i)
    return batches + [cur] * bool(cur)


def variant_losses(model, examples, batches, variants, frame=SHIPPED):
    """Validation loss (nats per target token) of each variant."""
    total, tokens = [0.0] * len(variants), 0
    for idx in batches:
        checkpoint()
        b = teacher_batch(examples, idx, frame)
        for k, v in enumerate(variant_nll(model, b, variants, pad=frame.pad)):
            total[k] += v
        tokens += b.ntokens
    return [t / tokens for t in total]


# ---- importance: greedy BLEU ----------------------------------------------------------------------------

@torch.inference_mode()
def greedy_rows(model, memory, src_mask, max_len, copies=1, keep=None, frame=SHIPPED):
    """Greedy decoding of every row with the cached decoder, each row dropped from the batch once it has
    produced </s> or `max_len` tokens (an int, or one per row); returns id lists without <s> and </s> (what
    greedy_decode returns). `copies`: the memory's rows stand for that many batches of rows (IncrementalDecoder);
    `keep`: heads switched off in the decoder, per row; `frame`: the start and end ids, and its decoding's rules
    (ids never produced, </s> at the limit)."""
    R = memory.size(0) * copies
    limit = torch.as_tensor(max_len).expand(R)
    steps = int(limit.max())
    dec = IncrementalDecoder(model, memory, src_mask, steps, copies, keep=keep)
    out = torch.full((R, steps), frame.eos, dtype=torch.long)
    live = torch.arange(R)
    tok = torch.full((R,), frame.start, dtype=torch.long)
    never = torch.tensor(frame.forbidden, dtype=torch.long)
    for t in range(steps):
        checkpoint()
        logits = model.generator.proj(dec.step(tok)).float()
        if frame.forbidden:
            logits = logits.index_fill(1, never, float("-inf"))
        tok = logits.argmax(dim=-1)
        if frame.eos_at_limit:
            tok = torch.where(limit[live] == t + 1, frame.eos, tok)
        out[live, t] = tok
        going = (tok != frame.eos) & (limit[live] > t + 1)
        if not bool(going.all()):
            keep = going.nonzero()[:, 0]
            if keep.numel() == 0:
                break
            dec.reorder(keep)
            live, tok = live[keep], tok[keep]
    return [_strip(r, frame.eos) for r in out.tolist()]


@torch.inference_mode()
def variant_translations(model, examples, batches, variants, max_rows=1536, frame=SHIPPED):
    """Greedy output ids of every example under each variant: a list (per variant) of lists (per example)."""
    L, H = model_shape(model)
    out = [[None] * len(examples) for _ in variants]
    for idx in batches:
        checkpoint()
        src = pad_to([examples[i][0] for i in idx], frame.pad)
        src_mask = (src != frame.pad).unsqueeze(-2)
        memory = None if all("encoder" in v for v in variants) else model.encode(src, src_mask)
        # each sentence's own limit, as Translator sets it for the sentence alone: batching changes nothing
        limits = torch.tensor([frame.max_len(len(examples[i][0])) for i in idx])
        B, chunk = len(idx), max(1, max_rows // len(idx))
        for a in range(0, len(variants), chunk):
            checkpoint()
            vs = variants[a:a + chunk]
            shared = memory is not None and not any("encoder" in v for v in vs)  # one memory for every variant
            mem, mask = (memory, src_mask) if shared else (_encode_rows(model, src, src_mask, vs),
                                                           _repeat(src_mask, len(vs)))
            ids = greedy_rows(model, mem, mask, _repeat(limits, len(vs)), len(vs) if shared else 1,
                              keep=row_masks(vs, B, L, H), frame=frame)
            for k in range(len(vs)):
                for r, i in enumerate(idx):
                    out[a + k][i] = ids[k * B + r]
    return out


def variant_bleu_stats(model, tokenizer, examples, refs, batches, variants, frame=SHIPPED):
    """Each variant's greedy BLEU statistics against the references: [n-gram matches (4), n-gram totals (4),
    output length, reference length], which add up over sentences (`bleu_score` turns them into BLEU)."""
    bleu = BLEU()
    out = []
    for hyps in variant_translations(model, examples, batches, variants, frame=frame):
        idx = [i for i, h in enumerate(hyps) if h is not None]
        s = bleu.corpus_score([tokenizer.decode(hyps[i]) for i in idx], [[refs[i] for i in idx]])
        out.append([*s.counts, *s.totals, s.sys_len, s.ref_len])
    return out


def bleu_score(stats):
    """sacreBLEU's corpus BLEU (its defaults: exponential smoothing) from summed statistics."""
    return BLEU.compute_bleu(stats[:4], stats[4:8], stats[8], stats[9], smooth_method="exp").score


# ---- the atlas --------------------------------------------------------------------------------------------

class Stages:
    """Finished stages kept in a JSON file, keyed by what they were computed from: a rerun skips them. Two
    processes may share the file (`only` splits the work between them): each write merges what is there."""

    def __init__(self, path, key, only=None, progress=None, total=None, lock=None):
        self.path, self.key, self.only = Path(path) if path else None, key, only
        self.progress, self.total, self.passed = progress, total, 0  # `progress(passed, total)` after each stage
        self.lock = lock or contextlib.nullcontext()  # held while a stage computes (a server's model lock)
        self.done = {}
        self._merge()

    def _merge(self):
        if self.path and self.path.is_file():
            saved = json.loads(self.path.read_text(encoding="utf-8"))
            if saved.get("key") == self.key:
                self.done = {**saved["stages"], **self.done}

    def run(self, name, compute):
        """The stage's value: computed unless done (or left to another process: None)."""
        if name not in self.done:
            self._merge()
        if name not in self.done:
            if self.only and not name.startswith(self.only):
                return None
            with self.lock:
                t0 = time.perf_counter()
                value = compute()
            self.done[name] = {"value": value, "seconds": time.perf_counter() - t0}
            if self.path:
                self._merge()
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.path.with_suffix(".tmp")
                tmp.write_text(json.dumps({"key": self.key, "stages": self.done}), encoding="utf-8")
                tmp.replace(self.path)
            print(f"{time.strftime('%X')} {name}: {self.done[name]['seconds']:.1f} s", flush=True)
        self.passed += 1
        if self.progress is not None:
            self.progress(self.passed, self.total)
        return self.done[name]["value"]

    def seconds(self):
        return sum(s["seconds"] for s in self.done.values())


def _nested(t, digits=4):
    return [[round(float(x), digits) for x in row] for row in t]


def _importance(stages, model, tokenizer, examples, refs, batches, layers, heads, frame=SHIPPED):
    """Base and single-head-off loss and BLEU, and the per-layer variants: {name: (loss, bleu)}. The losses
    come first, a stage per layer of each kind; then BLEU, a stage per layer and chunk of sentences (its
    statistics add up, so that a chunk done is never redone)."""
    loss_batches, bleu_chunks = batches
    groups = [("base", [("none", {})])] + [
        (f"{kind}:{layer}", single_head_variants(layers, heads, [kind])[1 + layer * heads:1 + (layer + 1) * heads])
        for kind in KINDS for layer in range(layers)]
    loss = {}
    for group, named in groups:
        values = stages.run(f"loss:{group}", lambda: variant_losses(model, examples, loss_batches,
                                                                    [v for _, v in named], frame))
        loss.update(zip([n for n, _ in named], values or []))
    extra = []
    for kind in KINDS:
        for layer in range(layers):
            if f"{kind}:{layer}:0" in loss:
                best = max(range(heads), key=lambda h: loss[f"{kind}:{layer}:{h}"])
                extra += layer_variants(kind, layer, best, layers, heads)
    values = stages.run("loss:layers", lambda: [  # a kind at a time: its variants share what is below them
        x for kind in KINDS for x in variant_losses(model, examples, loss_batches, [v for v in (v for _, v in extra)
                                                                                   if kind in v], frame)])
    result = {n: (lo, None) for (n, _), lo in zip(extra, values or [])}
    stats = {}
    for (a, b), chunk_batches in bleu_chunks:
        for group, named in groups:
            values = stages.run(f"bleu:{a}-{b}:{group}", lambda: variant_bleu_stats(
                model, tokenizer, examples, refs, chunk_batches, [v for _, v in named], frame))
            for (n, _), st in zip(named, values or []):
                stats[n] = [x + y for x, y in zip(stats.get(n, [0] * 10), st)]
    result.update({n: (loss.get(n), bleu_score(st)) for n, st in stats.items()})
    return result


def _layers_summary(result, layers, heads):
    base = result["none"][0]
    out = {}
    for kind in KINDS:
        out[kind] = []
        for layer in range(layers):
            only = next(n for n in result if n.startswith(f"{kind}:{layer}:only"))
            out[kind].append({"best_head": int(only.rsplit("only", 1)[1]),
                              "delta_loss_all_but_best_off": round(result[only][0] - base, 4)})
    return out


def compute_atlas(model, tokenizer, pairs, cache=None, key=None, max_tokens=3000, bleu_sentences=0, only=None,
                  frame=SHIPPED, progress=None, lock=None):
    """The atlas as a JSON-ready dict, from the (German, English) validation pairs; greedy BLEU over the
    first `bleu_sentences` of them (0: all). With `only` ("loss", "bleu" or "statistics"), only the stages
    of that part are computed (the others left to another process sharing the cache), and None returned.
    `frame`: the model's special ids and limits (Frame.of(config); the shipped model's by default);
    `progress(done, total)`, if given, is called as each stage ends; `lock`, if given, is held while each stage
    computes and let go between them (a server's model lock: its translations wait for a stage, not the whole)."""
    model.eval()
    layers, heads = model_shape(model)
    examples = encode_examples(tokenizer, pairs, frame, max_len=128)
    refs = [p[1] for p in pairs]
    loss_batches = target_batches(examples, max_tokens)
    n_bleu = min(bleu_sentences or len(pairs), len(pairs))
    order = sorted(range(len(examples)), key=lambda i: (len(examples[i][0]), len(examples[i][1])))
    bleu_chunks = []  # ((first, end), batches of 64 length-sorted sentences) per chunk of BLEU_CHUNK sentences
    for a in range(0, n_bleu, BLEU_CHUNK):
        b = min(a + BLEU_CHUNK, n_bleu)
        run = [i for i in order if a <= i < b]
        bleu_chunks.append(((a, b), [run[i:i + 64] for i in range(0, len(run), 64)]))
    stop_ids = [i for i in (tokenizer.piece_to_id(p) for p in (".", "▁.")) if i != frame.unk]
    # the stages: the statistics, the base and one per kind and layer for the loss, the layers' variants, then the
    # base and one per kind and layer for each chunk of BLEU
    groups = 1 + len(KINDS) * layers
    stages = Stages(cache, key, only, progress=progress, total=1 + groups + 1 + groups * len(bleu_chunks), lock=lock)
    stats = stages.run("statistics", lambda: {k: {n: _nested(v) for n, v in d.items()} for k, d in
                                              attention_statistics(model, examples, loss_batches, stop_ids,
                                                                   frame).items()})
    result = _importance(stages, model, tokenizer, examples, refs, (loss_batches, bleu_chunks), layers, heads, frame)
    if only:
        return None
    base_loss, base_bleu = result["none"]
    per_head = {kind: dict(stats[kind]) for kind in KINDS}
    for kind in KINDS:
        for name, i in (("delta_loss", 0), ("delta_bleu", 1)):
            per_head[kind][name] = [[round(result[f"{kind}:{lay}:{h}"][i] - (base_loss, base_bleu)[i], 4)
                                     for h in range(heads)] for lay in range(layers)]
    return {"model": {"layers": layers, "heads": heads},
            "data": {"split": "val", "sentences": len(pairs), "bleu_sentences": n_bleu,
                     "target_tokens": sum(len(e[1]) - 1 for e in examples)},
            "baseline": {"loss": round(base_loss, 4), "bleu": round(base_bleu, 2)},
            "seconds": round(stages.seconds(), 1),
            "stage_seconds": {n: round(s["seconds"], 1) for n, s in stages.done.items()},
            "measures": {n: {"unit": u} for n, u in MEASURES.items()},
            "heads": per_head, "layers": _layers_summary(result, layers, heads)}


# ---- what the numbers say: findings, each a key of the locale tables and its numbers (core/words.py) ------

def _cells(atlas, kind, measure):
    """[(value, layer, head), ...] of one measure, largest first."""
    grid = atlas["heads"][kind][measure]
    return sorted(((v, lay, h) for lay, row in enumerate(grid) for h, v in enumerate(row)), reverse=True)


SHARE, NEGLIGIBLE_LOSS, NEGLIGIBLE_BLEU = 0.5, 0.01, 0.3  # what counts as a clear pattern, by default
ATTENDS = (("encoder", "previous", "previous-source"), ("encoder", "next", "next-source"),
           ("decoder", "previous", "previous-target"), ("encoder", "same", "own"), ("decoder", "same", "own"))
PIECES = {"bos": "<s>", "eos": "</s>"}  # the pieces a finding names: no words, put into the tables' {bos}, {eos}


def _kind(kind):
    return said(f"atlas.kind.{kind}")


def _count_key(key, n):
    return f"{key}.{'many' if n > 1 else 'one'}"


def _shares(cells):
    """Heads and their shares: "1.2 (90%), 0.1 (70%)"."""
    return listing("atlas.comma", (said("atlas.share-head", layer=lay, head=h, share=v) for v, lay, h in cells))


def _patterns(atlas, share):
    """Heads putting at least `share` of their attention on one position (ATTENDS), and on <s> and </s>
    together (attention sinks): at most six of each, largest first."""
    out = []
    for kind, measure, what in ATTENDS:
        cells = [c for c in _cells(atlas, kind, measure) if c[0] >= share]
        if cells:
            out.append(said(_count_key("atlas.attends", len(cells)), kind=_kind(kind), count=len(cells), share=share,
                            what=said(f"atlas.what.{what}"), heads=_shares(cells[:6])))
    L, H = atlas["model"]["layers"], atlas["model"]["heads"]
    for kind in KINDS:  # <s> and </s> are seen by every row: their shares add up
        grids = [atlas["heads"][kind][m] for m in ("first", "eos") if m in atlas["heads"][kind]]
        sinks = [c for c in sorted(((sum(g[lay][h] for g in grids), lay, h) for lay in range(L) for h in range(H)),
                                   reverse=True) if c[0] >= share]
        if sinks:
            where = said("atlas.where.both", **PIECES) if kind != "decoder" else PIECES["bos"]
            out.append(said(_count_key("atlas.sinks", len(sinks)), kind=_kind(kind), count=len(sinks), share=share,
                            where=where, heads=_shares(sinks[:6])))
    return out


def _what_matters(atlas, negligible_loss, negligible_bleu):
    """The heads that matter most alone, those that can go at almost no cost, and the layers that keep one head."""
    L, H = atlas["model"]["layers"], atlas["model"]["heads"]
    every = sorted(((atlas["heads"][k]["delta_loss"][lay][h], atlas["heads"][k]["delta_bleu"][lay][h], k, lay, h)
                    for k in KINDS for lay in range(L) for h in range(H)), reverse=True)
    base = atlas["baseline"]
    most = said("atlas.most", loss=base["loss"], bleu=base["bleu"], heads=listing("atlas.most-sep", (
        said("atlas.most-head", kind=_kind(k), layer=lay, head=h, loss=dl, bleu=db) for dl, db, k, lay, h in every[:3])))
    small = [e for e in every if abs(e[0]) < negligible_loss and e[1] > -negligible_bleu]
    counts = listing("atlas.comma", (said("atlas.small-kind", count=sum(e[2] == k for e in small), kind=_kind(k))
                                     for k in KINDS))
    small = said("atlas.small", count=len(small), total=len(every), loss=negligible_loss, bleu=negligible_bleu,
                 counts=counts)
    layers = sorted((r["delta_loss_all_but_best_off"], k, lay, r["best_head"])
                    for k in KINDS for lay, r in enumerate(atlas["layers"][k]))

    def listed(rows):
        return listing("atlas.comma", (said("atlas.layers-item", kind=_kind(k), layer=lay, head=h, delta=d)
                                       for d, k, lay, h in rows))
    return [most, small, said("atlas.layers", least=listed(layers[:2]), most=listed(layers[::-1][:2]))]


def findings(atlas, share=SHARE, negligible_loss=NEGLIGIBLE_LOSS, negligible_bleu=NEGLIGIBLE_BLEU):
    """The clearest patterns of an atlas, chosen from its numbers, as findings: each a key of the locale tables
    (atlas.*) and its numbers (core.words.Said), written in a language by core.words (`say`, in English for the
    command line) or by the page. Heads are named layer.head. In order:

    - atlas.attends: heads putting at least `share` of their attention on the previous or next source token,
      the previous target token or their own position, at most six a kind, largest first;
    - atlas.sinks: heads putting at least `share` on <s> and </s> together;
    - atlas.aligned: the three cross-attention heads nearest the diagonal, and how often each agrees with its
      layer's average head;
    - atlas.most: the three heads that matter most alone (delta loss, delta BLEU), beside the model as it is;
    - atlas.small: the heads that can go alone at almost no cost, their count per kind;
    - atlas.layers: a layer with all heads but its best off, two each way."""
    agree = atlas["heads"]["cross"]["agreement"]
    aligned = said("atlas.aligned", heads=listing("atlas.aligned-sep", (
        said("atlas.aligned-head", layer=lay, head=h, diagonal=v, agreement=agree[lay][h])
        for v, lay, h in _cells(atlas, "cross", "diagonal")[:3])))
    return _patterns(atlas, share) + [aligned] + _what_matters(atlas, negligible_loss, negligible_bleu)


SAMPLE = 24  # validation pairs a model with no atlas is measured on in the app (its Heads tab): minutes on a CPU


def sample_pairs(translator, limit=SAMPLE, data_dir=None):
    """(pairs, source) a model with no atlas is measured on: the first `limit` pairs of Multi30k's validation set
    where it is on this machine ("val"), else the project's own example sentences with the model's own greedy
    translations as the references ("examples": what a head changes of what the model says)."""
    try:
        pairs = load_split(data_dir or default_data_dir(), "val")[:limit]
        if pairs:
            return pairs, "val"
    except (OSError, ValueError):
        pass
    own = nonblank_lines((ASSETS / "examples.txt").read_text(encoding="utf-8"))
    own += [s for s in nonblank_lines((ASSETS / "probes.txt").read_text(encoding="utf-8")) if s not in own]
    own = own[:limit]
    # one at a time, as the app translates a sentence: each its own length limit (a batch's is its longest source's)
    return [(de, _translated(translator, de)) for de in own], "examples"


def _translated(translator, sentence):
    checkpoint()  # a long sample's translations are the first stage's: a stop need not wait for all of them
    return translator.translate(sentence)


def measure(translator, limit=SAMPLE, data_dir=None, progress=None, lock=None, bleu_sentences=0):
    """The atlas of the translator's model over `sample_pairs`: compute_atlas in the model's own frame, with its
    sample named in data.split. `progress` and `lock` as compute_atlas takes them."""
    pairs, source = sample_pairs(translator, limit, data_dir)
    atlas = compute_atlas(translator.model, translator.tokenizer, pairs, frame=Frame.of(translator.config),
                          progress=progress, lock=lock, bleu_sentences=bleu_sentences)
    atlas["data"]["split"] = source
    return atlas


def model_key(directory, pairs, limit):
    """What a stage was computed from: the model's weights and the data (hashed), and the limit."""
    h = hashlib.sha1()
    for p in sorted(Path(directory).glob("model*.safetensors")):
        h.update(p.read_bytes())
    h.update("\n".join(a + "\t" + b for a, b in pairs).encode())
    return {"hash": h.hexdigest(), "limit": limit, "version": 2}


def main(argv=None):
    ap = argparse.ArgumentParser(description="The head atlas of the shipped model over the validation set.")
    ap.add_argument("--data", default=None, help="Multi30k directory (default: ../shared/data/multi30k or cache)")
    ap.add_argument("--split", default="val")
    ap.add_argument("--limit", type=int, default=0, help="only the first N pairs (a quick look; not for shipping)")
    ap.add_argument("--model", default=None, help="model directory (default: assets/)")
    ap.add_argument("--out", default=None, help="where to write the atlas (default: assets/heads.json)")
    ap.add_argument("--cache", default=str(ASSETS.parent / "runs" / "heads" / "stages.json"),
                    help="finished stages, so that a rerun resumes ('' for none)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own)")
    ap.add_argument("--only", default=None, metavar="PREFIX",
                    help="compute only the stages whose names begin so (statistics, loss, bleu, bleu:256-512, ...): "
                         "processes can share the work and the cache")
    ap.add_argument("--bleu-sentences", type=int, default=0,
                    help="greedy BLEU over the first N pairs only (default: all; the loss always uses all)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    directory = Path(args.model or ASSETS)
    model, config = load_pretrained(directory)
    tokenizer = load_tokenizer(directory, config)
    pairs = load_split(args.data or default_data_dir(), args.split)
    if args.limit:
        pairs = pairs[:args.limit]
    t0 = time.perf_counter()
    key = model_key(directory, pairs, args.limit)
    atlas = compute_atlas(model, tokenizer, pairs, cache=args.cache or None, key=key,
                          bleu_sentences=args.bleu_sentences, only=args.only, frame=Frame.of(config))
    if atlas is None:
        print(f"the stages {args.only}* are done; run without --only to write the atlas")
        return
    atlas["data"]["split"] = args.split
    out = Path(args.out) if args.out else directory / "heads.json"
    out.write_text(json.dumps(atlas, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{len(pairs)} pairs: {atlas['seconds']:.0f} s in its stages, {time.perf_counter() - t0:.0f} s in this run "
          f"({torch.get_num_threads()} threads); wrote {out} ({out.stat().st_size:,} bytes)")
    for finding in findings(atlas):
        print("-", say(finding))


if __name__ == "__main__":
    main()
