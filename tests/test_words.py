"""Core speaks in keys and numbers (core/words.py): every key it says has words in both locale tables, with the
fields it gives them; the command-line tools write the English table's words, the page the same ones."""
import json

import pytest

from core import words
from core.analysis import heads as atlas_mod
from core.bench import ROWS
from core.words import Listing, Said, listing, said, say, write
from tests.conftest import ASSETS
from tests.test_heads import synthetic_atlas

LANGS = ("en", "zh-CN")


def test_say_writes_nested_keys_with_the_tables_formats():
    what = said("atlas.small", count=3, total=18, loss=0.01, bleu=0.3,
                counts=listing("atlas.comma", [said("atlas.small-kind", count=2, kind=said("atlas.kind.cross")),
                                               said("atlas.small-kind", count=1, kind=said("atlas.kind.encoder"))]))
    assert say(what) == ("3 of the 18 heads can go alone at almost no cost (loss within 0.01 nats per token and BLEU "
                         "down by less than 0.3): 2 of cross-attention, 1 of encoder self-attention.")
    assert say(what, "zh-CN").endswith("交叉注意力 2 个、编码器自注意力 1 个。")
    # numbers stay numbers until the table's string formats them
    assert say(said("atlas.share-head", layer=1, head=2, share=0.904)) == "1.2 (90%)"
    assert write(said("x", n=3), {"x": "{n:03d} <{n}>"}.get) == "003 <3>"


def test_the_command_line_reads_the_tables_it_says(monkeypatch):
    """say's words come from locale/<lang>.json as they are now: another table, other words."""
    en = dict(words.table("en"), **{"atlas.kind.cross": "CROSS"})
    monkeypatch.setattr(words, "table", lambda lang="en": en)
    assert say(said("atlas.small-kind", count=2, kind=said("atlas.kind.cross"))) == "2 of CROSS"


def test_the_page_and_core_read_one_pair_of_tables():
    from app import i18n
    assert i18n.LOCALES == words.LOCALES and all(i18n.table(lang) == words.table(lang) for lang in LANGS)


def rich_atlas():
    """A synthetic atlas in which every kind of finding shows up, one head and many (so each key is said)."""
    atlas = synthetic_atlas(L=2, H=3)
    h = atlas["heads"]
    h["encoder"]["next"][0][0] = h["encoder"]["next"][0][1] = 0.8  # many heads
    h["decoder"]["previous"][0][2] = 0.7
    h["encoder"]["same"][1][1] = h["decoder"]["same"][1][1] = 0.6
    h["encoder"]["first"][0][2], h["encoder"]["eos"][0][2] = 0.3, 0.4  # a sink: <s> and </s> together
    h["cross"]["first"][1][0] = h["cross"]["eos"][1][1] = 0.9  # two sinks
    h["decoder"]["first"][0][0] = 0.95  # the decoder: <s> only
    return atlas


def said_keys(findings):
    return [kv for f in findings for kv in words.keys(f)]


def atlases():
    out = [synthetic_atlas(), rich_atlas()]
    if (ASSETS / "heads.json").exists():
        out.append(json.loads((ASSETS / "heads.json").read_text(encoding="utf-8")))
    return out


def test_every_key_of_the_head_atlas_has_its_fields_in_both_tables():
    said_ = said_keys(f for atlas in atlases() for f in atlas_mod.findings(atlas))
    for lang in LANGS:
        table = words.table(lang)
        for key, names in said_:
            assert key in table, (lang, key)
            assert words.fields(table[key]) == names, (lang, key)
    # every word of the atlas in the tables is one that core says (none left over from an older core)
    assert {k for k in words.table("en") if k.startswith("atlas.")} == {k for k, _ in said_}
    assert all(isinstance(f, Said) for f in atlas_mod.findings(rich_atlas()))


