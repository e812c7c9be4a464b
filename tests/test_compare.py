"""core.analysis.compare (two models on one sentence) and core.analysis.patching (the encoder patching grid): a model
against itself differs by exactly 0, a head switched off changes exactly the maps downstream of it, the ranking is
the mean total variation of the rows, different tokenizers are compared over words; patching a run with its own
states changes nothing, restoring every position gives the original run back, the batched grid equals a plain loop
of single patched runs."""
import copy
import json
import math
import threading

import pytest
import torch

from core.analysis.compare import CannotCompare, Comparison, compare, membership, pool, unit_keys, unit_order
from core.analysis.patching import PatchGrid, encoder_states, patch_grid, patch_inputs, patched_logp
from core.data import load_split, train_tokenizer
from core.model import make_model, subsequent_mask
from core.translate import Translator
from core.words import say
from tests.conftest import needs_shipped

SENTENCE = "Ein Mann fährt mit seinem roten Fahrrad schnell die Straße entlang."  # 15 pieces for the shipped model
EDITED = "Ein Hund fährt mit seinem roten Fahrrad schnell die Straße entlang."    # one word, one piece, changed
TINY_SENTENCE = "Der kleine Hund läuft im Park."


@pytest.fixture(scope="module")
def shipped():
    return Translator.load()


@pytest.fixture(scope="module")
def other_spm(tiny_data, tmp_path_factory):
    """A second SentencePiece model of the same data with another vocabulary: it cuts words into other pieces."""
    pairs = load_split(tiny_data, "train")
    return train_tokenizer([s for p in pairs for s in p], tmp_path_factory.mktemp("spm2") / "spm.model",
                           vocab_size=48)


def tiny_translator(sp, seed, N=2, h=2, **config):
    torch.manual_seed(seed)
    V = sp.get_piece_size()
    return Translator(make_model(V, V, N=N, d_model=16, d_ff=32, h=h, dropout=0.0), sp,
                      {"max_src_tokens": 32, **config}, half_rows=0)


def tv(a, b):
    """Mean over rows of 0.5 * sum |a - b|, written out: (L, H)."""
    return (0.5 * (a - b).abs().sum(-1)).mean(-1)


# ---- compare ---------------------------------------------------------------------------------------------

@needs_shipped
def test_a_model_against_itself_differs_by_exactly_zero(shipped):
    c = compare(shipped, shipped, SENTENCE)
    assert c.level == "pieces" and not c.by_words and c.first_difference is None
    assert c.translations[0] == c.translations[1] == shipped.translate(SENTENCE)
    for kind in ("encoder", "decoder", "cross"):
        assert torch.equal(c.maps_a[kind], c.maps_b[kind]) and not c.difference(kind).any()
        assert c.maps_a[kind].shape[:2] == (3, 8)
    assert len(c.ranking) == 3 * 3 * 8 and all(r[3] == 0.0 for r in c.ranking)
    for s in c.scored:
        assert s.logp_a == s.logp_b and s.total_a == s.total_b
    assert c.src_units == c.src_pieces["a"] == c.src_pieces["b"] and c.src_units[0] == "<s>"


@needs_shipped
def test_the_maps_and_scores_are_the_inspections(shipped):
    """A's maps on its own translation are Translator.inspect's; each translation's log-probabilities under each
    model are Translator.score's (the outputs re-encode to the ids chosen)."""
    other = Translator(shipped.model, shipped.tokenizer, shipped.config)
    c = compare(shipped, other, SENTENCE, heads_off_b=[("encoder", 1, 0)])
    ins = shipped.inspect(SENTENCE)
    for kind in ("encoder", "decoder", "cross"):
        torch.testing.assert_close(c.maps_a[kind], getattr(ins, kind), rtol=0, atol=1e-6)
    assert c.scored[0].units == ins.out_tokens
    torch.testing.assert_close(torch.tensor(c.scored[0].logp_a), torch.tensor(ins.token_probs).log(), atol=1e-5,
                               rtol=0)
    total, _ = shipped.score(SENTENCE, c.translations[1])
    assert c.scored[1].total_a == pytest.approx(total, abs=1e-4)


