"""A view's numbers as CSV and .npz (app/exports.py): each file read back with the csv module and numpy (without
pickle), its labels and values checked against the Inspection, the Comparison and the PatchGrid they came from;
names after the sentence; the page's buttons and the views that hide an earlier result's files."""
import csv
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from app import exports
from core.instrument import KINDS
from tests.conftest import needs_shipped

pytestmark = needs_shipped
SENTENCE = "Ein Mädchen in einem blauen Kleid tanzt auf einer Bühne, größer als 3 Männer."


@pytest.fixture(scope="module")
def tr():
    from core import Translator
    return Translator.load()


@pytest.fixture(scope="module")
def ins(tr):
    return tr.inspect(SENTENCE, method="beam", beam=3)


def rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def npz(path):
    with np.load(path, allow_pickle=False) as data:  # strings as unicode arrays: no pickle needed
        return {k: data[k] for k in data.files}


def test_a_slug_is_ascii_and_short():
    assert exports.slug("Über die Straße!") == "ueber-die-strasse"
    assert exports.slug("Ein Mann fährt über die Straße!") == "ein-mann-faehrt-ueber-die"  # a whole word within 32
    assert exports.slug("  ") == exports.slug("🙂🙂") == "sentence"
    assert exports.slug("x" * 100) == "x" * 32 and exports.slug("a/../../b c") == "a-b-c"
    assert exports.slug("Ein Mann fährt mit dem Fahrrad eine steile Straße hinunter.") == "ein-mann-faehrt-mit-dem-fahrrad"


def test_the_attention_files_hold_every_map_with_its_tokens(ins):
    csv_path, npz_path = exports.attention_files(ins)
    for path, suffix in ((csv_path, ".csv"), (npz_path, ".npz")):
        name = Path(path).name
        assert name.startswith("attention-ein-maedchen-in-einem-blauen-") and name.endswith(suffix)
        assert Path(path).parent == exports.export_file.__globals__["EXPORTS"]
    data = npz(npz_path)
    assert list(data["src_tokens"]) == ins.src_tokens and list(data["tgt_tokens"]) == ins.tgt_tokens
    assert list(data["out_tokens"]) == ins.out_tokens and str(data["source"]) == SENTENCE
    for kind in KINDS:
        assert data[kind].dtype == np.float32 and np.array_equal(data[kind], getattr(ins, kind).numpy())
    table = rows(csv_path)
    assert tuple(table[0]) == exports.ATTENTION_HEADER
    body = table[1:]
    assert len(body) == sum(getattr(ins, k).numel() for k in KINDS)
    seen = {k: torch.full_like(getattr(ins, k), float("nan")) for k in KINDS}
    for kind, layer, head, q, q_token, k, k_token, weight in body:
        layer, head, q, k = int(layer), int(head), int(q), int(k)
        queries, keys = exports.attention_labels(ins, kind)
        assert (q_token, k_token) == (queries[q], keys[k])
        seen[kind][layer, head, q, k] = float(weight)
    for kind in KINDS:  # every weight there once, read back exactly (9 digits give a float32 back)
        assert torch.equal(seen[kind], getattr(ins, kind))
    # the cross-attention's rows are the decoder's inputs, its columns the source pieces
    cross = [r for r in body if r[0] == "cross" and r[1] == "1" and r[2] == "3" and r[3] == "2"]
    assert [r[6] for r in cross] == ins.src_tokens and {r[4] for r in cross} == {ins.tgt_tokens[2]}


def test_the_probability_files_hold_each_token_and_its_candidates(ins):
    csv_path, npz_path = exports.probability_files(ins)
    assert Path(csv_path).name.startswith("probabilities-ein-maedchen-in-einem-blauen-")
    data = npz(npz_path)
    assert list(data["out_tokens"]) == ins.out_tokens and list(data["tgt_tokens"]) == ins.tgt_tokens
    assert data["token_probs"].tolist() == ins.token_probs
    assert data["topk_tokens"].tolist() == [[p for p, _ in step] for step in ins.topk]
    assert data["topk_probs"].tolist() == [[q for _, q in step] for step in ins.topk]
    assert str(data["translation"]) == ins.translation
    table = rows(csv_path)
    k = len(ins.topk[0])
    assert table[0][:4] == ["position", "input_token", "output_token", "probability"] and len(table[0]) == 4 + 2 * k
    assert len(table) == 1 + len(ins.out_tokens)
    for t, row in enumerate(table[1:]):
        assert row[:3] == [str(t), ins.tgt_tokens[t], ins.out_tokens[t]]
        assert float(row[3]) == pytest.approx(ins.token_probs[t], rel=1e-8)
        assert row[4::2] == [p for p, _ in ins.topk[t]]
        assert [float(v) for v in row[5::2]] == pytest.approx([q for _, q in ins.topk[t]], rel=1e-8)


