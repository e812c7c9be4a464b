"""Switching heads off and the head atlas: no head off changes nothing, a head off contributes nothing and
leaves everything before it as it was, the cached decoder agrees with the reference and with a model whose W^O
has that head's columns zeroed; the atlas' statistics of hand-built maps; importance against a direct
computation on a tiny model; the shipped atlas."""
import copy
import json
import math

import pytest
import torch
from sacrebleu.metrics import BLEU

from core.analysis import heads as atlas_mod
from core.data import BOS, EOS, PAD, Batch, encode_pairs, pad_to
from core.decode import (
    HalfPrecisionDecoder,
    IncrementalDecoder,
    beam_search,
    greedy_decode,
    greedy_decode_uncached,
)
from core.instrument import KINDS, check_heads, keep_mask, run_with_cache, switched_off
from core.model import attention_modules, make_model, subsequent_mask
from core.translate import Translator
from core.words import say
from tests.conftest import ASSETS, needs_shipped, reordered_step


def random_model(vocab=30, seed=0, N=2, h=4, d_model=32):
    torch.manual_seed(seed)
    model = make_model(vocab, vocab, N=N, d_model=d_model, d_ff=64, h=h, dropout=0.0).eval()
    with torch.no_grad():  # a sharper output distribution, so that decoding paths differ
        model.generator.proj.bias.copy_(torch.randn(vocab) * 2)
    return model


def src_batch(vocab=30, B=3, S=7, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab, (B, S), generator=g)
    src[0, -2:] = PAD
    return src, (src != PAD).unsqueeze(-2)


def zeroed(model, heads_off):
    """A copy of the model whose W^O columns of each head in heads_off are zero: the same function, reached
    without any hook or mask (the independent reference)."""
    m = copy.deepcopy(model)
    with torch.no_grad():
        for kind, layer, head in heads_off:
            attn = attention_modules(m)[kind][layer]
            attn.linears[-1].weight[:, head * attn.d_k:(head + 1) * attn.d_k] = 0
    return m


SETS = [[("cross", 1, 3)], [("decoder", 0, 1), ("cross", 0, 0)], [("encoder", 1, 2)],
        [("encoder", 0, 0), ("decoder", 1, 3), ("cross", 1, 0), ("cross", 1, 1), ("cross", 1, 2)]]


# ---- the triples ---------------------------------------------------------------------------------------

def test_bad_triples_are_refused_with_a_message():
    assert check_heads([("cross", 1, 3), ["encoder", 0, 0], ("cross", 1, 3)], 3, 8) == (
        ("encoder", 0, 0), ("cross", 1, 3))
    assert check_heads(None, 3, 8) == ()
    for bad, message in [(("crosss", 1, 3), "kind must be one of"), (("cross", 3, 0), "layer must be"),
                         (("cross", 0, -1), "head must be"), (("cross", 0, 8), "head must be"),
                         (("cross", True, 0), "layer must be"), (("cross", 0, 1.0), "head must be"),
                         (("cross", 0), "not a \\(kind, layer, head\\) triple"), ("cross", "not a")]:
        with pytest.raises(ValueError, match=message):
            check_heads([bad], 3, 8)


# ---- switching off -------------------------------------------------------------------------------------

def test_no_head_off_is_bit_identical():
    model = random_model(seed=1)
    src, mask = src_batch()
    tgt = torch.randint(4, 30, (3, 6), generator=torch.Generator().manual_seed(2))
    ref, ref_maps = run_with_cache(model, src, tgt, mask, subsequent_mask(6), names=["*:weights"])
    with switched_off(model, []):
        assert not any(m.linears[-1]._forward_pre_hooks for mods in attention_modules(model).values() for m in mods)
    got, got_maps = run_with_cache(model, src, tgt, mask, subsequent_mask(6), names=["*:weights"], heads_off=[])
    assert torch.equal(got, ref) and got_maps.keys() == ref_maps.keys()
    assert all(torch.equal(got_maps[k], ref_maps[k]) for k in ref_maps)
    with switched_off(model, ()):
        assert greedy_decode(model, src, mask, 10) == greedy_decode(model, src, mask, 10)
        memory = model.encode(src, mask)
        with torch.no_grad():
            a = IncrementalDecoder(model, memory, mask, 6).step(tgt[:, 0])
    with torch.no_grad():
        b = IncrementalDecoder(model, model.encode(src, mask), mask, 6).step(tgt[:, 0])
    assert torch.equal(a, b)


