"""Decoding: cached greedy equals the uncached reference loop; beam search finds the exact best
sequence when the beam covers every hypothesis; sampling respects top-k."""
import itertools

import torch

from core.data import BOS, EOS
from core.decode import (IncrementalDecoder, beam_search, greedy_decode, greedy_decode_modules,
                         greedy_decode_uncached, length_penalty, sample_decode)
from core.model import make_model, subsequent_mask


def random_model(vocab=12, seed=0):
    torch.manual_seed(seed)
    model = make_model(vocab, vocab, N=2, d_model=32, d_ff=64, h=4, dropout=0.0).eval()
    with torch.no_grad():  # sharpen the output distribution so decoding paths differ
        model.generator.proj.bias.copy_(torch.randn(vocab) * 2)
    return model


def src_batch(vocab=12, B=3, S=6, seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, vocab, (B, S), generator=g)
    src[0, -2:] = 0  # padding in the first sentence
    return src, (src != 0).unsqueeze(-2)


def test_cached_greedy_equals_uncached_reference():
    for seed in range(3):
        model = random_model(seed=seed)
        src, mask = src_batch(seed=seed)
        ref = greedy_decode_uncached(model, src, mask, 12)
        assert greedy_decode(model, src, mask, 12) == ref
        assert greedy_decode_modules(model, src, mask, 12) == ref


def test_incremental_decoder_equals_the_modules_teacher_forced():
    """Each flat step gives the decoder's output at that position, as the full masked decode computes it."""
    from core.model import half_precision_decoder
    model = random_model(vocab=30, seed=5)
    src, mask = src_batch(vocab=30, B=3, S=6, seed=6)  # padding in the first sentence
    tgt = torch.randint(4, 30, (3, 7), generator=torch.Generator().manual_seed(7))
    for m, tol in ((model, 1e-5), (half_precision_decoder(model), 1e-2)):
        with torch.no_grad():
            memory = m.encode(src, mask)
            full = m.decode(memory, mask, tgt, subsequent_mask(7))  # (B, T, D)
            dec = IncrementalDecoder(m, memory, mask, 7)
            steps = torch.stack([dec.step(tgt[:, t]) for t in range(7)], 1)
        torch.testing.assert_close(steps.float(), full.float(), atol=tol, rtol=tol)
    with torch.no_grad():  # reordering rows = decoding the reordered batch
        memory = model.encode(src, mask)
        dec = IncrementalDecoder(model, memory, mask, 7)
        for t in range(3):
            dec.step(tgt[:, t])
        index = torch.tensor([2, 2, 0])
        dec.reorder(index)
        got = dec.step(tgt[index, 3])
        full = model.decode(memory[index], mask[index], tgt[index, :4], subsequent_mask(4))[:, -1]
    torch.testing.assert_close(got, full, atol=1e-5, rtol=1e-5)


def sequence_logprob(model, src, mask, ids):
    tgt = torch.tensor([[BOS] + ids[:-1]])
    with torch.no_grad():
        out = model.decode(model.encode(src, mask), mask, tgt, subsequent_mask(tgt.size(1)))
        logp = model.generator(out)[0]
    return logp.gather(1, torch.tensor(ids).unsqueeze(1)).sum().item()


def test_beam_search_is_exact_when_the_beam_covers_everything():
    vocab, max_len = 6, 3
    model = random_model(vocab, seed=3)
    src, mask = src_batch(vocab, B=1, S=4, seed=4)
    mask = torch.ones_like(mask)
    for alpha in (0.0, 0.6):
        best, best_seq = float("-inf"), None
        for n in range(max_len):  # every sequence ending in </s> within max_len steps
            for body in itertools.product([t for t in range(vocab) if t != EOS], repeat=n):
                ids = list(body) + [EOS]
                s = sequence_logprob(model, src, mask, ids) / length_penalty(len(ids), alpha)
                if s > best:
                    best, best_seq = s, list(body)
        got = beam_search(model, src, mask, max_len, beam=200, alpha=alpha)[0]
        assert got == best_seq, (alpha, got, best_seq)


def test_beam_of_one_matches_greedy_and_batching_does_not_change_results():
    model = random_model(seed=5)
    src, mask = src_batch(seed=5)
    assert beam_search(model, src, mask, 10, beam=1, alpha=0.0) == greedy_decode(model, src, mask, 10)
    batched = beam_search(model, src, mask, 10, beam=3)
    single = [beam_search(model, src[i:i + 1, :int(mask[i].sum())], mask[i:i + 1, :, :int(mask[i].sum())], 10,
                          beam=3)[0] for i in range(src.size(0))]
    assert batched == single


def test_beam_search_scores_at_least_greedy_on_average():
    """Not guaranteed per sentence, but over many sentences a beam of 4 finds more probable outputs."""
    model = random_model(seed=6)
    wins = 0
    for seed in range(8):
        src, mask = src_batch(B=1, seed=seed)
        g = greedy_decode(model, src, mask, 8)[0] + [EOS]
        b = beam_search(model, src, mask, 8, beam=4, alpha=0.0)[0] + [EOS]
        wins += sequence_logprob(model, src, mask, b) >= sequence_logprob(model, src, mask, g) - 1e-5
    assert wins >= 7


def test_sampling_with_top_k_one_is_greedy_and_seed_is_reproducible():
    model = random_model(seed=7)
    src, mask = src_batch(seed=7)
    assert sample_decode(model, src, mask, 10, top_k=1, seed=0) == greedy_decode(model, src, mask, 10)
    a = sample_decode(model, src, mask, 10, temperature=1.5, seed=42)
    b = sample_decode(model, src, mask, 10, temperature=1.5, seed=42)
    assert a == b


def test_half_precision_decoder_greedy_cached_equals_its_uncached_loop():
    from core.model import half_precision_decoder
    for seed in range(3):
        half = half_precision_decoder(random_model(seed=seed))
        src, mask = src_batch(seed=seed)
        assert greedy_decode(half, src, mask, 12) == greedy_decode_uncached(half, src, mask, 12)
