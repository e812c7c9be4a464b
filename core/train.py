"""Training: Adam with the Noam schedule, label smoothing, token-based batches, gradient accumulation.

    python -m core.train --run-dir runs/base                      # CPU, or CUDA with --bf16
    torchrun --nproc_per_node=4 -m core.train --run-dir runs/ddp  # several GPUs (DDP)
    python -m core.train --run-dir runs/base --export-to assets --average 5

As in The Annotated Transformer: `run_epoch` trains on one pass of batches, a `TrainState` says where the
run stands, `evaluate` measures the model on val after each epoch, and `main` wires them together.
The run directory (`--out` is another name for `--run-dir`) keeps `last.pt` (the resume point, also written
every --save-every-min minutes), one `epoch_NN.pt` per epoch (for checkpoint averaging), `log.jsonl`
(replayed by the app), `config.json`, `batching.json` and the run's own `spm.model`. Its history is kept in
`snapshots/`: the weights before the first step and after each of --snapshot-steps optimizer steps (where most of
the change happens), each with its val loss, beside the epoch checkpoints; each one is logged as a "snapshot"
record.
"""
import argparse
import json
import math
import os
import random
import shutil
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode
from tqdm import tqdm

from .checkpoint import (
    GROUP,
    SNAPSHOT_INDEX,
    SNAPSHOTS,
    SNAPSHOTS_LIMIT,
    load_pretrained,
    load_snapshot,
    model_from_config,
    read_tokenizer,
    save_pretrained,
    save_snapshot,
)
from .data import (
    ASSETS,
    PAD,
    BatchLoader,
    default_data_dir,
    encode_pairs,
    load_split,
    load_tokenizer,
    nonblank_lines,
    padding_stats,
    sentence_batches,
    source_lengths,
    token_batches,
    train_tokenizer,
)
from .evaluate import score
from .translate import Translator


class OwnGenerator(TorchDispatchMode):
    """Within this block every random draw of the thread that entered it comes from `generator`, never from the
    process's global one, which is neither read nor changed. A draw that cannot take a generator (an op marked
    nondeterministic_seeded whose schema has none, as native_dropout) raises. The block holds for its own
    thread only (torch keeps dispatch modes per thread), so events of a server that run at the same time draw
    as they would without it. It sees every draw at its lowest level (the aten ops), whoever makes it: module
    constructors, nn.init, reset_parameters. CPU generators: build on the CPU, then move the model."""

    def __init__(self, generator):
        super().__init__()
        self.generator = generator

    @classmethod
    def _should_skip_dynamo(cls):
        """No torch.compile runs within: the mode's calls need not be kept from it, which would import
        torch._dynamo (seconds) at the first draw (torch's own opt-out, as its docstring shows)."""
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.Tag.nondeterministic_seeded in func.tags:
            func, args, kwargs = _drawing_from(self.generator, func, args, kwargs)
        return func(*args, **kwargs)


def _drawing_from(generator, func, args, kwargs):
    """The call (op, args, kwargs) of the random aten op `func` with `generator` where no generator is given."""
    drawing = _taking_a_generator(func)
    if drawing is None:
        raise RuntimeError(f"{func} draws from the global generator only: not within OwnGenerator")
    at = [a.name for a in drawing._schema.arguments].index("generator")
    if at < len(args):  # given in its place (torch.poisson(rates, None))
        return drawing, (*args[:at], generator if args[at] is None else args[at], *args[at + 1:]), kwargs
    return drawing, args, dict(kwargs, generator=kwargs.get("generator") or generator)


def _taking_a_generator(func):
    """The aten op `func` or its overload that takes the same arguments and a generator (torch.rand(n) is
    aten.rand.default, whose twin aten.rand.generator takes one); None where it has none."""
    names = [a.name for a in func._schema.arguments]
    if "generator" in names:
        return func
    packet = func.overloadpacket
    for overload in (getattr(packet, name) for name in packet.overloads()):
        theirs = [a.name for a in overload._schema.arguments]
        if "generator" in theirs and [n for n in theirs if n != "generator"] == names:
            return overload
    return None