@needs_shipped
def test_no_head_off_is_bit_identical_for_the_shipped_translator():
    tr = Translator.load()
    s = "Zwei Hunde spielen im Schnee."
    for settings in (dict(method="greedy"), dict(method="beam", beam=4)):
        a, b = tr.inspect(s, **settings), tr.inspect(s, heads_off=[], **settings)
        assert a.translation == b.translation and a.token_probs == b.token_probs and b.heads_off == ()
        assert all(torch.equal(getattr(a, k), getattr(b, k)) for k in KINDS)
    assert tr.translate([s, "Ein Mann."], heads_off=None) == tr.translate([s, "Ein Mann."])


@pytest.mark.parametrize("kind", KINDS)
def test_a_head_off_contributes_nothing_and_leaves_earlier_computations_alone(kind):
    model = random_model(seed=3)
    src, mask = src_batch()
    tgt = torch.randint(4, 30, (3, 6), generator=torch.Generator().manual_seed(4))
    target = attention_modules(model)[kind][1]
    out_proj, h, K = target.linears[-1], 2, target.d_k
    calls = []  # (module, output) in the order modules finish, and W^O's input as it reaches W^O

    def record(module, args, output):
        calls.append((module, output.detach().clone()))

    handles = [m.register_forward_hook(record) for m in model.modules() if m is not model]
    seen = {}
    handles.append(out_proj.register_forward_hook(lambda mod, args, out: seen.setdefault(len(seen), args[0].clone())))
    with torch.no_grad():
        model(src, tgt, mask, subsequent_mask(6))
        plain, calls, plain_in = calls, [], seen[0]
        seen.clear()
        with switched_off(model, [(kind, 1, h)]):
            model(src, tgt, mask, subsequent_mask(6))
    for handle in handles:
        handle.remove()
    first = next(i for i, (m, _) in enumerate(plain) if m is out_proj)
    # everything that ran before W^O of that layer is unchanged, bit for bit
    assert all(m1 is m2 and torch.equal(o1, o2) for (m1, o1), (m2, o2) in zip(plain[:first], calls[:first]))
    # the head's slice of W^O's input is zero, the other heads' slices are as they were
    off_in = seen[0]
    assert torch.count_nonzero(off_in[..., h * K:(h + 1) * K]) == 0
    keep = torch.ones(off_in.size(-1), dtype=torch.bool)
    keep[h * K:(h + 1) * K] = False
    assert torch.equal(off_in[..., keep], plain_in[..., keep])
    # the sub-layer's output is the other heads' terms head_j W^O_j plus the bias (float64 reference)
    W, b = out_proj.weight.double(), out_proj.bias.double()
    expected = sum(plain_in[..., j * K:(j + 1) * K].double() @ W[:, j * K:(j + 1) * K].T for j in range(4) if j != h) + b
    torch.testing.assert_close(calls[first][1].double(), expected, atol=1e-5, rtol=1e-5)
    assert not torch.allclose(plain[first][1], calls[first][1])  # and it did change


@pytest.mark.parametrize("heads_off", SETS, ids=str)
def test_fast_decoder_equals_the_reference_with_heads_off(heads_off):
    model = random_model(seed=5)
    src, mask = src_batch(seed=6)
    ref = zeroed(model, heads_off)
    keep = keep_mask(heads_off, 2, 4)
    cached = greedy_decode(model, src, mask, 12, keep=keep)
    beams = beam_search(model, src, mask, 12, beam=3, keep=keep)
    with switched_off(model, heads_off):
        uncached = greedy_decode_uncached(model, src, mask, 12)
    assert cached == uncached == greedy_decode_uncached(ref, src, mask, 12)
    assert beams == beam_search(ref, src, mask, 12, beam=3)
    # each cached step, float32 and float16, equals the full masked decode with the same heads off
    tgt = torch.randint(4, 30, (3, 7), generator=torch.Generator().manual_seed(7))
    for m, tol in ((model, 1e-5), (HalfPrecisionDecoder(model), 1e-2)):
        with torch.no_grad(), switched_off(m, heads_off):
            memory = m.encode(src, mask)
            full = m.decode(memory, mask, tgt, subsequent_mask(7))
            dec = IncrementalDecoder(m, memory, mask, 7, keep=keep)
            steps = torch.stack([dec.step(tgt[:, t]) for t in range(7)], 1)
        with torch.no_grad():
            r = ref if m is model else HalfPrecisionDecoder(ref)
            expected = r.decode(r.encode(src, mask), mask, tgt, subsequent_mask(7))
        torch.testing.assert_close(steps.float(), full.float(), atol=tol, rtol=tol)
        torch.testing.assert_close(full.float(), expected.float(), atol=tol, rtol=tol)
        with torch.no_grad():  # and switching the heads off did change the decoder's output
            plain = m.decode(m.encode(src, mask), mask, tgt, subsequent_mask(7))
        assert (plain.float() - full.float()).abs().max() > 10 * tol


