"""Translating a sentence as the page does: the decoding settings kept to their limits, what is wrong with a
sentence typed, whether it looks like German, the status line, and `translate` itself (the public /translate
API, and the Translate and Learn tabs' event). Its words are in the event's language (app.i18n), but the API's,
which are English."""
import re
import time

from core.decode import DECODING_LIMITS, DEFAULT_METHOD, METHODS

from .common import MAX_CHARS, md_literal, within
from .figures.compare import model_name
from .i18n import speaking, text
from .models import MODELS
from .shared import chosen, lengths_of, model_of, training_lengths

SETTINGS = ("method", *DECODING_LIMITS)  # the decoding settings, in the order translate() takes them


def first_value(name, default_alpha):
    """A decoding setting's first value (DECODING_LIMITS; the length penalty's is the model's, `default_alpha`)."""
    limit = DECODING_LIMITS[name]
    return default_alpha if limit.default is None else limit.default


def decoding_settings(values, default_alpha):
    """Decoding settings given by name, each kept to its DECODING_LIMITS; one not given (None) takes its first
    value."""
    return {name: within(DECODING_LIMITS[name], first_value(name, default_alpha) if v is None else v)
            for name, v in values.items()}


def input_problem(typed):
    """What is wrong with the German typed, in the event's language: nothing typed, or too long for the demo; else
    None."""
    typed = (typed or "").strip()
    if not typed:
        return text("translate.status.empty")
    if len(typed) > MAX_CHARS:
        return text("translate.status.too-long", n=f"{len(typed):,}", max=f"{MAX_CHARS:,}")
    return None


# Words of one language that are not words of the other (lower-cased): frequent in Multi30k's English captions
# and in its German ones. Words both languages have ("in", "an", "man", "hat", "am", "so", "was", "die" aside)
# are left out, so that one such word decides nothing.
ENGLISH_WORDS = frozenset("the a is are and of with on at his their while who this that to from for by into it "
                          "they he she we you my your not be has have there".split())
GERMAN_WORDS = frozenset("der die das den dem des ein eine einen einem einer eines und ist sind mit im auf von zu "
                         "zum zur nicht sich auch vor über unter bei nach aus für sein seine ihr ihre es er sie "
                         "wir ich du haben wird werden während dass oder aber durch neben zwei drei".split())


def german_hint(typed, tokenizer=None):
    """A notice, in the event's language (Markdown, the input's words escaped), when the text typed does not look like German;
    else None. Never a reason to refuse it: the model still translates it. Three signs, in order: no letter at
    all (emoji, digits); most of its characters unknown to the shipped SentencePiece model (emoji, another
    script: the model reads each run of them as one <unk> piece); more English words than German ones, from the
    two lists above (the model never saw English input). Measured in tests/test_learn.py: none of our German
    examples and probes is flagged, every one of their English translations is."""
    chars = [ch for ch in (typed or "") if not ch.isspace()]
    if not chars:
        return None  # nothing typed: input_problem says so
    if not any(ch.isalpha() for ch in chars):
        return text("translate.hint.letters")
    sp = tokenizer or chosen(None).tokenizer
    unk = sp.unk_id() if callable(sp.unk_id) else sp.unk_id  # SentencePiece's method; a converted model's id
    unknown = sum(1 for ch in chars if unk in sp.encode(ch))
    if unknown * 2 >= len(chars):
        return text("translate.hint.unknown", n=unknown, total=len(chars))
    words = re.findall(r"[^\W\d_]+", typed.lower())
    english = [w for w in words if w in ENGLISH_WORDS]
    german = sum(w in GERMAN_WORDS for w in words)
    if len(english) > german:
        return text("translate.hint.english", en=len(english), de=german,
                    words=", ".join(f"“{md_literal(w)}”" for w in dict.fromkeys(english[:3])))
    return None


UNKNOWN_SHOWN = 5  # the runs of characters without a piece an unknown-characters notice names, at most