def seeded(seed):
    """A block whose random draws come from a generator of its own seeded with `seed` (OwnGenerator): a model
    built within it has the weights it had after torch.manual_seed(seed), whatever else the process draws."""
    return OwnGenerator(torch.Generator().manual_seed(seed))


def rate(step, model_size, factor, warmup):
    """lrate = factor * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5); step 0 counts as 1."""
    if step == 0:
        step = 1
    return factor * (model_size ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5)))


class LabelSmoothing(nn.Module):
    """Label smoothing of value eps_ls (Szegedy et al.): the target puts 1 - eps on the right token and
    spreads eps over the others (never on padding); the loss is KL(target || model)."""

    def __init__(self, size, padding_idx, smoothing=0.0):
        super().__init__()
        self.criterion = nn.KLDivLoss(reduction="sum")
        self.padding_idx = padding_idx
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.size = size
        self.true_dist = None

    def forward(self, x, target):
        assert x.size(1) == self.size
        true_dist = torch.full_like(x, self.smoothing / (self.size - 2))
        true_dist.scatter_(1, target.unsqueeze(1), self.confidence)
        true_dist[:, self.padding_idx] = 0
        true_dist.masked_fill_((target == self.padding_idx).unsqueeze(1), 0.0)
        self.true_dist = true_dist
        return self.criterion(x, true_dist.detach())


class SimpleLossCompute:
    """Generator + criterion; returns the summed loss and the per-token loss to back-propagate."""

    def __init__(self, generator, criterion):
        self.generator = generator
        self.criterion = criterion

    def __call__(self, x, y, norm):
        logp = self.generator(x).float()
        sloss = self.criterion(logp.reshape(-1, logp.size(-1)), y.reshape(-1))
        return sloss.detach(), sloss / norm


@dataclass
class TrainState:
    """Where a run stands; `last.pt` holds it beside the model, optimizer, scheduler and RNG states."""
    step: int = 0           # optimizer steps taken
    epoch: int = 0          # epochs finished
    batch_pos: int = 0      # batches of the current epoch trained on (each process's share)
    minutes: float = 0.0    # training time of the earlier processes of this run (when resumed)
    started: float = field(default_factory=time.time, compare=False)  # when this process started training

    def elapsed_minutes(self):
        """Training time of this process."""
        return (time.time() - self.started) / 60

    def total_minutes(self):
        return self.minutes + self.elapsed_minutes()

    def save(self, path, model, optimizer, scheduler):
        """Write the resume point atomically (a temporary file, then a rename); the one before it is kept as
        `last.prev.pt`, for a `last.pt` damaged after it was written. `last.pt` exists at every moment: the old
        one becomes `last.prev.pt` through a second name (a hard link), not by being moved away."""
        device = next(model.parameters()).device
        checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                      "scheduler": scheduler.state_dict(), "step": self.step, "epoch": self.epoch,
                      "batch_pos": self.batch_pos, "minutes": self.total_minutes(), "rng": torch.get_rng_state(),
                      "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None}
        path = Path(path)
        tmp = path.with_suffix(".tmp")
        torch.save(checkpoint, tmp)
        if path.exists():
            link = path.with_suffix(".prev.tmp")
            link.unlink(missing_ok=True)
            os.link(path, link)
            os.replace(link, previous_checkpoint(path))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path, model, optimizer, scheduler):
        """Restore model, optimizer, scheduler and RNG states from `path` (or, when it is missing or damaged,
        from the resume point before it); the state to continue from."""
        checkpoint = read_resume_point(path)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        torch.set_rng_state(checkpoint["rng"])
        device = next(model.parameters()).device
        if device.type == "cuda" and checkpoint.get("cuda_rng") is not None:  # dropout masks on the GPU
            torch.cuda.set_rng_state(checkpoint["cuda_rng"], device)
        return cls(checkpoint["step"], checkpoint["epoch"], checkpoint["batch_pos"], checkpoint.get("minutes", 0.0))