def test_per_row_masks_follow_their_rows_when_beams_reorder():
    """Each row of a batch with its own heads off, reordered as beam search reorders: a row keeps its mask."""
    model = random_model(seed=8)
    src, mask = src_batch(seed=9)
    tgt = torch.randint(4, 30, (3, 5), generator=torch.Generator().manual_seed(10))
    keep = torch.ones(3, 2, 4)
    keep[0, 1, 2] = keep[2, 0, 0] = 0
    got, full = reordered_step(model, src, mask, tgt, torch.tensor([2, 2, 0]), keep)
    torch.testing.assert_close(got, full, atol=1e-5, rtol=1e-5)


@needs_shipped
def test_translator_with_heads_off_equals_a_model_with_zeroed_columns():
    tr = Translator.load()
    heads_off = [("cross", 1, 3), ("encoder", 0, 5), ("decoder", 2, 0)]
    ref = Translator(zeroed(tr.model, heads_off), tr.tokenizer, tr.config)
    texts = ["Ein Mann in einem roten Hemd fährt mit dem Fahrrad durch die Stadt.", "Zwei Kinder spielen am Strand."]
    for beam in (1, 4):
        assert tr.translate(texts[0], beam=beam, heads_off=heads_off) == ref.translate(texts[0], beam=beam)
        assert tr.translate(texts, beam=beam, heads_off=heads_off) == ref.translate(texts, beam=beam)
    ins, expected = tr.inspect(texts[0], heads_off=heads_off), ref.inspect(texts[0])
    assert ins.heads_off == tuple(sorted(heads_off, key=lambda t: KINDS.index(t[0])))
    assert ins.translation == expected.translation
    torch.testing.assert_close(ins.cross, expected.cross, atol=2e-3, rtol=0)
    with pytest.raises(ValueError, match="kind must be"):
        tr.translate("Ein Hund.", heads_off=[("self", 0, 0)])


# ---- statistics of hand-built maps ---------------------------------------------------------------------

def stats(maps, kind, q_len, k_len, stop=None):
    """map_sums over one batch, as means."""
    B = maps.size(1)
    stop = torch.full((B,), -1) if stop is None else stop
    sums, counts = atlas_mod.map_sums(maps, kind, torch.tensor(q_len), torch.tensor(k_len), stop)
    return {k: (sums[k] / counts[k]).tolist() for k in sums}


def test_identity_previous_and_uniform_maps():
    T = 5
    eye = torch.eye(T)
    prev = torch.zeros(T, T)
    prev[0, 0] = 1
    prev[torch.arange(1, T), torch.arange(T - 1)] = 1
    uniform = torch.full((T, T), 1 / T)
    maps = torch.stack([eye, prev, uniform]).view(1, 1, 3, T, T)  # one layer, one sentence, three heads
    s = stats(maps, "encoder", [T], [T], stop=torch.tensor([T - 2]))
    approx = pytest.approx
    assert s["same"][0] == approx([1, 1 / T, 1 / T]) and s["previous"][0] == approx([0, 1, 1 / T])
    assert s["next"][0] == approx([0, 0, 1 / T]) and s["first"][0] == approx([1 / T, 2 / T, 1 / T])
    assert s["entropy"][0] == approx([0, 0, math.log(T)], abs=1e-6)
    mean_gap = sum(abs(i - j) for i in range(T) for j in range(T)) / T ** 2
    assert s["distance"][0] == approx([0, (T - 1) / T, mean_gap])
    assert s["eos"][0] == approx([1 / T, 0, 1 / T]) and s["stop"][0] == approx([1 / T, 1 / T, 1 / T])