def unknown_hint(typed, tokenizer=None):
    """A notice, in the event's language (Markdown, the characters escaped), where some of the characters typed
    have no piece in the model's vocabulary (an emoji, a word of Arabic in a German sentence), but fewer than
    german_hint's half: the model reads each run of them as one <unk> piece, which can derail the rest of the
    translation. Counts the characters and names the first UNKNOWN_SHOWN runs of them, each once; else None."""
    chars = [ch for ch in (typed or "") if not ch.isspace()]
    if not chars:
        return None
    sp = tokenizer or chosen(None).tokenizer
    unk = sp.unk_id() if callable(sp.unk_id) else sp.unk_id
    flags = [not ch.isspace() and unk in sp.encode(ch) for ch in typed]
    unknown = sum(flags)
    if not unknown or unknown * 2 >= len(chars):  # none, or german_hint's "does not look like German"
        return None
    runs = list(dict.fromkeys(typed[m.start():m.end()] for m in re.finditer("1+", "".join("01"[f] for f in flags))))
    # each run isolated (U+2068 ... U+2069): a run of Arabic or Hebrew keeps its quotes and its place in the list
    listed = " ".join(f"“\u2068{md_literal(run)}\u2069”" for run in runs[:UNKNOWN_SHOWN])
    return text("translate.hint.unknown-some", n=unknown, total=len(chars),
                chars=listed + (" …" if len(runs) > UNKNOWN_SHOWN else ""))


def length_hint(src_pieces, lengths):
    """A notice, in the event's language, where the source (`src_pieces`, as the model reads it: <s> ... </s>) is
    longer than 99% of the model's training sources, or than all of them (`lengths`: training_lengths' figures);
    else None, as where the figures are unknown."""
    if not lengths or src_pieces <= lengths["p99"]:
        return None
    key = "translate.hint.longest" if src_pieces > lengths["max"] else "translate.hint.long"
    return text(key, n=src_pieces, median=lengths["median"], p99=lengths["p99"], longest=lengths["max"])


def notices(settings, src_pieces, out_pieces, cut_to=None, source=None, lengths=None, tokenizer=None):
    """A translation's notices, in the event's language, each a sentence in Markdown, in this order: the input cut
    to `cut_to` pieces (as `src_pieces` counts them: one count for the line and its notices); the output at the
    maximum length (`settings`, as translate() hands them to the model); the input longer than nearly all the
    training sources (`lengths`, length_hint); the input, `source`, not looking like German (german_hint); and
    characters of it the model has no piece for (unknown_hint). The Translate tab's status line and the Learn
    tab's notice under its box both say these."""
    said = []
    if cut_to is not None:
        said.append(text("translate.status.cut", n=cut_to))
    if out_pieces > settings.get("max_len", out_pieces):  # max_len decoded tokens, none of them </s> (appended after)
        said.append(text("translate.status.max-len"))
    said.append(length_hint(src_pieces, lengths))
    if source:
        said += [german_hint(source, tokenizer), unknown_hint(source, tokenizer)]
    return [n for n in said if n]


def notice_lines(said):
    """Notices (`notices`) as Markdown, one paragraph each, each after the word "Notice:"."""
    return "".join(f"\n\n**{text('translate.status.notice')}** {n}" for n in said)


def translation_notices(ins):
    """`notices` of a kept translation (an Inspection): its cut, its length, its source's."""
    return notices(ins.decoding, len(ins.src_tokens), len(ins.out_tokens),
                   len(ins.src_tokens) if ins.truncated else None, ins.source, lengths_of(ins), model_of(ins).tokenizer)


def model_problem(name):
    """What is wrong with a model's name (a link's, the API's), in the event's language: one this server cannot
    open (its name escaped, the names it has listed); else None (None itself: the page's own model)."""
    if name is None or name == "" or name in MODELS.names():
        return None
    shown = md_literal(name[:100] if isinstance(name, str) else str(type(name).__name__))
    return text("translate.status.no-model", name=shown, names=", ".join(md_literal(n) for n in MODELS.names()))


