"""The shipped model as one object: `Translator.load()`, `.translate(texts)`, `.inspect(text)`.

    python -m core.translate "Ein Mann fährt Fahrrad."  [--beam 4]
"""
import argparse
import json
import math
import random
import sys
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from .checkpoint import load_pretrained, load_snapshot, load_tokenizer, read_snapshot_index
from .data import ASSETS, BOS, EOS, PAD, UNK, pad_to
from .decode import HalfPrecisionDecoder, Rules, decode_batch, default_max_len
from .instrument import KINDS, attention_name, check_heads, keep_mask, model_shape, run_with_cache, switched_off
from .model import subsequent_mask


@dataclass
class NBest:
    """One hypothesis of a beam search's final pool, as `Translator.nbest` and an Inspection's `nbest` give it.

    rank:        its place in the pool, 1 for the best (what `translate` returns)
    score:       what the search ranked it by, log P / lp(length) (core.decode.Hypothesis)
    logp:        its log P (natural log, </s> included) as the decoding model computed it (on a CPU, a beam of
                 up to four hypotheses decodes with the float16 decoder: core.decode.HalfPrecisionDecoder)
    length:      the |Y| the length penalty counted: tokens after the start, </s> included
    finished:    False for a live hypothesis taken because none ended within the length limit
    pieces:      its output pieces, </s> included
    token_probs: each piece's probability given its prefix, teacher-forced through the float32 model
                 (`Translator.score_ids`), None where not computed (an Inspection's list)
    """
    rank: int
    translation: str
    ids: list
    score: float
    logp: float
    length: int
    finished: bool = True
    pieces: list = field(default_factory=list)
    token_probs: list | None = None


@dataclass
class Inspection:
    """Everything the explorer shows about one translation."""
    translation: str
    src_tokens: list          # source pieces, <s> ... </s> (a Marian model's: ... </s>) (S)
    tgt_tokens: list          # decoder inputs, <s> y_1 ... y_n (Marian: <pad> y_1 ... y_n) (T)
    out_tokens: list          # what each decoder position predicts, y_1 ... </s> (T)
    encoder: torch.Tensor     # encoder self-attention   (layers, heads, S, S)
    decoder: torch.Tensor     # decoder self-attention   (layers, heads, T, T)
    cross: torch.Tensor       # decoder-encoder attention (layers, heads, T, S)
    token_probs: list         # probability of each output token given its prefix (T)
    topk: list                # per step: [(piece, probability), ...] best candidates
    truncated: bool = False
    heads_off: tuple = ()     # the (kind, layer, head) switched off for this translation, if any
    source: str = ""          # the German text as given
    decoding: dict = field(default_factory=dict)  # the settings that chose the tokens (method, beam, ...)
    server_ms: float | None = None  # how long the app took to make it, where it timed it (not part of its JSON)
    nbest: list = field(default_factory=list)  # a beam search's final hypotheses (NBest, best first), if kept
    rank: int | None = None   # which of `nbest` the translation is (1: the search's best), if any
    reference: str = ""       # a reference translation given with the source (a scored set's), if any
    model: str = ""           # the name of the Translator that made it (its `name`), where it has one

    JSON_FORMAT = "transformer-explorer/inspection"
    JSON_DECIMALS = 6  # weights and probabilities lie in [0, 1], where float32 keeps about 7 decimals

    def to_json(self):
        """The whole Inspection as JSON text: plain lists and numbers, readable with `json` alone. Weights and
        probabilities are rounded to 6 decimals, which float32 holds exactly enough for the text to come
        back the same: `Inspection.from_json(text).to_json() == text`."""
        def num(x):
            return round(float(x), self.JSON_DECIMALS)

        def maps(t):
            return [[[[num(w) for w in row] for row in m] for m in layer] for layer in t.tolist()]

        return json.dumps({
            "format": self.JSON_FORMAT, "version": 1, "translation": self.translation,
            "src_tokens": self.src_tokens, "tgt_tokens": self.tgt_tokens, "out_tokens": self.out_tokens,
            "encoder": maps(self.encoder), "decoder": maps(self.decoder), "cross": maps(self.cross),
            "token_probs": [num(p) for p in self.token_probs],
            "topk": [[[piece, num(p)] for piece, p in step] for step in self.topk],
            "truncated": self.truncated, "heads_off": [list(h) for h in self.heads_off], "source": self.source,
            "decoding": self.decoding, "nbest": [asdict(h) for h in self.nbest], "rank": self.rank,
            "reference": self.reference, "model": self.model},
            ensure_ascii=False)

    @classmethod
    def from_json(cls, text):
        """An Inspection from `to_json`'s text (ValueError if it is not one)."""
        d = json.loads(text)
        if not isinstance(d, dict) or d.get("format") != cls.JSON_FORMAT:
            raise ValueError(f"not a {cls.JSON_FORMAT} document")
        maps = {k: torch.tensor(d[k], dtype=torch.float32) for k in ("encoder", "decoder", "cross")}
        return cls(translation=d["translation"], src_tokens=d["src_tokens"], tgt_tokens=d["tgt_tokens"],
                   out_tokens=d["out_tokens"], token_probs=d["token_probs"],
                   topk=[[(piece, p) for piece, p in step] for step in d["topk"]],
                   truncated=d["truncated"], heads_off=tuple(tuple(h) for h in d.get("heads_off", ())),
                   source=d.get("source", ""), decoding=d.get("decoding", {}),
                   nbest=[NBest(**h) for h in d.get("nbest", [])], rank=d.get("rank"),
                   reference=d.get("reference", ""), model=d.get("model", ""), **maps)


