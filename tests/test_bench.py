"""The benchmarks measure what they say: every model on the same batches, the right references."""
import math

import pytest
import torch

from core.model import make_model


def test_training_benchmark_runs_every_model_on_the_same_batches(tiny_data, tiny_spm):
    from core.bench import bench_training, with_stock_dropout
    from core.data import encode_pairs, load_split
    from core.model import Dropout

    # with_stock_dropout swaps the module only: same function in eval mode, nn.Dropout everywhere
    model = make_model(30, 30, N=1, d_model=16, d_ff=32, h=2).eval()
    src = torch.randint(4, 30, (2, 5))
    mask = torch.ones(2, 1, 5, dtype=torch.bool)
    before = model(src, src, mask, mask)
    stock = with_stock_dropout(model)
    assert not any(isinstance(m, Dropout) for m in stock.modules())
    assert sum(type(m) is torch.nn.Dropout for m in stock.modules()) == 2 + 4 + 6
    torch.testing.assert_close(stock(src, src, mask, mask), before, rtol=0, atol=0)

    sp, _ = tiny_spm
    examples = encode_pairs(sp, load_split(tiny_data, "train"))
    config = {"src_vocab": sp.get_piece_size(), "N": 1, "d_model": 16, "d_ff": 32, "h": 2}
    r = bench_training(config, examples, steps=3, max_tokens=300, bf16=False)
    for name in ("ours", "torch", "stock_dropout"):
        assert math.isfinite(r[f"train_tokens_per_s_{name}_fp32"]) and r[f"train_tokens_per_s_{name}_fp32"] > 0
    assert r["train_speed_ratio_fp32"] == pytest.approx(r["train_tokens_per_s_ours_fp32"] / r["train_tokens_per_s_torch_fp32"])
    assert r["train_speed_ratio_stock_dropout_fp32"] == pytest.approx(
        r["train_tokens_per_s_stock_dropout_fp32"] / r["train_tokens_per_s_torch_fp32"])


def test_cache_benchmark_takes_the_faster_uncached_loop_as_its_reference(tiny_spm):
    from core.bench import bench_cache
    from core.translate import Translator

    sp, _ = tiny_spm
    V = sp.get_piece_size()
    tr = Translator(make_model(V, V, N=1, d_model=16, d_ff=32, h=2), sp, {"max_src_tokens": 32})
    r = bench_cache(tr, ["ein hund", "zwei katzen spielen im garten"], repeat=1)
    assert r["sentences_timed"] == 2 and r["half_decoder"]
    assert r["same_output_fp32"] == 2  # every loop gave the same output in float32
    for tag in ("", "_cold"):
        ref = r[f"greedy_uncached{tag}_ms"]
        assert ref == min(r[f"greedy_uncached_fp32{tag}_ms"], r[f"greedy_uncached_half{tag}_ms"]) > 0
        assert r[f"cache_speedup{tag}"] == pytest.approx(ref / r[f"greedy_cached_half{tag}_ms"])
        assert r[f"cache_speedup_modules{tag}"] == pytest.approx(ref / r[f"greedy_modules_half{tag}_ms"])
