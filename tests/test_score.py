"""Scoring your own set: core.evaluate's reading and checks (each bad input one message, nothing translated), the
page's Score tab against the command line's path on the same pairs (the same translations and figures, sacreBLEU's
own numbers), its progress, a pair opened in every tab with its reference, the limits where the app runs, and the
scored set's export read back."""
import csv
import gzip

import numpy as np
import pytest
from sacrebleu.metrics import BLEU, CHRF, TER

from core import evaluate as ev
from tests.conftest import needs_shipped

GERMAN = ["Ein Mann fährt Fahrrad.", "Zwei Hunde spielen im Schnee.", "Eine Frau liest ein Buch.",
          "Ein Kind isst einen Apfel.", "Drei Männer arbeiten an einer Baustelle.", "Ein Hund rennt über die Wiese.",
          "Eine Gruppe von Menschen wartet an einer Bushaltestelle.", "Ein Mädchen tanzt auf einer Bühne.",
          "Ein Koch bereitet in einer Küche Essen zu.", "Zwei Fußballspieler kämpfen um den Ball.", "Ein Junge springt.",
          "Eine ältere Dame füttert Tauben auf einem Platz."]
ENGLISH = ["A man rides a bike.", "Two dogs play in the snow.", "A woman reads a book.", "A child eats an apple.",
           "Three men work at a construction site.", "A dog runs across the meadow.",
           "A group of people waits at a bus stop.", "A girl dances on a stage.", "A cook prepares food in a kitchen.",
           "Two soccer players fight for the ball.", "A boy jumps.", "An older lady feeds pigeons in a square."]


def key_of(call):
    with pytest.raises(ev.BadPairs) as e:
        call()
    return e.value.what.key


def test_read_pairs_takes_two_texts_or_one_tsv():
    assert ev.read_pairs("a\nb\n\n", "c\r\nd\n") == [("a", "c"), ("b", "d")]  # trailing empty lines, CRLF
    assert ev.read_pairs("a\tc\nb \t d\n") == [("a", "c"), ("b", "d")]
    assert ev.text_of(gzip.compress("x\ty\n".encode())) == "x\ty\n"
    assert ev.text_of("\ufeffä".encode("utf-8")) == "ä"  # a byte-order mark dropped


@pytest.mark.parametrize("call, key", [
    (lambda: ev.read_pairs("a\nb", "c"), "evaluate.bad.count"),
    (lambda: ev.read_pairs("a\n\nb", "c\nd\ne"), "evaluate.bad.empty"),
    (lambda: ev.read_pairs("a\nb", "c\n  "), "evaluate.bad.count"),  # the English's last line is empty: dropped
    (lambda: ev.read_pairs("a\n \nb", "c\nd\ne"), "evaluate.bad.empty"),
    (lambda: ev.read_pairs("a\tb\nc d"), "evaluate.bad.tsv"),
    (lambda: ev.read_pairs("a\tb\tc"), "evaluate.bad.tsv"),
    (lambda: ev.read_pairs("", ""), "evaluate.bad.none"),
    (lambda: ev.read_pairs("a\nb\nc", "d\ne\nf", most=2), "evaluate.bad.many"),
    (lambda: ev.read_pairs("a", "b" * 11, longest=10), "evaluate.bad.long"),
    (lambda: ev.text_of(b"\x00\x01binary", "x.bin"), "evaluate.bad.binary"),
    (lambda: ev.text_of("ä".encode("latin-1"), "x.txt"), "evaluate.bad.binary"),
    (lambda: ev.text_of(b"\x1f\x8bnot gzip", "x.gz"), "evaluate.bad.binary"),
])
def test_each_bad_input_is_one_message(call, key):
    assert key_of(call) == key


def test_the_message_names_the_line_in_both_languages():
    from core.words import say
    with pytest.raises(ev.BadPairs) as e:
        ev.read_pairs("a\nb\nc", "d\n\nf")
    assert str(e.value) == say(e.value.what) and "Line 2 of the English" in str(e.value)
    assert "英语的第 2 行" in say(e.value.what, "zh-CN")


def test_the_corpus_figures_are_sacrebleus_own():
    hyps, refs = ["A man rides a bike.", "Two dogs play."], ["A man rides a bicycle.", "Two dogs play in snow."]
    got = ev.corpus_scores(hyps, refs)
    for name, metric in (("bleu", BLEU()), ("chrf", CHRF()), ("ter", TER())):
        assert got[name] == metric.corpus_score(hyps, [refs]).score
        assert got[f"{name}_signature"] == str(metric.get_signature())
    assert ev.sentence_chrf(hyps, refs) == [CHRF().sentence_score(h, [r]).score for h, r in zip(hyps, refs)]