def run_epoch(data_iter, model, loss_compute, optimizer, scheduler, accum_iter=1, train_state=None,
              autocast=nullcontext, on_step=None):
    """Train on the batches of `data_iter` (a sized iterable of Batch): forward, loss and backward for
    each; every `accum_iter` batches (fewer at the end) one optimizer step at the scheduler's rate, counted
    in `train_state` and reported to `on_step(record)`, which returns True to stop.
    Returns (loss per target token over the steps taken, whether on_step stopped it)."""
    train_state = train_state if train_state is not None else TrainState()
    ddp = isinstance(model, nn.parallel.DistributedDataParallel)
    model.train()
    n_batches = len(data_iter)
    step_sums = torch.zeros(2, dtype=torch.float64, device=next(model.parameters()).device)  # loss, tokens
    total_loss = total_tokens = 0.0
    t_step = time.time()
    for i, batch in enumerate(data_iter):
        n_accum = min(accum_iter, n_batches - (i - i % accum_iter))  # batches in this optimizer step
        steps_now = i % accum_iter == n_accum - 1
        with model.no_sync() if ddp and not steps_now else nullcontext():  # all-reduce gradients once a step
            with autocast():
                out = model(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
                loss, loss_node = loss_compute(out, batch.tgt_y, batch.ntokens)
            (loss_node / n_accum).backward()
        step_sums[0] += loss
        step_sums[1] += batch.ntokens
        del loss, loss_node
        if not steps_now:
            continue
        lr = optimizer.param_groups[0]["lr"]
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        scheduler.step()  # the rate of the next optimizer step
        train_state.step += 1
        train_state.batch_pos += n_accum
        if ddp:
            dist.all_reduce(step_sums)  # device tensors: NCCL reduces nothing else
        loss_sum, tokens = step_sums.tolist()
        step_sums.zero_()
        total_loss, total_tokens = total_loss + loss_sum, total_tokens + tokens
        now = time.time()
        record = {"type": "step", "step": train_state.step, "epoch": train_state.epoch, "lr": lr,
                  "loss": loss_sum / tokens, "tokens": int(tokens), "seconds": round(now - t_step, 4)}
        t_step = now
        if on_step is not None and on_step(record):
            return total_loss / total_tokens, True
    return total_loss / max(total_tokens, 1), False


@torch.no_grad()
def evaluate_loss(model, data_iter, autocast=nullcontext):
    """Validation NLL per target token (no smoothing), perplexity, and the model's mean probability on
    its own top token (its confidence)."""
    model.eval()
    nll = conf = n = 0.0
    for b in data_iter:
        with autocast():
            out = model(b.src, b.tgt, b.src_mask, b.tgt_mask)
        logp = model.generator(out).float()
        keep = b.tgt_y != PAD
        nll -= logp.gather(-1, b.tgt_y.unsqueeze(-1)).squeeze(-1)[keep].sum().item()
        conf += logp.max(-1).values.exp()[keep].sum().item()
        n += keep.sum().item()
    return {"val_loss": nll / n, "val_ppl": math.exp(nll / n), "val_confidence": conf / n}


def evaluate(model, data, config, epoch, args, autocast=nullcontext):
    """The epoch record's measurements on val: loss, perplexity and confidence; greedy BLEU every
    --bleu-every epochs; the translations of the probe sentences."""
    device = next(model.parameters()).device
    val_batches = BatchLoader(data.val, token_batches(data.val, args.max_tokens, shuffle=False), device)
    result = evaluate_loss(model, val_batches, autocast)
    translator = Translator(model, data.sp, config, device, half_rows=0)  # batched: float32 throughout
    if args.bleu_every and epoch % args.bleu_every == 0:
        hyps = translator.translate([de for de, _ in data.val_pairs])
        result["val_bleu"] = score(hyps, [en for _, en in data.val_pairs])["bleu"]
    if data.probes:
        result["probes"] = translator.translate(data.probes)
    return result


def previous_checkpoint(path):
    """Where the resume point before `path` is kept: last.pt -> last.prev.pt."""
    return Path(path).with_suffix(".prev.pt")


def read_resume_point(path):
    """The checkpoint dict in `path`, else in the one before it (a process killed while saving, or a file
    damaged afterwards, leaves one of them whole). Raises RuntimeError naming both when neither reads."""
    problems = []
    for candidate in (Path(path), previous_checkpoint(path)):
        if not candidate.exists():
            problems.append(f"{candidate} is missing")
            continue
        try:
            checkpoint = torch.load(candidate, map_location="cpu", weights_only=True)
        except Exception as e:  # torch raises several kinds for a truncated or garbled file
            problems.append(f"{candidate} cannot be read ({type(e).__name__}: {str(e)[:120]})")
            continue
        if problems:
            print(f"warning: {problems[0]}; resuming from {candidate}", file=sys.stderr)
        return checkpoint
    raise RuntimeError("no resume point: " + "; ".join(problems))


def truncate_log(path, step, epoch):
    """Drop log records written after the checkpoint being resumed, and a last line cut short by a kill."""
    if not path.exists():
        return
    keep = []
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:  # a record cut short: written after the checkpoint, dropped
            continue
        if rec["type"] in ("step", "snapshot") and rec["step"] > step or rec["type"] == "epoch" and rec["epoch"] > epoch:
            continue
        keep.append(line)
    path.write_text("".join(line + "\n" for line in keep))


def average_checkpoints(paths):
    """The paper's model averaging: the element-wise mean of the last checkpoints' weights."""
    avg = None
    for p in paths:
        state = torch.load(p, map_location="cpu", weights_only=True)["model"]
        if avg is None:
            avg = {k: v.clone().double() for k, v in state.items()}
        else:
            for k in avg:
                avg[k] += state[k].double()
    return {k: (v / len(paths)).float() for k, v in avg.items()}


def export(run_dir, target, average=1, length_penalty=None):
    """Average the last `average` epoch checkpoints and write config.json + safetensors to `target`
    (with the beam-search length penalty chosen on val, when given)."""
    run_dir, target = Path(run_dir), Path(target)
    config = json.loads((run_dir / "config.json").read_text())
    epochs = sorted(run_dir.glob("epoch_*.pt"))[-average:]
    model = model_from_config(config)
    model.load_state_dict(average_checkpoints(epochs))
    config = dict(config, averaged_checkpoints=[p.name for p in epochs])
    if length_penalty is not None:
        config["length_penalty"] = length_penalty
    save_pretrained(model, config, target)
    for src, dst in (("spm.model", config["tokenizer"]), ("log.jsonl", "train_log.jsonl"),
                     ("batching.json", "batching.json")):
        if (run_dir / src).exists() and (run_dir / src).resolve() != (target / dst).resolve():
            shutil.copyfile(run_dir / src, target / dst)
    last = torch.load(epochs[-1], map_location="cpu", weights_only=True)
    truncate_log(target / "train_log.jsonl", last["step"], last["epoch"])  # the log ends with the model
    return model, config


def history(run_dir):
    """The run's kept points, oldest first: (label, log record, checkpoint file) for each snapshot ("init",
    "step-25", ...) and each epoch ("epoch-1", ...)."""
    records = [json.loads(line) for line in (Path(run_dir) / "log.jsonl").read_text().splitlines() if line.strip()]
    points = []
    for r in records:
        if r["type"] == "snapshot":
            points.append(("init" if r["step"] == 0 else f"step-{r['step']}", r, Path(run_dir) / r["file"]))
        elif r["type"] == "epoch":
            points.append((f"epoch-{r['epoch']}", r, Path(run_dir) / f"epoch_{r['epoch']:02d}.pt"))
    return sorted(points, key=lambda p: (p[1]["step"], p[1]["type"] == "epoch"))


def export_snapshots(run_dir, target, bits=8, probes=(), labels=None):
    """The run's history beside the model exported to `target`, each point's weights stored as their difference
    from it (core/checkpoint.py): target/snapshots/<label>.safetensors and index.json, oldest first, each entry
    with the greedy translations of `probes` that its stored weights give. `labels`: the points to ship (all
    when None); together they must stay within SNAPSHOTS_LIMIT bytes."""
    target = Path(target)
    points = history(run_dir)
    if labels is not None:
        unknown = set(labels) - {label for label, _, _ in points}
        if unknown:
            raise SystemExit(f"no such points in {run_dir}: {', '.join(sorted(unknown))} "
                             f"(it has {', '.join(label for label, _, _ in points)})")
        points = [p for p in points if p[0] in set(labels)]
    base, config = load_pretrained(target)
    folder = target / SNAPSHOTS
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.safetensors"):
        old.unlink()
    entries = []
    for label, rec, path in points:
        model = model_from_config(config)
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True)["model"])
        size = save_snapshot(model, base, folder / f"{label}.safetensors", bits)
        entries.append({"label": label, "step": rec["step"], "epoch": rec["epoch"], "train_loss": rec.get("train_loss"),
                        "val_loss": rec["val_loss"], "file": f"{label}.safetensors", "bits": bits, "bytes": size})
    total = sum(e["bytes"] for e in entries)
    if total > SNAPSHOTS_LIMIT:
        for old in (*folder.glob("*.safetensors"), folder / SNAPSHOT_INDEX):
            old.unlink(missing_ok=True)
        raise SystemExit(f"{len(entries)} snapshots take {total / 1e6:.1f} MB, over {SNAPSHOTS_LIMIT / 1e6:.0f} MB: "
                         "ship fewer (--snapshot-labels) or in fewer bits (--snapshot-bits 4)")
    index = {"format": 1, "group": GROUP, "snapshots": entries}
    (folder / SNAPSHOT_INDEX).write_text(json.dumps(index, indent=1) + "\n")
    tokenizer = read_tokenizer(target / config.get("tokenizer", "spm.model"), config["src_vocab"])
    for entry in entries:  # what each one says, from the weights as stored
        model, config, _ = load_snapshot(target, entry["label"])
        entry["probes"] = Translator(model, tokenizer, config, half_rows=0).translate(list(probes)) if probes else []
    (folder / SNAPSHOT_INDEX).write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n")
    return entries


