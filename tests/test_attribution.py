"""Attribution of one output token (core/analysis/attribution.py): gradient x input against finite differences in float64,
occlusion against single forward passes and a constructed case where a piece cannot matter."""
import pytest
import torch

from core.analysis.attribution import attribute
from core.data import BOS, EOS, UNK
from core.model import make_model, subsequent_mask


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = make_model(30, 30, N=2, d_model=16, d_ff=32, h=4, dropout=0.0).double().eval()
    return model, [BOS, 5, 9, 7, 12, EOS], [BOS, 8, 4, 11]


def log_prob(model, src_vectors, tgt_vectors, position, token):
    """log p(token) at `position` from the model's modules, embeddings given, in float64 throughout (the
    model's Generator returns float32, too coarse for a finite difference)."""
    src_mask = torch.ones(1, 1, src_vectors.size(1), dtype=torch.bool)
    memory = model.encoder(model.src_embed[1](src_vectors), src_mask)
    out = model.decoder(model.tgt_embed[1](tgt_vectors), memory, src_mask, subsequent_mask(tgt_vectors.size(1)))
    return torch.log_softmax(model.generator.proj(out[:, position]), dim=-1)[0, token]


def test_gradient_x_input_is_the_derivative_of_scaling_each_piece(tiny):
    """For piece j, grad_j . e_j = d/d(eps) log p(y) with e_j scaled by (1 + eps), at eps = 0."""
    model, src_ids, tgt_ids = tiny
    position = 2
    att = attribute(model, src_ids, tgt_ids, position)
    e_src = model.src_embed[0](torch.tensor([src_ids])).detach()
    e_tgt = model.tgt_embed[0](torch.tensor([tgt_ids[:position + 1]])).detach()
    h = 1e-6

    def scaled(e, j, eps):
        e = e.clone()
        e[0, j] *= 1 + eps
        return e

    for j in range(len(src_ids)):
        fd = (log_prob(model, scaled(e_src, j, h), e_tgt, position, att.token)
              - log_prob(model, scaled(e_src, j, -h), e_tgt, position, att.token)) / (2 * h)
        assert att.grad_src[j].item() == pytest.approx(fd.item(), rel=1e-4, abs=1e-7)
    for j in range(position + 1):
        fd = (log_prob(model, e_src, scaled(e_tgt, j, h), position, att.token)
              - log_prob(model, e_src, scaled(e_tgt, j, -h), position, att.token)) / (2 * h)
        assert att.grad_tgt[j].item() == pytest.approx(fd.item(), rel=1e-4, abs=1e-7)


def test_occlusion_equals_one_forward_pass_per_occluded_piece(tiny):
    model, src_ids, tgt_ids = tiny
    position, token = 3, 6
    att = attribute(model, src_ids, tgt_ids, position, token=token)

    def p(src, tgt):
        s, t = torch.tensor([src]), torch.tensor([tgt[:position + 1]])
        out = model(s, t, torch.ones(1, 1, len(src), dtype=torch.bool), subsequent_mask(position + 1))
        return torch.log_softmax(model.generator.proj(out[:, position]), dim=-1)[0, token].exp().item()

    base = p(src_ids, tgt_ids)
    assert att.probability == pytest.approx(base, rel=1e-6)  # the Generator rounds to float32
    for j in range(len(src_ids)):
        occluded = src_ids[:j] + [UNK] + src_ids[j + 1:]
        assert att.occl_src[j].item() == pytest.approx(base - p(occluded, tgt_ids), abs=1e-7)
    assert att.occl_tgt[0].item() == 0.0
    for j in range(1, position + 1):
        occluded = tgt_ids[:j] + [UNK] + tgt_ids[j + 1:]
        assert att.occl_tgt[j].item() == pytest.approx(base - p(src_ids, occluded), abs=1e-7)


def test_a_piece_the_output_cannot_depend_on_gets_zero(tiny):
    """A source piece whose embedding is the <unk> embedding: replacing it by <unk> changes nothing."""
    model, src_ids, tgt_ids = tiny
    with torch.no_grad():
        lut = model.src_embed[0].lut.weight
        saved = lut[src_ids[2]].clone()
        lut[src_ids[2]] = lut[UNK]
    try:
        att = attribute(model, src_ids, tgt_ids, 2)
        assert att.occl_src[2].item() == 0.0
        assert (att.occl_src.abs() > 0).sum() >= len(src_ids) - 2  # the other pieces do matter
    finally:
        with torch.no_grad():
            lut[src_ids[2]] = saved


def test_only_pieces_before_the_position_matter(tiny):
    """The subsequent mask: target pieces after the position do not change the attribution."""
    model, src_ids, tgt_ids = tiny
    a = attribute(model, src_ids, tgt_ids, 1, token=4)
    b = attribute(model, src_ids, tgt_ids[:2] + [13, 14], 1, token=4)
    assert torch.equal(a.grad_src, b.grad_src) and torch.equal(a.occl_tgt, b.occl_tgt)
    assert len(a.grad_tgt) == 2
