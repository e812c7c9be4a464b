"""Two models on one sentence: both translations, each scored under both models, and their attention side by side.

    c = compare(a, b, "Ein Mann fährt Fahrrad.")          # a, b: core.translate.Translators
    c.scored[0].logp_a, c.scored[0].logp_b               # A's translation, unit by unit, under A and under B
    a_map, b_map, diff = c.maps("cross", 1, 3)           # (Q, K) each; diff = A - B
    c.ranking[0]                                         # (kind, layer, head, mean TV): the head that differs most
    Comparison.from_json(c.to_json())

**Units.** Where A and B read the same vocabulary (the same piece for every id, the same special ids) and cut the
sentence into the same source ids, everything is compared piece by piece (`level == "pieces"`), and each
translation is scored as the ids its model chose. Otherwise (`level == "words"`, `by_words` true) each model cuts
every text with its own tokenizer and the pieces are gathered into words: a word starts at a piece that begins
with SentencePiece's "▁" (a space before it); a source's <s> and </s>, and the decoder's first input, are units of
their own. A translation's per-unit log-probability is then the sum over the word's pieces (the word's
probability), and an attention map is pooled into words: a key word's weight is the sum of its pieces' weights, a
query word's row the average of its pieces' rows, so each row still sums to 1. Maps whose rows mean different
tokens are never subtracted. Where one model has a source unit the other lacks (the <s> that a Marian model does
not put before a source) its key column and its query row are all zeros in that model (it is attended by
nothing, and attends nothing), `missing` names it, and its query row is left out of the measure. Two tokenizers that cut a text into different numbers of words: CannotCompare (a ValueError).

**Attention.** A and B are run teacher-forced on the SAME output (`on`: A's translation by default, B's with
on="b"), so row t of both maps reads the same token. The measure of a head is the mean total-variation distance
between corresponding rows: TV(row) = 0.5 * sum_k |a_k - b_k| (0: the same distribution, 1: disjoint), averaged
over the query rows. Models of different shapes are compared over the heads both have (layers 0 .. min - 1, heads
0 .. min - 1 of each stack): `shapes` records A's, B's and the shared (layers, heads), and the maps kept are the
shared heads'.

**Heads off.** `heads_off_a` / `heads_off_b` switch heads off in one model (the same model as A and B: the whole
model against one without a head); the triples are checked against that model's shape and kept in `heads_off`.

**Checks.** Both translators need a tokenizer; an empty sentence, or one longer than either model's
`max_src_tokens` allows, is a CannotCompare (a ValueError whose `said` the page writes in its language), and so
is a translation that, cut into the other model's pieces, is longer than that model's positions. That A and B read
the same language cannot be told from their files.
"""
import json
import random
from dataclasses import dataclass, field

import torch

from ..instrument import KINDS, attention_name, check_heads, model_shape, run_with_cache
from ..model import subsequent_mask
from ..words import said, say

MEASURE = "mean_tv"  # the ranking's measure: mean over query rows of 0.5 * sum |a - b|
WORD_START = "\u2581"  # SentencePiece's mark of a space before a piece
DECIMALS = 6


# ---- checks and ids ----------------------------------------------------------------------------------------

class CannotCompare(ValueError):
    """Why two models (or two sentences) cannot be compared, in the locale tables' words: `said` is the key
    (compare.error.*) and its fields (core.words), which the page writes in its language; str() is the English."""

    def __init__(self, key, **fields):
        self.said = said(f"compare.error.{key}", **fields)
        super().__init__(say(self.said))


def source_ids(tr, text, who=None):
    """The source ids (<s> ... </s>) `tr` (called `who`, if named) reads for `text`; CannotCompare for a
    translator with no tokenizer, an empty sentence, or one longer than tr.max_src_tokens allows."""
    named = {} if who is None else dict(model=who)
    if getattr(tr, "tokenizer", None) is None:
        raise CannotCompare("no-tokenizer" if named else "no-tokenizer-one", **named)
    if not isinstance(text, str) or not text.strip() or not tr.tokenizer.encode(text.strip()):
        raise CannotCompare("empty")
    ids, truncated = tr.encode_source(text)
    if truncated:
        raise CannotCompare("source-too-long" if named else "source-too-long-one", most=tr.max_src_tokens, **named)
    return ids