class RunLog:
    """log.jsonl, one JSON record a line; only the first process writes (the others hold a silent one)."""

    def __init__(self, path, enabled=True):
        self.path = Path(path)
        self.enabled = enabled

    def start(self, resumed_from=None):
        """A new run empties the log; a resumed one drops what came after its checkpoint."""
        if not self.enabled:
            return
        if resumed_from is None:
            self.path.write_text("")
        else:
            truncate_log(self.path, resumed_from.step, resumed_from.epoch)

    def write(self, record):
        if self.enabled:
            with self.path.open("a") as f:
                f.write(json.dumps(record) + "\n")


class AfterStep:
    """What main does after each optimizer step (run_epoch's on_step): log it, show it on the progress
    bar, stop at --max-steps or --max-minutes, and save last.pt every --save-every-min minutes."""

    def __init__(self, args, state, log, save_last, is_main, device, snapshot=None):
        self.args, self.state, self.log, self.save_last = args, state, log, save_last
        self.is_main, self.device = is_main, device
        self.last_save = time.time()
        self.bar = None
        self.snapshot = snapshot  # snapshot(): the weights of this step kept (the first process)

    def start_epoch(self, n_batches):
        self.bar = tqdm(total=n_batches, initial=self.state.batch_pos, desc=f"epoch {self.state.epoch}",
                        disable=not self.is_main or self.args.no_progress)

    def end_epoch(self):
        self.bar.close()

    def saved(self):
        self.last_save = time.time()

    def should_stop(self):
        args = self.args
        stop = bool(args.max_steps and self.state.step >= args.max_steps
                    or args.max_minutes and self.state.elapsed_minutes() > args.max_minutes)
        if args.max_minutes and dist.is_initialized():  # clocks differ: the first process decides for all
            flag = torch.tensor([float(stop)], device=self.device)
            dist.broadcast(flag, 0)
            stop = bool(flag.item())
        return stop

    def __call__(self, record):
        self.log.write(record)
        if self.snapshot is not None and record["step"] in snapshot_steps(self.args):
            self.snapshot()
        self.bar.update(self.state.batch_pos - self.bar.n)
        self.bar.set_postfix(loss=f"{record['loss']:.3f}", lr=f"{record['lr']:.2e}")
        if self.should_stop():
            return True
        if self.is_main and (time.time() - self.last_save) / 60 > self.args.save_every_min:
            self.save_last()
            self.saved()
        return False