@needs_shipped
def test_a_head_switched_off_changes_exactly_the_maps_downstream_of_it(shipped):
    """Head 0 of encoder layer 1 off in B: encoder layers 0 and 1 (whose weights come before the head's output) and
    decoder layer 0's self-attention (which reads no memory) are unchanged, bit for bit; encoder layer 2 and every
    cross-attention map differ. The ranking is the mean TV of the rows, most different first."""
    c = compare(shipped, shipped, SENTENCE, heads_off_b=[("encoder", 1, 0)])
    same = {("encoder", 0), ("encoder", 1), ("decoder", 0)}
    for kind, layer, head, value in c.ranking:
        a, b, diff = c.maps(kind, layer, head)
        assert value == pytest.approx(float((0.5 * diff.abs().sum(-1)).mean()), abs=1e-7)
        if (kind, layer) in same:
            assert value == 0.0 and torch.equal(a, b)
        elif kind in ("encoder", "cross"):
            assert value > 1e-4, (kind, layer, head)
    values = [r[3] for r in c.ranking]
    assert values == sorted(values, reverse=True)
    assert c.ranking[0][0] in ("encoder", "cross") and c.ranking[0][1] >= (2 if c.ranking[0][0] == "encoder" else 0)


@needs_shipped
def test_a_comparison_round_trips_through_json(shipped):
    c = compare(shipped, shipped, SENTENCE, heads_off_b=[("cross", 2, 5)], names=("whole", "cross 2.5 off"))
    text = c.to_json()
    d = json.loads(text)
    assert d["format"] == "transformer-explorer/comparison" and d["by_words"] is False and d["measure"] == "mean_tv"
    back = Comparison.from_json(text)
    assert back.to_json() == text and back.names == ["whole", "cross 2.5 off"]
    assert d["heads_off"] == {"a": [], "b": [["cross", 2, 5]]} and back.heads_off == d["heads_off"]
    torch.testing.assert_close(back.maps_b["cross"], c.maps_b["cross"], atol=1e-6, rtol=0)
    assert back.scored[1].units == c.scored[1].units and back.ranking[0][:3] == c.ranking[0][:3]
    with pytest.raises(ValueError):
        Comparison.from_json('{"format": "something else"}')


def test_models_of_different_shapes_are_compared_over_the_heads_both_have(tiny_spm):
    sp, _ = tiny_spm
    a, b = tiny_translator(sp, 1, N=2, h=4), tiny_translator(sp, 2, N=1, h=2)
    c = compare(a, b, TINY_SENTENCE)
    assert c.shapes == {"a": [2, 4], "b": [1, 2], "shared": [1, 2]} and c.level == "pieces"
    assert all(m.shape[:2] == (1, 2) for m in (*c.maps_a.values(), *c.maps_b.values()))
    assert len(c.ranking) == 3 * 1 * 2
    torch.testing.assert_close(torch.tensor(c.ranking[0][3]), tv(c.maps_a[c.ranking[0][0]],
                                                                  c.maps_b[c.ranking[0][0]]).max())


def test_different_tokenizers_are_compared_over_words(tiny_spm, other_spm):
    sp, _ = tiny_spm
    a, b = tiny_translator(sp, 1), tiny_translator(other_spm, 2)
    assert sp.encode(TINY_SENTENCE, out_type=str) != other_spm.encode(TINY_SENTENCE, out_type=str)
    for on in ("a", "b"):
        c = compare(a, b, TINY_SENTENCE, on=on)
        assert c.by_words and c.level == "words" and c.missing == {"a": [], "b": []}
        assert c.src_units == ["<s>", *TINY_SENTENCE.split(), "</s>"]
        text = c.translations["ab".index(on)]
        assert c.tgt_units[1:] == text.split() and len(c.tgt_units) == len(text.split()) + 1
        for kind, (q, k) in {"encoder": (c.src_units, c.src_units), "decoder": (c.tgt_units, c.tgt_units),
                             "cross": (c.tgt_units, c.src_units)}.items():
            for maps in (c.maps_a, c.maps_b):
                assert maps[kind].shape[2:] == (len(q), len(k))
                torch.testing.assert_close(maps[kind].sum(-1), torch.ones(maps[kind].shape[:3]))  # rows sum to 1
            assert c.ranking[0][3] > 0
        for s in c.scored:  # per word; the words' sum is the translation's log-probability under each model
            assert s.units == s.translation.split() + ["</s>"]
            for tr, total in ((a, s.total_a), (b, s.total_b)):
                assert total == pytest.approx(sum(tr.score_ids([TINY_SENTENCE], [s.translation])[0]), abs=1e-4)