def positions(tr):
    """The most positions `tr`'s model reads (its positional encoding's length, config max_len)."""
    return int(tr.config.get("max_len", 5000))


def same_vocabulary(a, b):
    """Whether translators `a` and `b` read one vocabulary: the same piece for every id and the same special ids."""
    if [a.pad_id, a.eos_id, a.bos_id, a.start_id] != [b.pad_id, b.eos_id, b.bos_id, b.start_id]:
        return False
    ta, tb = a.tokenizer, b.tokenizer
    if ta is tb:
        return True
    n = ta.get_piece_size()
    return n == tb.get_piece_size() and all(ta.id_to_piece(i) == tb.id_to_piece(i) for i in range(n))


def pieces(tr, ids):
    """The pieces of `ids` in `tr`'s vocabulary."""
    return [tr.tokenizer.id_to_piece(int(i)) for i in ids]


# ---- units: pieces gathered into words --------------------------------------------------------------------

def unit_keys(piece_list, head, tail):
    """A unit key for each piece: "head" for the first `head` pieces (a source's <s>, the decoder's first input),
    "tail" for the last `tail` (a source's or a target's </s>), and the number of its word for the pieces
    between (a word starts at a piece that begins with "▁", or at the first of them)."""
    keys, word = [], -1
    middle = piece_list[head:len(piece_list) - tail]
    for i, p in enumerate(middle):
        if i == 0 or p.startswith(WORD_START):
            word += 1
        keys.append(word)
    return ["head"] * head + keys + ["tail"] * tail


def unit_order(keys_a, keys_b, what):
    """The union of two pieces' unit keys, in reading order (head, words, tail); ValueError where the two cut the
    text into different numbers of words."""
    words = [sum(isinstance(k, int) for k in set(keys)) for keys in (keys_a, keys_b)]
    if words[0] != words[1]:
        raise CannotCompare(f"words-{what}", a=words[0], b=words[1])
    return [k for k in ("head",) if k in keys_a or k in keys_b] + list(range(words[0])) + \
        [k for k in ("tail",) if k in keys_a or k in keys_b]


def membership(keys, units):
    """(U, P) float32: 1 where piece p belongs to unit u."""
    m = torch.zeros(len(units), len(keys))
    index = {u: i for i, u in enumerate(units)}
    for p, k in enumerate(keys):
        m[index[k], p] = 1.0
    return m


def unit_labels(piece_list, keys, units):
    """Each unit's label: a word's pieces joined ("▁" read as a space, stripped), a special unit's piece."""
    out = []
    for u in units:
        text = "".join(p for p, k in zip(piece_list, keys) if k == u)
        out.append(text.replace(WORD_START, " ").strip() or text)
    return out


def pool(maps, queries, keys):
    """Maps (L, H, Q, K) over pieces pooled into units: each unit's query row the average of its pieces' rows,
    each key unit's weight the sum of its pieces'. `queries` (Uq, Q) and `keys` (Uk, K) are memberships."""
    avg = queries / queries.sum(1, keepdim=True).clamp_min(1)  # (Uq, Q); a unit with no piece: a zero row
    return avg @ maps @ keys.T  # (L, H, Uq, Uk)


# ---- teacher-forced runs ----------------------------------------------------------------------------------

