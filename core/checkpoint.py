"""Saving and loading the model the Hugging Face way: config.json + safetensors weights.

Weights ship in float16 and are split into shards under a size limit (each file of a Space repo stays
under 10 MB without LFS), with the usual `model.safetensors.index.json` naming each tensor's shard.
"""
import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .model import make_model

MODEL_KEYS = ("src_vocab", "tgt_vocab", "N", "d_model", "d_ff", "h", "dropout", "max_len", "tie_weights")
INDEX = "model.safetensors.index.json"


def model_from_config(config):
    return make_model(**{k: config[k] for k in MODEL_KEYS if k in config})


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


def save_pretrained(model, config, directory, dtype=torch.float16, max_shard_bytes=9_000_000):
    """Write config.json and the weights (sharded when above max_shard_bytes) into `directory`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for old in list(directory.glob("model*.safetensors")) + [directory / INDEX]:
        old.unlink(missing_ok=True)
    state = {k: v.detach().to(dtype).contiguous().cpu() for k, v in unique_state(model).items()}
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
    directory = Path(directory)
    if (directory / INDEX).exists():
        index = json.loads((directory / INDEX).read_text())
        state = {}
        for fname in sorted(set(index["weight_map"].values())):
            state.update(load_file(directory / fname))
        return state
    return load_file(directory / "model.safetensors")


def load_pretrained(directory, device="cpu"):
    """(model in eval mode, float32, config dict) from a directory written by save_pretrained."""
    directory = Path(directory)
    config = json.loads((directory / "config.json").read_text())
    model = model_from_config(config)
    state = {k: v.float() for k, v in load_state(directory).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = {n for n, _ in model.named_parameters(remove_duplicate=False)} - set(state)
    missing = [m for m in missing if m not in tied or not _is_tied(model, m)]
    if missing or unexpected:
        raise ValueError(f"checkpoint mismatch: missing {missing}, unexpected {unexpected}")
    return model.to(device).eval(), config


def _is_tied(model, name):
    shared = model.tgt_embed[0].lut.weight
    return dict(model.named_parameters(remove_duplicate=False))[name] is shared
