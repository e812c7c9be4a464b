"""The Lab: train a small Transformer on a toy task in seconds, with one of the code's choices broken.

    python -m core.lab --list                                    # the tasks and the breaks
    python -m core.lab --task copy --break no_subsequent_mask --json
    python -m core.lab --task reverse --smoothing 0.1 --accum 4
    python -m core.lab --task copy --break post_norm --layers 6  # 6 layers in each stack (2 by default)
    python -m core.lab --bench                                   # the targets, every break beside the intact model
    python -m core.lab --precompute assets/lab.json              # what the Lab tab opens with (resumable)

The model is built by the real `make_model` from core/model.py; a break is applied to the built model by
swapping or wrapping module instances (or, for the masks and the rate, by changing what the loop passes), so
the code the learner reads elsewhere is the code that runs here. The loop uses core/train.py's loss
(LabelSmoothing, SimpleLossCompute) and Noam rate, and core/data.py's Batch with its masks.

Sequences are digits 0-9 (token ids 4-13 beside the project's <blank>, <unk>, <s>, </s>) of 3 to 8 symbols,
so a batch is padded. A sequence is held out when a hash of it is 0 mod 10: the training stream never draws one,
and exact match is measured on 500 of them.
"""
import argparse
import json
import math
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn as nn

from .data import ASSETS, BOS, EOS, PAD, Batch
from .model import (
    MultiHeadedAttention,
    SublayerConnection,
    make_model,
    subsequent_mask,
)
from .train import LabelSmoothing, SimpleLossCompute, rate

SYMBOLS = 10                   # digits 0..9
FIRST = 4                      # token id of digit 0 (0-3 are <blank>, <unk>, <s>, </s>)
VOCAB = FIRST + SYMBOLS
MIN_LEN, MAX_LEN = 3, 8        # symbols per sequence
HELD_OUT = 500                 # sequences decoded for exact match
SIZE = dict(N=2, d_model=32, d_ff=64, h=4, dropout=0.0)  # fresh data every step: no dropout
BATCH = 64                     # sequences per optimizer step
FACTOR, WARMUP = 0.35, 100     # Noam: peak rate 0.35 * 32^-0.5 * 100^-0.5 = 6.2e-3 at step 100
HIGH_LR_FACTOR = 10.0          # high_lr: the same schedule, ten times higher
# per task: (optimizer steps, seconds) -- whichever comes first ends training
BUDGET = {"copy": (450, 15.0), "reverse": (700, 30.0), "sort": (700, 30.0)}
# depth (layers in each stack): SIZE's N unless a run asks for more. A deeper run keeps the task's steps and
# gets its seconds times layers / N (a step takes about that much longer), so that it is ended by steps as the
# Lab's runs are; the intact model at the same depth gets exactly the same budget.
MIN_LAYERS, MAX_LAYERS = SIZE["N"], 6
DEEP = 6                       # the depth of the shipped deep runs (post-norm's trouble needs depth)
ASSET = ASSETS / "lab.json"

TASKS = {
    "copy": "output the input as it is (The Annotated Transformer's first example)",
    "reverse": "output the input backwards",
    "sort": "output the input's digits in ascending order (the answer does not depend on their order)",
}
BREAKS = {
    "shared_layers": "[layer] * N in place of clones: one layer object, its weights shared by every level",
    "plain_list": "a plain Python list in place of nn.ModuleList: the layers' parameters are never registered",
    "no_subsequent_mask": "the decoder is trained without the subsequent mask (it sees the word it must predict)",
    "no_padding_mask": "no source or target padding mask: attention reaches the padding",
    "no_positional_encoding": "no positional encoding: the embeddings alone, with the same dropout",
    "no_scale": "attention scores Q K^T left undivided by sqrt(d_k)",
    "no_warmup": "no learning-rate warmup: a constant rate at the Noam schedule's peak",
    "high_lr": f"the Noam schedule at {HIGH_LR_FACTOR:g} times its rate",
    "post_norm": "post-norm (the paper's LayerNorm(x + Sublayer(x))) in place of the code's pre-norm",
    "default_init": "PyTorch's default initialisation in place of Xavier-uniform",
    "no_embedding_scale": "embeddings not multiplied by sqrt(d_model)",
    "untied": "separate source, target and output embedding matrices (make_model's tie_weights=False)",
}