def test_pandas_reads_the_csv_with_its_labels(ins):
    pd = pytest.importorskip("pandas")
    frame = pd.read_csv(exports.attention_files(ins)[0], keep_default_na=False)
    one = frame[(frame["kind"] == "encoder") & (frame["layer"] == 0) & (frame["head"] == 5)]
    grid = one.pivot(index="query", columns="key", values="weight").to_numpy()
    assert np.allclose(grid, ins.encoder[0, 5].numpy(), atol=1e-8)
    assert list(one[one["query"] == 0]["key_token"]) == ins.src_tokens


def test_a_same_export_is_written_once(ins):
    first = exports.attention_files(ins)
    assert exports.attention_files(ins) == first


@pytest.fixture(scope="module")
def comparison(tr):
    from core.analysis.compare import compare
    return compare(tr, tr, SENTENCE, heads_off_b=[("cross", 1, 2), ("encoder", 0, 5)], names=("shipped", "heads off"))


def test_the_ranking_files_hold_every_head_in_order(comparison):
    csv_path, npz_path = exports.ranking_files(comparison)
    assert Path(csv_path).name.startswith("ranking-ein-maedchen-in-einem-blauen-")
    data = npz(npz_path)
    assert list(data["models"]) == ["shipped", "heads off"]
    got = list(zip(data["kind"].tolist(), data["layer"].tolist(), data["head"].tolist(), data["mean_tv"].tolist()))
    assert got == [tuple(r) for r in comparison.ranking]
    table = rows(csv_path)
    assert tuple(table[0]) == exports.RANKING_HEADER and len(table) == 1 + len(comparison.ranking)
    for r, (row, (kind, layer, head, value)) in enumerate(zip(table[1:], comparison.ranking), 1):
        assert row[:4] == [str(r), kind, str(layer), str(head)]
        assert float(row[4]) == pytest.approx(value, rel=1e-8)


@pytest.fixture(scope="module")
def grid(tr):
    from core.analysis.patching import patch_grid
    return patch_grid(tr, "Ein Mann fährt mit dem Fahrrad.", "Ein Junge fährt mit dem Fahrrad.")


def test_the_patching_files_hold_the_grid_with_its_tokens(grid):
    csv_path, npz_path = exports.grid_files(grid)
    assert Path(csv_path).name.startswith("patching-ein-mann-faehrt-mit-dem-fahrrad-")
    data = npz(npz_path)
    for k in ("logp_patched", "gain", "recovered", "gain_total", "recovered_total", "logp_original", "logp_edited"):
        assert np.array_equal(data[k], getattr(grid, k).numpy(), equal_nan=True), k
    assert list(data["src_tokens"]) == grid.src_tokens and list(data["edited_tokens"]) == grid.edited_tokens
    assert list(data["out_tokens"]) == grid.out_tokens and data["changed"].tolist() == grid.changed
    table = rows(csv_path)
    assert tuple(table[0]) == exports.GRID_HEADER
    L1, S, T = grid.logp_patched.shape
    assert len(table) == 1 + L1 * S * T
    nan_seen = 0
    for row in table[1:]:
        layer, j, t = int(row[0]), int(row[1]), int(row[5])
        assert row[2:5] == [grid.src_tokens[j], grid.edited_tokens[j], str(int(j in grid.changed))]
        assert row[6] == grid.out_tokens[t]
        # 9 digits give each float32 back exactly
        assert np.float32(row[9]) == grid.logp_patched[layer, j, t].numpy()
        assert np.float32(row[10]) == grid.gain[layer, j, t].numpy()
        expected = grid.recovered[layer, j, t].item()
        if math.isnan(expected):
            assert row[11] == ""
            nan_seen += 1
        else:
            assert np.float32(row[11]) == grid.recovered[layer, j, t].numpy()
    assert nan_seen == int(torch.isnan(grid.recovered).sum())


def test_the_buttons_write_the_files_and_a_new_result_hides_them(ins, comparison, grid):
    from app.tabs import attention, compare, translate
    update = translate.numbers_files(ins)
    assert update["visible"] is True and [Path(p).suffix for p in update["value"]] == [".csv", ".npz"] * 2
    assert translate.numbers_files(None)["visible"] is False
    assert attention.numbers_files(ins)["value"] == update["value"][:2]
    pair = compare.Pair(comparison, grid)
    assert compare.ranking_numbers(pair)["value"] == exports.ranking_files(comparison)
    assert compare.grid_numbers(pair)["value"] == exports.grid_files(grid)
    assert compare.grid_numbers(compare.Pair(comparison, None))["visible"] is False
    # a new result (a translation, a comparison, a grid) draws its tab's file list hidden
    cleared = [(v, pair if views is compare.VIEWS else ins) for views in (translate.VIEWS, attention.VIEWS, compare.VIEWS)
               for v in views if v.outputs in (("numbers",), ("ranking_files",), ("grid_files",))]
    assert len(cleared) == 4
    assert all(v.draw(result)["visible"] is False and v.blank[v.outputs[0]]["visible"] is False for v, result in cleared)
