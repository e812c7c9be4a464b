"""The Learn path: its steps, in the order of the study note this project serves, each a few sentences
(locale/<lang>.json, `learn.<key>.*`), a question to answer before its answer is shown (the answer computed from
the model and the sentence), one action (a slider or a choice) that redraws the step's figure
(app/figures/learn.py), and the full tab it opens. A session's progress says which step is on screen, which are
done (their answer shown), which were answered right at the first try, and which wait for a second try. Read by the
Learn tab and by links (?learn=K)."""
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Callable

from core.train import rate

from .common import clamp, md_literal
from .figures import positional
from .figures.learn import (
    ACCUM,
    CLONES,
    MASK_REACH,
    PATCHING,
    _piece,
    accum_check,
    carried,
    clone_counts,
    context,
    draw_accum,
    draw_buffer,
    draw_clones,
    draw_embeddings,
    draw_ffn,
    draw_generator,
    draw_greedy,
    draw_history,
    draw_init,
    draw_layernorm,
    draw_masks,
    draw_noam,
    draw_patching,
    draw_relative,
    draw_scale,
    draw_smoothing,
    draw_teacher,
    ffn_units,
    half_bleu_epoch,
    history_points,
    layernorm_vectors,
    mask_batch,
    model_schedule,
    pad_query_reach,
    patch_fields,
    patch_run,
    patched_tokens,
    scale_weights,
    smoothed,
    tied,
    xavier_bound,
)
from .figures.timelapse import run_points
from .figures.training import shipped_log
from .i18n import table


@dataclass(frozen=True)
class Control:
    """A step's one action: a slider (its range may depend on the translation) or a choice among values."""
    kind: str = "slider"
    lo: object = 0                   # a number, or a function of the Inspection
    hi: object = 1
    step: float = 1
    default: object = 0              # likewise
    choices: tuple = ()              # a choice's values; their labels are learn.<key>.choice.<value>


@dataclass(frozen=True)
class Step:
    """A step of the path: its text's key, the full tab it opens (a links path), its action, its figure
    (`draw(ctx, value)` -> (figure, fields of its fact line)) and its question (`quiz(ctx)` -> (choices,
    index of the right one, fields of its answer)); `fill(ctx)`, for a tab that reads boxes of its own rather than
    the page's translation: {"boxes": {element id: text}, "run": the id of the button that runs them}, which the
    step's button writes there and presses once the tab is open (app/page/learn-open.js)."""
    key: str
    tab: str | Callable  # or a function of nothing that says which, where it depends on the model shipped
    control: Control
    draw: Callable
    quiz: Callable
    fill: Callable | None = None

    @property
    def opens(self):
        """The links path of the tab the step's button opens."""
        return self.tab() if callable(self.tab) else self.tab


def _value(x, ins):
    return x(ins) if callable(x) else x


def _options(values, right, fmt):
    """Choices from distinct numbers, in ascending order, and the index of `right` among them."""
    values = sorted(set(values))
    return [fmt(v) for v in values], values.index(right)


def _positions(ins):
    return len(ins.out_tokens)


def quiz_generator(c):
    vocab = c.model.generator.proj.out_features
    d = c.model.src_embed[0].d_model
    choices, right = _options([d, c.cfg["d_ff"], vocab, len(c.ins.src_tokens)], vocab, str)
    return choices, right, dict(vocab=vocab, d_model=d)


def quiz_clones(c):
    counts = {h: clone_counts(h)["registered"] for h in CLONES}
    choices, right = _options(counts.values(), counts["plain"], lambda v: f"{v:,}")
    return choices, right, dict(plain=f"{counts['plain']:,}", clones=f"{counts['clones']:,}")


def quiz_layernorm(c):
    v, _ = layernorm_vectors(c, 0.0)
    sigma, mean = round(float(v["sigma"]), 3), round(float(v["mean"]), 3)
    var = round(float(v["sigma"]) ** 2, 3)  # the variance: a tempting answer, and a wrong one
    values = [1.0, sigma, var, mean if abs(mean) > 1e-3 else 0.0]
    choices, right = _options(values, sigma, lambda x: f"γ = {x:.3f}")
    word = _piece(c.ins.src_tokens[min(1, len(c.ins.src_tokens) - 1)])  # plain text: the question is a label
    return choices, right, dict(sigma=f"{sigma:.3f}", mean=f"{mean:.3f}", var=f"{var:.3f}", word=word)


def quiz_scale(c):
    plain = round(float(scale_weights(c, False)[0].max(-1).values.mean()), 2)
    scaled = round(float(scale_weights(c, True)[0].max(-1).values.mean()), 2)
    values = {scaled, plain, round(1 / len(c.ins.src_tokens), 2)}
    choices, right = _options(values, plain, lambda x: f"{x:.2f}")
    return choices, right, dict(plain=f"{plain:.2f}", scaled=f"{scaled:.2f}")