SNAPSHOTS_KEPT = 2  # snapshot translators held in memory beside the shipped model
_snapshots = OrderedDict()
_snapshots_lock = threading.Lock()


def _snapshot_translator(cls, directory, label, device, half_rows):
    """A Translator of snapshot `label`, from the ones kept (least recently used first out) or loaded."""
    key = (directory, label, device, half_rows)
    with _snapshots_lock:
        if key in _snapshots:
            _snapshots.move_to_end(key)
            return _snapshots[key]
        model, config, _ = load_snapshot(directory, label, device)
        _snapshots[key] = tr = cls._made(model, config, directory, device, half_rows, snapshot=label)
        while len(_snapshots) > SNAPSHOTS_KEPT:
            _snapshots.popitem(last=False)
        return tr


def kept_snapshots():
    """The labels of the snapshots in memory, least recently used first."""
    with _snapshots_lock:
        return [key[1] for key in _snapshots]


def special_ids(config):
    """The model's special ids from its config, the shipped model's (core.data) where it names none: pad, unk,
    eos, bos (put before a source; None: nothing, as Marian) and the decoder's start (Marian: its pad)."""
    get = config.get
    return dict(pad=get("pad_id", PAD), unk=get("unk_id", UNK), eos=get("eos_id", EOS), bos=get("bos_id", BOS),
                start=get("decoder_start_id", BOS))


def decoding_rules(config):
    """The Rules of the model's decoding (core.decode), from config.json's "generation" (none: the paper's)."""
    g = config.get("generation") or {}
    return Rules(forbidden=tuple(g.get("forbidden_ids", ())), eos_at_limit=bool(g.get("eos_at_limit", False)),
                 beam=g.get("beam_scoring", "gnmt"), early_stopping=g.get("early_stopping", False))


