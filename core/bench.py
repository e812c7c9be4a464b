"""Benchmarks, each a ratio against a reference measured side by side in the same process.

    python -m core.bench [--quick] [--model DIR]

1. per-sentence greedy translation: the incremental key/value cache vs the Annotated Transformer's
   uncached loop (re-decoding the whole prefix each step), same weights, same sentences; the cached loop
   runs as `Translator` runs it (float16 decoder on a CPU, `IncrementalDecoder`), the reference with
   whichever of float32 and the float16 decoder is faster for it; further rows: cold caches, both loops
   in float32, and the shorter and longer half of the outputs;
2. training throughput (target tokens/s): this model vs torch.nn.Transformer of the same size on the
   same batches, same loss and optimizer, and this model with nn.Dropout in place of its own; dropout
   alone (forward and backward on one feed-forward activation) against nn.Dropout;
3. translating test_2016_flickr in batches: sentences/s with greedy and beam search;
4. a translation with every attention map captured (what the app shows) vs the plain translation;
5. the attributions of one output token (gradient x input and occlusion, core/analysis/attribution.py) of a sentence of
   about 20 pieces vs a translation of that sentence with every attention map.
Prints a table of the rows declared in ROWS, then one JSON line with every figure.
"""
import argparse
import json
import math
import statistics
import time
import warnings
from typing import NamedTuple

import torch
import torch.nn as nn

from .analysis.attribution import attribute
from .data import PAD, collate, default_data_dir, encode_pairs, load_split, token_batches
from .decode import greedy_decode, greedy_decode_uncached
from .model import Dropout, PositionalEncoding, make_model
from .train import LabelSmoothing, SimpleLossCompute, seeded
from .translate import Translator
from .words import said, say


class Row(NamedTuple):
    """A measured row: figures of the JSON line (assets/bench.json), named by their keys. Its words are in the
    locale tables: what is measured, with its unit, at bench.row.<ours>; what the reference is at bench.ref.<ours>."""
    ours: str  # our figure
    reference: str  # the reference's figure, from the same run
    ratio: str | None  # their ratio; None: the row shows none
    decimals: int  # of both figures


# Every row the CLI's table and the app's show; tests/test_bench.py checks that the benchmarks write each key.
ROWS = (
    Row("greedy_cached_half_ms", "greedy_uncached_ms", "cache_speedup", 1),
    Row("greedy_cached_half_cold_ms", "greedy_uncached_cold_ms", "cache_speedup_cold", 1),
    Row("greedy_cached_fp32_ms", "greedy_uncached_fp32_ms", "cache_speedup_fp32", 1),
    Row("greedy_cached_half_short_ms", "greedy_uncached_half_short_ms", "cache_speedup_half_short", 1),
    Row("greedy_cached_half_long_ms", "greedy_uncached_half_long_ms", "cache_speedup_half_long", 1),
    Row("train_tokens_per_s_ours_fp32", "train_tokens_per_s_torch_fp32", "train_speed_ratio_fp32", 0),
    Row("train_tokens_per_s_stock_dropout_fp32", "train_tokens_per_s_torch_fp32",
        "train_speed_ratio_stock_dropout_fp32", 0),
    Row("train_tokens_per_s_ours_bf16", "train_tokens_per_s_torch_bf16", "train_speed_ratio_bf16", 0),
    Row("train_tokens_per_s_stock_dropout_bf16", "train_tokens_per_s_torch_bf16",
        "train_speed_ratio_stock_dropout_bf16", 0),
    Row("dropout_ours_float32_ms", "dropout_stock_float32_ms", "dropout_speedup_float32", 1),
    Row("dropout_ours_bfloat16_ms", "dropout_stock_bfloat16_ms", "dropout_speedup_bfloat16", 1),
    Row("beam4_sentences_per_s", "greedy_sentences_per_s", None, 1),
    Row("inspect_ms", "translate_ms", "capture_overhead", 1),
    Row("attribution_ms", "attribution_inspect_ms", "attribution_vs_inspect", 1),
)


def table_rows(results):
    """The ROWS whose figures `results` holds as numbers (an older or damaged file lacks some), as tuples of
    strings (row, ours, reference, ratio): the row's key (its `ours`: its words are bench.row.<row> and
    bench.ref.<row>), figures with the row's decimals, the ratio as "3.16×", or "" where the row shows none."""
    def number(key):
        return isinstance(results.get(key), (int, float))

    return [(r.ours, f"{results[r.ours]:.{r.decimals}f}", f"{results[r.reference]:.{r.decimals}f}",
             "" if r.ratio is None else f"{results[r.ratio]:.2f}×")
            for r in ROWS if number(r.ours) and number(r.reference) and (r.ratio is None or number(r.ratio))]