def test_a_source_unit_one_model_lacks_is_attended_by_nothing_and_left_out_of_the_measure(tiny_spm):
    """B is A's model reading sources with no <s> (as a Marian model): the same weights, other rows."""
    sp, _ = tiny_spm
    a = tiny_translator(sp, 1)
    b = Translator(a.model, sp, dict(a.config, bos_id=None), half_rows=0)
    c = compare(a, b, TINY_SENTENCE)
    assert c.by_words and c.missing == {"a": [], "b": [0]} and c.src_units[0] == "<s>"
    assert c.src_pieces["b"][0] != "<s>" and c.src_pieces["a"][0] == "<s>"
    assert not c.maps_b["encoder"][..., 0].any() and not c.maps_b["cross"][..., 0].any()  # no key there
    assert not c.maps_b["encoder"][:, :, 0].any()  # no query row either
    value = {r[:3]: r[3] for r in c.ranking}
    rows = tv(c.maps_a["encoder"][:, :, 1:], c.maps_b["encoder"][:, :, 1:])  # the <s> row left out
    assert value[("encoder", 1, 1)] == pytest.approx(float(rows[1, 1]), abs=1e-6)
    assert value[("cross", 0, 0)] == pytest.approx(float(tv(c.maps_a["cross"], c.maps_b["cross"])[0, 0]), abs=1e-6)


def test_pieces_are_pooled_into_words_keys_summed_and_queries_averaged():
    keys = unit_keys(["<s>", "▁Ein", "▁Fahr", "rad", ".", "</s>"], 1, 1)
    assert keys == ["head", 0, 1, 1, 1, "tail"]
    units = unit_order(keys, ["head", 0, 1, "tail"], "sentence")
    assert units == ["head", 0, 1, "tail"]
    m = membership(keys, units)
    maps = torch.softmax(torch.randn(1, 1, 6, 6), -1)
    pooled = pool(maps, m, m)[0, 0]  # (4, 4)
    assert pooled[2, 1] == pytest.approx(float(maps[0, 0, 2:5, 1].mean()))
    assert pooled[1, 2] == pytest.approx(float(maps[0, 0, 1, 2:5].sum()))
    assert pooled[2, 2] == pytest.approx(float(maps[0, 0, 2:5, 2:5].sum(-1).mean()))
    torch.testing.assert_close(pooled.sum(-1), torch.ones(4))
    with pytest.raises(ValueError, match="different numbers of words"):
        unit_order(keys, ["head", 0, "tail"], "sentence")


def test_bad_input_is_a_clear_value_error(tiny_spm):
    sp, _ = tiny_spm
    a = tiny_translator(sp, 1, max_src_tokens=8)
    for text in ("", "   "):
        with pytest.raises(ValueError, match="empty"):
            compare(a, a, text)
    with pytest.raises(ValueError, match="too long .* at most 8 pieces"):
        compare(a, a, TINY_SENTENCE + " " + TINY_SENTENCE)
    none = copy.copy(a)
    none.tokenizer = None
    with pytest.raises(ValueError, match="model B has no tokenizer"):
        compare(a, none, "Hund")
    with pytest.raises(ValueError, match="on must be"):
        compare(a, a, "Der Hund", on="c")
    with pytest.raises(ValueError, match="layer must be"):
        compare(a, a, "Hund", heads_off_b=[("cross", 5, 0)])