# ---- the page's Score tab --------------------------------------------------------------------------------

def test_the_limit_is_lower_on_a_public_space(monkeypatch):
    from app import hosting
    monkeypatch.delenv("EXPLORER_SCORE_MAX_PAIRS", raising=False)
    assert hosting.score_pairs_max(on_space=True) == hosting.SCORE_PAIRS_SPACE < hosting.score_pairs_max(on_space=False)
    monkeypatch.setenv("EXPLORER_SCORE_MAX_PAIRS", "7")
    assert hosting.score_pairs_max(on_space=True) == 7
    monkeypatch.setenv("EXPLORER_SCORE_MAX_PAIRS", "lots")
    assert hosting.score_pairs_max(on_space=False) == hosting.SCORE_PAIRS_LOCAL


def test_the_tab_reads_boxes_a_pasted_tsv_and_files(tmp_path, monkeypatch):
    from app.tabs import score
    assert score.check("a\nb", "c\nd", None) == [("a", "c"), ("b", "d")]
    assert score.check("a\tc\nb\td", "", None) == [("a", "c"), ("b", "d")]  # a TSV pasted in the German box
    de, en, tsv = tmp_path / "set.de", tmp_path / "set.en", tmp_path / "set.tsv.gz"
    de.write_text("a\nb\n", encoding="utf-8")
    en.write_text("c\nd\n", encoding="utf-8")
    tsv.write_bytes(gzip.compress("a\tc\nb\td\n".encode()))
    for files in ([str(de), str(en)], [str(en), str(de)], [str(tsv)]):  # *.en given first: German still first
        assert score.check("ignored", "", files) == [("a", "c"), ("b", "d")]
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)))
    assert key_of(lambda: score.check("", "", [str(binary)])) == "evaluate.bad.binary"
    assert key_of(lambda: score.check("", "", [str(de), str(en), str(tsv)])) == "score.bad.files"
    monkeypatch.setenv("EXPLORER_SCORE_MAX_PAIRS", "1")
    assert key_of(lambda: score.check("a\nb", "c\nd", None)) == "evaluate.bad.many"
    big = tmp_path / "big.tsv"  # larger than one pair of the longest sentences could be: not even read
    big.write_text("a\tb\n" * 3000, encoding="utf-8")
    assert key_of(lambda: score.check("", "", [str(big)])) == "score.bad.size"


def test_bad_input_says_so_once_and_runs_nothing(monkeypatch, tmp_path):
    from app.i18n import speaking
    from app.tabs import score

    def never(*a, **k):
        raise AssertionError("nothing is translated for a bad set")
    monkeypatch.setattr(score, "translated_batches", never)
    for lang, said in (("en", "The German has 2 lines and the English 1"), ("zh-CN", "德语有 2 行，英语有 1 行")):
        with speaking(lang):
            steps = list(score.score_set("a\nb", "c", None, 1, "kept"))
        assert len(steps) == 1 and steps[0][0] == "kept" and said in steps[0][1]
    with speaking("en"):
        assert "no pair to score" in list(score.score_set("", "", None, 1, None))[0][1]
        # a file's name is the reader's text: made literal for Markdown
        named = tmp_path / "[x](javascript:alert(1)).bin"
        named.write_bytes(b"\x00\x01")
        out = list(score.score_set("", "", [str(named)], 1, None))[0][1]
    assert "not a text file" in out and "[x](" not in out and "\\[x\\]\\(javascript" in out


@needs_shipped
def test_the_page_scores_as_the_command_line_does(monkeypatch):
    """The same pairs, the same batch size: the page's generator and core.evaluate.evaluate give the same
    translations and figures; the progress shows at once (the set read), then moves once a batch, and each batch is
    a step a cancel can stop at."""
    from app.i18n import speaking
    from app.shared import get_translator
    from app.tabs import score
    monkeypatch.setattr(score, "BATCH", 5)
    with speaking("en"):
        steps = list(score.score_set("\n".join(GERMAN), "\n".join(ENGLISH), None, 1, None))
    assert [s[1] for s in steps[:-1]] == ["Translated 0 of 12 pairs…", "Translated 5 of 12 pairs…", "Translated 10 of 12 pairs…",
                                          "Translated 12 of 12 pairs…"]
    scored, status = steps[-1]
    assert status == "Scored 12 pairs."
    hyps, result = ev.evaluate(get_translator(), GERMAN, ENGLISH, batch_size=5)
    assert scored.hyps == hyps and scored.chrf == result["sentence_chrf"]
    for k in ("bleu", "chrf", "ter", "bleu_signature", "chrf_signature", "ter_signature", "sentences", "beam"):
        assert scored.result[k] == result[k], k
    assert hyps == get_translator().translate(GERMAN, batch_size=5)  # what the command line translated before
    assert scored.result["bleu"] == BLEU().corpus_score(hyps, [ENGLISH]).score
    # the table: worst first, each row its pair's number, chrF, German, reference and translation
    from app.figures.score import summary_markdown, table_rows
    rows = table_rows(scored)
    assert [r[1] for r in rows] == sorted(r[1] for r in rows)
    i = rows[0][0] - 1
    assert rows[0][2:] == [GERMAN[i], ENGLISH[i], hyps[i]] and rows[0][1] == round(min(scored.chrf), 1)
    with speaking("zh-CN"):
        text = summary_markdown(scored)
    assert "共 12 对句子" in text and result["bleu_signature"] in text.replace("\\", "")