def test_findings_are_keys_and_numbers_only():
    """Nothing core says is English: a finding's leaves are numbers, or the pieces <s> and </s>."""
    def leaves(what):
        if isinstance(what, Said):
            for v in what.fields.values():
                yield from leaves(v)
        elif isinstance(what, Listing):
            for item in what.items:
                yield from leaves(item)
        else:
            yield what
    values = [v for f in atlas_mod.findings(rich_atlas()) for v in leaves(f)]
    assert values and all(isinstance(v, (int, float)) or v in atlas_mod.PIECES.values() for v in values)


def test_every_benchmark_row_has_its_words_in_both_tables():
    for lang in LANGS:
        table = words.table(lang)
        for row in ROWS:
            assert words.fields(table[f"bench.row.{row.ours}"]) == words.fields(table[f"bench.ref.{row.ours}"]) == set()
        for column in ("measure", "ours", "reference", "reference-is", "ratio"):
            assert table[f"bench.column.{column}"]
        assert words.fields(table["bench.bf16-slow"]) == {"x"} and words.fields(table["bench.left-out"]) == {"reason"}
    assert {k.split(".", 2)[2] for k in words.table("en") if k.startswith("bench.row.")} == {r.ours for r in ROWS}


def test_every_lab_break_and_task_has_its_words_in_both_tables():
    from core.lab import BREAKS, HIGH_LR_FACTOR, TASKS
    said_ = [kv for what in [*BREAKS.values(), *TASKS.values()] for kv in words.keys(what)]
    assert len(said_) == len(BREAKS) + len(TASKS) and ("lab.break.high_lr", {"factor"}) in said_
    for lang in LANGS:
        for key, names in said_:
            assert words.fields(words.table(lang)[key]) == names, (lang, key)
    assert {k for k in words.table("en") if k.startswith(("lab.break.", "lab.task."))} == {k for k, _ in said_}
    assert f"{HIGH_LR_FACTOR:g} times" in say(BREAKS["high_lr"]) and f"{HIGH_LR_FACTOR:g} 倍" in say(BREAKS["high_lr"], "zh-CN")


@pytest.mark.slow
def test_the_lab_command_line_lists_the_english_tables_words():
    import subprocess
    import sys

    from core.lab import BREAKS, TASKS
    from tests.conftest import ROOT
    out = subprocess.run([sys.executable, "-m", "core.lab", "--list"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    en = words.table("en")
    for name in TASKS:
        assert f"  {name:<24} {en[f'lab.task.{name}']}\n" in out
    for name in BREAKS:
        assert f"  {name:<24} {en[f'lab.break.{name}']}\n".replace("{factor:g}", "10") in out
    assert "lab." not in out and "{" not in out


@pytest.mark.slow
def test_the_head_atlas_command_line_prints_the_pages_english(tiny_data, tiny_spm, tmp_path, capsys):
    """python -m core.analysis.heads on a tiny model: what it prints under the atlas is the atlas's findings in
    the words of the English table, the very sentences the Heads tab shows in English."""
    import shutil

    from app.tabs import heads as tab
    from core.checkpoint import save_pretrained
    from core.model import make_model
    sp, spm_path = tiny_spm
    V = sp.get_piece_size()
    config = {"src_vocab": V, "tgt_vocab": V, "N": 1, "d_model": 16, "d_ff": 32, "h": 2, "dropout": 0.0,
              "tokenizer": "spm.model"}
    save_pretrained(make_model(V, V, N=1, d_model=16, d_ff=32, h=2, dropout=0.0), config, tmp_path / "model")
    shutil.copy(spm_path, tmp_path / "model" / "spm.model")
    out = tmp_path / "heads.json"
    atlas_mod.main(["--data", str(tiny_data), "--model", str(tmp_path / "model"), "--out", str(out), "--cache", "",
                    "--limit", "12"])
    printed = [line[2:] for line in capsys.readouterr().out.splitlines() if line.startswith("- ")]
    atlas = json.loads(out.read_text(encoding="utf-8"))
    assert printed == tab.findings_in("en", atlas) == [say(f) for f in atlas_mod.findings(atlas)]
    assert len(printed) >= 4 and not any("atlas." in line or "{" in line for line in printed)
    assert set(atlas["measures"]) == set(atlas_mod.MEASURES) and "about" not in atlas["measures"]["entropy"]