def test_causal_uniform_map_and_padding_are_counted_right():
    """Decoder self-attention, uniform over the visible prefix; a second, shorter sentence padded: padded rows
    and keys count for nothing."""
    T = 4
    causal = torch.tril(torch.ones(T, T))
    causal = causal / causal.sum(-1, keepdim=True)
    short = torch.zeros(T, T)
    short[:2, :2] = torch.tril(torch.ones(2, 2)) / torch.tensor([[1.0], [2.0]])
    maps = torch.stack([causal, short]).view(1, 2, 1, T, T)
    s = stats(maps, "decoder", [T, 2], [T, 2], stop=torch.tensor([T - 1, -1]))
    rows = [1 / (i + 1) for i in range(T)] + [1, 1 / 2]
    assert s["entropy"][0][0] == pytest.approx(sum(math.log(1 / r) for r in rows) / 6)
    assert s["first"][0][0] == pytest.approx(sum(rows) / 6)
    assert s["same"][0][0] == pytest.approx(sum(rows) / 6)
    assert s["next"][0][0] == 0  # a decoder never sees the next position
    assert s["stop"][0][0] == pytest.approx(1 / T)  # the one row that sees the final full stop
    assert "eos" not in s


def test_perfect_diagonal_cross_alignment():
    T, S = 4, 7  # target rows map to source positions 0, 2, 4, 6
    diag = torch.zeros(T, S)
    diag[torch.arange(T), torch.tensor([0, 2, 4, 6])] = 1
    backwards = diag.flip(0)
    sink = torch.zeros(T, S)
    sink[:, S - 1] = 1
    maps = torch.stack([diag, diag, diag, backwards, sink]).view(1, 1, 5, T, S)
    s = stats(maps, "cross", [T], [S])
    assert s["diagonal"][0] == pytest.approx([1, 1, 1, 0, 0.25])
    assert s["monotonic"][0] == pytest.approx([1, 1, 1, 0, 1])
    assert s["distance"][0] == pytest.approx([0, 0, 0, 4, 3])
    assert s["eos"][0] == pytest.approx([0.25, 0.25, 0.25, 0.25, 1])
    # the average of the five heads peaks on the diagonal in every row
    assert s["agreement"][0] == pytest.approx([1, 1, 1, 0, 0.25])


# ---- importance on a tiny model ------------------------------------------------------------------------

class Pieces:
    """A tokenizer over the tiny model's ids: each id is the piece "wN", a text is pieces joined by spaces."""

    def encode(self, texts):
        return [[int(w[1:]) for w in t.split()] for t in texts]

    def decode(self, ids):
        return " ".join(f"w{i}" for i in ids)

    def piece_to_id(self, piece):
        return 5 if piece == "." else 1


@pytest.mark.slow
def test_importance_matches_a_direct_computation():
    """The batched atlas (per-row masks, shared encoder, rows dropped as they end) gives each head's change in
    loss and in greedy BLEU as computed one sentence at a time by the plain reference decoder on copies of the
    model with that head's W^O columns zeroed."""
    torch.manual_seed(11)  # untied: a tied random model keeps repeating its input token
    model = make_model(16, 16, N=2, d_model=16, d_ff=32, h=2, dropout=0.0, tie_weights=False).eval()
    g = torch.Generator().manual_seed(12)
    srcs = [torch.randint(4, 16, (int(n),), generator=g).tolist() for n in torch.randint(2, 7, (10,), generator=g)]
    tok = Pieces()

    def greedy(m, ids):
        src = torch.tensor([[BOS] + ids + [EOS]])
        return greedy_decode_uncached(m, src, (src != PAD).unsqueeze(-2), atlas_mod.default_max_len(src.size(1)))[0]

    # references: the base model's own outputs, shortened where long, so that BLEU moves when a head goes
    pairs = [(tok.decode(s), tok.decode([i for i in greedy(model, s) if i >= 4][:6] or [6])) for s in srcs]
    atlas = atlas_mod.compute_atlas(model, tok, pairs, max_tokens=40)
    examples = encode_pairs(tok, pairs, max_len=128)

    def direct(m):
        nll = tokens = 0
        for src, tgt in examples:
            s, t = torch.tensor([src]), torch.tensor([tgt])
            with torch.no_grad():
                logp = m.generator(m(s, t[:, :-1], (s != PAD).unsqueeze(-2), subsequent_mask(t.size(1) - 1)))[0]
            nll -= logp.gather(1, t[0, 1:].unsqueeze(1)).sum().item()
            tokens += t.size(1) - 1
        hyps = [tok.decode(greedy(m, src[1:-1])) for src, _ in examples]
        return nll / tokens, BLEU().corpus_score(hyps, [[p[1] for p in pairs]]).score

    base_loss, base_bleu = direct(model)
    assert atlas["baseline"]["loss"] == pytest.approx(base_loss, abs=1e-4)
    assert atlas["baseline"]["bleu"] == pytest.approx(base_bleu, abs=0.01)
    moved = 0
    for kind in KINDS:
        for layer in range(2):
            for head in range(2):
                loss, bleu = direct(zeroed(model, [(kind, layer, head)]))
                assert atlas["heads"][kind]["delta_loss"][layer][head] == pytest.approx(loss - base_loss, abs=2e-4)
                assert atlas["heads"][kind]["delta_bleu"][layer][head] == pytest.approx(bleu - base_bleu, abs=0.01)
                moved += abs(bleu - base_bleu) > 0.5
            r = atlas["layers"][kind][layer]
            others = [(kind, layer, h) for h in range(2) if h != r["best_head"]]
            assert r["best_head"] == max(range(2), key=lambda h: atlas["heads"][kind]["delta_loss"][layer][h])
            assert r["delta_loss_all_but_best_off"] == pytest.approx(direct(zeroed(model, others))[0] - base_loss,
                                                                     abs=2e-4)
    assert moved >= 3  # BLEU did move for several heads: the comparison is not of zeros