# One sentence per break: what the shipped runs (assets/lab.json) show, written from their measured results.
# Differences of a few points are noise: where a run stops matters that much (the intact copy model's exact
# match moves between 96 % and 99.8 % over its last 100 steps).
READINGS = {
    "shared_layers": "Harmless here: one layer's weights used at both depths (half the parameters) still learn "
                     "every task, so `[layer] * N` costs capacity these small tasks do not need, which is how the "
                     "bug goes unnoticed.",
    "plain_list": "Only the embeddings, the final norms and the output bias (590 of 43,342 parameters) are trained: "
                  "the layers keep their random weights, unseen by `parameters()`, the optimizer and "
                  "`state_dict()`, so copy and reverse fail and sort gets what trained embeddings around frozen "
                  "random layers can give.",
    "no_subsequent_mask": "Each position can read the token it must predict one place ahead, so the loss under "
                          "teacher forcing is even lower than the intact model's, but greedy decoding, where that "
                          "token does not exist yet, fails: at most a fifth of the copies, none of the reversals "
                          "or sorts.",
    "no_padding_mask": "Harmless here: padding is one token, always at the end of the source, which the model can "
                       "treat as one more learnt symbol, and on the target side the subsequent mask already hides "
                       "it (padding comes after the words); the mask matters once results must not depend on how "
                       "much padding a batch happens to have.",
    "no_positional_encoding": "Copy and reverse fail, because the encoder's output is then a bag of digits that "
                              "do not know their places, while sort, whose answer does not depend on the input's "
                              "order, is still mostly learnt.",
    "no_scale": "Nearly harmless at d_k = 8, where the scores grow only √8 ≈ 2.8 times; at the paper's d_k = 64 "
                "they would grow 8 times, enough to push the softmax towards one-hot weights and vanishing "
                "gradients.",
    "no_warmup": "A constant rate at the schedule's peak still learns these tasks, slightly worse or noisier: a "
                 "model this small and shallow does not need warm-up's gentle first steps, and without the decay "
                 "the last steps stay large.",
    "high_lr": "Ten times the rate wrecks copy and reverse (the loss stalls near 1) and costs sort a sixth of "
               "its sequences.",
    "post_norm": "Harmless at N = 2 (a few points either way: slightly worse on copy and sort, better on "
                 "reverse): with two layers few normalised sums stand between the loss and the first layer; "
                 "post-norm's trouble needs depth (the @6 rows).",
    "default_init": "PyTorch's defaults train badly (copy and reverse fail, sort loses a fifth): nn.Embedding "
                    "draws N(0, 1), which the √d_model scale makes about 5.7 a coordinate, and the output layer "
                    "tied to it starts with huge logits; Xavier's small tied matrix is what lets the scale and the "
                    "tying work together.",
    "no_embedding_scale": "Harmless here, better on copy and reverse: the small Xavier embeddings (about 1.2 "
                          "long) are then dominated by the positional encoding (about 4), and those two tasks are "
                          "about positions (sort, about the digits, gains nothing); the scale is there so that "
                          "words are not drowned by positions.",
    "untied": "Nearly harmless: three matrices in place of one add 896 parameters, each trained by only its "
              "own use of the vocabulary.",
    "no_warmup+post_norm": "Post-norm without warm-up ends a few points below pre-norm without warm-up on copy "
                           "and reverse: at N = 2, a mild trace of the instability warm-up was brought in for "
                           "(at N = 6 it does not train at all: the last row).",
    # the deep runs, N = 6 layers in each stack (128,846 parameters), each with the same budget as intact@6
    "intact@6": "The model as the code writes it, six layers in each stack, with the same steps: it learns every "
                "task, though at this depth the last steps swing more than at N = 2, so compare rows by their gap, "
                "not by a point or two.",
    "post_norm@6": "With warm-up, post-norm at N = 6 still learns, but more slowly and less steadily than "
                   "pre-norm, so where it stops matters: evaluated every 10 steps over the last 100, copy stays "
                   "between 53 % and 84 % (pre-norm: 78 % to 99 %), reverse holds 93 % to 98 % from step 650 to "
                   "690 before its very last update throws it down (held-out loss from 0.04 to 1.2), and sort is "
                   "only slightly behind (78 % to 99 % against 79 % to 99.8 %); with every residual sum normalised "
                   "there is no identity path from the loss to the lower layers, and the top layers' gradients "
                   "start large (Xiong et al., 2020), which the rate must stay small for.",
    "no_warmup@6": "Pre-norm needs no warm-up even at N = 6: a constant rate at the schedule's peak learns every "
                   "task as well as the intact schedule does (within its swings).",
    "no_warmup+post_norm@6": "Post-norm without warm-up barely trains at N = 6: its loss creeps down and not one "
                             "held-out sequence of any task comes out right, where pre-norm without warm-up "
                             "learns them all. This is what warm-up was brought in for, and why the code's "
                             "pre-norm can do without it.",
}


