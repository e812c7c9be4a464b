"""Multi30k German->English: raw files, the joint SentencePiece vocabulary, batches and their masks."""
import gzip
import io
import os
import random
import urllib.request
from pathlib import Path

import torch

from .model import subsequent_mask

REPO_ROOT = Path(__file__).resolve().parent.parent
ASSETS = REPO_ROOT / "assets"
# Where a connected user gets the raw files: the dataset's public repository (task 1, raw).
MULTI30K_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/"
SPLITS = ("train", "val", "test_2016_flickr")
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "transformer-explorer" / "multi30k"

PAD, UNK, BOS, EOS = 0, 1, 2, 3


def default_data_dir():
    """$MULTI30K_DIR, else ../shared/data/multi30k beside the repo when present, else the download cache."""
    if os.environ.get("MULTI30K_DIR"):
        return Path(os.environ["MULTI30K_DIR"])
    shared = REPO_ROOT.parent / "shared" / "data" / "multi30k"
    return shared if shared.is_dir() else CACHE_DIR


def nonblank_lines(text):
    """The lines of a text that hold anything, stripped (example files, user input, probe sentences)."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def read_lines(path):
    """Lines of a text file, gzipped or plain, without their line ends."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def split_file(data_dir, split, lang, download=False):
    """Path of `split.lang` (gzipped or plain) in data_dir; with download=True fetch it when missing."""
    data_dir = Path(data_dir)
    for name in (f"{split}.{lang}.gz", f"{split}.{lang}"):
        if (data_dir / name).exists():
            return data_dir / name
    if not download:
        raise FileNotFoundError(
            f"{split}.{lang}(.gz) not in {data_dir}; pass download=True (or --download) to fetch it "
            f"from {MULTI30K_URL}")
    data_dir.mkdir(parents=True, exist_ok=True)
    target = data_dir / f"{split}.{lang}.gz"
    urllib.request.urlretrieve(MULTI30K_URL + target.name, target)
    return target


def load_split(data_dir, split, download=False):
    """The aligned (German, English) sentence pairs of one split."""
    de = read_lines(split_file(data_dir, split, "de", download))
    en = read_lines(split_file(data_dir, split, "en", download))
    if len(de) != len(en):
        raise ValueError(f"{split}: {len(de)} German lines but {len(en)} English lines")
    return list(zip(de, en))


def train_tokenizer(sentences, model_path, vocab_size=8000):
    """A joint (German+English) SentencePiece unigram model with fixed pad/unk/bos/eos ids."""
    import sentencepiece as spm
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=buf, vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, pad_id=PAD, unk_id=UNK, bos_id=BOS, eos_id=EOS,
        pad_piece="<pad>", unk_piece="<unk>", bos_piece="<s>", eos_piece="</s>",
        input_sentence_size=1_000_000, shuffle_input_sentence=True, num_threads=2,
        minloglevel=2)
    Path(model_path).write_bytes(buf.getvalue())
    return load_tokenizer(model_path)


def load_tokenizer(model_path=ASSETS / "spm.model"):
    import sentencepiece as spm
    return spm.SentencePieceProcessor(model_file=str(model_path))


def encode_pairs(sp, pairs, max_len=None):
    """Token ids of each pair, as <s> ... </s> on both sides (longer sentences cut to max_len)."""
    out = []
    src_ids = sp.encode([p[0] for p in pairs])
    tgt_ids = sp.encode([p[1] for p in pairs])
    for s, t in zip(src_ids, tgt_ids):
        if max_len:
            s, t = s[:max_len - 2], t[:max_len - 2]
        out.append(([BOS] + s + [EOS], [BOS] + t + [EOS]))
    return out


def pad_to(seqs, pad=PAD):
    """A (len(seqs), max_len) LongTensor of the sequences, right-padded."""
    width = max(len(s) for s in seqs)
    out = torch.full((len(seqs), width), pad, dtype=torch.long)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


class Batch:
    """A batch with its masks: the source padding mask, and for training the teacher-forcing shift
    (`tgt[:, :-1]` in, `tgt[:, 1:]` out) with the target padding mask & the subsequent mask."""

    def __init__(self, src, tgt=None, pad=PAD):
        self.src = src
        self.src_mask = (src != pad).unsqueeze(-2)  # (B, 1, S)
        if tgt is not None:
            self.tgt = tgt[:, :-1]
            self.tgt_y = tgt[:, 1:]
            self.tgt_mask = self.make_std_mask(self.tgt, pad)  # (B, T, T)
            self.ntokens = int((self.tgt_y != pad).sum())

    @staticmethod
    def make_std_mask(tgt, pad):
        """Hide padding and future words."""
        tgt_mask = (tgt != pad).unsqueeze(-2)
        return tgt_mask & subsequent_mask(tgt.size(-1)).type_as(tgt_mask)

    def to(self, device):
        for name in ("src", "src_mask", "tgt", "tgt_y", "tgt_mask"):
            if hasattr(self, name):
                setattr(self, name, getattr(self, name).to(device, non_blocking=True))
        return self


