"""Another project's translation model in core's classes: a Marian (OPUS-MT) model saved by transformers.

    python -m core.convert SOURCE OUT_DIR [--dtype float32|float16]
    python -m core.convert --random-opus-mt-de-en OUT_DIR

SOURCE is a directory written by transformers' `save_pretrained` (MarianMTModel and MarianTokenizer: config.json,
the weights, source.spm, target.spm, vocab.json) or a Hub id such as Helsinki-NLP/opus-mt-de-en (downloaded when
the machine has network). OUT_DIR receives the project's own format (core.checkpoint: config.json, safetensors
shards under 10 MB, the tokenizer's files), which `Translator.load(OUT_DIR)` and `EXPLORER_MODEL_DIR=OUT_DIR python
app.py` open. The conversion is checked before it is kept: the converted model's teacher-forced log-probabilities
on a few sentences must match transformers' (float32 weights: within 1e-4).

Everything is written to a folder beside OUT_DIR and renamed at the end, so a failed conversion leaves nothing
half-written; a bad input is one line on stderr, naming the file or field, and exit status 2.

transformers (the `convert` extra: pip install -e .[convert], or pip install transformers) is imported here only,
inside the functions that need it.
"""
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

DTYPES = ("float32", "float16")
CHECK_TOLERANCE = {"float32": 1e-4, "float16": 5e-2}  # teacher-forced log-probabilities, max |difference|
CHECK_SENTENCES = ("Ein Mann fährt mit dem Fahrrad durch die Stadt.", "Zwei Kinder spielen im Garten.")
CHECK_TARGETS = ("A man rides his bicycle through the city.", "Two children are playing in the garden.")


class ConvertError(Exception):
    """A source that cannot be converted; the message, one line, names the file or field."""


def require_transformers():
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise ConvertError("transformers is not installed: pip install transformers (the 'convert' extra)") from None


def resolve_source(source):
    """The local directory of `source`: itself, or a Hub id's snapshot (downloaded, or from the cache)."""
    path = Path(source)
    if path.exists():
        if not path.is_dir():
            raise ConvertError(f"{path}: not a directory (give the folder transformers' save_pretrained wrote)")
        return path
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", str(source)):
        raise ConvertError(f"{source}: no such directory, and not a Hub id (owner/name)")
    return download(str(source))


def download(repo_id):
    """A Hub model's files that conversion reads, in the Hub's cache; ConvertError when it cannot be had."""
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "10")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled
    patterns = ["*.json", "*.spm", "*.safetensors", "pytorch_model.bin"]
    try:
        return Path(snapshot_download(repo_id, allow_patterns=patterns))
    except (LocalEntryNotFoundError, OfflineModeIsEnabled, ConnectionError):
        raise ConvertError(f"{repo_id}: cannot download it: no network here, and the Hub's cache holds no copy "
                           f"(save it with save_pretrained on a machine with network and give that folder)") from None
    except HfHubHTTPError as e:
        raise ConvertError(f"{repo_id}: the Hub refused it ({str(e).splitlines()[0]})") from None
    except OSError as e:
        raise ConvertError(f"{repo_id}: cannot download it, no network? ({str(e).splitlines()[0]})") from None


def read_source_config(directory):
    """config.json of the source as a dict, its tokenizer's files checked present; else ConvertError."""
    from .marian import MARIAN_FILES, check_config
    path = directory / "config.json"
    if not path.is_file():
        raise ConvertError(f"{path}: missing: {directory} is not a model saved by transformers")
    try:
        hf = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConvertError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(hf, dict):
        raise ConvertError(f"{path}: not a JSON object")
    if "src_vocab" in hf and "model_type" not in hf:
        raise ConvertError(f"{path}: this is already a model of this project's own format (no model_type): "
                           f"Translator.load opens it as it is")
    check_config(hf, path)
    for name in MARIAN_FILES[1:]:
        if not (directory / name).is_file():
            raise ConvertError(f"{directory / name}: missing: a Marian model's tokenizer needs source.spm, "
                               f"target.spm and vocab.json")
    return hf