@dataclass
class RunData:
    """The run's sentence pairs, their token ids, the tokenizer and the probe sentences."""
    train_pairs: list
    val_pairs: list
    sp: object            # SentencePieceProcessor
    train: list           # (source ids, target ids) per training pair
    val: list
    probes: list

    @property
    def vocab(self):
        return self.sp.get_piece_size()


def load_data(args, run_dir, is_main, ddp):
    """Multi30k's train and val pairs (cut to --train-limit/--val-limit) and the tokenizer, trained by
    the first process when --spm is missing; the run directory keeps a copy of it."""
    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    train_pairs = load_split(data_dir, "train", args.download)[:args.train_limit or None]
    val_pairs = load_split(data_dir, "val", args.download)[:args.val_limit or None]
    spm_path = Path(args.spm)
    if not spm_path.exists():
        if is_main:
            spm_path.parent.mkdir(parents=True, exist_ok=True)
            train_tokenizer([s for p in train_pairs for s in p], spm_path, args.vocab_size)
        if ddp:
            dist.barrier()
    sp = load_tokenizer(spm_path)
    if is_main and spm_path.resolve() != (run_dir / "spm.model").resolve():
        shutil.copyfile(spm_path, run_dir / "spm.model")  # the run keeps its own vocabulary
    probes = nonblank_lines(Path(args.probes).read_text()) if Path(args.probes).exists() else []
    return RunData(train_pairs, val_pairs, sp, encode_pairs(sp, train_pairs, args.max_tokens_per_sentence),
                   encode_pairs(sp, val_pairs, args.max_tokens_per_sentence), probes)


