"""How much of the page's static text goes through gr.I18n (both languages) and how much stays English:

    python -m tools.i18n_report

Builds the page (app.ui.build_demo) and counts, per top-level tab, the user-visible static strings its components
carry: tab and component labels, placeholders, info lines, button texts, Markdown written at build time
and the labels of choices (numbers and names from the code, such as module paths, are in no language). A
string is translated when it is a gr.I18n key (app.i18n.L). Text that views draw at run time (figure titles,
status lines, HTML built by Python) is not counted here: only the Learn tab builds it in both languages.
"""
import re

import gradio as gr

STATIC_VALUES = (gr.Markdown, gr.Button)  # components whose value is text written at build time
CODE = re.compile(r"^[A-Za-z_][\w]*([._][\w]+)+$|^[\W\d_]*$")  # a module path, a number, a symbol: no language


def words(s):
    """Whether a string is in some language (not a number, a symbol or a name from the code)."""
    return isinstance(s, gr.i18n.I18nData) or (isinstance(s, str) and bool(s.strip()) and not CODE.match(s.strip()))


def strings(block):
    """The user-visible static strings of one block: its label, placeholder, info, static text and the labels
    of its choices."""
    out = [getattr(block, a, None) for a in ("label", "placeholder", "info")]
    if isinstance(block, STATIC_VALUES):
        out.append(block.value)
    out += [c[0] for c in getattr(block, "choices", None) or () if isinstance(c, tuple)]
    return [s for s in out if words(s)]


def top_tab(block):
    """The id of the top-level tab a block sits in ("page" outside every tab)."""
    tab = None
    while block is not None:
        if isinstance(block, gr.Tab):
            tab = block
        block = block.parent
    return str(tab.id) if tab is not None else "page"


def translated(s):
    """Whether a string is a gr.I18n key (a component keeps a translated value as its serialized key)."""
    return isinstance(s, gr.i18n.I18nData) or s.startswith("__i18n__")


def count(demo):
    """{top-level tab: [translated, English]}."""
    table = {}
    for block in demo.blocks.values():
        for s in strings(block):
            row = table.setdefault(top_tab(block), [0, 0])
            row[0 if translated(s) else 1] += 1
    return table


def main():
    from app.ui import build_demo
    table = count(build_demo())
    print(f"{'tab':14s} {'both languages':>15s} {'English only':>13s}")
    for tab, (done, left) in table.items():
        print(f"{tab:14s} {done:15d} {left:13d}")
    done, left = (sum(r[i] for r in table.values()) for i in (0, 1))
    print(f"{'total':14s} {done:15d} {left:13d}")


if __name__ == "__main__":
    main()