def test_a_translation_longer_than_the_other_models_positions_is_said_not_run(tiny_spm, other_spm):
    """A model of a small vocabulary cuts the other's translation into more pieces than it has positions (a
    converted Marian model of 64 against the shipped model's translation: a RuntimeError of the positional
    encoding before): said, in the tables' words, before anything runs."""
    sp, _ = tiny_spm
    a = tiny_translator(sp, 1)
    torch.manual_seed(2)
    V = other_spm.get_piece_size()
    short = Translator(make_model(V, V, N=2, d_model=16, d_ff=32, h=2, dropout=0.0, max_len=8), other_spm,
                       {"max_src_tokens": 8, "max_len": 8, "max_out_tokens": 6}, half_rows=0)
    with pytest.raises(CannotCompare) as e:
        compare(a, short, "Hund", names=("a", "short"))
    assert e.value.said.key == "compare.error.output-too-long" and e.value.said.fields["most"] == 8
    assert e.value.said.fields["model"] == "short" and e.value.said.fields["n"] > 8
    assert "短" in say(e.value.said, "zh-CN") and "too long" not in say(e.value.said, "zh-CN")


# ---- patching --------------------------------------------------------------------------------------------

def plain_logp(model, src, tgt_in, gold):
    """The unpatched teacher-forced run, written out: (T,)."""
    mask = torch.ones(1, 1, src.size(1), dtype=torch.bool)
    with torch.no_grad():
        out = model(src, tgt_in.unsqueeze(0), mask, subsequent_mask(tgt_in.size(0)))
        return model.generator(out)[0].gather(1, gold.unsqueeze(1))[:, 0]


def loop_grid(model, src_o, src_e, tgt_in, gold):
    """The grid as a plain loop: for each layer and position, one run of one sentence, (N + 1, S, T)."""
    mask = torch.ones(1, 1, src_o.size(1), dtype=torch.bool)
    layers, S = list(model.encoder.layers), src_o.size(1)
    grid = torch.zeros(len(layers) + 1, S, gold.size(0))
    with torch.no_grad():
        for start in range(len(layers) + 1):
            for j in range(S):
                xo, xe = model.src_embed(src_o), model.src_embed(src_e)
                for layer in layers[:start]:
                    xo, xe = layer(xo, mask), layer(xe, mask)
                x = xe.clone()
                x[0, j] = xo[0, j]
                for layer in layers[start:]:
                    x = layer(x, mask)
                out = model.decode(model.encoder.norm(x), mask, tgt_in.unsqueeze(0), subsequent_mask(gold.size(0)))
                grid[start, j] = model.generator(out)[0].gather(1, gold.unsqueeze(1))[:, 0]
    return grid


@pytest.fixture(scope="module")
def grid(shipped):
    return patch_grid(shipped, SENTENCE, EDITED)