def model_config(args, vocab):
    return {"src_vocab": vocab, "tgt_vocab": vocab, "N": args.layers, "d_model": args.d_model,
            "d_ff": args.d_ff, "h": args.heads, "dropout": args.dropout, "max_len": 512,
            "tie_weights": True, "max_src_tokens": args.max_tokens_per_sentence, "tokenizer": "spm.model"}


def make_optimizer(model, args):
    """Adam (beta1 0.9, beta2 0.98, eps 1e-9) whose rate the Noam schedule sets at every optimizer step."""
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lr_lambda=lambda step: rate(step, args.d_model, args.factor, args.warmup))
    return optimizer, scheduler


def batching_stats(examples, max_tokens, seed):
    """Padding of token-based batches against fixed sentence-count batches of the same mean size."""
    token_b = token_batches(examples, max_tokens, shuffle=True, seed=seed)
    batch_size = round(len(examples) / len(token_b))
    return {"token_based": padding_stats(examples, token_b),
            "sentence_count": padding_stats(examples, sentence_batches(examples, batch_size, seed=seed)),
            "max_tokens": max_tokens, "batch_size": batch_size,
            "source_pieces": source_lengths(examples)}  # the app flags a sentence longer than training's


def write_run_start(args, run_dir, config, model, data, world, device, log):
    """A new run's config.json, batching.json and the log's first record."""
    (run_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    stats = batching_stats(data.train, args.max_tokens, args.seed)
    (run_dir / "batching.json").write_text(json.dumps(stats, indent=2) + "\n")
    log.write({"type": "config", "args": vars(args), "model": config, "train_pairs": len(data.train),
               "val_pairs": len(data.val), "world_size": world, "device": str(device),
               "parameters": sum(p.numel() for p in model.parameters()), "batching": stats})


def epoch_batches(examples, max_tokens, seed, rank=0, world=1):
    """This process's share of one epoch's shuffled token batches (every process the same count)."""
    batches = token_batches(examples, max_tokens, shuffle=True, seed=seed)
    return batches[rank:len(batches) // world * world:world]


def end_of_epoch(model, data, config, args, state, log, run_dir, autocast):
    """Log the epoch's validation record (with the training loss of its steps) and keep an epoch checkpoint for
    averaging."""
    record = {"type": "epoch", "epoch": state.epoch, "step": state.step, "minutes": round(state.total_minutes(), 2),
              "train_loss": logged_loss(log, lambda r: r["epoch"] == state.epoch - 1)}
    record.update(evaluate(model, data, config, state.epoch, args, autocast))
    log.write(record)
    tqdm.write(json.dumps({k: v for k, v in record.items() if k != "probes"}))
    torch.save({"model": model.state_dict(), "epoch": state.epoch, "step": state.step},
               run_dir / f"epoch_{state.epoch:02d}.pt")


def snapshot_steps(args):
    """The optimizer steps after which the weights are kept (0: the initialisation)."""
    return {int(s) for s in str(args.snapshot_steps or "").split(",") if s.strip()}


def logged_loss(log, keep):
    """The training loss per token of the logged steps that `keep(record)` chooses (None if none): read from the
    log, so that a resumed run gives what an uninterrupted one would."""
    loss = tokens = 0.0
    if log.enabled and log.path.exists():
        for rec in map(json.loads, log.path.read_text().splitlines()):
            if rec["type"] == "step" and keep(rec):
                loss, tokens = loss + rec["loss"] * rec["tokens"], tokens + rec["tokens"]
    return loss / tokens if tokens else None


def keep_snapshot(model, data, args, state, log, run_dir, autocast):
    """Keep the weights as they are now, with their val loss and the training loss of the steps since the
    snapshot before, in snapshots/step_NNNNNN.pt, and log them. Evaluation draws no random numbers, so a run
    with snapshots trains exactly as one without."""
    before = max((k for k in snapshot_steps(args) if k < state.step), default=0)
    train_loss = logged_loss(log, lambda r: before < r["step"] <= state.step)
    training = model.training
    val = evaluate_loss(model, BatchLoader(data.val, token_batches(data.val, args.max_tokens, shuffle=False),
                                           next(model.parameters()).device), autocast)
    model.train(training)
    path = run_dir / "snapshots" / f"step_{state.step:06d}.pt"
    path.parent.mkdir(exist_ok=True)
    record = {"type": "snapshot", "step": state.step, "epoch": state.epoch, "train_loss": train_loss,
              "val_loss": val["val_loss"], "file": str(path.relative_to(run_dir))}
    torch.save({"model": model.state_dict(), **{k: v for k, v in record.items() if k != "type"}}, path)
    log.write(record)
    return record


def setup_distributed(device_name):
    """(device, rank, world size) under torchrun, with the process group started (NCCL on CUDA, gloo on
    the CPU); (device, 0, 1) for a single process."""
    world = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", 0))
    device = torch.device(device_name)
    if world > 1:
        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device, rank, world


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None, help="Multi30k raw files (default: ../shared or cache)")
    ap.add_argument("--download", action="store_true", help="fetch missing data files")
    ap.add_argument("--run-dir", "--out", dest="run_dir", default="runs/base", help="run directory")
    ap.add_argument("--spm", default=str(ASSETS / "spm.model"), help="SentencePiece model (trained if missing)")
    ap.add_argument("--vocab-size", type=int, default=8000)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--d-ff", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--smoothing", type=float, default=0.1)
    ap.add_argument("--max-tokens", type=int, default=4096, help="padded tokens per side per batch")
    ap.add_argument("--accum-iter", type=int, default=1, help="batches per optimizer step")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many optimizer steps")
    ap.add_argument("--max-minutes", type=float, default=0, help="stop (resumably) after this long")
    ap.add_argument("--factor", type=float, default=1.0)
    ap.add_argument("--warmup", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch default)")
    ap.add_argument("--max-tokens-per-sentence", type=int, default=128)
    ap.add_argument("--train-limit", type=int, default=0, help="use only the first N training pairs")
    ap.add_argument("--val-limit", type=int, default=0)
    ap.add_argument("--bleu-every", type=int, default=1, help="val BLEU every N epochs (0: never)")
    ap.add_argument("--probes", default=str(ASSETS / "probes.txt"), help="German probe sentences")
    ap.add_argument("--save-every-min", type=float, default=10.0)
    ap.add_argument("--snapshot-steps", default="0,25,50,100,200,400,800",
                    help="keep the weights after these optimizer steps (0: before the first), for the time-lapse")
    ap.add_argument("--snapshot-bits", type=int, default=0, choices=(0, 4, 8),
                    help="with --export-to, also export the run's history in 8 or 4 bits a weight (0: not)")
    ap.add_argument("--snapshot-labels", default=None,
                    help="with --snapshot-bits, the points to export, comma-separated (init,step-25,...,epoch-28; "
                         "default: all of them)")
    ap.add_argument("--resume", action="store_true", help="continue from RUN_DIR/last.pt")
    ap.add_argument("--export-to", default=None, help="after training, write the model here")
    ap.add_argument("--average", type=int, default=1, help="average the last N epoch checkpoints")
    ap.add_argument("--length-penalty", type=float, default=None, help="beam-search alpha to ship (tune on val)")
    ap.add_argument("--no-progress", action="store_true")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    device, rank, world = setup_distributed(args.device)
    is_main = rank == 0
    if args.threads:
        torch.set_num_threads(args.threads)
    run_dir = Path(args.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    data = load_data(args, run_dir, is_main, world > 1)
    config = model_config(args, data.vocab)
    model = model_from_config(config).to(device)
    optimizer, scheduler = make_optimizer(model, args)
    loss_compute = SimpleLossCompute(model.generator, LabelSmoothing(data.vocab, PAD, args.smoothing))

    log = RunLog(run_dir / "log.jsonl", enabled=is_main)
    resuming = args.resume and any(p.exists() for p in (run_dir / "last.pt", previous_checkpoint(run_dir / "last.pt")))
    state = TrainState.load(run_dir / "last.pt", model, optimizer, scheduler) if resuming else TrainState()
    log.start(state if resuming else None)
    if is_main and state.step == 0:
        write_run_start(args, run_dir, config, model, data, world, device, log)
    net = nn.parallel.DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None) \
        if world > 1 else model
    autocast = partial(torch.autocast, device.type, dtype=torch.bfloat16) if args.bf16 else nullcontext
    save_last = partial(state.save, run_dir / "last.pt", model, optimizer, scheduler)
    snapshot = partial(keep_snapshot, model, data, args, state, log, run_dir, autocast) if is_main else None
    if snapshot and state.step == 0 and 0 in snapshot_steps(args):
        snapshot()  # the initialisation
    after_step = AfterStep(args, state, log, save_last, is_main, device, snapshot)

    state.started = time.time()
    while state.epoch < args.epochs:
        batches = epoch_batches(data.train, args.max_tokens, args.seed + state.epoch, rank, world)
        after_step.start_epoch(len(batches))
        _, stopped = run_epoch(BatchLoader(data.train, batches[state.batch_pos:], device), net, loss_compute,
                               optimizer, scheduler, args.accum_iter, state, autocast, after_step)
        after_step.end_epoch()
        if state.batch_pos < len(batches):  # stopped part-way through the epoch: resume from here
            if is_main:
                save_last()
            break
        state.epoch, state.batch_pos = state.epoch + 1, 0
        if is_main:
            end_of_epoch(model, data, config, args, state, log, run_dir, autocast)
            save_last()
            after_step.saved()
        if world > 1:
            dist.barrier()
        if stopped:
            break
    if is_main and args.export_to and state.epoch >= args.epochs:
        export(run_dir, args.export_to, args.average, args.length_penalty)
        if args.snapshot_bits:
            labels = [s.strip() for s in args.snapshot_labels.split(",") if s.strip()] if args.snapshot_labels else None
            export_snapshots(run_dir, args.export_to, args.snapshot_bits, data.probes, labels)
    if world > 1:
        dist.destroy_process_group()
    return model


if __name__ == "__main__":
    main()
