"""Training: Adam with the Noam schedule, label smoothing, token-based batches, gradient accumulation.

    python -m core.train --out runs/base                      # CPU, or CUDA with --bf16
    torchrun --nproc_per_node=4 -m core.train --out runs/ddp  # several GPUs (DDP)
    python -m core.train --out runs/base --export-to assets --average 5

The run directory keeps `last.pt` (resume point, also written every --save-every-min minutes),
one `epoch_NN.pt` per epoch (for checkpoint averaging) and `log.jsonl` (replayed by the app).
"""
import argparse
import json
import math
import os
import random
import shutil
import time
from contextlib import nullcontext
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn as nn
from tqdm import tqdm

from .checkpoint import MODEL_KEYS, model_from_config, save_pretrained, unique_state
from .data import (ASSETS, PAD, collate, default_data_dir, encode_pairs, load_split, load_tokenizer,
                   padding_stats, sentence_batches, token_batches, train_tokenizer)


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


def model_config(args, vocab):
    return {"src_vocab": vocab, "tgt_vocab": vocab, "N": args.layers, "d_model": args.d_model,
            "d_ff": args.d_ff, "h": args.heads, "dropout": args.dropout, "max_len": 512,
            "tie_weights": True, "max_src_tokens": args.max_tokens_per_sentence}


@torch.no_grad()
def evaluate_loss(model, examples, max_tokens, device, autocast):
    """Validation NLL per target token (no smoothing), perplexity, and the model's mean probability on
    its own top token (its confidence)."""
    model.eval()
    nll = conf = n = 0.0
    for idx in token_batches(examples, max_tokens, shuffle=False):
        b = collate([examples[i] for i in idx]).to(device)
        with autocast():
            out = model(b.src, b.tgt, b.src_mask, b.tgt_mask)
        logp = model.generator(out).float()
        keep = b.tgt_y != PAD
        nll -= logp.gather(-1, b.tgt_y.unsqueeze(-1)).squeeze(-1)[keep].sum().item()
        conf += logp.max(-1).values.exp()[keep].sum().item()
        n += keep.sum().item()
    return {"val_loss": nll / n, "val_ppl": math.exp(nll / n), "val_confidence": conf / n}


def bleu(hyps, refs):
    import sacrebleu
    return sacrebleu.corpus_bleu(hyps, [refs]).score


