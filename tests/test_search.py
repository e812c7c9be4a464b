"""The search behind a translation (core/analysis/searchtree.py, core/decode.py) and the model's view of any English:
the beam search tree against beam_search itself and direct log-probabilities, forced prefixes, and scores."""
import pytest
import torch

from core.analysis import searchtree
from core.analysis.searchtree import SearchTree
from core.data import BOS, EOS, PAD
from core.decode import beam_search, greedy_decode, length_penalty
from core.model import make_model, subsequent_mask
from tests.conftest import needs_shipped

V = 24


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(3)
    return make_model(V, V, N=2, d_model=32, d_ff=64, h=4, dropout=0.0).eval()


def sources(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [[BOS] + torch.randint(4, V, (int(torch.randint(3, 9, (1,), generator=g)),), generator=g).tolist() + [EOS]
            for _ in range(n)]


def search(model, src_ids, beam, alpha=0.6, max_len=12, prefix=None):
    src = torch.tensor([src_ids])
    tree = SearchTree()
    out = beam_search(model, src, (src != PAD).unsqueeze(-2), max_len, beam=beam, alpha=alpha, tree=tree,
                      prefix=prefix)
    return tree, out[0]


def direct_log_prob(model, src_ids, ids):
    """log P(ids | source) by the model's full masked decode, token by token, in float64."""
    src = torch.tensor([src_ids])
    tgt = torch.tensor([[BOS] + ids[:-1]]) if ids else None
    mask = (src != PAD).unsqueeze(-2)
    with torch.no_grad():
        out = model.decode(model.encode(src, mask), mask, tgt, subsequent_mask(tgt.size(1)))
        logp = torch.log_softmax(model.generator.proj(out).double(), dim=-1)[0]
    return sum(logp[i, t].item() for i, t in enumerate(ids))


@pytest.mark.parametrize("beam", [1, 2, 4, 8])
def test_the_tree_returns_what_beam_search_returns(tiny, beam):
    for src_ids in sources(6, seed=beam):
        tree, out = search(tiny, src_ids, beam)
        returned = tree.returned
        assert returned is not None
        path = tree.path(returned.id)
        assert (path[:-1] if path[-1] == EOS else path) == out
        finished = [n for n in tree.nodes if n.status in ("finished", "returned")]
        if returned.status == "returned" and returned.token == EOS:
            assert returned.norm == max(n.norm for n in finished)


def test_every_node_scores_the_sum_of_its_tokens_log_probabilities(tiny):
    tree, _ = search(tiny, sources(1, seed=7)[0], beam=4)
    src_ids = sources(1, seed=7)[0]
    for node in tree.nodes[1:]:
        parent = tree.nodes[node.parent]
        assert node.score == pytest.approx(parent.score + node.logp, abs=1e-5)
        assert node.score == pytest.approx(direct_log_prob(tiny, src_ids, tree.path(node.id)), abs=1e-4)
        if node.norm is not None:
            assert node.norm == pytest.approx(node.score / length_penalty(node.step, 0.6))
    steps = {n.step for n in tree.nodes[1:]}
    assert all(sum(n.status == "kept" for n in tree.nodes if n.step == s) <= 4 for s in steps)


def test_beam_size_one_is_greedy_decoding(tiny):
    for src_ids in sources(8, seed=11):
        src = torch.tensor([src_ids])
        mask = (src != PAD).unsqueeze(-2)
        assert search(tiny, src_ids, 1)[1] == greedy_decode(tiny, src, mask, 12)[0]


def test_a_forced_prefix_starts_every_output(tiny):
    srcs = sources(4, seed=5)
    src = torch.full((4, max(map(len, srcs))), PAD)
    for i, s in enumerate(srcs):
        src[i, :len(s)] = torch.tensor(s)
    mask = (src != PAD).unsqueeze(-2)
    prefixes = [[7, 8, 9], [], [10], [11, 12]]
    for out in (greedy_decode(tiny, src, mask, 12, prefix=prefixes),
                beam_search(tiny, src, mask, 12, beam=3, prefix=prefixes)):
        for o, p in zip(out, prefixes):
            assert o[:len(p)] == p
    # without a prefix the row decodes as it would alone
    assert greedy_decode(tiny, src, mask, 12, prefix=prefixes)[1] == greedy_decode(tiny, src, mask, 12)[1]


@needs_shipped
def test_the_shipped_model_continues_after_a_prefix_and_scores_any_english():
    from app.shared import get_translator
    tr = get_translator()
    text = "Ein Mann fährt mit dem Fahrrad über eine Brücke."
    for beam in (1, 4):
        out = tr.translate(text, beam=beam, prefix="A woman")
        assert out.startswith("A woman") and len(out) > len("A woman ")
    mine = "A man rides his bike over a bridge."
    total, per_token = tr.score(text, mine)
    assert per_token[-1][0] == "</s>" and total == pytest.approx(sum(v for _, v in per_token))
    src_ids = tr.encode_source(text)[0]
    ids = tr.tokenizer.encode(mine) + [EOS]
    assert total == pytest.approx(direct_log_prob(tr.model, src_ids, ids), abs=1e-3)
    both = tr.score([text, text], [mine, "A bridge."])  # a batch, padded: the same numbers as alone
    assert both[0][0] == pytest.approx(total, abs=1e-4) and both[1][0] < total
    tree = searchtree.search(tr, text, beam=4)
    assert tr.tokenizer.decode(tree.path(tree.returned.id)[:-1]) == tr.translate(text, beam=4)