def table_lines(results, lang="en"):
    """The benchmark's table as the command line prints it, its words in `lang` from the locale tables: a line
    saying why the bf16 rows are missing where they are, the columns, then a line per row `results` holds."""
    def words(key, **values):
        return say(said(key, **values), lang)

    rows = [(words(f"bench.row.{key}"), ours, ref, words(f"bench.ref.{key}"), ratio)
            for key, ours, ref, ratio in table_rows(results)]
    head = tuple(words(f"bench.column.{c}") for c in ("measure", "ours", "reference", "reference-is", "ratio"))
    width = max(len(r[0]) for r in [head, *rows])
    lines = [words("bench.left-out", reason=words("bench.bf16-slow", x=results["bf16_matmul_slowdown"]))] \
        if results.get("bf16_training_skipped") else []
    return lines + [f"{label:{width}s} {ours:>10s} {ref:>10s}  {ref_is:18s} {ratio:>7s}"
                    for label, ours, ref, ref_is, ratio in [head, *rows]]


class TorchTransformer(nn.Module):
    """The reference: torch.nn.Transformer with the same embeddings, sizes, norm placement and tying."""

    def __init__(self, vocab, N, d_model, d_ff, h, dropout):
        super().__init__()
        self.d_model = d_model
        self.embed = nn.Embedding(vocab, d_model)
        self.pe = PositionalEncoding(d_model, dropout, 512)
        with warnings.catch_warnings():  # the nested-tensor fast path is for inference; training never takes it
            warnings.filterwarnings("ignore", message="enable_nested_tensor is True")
            self.core = nn.Transformer(d_model, h, N, N, d_ff, dropout, batch_first=True, norm_first=True)
        self.proj = nn.Linear(d_model, vocab)
        self.proj.weight = self.embed.weight

    def forward(self, src, tgt):
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), dtype=torch.bool)
        x = self.core(self.pe(self.embed(src) * math.sqrt(self.d_model)),
                      self.pe(self.embed(tgt) * math.sqrt(self.d_model)),
                      tgt_mask=causal, src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt == PAD,
                      memory_key_padding_mask=src == PAD, tgt_is_causal=True)
        return x

    def generator(self, x):
        return torch.log_softmax(self.proj(x), dim=-1, dtype=torch.float32)


