"""The browser benchmark's own logic, without a browser: what the page is expected to show, the medians, the table
and the merge into a JSON file."""
import json
from types import SimpleNamespace

import pytest

from tools import bench
from tools import bench_browser as bb


def exp(text, english, src, out, cands, pieces=8):
    return SimpleNamespace(text=text, english=english, src=src, out=out, cands=cands, pieces=pieces)


DOGS = exp("Zwei Hunde spielen im Schnee.", "Two dogs play in the snow.", ["<s>", "Zwei", "Hunde", "spielen", "im",
           "Schnee", ".", "</s>"], ["Two", "dogs", "play", "in", "the", "snow", ".", "</s>"], ["Two", "2", "The"])
KIDS = exp("Drei Kinder bauen eine Sandburg.", "Three children build a sand castle.", ["<s>", "Drei", "Kinder", "bauen",
           "eine", "Sand", "burg", ".", "</s>"], ["Three", "children", "build", "a", "sand", "castle", ".", "</s>"],
           ["Thre", "3", "There"], pieces=9)


def test_tokens_are_compared_without_the_sentencepiece_mark():
    assert bb.norm("▁Hunde") == "Hunde" and bb.norm("<s>") == "<s>" and bb.norm("▁") == ""
    assert bb.words(["<s>", "▁Zwei", "▁", "."]) == ["<s>", "Zwei", "."]


def test_in_order():
    assert bb.in_order("Two0.91 dogs0.80 play0.5", ["Two", "dogs", "play"])
    assert not bb.in_order("dogs Two", ["Two", "dogs"])
    assert bb.in_order("anything", [])


def test_an_alternate_must_differ_in_every_view():
    assert bb.distinct(DOGS, KIDS) and bb.distinct(KIDS, DOGS)
    assert not bb.distinct(DOGS, DOGS)
    same_start = exp("x", "Two cats.", ["<s>", "Zwei", "Katzen", "</s>"], ["Two", "cats", "</s>"], ["Two", "The", "2"])
    assert not bb.distinct(DOGS, same_start)  # the same step-1 candidates
    assert bb.alternate_for(DOGS, [DOGS, same_start, KIDS]) is KIDS
    with pytest.raises(RuntimeError, match="no alternate"):
        bb.alternate_for(DOGS, [DOGS])


def fake_row(ms, n):
    size = lambda b: {"bytes": b, "compressed": 0, "cached": 0, "by_path": {"queue/data": b - 100}}  # noqa: E731
    return {**{f"{key}_ms": ms for key, _ in bb.TIMES}, **{f"{key}_bytes": size(n) for key, _ in bb.BYTES}}


def test_summarize_takes_medians():
    rows = [fake_row(100.0, 1000), fake_row(300.0, 5000), fake_row(200.0, 2000)]
    r = bb.summarize("short", DOGS, rows, model_ms=40.0)
    assert r["short_english_ms"] == r["short_bertviz_model_ms"] == 200.0
    assert r["short_translation_bytes"] == 2000 and r["short_translation_stream_bytes"] == 1900
    assert r["short_pieces"] == 8 and r["short_chars"] == len(DOGS.text) and r["short_model_ms"] == 40.0
    assert r["short_compressed_bytes"] == 0


def results():
    r = {"clicks": 3, "echo_first_ms": 150.0, "echo_ms": 60.0, "echo_bytes": 700, "counter_payload_bytes": 300000,
         "counter_counted_bytes": 300650, "page_load_bytes": 8_000_000,
         "page_load_compressed_bytes": 4_000_000, "bertviz_head_first_ms": 700.0, "bertviz_head_first_bytes": 340_000,
         "bertviz_model_first_ms": 650.0, "bertviz_model_first_bytes": 345_000}
    r.update(bb.summarize("short", DOGS, [fake_row(400.0, 500_000)], model_ms=50.0))
    r.update(bb.summarize("long", KIDS, [fake_row(900.0, 9_000_000)], model_ms=150.0))
    return bb.rounded(r)


def test_table_puts_each_figure_beside_its_floors():
    r = results()
    assert all(k.startswith("browser_") for k in r)
    lines = bb.table(r, ["short", "long"]).splitlines()
    english = next(line for line in lines if line.startswith("8 pieces: click → English shown"))
    assert english.split()[-3:] == ["400", "50", "60"]  # app, model, Gradio echo
    tab = next(line for line in lines if line.startswith("9 pieces: Attention tab"))
    assert tab.split()[-3:] == ["900", "-", "60"]  # no model runs when a tab opens
    kb = next(line for line in lines if line.startswith("9 pieces: received per translation"))
    assert kb.split()[-3:] == ["9000.0", "-", "0.7"]
    assert any("its very first click: 150 ms" in line for line in lines)
    assert any("300,000 bytes counted as 300,650" in line for line in lines)
    assert any("head 700 ms, 340.0 kB; model 650 ms, 345.0 kB" in line for line in lines)


def test_merge_keeps_the_other_keys(tmp_path):
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"threads": 2, "browser_clicks": 1}) + "\n", encoding="utf-8")
    bb.merge_json(path, {"browser_clicks": 5, "browser_echo_ms": 60.0})
    assert json.loads(path.read_text(encoding="utf-8")) == {"threads": 2, "browser_clicks": 5, "browser_echo_ms": 60.0}
    new = tmp_path / "new.json"
    bb.merge_json(new, {"browser_clicks": 5})
    assert json.loads(new.read_text(encoding="utf-8")) == {"browser_clicks": 5}


def test_save_goes_with_browser():
    with pytest.raises(SystemExit):
        bench.main(["--save", "x.json"])
