"""A view's numbers as files: CSV (one row per number, its labels beside it: pandas.read_csv reads it as it is) and
NumPy .npz (the arrays as the page holds them, with their token labels as arrays of strings: numpy.load reads it
without pickle). Named after the view and the sentence (`slug`), written by app.common.export_file (a directory
swept of files older than an hour).

    translation's attention   attention.csv: kind, layer, head, query, query_token, key, key_token, weight
                              attention.npz: encoder (L, H, S, S), decoder (L, H, T, T), cross (L, H, T, S),
                              src_tokens (S), tgt_tokens (T, the decoder's inputs), out_tokens (T)
    its probabilities         probabilities.csv: position, input_token, output_token, probability, then
                              top<r>_token, top<r>_probability for each of the K candidates
                              probabilities.npz: tgt_tokens, out_tokens, token_probs (T), topk_tokens (T, K),
                              topk_probs (T, K)
    Compare's head ranking    ranking.csv: rank, kind, layer, head, mean_tv (every shared head, most different first)
                              ranking.npz: kind, layer, head, mean_tv, models (A, B)
    Compare's patching grid   patching.csv: layer, position, source_token, edited_token, changed, output,
                              output_token, logp_original, logp_edited, logp_patched, gain, recovered (empty: NaN)
                              patching.npz: logp_patched, gain, recovered (N + 1, S, T), gain_total,
                              recovered_total (N + 1, S), logp_original, logp_edited (T), src_tokens,
                              edited_tokens (S), tgt_tokens, out_tokens (T), changed

Each .npz also holds `source` (the German, 0-d) and, for a translation, `translation`. A float is written to CSV
with 9 significant digits, which gives a float32 back exactly. The patching grid's `layer` 0 is the embedding and
layer i the state after encoder layer i (core/analysis/patching.py)."""
import csv
import io
import math
import re
import unicodedata

import gradio as gr
import numpy as np

from core.instrument import KINDS

from .common import export_file
from .i18n import L