def quiz_masks(c):
    batch = mask_batch(c)
    reach, row, real = pad_query_reach(batch)
    choices = [c.t(f"masks.reach.{k}") for k in MASK_REACH]
    return choices, MASK_REACH.index(reach), dict(pos=real, real=real, width=batch.tgt.size(1))


def quiz_buffer(c):
    pe = c.model.src_embed[1].pe
    in_params = any(p is pe for p in c.model.parameters())
    buffers = [n for n, b in c.model.named_buffers() if b is pe or n.endswith(".pe")]
    choices = [c.t("buffer.choice.parameter"), c.t("buffer.choice.buffer")]
    return choices, 0 if in_params else 1, dict(names=", ".join(f"`{n}`" for n in buffers), count=pe.numel())


FFN_DECOYS = (1.0, 0.0, 0.5, 0.25, 0.75)  # wrong shares offered, in this order, where clearly off the right one


def quiz_ffn(c):
    a, _ = ffn_units(c, 1)
    on = int((a > 0).sum())
    # the right share as the answer and the fact line write it (a whole percent), and three wrong ones at least 15
    # points away, or none at all where a few fire: a band such as "≈ 10%" for 5% would mark wrong the reader who
    # counted 5%
    right = int(f"{100 * on / a.numel():.0f}") / 100
    decoys = [v for v in FFN_DECOYS if abs(v - right) >= 0.15 or (v == 0 and right >= 0.04)][:3]
    choices, idx = _options([right, *decoys], right, lambda x: f"≈ {x:.0%}")
    return choices, idx, dict(share=f"{right:.0%}", d_ff=a.numel(),
                              word=md_literal(_piece(c.ins.src_tokens[min(1, len(c.ins.src_tokens) - 1)])))


def quiz_patching(c):
    """From which layer on a position other than the changed word's carries it: the first layer whose state, put
    back there, returns at least CARRIES of what the edit cost the translation (app/figures/learn.py carried)."""
    grid, ours = patch_run(c)
    values = patch_fields(c, grid, ours)
    first = carried(grid)[0]
    right = "never" if first is None else "embedding" if first == 0 else "first" if first == 1 else "later"
    return [c.t(f"patching.choice.{k}") for k in PATCHING], PATCHING.index(right), values


def quiz_embeddings(c):
    one = tied(c.model)
    emb = c.model.src_embed[0].lut.weight
    choices = [c.t("embeddings.choice.three"), c.t("embeddings.choice.one")]
    return choices, 1 if one else 0, dict(size=f"{emb.numel():,}", saved=f"{2 * emb.numel():,}" if one else "0")


RELATIVE_K = 5  # the offset step 10 asks about, where its slider starts (and the Positional tab opens)


def quiz_relative(c):
    d = c.model.src_embed[0].d_model
    res = positional.relative_residual(positional.encoding(d, positional.POSITIONS), RELATIVE_K).max().item()
    bands = [1e-1, 1e-3, 1e-5, 1e-9]
    right = min(bands, key=lambda b: abs(math.log10(max(res, 1e-12)) - math.log10(b)))
    choices, idx = _options(bands, right, lambda x: f"≈ {x:.0e}")
    return choices[::-1], len(bands) - 1 - idx, dict(res=f"{res:.1e}", last=positional.POSITIONS - 1, k=RELATIVE_K)


def quiz_init(c):
    d, d_ff = c.model.src_embed[0].d_model, c.cfg["d_ff"]
    b = round(xavier_bound(d, d_ff), 4)
    values = [b, round(1 / math.sqrt(d), 4), round(math.sqrt(6.0 / d), 4), round(1 / d_ff, 4)]
    choices, right = _options(values, b, lambda x: f"±{x:.4f}")
    return choices, right, dict(bound=f"{b:.4f}", d=d, d_ff=d_ff)


def greedy_scores(n):
    """The self-attention scores one head of one decoder layer computes to write `n` pieces (</s> included):
    without a cache (the Annotated Transformer's loop) step t scores its t queries against its t keys, the masked
    ones included, t * t; with a key/value cache it scores the newest query alone, t."""
    return sum(t * t for t in range(1, n + 1)), n * (n + 1) // 2


def quiz_greedy(c):
    """How many scores the uncached greedy loop computes in one head of one decoder layer: a question none of the
    page's text answers (the translation on screen before this step answers one about its words; the masks step
    states the cached count, the subsequent mask's pairs)."""
    n = len(c.ins.out_tokens)
    total, cached = greedy_scores(n)
    values = {v for v in (total, cached, n * n, n ** 3) if v > 0}
    choices, right = _options(values if len(values) > 1 else values | {2 * n}, total, lambda v: f"{v:,}")
    return choices, right, dict(n=n, total=f"{total:,}", cached=f"{cached:,}")


