"""The page's own JavaScript and CSS (app/page/): each file is in the form the loader reads and is used by the app,
eslint finds nothing in it, and what Gradio receives from the built page (every event's js, every gr.HTML's
js_on_load, launch()'s js and head) is read by Node exactly as Gradio's front end reads it."""
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app import page as page_js

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "app" / "page"
SCRIPTS = sorted(PAGE.glob("*.js"))
ESLINT = ROOT / "node_modules" / ".bin" / "eslint"


def python_sources():
    return "\n".join(p.read_text(encoding="utf-8") for p in [*(ROOT / "app").rglob("*.py"), ROOT / "app.py"])


def test_every_page_file_is_one_default_function_used_by_the_app():
    """Each script is comments, then `export default` and its function to the end of the file (what the loader
    reads), and the app hands each script and stylesheet to the page: none is left over."""
    assert len(SCRIPTS) >= 20
    code = python_sources()
    for path in [*SCRIPTS, *PAGE.glob("*.css")]:
        assert re.search(rf"""page_js\.\w+\(\s*["']{re.escape(path.stem)}["']""", code), f"{path.name} is not used"
    for path in SCRIPTS:
        source = page_js.source(path.stem)
        assert re.match(r"(async )?(\(|function\b|\w+ =>)", source), (path.name, source[:40])
        assert not source.endswith(";") and "export default" not in source


def test_no_script_or_style_of_the_page_is_written_in_python():
    """Gradio's arguments that carry the page's code (`js`, `js_on_load`, `head`, `css`, `css_template`) are never a
    string written in app/ or app.py: each comes from a file of app/page/ (so eslint reads it)."""
    import ast
    found = []
    for path in [*(ROOT / "app").rglob("*.py"), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.Call):
                gradio = getattr(node.func, "attr", getattr(node.func, "id", None)) in ("launch", "HTML", "Blocks")
                found += [f"{path.relative_to(ROOT)}:{node.lineno} {k.arg}=" for k in node.keywords
                          if k.arg in ("js", "js_on_load", "css", "css_template", *(("head",) if gradio else ()))
                          and isinstance(k.value, (ast.Constant, ast.JoinedStr, ast.BinOp))
                          and not (isinstance(k.value, ast.Constant) and k.value.value in (None, True, False))]
    assert found == []


def test_the_loader_gives_values_as_json_and_keeps_scripts_closed(tmp_path, monkeypatch):
    """A script's values reach it as JSON arguments of its function, in one call; '<' in them is written as
    \\u003c, so nothing a value holds can end the <script> it is in; a Code argument is written as it is; a file
    not in the loader's form is refused."""
    monkeypatch.setattr(page_js, "HERE", tmp_path)
    page_js.source.cache_clear()
    (tmp_path / "f.js").write_text("// what it does\n/* and why */\nexport default (v) => () => v;\n", encoding="utf-8")
    assert page_js.function("f") == "(v) => () => v"
    assert page_js.function("f", {"a": "</script>"}) == '((v) => () => v)({"a": "\\u003c/script>"})'
    assert page_js.function("f", [1], page_js.Code("x => x")) == "((v) => () => v)([1], x => x)"
    assert page_js.literal({"g": page_js.Code("() => 1"), "n": 2}) == '{"g": () => 1, "n": 2}'
    assert page_js.on_load("f", 3) == "(((v) => () => v)(3))(...arguments);"
    assert page_js.script("f", "中") == '((v) => () => v)("中");'
    for bad in ("const x = 1;\nexport default () => x;\n", "export default () => 1;\nexport const y = 2;\n",
                "import a from './a.js';\nexport default a;\n", "() => 1;\n"):
        (tmp_path / "bad.js").write_text(bad, encoding="utf-8")
        page_js.source.cache_clear()
        with pytest.raises(RuntimeError, match="bad.js"):
            page_js.source("bad")
    (tmp_path / "closes.js").write_text("export default () => '</script>';\n", encoding="utf-8")
    with pytest.raises(RuntimeError, match="<script>"):
        page_js.script("closes")
    page_js.source.cache_clear()


@pytest.mark.slow
@pytest.mark.skipif(not ESLINT.exists(), reason="eslint is not installed (scripts/install.sh --dev, with node)")
def test_eslint_finds_nothing_in_the_pages_scripts():
    """eslint's recommended rules, for the browser (eslint.config.js), over every .js file of the repository."""
    run = subprocess.run([str(ESLINT), "--max-warnings", "0", "."], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


# Node reads each script as Gradio's front end does: an event's js (and launch()'s) as the expression of
# `new AsyncFunction("return (\n" + js + "\n);")`, whose value, a function, Gradio calls with the inputs; a
# js_on_load as the body of `Function("element", "trigger", "props", "server", "upload", "watch", js)`; the head's
# script as a script. Only the expressions are run (they make functions and run nothing of the page).
READ_AS_GRADIO = r"""
const AsyncFunction = (async () => {}).constructor;
const found = [];
(async () => {
  for (const {what, kind, code} of JSON.parse(require('fs').readFileSync(0, 'utf8'))) {
    try {
      if (kind === 'js') {
        const value = await new AsyncFunction(`return (\n${code.trim().replace(/;+$/, '')}\n);`)();
        if (typeof value !== 'function') found.push(`${what}: gives ${typeof value}, not a function`);
      } else if (kind === 'on_load') {
        new Function('element', 'trigger', 'props', 'server', 'upload', 'watch', code);
      } else {
        new Function(code);
      }
    } catch (e) { found.push(`${what}: ${e}`); }
  }
  console.log(JSON.stringify(found));
})();
"""


def received(demo):
    """Every script the built page hands Gradio, as (what, kind, code)."""
    import gradio as gr

    from app.bertviz_views import frame_page
    from app.style import page_arguments
    args = page_arguments(demo)
    out = [("launch js", "js", args["js"])]
    head = re.fullmatch(r"<script>\n(.*)\n</script>", args["head"], re.DOTALL)
    assert head, args["head"][:80]
    out.append(("launch head", "script", head.group(1)))
    for fn in demo.fns.values():
        if isinstance(fn.js, str):
            out.append((f"the js of {fn.name or 'an event'} ({fn.targets})", "js", fn.js))
    for block in demo.blocks.values():
        if isinstance(block, gr.HTML) and block.js_on_load:
            out.append((f"the js_on_load of {block.elem_id}", "on_load", block.js_on_load))
    for view in ("head", "model"):  # the frames' own scripts, inside the page a js_on_load carries
        for i, script in enumerate(re.findall(r"<script>(.*?)</script>", frame_page(view), re.DOTALL)):
            out.append((f"the {view} frame's script {i}", "script", script))
    return out


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_what_gradio_receives_from_the_page_reads_as_gradio_reads_it():
    from app.ui import build_demo
    demo = build_demo()
    scripts = received(demo)
    kinds = [k for _, k, _ in scripts]
    assert kinds.count("on_load") >= 6 and kinds.count("js") >= 10, kinds
    # every file the events and components use is among them (a file's function, as the loader writes it)
    everything = "\n".join(code for _, _, code in scripts)
    for name in ("link", "idle", "swipe", "menu-fit", "svg-button", "learn-where", "learn-pick", "heads-click",
                 "inside-tree", "overview-diagram", "bertviz-host", "record-head", "link-text", "lang-initial"):
        assert page_js.source(name) in everything, name
    run = subprocess.run(["node", "-e", READ_AS_GRADIO], input=json.dumps(
        [dict(what=w, kind=k, code=c) for w, k, c in scripts]), capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == []
