"""Saving and loading the model the Hugging Face way: config.json + safetensors weights.

Weights ship in float16 and are split into shards under a size limit (each file of a Space repo stays
under 10 MB without LFS), with the usual `model.safetensors.index.json` naming each tensor's shard.

A run's history ships beside the model as snapshots (`snapshots/`, listed oldest first in its `index.json`): each
one's weights stored as their difference from the shipped model, in 8 or 4 bits per weight with a float16 scale
per group of GROUP weights of a row (`encode_snapshot`), so that one snapshot file stays under the same limit.
"""
import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from .model import ACTIVATIONS, make_model

MODEL_KEYS = ("src_vocab", "tgt_vocab", "N", "d_model", "d_ff", "h", "dropout", "max_len", "tie_weights",
              "norm", "layer_norm_eps", "activation", "pe_layout", "scale_embedding")
REQUIRED_KEYS = ("src_vocab", "tgt_vocab", "N", "d_model", "d_ff", "h")
# the model's variants (core.model.make_model): each key's allowed values; absent, the Annotated Transformer's
CHOICES = {"norm": ("pre", "post"), "activation": tuple(ACTIVATIONS), "pe_layout": ("interleaved", "halves"),
           "scale_embedding": (True, False), "tie_weights": (True, False)}
INDEX = "model.safetensors.index.json"
HOW_TO_FIX = ("To get a good copy: `git checkout assets/` restores the shipped model; a model of your own is "
              "written by `python -m core.train --run-dir RUN --export-to DIR`.")


class AssetError(ValueError):
    """A file of a saved model that cannot be used: the message names the file, says what is wrong with it and
    how to get a good copy."""

    def __init__(self, path, problem):
        self.path = Path(path)
        super().__init__(f"{self.path}: {problem}. {HOW_TO_FIX}")


def read_json(path, what):
    """A JSON object from `path`, or an AssetError that says why it cannot be read."""
    path = Path(path)
    if not path.is_file():
        raise AssetError(path, f"the {what} is missing")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise AssetError(path, f"the {what} is not text (the file is damaged)") from None
    except json.JSONDecodeError as e:
        raise AssetError(path, f"the {what} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    if not isinstance(value, dict):
        raise AssetError(path, f"the {what} should be a JSON object, not {type(value).__name__}")
    return value


def read_shard(path):
    """The tensors of one safetensors file (nothing is unpickled), or an AssetError naming it."""
    path = Path(path)
    if not path.is_file():
        raise AssetError(path, "this file of weights is missing")
    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError) as e:
        raise AssetError(path, f"this file of weights is damaged or truncated ({e})") from None


def model_from_config(config, init=True):
    """The model a config names; init=False skips the Xavier init, for weights about to be loaded."""
    return make_model(**{k: config[k] for k in MODEL_KEYS if k in config}, init=init)


def unique_state(model):
    """The state dict with each tied tensor once (safetensors refuses shared storage)."""
    seen, state = {}, {}
    for name, tensor in model.state_dict().items():
        key = (tensor.data_ptr(), tensor.shape)
        if key in seen:
            continue
        seen[key] = name
        state[name] = tensor
    return state


def split_rows(state, max_bytes):
    """{name: tensor} with each tensor over max_bytes cut into blocks of rows under it, named `name:part0`,
    `name:part1`, ... (a 58k-piece embedding does not fit in one 10 MB file); join_rows puts them together."""
    out = {}
    for name, t in state.items():
        n = t.numel() * t.element_size()
        if n <= max_bytes or t.dim() == 0:
            out[name] = t
            continue
        rows = max(1, max_bytes // (n // t.size(0)))
        for i, block in enumerate(t.split(rows)):
            out[f"{name}:part{i}"] = block.contiguous()
    return out


def join_rows(state):
    """The tensors split_rows cut, put back together (in the order of their parts)."""
    parts = {}
    for key in [k for k in state if ":part" in k]:
        name, _, i = key.rpartition(":part")
        parts.setdefault(name, {})[int(i)] = state.pop(key)
    for name, blocks in parts.items():
        state[name] = torch.cat([blocks[i] for i in range(len(blocks))])
    return state


def save_pretrained(model, config, directory, dtype=torch.float16, max_shard_bytes=9_000_000):
    """Write config.json and the weights (sharded when above max_shard_bytes, a tensor larger than that cut into
    blocks of rows) into `directory`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for old in list(directory.glob("model*.safetensors")) + [directory / INDEX]:
        old.unlink(missing_ok=True)
    state = {k: v.detach().to(dtype).contiguous().cpu() for k, v in unique_state(model).items()}
    state = split_rows(state, max_shard_bytes)
    shards, cur, size = [], {}, 0
    for name, t in state.items():
        n = t.numel() * t.element_size()
        if cur and size + n > max_shard_bytes:
            shards.append(cur)
            cur, size = {}, 0
        cur[name] = t
        size += n
    shards.append(cur)
    if len(shards) == 1:
        save_file(shards[0], directory / "model.safetensors", metadata={"format": "pt"})
    else:
        weight_map = {}
        for i, shard in enumerate(shards, 1):
            fname = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
            save_file(shard, directory / fname, metadata={"format": "pt"})
            weight_map.update({name: fname for name in shard})
        total = sum(t.numel() * t.element_size() for t in state.values())
        (directory / INDEX).write_text(json.dumps(
            {"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2))
    (directory / "config.json").write_text(json.dumps(config, indent=2) + "\n")


def load_state(directory):
    """Every tensor of the saved weights (one file, or the shards the index names), split tensors joined."""
    directory = Path(directory)
    if (directory / INDEX).exists():
        index = read_json(directory / INDEX, "index of the weight files")
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise AssetError(directory / INDEX, 'it has no "weight_map" naming the file of each tensor')
        state = {}
        for fname in sorted(set(map(str, weight_map.values()))):
            state.update(read_shard(directory / fname))
        return join_rows(state)
    return join_rows(read_shard(directory / "model.safetensors"))


def read_config(directory):
    """config.json, checked for the keys that build the model."""
    path = Path(directory) / "config.json"
    config = read_json(path, "model's configuration")
    missing = [k for k in REQUIRED_KEYS if k not in config]
    if missing:
        raise AssetError(path, f"it lacks {', '.join(missing)}")
    bad = [k for k in REQUIRED_KEYS if not isinstance(config[k], int) or isinstance(config[k], bool) or config[k] < 1]
    if bad:
        raise AssetError(path, f"{', '.join(bad)} should be positive whole numbers")
    if config["d_model"] % config["h"]:
        raise AssetError(path, f"d_model = {config['d_model']} is not divisible by h = {config['h']} heads")
    for key, allowed in CHOICES.items():
        if key in config and config[key] not in allowed:
            raise AssetError(path, f"{key} = {config[key]!r} is none of {', '.join(map(repr, allowed))}")
    eps = config.get("layer_norm_eps", 1e-6)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise AssetError(path, f"layer_norm_eps = {eps!r} should be a small positive number")
    return config


def _mismatch(model, state):
    """What differs between the model built from config.json and the saved tensors, in a sentence (or "")."""
    own = model.state_dict()
    shapes = [f"{k} is {tuple(v.shape)} in the weights but {tuple(own[k].shape)} in the model"
              for k, v in state.items() if k in own and tuple(v.shape) != tuple(own[k].shape)]
    tied = {n for n, _ in model.named_parameters(remove_duplicate=False)} - set(state)
    missing = [k for k in own if k not in state and not (k in tied and _is_tied(model, k))]
    unexpected = [k for k in state if k not in own]
    parts = []
    for label, items in (("tensor shapes differ", shapes), ("tensors missing", missing),
                         ("tensors the model does not have", unexpected)):
        if items:
            more = f" and {len(items) - 2} more" if len(items) > 2 else ""
            parts.append(f"{len(items)} {label} ({'; '.join(items[:2])}{more})")
    return "; ".join(parts)


def load_pretrained(directory, device="cpu"):
    """(model in eval mode, float32, config dict) from a directory written by save_pretrained. A missing,
    damaged or mismatched file raises AssetError, which names it."""
    directory = Path(directory)
    config = read_config(directory)
    model = model_from_config(config, init=False)  # every tensor is loaded below (_mismatch checks)
    state = {k: v.float() for k, v in load_state(directory).items()}
    problem = _mismatch(model, state)
    if problem:
        raise AssetError(directory / "config.json", f"the weights beside it do not match it: {problem}")
    model.load_state_dict(state, strict=False)
    return model.to(device).eval(), config


def read_tokenizer(path, vocab_size=None):
    """The SentencePiece model at `path`, checked against the model's vocabulary size; else AssetError."""
    import sentencepiece as spm
    path = Path(path)
    if not path.is_file():
        raise AssetError(path, "the SentencePiece model is missing")
    try:
        sp = spm.SentencePieceProcessor(model_file=str(path))
    except (RuntimeError, OSError) as e:
        raise AssetError(path, f"this is not a readable SentencePiece model, it is damaged ({e})") from None
    if vocab_size is not None and sp.get_piece_size() != vocab_size:
        raise AssetError(path, f"it has {sp.get_piece_size()} pieces but the model's config.json expects "
                               f"{vocab_size}: it belongs to another model")
    return sp


class SharedVocabTokenizer:
    """Two SentencePiece models, one for the source language and one for the target, over ONE vocabulary of the
    model (Marian's vocab.json, piece -> id): the models cut the text into pieces, the vocabulary gives their ids
    (the SentencePiece models' own ids are not the model's), and a piece it lacks becomes <unk>.

    It answers the calls the explorer makes on a SentencePieceProcessor (encode, decode, id_to_piece,
    piece_to_id, get_piece_size, is_control, is_unknown), in the model's ids: `encode` cuts German (the source),
    `encode_target` English. `decode` writes what transformers' MarianTokenizer.decode(ids,
    skip_special_tokens=True) writes: the special ids dropped, the pieces joined by the *source* model (as it does
    where the vocabulary is shared) and "▁" read as a space."""

    def __init__(self, source, target, vocab, unk_id, special_ids=(), clean_up=False):
        self.source, self.target, self.vocab = source, target, dict(vocab)
        self.pieces = {i: p for p, i in self.vocab.items()}
        self.unk_id, self.special = unk_id, set(special_ids)
        self.clean_up = clean_up

    def _ids(self, sp, text):
        if isinstance(text, (list, tuple)):
            return [self._ids(sp, t) for t in text]
        code = []
        if text.startswith(">>") and text.find("<<") != -1:  # a target-language code, >>fr<<, is one piece
            end = text.find("<<") + 2
            code, text = [text[:end]], text[end:]
        return [self.piece_to_id(p) for p in code + sp.encode(text, out_type=str)]

    def encode(self, text):
        """The model's ids of the source text's pieces (a list of texts: a list of lists)."""
        return self._ids(self.source, text)

    def encode_target(self, text):
        return self._ids(self.target, text)

    def decode(self, ids):
        pieces = [self.id_to_piece(i) for i in ids if i not in self.special]
        text = self.source.decode_pieces(pieces).replace("\u2581", " ").strip()
        if self.clean_up:  # transformers' clean_up_tokenization
            for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                         (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
                text = text.replace(a, b)
        return text

    def id_to_piece(self, i):
        return self.pieces.get(int(i), self.pieces.get(self.unk_id, "<unk>"))

    def piece_to_id(self, piece):
        return self.vocab.get(piece, self.unk_id)

    def get_piece_size(self):
        return len(self.vocab)

    def is_control(self, i):
        return i in self.special and i != self.unk_id

    def is_unknown(self, i):
        return i == self.unk_id


def load_tokenizer(directory, config):
    """The tokenizer of the model saved in `directory`: its one SentencePiece model ("tokenizer", spm.model), or a
    SharedVocabTokenizer where config.json names a "source_spm", a "target_spm" and a "vocab"; else AssetError."""
    directory = Path(directory)
    if "source_spm" not in config:
        return read_tokenizer(directory / config.get("tokenizer", "spm.model"), config["src_vocab"])
    path = directory / str(config.get("vocab", "vocab.json"))
    vocab = read_json(path, "vocabulary (piece -> id)")
    ids = sorted(vocab.values()) if all(isinstance(i, int) for i in vocab.values()) else None
    if ids != list(range(config["src_vocab"])):
        raise AssetError(path, f"its ids should be 0 to {config['src_vocab'] - 1}, each once, as config.json's "
                               f"src_vocab says")
    source, target = (read_tokenizer(directory / str(config[key])) for key in ("source_spm", "target_spm"))
    return SharedVocabTokenizer(source, target, vocab, config.get("unk_id", 1), config.get("special_ids", ()),
                                bool(config.get("clean_up_tokenization_spaces", False)))


def _is_tied(model, name):
    shared = model.tgt_embed[0].lut.weight
    return dict(model.named_parameters(remove_duplicate=False))[name] is shared


# ---- snapshots: a model as its difference from another, in fewer bits --------------------------------------

SNAPSHOTS = "snapshots"      # the folder beside the model
SNAPSHOT_INDEX = "index.json"
GROUP = 32                   # weights of a row that share one scale
FILE_LIMIT = 10_000_000      # bytes: a Space repo's files without LFS
SNAPSHOTS_LIMIT = 64_000_000  # bytes: all the snapshots that ship together


def quantize(x, bits, group=GROUP):
    """x (rows, n) as (q, scale): integers in [-2^(bits-1), 2^(bits-1) - 1] and a float16 scale per group of
    `group` weights of a row (the whole row when n is not a multiple of it), x ~ q * scale to within scale / 2."""
    rows, n = x.shape
    g = group if n % group == 0 else n
    x = x.float().reshape(rows, n // g, g)
    top = 2 ** (bits - 1) - 1
    peak = x.abs().amax(-1, keepdim=True)
    scale = (peak / top).half()
    short = scale.float() * top < peak  # rounded down in float16: one step up, so the largest weight still fits
    scale = torch.where(short, torch.nextafter(scale, torch.tensor(float("inf"), dtype=torch.float16)), scale)
    q = torch.round(x / scale.float().clamp_min(torch.finfo(torch.float32).tiny)).clamp(-top - 1, top)
    return q.to(torch.int8).reshape(rows, n), scale.squeeze(-1)


def dequantize(q, scale):
    rows, n = q.shape
    g = n // scale.shape[1]
    return (q.float().reshape(rows, -1, g) * scale.float().unsqueeze(-1)).reshape(rows, n)


def _pack4(q):
    """Two 4-bit integers a byte (the second in the high half); n must be even."""
    u = (q.to(torch.int16) + 8).to(torch.uint8).reshape(q.shape[0], -1, 2)
    return u[..., 0] | (u[..., 1] << 4)


def _unpack4(p):
    low, high = (p & 0x0F).to(torch.int16) - 8, (p >> 4).to(torch.int16) - 8
    return torch.stack([low, high], -1).reshape(p.shape[0], -1).to(torch.int8)


def encode_snapshot(state, base, bits=8):
    """The tensors to write for the weights `state` against `base` (both {name: tensor}, the same names and
    shapes): a matrix that differs as its difference, quantized (`name:q`, `name:scale`); any other tensor that
    differs in float16; a tensor equal to base's not at all."""
    assert bits in (4, 8), bits
    out = {}
    for name, w in state.items():
        b = base[name].float()
        if torch.equal(w.float(), b):
            continue
        if w.dim() == 2 and not (bits == 4 and w.shape[1] % 2):
            q, scale = quantize(w.float() - b, bits)
            out[f"{name}:q"], out[f"{name}:scale"] = (_pack4(q) if bits == 4 else q).contiguous(), scale.contiguous()
        else:
            out[name] = w.detach().half().contiguous()
    return out


def decode_snapshot(tensors, base, bits):
    """The float32 weights that `encode_snapshot` wrote as `tensors` against `base`."""
    state = {}
    for name, b in base.items():
        if f"{name}:q" in tensors:
            q = tensors[f"{name}:q"]
            state[name] = b.float() + dequantize(_unpack4(q) if bits == 4 else q, tensors[f"{name}:scale"])
        else:
            state[name] = tensors.get(name, b).float()
    return state


def save_snapshot(model, base_model, path, bits=8):
    """Write `model` as a snapshot against `base_model` (both with the same config) to `path`; its size in
    bytes, which must stay under FILE_LIMIT."""
    tensors = encode_snapshot(unique_state(model), unique_state(base_model), bits)
    save_file(tensors, path, metadata={"format": "pt", "bits": str(bits), "group": str(GROUP)})
    size = Path(path).stat().st_size
    if size >= FILE_LIMIT:
        raise ValueError(f"{path} takes {size:,} bytes, over the {FILE_LIMIT:,} of a file: use fewer bits")
    return size


def load_snapshot(directory, label, device="cpu"):
    """(model in eval mode, float32, config, its entry of the index) of snapshot `label` of the model saved in
    `directory`. An unknown label raises KeyError naming those there are."""
    directory = Path(directory)
    entries = read_snapshot_index(directory)
    entry = next((e for e in entries if e["label"] == label), None)
    if entry is None:
        raise KeyError(f"no snapshot {label!r}: the model in {directory} has "
                       f"{', '.join(e['label'] for e in entries) or 'none'}")
    model, config = load_pretrained(directory)
    state = decode_snapshot(read_shard(directory / SNAPSHOTS / entry["file"]), unique_state(model), entry["bits"])
    model.load_state_dict(state, strict=False)  # over the base's own tensors; tied ones through the one they share
    return model.to(device).eval(), config, entry


def read_snapshot_index(directory):
    """The snapshots of the model saved in `directory`, oldest first ([] when it ships none)."""
    path = Path(directory) / SNAPSHOTS / SNAPSHOT_INDEX
    if not path.exists():
        return []
    entries = read_json(path, "index of the snapshots").get("snapshots")
    if not isinstance(entries, list):
        raise AssetError(path, 'it has no "snapshots" list')
    return sorted(entries, key=lambda e: e["step"])