def quiz_teacher(c):
    t = min(2, len(c.ins.out_tokens) - 1)
    inp, target = c.ins.tgt_tokens[t], c.ins.out_tokens[t]
    pool = [target, inp] + [w for w in c.ins.out_tokens if w not in (target, inp)][:2]
    order = sorted(dict.fromkeys(pool), key=lambda w: _piece(w).lower())
    return ([_piece(w) for w in order], order.index(target),
            dict(pos=t + 1, input=md_literal(_piece(inp)), target=md_literal(_piece(target))))


def quiz_accum(c):
    r = accum_check(4)
    choices = [c.t("accum.choice.times"), c.t("accum.choice.same"), c.t("accum.choice.quarter")]
    return choices, 1 if r["max_rel_diff"] < 1e-4 else 0, dict(diff=f"{r['max_abs_diff']:.1e}")


def quiz_noam(c):
    d, factor, warmup = model_schedule()
    top = rate(warmup, d, factor, warmup)  # where step^-0.5 meets step * warmup^-1.5: the peak
    # the wrong ones: the factor forgotten, the paper's 4,000 warm-up steps, d_model^-0.5 forgotten
    values = [top, rate(warmup, d, 1.0, warmup), rate(4000, d, factor, 4000), factor * warmup ** -0.5]
    choices, right = _options(values, values[0], lambda x: f"{x:.2e}")
    return choices, right, dict(peak=f"{warmup:,}", warmup_q=f"{warmup:,}", d=d, factor=f"{factor:g}",
                                rate=f"{top:.2e}")


def quiz_smoothing(c):
    vocab = c.model.generator.proj.out_features
    td = smoothed(0.1, vocab)
    right = round(float(td[2]), 3)
    choices, idx = _options([1.0, right, 0.1, round(0.9 / 2, 3)], right, lambda x: f"{x:.3f}")
    return choices, idx, dict(right=f"{right:.3f}", other=f"{float(td[3]):.1e}", vocab=vocab)


SHIPPED_RUN_STEPS = ("noam", "history")  # steps that read a training log (the shipped model's, where the open has none)
HISTORY_PARTS = ("fifth", "half", "late")  # where in the run half of the final BLEU was reached


def quiz_history(c):
    from .figures.training import learn_log
    epoch, bleu, final, last = half_bleu_epoch(learn_log()[2])
    share = epoch / last
    right = 0 if share <= 0.2 else 1 if share <= 0.5 else 2
    choices = [c.t(f"history.choice.{part}") for part in HISTORY_PARTS]
    return choices, right, dict(epoch=epoch, bleu=f"{bleu:.1f}", final=f"{final:.1f}", last=last,
                                share=f"{bleu / final:.0%}")


def fill_patching(c):
    """Compare's two sentences as the patching step drew them: the original, its edited copy, and its Patch button."""
    grid, _ = patch_run(c)
    return {"boxes": {"cmp-original": grid.original, "cmp-edited": grid.edited}, "run": "cmp-patch"}


def _last_point(ins):
    return len(history_points()) - 1


def _history_tab():
    """The Time-lapse tab where the model ships with its run's history (the tab is there only then), else the
    Training tab, which replays the run's log."""
    from .shared import model_dir
    return "timelapse" if run_points(model_dir()) else "training"


# ---- the path ------------------------------------------------------------------------------------------

STEPS = (
    Step("generator", "translate", Control("slider", 1, _positions, 1, 1), draw_generator, quiz_generator),
    Step("clones", "lab", Control("radio", choices=tuple(CLONES), default="clones"), draw_clones, quiz_clones),
    Step("layernorm", "inside/layernorm", Control("slider", 0.0, 1.0, 0.05, 0.0), draw_layernorm, quiz_layernorm),
    Step("scale", "inside/scale", Control("radio", choices=("scaled", "raw"), default="scaled"), draw_scale,
         quiz_scale),
    Step("masks", "masks", Control("radio", choices=("padding", "subsequent", "both"), default="both"),
         draw_masks, quiz_masks),
    Step("buffer", "positional", Control("slider", 0, lambda ins: len(ins.src_tokens) - 1, 1, 1), draw_buffer,
         quiz_buffer),
    Step("ffn", "inside/ffn", Control("slider", 0, lambda ins: len(ins.src_tokens) - 1, 1, 1), draw_ffn, quiz_ffn),
    Step("patching", "compare/sentences", Control("slider", 0, patched_tokens, 1, 0), draw_patching, quiz_patching,
         fill_patching),
    Step("embeddings", "positional", Control("radio", choices=("scaled", "raw"), default="scaled"),
         draw_embeddings, quiz_embeddings),
    Step("relative", "positional", Control("slider", 1, 20, 1, RELATIVE_K), draw_relative, quiz_relative),
    Step("init", "inside/modules", Control("radio", choices=("xavier", "default"), default="xavier"), draw_init,
         quiz_init),
    Step("greedy", "translate", Control("slider", 1, _positions, 1, 1), draw_greedy, quiz_greedy),
    Step("teacher", "masks", Control("slider", 1, _positions, 1, 1), draw_teacher, quiz_teacher),
    Step("accum", "lab", Control("radio", choices=tuple(str(k) for k in ACCUM), default="4"), draw_accum, quiz_accum),
    Step("noam", "training", Control("slider", 100, 8000, 100, lambda ins: model_schedule()[2]), draw_noam,
         quiz_noam),
    Step("smoothing", "training", Control("slider", 0.0, 0.4, 0.05, 0.1), draw_smoothing, quiz_smoothing),
    Step("history", _history_tab, Control("slider", 0, _last_point, 1, 0), draw_history, quiz_history),
)
KEYS = tuple(s.key for s in STEPS)