# ---- tasks -----------------------------------------------------------------------------------------

def answer(task, symbols):
    """The target symbols of a task for a list of input symbols."""
    if task == "copy":
        return list(symbols)
    if task == "reverse":
        return list(reversed(symbols))
    if task == "sort":
        return sorted(symbols)
    raise ValueError(f"unknown task {task!r}; the tasks are {', '.join(TASKS)}")


def held_out(seq):
    """Whether a symbol sequence belongs to the held-out split (a hash of it is 0 mod 10)."""
    h = 0
    for s in seq:
        h = (h * 31 + s + 1) % 1_000_003
    return h % 10 == 0


def sample(n, gen, split="train"):
    """n symbol sequences (lists of 0..9) of MIN_LEN..MAX_LEN symbols from the split ('train' or 'held_out')."""
    out = []
    while len(out) < n:
        length = int(torch.randint(MIN_LEN, MAX_LEN + 1, (1,), generator=gen))
        seq = torch.randint(0, SYMBOLS, (length,), generator=gen).tolist()
        if held_out(seq) == (split == "held_out"):
            out.append(seq)
    return out


def to_batch(task, seqs):
    """A core.data.Batch: source = the symbols, target = <s> answer </s>, both right-padded."""
    width = max(len(s) for s in seqs)
    src = [[a + FIRST for a in s] + [PAD] * (width - len(s)) for s in seqs]
    tgt = [[BOS] + [a + FIRST for a in answer(task, s)] + [EOS] + [PAD] * (width - len(s)) for s in seqs]
    return Batch(torch.tensor(src), torch.tensor(tgt), PAD)


# ---- the breaks, applied to a model built by make_model ---------------------------------------------

class PostNormSublayerConnection(SublayerConnection):
    """The paper's arrangement: "LayerNorm(x + Sublayer(x))", the norm after the residual sum."""

    def forward(self, x, sublayer):
        return self.norm(x + self.dropout(sublayer(x)))


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
    """make_model at the lab's size (N = `layers` in each stack if given), seeded, with the named structural
    breaks applied to its modules."""
    size = dict(size, N=layers) if layers else size
    torch.manual_seed(seed)
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
    return src_mask, tgt_mask


def lr_lambda(breaks, d_model=SIZE["d_model"]):
    """The rate of each optimizer step (Adam's lr is 1, LambdaLR multiplies it by this)."""
    if "no_warmup" in breaks:
        peak = rate(WARMUP, d_model, FACTOR, WARMUP)
        return lambda step: peak
    factor = FACTOR * (HIGH_LR_FACTOR if "high_lr" in breaks else 1.0)
    return lambda step: rate(step, d_model, factor, WARMUP)