@needs_shipped
def test_a_row_opens_its_pair_with_its_reference(monkeypatch):
    import gradio as gr

    from app.i18n import speaking
    from app.shared import get_translator
    from app.tabs import score, translate
    monkeypatch.setattr(score, "BATCH", 64)
    with speaking("en"):
        scored = list(score.score_set("\n".join(GERMAN[:4]), "\n".join(ENGLISH[:3] + ["A <b>kid</b> eats."]), None, 2,
                                      None))[-1][0]
    ins, german, english, tabs = score.open_pair(scored, gr.SelectData(None, {
        "index": [0, 2], "value": "", "row_value": [4, 10.0, GERMAN[3], "", ""]}))
    assert german == GERMAN[3] and english == scored.hyps[3] == ins.translation
    assert ins.reference == "A <b>kid</b> eats."
    assert tabs.selected == "translate"
    tr = get_translator()
    assert ins.tgt_tokens[1:] == [tr.tokenizer.id_to_piece(i) for i in scored.ids[3]]  # the scored ids, not redecoded
    assert ins.decoding["method"] == "beam" and ins.decoding["beam"] == 2
    with speaking("en"):
        ref = translate.reference_view(ins)
        assert "&lt;b&gt;kid&lt;/b&gt;" in ref and "<b>" not in ref and "chrF" in ref  # escaped
        assert translate.reference_view(tr.inspect(GERMAN[0])) == ""
        assert translate.status_view(ins)
    assert score.open_pair(scored, gr.SelectData(None, {"index": [0, 0], "value": "", "row_value": None})) == (
        gr.skip(),) * 4


@needs_shipped
def test_the_scored_set_exports_read_back(monkeypatch):
    from app import exports
    from app.i18n import speaking
    from app.tabs import score
    with speaking("en"):
        scored = list(score.score_set("\n".join(GERMAN[:5]), "\n".join(ENGLISH[:5]), None, 1, None))[-1][0]
    csv_path, npz_path = exports.scored_files(scored)
    with open(csv_path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert tuple(rows[0]) == exports.SCORED_HEADER
    for i, row in enumerate(rows[1:]):
        assert row[0] == str(i + 1) and row[2:] == [GERMAN[i], ENGLISH[i], scored.hyps[i]]
        assert float(row[1]) == pytest.approx(scored.chrf[i], rel=1e-8)
    with np.load(npz_path, allow_pickle=False) as d:
        assert d["german"].tolist() == GERMAN[:5] and d["sentence_chrf"].tolist() == scored.chrf
        assert float(d["bleu"]) == scored.result["bleu"] and str(d["ter_signature"]) == scored.result["ter_signature"]


@needs_shipped
def test_the_command_line_reads_a_tsv_and_refuses_a_bad_set(tmp_path, capsys):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{g}\t{e}\n" for g, e in zip(GERMAN[:3], ENGLISH[:3])), encoding="utf-8")
    ev.main(["--tsv", str(tsv), "--json"])
    out = capsys.readouterr().out
    assert "TER" in out and "nrefs:1" in out and '"ter"' in out
    de, en = tmp_path / "a.de", tmp_path / "a.en"
    de.write_text("a\nb\n", encoding="utf-8")
    en.write_text("c\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        ev.main(["--src", str(de), "--ref", str(en)])
    assert "The German has 2 lines and the English 1" in capsys.readouterr().err


def test_a_scored_set_can_be_a_watched_state():
    """The tab's listener takes its state's change as a trigger, so Gradio hashes the state's value after each event
    (gradio.utils.deep_hash): a Scored, which holds lists, is hashed by identity, not by value."""
    from gradio.utils import deep_hash

    from app.tabs.score import Scored
    one = Scored(["a"], ["b"], ["c"], [[1]], [1.0], {"bleu": 1.0})
    other = Scored(["a"], ["b"], ["c"], [[1]], [1.0], {"bleu": 1.0})
    assert deep_hash(one) == deep_hash(one) != deep_hash(other)
