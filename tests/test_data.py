"""Data pipeline: reading raw files, the tokenizer's special ids, masks, batching, padding statistics."""
import pytest
import torch

from core.data import (
    BOS,
    EOS,
    MULTI30K_URL,
    PAD,
    UNK,
    Batch,
    BatchLoader,
    collate,
    encode_pairs,
    length_stats,
    load_split,
    pad_to,
    padding_stats,
    sentence_batches,
    split_file,
    token_batches,
    write_source_lengths,
)
from tests.conftest import SHARED_DATA, needs_data, synthetic_pairs


def test_reads_gzipped_and_plain_splits(tiny_data):
    """Each split comes back as the (German, English) pairs written, line by line, in order."""
    assert load_split(tiny_data, "train") == synthetic_pairs(400, 1)  # .gz
    assert load_split(tiny_data, "test_2016_flickr") == synthetic_pairs(40, 3)  # plain text


def test_missing_files_name_the_download_source(tmp_path):
    with pytest.raises(FileNotFoundError, match="multi30k/dataset"):
        split_file(tmp_path, "train", "de")
    assert MULTI30K_URL.endswith("/data/task1/raw/")


def test_tokenizer_special_ids(tiny_spm):
    sp, _ = tiny_spm
    assert (sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id()) == (PAD, UNK, BOS, EOS)
    assert sp.id_to_piece(BOS) == "<s>" and sp.id_to_piece(EOS) == "</s>"
    assert sp.decode(sp.encode("Der Hund läuft im Park.")) == "Der Hund läuft im Park."


def test_batch_masks_and_teacher_forcing_shift():
    src = pad_to([[2, 5, 6, 3], [2, 7, 3]])
    tgt = pad_to([[2, 8, 9, 10, 3], [2, 11, 3]])
    b = Batch(src, tgt, pad=PAD)
    assert torch.equal(b.src_mask, torch.tensor([[[1, 1, 1, 1]], [[1, 1, 1, 0]]], dtype=torch.bool))
    assert torch.equal(b.tgt, tgt[:, :-1]) and torch.equal(b.tgt_y, tgt[:, 1:])
    assert b.ntokens == 4 + 2
    # second sentence: decoder input <s> 11 </s> <pad>: causal, and never a padded key
    expected = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 0]], dtype=torch.bool)
    assert torch.equal(b.tgt_mask[1], expected)
    assert torch.equal(b.tgt_mask[0], torch.tril(torch.ones(4, 4, dtype=torch.bool)))


def test_token_batches_cover_everything_within_budget():
    g = torch.Generator().manual_seed(0)
    examples = [([2] * int(torch.randint(3, 40, (1,), generator=g)), [2] * int(torch.randint(3, 40, (1,), generator=g)))
                for _ in range(500)]
    batches = token_batches(examples, 300, seed=1)
    flat = sorted(i for b in batches for i in b)
    assert flat == list(range(500))
    for b in batches:
        width = max(max(len(examples[i][0]), len(examples[i][1])) for i in b)
        assert width * len(b) <= 300 or len(b) == 1
    fixed = sentence_batches(examples, round(500 / len(batches)), seed=1)
    assert padding_stats(examples, batches)["padding_fraction"] < padding_stats(examples, fixed)["padding_fraction"]


def test_batch_loader_collates_each_index_list_in_order(tiny_spm):
    sp, _ = tiny_spm
    examples = encode_pairs(sp, [("Der Hund.", "A dog."), ("Die alte Katze schläft.", "An old cat sleeps."),
                                 ("Ein Kind.", "A child.")])
    loader = BatchLoader(examples, [[2, 0], [1]])
    assert len(loader) == 2
    first, second = loader
    expected = collate([examples[2], examples[0]])
    assert torch.equal(first.src, expected.src) and torch.equal(first.tgt_y, expected.tgt_y)
    assert torch.equal(first.tgt_mask, expected.tgt_mask) and first.ntokens == expected.ntokens
    assert second.src.tolist() == [examples[1][0]] and second.tgt.tolist() == [examples[1][1][:-1]]
    assert len(list(loader)) == 2  # read again from the start


def test_padding_stats_by_hand():
    examples = [([1, 1], [1, 1, 1]), ([1, 1, 1, 1], [1])]
    s = padding_stats(examples, [[0, 1]])
    # source 2x4 = 8 slots with 6 real, target 2x3 = 6 slots with 4 real
    assert s["padding_fraction"] == pytest.approx(1 - 10 / 14)
    assert s["tokens_per_batch_mean"] == 10 and s["batches"] == 1


def test_encode_pairs_adds_bos_eos_and_cuts(tiny_spm):
    sp, _ = tiny_spm
    (src, tgt), = encode_pairs(sp, [("Der Hund läuft im Park.", "A dog runs in the park.")])
    assert src[0] == BOS and src[-1] == EOS and tgt[0] == BOS and tgt[-1] == EOS
    (src, _), = encode_pairs(sp, [("Der Hund läuft im Park. " * 20, "x")], max_len=10)
    assert len(src) == 10 and src[-1] == EOS
    b = collate(encode_pairs(sp, [("Der Hund.", "A dog."), ("Die alte Katze schläft.", "An old cat sleeps.")]))
    assert b.src.shape[0] == 2


@needs_data
def test_real_multi30k_splits_have_published_sizes():
    sizes = {s: len(load_split(SHARED_DATA, s)) for s in ("train", "val", "test_2016_flickr")}
    assert sizes == {"train": 29000, "val": 1014, "test_2016_flickr": 1000}


def test_length_stats_are_nearest_ranks():
    """Each figure is a length some sentence has, and at least that share of the sentences is no longer."""
    s = length_stats(range(100, 0, -1))
    assert s == {"sentences": 100, "median": 50, "p99": 99, "max": 100}
    assert length_stats([7]) == {"sentences": 1, "median": 7, "p99": 7, "max": 7}
    lengths = [3, 3, 4, 9, 9, 9, 30]
    s = length_stats(lengths)
    for key, share in (("median", 0.5), ("p99", 0.99)):
        assert s[key] in lengths and sum(x <= s[key] for x in lengths) >= share * len(lengths)
        assert sum(x < s[key] for x in lengths) < share * len(lengths)  # the smallest such length
    with pytest.raises(ValueError):
        length_stats([])


@needs_data
def test_the_shipped_source_lengths_are_measured_on_the_training_set(tmp_path):
    """The figures the app flags a long sentence by (assets/batching.json "source_pieces") are the shipped
    tokenizer's pieces of Multi30k's training sources, as the model read them, and measuring keeps the rest of the
    file."""
    import json
    import shutil

    from core.data import ASSETS
    for name in ("config.json", "spm.model", "batching.json"):
        shutil.copyfile(ASSETS / name, tmp_path / name)
    shipped = json.loads((ASSETS / "batching.json").read_text())
    assert write_source_lengths(tmp_path, SHARED_DATA) == shipped["source_pieces"]
    assert json.loads((tmp_path / "batching.json").read_text()) == shipped
    assert shipped["source_pieces"]["sentences"] == 29000