def refused(typed, ins=None):
    """After a press of Translate: what is wrong with the German typed (input_problem), in the event's language,
    and, where an earlier sentence was translated (`ins`), that the views are still that sentence's (its text
    escaped); None where nothing is wrong."""
    problem = input_problem(typed)
    if problem is not None and ins is not None and getattr(ins, "source", None):
        problem += "\n\n" + text("translate.status.still", source=md_literal(ins.source))
    return problem


def status_line(settings, src_pieces, out_pieces, ms=None, cut_to=None, source=None, lengths=None, rank=None, of=0,
                tokenizer=None, model=None):
    """A translation's status line in Markdown, in the event's language: the model that made it (`model`, a name of
    app.models.MODELS, said where it is not the page's own), how it was decoded (`settings`, as translate() hands
    them to the model), its pieces in and out and its time on the server (`ms`, left out where unknown); then its
    `notices` (`cut_to`, `source`, `lengths`, `tokenizer`: theirs). `rank`: the output is the beam's hypothesis
    `rank` of `of` (its n-best list), said where it is not the best."""
    method = settings.get("method", DEFAULT_METHOD)
    decoding = text(f"translate.status.{method}", beam=settings.get("beam"),
                    alpha=f"{settings.get('alpha', 0):g}", temperature=f"{settings.get('temperature', 1):g}",
                    top_k=settings.get("top_k", 0))
    parts = [decoding, text("translate.status.pieces", src=src_pieces, out=out_pieces)]
    if rank is not None and rank > 1:
        parts.insert(1, text("translate.status.rank", rank=rank, n=of))
    if ms is not None:
        parts.append(text("translate.status.time", ms=f"{ms:.0f}"))
    if model and model != MODELS.default:
        parts.insert(0, text("translate.status.model", model=md_literal(model_name(model))))
    return " · ".join(parts) + notice_lines(notices(settings, src_pieces, out_pieces, cut_to, source, lengths,
                                                    tokenizer))


def translate(text, method=DEFAULT_METHOD, beam=None, alpha=None, temperature=None, top_k=None, max_len=None,
              previous=None, model=None):
    """Translate one German sentence with `model` (a name of app.models.MODELS; the page's own by default) and keep
    everything the other tabs show (returned as state). The settings are kept to DECODING_LIMITS, as the sliders
    are; one not given takes its first value.

    Returns (English translation, a status line in Markdown (in English: the page's status view writes it again
    in the page's language), the Inspection to keep)."""
    with speaking("en"):  # the API's words
        problem = input_problem(text) or model_problem(model)
    if problem:
        return "", problem, previous
    text = text.strip()
    method = method if method in METHODS else DEFAULT_METHOD
    tr = chosen(model)
    sampling = dict(temperature=temperature, top_k=top_k) if method == "sample" else {}
    settings = dict(method=method, **decoding_settings(dict(beam=beam, alpha=alpha, max_len=max_len, **sampling),
                                                       tr.alpha))
    t0 = time.perf_counter()
    ins = tr.inspect(text, nbest=True, **settings)  # a beam search keeps its final hypotheses
    ms = (time.perf_counter() - t0) * 1e3
    ins.server_ms = ms  # for its status line in another language (status_view)
    with speaking("en"):
        status = status_line(settings, len(ins.src_tokens), len(ins.out_tokens), ms,
                             len(ins.src_tokens) if ins.truncated else None, source=text,
                             lengths=training_lengths(tr.directory), tokenizer=tr.tokenizer, model=ins.model)
    return ins.translation, status, ins


def open_hypothesis(ins, index):
    """The Inspection of hypothesis `index` (0: the best) of `ins`'s n-best list: its output run teacher-forced
    with every map kept (Translator.inspect with `output`), by the model that made it, with the same settings,
    heads and n-best list."""
    tr = model_of(ins)
    t0 = time.perf_counter()
    chosen = tr.inspect(ins.source, output=ins.nbest[index].ids, nbest=ins.nbest, heads_off=ins.heads_off,
                        **ins.decoding)
    chosen.server_ms = (time.perf_counter() - t0) * 1e3
    return chosen