def teacher_forced(tr, src_ids, out_ids, heads_off=None, maps=False):
    """One float32 teacher-forced run of `tr`'s model on a source and an output (ids without </s>): (the natural
    log-probability of each of out_ids + [</s>] (T,), {kind: maps (L, H, T|S, S|T)} or None)."""
    src = torch.tensor([src_ids], device=tr.device)
    tgt = torch.tensor([[tr.start_id] + list(out_ids)], device=tr.device)
    gold = torch.tensor(list(out_ids) + [tr.eos_id], device=tr.device)
    logp, cache = run_with_cache(tr.model, src, tgt, tr.source_mask(src),
                                 subsequent_mask(tgt.size(1)).to(tr.device),
                                 names=["*:weights"] if maps else [], heads_off=heads_off)
    picked = logp[0].float().gather(1, gold.unsqueeze(1))[:, 0].cpu()  # (T,)
    if not maps:
        return picked, None
    return picked, {kind: cache.stacked(attention_name(kind), "weights")[:, 0].cpu() for kind in KINDS}


def output_ids(tr, text, chosen, by_words):
    """The ids `tr` is fed for an output text: the ids its model chose (`chosen`) where the two models read
    pieces, else `text` cut by tr's own target tokenizer."""
    return list(chosen) if not by_words else tr.encode_target(text.strip())


# ---- the measure -----------------------------------------------------------------------------------------

def mean_tv(a, b, rows=None):
    """(L, H): per head, the mean over query rows of 0.5 * sum_k |a - b| for maps a, b (L, H, Q, K); `rows` (Q,)
    bool: the rows to average (None: all)."""
    tv = 0.5 * (a - b).abs().sum(-1)  # (L, H, Q)
    if rows is not None:
        tv = tv[..., rows]
    return tv.mean(-1) if tv.size(-1) else torch.zeros(tv.shape[:2])


def rank_heads(maps_a, maps_b, rows=None):
    """Every (kind, layer, head, mean TV) of the maps, most different first (ties in kind, layer, head order);
    `rows`: {kind: (Q,) bool} rows to measure, where not all."""
    out = []
    for kind in KINDS:
        tv = mean_tv(maps_a[kind], maps_b[kind], (rows or {}).get(kind))
        out += [(kind, layer, head, float(tv[layer, head])) for layer in range(tv.size(0))
                for head in range(tv.size(1))]
    return sorted(out, key=lambda r: -r[3])  # stable: equal measures keep the kinds' order


# ---- the result ------------------------------------------------------------------------------------------

@dataclass
class Scored:
    """One translation, unit by unit (pieces, or words where the models read different pieces, then </s>), with
    each unit's natural log-probability under A and under B (teacher-forced)."""
    translation: str
    by: str          # "a" or "b": the model that produced it
    units: list      # (U) labels
    logp_a: list     # (U)
    logp_b: list     # (U)

    @property
    def total_a(self):
        return sum(self.logp_a)

    @property
    def total_b(self):
        return sum(self.logp_b)


def _num(x):
    return round(float(x), DECIMALS)


def _nested(t):
    """A tensor as nested lists of numbers rounded to DECIMALS."""
    return _num(t) if t.dim() == 0 else [_nested(x) for x in t]