def time_call(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def bench_cache(tr, sentences, repeat):
    """Per-sentence greedy decoding, median ms: the cached loop with the model the Translator decodes one
    sentence with (float16 decoder on a CPU) and in plain float32, against the uncached loop with either
    model; the headline ratio is against the faster uncached one. Warm: each variant's `repeat` calls back
    to back, weights in the CPU caches. Cold: single calls of all variants interleaved, each starting
    after the others have run."""
    models = {"fp32": tr.model, "half": tr.decoding_model(1)}
    loops = {"cached": greedy_decode, "uncached": greedy_decode_uncached}
    warm = {f"{loop}_{name}": [] for loop in loops for name in models}
    cold = {key: [] for key in warm}
    same = {name: 0 for name in models}  # sentences where both loops give the same output
    per_sentence = []  # (output pieces, warm cached s, warm uncached s), both with the float16 decoder
    for text in sentences:
        src_ids, _ = tr.encode_source(text)
        src = torch.tensor([src_ids])
        mask = (src != PAD).unsqueeze(-2)
        n = tr.default_max_len(src.size(1))
        for name, model in models.items():
            outs = [fn(model, src, mask, n) for fn in loops.values()]
            same[name] += all(o == outs[0] for o in outs)
            if name == "half":
                pieces = len(outs[0][0])  # output length of the cached loop with the float16 decoder
        for _ in range(repeat):
            for loop, fn in loops.items():
                for name, model in models.items():
                    cold[f"{loop}_{name}"] += time_call(lambda: fn(model, src, mask, n), 1)
        for loop, fn in loops.items():
            for name, model in models.items():
                warm[f"{loop}_{name}"] += time_call(lambda: fn(model, src, mask, n), repeat)
        per_sentence.append((pieces, statistics.median(warm["cached_half"][-repeat:]),
                             statistics.median(warm["uncached_half"][-repeat:])))
    out = {"sentences_timed": len(sentences), "half_decoder": models["half"] is not models["fp32"],
           "same_output_fp32": same["fp32"], "same_output_half": same["half"]}
    # the cache's gain by output length: the shorter and the longer half of the sentences
    per_sentence.sort()
    mid = len(per_sentence) // 2
    for tag, part in (("short", per_sentence[:mid]), ("long", per_sentence[mid:])):
        out[f"output_pieces_{tag}"] = statistics.mean(p[0] for p in part)
        out[f"greedy_cached_half_{tag}_ms"] = statistics.mean(p[1] for p in part) * 1e3
        out[f"greedy_uncached_half_{tag}_ms"] = statistics.mean(p[2] for p in part) * 1e3
        out[f"cache_speedup_half_{tag}"] = sum(p[2] for p in part) / sum(p[1] for p in part)
    for tag, times in (("", warm), ("_cold", cold)):
        ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        out.update({f"greedy_{k}{tag}_ms": v for k, v in ms.items()})
        ref = min(ms["uncached_fp32"], ms["uncached_half"])  # the reference: the faster uncached loop
        out[f"greedy_uncached{tag}_ms"] = ref
        out[f"cache_speedup{tag}"] = ref / ms["cached_half"]
        out[f"cache_speedup_fp32{tag}"] = ms["uncached_fp32"] / ms["cached_fp32"]
    return out


def with_stock_dropout(model):
    """The same model with nn.Dropout in place of core.model.Dropout (to measure what the latter gains)."""
    for module in list(model.modules()):
        for name, child in list(module.named_children()):
            if isinstance(child, Dropout):
                setattr(module, name, nn.Dropout(child.p).train(child.training))
    return model


def bench_training(config, examples, steps, max_tokens, bf16):
    """Target tokens/s of ours vs nn.Transformer (and vs ours with nn.Dropout), every model on every batch;
    the order in which they run rotates from batch to batch so that none always follows the same one."""
    V, N, d, ff, h = config["src_vocab"], config["N"], config["d_model"], config["d_ff"], config["h"]
    with seeded(0):  # the weights of a generator of their own: the process's global one is left alone
        models = {"ours": make_model(V, V, N, d, ff, h, 0.1),
                  "stock": with_stock_dropout(make_model(V, V, N, d, ff, h, 0.1)),
                  "torch": TorchTransformer(V, N, d, ff, h, 0.1)}
    runners = {}
    for name, model in models.items():
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
        runners[name] = (model, opt, SimpleLossCompute(model.generator, LabelSmoothing(V, PAD, 0.1)))
    batches = token_batches(examples, max_tokens, seed=0)[:steps + 2]
    seconds = {name: 0.0 for name in runners}
    tokens = 0
    names = list(runners)
    for i, idx in enumerate(batches):
        b = collate([examples[j] for j in idx])
        for name in names[i % len(names):] + names[:i % len(names)]:
            model, opt, loss_compute = runners[name]
            model.train()
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                out = model(b.src, b.tgt) if name == "torch" else model(b.src, b.tgt, b.src_mask, b.tgt_mask)
                _, loss = loss_compute(out, b.tgt_y, b.ntokens)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            if i >= 2:  # the first two batches warm up
                seconds[name] += time.perf_counter() - t0
        if i >= 2:
            tokens += b.ntokens
    tps = {name: tokens / s for name, s in seconds.items()}
    tag = "bf16" if bf16 else "fp32"
    return {f"train_tokens_per_s_ours_{tag}": tps["ours"], f"train_tokens_per_s_torch_{tag}": tps["torch"],
            f"train_tokens_per_s_stock_dropout_{tag}": tps["stock"],
            f"train_speed_ratio_{tag}": tps["ours"] / tps["torch"],
            f"train_speed_ratio_stock_dropout_{tag}": tps["stock"] / tps["torch"]}


def bench_dropout(shape, dtype, repeat):
    """Forward and backward of core.model.Dropout vs nn.Dropout on one activation tensor, median ms."""
    x = torch.randn(shape).to(dtype).requires_grad_()
    grad = torch.ones(shape, dtype=dtype)
    times = {"ours": [], "stock": []}
    for _ in range(repeat):
        for name, drop in (("ours", Dropout(0.1)), ("stock", nn.Dropout(0.1))):
            times[name] += time_call(lambda: torch.autograd.grad(drop(x), x, grad), 1)
    tag = str(dtype).removeprefix("torch.")
    ours, stock = (statistics.median(times[k]) * 1e3 for k in ("ours", "stock"))
    return {f"dropout_ours_{tag}_ms": ours, f"dropout_stock_{tag}_ms": stock, f"dropout_speedup_{tag}": stock / ours}


def bench_corpus(tr, sentences, beam):
    t0 = time.perf_counter()
    tr.translate(sentences, beam=beam, batch_size=64)
    return len(sentences) / (time.perf_counter() - t0)


def bench_capture(tr, text, repeat):
    plain = time_call(lambda: tr.translate([text]), repeat)
    full = time_call(lambda: tr.inspect(text), repeat)
    return {"translate_ms": statistics.median(plain) * 1e3, "inspect_ms": statistics.median(full) * 1e3,
            "capture_overhead": statistics.median(full) / statistics.median(plain)}


def bench_attribution(tr, texts, repeat, pieces=20):
    """The attributions of the middle output token of the text whose source is nearest `pieces` pieces long,
    beside one translation of it with every attention map (what the app does before it can attribute)."""
    text = min(texts, key=lambda t: abs(len(tr.encode_source(t)[0]) - pieces))
    ins = tr.inspect(text)
    piece = tr.tokenizer.piece_to_id
    src, tgt = [piece(p) for p in ins.src_tokens], [piece(p) for p in ins.tgt_tokens]
    position = len(ins.out_tokens) // 2
    ours = statistics.median(time_call(lambda: attribute(tr.model, src, tgt, position), repeat))
    ref = statistics.median(time_call(lambda: tr.inspect(text), repeat))
    return {"attribution_pieces": len(src), "attribution_ms": ours * 1e3, "attribution_inspect_ms": ref * 1e3,
            "attribution_vs_inspect": ours / ref}


def bf16_matmul_slowdown(rows, d_model, d_ff, repeat=3):
    """How many times longer one (rows x d_model) @ (d_model x d_ff) product takes in bfloat16 than in
    float32 (median of `repeat`): CPUs without native bfloat16 kernels (no AVX-512 BF16 or AMX) emulate it,
    tens of times slower."""
    a, b = torch.randn(rows, d_model), torch.randn(d_model, d_ff)
    a16, b16 = a.bfloat16(), b.bfloat16()
    a16 @ b16  # warm-up
    fp32 = statistics.median(time_call(lambda: a @ b, repeat))
    bf16 = statistics.median(time_call(lambda: a16 @ b16, repeat))
    return bf16 / fp32


def run_benchmarks(tr, test, train, sentences, repeat, steps, corpus, max_tokens=3072, bf16=None):
    """Every figure: `sentences` test sentences timed one at a time, `steps` training batches of up to
    `max_tokens` tokens, `corpus` test sentences (0: all) translated in batches. The bf16 training rows
    run when `bf16` is True, or when None and this CPU multiplies bf16 matrices at most 3x slower than
    float32 (where it emulates them, 60 batches would take hours; the figures then say why they are missing)."""
    results = {"threads": torch.get_num_threads(), "model": {k: tr.config[k] for k in ("N", "d_model", "d_ff", "h")}}
    results.update(bench_cache(tr, [p[0] for p in test[:sentences]], repeat))
    examples = encode_pairs(tr.tokenizer, train[:250 * (steps + 2)], tr.max_src_tokens)  # enough batches
    results["bf16_matmul_slowdown"] = bf16_matmul_slowdown(max_tokens, tr.config["d_model"], tr.config["d_ff"])
    if bf16 is None:
        bf16 = results["bf16_matmul_slowdown"] <= 3
    if not bf16:  # why: bf16_matmul_slowdown (its words: bench.bf16-slow)
        results["bf16_training_skipped"] = True
    for autocast in (False, True) if bf16 else (False,):
        results.update(bench_training(tr.config, examples, steps, max_tokens, autocast))
    for dtype in (torch.float32, torch.bfloat16):  # one feed-forward activation of a full batch
        results.update(bench_dropout((max_tokens, tr.config["d_ff"]), dtype, repeat * 4))
    texts = [p[0] for p in (test[:corpus] if corpus else test)]
    results["corpus_sentences"] = len(texts)
    results["greedy_sentences_per_s"] = bench_corpus(tr, texts, 1)
    results["beam4_sentences_per_s"] = bench_corpus(tr, texts, 4)
    results.update(bench_capture(tr, test[0][0], repeat * 4))
    results.update(bench_attribution(tr, [p[0] for p in test[:200]], repeat * 4))
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=None, help="model directory (default: assets/)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--quick", action="store_true", help="fewer sentences and steps")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--save", default=None, help="also write the JSON figures to this file")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    tr = Translator.load(args.model)
    data_dir = args.data_dir or default_data_dir()
    try:
        test = load_split(data_dir, "test_2016_flickr")
        train = load_split(data_dir, "train")
    except FileNotFoundError:
        raise SystemExit(f"benchmarks need Multi30k in {data_dir} (see --data-dir)")
    sizes = dict(sentences=10, repeat=3, steps=8, corpus=200) if args.quick else \
        dict(sentences=40, repeat=5, steps=60, corpus=0)
    results = run_benchmarks(tr, test, train, **sizes)
    print("\n".join(table_lines(results)))
    line = json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in results.items()})
    print(line)
    if args.save:
        with open(args.save, "w") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
