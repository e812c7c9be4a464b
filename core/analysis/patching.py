"""Patching the encoder: where a changed word travels, and which output words read it.

    python -m core.analysis.patching ORIGINAL EDITED [--model DIR] [--threads 2] [--repeat 5]   # timed, summed grid

    g = patch_grid(translator, "Ein Mann fährt Fahrrad.", "Eine Frau fährt Fahrrad.")
    g.recovered[layer, position, t]      # how much of y_t's log-probability the original's state there brings back
    g.recovered_total[layer, position]   # the same for the whole translation
    PatchGrid.from_json(g.to_json())

The original sentence is translated (greedy), and that translation y_1 ... y_n </s> is fed teacher-forced
throughout: its log-probabilities under the original source (`logp_original`), under the edited source
(`logp_edited`), and under the edited source with the ORIGINAL's encoder state restored at one (layer, source
position) (`logp_patched`), for every layer and position.

**Layers.** The encoder's residual stream is read at N + 1 points, `layer` 0 ... N:

    layer 0        the embedding output, src_embed(src) (embeddings x sqrt(d_model) + positional encoding),
                   the input of encoder layer 0
    layer i        the output of encoder layer i - 1 (the state after i layers), for 1 <= i <= N
    layer N        the last encoder layer's output, BEFORE the encoder's final norm (encoder.norm, which every
                   run applies after it: the identity for a post-norm model)

A patch at (layer i, position j) runs the edited sentence to layer i, puts the original's state at position j
in place of the edited one's (all D numbers of that position's vector), and runs encoder layers i ... N - 1 and
encoder.norm on from there; the decoder then reads that memory. A patch at layer 0 of every position is the
original run; a patch at layer N of position j changes only memory row j.

**Measures** (natural logs, per output token t and summed over the translation):

    gain       = logp_patched - logp_edited
    recovered  = (logp_patched - logp_edited) / (logp_original - logp_edited)

`recovered` is 1 where the patch brings the original's log-probability all the way back and 0 where it changes
nothing; it is NaN (null in JSON) where the edit moves the token's log-probability by less than `min_effect`
nats (|logp_original - logp_edited| < min_effect), where the fraction is undefined or noise.

**Positions.** The two sentences must be cut into the same number of source pieces (<s> and </s> included), so
that position j means the same slot in both; an edit that changes the number of pieces is a ValueError (change
one word for a word of as many pieces), never a silent alignment.

The runs are batched: for one layer, the S patched copies of the edited state go through the rest of the encoder
as one batch of S rows, calling the model's own modules (`encoder.layers[i](x, mask)`, `encoder.norm`,
`model.decode`, `model.generator`); no module is changed, no hook registered, so the model may serve other
threads meanwhile.
"""
import argparse
import math
import statistics
import time
from dataclasses import dataclass

import torch

from ..model import subsequent_mask
from ..translate import Translator
from .compare import DECIMALS, CannotCompare, Document, pieces, source_ids

MIN_EFFECT = 1e-4  # nats: below this the edit did not move a token, and `recovered` is undefined (NaN)


# ---- runs of the model's own modules ----------------------------------------------------------------------

def encoder_states(model, src, src_mask):
    """The residual stream at the N + 1 points of the module's docstring: [layer 0 (the embedding output), after
    encoder layer 0, ..., after encoder layer N - 1 (before encoder.norm)], each (B, S, D)."""
    x = model.src_embed(src)
    states = [x]
    for layer in model.encoder.layers:
        x = layer(x, src_mask)
        states.append(x)
    return states


def encode_from(model, x, src_mask, layer):
    """The memory (B, S, D) from the residual stream `x` (B, S, D) at point `layer`: encoder layers `layer` ... N - 1,
    then encoder.norm."""
    for module in list(model.encoder.layers)[layer:]:
        x = module(x, src_mask)
    return model.encoder.norm(x)


def target_logp(model, memory, src_mask, tgt_in, gold):
    """Teacher-forced natural log-probabilities (B, T) of the `gold` ids (T,) after decoder inputs `tgt_in` (T,),
    for each of the B memories (B, S, D)."""
    B, T = memory.size(0), tgt_in.size(0)
    tgt = tgt_in.unsqueeze(0).expand(B, T)
    out = model.decode(memory, src_mask.expand(B, -1, -1), tgt, subsequent_mask(T).to(memory.device))  # (B, T, D)
    logp = model.generator(out)  # (B, T, V)
    return logp.gather(2, gold.view(1, T, 1).expand(B, T, 1))[..., 0]