@needs_shipped
def test_the_batched_grid_equals_a_loop_of_single_patched_runs(shipped, grid):
    p = patch_inputs(shipped, SENTENCE, EDITED)
    assert grid.logp_patched.shape == (4, 15, p.gold.size(0)) and grid.changed == [2]
    expected = loop_grid(shipped.model, p.src_original, p.src_edited, p.tgt_in, p.gold)
    torch.testing.assert_close(grid.logp_patched, expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(grid.logp_original, plain_logp(shipped.model, p.src_original, p.tgt_in, p.gold),
                               rtol=0, atol=1e-5)
    torch.testing.assert_close(grid.logp_edited, plain_logp(shipped.model, p.src_edited, p.tgt_in, p.gold),
                               rtol=0, atol=1e-5)
    assert grid.translation == shipped.translate(SENTENCE) and grid.edited_translation == shipped.translate(EDITED)


def test_the_grid_of_a_post_norm_model_equals_the_loop_too(tiny_spm):
    """A Marian-like model (post-norm, swish, no <s> before a source, <pad> as the decoder's start)."""
    sp, _ = tiny_spm
    torch.manual_seed(3)
    V = sp.get_piece_size()
    model = make_model(V, V, N=2, d_model=16, d_ff=32, h=2, dropout=0.0, norm="post", activation="swish")
    tr = Translator(model, sp, {"max_src_tokens": 32, "bos_id": None, "decoder_start_id": 0}, half_rows=0)
    g = patch_grid(tr, "Der Hund läuft im Park.", "Der Mann läuft im Park.")
    assert g.src_tokens[0] != "<s>" and g.tgt_tokens[0] == "<pad>" and g.changed
    p = patch_inputs(tr, "Der Hund läuft im Park.", "Der Mann läuft im Park.")
    expected = loop_grid(model, p.src_original, p.src_edited, p.tgt_in, p.gold)
    torch.testing.assert_close(g.logp_patched, expected, rtol=0, atol=1e-5)


@needs_shipped
def test_restoring_every_position_gives_the_original_run_back(shipped, grid):
    p = patch_inputs(shipped, SENTENCE, EDITED)
    model = shipped.model
    with torch.no_grad():
        states_o = encoder_states(model, p.src_original, p.src_mask)
        states_e = encoder_states(model, p.src_edited, p.src_mask)
        everything = torch.ones(1, p.src_original.size(1), dtype=torch.bool)
        for layer in (0, len(model.encoder.layers)):  # the embedding output, and the last layer's
            got = patched_logp(model, states_o, states_e, layer, everything, p.src_mask, p.tgt_in, p.gold)[0]
            torch.testing.assert_close(got, grid.logp_original, rtol=0, atol=1e-5)
    # at the embedding layer only the changed piece differs: restoring it is the original run, restoring another
    # changes nothing
    assert (grid.logp_original - grid.logp_edited).abs().max() > 0.1
    torch.testing.assert_close(grid.logp_patched[0, 2], grid.logp_original, rtol=0, atol=1e-5)
    others = [j for j in range(15) if j != 2]
    assert grid.gain[0, others].abs().max() < 1e-5
    assert grid.recovered_total[0, 2] == pytest.approx(1.0, abs=1e-4)
    defined = ~grid.recovered[0, 2].isnan()
    assert defined.any() and torch.allclose(grid.recovered[0, 2][defined], torch.ones(int(defined.sum())), atol=1e-2)


@needs_shipped
def test_patching_a_run_with_its_own_states_changes_nothing(shipped):
    g = patch_grid(shipped, SENTENCE, SENTENCE)
    assert g.changed == [] and torch.equal(g.logp_original, g.logp_edited)
    torch.testing.assert_close(g.logp_patched, g.logp_original.expand_as(g.logp_patched), rtol=0, atol=1e-5)
    assert g.gain.abs().max() < 1e-5
    assert g.recovered.isnan().all() and g.recovered_total.isnan().all()  # nothing to recover: undefined


@needs_shipped
def test_a_grid_round_trips_through_json_with_its_undefined_fractions_as_null(grid):
    text = grid.to_json()
    d = json.loads(text)
    assert d["format"] == "transformer-explorer/patch-grid" and None in d["recovered"][0][0]
    back = PatchGrid.from_json(text)
    assert back.to_json() == text and back.src_tokens == grid.src_tokens and back.out_tokens == grid.out_tokens
    assert torch.equal(back.recovered.isnan(), grid.recovered.isnan())
    torch.testing.assert_close(back.logp_patched, grid.logp_patched, rtol=0, atol=1e-6)
    assert not math.isnan(back.recovered_total[1, 2])


@needs_shipped
def test_the_grid_changes_no_module_and_runs_in_threads(shipped, grid):
    model = shipped.model

    def attributes():
        return {name: ({k: v for k, v in vars(m).items() if not k.startswith("_")},
                       len(m._forward_hooks), len(m._forward_pre_hooks)) for name, m in model.named_modules()}

    before = attributes()
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    results = [None] * 3
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, patch_grid(shipped, SENTENCE, EDITED)))
               for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert attributes() == before
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in weights.items())
    for r in results:
        torch.testing.assert_close(r.logp_patched, grid.logp_patched, rtol=0, atol=1e-6)


@needs_shipped
def test_the_command_line_times_the_grid_and_prints_it(capsys):
    from core.analysis.patching import main
    main([SENTENCE, EDITED, "--repeat", "1"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("15 source pieces, ") and " s best, " in out[0]
    assert len(out) == 3 + 1 + 4 and out[4].split()[0] == "0" and out[4].split()[3] == "1.000"  # <s>, Ein, Mann


def test_an_edit_that_changes_the_number_of_pieces_is_refused(tiny_spm):
    sp, _ = tiny_spm
    tr = tiny_translator(sp, 1)
    with pytest.raises(ValueError, match="as many"):
        patch_grid(tr, "Der Hund läuft.", "Der kleine Hund läuft im Park.")
    with pytest.raises(ValueError, match="empty"):
        patch_grid(tr, "", "Der Hund")