# ---- training ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Config:
    """One lab run: a task, the breaks (sorted), label smoothing, accumulation, the budget, the seed, the depth."""
    task: str = "copy"
    breaks: tuple = ()
    smoothing: float = 0.0
    accum: int = 1
    steps: int = 0          # 0: the task's budget
    seconds: float = 0.0    # 0: the task's budget (for the depth: see `budget`)
    seed: int = 0
    layers: int = 0         # layers in each stack; 0: SIZE's N

    def checked(self):
        """The same configuration in canonical form; ValueError with a readable message when it is wrong."""
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; the tasks are {', '.join(TASKS)}")
        unknown = [b for b in self.breaks if b not in BREAKS]
        if unknown:
            raise ValueError(f"unknown break {unknown[0]!r}; the breaks are {', '.join(BREAKS)}")
        if not 0.0 <= self.smoothing <= 0.3:
            raise ValueError(f"smoothing must lie in 0..0.3 (got {self.smoothing})")
        if self.accum not in ACCUM_CHOICES:
            raise ValueError(f"accum must be one of {', '.join(map(str, ACCUM_CHOICES))} (got {self.accum})")
        layers = self.layers or SIZE["N"]
        if not (isinstance(layers, int) and MIN_LAYERS <= layers <= MAX_LAYERS):
            raise ValueError(f"layers must be a whole number from {MIN_LAYERS} to {MAX_LAYERS} (got {self.layers!r})")
        steps, seconds = budget(self.task, layers)
        return replace(self, breaks=tuple(sorted(set(self.breaks))), smoothing=round(float(self.smoothing), 3),
                       steps=int(self.steps or steps), seconds=float(self.seconds or seconds), layers=layers)

    def key(self):
        """What identifies a run's result; a run at the default depth keeps the key it had before depths."""
        fields = asdict(self.checked())
        if fields["layers"] == SIZE["N"]:
            del fields["layers"]
        return json.dumps(fields, sort_keys=True)


def budget(task, layers=SIZE["N"]):
    """(steps, seconds) of a run: the task's steps at every depth; its seconds times layers / N."""
    steps, seconds = BUDGET[task]
    return steps, seconds * layers / SIZE["N"]


ACCUM_CHOICES = (1, 2, 4, 8)   # micro-batches per step: BATCH / k sequences each, the same step as one batch


def step_loss(model, loss_compute, task, breaks, seqs, accum=1, measure=False):
    """Forward and backward over `seqs` in `accum` micro-batches, each loss divided by the tokens of all of them
    (so the summed gradients are those of one batch); returns (loss per token, activation bytes at the peak,
    when `measure`, else 0)."""
    batches = [to_batch(task, seqs[i::accum]) for i in range(accum)]
    tokens = sum(b.ntokens for b in batches)
    total, peak = 0.0, 0
    for b in batches:
        src_mask, tgt_mask = masks(b.src, b.tgt, breaks)
        with SavedBytes(model) if measure else nullcontext() as saved:
            out = model(b.src, b.tgt, src_mask, tgt_mask)
            loss, node = loss_compute(out, b.tgt_y, tokens)
        peak = max(peak, saved.bytes if measure else 0)
        node.backward()
        total += loss.item()
    return total / tokens, peak


class SavedBytes(torch.autograd.graph.saved_tensors_hooks):
    """Counts the bytes of the activations autograd keeps for the backward pass (parameters excluded)."""

    def __init__(self, model):
        params = {p.untyped_storage().data_ptr() for p in held_parameters(model)}
        storages = {}

        def pack(t):
            s = t.untyped_storage()
            if s.data_ptr() not in params:
                storages[s.data_ptr()] = s.nbytes()
            return t

        super().__init__(pack, lambda t: t)
        self.storages = storages

    def __enter__(self):
        super().__enter__()
        return self

    @property
    def bytes(self):
        return sum(self.storages.values())


def gradient_check(task, accum, seed=0, breaks=(), layers=0):
    """The gradients of one batch of BATCH sequences against `accum` micro-batches of BATCH / accum summed:
    the largest difference (absolute, and relative to the largest gradient) and each one's activation peak."""
    grads, peaks = [], []
    seqs = sample(BATCH, torch.Generator().manual_seed(seed))
    for k in (1, accum):
        model = build_model(breaks, seed, layers=layers)
        model.eval()  # no dropout: the two passes must see the same function
        loss_compute = SimpleLossCompute(model.generator, LabelSmoothing(VOCAB, PAD, 0.0))
        _, peak = step_loss(model, loss_compute, task, breaks, seqs, k, measure=True)
        grads.append([p.grad.clone() for p in model.parameters()])
        peaks.append(peak)
    diff = max((a - b).abs().max().item() for a, b in zip(*grads))
    largest = max(a.abs().max().item() for a in grads[0])
    return {"accum": accum, "batch": BATCH, "micro_batch": BATCH // accum, "max_abs_diff": diff,
            "max_rel_diff": diff / largest, "activation_bytes_one_batch": peaks[0],
            "activation_bytes_accumulated": peaks[1]}