def patched_logp(model, states_o, states_e, layer, restore, src_mask, tgt_in, gold):
    """Teacher-forced log-probabilities (R, T) of `gold` with the edited run's stream at point `layer` and, in
    row r, the original's state restored at the positions where `restore` (R, S) is True: one batch of R rows
    through encoder layers `layer` ... N - 1, encoder.norm and the decoder. `states_o`, `states_e`: the
    encoder_states of the original and the edited sentence, each (1, S, D) per point."""
    x = torch.where(restore.unsqueeze(-1), states_o[layer], states_e[layer])  # (R, S, D)
    return target_logp(model, encode_from(model, x, src_mask, layer), src_mask, tgt_in, gold)


@torch.no_grad()
def grid_logp(model, src_original, src_edited, src_mask, tgt_in, gold):
    """(logp_original (T,), logp_edited (T,), logp_patched (N + 1, S, T)) for sources (1, S) of the same length
    and the decoder inputs `tgt_in` / targets `gold` (T,): per layer, one batch of S rows, row j with position j
    restored."""
    states_o = encoder_states(model, src_original, src_mask)
    states_e = encoder_states(model, src_edited, src_mask)
    N, S = len(model.encoder.layers), src_original.size(1)
    ends = torch.cat([model.encoder.norm(states_o[N]), model.encoder.norm(states_e[N])])  # (2, S, D)
    both = target_logp(model, ends, src_mask, tgt_in, gold)  # (2, T)
    one_each = torch.eye(S, dtype=torch.bool, device=src_original.device)  # (S, S): row j restores position j
    grid = [patched_logp(model, states_o, states_e, layer, one_each, src_mask, tgt_in, gold)
            for layer in range(N + 1)]  # each (S, T)
    return both[0], both[1], torch.stack(grid)


# ---- the result ------------------------------------------------------------------------------------------

def fraction(part, whole, min_effect):
    """part / whole elementwise, NaN where |whole| < min_effect."""
    return torch.where(whole.abs() >= min_effect, part / whole.where(whole != 0, torch.ones_like(whole)),
                       torch.full_like(part, math.nan))


def _nested(t):
    """A tensor as nested lists, numbers rounded to DECIMALS, NaN as None."""
    if t.dim() == 0:
        x = float(t)
        return None if math.isnan(x) else round(x, DECIMALS)
    return [_nested(x) for x in t]


def _tensor(value):
    """A float32 tensor from `_nested`'s lists (None as NaN)."""
    if isinstance(value, list):
        return torch.stack([_tensor(v) for v in value]) if value else torch.zeros(0)
    return torch.tensor(math.nan if value is None else float(value), dtype=torch.float32)


ARRAYS = ("logp_original", "logp_edited", "logp_patched", "gain", "recovered", "gain_total", "recovered_total")


@dataclass
class PatchGrid(Document):
    """The patching grid of an original sentence and an edited copy on one model (see the module's docstring for
    the layers and the measures). Shapes: T output tokens (y_1 ... </s>), S source pieces, N + 1 layers."""
    original: str
    edited: str
    translation: str          # the original's greedy translation (the one fed throughout)
    edited_translation: str   # the edited sentence's own greedy translation, for reference
    src_tokens: list          # the original's pieces (S)
    edited_tokens: list       # the edited sentence's pieces (S)
    changed: list             # the positions where the two differ
    tgt_tokens: list          # decoder inputs, <start> y_1 ... y_n (T)
    out_tokens: list          # the tokens scored, y_1 ... </s> (T)
    logp_original: torch.Tensor    # (T,)
    logp_edited: torch.Tensor      # (T,)
    logp_patched: torch.Tensor     # (N + 1, S, T)
    gain: torch.Tensor             # (N + 1, S, T) logp_patched - logp_edited
    recovered: torch.Tensor        # (N + 1, S, T) gain / (logp_original - logp_edited), NaN where undefined
    gain_total: torch.Tensor       # (N + 1, S) summed over the tokens
    recovered_total: torch.Tensor  # (N + 1, S) gain_total / (sum logp_original - sum logp_edited)
    min_effect: float = MIN_EFFECT

    JSON_FORMAT = "transformer-explorer/patch-grid"

    @classmethod
    def of(cls, logp_original, logp_edited, logp_patched, min_effect=MIN_EFFECT, **labels):
        """A PatchGrid from the three log-probability arrays, its measures computed; `labels`: the text fields."""
        gain = logp_patched - logp_edited  # (N + 1, S, T)
        gain_total = gain.sum(-1)  # (N + 1, S)
        effect_total = (logp_original.sum() - logp_edited.sum()).expand_as(gain_total)
        return cls(logp_original=logp_original, logp_edited=logp_edited, logp_patched=logp_patched, gain=gain,
                   recovered=fraction(gain, (logp_original - logp_edited).expand_as(gain), min_effect),
                   gain_total=gain_total, recovered_total=fraction(gain_total, effect_total, min_effect),
                   min_effect=min_effect, **labels)

    def to_dict(self):
        """Plain lists and numbers, log-probabilities rounded to 6 decimals, NaN as None."""
        d = {k: getattr(self, k) for k in ("original", "edited", "translation", "edited_translation", "src_tokens",
                                           "edited_tokens", "changed", "tgt_tokens", "out_tokens", "min_effect")}
        d.update({k: _nested(getattr(self, k)) for k in ARRAYS})
        return dict(format=self.JSON_FORMAT, version=1, **d)

    @classmethod
    def from_json(cls, text):
        """A PatchGrid from to_json's text (ValueError if it is not one)."""
        d = cls.read(text)
        return cls(**{k: _tensor(v) if k in ARRAYS else v for k, v in d.items()})


