"""One Lab run: its configuration, the training loop, and what is measured after it."""
import json
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass, replace

import torch

from ..data import BOS, EOS, PAD
from ..instrument import attention_name, run_with_cache
from ..train import LabelSmoothing, SimpleLossCompute
from .breaks import (
    BREAKS,
    build_model,
    count,
    held_modules,
    held_parameters,
    lr_lambda,
    masks,
)
from .tasks import (
    BATCH,
    BUDGET,
    FIRST,
    HELD_OUT,
    MAX_LAYERS,
    MAX_LEN,
    MIN_LAYERS,
    SIZE,
    TASKS,
    VOCAB,
    answer,
    sample,
    to_batch,
)


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


def step_loss(model, loss_compute, task, breaks, seqs, accum=1, measure=False, device="cpu"):
    """Forward and backward over `seqs` in `accum` micro-batches, each loss divided by the tokens of all of them
    (so the summed gradients are those of one batch); returns (loss per token, activation bytes at the peak,
    when `measure`, else 0). The batches are drawn on the CPU and moved to `device`, the model's."""
    batches = [to_batch(task, seqs[i::accum]).to(device) for i in range(accum)]
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


def to_device(model, device):
    """The model on `device`, the layers of a plain list (plain_list: modules .to() does not reach) included."""
    for m in held_modules(model):
        m.to(device)
    return model


def setup(cfg, device="cpu"):
    """The model (built on the CPU from its seed, then moved to `device`), Adam with its rate schedule, and the
    loss, for a checked configuration."""
    model = to_device(build_model(cfg.breaks, cfg.seed, layers=cfg.layers), device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda(cfg.breaks))
    loss_compute = SimpleLossCompute(model.generator, LabelSmoothing(VOCAB, PAD, cfg.smoothing))
    return model, optimizer, scheduler, loss_compute


def fit(cfg, on_progress=None, every=20, device="cpu"):
    """Train as `cfg` says until its steps or its seconds run out; returns (model, curve, seconds). Every
    `every` steps `on_progress(curve)` is called with the curve so far. The sequences are drawn on the CPU
    from the seed whatever the device, so a run on a GPU sees the same data and starts from the same weights."""
    model, optimizer, scheduler, loss_compute = setup(cfg, device)
    gen = torch.Generator().manual_seed(cfg.seed)
    curve = {"step": [], "loss": [], "lr": []}
    model.train()
    start = time.perf_counter()
    for step in range(1, cfg.steps + 1):
        lr = optimizer.param_groups[0]["lr"]
        loss, _ = step_loss(model, loss_compute, cfg.task, cfg.breaks, sample(BATCH, gen), cfg.accum,
                            device=device)
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


def train(cfg, on_progress=None, device="cpu", threads=1):
    """Train a lab model and evaluate it: the result record (see `evaluate`), plain Python values whatever the
    device. `threads` (None: leave torch's setting alone) is the CPU threads torch may use; the Lab's processes
    use one."""
    cfg = cfg.checked()
    if threads:
        torch.set_num_threads(threads)
    cpu = time.thread_time()
    model, curve, seconds = fit(cfg, on_progress, device=device)
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
    ys = torch.full((src.size(0), 1), BOS, dtype=torch.long, device=src.device)
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
    batch = to_batch(cfg.task, seqs).to(next(model.parameters()).device)
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
    device = next(model.parameters()).device
    src = torch.tensor([seq], device=device) + FIRST
    out = greedy(model, src, cfg.breaks)[0]
    tgt_in = torch.tensor([[BOS] + [t + FIRST for t in out]], device=device)
    src_mask, tgt_mask = masks(src, tgt_in, cfg.breaks)
    _, cache = run_with_cache(model, src, tgt_in, src_mask, tgt_mask, names=["decoder.*:weights"], output=False)
    maps = {kind: [a[0] for a in cache.stacked(attention_name(kind), "weights")] for kind in ("decoder", "cross")}
    percent = {k: [(a * 100).round().int().tolist() for a in v] for k, v in maps.items()}  # (layers, H, T, S)
    return {"input": seq, "output": out, **percent}