class Document:
    """A result that travels as JSON text: its to_dict() with a format and version, to_json(), and `read` of such
    text back into a dict of its fields."""
    JSON_FORMAT = ""

    def to_json(self):
        """to_dict as JSON text; `cls.from_json(text).to_json() == text`."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def read(cls, text):
        """The fields of to_json's text (ValueError if it is not one of this class's documents)."""
        d = json.loads(text)
        if not isinstance(d, dict) or d.get("format") != cls.JSON_FORMAT:
            raise ValueError(f"not a {cls.JSON_FORMAT} document")
        d.pop("format"), d.pop("version", None)
        return d


@dataclass
class Comparison(Document):
    """Two models (A, B) on one sentence. `maps_a`, `maps_b`: {kind: (L, H, Q, K)} over the heads both models
    have, teacher-forced on the translation `on` names, over `src_units` and `tgt_units` (the decoder's inputs:
    its first input, then the output's units); `ranking`: every (kind, layer, head, mean TV), most different
    first; `first_difference`: the first unit where the two translations part (None: they do not)."""
    source: str
    names: list          # [A's name, B's name]
    level: str           # "pieces" or "words"
    scored: list         # [Scored of A's translation, Scored of B's]
    first_difference: int | None
    on: str              # "a" or "b": the translation both were run on for the maps
    src_units: list      # (S) labels
    tgt_units: list      # (T) labels
    src_pieces: dict     # {"a": [...], "b": [...]}: each model's source pieces
    tgt_pieces: dict     # {"a": [...], "b": [...]}: each model's decoder inputs for translation `on`
    missing: dict        # {"a": [...], "b": [...]}: source unit indices that model lacks
    maps_a: dict         # {kind: (L, H, Q, K)}
    maps_b: dict
    shapes: dict         # {"a": [layers, heads], "b": [...], "shared": [...]}
    ranking: list        # [(kind, layer, head, value)], value = mean TV
    decoding: dict = field(default_factory=dict)
    heads_off: dict = field(default_factory=dict)  # {"a": [[kind, layer, head], ...], "b": [...]}: heads off
    measure: str = MEASURE

    JSON_FORMAT = "transformer-explorer/comparison"

    @property
    def by_words(self):
        """Whether the models were compared over words (their tokenizers cut the text into different pieces)."""
        return self.level == "words"

    @property
    def translations(self):
        return [s.translation for s in self.scored]

    def difference(self, kind):
        """A - B for every shared head of one kind: (L, H, Q, K)."""
        return self.maps_a[kind] - self.maps_b[kind]

    def maps(self, kind, layer, head):
        """(A's map, B's map, A - B) of one head, each (Q, K)."""
        a, b = self.maps_a[kind][layer, head], self.maps_b[kind][layer, head]
        return a, b, a - b

    def to_dict(self):
        """Plain lists and numbers (maps and log-probabilities rounded to 6 decimals); A - B is not stored, it is
        maps_a - maps_b."""
        d = {k: getattr(self, k) for k in ("source", "names", "level", "first_difference", "on", "src_units",
                                           "tgt_units", "src_pieces", "tgt_pieces", "missing", "shapes",
                                           "decoding", "heads_off", "measure")}
        d["by_words"] = self.by_words
        d["scored"] = [dict(translation=s.translation, by=s.by, units=s.units, logp_a=[_num(x) for x in s.logp_a],
                            logp_b=[_num(x) for x in s.logp_b]) for s in self.scored]
        d["maps_a"] = {k: _nested(v) for k, v in self.maps_a.items()}
        d["maps_b"] = {k: _nested(v) for k, v in self.maps_b.items()}
        d["ranking"] = [[kind, layer, head, _num(v)] for kind, layer, head, v in self.ranking]
        return dict(format=self.JSON_FORMAT, version=1, **d)

    @classmethod
    def from_json(cls, text):
        """A Comparison from to_json's text (ValueError if it is not one)."""
        d = cls.read(text)
        d.pop("by_words", None)
        d["scored"] = [Scored(**s) for s in d["scored"]]
        for k in ("maps_a", "maps_b"):
            d[k] = {kind: torch.tensor(v, dtype=torch.float32) for kind, v in d[k].items()}
        d["ranking"] = [tuple(r) for r in d["ranking"]]
        return cls(**d)


# ---- compare ---------------------------------------------------------------------------------------------

def translate_both(a, b, text, heads_off, decoding):
    """The output ids (without </s>) each model chooses for `text` with the same decoding settings; a sample
    with no seed is given one, recorded in `decoding`, so that both draw alike and the draw can be repeated."""
    if decoding.get("method") == "sample" and decoding.get("seed") is None:
        decoding["seed"] = random.randrange(2 ** 63)
    return [tr.translate_ids([text], heads_off=off, **decoding)[0] for tr, off in zip((a, b), heads_off)]


def unit_scores(models, srcs, heads_off, chosen, text, by_words):
    """(labels, [log-probabilities under A, under B]) of one output's units: its pieces and </s>, or, where the
    models read different pieces, its words (each the sum of its pieces' log-probabilities) and </s>."""
    values, cut = [], []
    for tr, src, off in zip(models, srcs, heads_off):
        fed = output_ids(tr, text, chosen, by_words)
        values.append(teacher_forced(tr, src, fed, off)[0])  # (P,)
        cut.append(pieces(tr, fed + [tr.eos_id]))
    if not by_words:
        return cut[0], [v.tolist() for v in values]
    keys = [unit_keys(p, 0, 1) for p in cut]
    units = unit_order(*keys, "translation")
    sums = []
    for k, v in zip(keys, values):  # index_add, not a product with 0/1: a -inf stays -inf, not nan
        sums.append(torch.zeros(len(units)).index_add_(0, torch.tensor([units.index(u) for u in k]), v).tolist())
    return unit_labels(cut[0], keys[0], units), sums


def score_both(models, srcs, heads_off, chosen, texts, by_words):
    """[Scored of A's translation, Scored of B's]: each output scored under both models."""
    out = []
    for by, ids, text in zip("ab", chosen, texts):
        labels, (logp_a, logp_b) = unit_scores(models, srcs, heads_off, ids, text, by_words)
        out.append(Scored(translation=text, by=by, units=labels, logp_a=logp_a, logp_b=logp_b))
    return out


def check_lengths(models, names, chosen, texts, by_words):
    """CannotCompare where a model cannot be run on a translation: cut into its own pieces (models of other
    vocabularies), with its first input, it takes more positions than the model has."""
    for tr, who in zip(models, names):
        for side, ids, text in zip("AB", chosen, texts):
            n = len(output_ids(tr, text, ids, by_words)) + 1
            if n > positions(tr):
                raise CannotCompare("output-too-long", model=who, side=side, n=n, most=positions(tr))


def first_difference(chosen, scored, by_words):
    """The first unit where the two translations part: ids where the models read pieces, words (their labels)
    otherwise; None where they are the same."""
    seqs = [s.units for s in scored] if by_words else [list(ids) + [None] for ids in chosen]
    for i, (x, y) in enumerate(zip(*seqs)):
        if x != y:
            return i
    return None  # both end in </s> (None): one cannot be a prefix of the other


def attention_both(models, srcs, heads_off, fed_out, shared):
    """Each model's maps over the shared heads, teacher-forced on its ids of the same output: [{kind: (L, H,
    Q, K)}, ...] over pieces."""
    L, H = shared
    out = []
    for tr, src, off, ids in zip(models, srcs, heads_off, fed_out):
        _, maps = teacher_forced(tr, src, ids, off, maps=True)
        out.append({kind: m[:L, :H] for kind, m in maps.items()})
    return out


def word_maps(models, srcs, fed_out, maps, pick):
    """Both models' maps pooled into units (see the module's docstring): ([maps_a, maps_b], source unit labels,
    decoder input unit labels, {"a": [...], "b": [...]} the source units each model lacks). A source unit is
    labelled from A's pieces where A has it, else B's; the decoder's units from the pieces of the model whose
    translation they are (`pick`: 0 for A, 1 for B)."""
    src_keys = [unit_keys(pieces(tr, s), int(tr.bos_id is not None), 1) for tr, s in zip(models, srcs)]
    tgt_cut = [pieces(tr, [tr.start_id] + ids) for tr, ids in zip(models, fed_out)]
    tgt_keys = [unit_keys(p, 1, 0) for p in tgt_cut]
    src_units = unit_order(*src_keys, "sentence")
    tgt_units = unit_order(*tgt_keys, "translation")
    pooled = []
    for sk, tk, m in zip(src_keys, tgt_keys, maps):
        s, t = membership(sk, src_units), membership(tk, tgt_units)
        pooled.append({"encoder": pool(m["encoder"], s, s), "decoder": pool(m["decoder"], t, t),
                       "cross": pool(m["cross"], t, s)})
    labels = [unit_labels(pieces(tr, s), k, src_units) for tr, s, k in zip(models, srcs, src_keys)]
    src_labels = [x if u in src_keys[0] else y for x, y, u in zip(*labels, src_units)]
    missing = {who: [i for i, u in enumerate(src_units) if u not in keys] for who, keys in zip("ab", src_keys)}
    return pooled, src_labels, unit_labels(tgt_cut[pick], tgt_keys[pick], tgt_units), missing


def compare(a, b, text, method="greedy", beam=4, alpha=None, max_len=None, on="a", heads_off_a=None,
            heads_off_b=None, names=("A", "B"), **kw):
    """Compare translators `a` and `b` on the German `text`: both translations (decoded with the same settings,
    `method`, `beam`, ... as Translator.translate_ids takes them; alpha None: each model's own), each scored
    under both models, and their attention maps, teacher-forced on translation `on` ("a" or "b"), with every
    shared head ranked by mean TV. `heads_off_a` / `heads_off_b`: (kind, layer, head) triples switched off in
    that model. Returns a Comparison."""
    if on not in ("a", "b"):
        raise ValueError(f"on must be 'a' or 'b', not {on!r}")
    models = (a, b)
    for tr, who in zip(models, names):  # both tokenizers first: a missing one is said before the sentence's length
        if getattr(tr, "tokenizer", None) is None:
            raise CannotCompare("no-tokenizer", model=who)
    srcs = [source_ids(tr, text, who) for tr, who in zip(models, names)]
    heads_off = [check_heads(off, *model_shape(tr.model)) for tr, off in zip(models, (heads_off_a, heads_off_b))]
    by_words = not (same_vocabulary(a, b) and srcs[0] == srcs[1])
    decoding = dict(method=method, beam=beam, alpha=alpha, max_len=max_len, **kw)
    chosen = translate_both(a, b, text, heads_off, decoding)
    texts = [tr.tokenizer.decode(ids) for tr, ids in zip(models, chosen)]
    check_lengths(models, names, chosen, texts, by_words)
    scored = score_both(models, srcs, heads_off, chosen, texts, by_words)
    pick = "ab".index(on)
    fed_out = [output_ids(tr, texts[pick], chosen[pick], by_words) for tr in models]
    shapes = [list(model_shape(tr.model)) for tr in models]
    shared = [min(x, y) for x, y in zip(*shapes)]
    maps = attention_both(models, srcs, heads_off, fed_out, shared)
    if by_words:
        maps, src_labels, tgt_labels, missing = word_maps(models, srcs, fed_out, maps, pick)
        lacking = set(missing["a"]) | set(missing["b"])
        rows = {"encoder": torch.tensor([i not in lacking for i in range(len(src_labels))])}
    else:
        src_labels, tgt_labels = pieces(a, srcs[0]), pieces(a, [a.start_id] + fed_out[0])
        missing, rows = {"a": [], "b": []}, None
    return Comparison(
        source=text, names=list(names), level="words" if by_words else "pieces", scored=scored,
        first_difference=first_difference(chosen, scored, by_words), on=on, src_units=src_labels,
        tgt_units=tgt_labels, src_pieces={w: pieces(tr, s) for w, tr, s in zip("ab", models, srcs)},
        tgt_pieces={w: pieces(tr, [tr.start_id] + ids) for w, tr, ids in zip("ab", models, fed_out)},
        missing=missing, maps_a=maps[0], maps_b=maps[1],
        shapes={"a": shapes[0], "b": shapes[1], "shared": shared},
        ranking=rank_heads(maps[0], maps[1], rows), decoding=decoding,
        heads_off={w: [list(h) for h in off] for w, off in zip("ab", heads_off)})