TRIES = 2  # a question's checks before its answer is shown: a wrong pick first gets one more try


def new_progress():
    """A session's place on the path: the step on screen (0-based), the steps done (their answer shown), those
    answered right at the first try, the steps whose answer was shown (key -> the choice picked and the question it
    answered, see `revealed`) and those with a wrong first pick still to try again (key -> that pick and its
    question, see `missed`)."""
    return {"step": 0, "done": [], "right": [], "revealed": {}, "missed": {}}


def step_of(progress):
    return clamp((progress or {}).get("step", 0), 0, len(STEPS) - 1)


def figure_and_fact(step, c, value):
    """The step's figure for `value` and its fact line; once the answer is checked, the line goes on with what
    it kept back (`learn.<key>.seen`, where the step has one)."""
    fig, values = step.draw(c, value)
    fact = c.t(f"{step.key}.fact", **values)
    if step.key in SHIPPED_RUN_STEPS and not shipped_log()[2]:  # the open model ships no log: these are the shipped one's
        fact = c.t("shipped_run") + " " + fact
    if c.revealed and f"learn.{step.key}.seen" in table("en"):
        fact += ("" if fact.endswith(("。", "！", "？")) else " ") + c.t(f"{step.key}.seen", **values)  # no space after 。
    return fig, fact


def question_mark(right, values):
    """A question's identity: its right choice and its answer's fields. Another sentence that changes the answer
    makes it another question, which the learner has not answered yet."""
    return hashlib.sha1(json.dumps([right, values], sort_keys=True, default=str).encode()).hexdigest()[:12]


def revealed(progress, key, mark):
    """The index of the choice the learner checked for step `key`, if they checked this very question; else None."""
    seen = ((progress or {}).get("revealed") or {}).get(key)
    if isinstance(seen, dict) and seen.get("quiz") == mark and isinstance(seen.get("pick"), int):
        return seen["pick"]
    return None


def missed(progress, key, mark):
    """The index of the wrong choice the learner first checked for step `key`, if they did for this very question
    and its answer is not shown yet (they have one more try); else None."""
    seen = ((progress or {}).get("missed") or {}).get(key)
    if isinstance(seen, dict) and seen.get("quiz") == mark and isinstance(seen.get("pick"), int):
        return seen["pick"]
    return None


def revealed_first(progress, key):
    """Whether the answer shown for step `key` was picked right at the first try."""
    seen = ((progress or {}).get("revealed") or {}).get(key)
    return bool(isinstance(seen, dict) and seen.get("first", True))


def first_try(progress, key):
    """Whether the learner got step `key` right at the first try (of a question they were asked)."""
    return key in ((progress or {}).get("right") or ())


def verdict(c, key, choices, right, values, pick, first=True):
    """Whether the pick was right (`first`: at the first try, else at the second), and the answer, computed."""
    word = c.t("wrong" if pick != right else "right" if first else "right.second", answer=md_literal(choices[right]))
    return f"{word}\n\n{c.t(f'{key}.a', **values)}"


def try_again(c, choices, pick):
    """A first wrong pick: said wrong, the answer kept back for one more try."""
    return c.t("again", pick=md_literal(choices[pick]))


def quiz_state(step, ins, progress):
    """The step's question (choices, right, fields), and the context to draw it in: revealed when the
    learner has checked it."""
    c = context(ins)
    choices, right, values = step.quiz(c)
    pick = revealed(progress, step.key, question_mark(right, values))
    c.revealed = pick is not None and 0 <= pick < len(choices)
    return c, (choices, right, values), pick if c.revealed else None