FOLD = {"ä": "ae", "ö": "oe", "ü": "ue", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue", "ß": "ss"}


def slug(text, most=32):
    """A file name's part from a sentence: ASCII letters and digits joined by '-', German umlauts folded (ä: ae),
    cut after a whole word within `most` characters (a first word longer than that: cut there); "sentence" where
    nothing is left."""
    folded = unicodedata.normalize("NFKD", "".join(FOLD.get(c, c) for c in str(text)))
    words = re.sub(r"[^a-z0-9]+", "-", folded.encode("ascii", "ignore").decode().lower()).strip("-")
    if len(words) > most:
        cut = words[:most + 1].rfind("-")
        words = words[:cut] if cut > 0 else words[:most]
    return words or "sentence"


def number(x):
    """A float as CSV text: 9 significant digits (a float32 read back exactly), empty for NaN."""
    x = float(x)
    return "" if math.isnan(x) else f"{x:.9g}"


def csv_text(header, rows):
    """A header and rows as CSV text (the csv module's quoting: a token with a comma or quote stays one cell)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def npz_bytes(arrays):
    """Arrays (numbers, and strings as unicode arrays) as a compressed .npz file's bytes."""
    out = io.BytesIO()
    np.savez_compressed(out, **{k: np.asarray(v) for k, v in arrays.items()})
    return out.getvalue()


def strings(items):
    """Token labels as a unicode array (never object: np.load reads it without pickle)."""
    return np.array([str(t) for t in items], dtype=str)


# ---- a translation (an Inspection) --------------------------------------------------------------------------

ATTENTION_HEADER = ("kind", "layer", "head", "query", "query_token", "key", "key_token", "weight")


def attention_labels(ins, kind):
    """(query tokens, key tokens) of a kind of attention: the source's for the encoder, the decoder's inputs for
    its self-attention, decoder inputs over the source for cross-attention."""
    return {"encoder": (ins.src_tokens, ins.src_tokens), "decoder": (ins.tgt_tokens, ins.tgt_tokens),
            "cross": (ins.tgt_tokens, ins.src_tokens)}[kind]


def attention_rows(ins):
    """One row per weight of every kind, layer, head, query and key (ATTENTION_HEADER)."""
    for kind in KINDS:
        queries, keys = attention_labels(ins, kind)
        maps = getattr(ins, kind).float().numpy()
        for layer, head in np.ndindex(*maps.shape[:2]):
            for q, row in enumerate(maps[layer, head]):
                for k, w in enumerate(row):
                    yield kind, layer, head, q, queries[q], k, keys[k], number(w)


def attention_arrays(ins):
    maps = {kind: getattr(ins, kind).float().numpy() for kind in KINDS}
    return dict(maps, src_tokens=strings(ins.src_tokens), tgt_tokens=strings(ins.tgt_tokens),
                out_tokens=strings(ins.out_tokens), source=np.array(ins.source), translation=np.array(ins.translation))


def probability_header(ins):
    k = max((len(step) for step in ins.topk), default=0)
    return ["position", "input_token", "output_token", "probability",
            *(f"top{r}_{what}" for r in range(1, k + 1) for what in ("token", "probability"))]


def probability_rows(ins):
    for t, (given, out, p, top) in enumerate(zip(ins.tgt_tokens, ins.out_tokens, ins.token_probs, ins.topk)):
        yield [t, given, out, number(p), *(v for piece, q in top for v in (piece, number(q)))]


def probability_arrays(ins):
    return dict(tgt_tokens=strings(ins.tgt_tokens), out_tokens=strings(ins.out_tokens),
                token_probs=np.array(ins.token_probs, dtype=np.float64),
                topk_tokens=np.array([[piece for piece, _ in step] for step in ins.topk], dtype=str),
                topk_probs=np.array([[p for _, p in step] for step in ins.topk], dtype=np.float64),
                source=np.array(ins.source), translation=np.array(ins.translation))


def _pair(stem, header, rows, arrays):
    """The CSV and the .npz of one view, written: [csv path, npz path]."""
    return [export_file(csv_text(header, rows), stem, ".csv"), export_file(npz_bytes(arrays), stem, ".npz")]


def attention_files(ins):
    """The translation's attention maps, every kind, layer and head: [CSV, NPZ] paths."""
    return _pair(f"attention-{slug(ins.source)}", ATTENTION_HEADER, attention_rows(ins), attention_arrays(ins))


def probability_files(ins):
    """The translation's token probabilities and top-k candidates: [CSV, NPZ] paths."""
    return _pair(f"probabilities-{slug(ins.source)}", probability_header(ins), probability_rows(ins),
                 probability_arrays(ins))


# ---- the Compare tab: its head ranking (a Comparison) and its patching grid (a PatchGrid) --------------------

RANKING_HEADER = ("rank", "kind", "layer", "head", "mean_tv")


def ranking_files(c):
    """Every shared head ranked by mean total variation between A and B: [CSV, NPZ] paths."""
    rows = [(r, kind, layer, head, number(v)) for r, (kind, layer, head, v) in enumerate(c.ranking, 1)]
    kinds, layers, heads, values = zip(*c.ranking) if c.ranking else ((), (), (), ())
    arrays = dict(kind=strings(kinds), layer=np.array(layers, dtype=np.int64), head=np.array(heads, dtype=np.int64),
                  mean_tv=np.array(values, dtype=np.float64), models=strings(c.names), source=np.array(c.source))
    return _pair(f"ranking-{slug(c.source)}", RANKING_HEADER, rows, arrays)


GRID_HEADER = ("layer", "position", "source_token", "edited_token", "changed", "output", "output_token",
               "logp_original", "logp_edited", "logp_patched", "gain", "recovered")


def grid_rows(g):
    original, edited = g.logp_original.tolist(), g.logp_edited.tolist()
    patched, gain, recovered = (getattr(g, k).numpy() for k in ("logp_patched", "gain", "recovered"))
    for layer, j, t in np.ndindex(*patched.shape):
        yield (layer, j, g.src_tokens[j], g.edited_tokens[j], int(j in g.changed), t, g.out_tokens[t],
               number(original[t]), number(edited[t]), number(patched[layer, j, t]), number(gain[layer, j, t]),
               number(recovered[layer, j, t]))


def grid_files(g):
    """The encoder's patching grid, per output token (the totals in the .npz): [CSV, NPZ] paths."""
    arrays = {k: getattr(g, k).numpy() for k in ("logp_patched", "gain", "recovered", "gain_total",
                                                   "recovered_total", "logp_original", "logp_edited")}
    arrays.update(src_tokens=strings(g.src_tokens), edited_tokens=strings(g.edited_tokens),
                  tgt_tokens=strings(g.tgt_tokens), out_tokens=strings(g.out_tokens),
                  changed=np.array(g.changed, dtype=np.int64), source=np.array(g.original), edited=np.array(g.edited))
    return _pair(f"patching-{slug(g.original)}", GRID_HEADER, grid_rows(g), arrays)


# ---- the Score tab: a scored set ---------------------------------------------------------------------------

SCORED_HEADER = ("pair", "chrf", "german", "reference", "translation")


def scored_files(scored):
    """A scored set, a row a pair in the set's order (pair: its line, from 1) with its sentence chrF: [CSV, NPZ]
    paths; the .npz holds german, reference, translation, sentence_chrf, and the corpus bleu, corpus_chrf and ter
    with their sacreBLEU signatures."""
    rows = [(i, number(c), s, r, h) for i, (c, s, r, h) in
            enumerate(zip(scored.chrf, scored.srcs, scored.refs, scored.hyps), 1)]
    r = scored.result
    arrays = dict(german=strings(scored.srcs), reference=strings(scored.refs), translation=strings(scored.hyps),
                  sentence_chrf=np.array(scored.chrf, dtype=np.float64), bleu=np.array(r["bleu"]),
                  corpus_chrf=np.array(r["chrf"]), ter=np.array(r["ter"]),
                  **{f"{k}_signature": np.array(r[f"{k}_signature"]) for k in ("bleu", "chrf", "ter")})
    return _pair(f"scored-{slug(scored.srcs[0])}-{len(scored.srcs)}-pairs", SCORED_HEADER, rows, arrays)


# ---- on the page: a small button that writes a view's files, and the list of them it shows --------------------

FILES_HIDDEN = gr.update(value=None, visible=False)  # the files of an earlier result: out of sight


def download(label, elem_id):
    """A small button (its label a key of ui.*) and, under it, the file list it fills (hidden until then):
    (button, files)."""
    button = gr.Button(L(label), size="sm", elem_id=elem_id)
    files = gr.File(file_count="multiple", visible=False, interactive=False, label=L("ui.export.files"),
                    elem_id=f"{elem_id}-files")
    return button, files


def shown_files(paths):
    """The file list showing `paths` (None: hidden)."""
    return FILES_HIDDEN if paths is None else gr.update(value=paths, visible=True)