def truncate_log(path, step, epoch):
    """Drop log records written after the checkpoint being resumed."""
    if not path.exists():
        return
    keep = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec["type"] == "step" and rec["step"] > step or rec["type"] == "epoch" and rec["epoch"] > epoch:
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


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None, help="Multi30k raw files (default: ../shared or cache)")
    ap.add_argument("--download", action="store_true", help="fetch missing data files")
    ap.add_argument("--out", default="runs/base", help="run directory")
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
    ap.add_argument("--resume", action="store_true", help="continue from out/last.pt")
    ap.add_argument("--export-to", default=None, help="after training, write the model here")
    ap.add_argument("--average", type=int, default=1, help="average the last N epoch checkpoints")
    ap.add_argument("--length-penalty", type=float, default=None, help="beam-search alpha to ship (tune on val)")
    ap.add_argument("--no-progress", action="store_true")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", 1))
    rank = int(os.environ.get("RANK", 0))
    ddp = world > 1
    device = torch.device(args.device)
    if ddp:
        local = int(os.environ.get("LOCAL_RANK", 0))
        if device.type == "cuda":
            device = torch.device("cuda", local)
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if args.threads:
        torch.set_num_threads(args.threads)
    main_proc = rank == 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "log.jsonl"
    random.seed(args.seed)
    torch.manual_seed(args.seed)

    data_dir = Path(args.data_dir) if args.data_dir else default_data_dir()
    train_pairs = load_split(data_dir, "train", args.download)
    val_pairs = load_split(data_dir, "val", args.download)
    if args.train_limit:
        train_pairs = train_pairs[:args.train_limit]
    if args.val_limit:
        val_pairs = val_pairs[:args.val_limit]
    spm_path = Path(args.spm)
    if not spm_path.exists():
        if main_proc:
            spm_path.parent.mkdir(parents=True, exist_ok=True)
            train_tokenizer([s for p in train_pairs for s in p], spm_path, args.vocab_size)
        if ddp:
            dist.barrier()
    sp = load_tokenizer(spm_path)
    if main_proc and spm_path.resolve() != (out / "spm.model").resolve():
        shutil.copyfile(spm_path, out / "spm.model")  # the run keeps its own vocabulary
    vocab = sp.get_piece_size()
    train = encode_pairs(sp, train_pairs, args.max_tokens_per_sentence)
    val = encode_pairs(sp, val_pairs, args.max_tokens_per_sentence)
    probes = [l.strip() for l in Path(args.probes).read_text().splitlines() if l.strip()] \
        if Path(args.probes).exists() else []

    config = model_config(args, vocab)
    config["tokenizer"] = "spm.model"
    model = model_from_config(config).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lr_lambda=lambda step: rate(step, args.d_model, args.factor, args.warmup))
    criterion = LabelSmoothing(vocab, PAD, args.smoothing)
    loss_compute = SimpleLossCompute(model.generator, criterion)

    step, epoch, batch_pos = 0, 0, 0
    minutes_before = 0.0  # training time of earlier processes of this run (when resumed)
    if args.resume and (out / "last.pt").exists():
        ck = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
        model.load_state_dict(ck["model"])
        optimizer.load_state_dict(ck["optimizer"])
        scheduler.load_state_dict(ck["scheduler"])
        step, epoch, batch_pos = ck["step"], ck["epoch"], ck["batch_pos"]
        minutes_before = ck.get("minutes", 0.0)
        torch.set_rng_state(ck["rng"])
        if device.type == "cuda" and ck.get("cuda_rng") is not None:  # dropout masks on the GPU
            torch.cuda.set_rng_state(ck["cuda_rng"], device)
        if main_proc:
            truncate_log(log_path, step, epoch)
    elif main_proc:
        log_path.write_text("")

    def log(rec):
        if main_proc:
            with log_path.open("a") as f:
                f.write(json.dumps(rec) + "\n")

    if main_proc and step == 0:
        (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        token_b = token_batches(train, args.max_tokens, shuffle=True, seed=args.seed)
        mean_sents = len(train) / len(token_b)
        stats = {"token_based": padding_stats(train, token_b),
                 "sentence_count": padding_stats(train, sentence_batches(train, round(mean_sents), seed=args.seed)),
                 "max_tokens": args.max_tokens, "batch_size": round(mean_sents)}
        (out / "batching.json").write_text(json.dumps(stats, indent=2) + "\n")
        log({"type": "config", "args": vars(args), "model": config, "train_pairs": len(train),
             "val_pairs": len(val), "world_size": world, "device": str(device),
             "parameters": sum(p.numel() for p in model.parameters()), "batching": stats})

    raw = model
    if ddp:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[device] if device.type == "cuda" else None)
    use_bf16 = args.bf16
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if use_bf16 else nullcontext

    from .translate import Translator
    t0 = time.time()
    last_save = time.time()

    def save(path, extra=None):
        if main_proc:
            state = {"model": raw.state_dict(), "optimizer": optimizer.state_dict(),
                     "scheduler": scheduler.state_dict(), "step": step, "epoch": epoch,
                     "batch_pos": batch_pos, "rng": torch.get_rng_state(),
                     "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
                     "minutes": minutes_before + (time.time() - t0) / 60, **(extra or {})}
            tmp = path.with_suffix(".tmp")
            torch.save(state, tmp)
            os.replace(tmp, path)

    stop = False
    while epoch < args.epochs and not stop:
        batches = token_batches(train, args.max_tokens, shuffle=True, seed=args.seed + epoch)
        batches = batches[rank:len(batches) // world * world:world]  # each rank its share, equal counts
        model.train()
        bar = tqdm(total=len(batches), initial=batch_pos, desc=f"epoch {epoch}", disable=not main_proc or args.no_progress)
        acc_loss = acc_tokens = 0.0
        t_step = time.time()
        i = batch_pos
        while i < len(batches):
            n_acc = min(args.accum_iter, len(batches) - i)
            for j in range(n_acc):
                b = collate([train[k] for k in batches[i + j]]).to(device)
                sync = j == n_acc - 1
                with (model.no_sync() if ddp and not sync else nullcontext()):
                    with autocast():
                        out_ = model(b.src, b.tgt, b.src_mask, b.tgt_mask)
                        sloss, loss_node = loss_compute(out_, b.tgt_y, b.ntokens)
                    (loss_node / n_acc).backward()
                acc_loss += sloss.item()
                acc_tokens += b.ntokens
            lr = optimizer.param_groups[0]["lr"]
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            step += 1
            i += n_acc
            batch_pos = i
            bar.update(n_acc)
            stats = torch.tensor([acc_loss, acc_tokens], device=device)  # NCCL reduces device tensors only
            if ddp:
                dist.all_reduce(stats)
            now = time.time()
            log({"type": "step", "step": step, "epoch": epoch, "lr": lr, "loss": stats[0].item() / stats[1].item(),
                 "tokens": int(stats[1].item()), "seconds": round(now - t_step, 4)})
            bar.set_postfix(loss=f"{stats[0].item() / stats[1].item():.3f}", lr=f"{lr:.2e}")
            acc_loss = acc_tokens = 0.0
            t_step = now
            if args.max_steps and step >= args.max_steps or args.max_minutes and (now - t0) / 60 > args.max_minutes:
                stop = True
                break
            if main_proc and (now - last_save) / 60 > args.save_every_min:
                save(out / "last.pt")
                last_save = now
        bar.close()
        if stop and batch_pos < len(batches):
            save(out / "last.pt")
            break
        # end of epoch: evaluate, keep an epoch checkpoint for averaging
        epoch += 1
        batch_pos = 0
        if main_proc:
            rec = {"type": "epoch", "epoch": epoch, "step": step,
                   "minutes": round(minutes_before + (time.time() - t0) / 60, 2)}
            rec.update(evaluate_loss(raw, val, args.max_tokens, device, autocast))
            tr = Translator(raw, sp, config, device, half_rows=0)  # batched: float32 throughout
            if args.bleu_every and epoch % args.bleu_every == 0:
                rec["val_bleu"] = bleu(tr.translate([p[0] for p in val_pairs]), [p[1] for p in val_pairs])
            if probes:
                rec["probes"] = tr.translate(probes)
            log(rec)
            tqdm.write(json.dumps({k: v for k, v in rec.items() if k != "probes"}))
            torch.save({"model": raw.state_dict(), "epoch": epoch, "step": step}, out / f"epoch_{epoch:02d}.pt")
            save(out / "last.pt")
            last_save = time.time()
        if ddp:
            dist.barrier()
    if main_proc and args.export_to and epoch >= args.epochs:
        export(out, args.export_to, args.average, args.length_penalty)
    if ddp:
        dist.destroy_process_group()
    return raw


if __name__ == "__main__":
    main()