def setup(cfg):
    """The model, Adam with its rate schedule, and the loss, for a checked configuration."""
    model = build_model(cfg.breaks, cfg.seed, layers=cfg.layers)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(cfg.breaks))
    loss_compute = SimpleLossCompute(model.generator, LabelSmoothing(VOCAB, PAD, cfg.smoothing))
    return model, optimizer, scheduler, loss_compute


def fit(cfg, on_progress=None, every=20):
    """Train as `cfg` says until its steps or its seconds run out; returns (model, curve, seconds). Every
    `every` steps `on_progress(curve)` is called with the curve so far."""
    model, optimizer, scheduler, loss_compute = setup(cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    curve = {"step": [], "loss": [], "lr": []}
    model.train()
    start = time.perf_counter()
    for step in range(1, cfg.steps + 1):
        lr = optimizer.param_groups[0]["lr"]
        loss, _ = step_loss(model, loss_compute, cfg.task, cfg.breaks, sample(BATCH, gen), cfg.accum)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        scheduler.step()
        for k, v in zip(curve, (step, round(loss, 4), lr)):
            curve[k].append(v)
        if on_progress is not None and step % every == 0:
            on_progress(curve)
        if time.perf_counter() - start > cfg.seconds:
            break
    return model, curve, time.perf_counter() - start


def train(cfg, on_progress=None):
    """Train a lab model on one thread and evaluate it: the result record (see `evaluate`)."""
    cfg = cfg.checked()
    torch.set_num_threads(1)
    cpu = time.thread_time()
    model, curve, seconds = fit(cfg, on_progress)
    cpu = time.thread_time() - cpu
    record = {"task": cfg.task, "breaks": list(cfg.breaks), "smoothing": cfg.smoothing, "accum": cfg.accum,
              "seed": cfg.seed, "layers": cfg.layers, "steps": len(curve["step"]), "steps_budget": cfg.steps,
              "seconds": round(seconds, 2),
              "cpu_seconds": round(cpu, 2), "seconds_budget": cfg.seconds,
              "train_loss": curve["loss"][-1] if curve["loss"] else None}
    record.update(evaluate(model, cfg))
    record["curve"] = curve
    if cfg.accum > 1:
        record["gradient_check"] = gradient_check(cfg.task, cfg.accum, cfg.seed, cfg.breaks, cfg.layers)
    return record


# ---- evaluation ----------------------------------------------------------------------------------------

def held_out_set(n=HELD_OUT):
    """The n held-out sequences every run is measured on (the same ones whatever the run's seed)."""
    return sample(n, torch.Generator().manual_seed(12345), split="held_out")


@torch.no_grad()
def greedy(model, src, breaks, max_len=MAX_LEN + 1):
    """Greedy decoding with the masks the model was trained with: symbol lists, up to the first </s>."""
    model.eval()
    src_mask, _ = masks(src, src[:, :1], breaks)
    memory = model.encode(src, src_mask)
    ys = torch.full((src.size(0), 1), BOS, dtype=torch.long)
    for _ in range(max_len):
        _, tgt_mask = masks(src, ys, breaks)
        out = model.decode(memory, src_mask, ys, tgt_mask)
        ys = torch.cat([ys, model.generator(out[:, -1]).argmax(-1, keepdim=True)], dim=1)
        if (ys == EOS).any(dim=1).all():
            break
    rows = []
    for row in ys[:, 1:].tolist():
        row = row[:row.index(EOS)] if EOS in row else row
        rows.append([t - FIRST for t in row])
    return rows


@torch.no_grad()
def held_out_loss(model, batch, breaks):
    """Negative log-likelihood per target token of the held-out answers under teacher forcing (no smoothing)."""
    model.eval()
    src_mask, tgt_mask = masks(batch.src, batch.tgt, breaks)
    logp = model.generator(model(batch.src, batch.tgt, src_mask, tgt_mask))
    keep = batch.tgt_y != PAD
    return -logp.gather(-1, batch.tgt_y.unsqueeze(-1)).squeeze(-1)[keep].mean().item()


def evaluate(model, cfg, n_examples=6):
    """Exact match of greedy decoding on the held-out set, the teacher-forced loss, the parameter counts, a few
    examples, and the attention maps of one example."""
    seqs = held_out_set()
    batch = to_batch(cfg.task, seqs)
    outputs = greedy(model, batch.src, cfg.breaks)
    right = [out == answer(cfg.task, s) for s, out in zip(seqs, outputs)]
    examples = [{"input": s, "target": answer(cfg.task, s), "output": o} for s, o in zip(seqs, outputs)][:n_examples]
    return {"exact_match": sum(right) / len(right), "held_out_loss": round(held_out_loss(model, batch, cfg.breaks), 4),
            "params_held": count(held_parameters(model)), "params_registered": count(model.parameters()),
            "examples": examples, "attention": attention_maps(model, cfg, seqs)}


ATTENTION_EXAMPLE_LEN = MAX_LEN


@torch.no_grad()
def attention_maps(model, cfg, seqs):
    """Decoder self-attention and cross-attention (per layer and head, in percent) while the model reads its
    own greedy output for one held-out example of ATTENTION_EXAMPLE_LEN symbols."""
    seq = next(s for s in seqs if len(s) == ATTENTION_EXAMPLE_LEN)
    src = torch.tensor([seq]) + FIRST
    out = greedy(model, src, cfg.breaks)[0]
    tgt_in = torch.tensor([[BOS] + [t + FIRST for t in out]])
    roles = {}
    for layer in model.decoder.layers:
        roles[id(layer.self_attn)], roles[id(layer.src_attn)] = "decoder", "cross"
    maps = {"decoder": [], "cross": []}
    mods = attention_layers(model)
    hooks = [m.register_forward_hook(lambda m, args, res: roles.get(id(m)) and maps[roles[id(m)]].append(m.attn[0]))
             for m in mods]
    for m in mods:
        m.keep_attn = True  # keep_attention(model) walks model.modules(), which misses a plain list
    try:
        src_mask, tgt_mask = masks(src, tgt_in, cfg.breaks)
        model(src, tgt_in, src_mask, tgt_mask)
    finally:
        for h in hooks:
            h.remove()
        for m in mods:
            m.keep_attn, m.attn = False, None
    percent = {k: [(a * 100).round().int().tolist() for a in v] for k, v in maps.items()}  # (layers, H, T, S)
    return {"input": seq, "output": out, **percent}


# ---- shipped results, the benchmark, the command line -------------------------------------------------

def downsample(curve, points=120):
    """Every k-th point of a curve (and its last), at most about `points` of them."""
    n = len(curve["step"])
    k = max(1, math.ceil(n / points))
    idx = list(range(0, n, k)) + ([n - 1] if n and (n - 1) % k else [])
    return {name: [values[i] for i in idx] for name, values in curve.items()}


EXTRA = (("no_warmup", "post_norm"),)  # mixes of breaks also shipped: post-norm without its warmup
# also shipped at N = DEEP: post-norm against pre-norm, each with and without warm-up
DEEP_RUNS = ((), ("post_norm",), ("no_warmup",), ("no_warmup", "post_norm"))


def shipped_configs(tasks=tuple(TASKS)):
    """What the Lab tab opens with: the intact model and every single break (and the EXTRA mixes), every task;
    then the DEEP_RUNS at N = DEEP."""
    return ([Config(task, breaks) for task in tasks for breaks in [()] + [(b,) for b in BREAKS] + list(EXTRA)]
            + [Config(task, breaks, layers=DEEP) for breaks in DEEP_RUNS for task in tasks])


def compact(record):
    """A result for assets/lab.json: the curve downsampled, the rates rounded."""
    curve = downsample(record["curve"])
    curve["lr"] = [float(f"{r:.4g}") for r in curve["lr"]]
    return dict(record, curve=curve)


PRECOMPUTE_SECONDS_FACTOR = 20  # the shipped runs' seconds cap, times the task's: a safety net, never reached


def precompute(path=ASSET, tasks=tuple(TASKS), seconds_factor=PRECOMPUTE_SECONDS_FACTOR):
    """Train every shipped configuration missing from `path` and add it (the file is rewritten after each run,
    so an interrupted run resumes where it stopped). Runs are capped by the task's steps; the seconds cap is
    `seconds_factor` times the run's (`budget`), so that a busy machine does not change what is shipped."""
    path = Path(path)
    data = json.loads(path.read_text()) if path.exists() else {}
    data["settings"] = settings()
    runs = data.setdefault("runs", {})
    for cfg in shipped_configs(tasks):
        cfg = replace(cfg, seconds=budget(cfg.task, cfg.layers or SIZE["N"])[1] * seconds_factor)
        name = run_name(cfg)
        if name in runs and runs[name].get("key") == cfg.key():
            continue
        record = compact(train(cfg))
        runs[name] = dict(record, key=cfg.key())
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        tmp.replace(path)
        print(summary(record), flush=True)
    return data


def run_name(cfg):
    """"copy/intact", "copy/no_scale", "reverse/no_warmup+post_norm"; at another depth "copy/post_norm@6"."""
    return f"{cfg.task}/{row_name(cfg.breaks, cfg.layers)}"


def row_name(breaks, layers=0):
    """A configuration's name without its task: the breaks joined by '+' (or 'intact'), '@N' beyond SIZE's N."""
    depth = f"@{layers}" if layers and layers != SIZE["N"] else ""
    return ("+".join(breaks) or "intact") + depth


def settings():
    return {"size": SIZE, "batch": BATCH, "factor": FACTOR, "warmup": WARMUP, "high_lr_factor": HIGH_LR_FACTOR,
            "budget": BUDGET, "lengths": [MIN_LEN, MAX_LEN], "symbols": SYMBOLS, "held_out": HELD_OUT,
            "layers": [MIN_LAYERS, MAX_LAYERS], "deep": DEEP}


def summary(r):
    params = f"params {r['params_registered']:,} registered / {r['params_held']:,} held"
    return (f"{run_name(Config(r['task'], tuple(r['breaks']), layers=r.get('layers', 0))):<32} exact match {r['exact_match']:7.1%}  "
            f"loss {r['train_loss']:.4f}  held-out loss {r['held_out_loss']:.3f}  {r['steps']} steps "
            f"{r['seconds']:5.1f} s  {params}")


def table(path=ASSET):
    """The shipped runs as a Markdown table: per break and task, exact match and final training loss; the reading.
    The rows of the deeper runs (N = DEEP) come last, named '@DEEP'."""
    runs = json.loads(Path(path).read_text())["runs"]
    head = "| configuration | " + " | ".join(f"{t}: exact match, loss" for t in TASKS) + " | what it shows |"
    lines = [head, "|" + "---|" * (len(TASKS) + 2)]
    for name in ["intact", *BREAKS, *("+".join(b) for b in EXTRA), *(row_name(b, DEEP) for b in DEEP_RUNS)]:
        cells = []
        for task in TASKS:
            r = runs.get(f"{task}/{name}")
            cells.append(f"{r['exact_match']:.1%}, {r['train_loss']:.3f}" if r else "")
        reading = READINGS.get(name, "the model as the code writes it" if name == "intact" else "")
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {reading} |")
    return "\n".join(lines)


TARGETS = {"copy": 0.99, "reverse": 0.95}


def bench(tasks=tuple(TASKS)):
    """The targets (intact copy and reverse within their budgets, on one thread), then every break beside the
    intact model measured in the same run."""
    print(f"one thread; budgets {BUDGET} (steps, seconds), whichever comes first")
    for task in tasks:
        intact = train(Config(task))
        target = TARGETS.get(task)
        verdict = "" if target is None else (
            f"  target >= {target:.0%} within {BUDGET[task][1]:g} s: "
            f"{'met' if intact['exact_match'] >= target and intact['steps'] == BUDGET[task][0] else 'NOT met'}")
        print(f"\n{task}: intact {intact['exact_match']:.1%} exact match in {intact['steps']} steps, "
              f"{intact['seconds']:.1f} s ({intact['cpu_seconds']:.1f} s of CPU){verdict}")
        for b in BREAKS:
            r = train(Config(task, (b,)))
            print(f"  {b:<24} exact match {r['exact_match']:7.1%} (intact {intact['exact_match']:.1%})  "
                  f"loss {r['train_loss']:.4f} (intact {intact['train_loss']:.4f})  "
                  f"{r['steps']} steps {r['seconds']:.1f} s (intact {intact['seconds']:.1f} s)", flush=True)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the tasks and the breaks")
    ap.add_argument("--task", default="copy", choices=list(TASKS))
    ap.add_argument("--break", dest="breaks", action="append", default=[], metavar="NAME", choices=list(BREAKS),
                    help="a break to apply (repeatable)")
    ap.add_argument("--smoothing", type=float, default=0.0, help="label smoothing eps, 0..0.3")
    ap.add_argument("--accum", type=int, default=1, help=f"micro-batches per step, one of {ACCUM_CHOICES}")
    ap.add_argument("--steps", type=int, default=0, help="optimizer steps (0: the task's budget)")
    ap.add_argument("--seconds", type=float, default=0, help="seconds of training at most (0: the task's budget)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--layers", type=int, default=0, metavar="N",
                    help=f"layers in each stack, {MIN_LAYERS} to {MAX_LAYERS} (0: {SIZE['N']}); the seconds cap "
                         f"scales with it, the steps do not")
    ap.add_argument("--json", action="store_true", help="print the result as one JSON line")
    ap.add_argument("--progress", action="store_true", help="print the curve as JSON lines while training")
    ap.add_argument("--bench", action="store_true", help="the targets and every break (--task limits it)")
    ap.add_argument("--precompute", metavar="PATH", nargs="?", const=str(ASSET),
                    help=f"add the missing shipped results to PATH (default {ASSET})")
    ap.add_argument("--table", action="store_true", help="the shipped results as a Markdown table (README)")
    ap.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS), help="for --precompute")
    return ap.parse_args(argv)


