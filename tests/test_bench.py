"""The benchmarks measure what they say: every model on the same batches, the right references."""
import json
import math

import pytest
import torch

from core.bench import (
    ROWS,
    bench_cache,
    bench_training,
    run_benchmarks,
    table_lines,
    table_rows,
    with_stock_dropout,
)
from core.data import encode_pairs, load_split
from core.model import Dropout, make_model
from core.translate import Translator
from core.words import said, say, table
from tests.conftest import ASSETS, ROOT


def test_training_benchmark_runs_every_model_on_the_same_batches(tiny_data, tiny_spm):

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
    assert r["train_speed_ratio_fp32"] == pytest.approx(
        r["train_tokens_per_s_ours_fp32"] / r["train_tokens_per_s_torch_fp32"])
    assert r["train_speed_ratio_stock_dropout_fp32"] == pytest.approx(
        r["train_tokens_per_s_stock_dropout_fp32"] / r["train_tokens_per_s_torch_fp32"])


def test_cache_benchmark_takes_the_faster_uncached_loop_as_its_reference(tiny_spm):

    sp, _ = tiny_spm
    V = sp.get_piece_size()
    tr = Translator(make_model(V, V, N=1, d_model=16, d_ff=32, h=2), sp, {"max_src_tokens": 32})
    r = bench_cache(tr, ["ein hund", "zwei katzen spielen im garten"], repeat=1)
    assert r["sentences_timed"] == 2 and r["half_decoder"]
    assert r["same_output_fp32"] == 2  # both loops gave the same output in float32
    for tag in ("", "_cold"):
        ref = r[f"greedy_uncached{tag}_ms"]
        assert ref == min(r[f"greedy_uncached_fp32{tag}_ms"], r[f"greedy_uncached_half{tag}_ms"]) > 0
        assert r[f"cache_speedup{tag}"] == pytest.approx(ref / r[f"greedy_cached_half{tag}_ms"])
        assert r[f"cache_speedup_fp32{tag}"] == pytest.approx(
            r[f"greedy_uncached_fp32{tag}_ms"] / r[f"greedy_cached_fp32{tag}_ms"])


def test_every_declared_row_is_measured_and_tables_leave_out_what_a_file_lacks(tiny_data, tiny_spm):
    """The benchmarks write every figure ROWS names (a renamed key fails here), and table_rows shows each row."""

    sp, _ = tiny_spm
    V = sp.get_piece_size()
    config = {"src_vocab": V, "N": 1, "d_model": 16, "d_ff": 32, "h": 2, "max_src_tokens": 32}
    tr = Translator(make_model(V, V, N=1, d_model=16, d_ff=32, h=2), sp, config)
    results = run_benchmarks(tr, load_split(tiny_data, "test_2016_flickr"), load_split(tiny_data, "train"),
                             sentences=2, repeat=1, steps=2, corpus=6, max_tokens=300, bf16=True)
    json.dumps(results)  # the JSON line
    for row in ROWS:
        for key in (row.ours, row.reference, row.ratio):
            assert key is None or (isinstance(results.get(key), (int, float)) and math.isfinite(results[key])), key
    table = table_rows(results)
    assert [r[0] for r in table] == [row.ours for row in ROWS] and len({row.ours for row in ROWS}) == len(ROWS)
    first = ROWS[0]
    assert table[0] == (first.ours, f"{results[first.ours]:.{first.decimals}f}",
                        f"{results[first.reference]:.{first.decimals}f}", f"{results[first.ratio]:.2f}×")
    assert all(r[3] == "" for r, row in zip(table, ROWS) if row.ratio is None)
    # an older or damaged file: rows with a missing or non-numeric figure are left out, nothing raises
    damaged = dict(results, **{first.ratio: "n/a"})
    del damaged[ROWS[-1].reference]
    assert [r[0] for r in table_rows(damaged)] == [row.ours for row in ROWS[1:-1]]
    assert table_rows({"threads": 2}) == []


