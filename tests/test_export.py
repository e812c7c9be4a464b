"""The Inspection as JSON (core Inspection.to_json / from_json) and the Translate tab's export of it."""
import json

import pytest
import torch

from app.tabs import translate
from core.translate import Inspection
from tests.conftest import needs_shipped

pytestmark = needs_shipped


@pytest.fixture(scope="module")
def ins():
    return translate.translate("Drei Männer warten an der Haltestelle.", "beam", 3, 0.8)[2]


def test_the_json_is_plain_and_complete(ins):
    d = json.loads(ins.to_json())
    assert d["format"] == Inspection.JSON_FORMAT and d["translation"] == ins.translation
    assert d["src_tokens"] == ins.src_tokens and d["out_tokens"] == ins.out_tokens
    L, H, T, S = ins.cross.shape
    assert len(d["cross"]) == L and len(d["cross"][0]) == H and len(d["cross"][0][0]) == T
    assert len(d["cross"][0][0][0]) == S
    for kind in ("encoder", "decoder", "cross"):
        assert torch.allclose(torch.tensor(d[kind]), getattr(ins, kind), atol=5.1e-7)
    assert d["decoding"] == {"method": "beam", "beam": 3, "alpha": 0.8, "max_len": 100}
    assert [p for _, p in d["topk"][0]] == sorted((p for _, p in d["topk"][0]), reverse=True)


def test_the_json_round_trips(ins):
    text = ins.to_json()
    back = Inspection.from_json(text)
    assert back.to_json() == text
    assert back.src_tokens == ins.src_tokens and back.topk[0][0][0] == ins.topk[0][0][0]
    assert (back.decoder - ins.decoder).abs().max() <= 5.1e-7


def test_other_json_is_refused():
    with pytest.raises(ValueError):
        Inspection.from_json(json.dumps({"translation": "x"}))
    with pytest.raises(ValueError):
        Inspection.from_json("[1, 2]")


def test_the_export_file_holds_the_translation(ins):
    update = translate.export_json(ins)
    assert update["interactive"] is True
    with open(update["value"], encoding="utf-8") as f:
        assert Inspection.from_json(f.read()).translation == ins.translation
    assert translate.export_json(ins)["value"] == update["value"]  # the same translation is written once
    blank = next(v for v in translate.VIEWS if v.name == "translate/export").blank
    assert blank["export"]["value"] is None and blank["export"]["interactive"] is False  # no file before one


def test_an_export_survives_a_sweep_by_another_server(tmp_path, monkeypatch):
    """Servers on one machine share the export directory: a file that another server's sweep removes between this
    one's listing and its look at the file's age is passed over, an old file is removed, and the new file is
    there whole, with no part file left beside it."""
    import os
    import time
    from pathlib import Path

    from app import common
    monkeypatch.setattr(common, "EXPORTS", tmp_path)
    old = tmp_path / "old.json"
    old.write_text("{}")
    stale = time.time() - 2 * common.EXPORT_AGE_S
    os.utime(old, (stale, stale))
    listed = Path.iterdir

    def listing_with_one_gone(self):
        yield self / "removed-meanwhile.json"  # listed by this server, already unlinked by another
        yield from listed(self)

    monkeypatch.setattr(Path, "iterdir", listing_with_one_gone)
    path = Path(common.export_file('{"a": 1}', "translation", ".json"))
    assert path.read_text(encoding="utf-8") == '{"a": 1}' and not old.exists()
    assert sorted(p.name for p in listed(tmp_path)) == [path.name]
