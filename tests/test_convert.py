"""core.convert: Marian (OPUS-MT) models built by transformers from small MarianConfigs with seeded random weights
(no download), saved with a MarianTokenizer made from SentencePiece models trained here on made-up sentences,
converted, then compared with transformers itself: teacher-forced log-probabilities within 1e-4 in float32, greedy
and beam-4 outputs identical to `generate` with the same length limit on 40 sentences each, and the tokenizer's
ids and text. Then bad inputs: one line, exit status 2, nothing left in OUT_DIR.

transformers' MarianConfig has no pre-norm option, so every model here is post-norm (swish and gelu, the two
activations opus-mt models use); core's pre-norm path is the shipped model's (tests/test_model_variants.py keeps its
outputs bit for bit).
"""
import dataclasses
import json
import shutil
import warnings

import pytest
import torch

from core.analysis.heads import Frame, compute_atlas
from core.convert import ConvertError, convert
from core.convert.__main__ import main
from core.convert.random_opus import made_up_pairs, write_marian
from core.translate import Translator
from tests.test_heads import zeroed

transformers = pytest.importorskip("transformers", reason="transformers is not installed (pip install transformers)")
pytestmark = pytest.mark.slow  # each model is built, saved, trained a tokenizer for and converted: seconds

SMALL = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
             encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, scale_embedding=True)
# (activation, eos bias): random weights at 3x the usual scale give outputs that differ from sentence to sentence;
# the swish model's outputs all run to the limit, the gelu one's </s> bias makes some end early and some not
MODELS = {"swish": ("swish", 0.0), "gelu": ("gelu", 8.0)}
LIMIT = 20  # max_new_tokens for generate, max_len for core: the same number of tokens after the start
SENTENCES = [p[0] for p in made_up_pairs(40, seed=7)]
TARGETS = [p[1] for p in made_up_pairs(40, seed=7)]


