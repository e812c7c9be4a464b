"""The page's labels in two languages: every key used exists in both tables, and the share of static text that goes
through gr.I18n (tools/i18n_report.py) does not fall back."""
import ast

from app import i18n
from tests.conftest import ROOT, needs_shipped


def used_keys():
    """Every key passed to L("...") anywhere in app/."""
    keys = set()
    for path in (ROOT / "app").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "L" and node.args \
                    and isinstance(node.args[0], ast.Constant):
                keys.add(node.args[0].value)
    return keys


def test_every_label_key_is_in_both_languages():
    keys = used_keys()
    assert len(keys) >= 35
    for lang in i18n.LANGS:
        missing = keys - set(i18n.table(lang))
        assert not missing, (lang, missing)
    assert all(k.startswith(i18n.STATIC) for k in keys)


@needs_shipped
def test_every_tab_label_and_the_learn_tab_are_translated():
    from app.ui import build_demo
    from tools.i18n_report import count
    demo = build_demo()
    table = count(demo)
    assert table["learn"][1] == 0 and table["page"][1] == 0  # the Learn tab and the header: nothing left English
    assert sum(r[0] for r in table.values()) >= 39
    assert set(i18n.tab_labels(demo)) >= {"learn", "overview", "translate", "attention", "heads", "why", "whatif",
                                          "inside", "masks", "positional", "training", "lab", "engineering"}