def check_parity(hf, tok, directory, dtype):
    """The largest |difference| between transformers' teacher-forced log-probabilities and those of the converted
    model loaded back from `directory` (core's Translator), on CHECK_SENTENCES; ConvertError above tolerance."""
    import torch

    from ..translate import Translator
    tr = Translator.load(directory, half_rows=0)
    worst = 0.0
    for src, tgt in zip(CHECK_SENTENCES, CHECK_TARGETS):
        ours = torch.tensor(tr.score_ids([src], [tgt])[0])
        batch = tok([src], text_target=[tgt], return_tensors="pt")
        if tr.encode_source(src)[0] != batch["input_ids"][0].tolist():
            raise ConvertError(f"{directory / 'vocab.json'}: the converted tokenizer gives {src!r} other ids than "
                               f"transformers' MarianTokenizer")
        with torch.no_grad():
            logits = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                        labels=batch["labels"]).logits.float()
        theirs = logits.log_softmax(-1)[0].gather(1, batch["labels"][0].unsqueeze(1)).squeeze(1)
        if ours.shape != theirs.shape:
            raise ConvertError(f"{directory}: the converted tokenizer cuts {tgt!r} into {len(ours)} pieces, "
                               f"transformers' into {len(theirs)}")
        worst = max(worst, (ours - theirs).abs().max().item())
    if worst > CHECK_TOLERANCE[dtype]:
        raise ConvertError(f"the converted model's log-probabilities differ from transformers' by {worst:.2g} "
                           f"(more than {CHECK_TOLERANCE[dtype]:g}): not written")
    return worst


def convert(source, out_dir, dtype="float32"):
    """Convert the Marian model at `source` (directory or Hub id) into `out_dir`; returns a summary dict."""
    import torch

    from ..checkpoint import model_from_config, save_pretrained
    from .marian import check_generation, copy_weights, core_config, load_marian
    require_transformers()
    out_dir = Path(out_dir)
    check_out_dir(out_dir)
    directory = resolve_source(source)
    hf_config = read_source_config(directory)
    hf, tok = load_marian(directory)
    check_generation(hf.generation_config, directory / "generation_config.json")
    config = core_config(hf_config, hf.generation_config, tok, source)
    model = copy_weights(hf, model_from_config(config).eval())
    with written_atomically(out_dir) as tmp:
        save_pretrained(model, config, tmp, dtype=getattr(torch, dtype))
        for name in ("source.spm", "target.spm", "vocab.json"):
            shutil.copyfile(directory / name, tmp / name)
        worst = check_parity(hf, tok, tmp, dtype)
    params = sum(p.numel() for p in model.parameters())
    return {"out_dir": str(out_dir), "parameters": params, "max_logp_diff": worst, "dtype": dtype}


def check_out_dir(out_dir):
    """OUT_DIR must be new, empty, or an earlier conversion (which is replaced): never a folder of something else."""
    if not out_dir.exists():
        try:
            out_dir.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ConvertError(f"{out_dir.parent}: cannot make the directory to write {out_dir.name} in ({e})") from None
        return
    if not out_dir.is_dir():
        raise ConvertError(f"{out_dir}: exists and is not a directory")
    config = out_dir / "config.json"
    if any(out_dir.iterdir()) and not (config.is_file() and "converted_from" in config.read_text(encoding="utf-8")):
        raise ConvertError(f"{out_dir}: exists and holds something other than an earlier conversion; "
                           f"give a new or empty directory")


class written_atomically:
    """A temporary folder beside `out_dir`, renamed to it when the block ends well (an earlier conversion there is
    replaced) and removed when it does not."""

    def __init__(self, out_dir):
        self.out_dir = Path(out_dir)

    def __enter__(self):
        self.tmp = Path(tempfile.mkdtemp(prefix=f".{self.out_dir.name}.partial-", dir=self.out_dir.parent))
        return self.tmp

    def __exit__(self, kind, value, tb):
        if kind is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return False
        old = None
        if self.out_dir.exists():
            old = self.out_dir.with_name(f".{self.out_dir.name}.old-{os.getpid()}")
            self.out_dir.rename(old)
        self.tmp.rename(self.out_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return False