def same_length_sources(tr, original, edited):
    """The source ids of both sentences (the same number of pieces), or a ValueError that says why not."""
    src_o, src_e = source_ids(tr, original), source_ids(tr, edited)
    if len(src_o) != len(src_e):
        raise CannotCompare("pieces", edited=len(src_e), original=len(src_o))
    return src_o, src_e


@dataclass
class PatchInputs:
    """What every patched run of one pair of sentences reads: both sources (1, S) each, the mask (1, 1, S), the
    original's translation fed as decoder inputs `tgt_in` (T,) and scored as `gold` (T,), and both greedy
    outputs' ids (without </s>)."""
    src_original: torch.Tensor
    src_edited: torch.Tensor
    src_mask: torch.Tensor
    tgt_in: torch.Tensor
    gold: torch.Tensor
    out_original: list
    out_edited: list


def patch_inputs(tr, original, edited, max_len=None):
    """The PatchInputs of two sentences on translator `tr` (each translated greedily, one at a time); ValueError
    for an empty or too long sentence, or two that are cut into different numbers of pieces."""
    src_o, src_e = same_length_sources(tr, original, edited)
    out_o, out_e = tr.translate_ids([original, edited], max_len=max_len, batch_size=1)
    dev = tr.device
    src = torch.tensor([src_o, src_e], device=dev)  # (2, S)
    return PatchInputs(src[:1], src[1:], tr.source_mask(src[:1]), torch.tensor([tr.start_id] + out_o, device=dev),
                       torch.tensor(out_o + [tr.eos_id], device=dev), out_o, out_e)


def patch_grid(tr, original, edited, min_effect=MIN_EFFECT, max_len=None):
    """The patching grid (a PatchGrid) of `original` and `edited` (German, as many pieces each) on translator
    `tr`'s float32 model: the original translated greedily, that translation scored teacher-forced under the
    original, the edited, and the edited with the original's state restored at each (layer, position)."""
    p = patch_inputs(tr, original, edited, max_len)
    logp_o, logp_e, grid = grid_logp(tr.model, p.src_original, p.src_edited, p.src_mask, p.tgt_in, p.gold)
    src_o, src_e = p.src_original[0].tolist(), p.src_edited[0].tolist()
    return PatchGrid.of(
        logp_o.float().cpu(), logp_e.float().cpu(), grid.float().cpu(), min_effect,
        original=original, edited=edited, translation=tr.tokenizer.decode(p.out_original),
        edited_translation=tr.tokenizer.decode(p.out_edited), src_tokens=pieces(tr, src_o),
        edited_tokens=pieces(tr, src_e), changed=[j for j, (x, y) in enumerate(zip(src_o, src_e)) if x != y],
        tgt_tokens=pieces(tr, p.tgt_in.tolist()), out_tokens=pieces(tr, p.gold.tolist()))


def main(argv=None):
    ap = argparse.ArgumentParser(description="The patching grid of a sentence and an edited copy, timed; prints "
                                             "the recovered fraction of the whole translation per layer x position.")
    ap.add_argument("original", help="the German sentence")
    ap.add_argument("edited", help="an edited copy, cut into as many pieces")
    ap.add_argument("--model", default=None, help="model directory (default: assets/)")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=5, help="timed grids after one untimed")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    tr = Translator.load(args.model)
    g = patch_grid(tr, args.original, args.edited)  # untimed: the first call warms the kernels
    seconds = []
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        g = patch_grid(tr, args.original, args.edited)
        seconds.append(time.perf_counter() - t0)
    print(f"{len(g.src_tokens)} source pieces, {len(g.out_tokens)} output tokens, {g.logp_patched.size(0)} layers: "
          f"grid in {min(seconds):.3f} s best, {statistics.median(seconds):.3f} s median of {len(seconds)} "
          f"({torch.get_num_threads()} threads)")
    print(f"{g.translation!r} -> {g.edited_translation!r}; changed positions {g.changed}")
    print("recovered fraction of the translation's log-probability (rows: layer 0 = embedding ... N):")
    print("       " + " ".join(f"{t[:7]:>7}" for t in g.src_tokens))
    for layer, row in enumerate(g.recovered_total.tolist()):
        print(f"{layer:>6} " + " ".join(f"{x:7.3f}" for x in row))


if __name__ == "__main__":
    main()
