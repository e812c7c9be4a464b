"""n-best lists: beam search's final pool (core.decode.beam_search(nbest=True)) against an exhaustive float64
enumeration and against the ids it returns without it; Translator.nbest and an Inspection made for a chosen output
(Translator.inspect(output=...)) on the shipped model; the Translate tab's table and its choice."""
import copy
import itertools
import math
import weakref

import pytest
import torch

from core.data import BOS, EOS
from core.decode import Hypothesis, Rules, beam_search, length_penalty
from core.model import subsequent_mask
from tests.conftest import needs_shipped
from tests.test_decode import random_model, src_batch


def logprob64(model, src, mask, ids):
    """log P of `ids` (</s> included) given the source, teacher-forced through a float64 copy of the model."""
    m = _double(model)
    tgt = torch.tensor([[BOS] + ids[:-1]])
    with torch.no_grad():
        out = m.decode(m.encode(src, mask), mask, tgt, subsequent_mask(tgt.size(1)))
        logp = m.generator(out)[0]
    return logp.gather(1, torch.tensor(ids).unsqueeze(1)).sum().item()


# each model's float64 copy, while the model lives: keyed by the model itself, not by id(), which a model made
# after another is freed may reuse (a later seed's sentences were once scored by an earlier model's copy)
_doubles = weakref.WeakKeyDictionary()


def _double(model):
    if model not in _doubles:
        _doubles[model] = copy.deepcopy(model).double()
    return _doubles[model]


def test_the_pool_of_a_beam_that_covers_everything_is_every_finished_sequence_ranked():
    """With a beam wider than all sequences, the pool holds every sequence that ends in </s> within max_len,
    ranked by log P / lp(|Y|) as a float64 enumeration ranks them, with their log P and lengths."""
    vocab, max_len, alpha = 6, 3, 0.6
    model = random_model(vocab, seed=3)
    src, mask = src_batch(vocab, B=1, S=4, seed=4)
    mask = torch.ones_like(mask)
    every = []
    for n in range(max_len):
        for body in itertools.product([t for t in range(vocab) if t != EOS], repeat=n):
            ids = list(body) + [EOS]
            lp = logprob64(model, src, mask, ids)
            every.append((lp / length_penalty(len(ids), alpha), list(body), lp, len(ids)))
    every.sort(key=lambda x: -x[0])
    pool = beam_search(model, src, mask, max_len, beam=200, alpha=alpha, nbest=True)[0]
    assert len(pool) == len(every) == 1 + 5 + 25
    assert all(isinstance(h, Hypothesis) and h.finished for h in pool)
    assert [h.ids for h in pool] == [e[1] for e in every]
    for h, (score, _, lp, length) in zip(pool, every):
        assert h.length == length
        assert math.isclose(h.logp, lp, abs_tol=1e-4) and math.isclose(h.score, score, abs_tol=1e-4)
        assert math.isclose(h.score, h.logp / length_penalty(h.length, alpha), rel_tol=1e-6)


@pytest.mark.parametrize("rules,alpha", [(Rules(), 0.6), (Rules(), 0.0),
                                         (Rules(beam="transformers", eos_at_limit=True), 1.0),
                                         (Rules(beam="transformers", early_stopping=True), 0.6)])
def test_the_best_of_the_pool_is_what_beam_search_returns(rules, alpha):
    """Batched sentences, several seeds and both scoring rules: the pool's first is the output, the pool is
    ranked by score, holds at most `beam`, and each log P is the float64 teacher-forced one."""
    for seed in range(4):
        model = random_model(seed=seed)
        src, mask = src_batch(seed=seed)
        plain = beam_search(model, src, mask, 9, beam=3, alpha=alpha, rules=rules)
        pools = beam_search(model, src, mask, 9, beam=3, alpha=alpha, rules=rules, nbest=True)
        assert [pool[0].ids for pool in pools] == plain
        for b, pool in enumerate(pools):
            assert 1 <= len(pool) <= 3
            assert [h.score for h in pool] == sorted((h.score for h in pool), reverse=True)
            n = int(mask[b].sum())
            for h in pool:
                if not h.finished or (rules.eos_at_limit and h.length == 9):
                    continue  # a forced </s> scores 0, as transformers sets it, not as the model would
                ids = h.ids + ([EOS] if h.length == len(h.ids) + 1 else [])
                assert len(ids) == h.length
                assert math.isclose(h.logp, logprob64(model, src[b:b + 1, :n], mask[b:b + 1, :, :n], ids),
                                    abs_tol=1e-4)


def test_a_search_where_nothing_ends_gives_its_best_live_hypothesis():
    model = random_model(seed=1)
    with torch.no_grad():
        model.generator.proj.bias[EOS] = -1e4  # </s> never wins
    src, mask = src_batch(seed=1)
    pools = beam_search(model, src, mask, 5, beam=2, nbest=True)
    assert all(len(p) == 1 and not p[0].finished and p[0].length == 5 and len(p[0].ids) == 5 for p in pools)
    assert [p[0].ids for p in pools] == beam_search(model, src, mask, 5, beam=2)