class Translator:
    """German->English translation with the trained EncoderDecoder and its SentencePiece vocabulary.

    Its special ids and rules come from the model's config (`special_ids`, `decoding_rules`): `pad_id`, `unk_id`,
    `eos_id`, `bos_id` (put before each source, None for none), `start_id` (the decoder's first input) and `rules`;
    the shipped model's are core.data's <pad> 0, <unk> 1, <s> 2, </s> 3, and the paper's rules. `tokenizer.encode`
    cuts German, `encode_target` English (the same SentencePiece model for the shipped one)."""

    def __init__(self, model, tokenizer, config=None, device="cpu", half_rows=4):
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.encode_target = getattr(tokenizer, "encode_target", tokenizer.encode)
        self.config = config or {}
        ids = special_ids(self.config)
        self.pad_id, self.unk_id, self.eos_id, self.bos_id, self.start_id = (
            ids[k] for k in ("pad", "unk", "eos", "bos", "start"))
        self.rules = decoding_rules(self.config)
        self.device = torch.device(device)
        self.max_src_tokens = int(self.config.get("max_src_tokens", 128))
        self.max_out_tokens = self.config.get("max_out_tokens")  # a cap on every output's length, if any
        # beam search's length penalty: the one chosen on val for this model, else the paper's 0.6
        self.alpha = float(self.config.get("length_penalty", 0.6))
        # On a CPU, batches of at most `half_rows` hypotheses (one sentence, greedy or beam 4) decode with
        # `half_model`, whose decoder is in float16 (docs/performance.md); 0 turns it off.
        self.half_rows = half_rows if self.device.type == "cpu" else 0
        self.half_model = HalfPrecisionDecoder(self.model).eval() if self.half_rows else None
        self.directory = None  # where it was loaded from (its snapshots are there)
        self.snapshot = None   # the snapshot's label, for a translator of one
        self.name = ""         # what its caller knows it by (the page's models: "shipped", "shipped@epoch-1", ...),
        # recorded in each Inspection it makes

    @classmethod
    def load(cls, directory=None, device="cpu", half_rows=4, snapshot=None, kept=True):
        """The model saved in `directory` (the shipped one by default) or, with `snapshot`, that snapshot of its
        training run (a label of `snapshots()`): the same API on that point's weights. The SNAPSHOTS_KEPT
        snapshots used last stay loaded; the one used least recently goes first (`kept=False`: a snapshot loaded
        afresh, for a caller that keeps its own, and not kept here)."""
        directory = Path(directory or ASSETS)
        if snapshot is not None and not kept:
            model, config, _ = load_snapshot(directory, str(snapshot), device)
            return cls._made(model, config, directory, device, half_rows, snapshot=str(snapshot))
        if snapshot is not None:
            return _snapshot_translator(cls, directory.resolve(), str(snapshot), str(device), half_rows)
        model, config = load_pretrained(directory, device=device)
        return cls._made(model, config, directory, device, half_rows)

    @classmethod
    def _made(cls, model, config, directory, device, half_rows, snapshot=None):
        tr = cls(model, load_tokenizer(directory, config), config, device, half_rows)
        tr.directory, tr.snapshot = Path(directory), snapshot
        return tr

    def snapshots(self):
        """The snapshots of this model's training run, oldest first: dicts of label, step, epoch, train_loss
        (None for the initialisation) and val_loss ([] for a model that ships none)."""
        keys = ("label", "step", "epoch", "train_loss", "val_loss")
        return [{k: e.get(k) for k in keys} for e in read_snapshot_index(self.directory)] if self.directory else []

    def decoding_model(self, rows):
        """The model that decodes a batch of `rows` hypotheses (sentences x beam)."""
        return self.half_model if self.half_model is not None and rows <= self.half_rows else self.model

    def encode_source(self, text):
        """(<s> ids </s>, truncated?) with the source cut to the model's trained length (a model with no bos_id:
        ids </s>)."""
        ids = self.tokenizer.encode(text.strip())
        head = [] if self.bos_id is None else [self.bos_id]
        room = self.max_src_tokens - len(head) - 1
        return head + ids[:room] + [self.eos_id], len(ids) > room

    def default_max_len(self, src_len):
        n = default_max_len(src_len, self.max_src_tokens)
        return n if self.max_out_tokens is None else min(n, int(self.max_out_tokens))

    def source_mask(self, src):
        """(B, 1, S): True where the source ids (B, S) are not padding."""
        return (src != self.pad_id).unsqueeze(-2)

    def encode_prefix(self, prefix, count):
        """English prefixes as id lists, one per text: None, one string for all, or one string per text."""
        if prefix is None:
            return None
        prefix = [prefix] * count if isinstance(prefix, str) else list(prefix)
        if len(prefix) != count:
            raise ValueError(f"{len(prefix)} prefixes for {count} texts")
        return [self.encode_target(p.strip()) if p and p.strip() else [] for p in prefix]

    @torch.no_grad()
    def translate_ids(self, texts, method="greedy", beam=4, alpha=None, max_len=None, batch_size=64,
                      temperature=1.0, top_k=0, seed=None, heads_off=None, prefix=None, nbest=False):
        """Output ids for each text, decoding length-sorted batches; the heads named in `heads_off`, triples
        (kind, layer, head), switched off (core/instrument.py); each output starts with its `prefix` (English,
        greedy and beam search) when given. `nbest` (beam search of 2 or more): each text's final pool of
        core.decode.Hypothesis instead of its ids, best first."""
        alpha = self.alpha if alpha is None else alpha
        keep = keep_mask(heads_off, *model_shape(self.model))
        srcs = [self.encode_source(t)[0] for t in texts]
        prefixes = self.encode_prefix(prefix, len(texts))
        order = sorted(range(len(srcs)), key=lambda i: len(srcs[i]))
        results = [None] * len(srcs)
        for i in range(0, len(order), batch_size):
            idx = order[i:i + batch_size]
            src = pad_to([srcs[j] for j in idx], self.pad_id).to(self.device)
            src_mask = self.source_mask(src)
            n = max_len or self.default_max_len(src.size(1))
            if self.max_out_tokens is not None:  # no further than the model's positions reach
                n = min(n, int(self.max_out_tokens))
            if prefixes:
                n = max(n, max(len(prefixes[j]) for j in idx) + 1)
            model = self.decoding_model(len(idx) * (beam if method == "beam" else 1))
            outs = decode_batch(model, src, src_mask, n, method=method, beam=beam, alpha=alpha,
                                temperature=temperature, top_k=top_k, seed=seed, keep=keep,
                                prefix=[prefixes[j] for j in idx] if prefixes else None,
                                bos=self.start_id, eos=self.eos_id, rules=self.rules, nbest=nbest)
            for j, out in zip(idx, outs):
                results[j] = out
        return results

    def translate(self, texts, beam=1, alpha=None, method=None, **kw):
        """English strings for German strings; beam > 1 uses beam search unless a method is named."""
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        method = method or ("beam" if beam > 1 else "greedy")
        outs = [self.tokenizer.decode(ids) for ids in
                self.translate_ids(texts, method=method, beam=beam, alpha=alpha, **kw)]
        return outs[0] if single else outs

    def score_ids(self, sources, targets):
        """Teacher-forced natural-log probabilities of each target's tokens and </s> given its source, with
        the float32 model: a list of lists of floats."""
        return self.score_id_lists([self.encode_source(t)[0] for t in sources],
                                   [self.encode_target(t.strip()) + [self.eos_id] for t in targets])

    @torch.no_grad()
    def score_id_lists(self, srcs, tgts, heads_off=None):
        """Teacher-forced natural-log probabilities of each target id list (its </s> included) given its source id
        list (as encode_source gives it), with the float32 model and the heads of `heads_off` switched off: a list
        of lists of floats."""
        src = pad_to(srcs, self.pad_id).to(self.device)
        tgt_in = pad_to([[self.start_id] + t[:-1] for t in tgts], self.pad_id).to(self.device)
        src_mask = self.source_mask(src)
        real = pad_to([[1] * len(t) for t in tgts], 0).bool().to(self.device)  # not padding (the start may be <pad>)
        tgt_mask = real.unsqueeze(-2) & subsequent_mask(tgt_in.size(1)).to(self.device)
        with switched_off(self.model, heads_off):
            logp = self.model.generator(self.model(src, tgt_in, src_mask, tgt_mask))  # (B, T, V)
        gold = pad_to(tgts, self.pad_id).to(self.device)
        picked = logp.gather(2, gold.unsqueeze(-1)).squeeze(-1)  # (B, T)
        return [row[:len(t)].tolist() for row, t in zip(picked, tgts)]

    def score(self, sources, targets):
        """Each English target's total log-probability given its German source (teacher-forced, natural
        log), with the per-token values: [(total, [(piece, log p), ...]), ...] (one pair for one string)."""
        single = isinstance(sources, str)
        sources, targets = ([sources], [targets]) if single else (list(sources), list(targets))
        out = []
        for target, values in zip(targets, self.score_ids(sources, targets)):
            pieces = [self.tokenizer.id_to_piece(i) for i in self.encode_target(target.strip()) + [self.eos_id]]
            out.append((sum(values), list(zip(pieces, values))))
        return out[0] if single else out

    def ranked(self, pool):
        """A beam search's pool (core.decode.Hypothesis, best first) as NBest, without per-token probabilities."""
        piece = self.tokenizer.id_to_piece
        return [NBest(rank=r, translation=self.tokenizer.decode(h.ids), ids=list(h.ids), score=h.score, logp=h.logp,
                      length=h.length, finished=h.finished, pieces=[piece(i) for i in [*h.ids, self.eos_id]])
                for r, h in enumerate(pool, 1)]

    def nbest(self, texts, beam=4, alpha=None, max_len=None, heads_off=None, prefix=None, batch_size=64):
        """The final hypotheses of a beam search of `beam` (2 or more) for each German text: up to `beam` NBest,
        best first, the first being what `translate(text, beam=beam)` returns, each with its score as the search
        ranked it, its log P, its length and each piece's probability (teacher-forced, the float32 model, the
        heads of `heads_off` off there too). A list of NBest for one string, a list of such lists for a list."""
        single = isinstance(texts, str)
        texts = [texts] if single else list(texts)
        pools = [self.ranked(pool) for pool in self.translate_ids(
            texts, method="beam", beam=beam, alpha=alpha, max_len=max_len, heads_off=heads_off, prefix=prefix,
            batch_size=batch_size, nbest=True)]
        flat = [(i, h) for i, pool in enumerate(pools) for h in pool]
        for start in range(0, len(flat), batch_size):
            part = flat[start:start + batch_size]
            logps = self.score_id_lists([self.encode_source(texts[i])[0] for i, _ in part],
                                        [[*h.ids, self.eos_id] for _, h in part], heads_off)
            for (_, h), values in zip(part, logps):
                h.token_probs = [math.exp(v) for v in values]
        return pools[0] if single else pools

    def _output(self, text, output, nbest, heads_off, decoding):
        """inspect's output ids, its n-best list and the output's rank there: `output` as given (ids, or English
        cut by encode_target) with the list `nbest` if one is given; else decoded, with the beam's pool where
        `nbest` is True and the method a beam search of 2 or more."""
        kept = nbest if isinstance(nbest, list) else []
        if output is not None:
            ids = self.encode_target(output.strip()) if isinstance(output, str) else [int(i) for i in output]
            return ids, kept, next((h.rank for h in kept if h.ids == ids), None)
        if nbest is True and decoding["method"] == "beam" and decoding["beam"] > 1:
            pool = self.ranked(self.translate_ids([text], heads_off=heads_off, nbest=True, **decoding)[0])
            return pool[0].ids, pool, 1
        ids = self.translate_ids([text], heads_off=heads_off, **decoding)[0]
        return ids, kept, next((h.rank for h in kept if h.ids == ids), None)

    @torch.no_grad()
    def inspect(self, text, method="greedy", beam=4, alpha=None, max_len=None, topk=5, heads_off=None, output=None,
                nbest=False, **kw):
        """Translate `text`, then re-run the chosen output teacher-forced with every attention map kept; with
        `heads_off`, both with those heads switched off (their maps are still computed, and kept). `output`: the
        output to record instead of decoding one (ids without the start and </s>, or English text): only the
        teacher-forced run, the settings kept as given. `nbest`: True keeps a beam search's final hypotheses in
        the Inspection's `nbest` (beam > 1), a list of NBest (an earlier Inspection's) is kept as it is; `rank`
        is the output's place there."""
        heads_off = check_heads(heads_off, *model_shape(self.model))
        if method == "sample" and kw.get("seed") is None and output is None:  # recorded, so that the draw can be repeated
            kw["seed"] = random.randrange(2 ** 63)
        decoding = dict(method=method, beam=beam, alpha=self.alpha if alpha is None else alpha, max_len=max_len, **kw)
        src_ids, truncated = self.encode_source(text)
        out_ids, pool, rank = self._output(text, output, nbest, heads_off, decoding)
        src = torch.tensor([src_ids], device=self.device)
        tgt = torch.tensor([[self.start_id] + out_ids], device=self.device)
        src_mask = self.source_mask(src)
        # the float32 model, whichever twin chose the tokens: the run core.analysis.inside records for the Inside
        # tab is this one with every state kept, so a sentence has one set of maps
        logp, cache = run_with_cache(self.model, src, tgt, src_mask, subsequent_mask(tgt.size(1)).to(self.device),
                                     names=["*:weights"], heads_off=heads_off)
        logp = logp[0].float()  # (T, V)
        maps = {kind: cache.stacked(attention_name(kind), "weights")[:, 0].cpu() for kind in KINDS}
        targets = torch.tensor(out_ids + [self.eos_id], device=self.device)
        probs = logp.exp()
        token_probs = probs.gather(1, targets.unsqueeze(1)).squeeze(1).tolist()
        top_p, top_i = probs.topk(topk, dim=-1)
        piece = self.tokenizer.id_to_piece
        return Inspection(
            translation=self.tokenizer.decode(out_ids),
            src_tokens=[piece(i) for i in src_ids], tgt_tokens=[piece(i) for i in [self.start_id] + out_ids],
            out_tokens=[piece(i) for i in out_ids + [self.eos_id]],
            encoder=maps["encoder"], decoder=maps["decoder"], cross=maps["cross"],
            token_probs=token_probs,
            topk=[[(piece(i), p) for i, p in zip(ii, pp)] for ii, pp in zip(top_i.tolist(), top_p.tolist())],
            truncated=truncated, heads_off=heads_off, source=text, decoding=decoding, nbest=pool, rank=rank,
            model=self.name)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Translate German to English with the shipped model.")
    ap.add_argument("text", nargs="*", help="German sentences (read from stdin when none)")
    ap.add_argument("--beam", type=int, default=1, help="beam size (1: greedy)")
    ap.add_argument("--alpha", type=float, default=None, help="length penalty for beam search (default: the model's)")
    ap.add_argument("--model", default=None, help="model directory (default: assets/)")
    args = ap.parse_args(argv)
    texts = args.text or [line.strip() for line in sys.stdin if line.strip()]
    t = Translator.load(args.model)
    for out in t.translate(texts, beam=args.beam, alpha=args.alpha):
        print(out)


if __name__ == "__main__":
    main()