@pytest.fixture(scope="module", params=sorted(MODELS))
def pair(request, tmp_path_factory):
    """(transformers' MarianMTModel, its MarianTokenizer, core's Translator of the converted copy, float32)."""
    activation, eos_bias = MODELS[request.param]
    root = tmp_path_factory.mktemp(f"marian-{request.param}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sacremoses is not installed: MarianTokenizer says so
        transformers.logging.set_verbosity_error()
        source = write_marian(root / "hf", dict(SMALL, activation_function=activation),
                              dict(num_beams=4, max_length=64), made_up_pairs(400, seed=1), 200, seed=1, scale=3.0,
                              eos_bias=eos_bias)
        convert(source, root / "ours")
        hf = transformers.MarianMTModel.from_pretrained(source).eval()
        tok = transformers.MarianTokenizer.from_pretrained(source)
    return hf, tok, Translator.load(root / "ours", half_rows=0)


def generated(hf, tok, text, **kw):
    """transformers' output ids after the decoder's start, up to (not including) </s>."""
    with torch.no_grad():
        ids = hf.generate(**tok([text], return_tensors="pt"), max_new_tokens=LIMIT, do_sample=False, **kw)[0, 1:]
    ids = ids.tolist()
    return ids[:ids.index(hf.config.eos_token_id)] if hf.config.eos_token_id in ids else ids


def test_the_converted_config_names_marians_choices(pair):
    hf, _, tr = pair
    c = tr.config
    assert (c["norm"], c["layer_norm_eps"], c["pe_layout"], c["scale_embedding"]) == ("post", 1e-5, "halves", True)
    assert c["activation"] == {"silu": "swish"}.get(hf.config.activation_function, hf.config.activation_function)
    assert (tr.pad_id, tr.start_id, tr.eos_id, tr.bos_id) == (hf.config.pad_token_id, hf.config.pad_token_id, 0, None)
    assert tr.rules.forbidden == (hf.config.pad_token_id,) and tr.rules.eos_at_limit and tr.rules.beam == "transformers"


def test_teacher_forced_log_probabilities_match_transformers(pair):
    hf, tok, tr = pair
    ours = tr.score_ids(SENTENCES, TARGETS)
    batch = tok(SENTENCES, text_target=TARGETS, return_tensors="pt", padding=True)
    with torch.no_grad():
        logp = hf(**batch).logits.float().log_softmax(-1)
    labels = batch["labels"]
    worst = 0.0
    for i, row in enumerate(ours):
        n = int((labels[i] != hf.config.pad_token_id).sum())
        theirs = logp[i, :n].gather(1, labels[i, :n].unsqueeze(1)).squeeze(1)
        assert len(row) == n
        worst = max(worst, (torch.tensor(row) - theirs).abs().max().item())
    assert worst < 1e-4


def test_the_tokenizer_matches_marians(pair):
    _, tok, tr = pair
    for text in SENTENCES + ["Ein Zebra (!) tanzt im Schnee — 3 Mal.", ""]:
        assert tr.encode_source(text)[0] == tok(text)["input_ids"]
    for text in TARGETS[:10]:
        assert tr.encode_target(text) + [tr.eos_id] == tok(text_target=text)["input_ids"]
    g = torch.Generator().manual_seed(0)
    for _ in range(20):  # any ids, special ones included
        ids = torch.randint(0, tr.config["tgt_vocab"], (12,), generator=g).tolist()
        assert tr.tokenizer.decode(ids) == tok.decode(ids, skip_special_tokens=True)


@pytest.mark.parametrize("method, beam", [("greedy", 1), ("beam", 4)])
def test_decoding_is_identical_to_generate(pair, method, beam):
    hf, tok, tr = pair
    ours = tr.translate_ids(SENTENCES, method=method, beam=beam, max_len=LIMIT)
    theirs = [generated(hf, tok, text, num_beams=beam) for text in SENTENCES]
    assert ours == theirs
    assert len({tuple(o) for o in ours}) >= 4  # not one degenerate output for every sentence
    assert [tr.tokenizer.decode(o) for o in ours[:5]] == [tok.decode(t, skip_special_tokens=True) for t in theirs[:5]]


@pytest.mark.parametrize("settings", [dict(length_penalty=0.6), dict(length_penalty=2.0, early_stopping=True),
                                      dict(early_stopping="never"), dict(forced_eos_token_id=None)])
def test_beam_search_follows_generates_settings(pair, settings):
    hf, tok, tr = pair
    rules = dataclasses.replace(tr.rules, early_stopping=settings.get("early_stopping", False),
                                eos_at_limit="forced_eos_token_id" not in settings)
    tr2 = Translator(tr.model, tr.tokenizer, dict(tr.config, length_penalty=settings.get("length_penalty", 1.0)),
                     half_rows=0)
    tr2.rules = rules
    ours = tr2.translate_ids(SENTENCES[:20], method="beam", beam=4, max_len=LIMIT)
    assert ours == [generated(hf, tok, text, num_beams=4, **settings) for text in SENTENCES[:20]]


def test_the_lengths_cover_early_ends_and_the_limit(pair):
    hf, tok, tr = pair
    outs = tr.translate_ids(SENTENCES, method="beam", beam=4, max_len=LIMIT)
    ends = {len(o) for o in outs}
    if hf.config.activation_function == "gelu":
        assert any(0 < n < LIMIT - 1 for n in ends) and LIMIT - 1 in ends
    else:
        assert ends == {LIMIT - 1}  # every output cut at the limit, with the </s> forced there


def test_the_head_atlas_of_a_converted_model_measures_its_own_loss_and_outputs(pair):
    """core.analysis.heads on a converted model, in its own frame (no <s>, the decoder started by <pad>, </s>
    forced at the limit): the baseline loss is transformers' teacher-forced loss of the same pairs; each head's
    change in loss and in greedy BLEU is that of a Translator over a copy of the model with the head's W^O columns
    zeroed (no hook, no mask)."""
    from sacrebleu.metrics import BLEU

    hf, tok, tr = pair
    sources = SENTENCES[:12]
    # references: the model's own outputs, cut short, so that BLEU moves when a head's loss changes what it says
    refs = [tr.tokenizer.decode(tr.translate_ids([s])[0][:8]) or "Ein" for s in sources]
    atlas = compute_atlas(tr.model, tr.tokenizer, list(zip(sources, refs)), max_tokens=120, frame=Frame.of(tr.config))

    batch = tok(sources, text_target=refs, return_tensors="pt", padding=True)
    with torch.no_grad():
        logp = hf(**batch).logits.float().log_softmax(-1)
    labels = batch["labels"]
    real = labels != hf.config.pad_token_id
    theirs = -logp.gather(2, labels.unsqueeze(-1))[..., 0][real].sum().item() / real.sum().item()
    assert atlas["baseline"]["loss"] == pytest.approx(theirs, abs=1e-4)

    def measured(model):
        t = Translator(model, tr.tokenizer, tr.config, half_rows=0)
        scores = t.score_ids(sources, refs)
        loss = -sum(sum(row) for row in scores) / sum(len(row) for row in scores)
        # one sentence at a time: its length limit its own, as the atlas sets it (a batch's is its longest source's)
        return loss, BLEU().corpus_score([t.translate(s) for s in sources], [refs]).score

    base_loss, base_bleu = measured(tr.model)
    assert atlas["baseline"]["bleu"] == pytest.approx(base_bleu, abs=0.01)
    for kind, layer, head in [("encoder", 1, 2), ("decoder", 0, 1), ("cross", 1, 3), ("cross", 0, 0)]:
        loss, bleu = measured(zeroed(tr.model, [(kind, layer, head)]))
        assert atlas["heads"][kind]["delta_loss"][layer][head] == pytest.approx(loss - base_loss, abs=2e-4)
        assert atlas["heads"][kind]["delta_bleu"][layer][head] == pytest.approx(bleu - base_bleu, abs=0.01)
    moved = [v for k in ("encoder", "decoder", "cross") for row in atlas["heads"][k]["delta_bleu"] for v in row if v]
    assert len(moved) >= 3  # switching heads off did change what the model says


# ---- bad input -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def marian_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("marian-bad")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return write_marian(root / "hf", dict(SMALL, activation_function="swish"), dict(num_beams=4, max_length=64),
                            made_up_pairs(300, seed=2), 150, seed=2)