def progress_printer(every=20):
    """on_progress for --progress: the curve's new points as one JSON line."""
    sent = [0]

    def on_progress(curve):
        n = len(curve["step"])
        print(json.dumps({"progress": {k: v[sent[0]:n] for k, v in curve.items()}}), flush=True)
        sent[0] = n

    return on_progress


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        print("tasks:\n" + "".join(f"  {k:<24} {v}\n" for k, v in TASKS.items()))
        print("breaks (--break NAME, repeatable):\n" + "".join(f"  {k:<24} {v}\n" for k, v in BREAKS.items()))
        print(f"options: --smoothing EPS (0..0.3), --accum K (one of 1, 2, 4, 8), --layers N ({MIN_LAYERS}..{MAX_LAYERS}, "
              f"default {SIZE['N']}: layers in each stack; the seconds cap times N / {SIZE['N']}, the same steps)")
        return
    if args.precompute:
        precompute(args.precompute, tuple(args.tasks))
        return
    if args.table:
        print(table())
        return
    if args.bench:
        bench((args.task,) if "--task" in (sys.argv[1:] if argv is None else argv) else tuple(TASKS))
        return
    cfg = Config(args.task, tuple(args.breaks), args.smoothing, args.accum, args.steps, args.seconds, args.seed,
                 args.layers)
    try:
        cfg = cfg.checked()
    except ValueError as e:
        sys.exit(f"error: {e}")
    record = train(cfg, progress_printer() if args.progress else None)
    if args.json or args.progress:
        print(json.dumps(record, separators=(",", ":")))
    else:
        print(summary(record))
        if "gradient_check" in record:
            print(json.dumps(record["gradient_check"]))


if __name__ == "__main__":
    main()