def test_variant_losses_equal_a_float64_reference_whatever_the_chunking():
    """The atlas' loss pass (the lower layers shared by the variants, the rest run per chunk of variants, the
    cross-entropy only where the target is not padding) gives each variant's summed negative log-likelihood as
    a float64 forward pass of a copy of the model with the switched-off heads' W^O columns zeroed."""
    model = random_model(vocab=20, N=3, h=2, d_model=16)
    g = torch.Generator().manual_seed(5)
    src = pad_to([[BOS] + torch.randint(4, 20, (n,), generator=g).tolist() + [EOS] for n in (5, 2, 7, 4)])
    tgt = pad_to([[BOS] + torch.randint(4, 20, (n,), generator=g).tolist() + [EOS] for n in (3, 6, 1, 5)])
    batch = Batch(src, tgt)
    variants = [v for _, v in atlas_mod.single_head_variants(3, 2)]
    variants += [v for _, v in atlas_mod.layer_variants("cross", 1, 0, 3, 2) + atlas_mod.layer_variants("encoder", 2, 1, 3, 2)]
    chunked = atlas_mod.variant_nll(model, batch, variants, max_rows_tokens=1)  # one variant at a time
    together = atlas_mod.variant_nll(model, batch, variants, max_rows_tokens=10**6)
    for k, keep in enumerate(variants):
        off = [(kind, layer, head) for kind, m in keep.items() for layer, head in (m == 0).nonzero().tolist()]
        ref = zeroed(model, off).double()
        with torch.no_grad():
            h = ref(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
            logp = torch.log_softmax(ref.generator.proj(h), -1)
        nll = -logp.gather(-1, batch.tgt_y.unsqueeze(-1))[..., 0][batch.tgt_y != PAD].sum().item()
        assert chunked[k] == pytest.approx(nll, rel=1e-5) and together[k] == pytest.approx(nll, rel=1e-5)
    assert len({round(x, 3) for x in chunked}) > len(variants) // 2  # the heads do change the loss


def test_memory_shared_by_copies_of_the_batch_decodes_as_the_repeated_memory():
    """IncrementalDecoder's `copies`: one memory standing for several batches of rows (each copy with its own
    heads off) gives the same steps and greedy outputs as the memory repeated."""
    torch.manual_seed(12)
    model = make_model(16, 16, N=2, d_model=16, d_ff=32, h=2, dropout=0.0, tie_weights=False).eval()
    src, mask = src_batch(vocab=16, B=6, seed=15)
    keep = torch.ones(3 * 6, 2, 2)
    keep[6:12, 1, 0] = keep[12:, 0, :] = 0  # copy 0 as it is, copies 1 and 2 with heads off
    tokens = torch.randint(4, 16, (18, 4), generator=torch.Generator().manual_seed(16))
    masks = {"cross": keep, "decoder": keep}
    with torch.no_grad():
        memory = model.encode(src, mask)
        shared = IncrementalDecoder(model, memory, mask, 4, copies=3, keep=masks)
        repeated = IncrementalDecoder(model, memory.repeat(3, 1, 1), mask.repeat(3, 1, 1), 4, keep=masks)
        for t in range(4):
            torch.testing.assert_close(shared.step(tokens[:, t]), repeated.step(tokens[:, t]), rtol=0, atol=0)
        rows = atlas_mod.greedy_rows(model, memory, mask, 9, copies=3, keep=masks)
        assert rows == atlas_mod.greedy_rows(model, memory.repeat(3, 1, 1), mask.repeat(3, 1, 1), 9, keep=masks)
    assert rows[:6] != rows[6:12] and rows[:6] != rows[12:]  # the copies' heads do differ


def test_greedy_rows_equals_greedy_decode():
    """Rows dropped as they end, each with its own length limit: the same ids as the plain cached greedy loop."""
    torch.manual_seed(12)
    model = make_model(16, 16, N=2, d_model=16, d_ff=32, h=2, dropout=0.0, tie_weights=False).eval()
    src, mask = src_batch(vocab=16, B=6, seed=15)
    with torch.no_grad():
        rows = atlas_mod.greedy_rows(model, model.encode(src, mask), mask, 12)
        limits = torch.tensor([3, 12, 5, 12, 1, 7])
        short = atlas_mod.greedy_rows(model, model.encode(src, mask), mask, limits)
    assert rows == greedy_decode(model, src, mask, 12)
    assert len({len(r) for r in rows}) > 1  # rows ended at different steps
    for r in range(6):
        alone = greedy_decode(model, src[r:r + 1], mask[r:r + 1], int(limits[r]))[0]
        assert short[r] == alone


# ---- what the numbers say, and the shipped atlas ------------------------------------------------------

def synthetic_atlas(L=2, H=3):
    zeros = [[0.0] * H for _ in range(L)]
    heads = {k: {m: copy.deepcopy(zeros) for m in (atlas_mod.SELF_MEASURES if k != "cross" else
                                                    atlas_mod.CROSS_MEASURES) + ("delta_loss", "delta_bleu")}
             for k in KINDS}
    heads["encoder"]["previous"][1][2] = 0.9
    heads["cross"]["diagonal"][0][1] = 0.7
    heads["cross"]["agreement"][0][1] = 0.6
    heads["decoder"]["delta_loss"][1][0], heads["decoder"]["delta_bleu"][1][0] = 0.25, -3.5
    layers = {k: [{"best_head": lay, "delta_loss_all_but_best_off": 0.1 * (lay + 1) + 0.01 * KINDS.index(k)}
                  for lay in range(L)] for k in KINDS}
    return {"model": {"layers": L, "heads": H}, "baseline": {"loss": 1.5, "bleu": 40.0}, "heads": heads,
            "layers": layers}


def test_findings_are_written_from_the_numbers():
    text = "\n".join(say(f) for f in atlas_mod.findings(synthetic_atlas()))
    assert "In encoder self-attention, 1 head put at least 50% of their attention on the previous source token: " \
           "1.2 (90%)." in text
    assert "0.1 (70%, agreeing with its layer's average head on 60% of rows)" in text
    assert "decoder self-attention 1.0 (loss +0.250 nats per token, BLEU -3.5)" in text
    assert "17 of the 18 heads can go alone" in text
    assert ("the loss rises least for encoder self-attention layer 0 (head 0 kept: +0.100), decoder self-attention "
            "layer 0 (head 0 kept: +0.110) and most for cross-attention layer 1 (head 1 kept: +0.220)") in text
    assert "decoder self-attention, 1 head" not in text  # no decoder head looks at the previous token here


@pytest.mark.skipif(not (ASSETS / "heads.json").exists(), reason="no assets/heads.json yet")
def test_shipped_atlas_is_small_complete_and_in_range():
    path = ASSETS / "heads.json"
    assert path.stat().st_size < 40_000
    atlas = json.loads(path.read_text(encoding="utf-8"))
    assert atlas["model"] == {"layers": 3, "heads": 8} and atlas["data"]["split"] == "val"
    assert atlas["data"]["sentences"] == atlas["data"]["bleu_sentences"] == 1014  # the whole validation set
    for kind in KINDS:
        measures = set(atlas_mod.SELF_MEASURES if kind != "cross" else atlas_mod.CROSS_MEASURES)
        if kind == "decoder":
            measures.discard("eos")  # the decoder's input holds no </s>
        assert set(atlas["heads"][kind]) == measures | {"delta_loss", "delta_bleu"}
        for name, grid in atlas["heads"][kind].items():
            assert len(grid) == 3 and all(len(row) == 8 for row in grid)
            if atlas["measures"][name]["unit"] == "share":
                assert all(0 <= v <= 1 for row in grid for v in row), (kind, name)
    assert 30 < atlas["baseline"]["bleu"] < 60 and atlas["seconds"] > 0
    assert len(atlas_mod.findings(atlas)) >= 4