def refused(capsys, tmp_path, source, *names):
    """Run the command line on `source`; check one line on stderr naming each of `names`, exit status 2 and no
    OUT_DIR (nor anything beside it) left."""
    out = tmp_path / "out"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main([str(source), str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("core.convert: error:"), err
    for name in names:
        assert name in err, err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == before  # no temporary folder either
    return err


def copy_of(marian_dir, tmp_path, drop=(), **config):
    d = tmp_path / "src"
    shutil.copytree(marian_dir, d)
    for name in drop:
        (d / name).unlink()
    if config:
        hf = json.loads((d / "config.json").read_text())
        (d / "config.json").write_text(json.dumps({**hf, **config}))
    return d


@pytest.mark.parametrize("name", ["source.spm", "target.spm", "vocab.json"])
def test_a_missing_tokenizer_file_is_named(capsys, tmp_path, marian_dir, name):
    refused(capsys, tmp_path, copy_of(marian_dir, tmp_path, drop=[name]), name)


@pytest.mark.parametrize("field, value", [("model_type", "bert"), ("share_encoder_decoder_embeddings", False),
                                          ("activation_function", "tanh"), ("normalize_before", True),
                                          ("add_bias_logits", True), ("normalize_embedding", True),
                                          ("decoder_layers", 3)])
def test_a_config_this_code_cannot_represent_is_refused(capsys, tmp_path, marian_dir, field, value):
    refused(capsys, tmp_path, copy_of(marian_dir, tmp_path, **{field: value}), "config.json", field)


def test_a_directory_that_is_no_marian_model_is_refused(capsys, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "config.json").write_text(json.dumps({"model_type": "bert", "architectures": ["BertModel"]}))
    refused(capsys, tmp_path, tmp_path / "src", "config.json", "bert")
    from tests.conftest import ASSETS
    err = refused(capsys, tmp_path, ASSETS, "config.json")
    assert "own format" in err
    refused(capsys, tmp_path, tmp_path / "nowhere", "nowhere")


def test_a_hub_id_without_network_says_so(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)  # as on a machine with no network
    out = tmp_path / "out"
    assert main(["Helsinki-NLP/opus-mt-de-en", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Helsinki-NLP/opus-mt-de-en" in err and "network" in err
    assert not out.exists()


def test_a_failed_conversion_leaves_an_earlier_one_untouched(tmp_path, marian_dir, monkeypatch):
    out = tmp_path / "out"
    convert(marian_dir, out)
    before = sorted(p.name for p in out.iterdir())
    import core.convert as cc
    monkeypatch.setattr(cc, "CHECK_TOLERANCE", {"float32": -1.0, "float16": -1.0})  # the check fails
    with pytest.raises(ConvertError):
        convert(marian_dir, out)
    assert sorted(p.name for p in out.iterdir()) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(ConvertError, match="other than an earlier conversion"):
        convert(marian_dir, tmp_path / "mine")
