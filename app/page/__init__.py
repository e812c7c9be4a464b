"""The page's own JavaScript and CSS, one file each in this folder, and what hands them to Gradio.

Each script is an ES module with one `export default`, a function, and nothing before it but comments; eslint
checks them all (eslint.config.js, `npm run lint`, run by scripts/test.sh). What Gradio is given is the function's
source, as an expression:

- `function(name)`: for an event's `js=` (Gradio calls the expression's value with the event's inputs) or one of
  the functions launch(js=...) runs (app.links.page_script);
- `on_load(name)`: for a gr.HTML's `js_on_load`, a function body that Gradio runs with `element`, `trigger`,
  `props`, `server`, `upload` and `watch`: the function is called with them, in that order;
- `script(name)`: the function called at once, for an inline <script> (the page's head, a bertviz frame).

Where the server fills in values (tab labels, words, a file's name), the file's function takes them as its
arguments and returns the function the page runs (or, for a script, runs with them): `function(name, values)` is
`(<source>)(<values as JSON>)`, the one place where values enter a script. An argument may be a `Code` (another
file's function, say), written as it is.
"""
import functools
import json
import re
from pathlib import Path

HERE = Path(__file__).parent
_EXPORT = re.compile(r"^export default ", re.MULTILINE)
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


class Code(str):
    """A JavaScript expression among a script's arguments, written as it is (not as JSON)."""


def js_json(value):
    """`value` as a JavaScript literal that cannot leave a <script>: json.dumps, with '<' written as \\u003c."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c")


def literal(value):
    """A script's argument as JavaScript: a Code as it is, a dict holding a Code as an object of them, else JSON."""
    if isinstance(value, Code):
        return str(value)
    if isinstance(value, dict) and any(isinstance(v, (Code, dict)) for v in value.values()):
        return "{" + ", ".join(f"{js_json(str(k))}: {literal(v)}" for k, v in value.items()) + "}"
    return js_json(value)


@functools.lru_cache(maxsize=None)
def source(name):
    """The default export of app/page/<name>.js, as an expression (the file's comments before it left out)."""
    path = HERE / f"{name}.js"
    text = path.read_text(encoding="utf-8")
    parts = _EXPORT.split(text)
    if len(parts) != 2 or _COMMENTS.sub("", parts[0]).strip():
        raise RuntimeError(f"{path}: expected comments, then one `export default <function>` to the end")
    if re.search(r"^(import|export)\s", parts[1], re.MULTILINE):  # a module's own (not an import() call)
        raise RuntimeError(f"{path}: a page script imports and exports nothing but its default")
    return parts[1].rstrip().removesuffix(";").rstrip()


def function(name, *args):
    """The file's function (no `args`), or its function called with `args` (which returns the one the page runs)."""
    code = source(name)
    return f"({code})({', '.join(literal(a) for a in args)})" if args else code


def on_load(name, *args):
    """A gr.HTML's js_on_load: the file's function (given `args` first) called with Gradio's arguments."""
    return f"({function(name, *args)})(...arguments);"


def script(name, *args):
    """The text of an inline <script> that runs the file's function with `args`; nothing in it can end the
    script early."""
    code = f"({source(name)})({', '.join(literal(a) for a in args)});"
    if "</script" in code.lower() or "<!--" in code:
        raise RuntimeError(f"app/page/{name}.js cannot be written inside a <script>")
    return code


@functools.lru_cache(maxsize=None)
def css(name):
    """The stylesheet app/page/<name>.css."""
    return (HERE / f"{name}.css").read_text(encoding="utf-8")