def collate(examples, pad=PAD):
    return Batch(pad_to([e[0] for e in examples], pad), pad_to([e[1] for e in examples], pad), pad)


class BatchLoader:
    """Batches of examples given as index lists (token_batches' output), collated and moved to the device
    one at a time as they are read; len() is the number of batches."""

    def __init__(self, examples, batches, device="cpu"):
        self.examples = examples
        self.batches = batches
        self.device = device

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        for idx in self.batches:
            yield collate([self.examples[i] for i in idx]).to(self.device)


def token_batches(examples, max_tokens, shuffle=True, seed=0):
    """Indices of batches of pairs of similar length, each up to max_tokens padded tokens per side
    ("sentence pairs were batched together by approximate sequence length")."""
    rng = random.Random(seed)
    order = list(range(len(examples)))
    if shuffle:
        rng.shuffle(order)  # random tie-break among equal lengths
    order.sort(key=lambda i: (len(examples[i][0]), len(examples[i][1])))
    batches, cur, width = [], [], 0
    for i in order:
        w = max(width, len(examples[i][0]), len(examples[i][1]))
        if cur and w * (len(cur) + 1) > max_tokens:
            batches.append(cur)
            cur, w = [], max(len(examples[i][0]), len(examples[i][1]))
        cur.append(i)
        width = w
    if cur:
        batches.append(cur)
    if shuffle:
        rng.shuffle(batches)
    return batches


def sentence_batches(examples, batch_size, shuffle=True, seed=0):
    """Indices of fixed batches of batch_size pairs in random order (the plain alternative)."""
    order = list(range(len(examples)))
    if shuffle:
        random.Random(seed).shuffle(order)
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def padding_stats(examples, batches):
    """Padding fraction and real tokens per batch of a batching (source and target sides together)."""
    real = padded = 0
    per_batch = []
    for b in batches:
        s = [len(examples[i][0]) for i in b]
        t = [len(examples[i][1]) for i in b]
        n_real = sum(s) + sum(t)
        real += n_real
        padded += max(s) * len(s) + max(t) * len(t)
        per_batch.append(n_real)
    mean = sum(per_batch) / len(per_batch)
    std = (sum((x - mean) ** 2 for x in per_batch) / len(per_batch)) ** 0.5
    return {"batches": len(batches), "padding_fraction": 1 - real / padded,
            "tokens_per_batch_mean": mean, "tokens_per_batch_std": std}


def length_stats(lengths):
    """How long the sentences are (each a count of pieces): how many, the median, the 99th percentile and the
    longest; each percentile is the nearest-rank one (a length some sentence has)."""
    ordered = sorted(lengths)
    if not ordered:
        raise ValueError("no sentences to measure")

    def rank(q):  # the smallest length that at least a share q of the sentences do not exceed
        return ordered[max(0, -(-len(ordered) * q // 100) - 1)]

    return {"sentences": len(ordered), "median": rank(50), "p99": rank(99), "max": ordered[-1]}


def source_lengths(examples):
    """length_stats of the source sides of encoded pairs (each counted as the model reads it: <s> ... </s>)."""
    return length_stats(len(src) for src, _ in examples)


def write_source_lengths(model_dir, data_dir=None):
    """Measure the training sources of the model in `model_dir` (its tokenizer, its cut) and keep the figures in
    its batching.json under "source_pieces", where the app reads them (a sentence longer than any it was trained
    on is flagged). Returns them."""
    import json
    model_dir = Path(model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    sp = load_tokenizer(model_dir / config.get("tokenizer", "spm.model"))
    train = load_split(data_dir or default_data_dir(), "train")
    stats = source_lengths(encode_pairs(sp, train, int(config.get("max_src_tokens", 128))))
    path = model_dir / "batching.json"
    kept = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps(dict(kept, source_pieces=stats), indent=2) + "\n")
    return stats


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description="Measure a model's training sources and keep the figures in its "
                                                 "batching.json (python -m core.data assets).")
    parser.add_argument("model_dir", nargs="?", default=str(ASSETS))
    parser.add_argument("--data-dir", default=None, help="Multi30k's files (default: ../shared/data/multi30k)")
    print(write_source_lengths(**vars(parser.parse_args())))