# ---- the shipped model ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tr():
    from core import Translator
    return Translator.load()


@pytest.fixture(scope="module")
def sentences():
    from app.shared import examples
    return examples()[:8]


@needs_shipped
def test_translator_nbest_starts_with_what_translate_returns(tr, sentences):
    for beam in (2, 4):
        pools = tr.nbest(sentences, beam=beam)
        assert [p[0].translation for p in pools] == tr.translate(sentences, beam=beam)
        for pool in pools:
            assert [h.rank for h in pool] == list(range(1, len(pool) + 1)) and len(pool) <= beam
            assert len({tuple(h.ids) for h in pool}) == len(pool)
    one = tr.nbest(sentences[0], beam=4)
    assert [h.ids for h in one] == [h.ids for h in tr.nbest(sentences[:1], beam=4)[0]]
    with pytest.raises(ValueError):
        tr.nbest(sentences[0], beam=1)


@needs_shipped
def test_nbest_token_probabilities_are_the_teacher_forced_ones(tr, sentences):
    """Each piece's probability is the float32 model's teacher-forced one (score_id_lists); their product is the
    search's log P up to the float16 decoder that ran the beam of four."""
    pool = tr.nbest(sentences[2], beam=4)
    src = tr.encode_source(sentences[2])[0]
    for h in pool:
        assert len(h.token_probs) == len(h.pieces) == len(h.ids) + 1 and h.pieces[-1] == "</s>"
        direct = tr.score_id_lists([src], [h.ids + [tr.eos_id]])[0]
        assert h.token_probs == pytest.approx([math.exp(v) for v in direct], abs=1e-6)
        assert sum(math.log(p) for p in h.token_probs) == pytest.approx(h.logp, abs=0.05)


@needs_shipped
def test_an_inspection_of_a_chosen_hypothesis_records_that_output(tr, sentences):
    text = sentences[1]
    best = tr.inspect(text, method="beam", beam=4, nbest=True)
    plain = tr.inspect(text, method="beam", beam=4)
    assert best.translation == plain.translation and best.rank == 1 and plain.nbest == [] and plain.rank is None
    assert torch.equal(best.cross, plain.cross) and best.token_probs == plain.token_probs
    assert [h.ids for h in best.nbest] == [h.ids for h in tr.nbest(text, beam=4)]
    second = best.nbest[1]
    chosen = tr.inspect(text, output=second.ids, nbest=best.nbest, **best.decoding)
    assert chosen.translation == second.translation and chosen.rank == 2 and chosen.nbest is best.nbest
    assert chosen.out_tokens == second.pieces and chosen.decoding == best.decoding
    assert chosen.token_probs == pytest.approx(tr.nbest(text, beam=4)[1].token_probs, abs=1e-5)
    assert chosen.cross.shape[2] == len(second.ids) + 1
    # English text as the output: cut by the model's own vocabulary
    typed = tr.inspect(text, output=second.translation, nbest=best.nbest)
    assert typed.translation == second.translation
    # the JSON keeps the list and the rank
    from core.translate import Inspection
    back = Inspection.from_json(chosen.to_json())
    assert back.rank == 2 and [h.ids for h in back.nbest] == [h.ids for h in best.nbest]
    assert back.to_json() == chosen.to_json()


@needs_shipped
def test_the_translate_tab_shows_the_list_and_opens_a_row(sentences):
    import gradio as gr

    from app.i18n import speaking
    from app.tabs import translate as tab
    from app.translating import translate
    _, _, ins = translate(sentences[1], "beam", 4)
    with speaking("en"):
        view = tab.nbest_view(ins)
    table = view["nbest"]
    assert table["visible"] is True and table["value"]["data"][0][0] == "● 1"
    assert [r[1] for r in table["value"]["data"]] == [h.translation for h in ins.nbest]
    assert tab.nbest_view(translate(sentences[1], "greedy")[2])["nbest"]["visible"] is False
    english, chosen = tab.pick_hypothesis(ins, gr.SelectData(None, {"index": [1, 1], "value": ""}))
    assert english == ins.nbest[1].translation == chosen.translation and chosen.rank == 2
    for lang, said in (("en", "the beam's hypothesis 2 of 4"), ("zh-CN", "束搜索的第 2 个假设（共 4 个）")):
        with speaking(lang):
            assert tab.nbest_view(chosen)["nbest"]["value"]["data"][1][0] == "● 2"
            assert said in tab.status_view(chosen) and said not in tab.status_view(ins)
    assert tab.pick_hypothesis(chosen, gr.SelectData(None, {"index": [1, 0], "value": ""})) == (gr.skip(), gr.skip())
    # a table sorted by another column: the row's own rank says which hypothesis it is
    with speaking("en"):
        row = tab.nbest_view(chosen)["nbest"]["value"]["data"][2]
    english, third = tab.pick_hypothesis(chosen, gr.SelectData(None, {"index": [0, 1], "value": "", "row_value": row}))
    assert third.rank == 3 and english == ins.nbest[2].translation