def test_bf16_rows_are_left_out_with_a_reason_where_the_cpu_emulates_bf16(tiny_data, tiny_spm, monkeypatch):
    import core.bench as bench
    sp, _ = tiny_spm
    V = sp.get_piece_size()
    config = {"src_vocab": V, "N": 1, "d_model": 16, "d_ff": 32, "h": 2, "max_src_tokens": 32}
    tr = Translator(make_model(V, V, N=1, d_model=16, d_ff=32, h=2), sp, config)
    args = (tr, load_split(tiny_data, "test_2016_flickr"), load_split(tiny_data, "train"))
    sizes = dict(sentences=2, repeat=1, steps=1, corpus=2, max_tokens=300)
    monkeypatch.setattr(bench, "bf16_matmul_slowdown", lambda *a: 40.0)
    results = bench.run_benchmarks(*args, **sizes)
    assert "train_tokens_per_s_ours_bf16" not in results and results["bf16_training_skipped"] is True
    assert "train_tokens_per_s_ours_fp32" in results and results["bf16_matmul_slowdown"] == 40.0
    assert not any("bf16" in r[0] for r in table_rows(results))
    # the command line says why, in the words of the English table, from the number
    assert table_lines(results)[0] == "bf16 training rows left out: " + say(said("bench.bf16-slow", x=40.0)) == (
        "bf16 training rows left out: bfloat16 matrix products run 40x slower than float32 on this CPU")
    assert table_lines(results, "zh-CN")[0] == "未列出 bf16 训练的几行，原因：在这台 CPU 上，bfloat16 矩阵乘法比 float32 慢 40 倍"
    monkeypatch.setattr(bench, "bf16_matmul_slowdown", lambda *a: 1.5)
    results = bench.run_benchmarks(*args, **sizes)
    assert "train_tokens_per_s_ours_bf16" in results and "bf16_training_skipped" not in results


def test_bf16_slowdown_is_a_ratio_of_measured_times(monkeypatch):
    """The median time of the bfloat16 product over the median time of the float32 one: the timer is replaced by
    one that records what it times and answers with set times."""
    import core.bench as bench
    timed, times = [], iter([[0.3, 0.1, 0.2], [4.0, 1.0, 9.0]])  # seconds: float32's runs, then bfloat16's

    def time_call(fn, repeat):
        timed.append((fn(), repeat))
        return next(times)

    monkeypatch.setattr(bench, "time_call", time_call)
    assert bench.bf16_matmul_slowdown(64, 16, 32, repeat=3) == pytest.approx(4.0 / 0.2)
    (fp32, n32), (bf16, n16) = timed
    assert (fp32.dtype, bf16.dtype, n32, n16) == (torch.float32, torch.bfloat16, 3, 3)
    assert fp32.shape == bf16.shape == (64, 32)  # a (rows x d_model) @ (d_model x d_ff) product
    # the same product in both precisions, bfloat16 rounding its inputs to 8 significant bits (entries about ±4)
    torch.testing.assert_close(bf16.float(), fp32, atol=0.2, rtol=0.01)


def test_the_command_lines_table_is_written_from_the_english_table():
    """python -m core.bench prints each row in the words of locale/en.json (bench.row.*, bench.ref.*), the same
    words the Engineering tab shows in English; docs/performance.md's table is that table for the shipped figures."""
    shipped = json.loads((ASSETS / "bench.json").read_text(encoding="utf-8"))
    shipped.pop("bf16_training_skipped", None)  # an older file: its reason in English (the tab shows it as it is)
    lines = table_lines(shipped)
    assert lines[0].split() == ["measure", "ours", "reference", "reference", "is", "ratio"]
    rows = table_rows(shipped)
    assert len(lines) == 1 + len(rows) >= 10
    en = table("en")
    for line, (key, ours, ref, ratio) in zip(lines[1:], rows):
        assert line.split() == [*en[f"bench.row.{key}"].split(), ours, ref, *en[f"bench.ref.{key}"].split(),
                                *[ratio] * bool(ratio)]
    doc = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    for key, ours, ref, ratio in rows:
        assert f"| {en[f'bench.row.{key}']} | {ours} | {ref} | {en[f'bench.ref.{key}']} | {ratio} |" in doc, key
    assert table_lines(shipped, "zh-CN")[1].startswith(table("zh-CN")["bench.row.greedy_cached_half_ms"])
