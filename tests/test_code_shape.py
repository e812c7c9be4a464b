"""The shape the code keeps: short functions, one module per tab, the paper's attention signature, the layers
(core below app below tools), and the tests that start something marked slow."""
import ast
import inspect

import pytest

from tests.conftest import ROOT

MAX_FUNCTION_LINES = 60
SOURCES = sorted(p for d in ("core", "app", "scripts", "tools") for p in (ROOT / d).rglob("*.py")) + [ROOT / "app.py"]
TABS = ("overview", "translate", "attention", "heads", "why", "whatif", "score", "inside", "masks", "positional", "training",
        "engineering", "lab")


def functions(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_function_is_longer_than_sixty_lines(path):
    long = [f"{f.name} (line {f.lineno}): {f.end_lineno - f.lineno + 1} lines" for f in functions(path)
            if f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES]
    assert long == []


def test_every_tab_is_one_module_with_its_own_build():
    for name in TABS:
        path = ROOT / "app" / "tabs" / f"{name}.py"
        assert path.exists(), f"app/tabs/{name}.py is missing"
        assert "build" in {f.name for f in functions(path)}, f"app/tabs/{name}.py has no build()"


def test_ui_only_assembles():
    assert len((ROOT / "app" / "ui.py").read_text(encoding="utf-8").splitlines()) < 80


def test_multi_headed_attention_takes_the_papers_arguments():
    from core.model import MultiHeadedAttention
    assert list(inspect.signature(MultiHeadedAttention.forward).parameters) == ["self", "query", "key", "value",
                                                                               "mask"]


# ---- the layers: core (the library) below app (the page) below tools (benches, load tests) ----------------

MAX_CORE_MODULES = 10
TOOL_MODULES = ("bench", "loadtest", "serve", "pageclient")


def imported(path):
    """The top-level package of every absolute import in a file (relative imports stay in their package)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module.split(".")[0]


def test_core_keeps_a_short_top_level():
    modules = sorted(p.name for p in (ROOT / "core").glob("*.py") if p.name != "__init__.py")
    assert len(modules) <= MAX_CORE_MODULES, f"core/ holds {len(modules)} modules: group some into a subpackage"


def test_core_imports_neither_the_page_nor_gradio_and_the_page_no_tool():
    for layer, forbidden in (("core", {"app", "tools", "gradio", "gradio_client"}), ("app", {"tools"})):
        for path in sorted((ROOT / layer).rglob("*.py")):
            wrong = forbidden & set(imported(path))
            assert not wrong, f"{path.relative_to(ROOT)} imports {sorted(wrong)}"


# core's own layers, lowest first (docs/architecture.md): a module imports from its own layer's package or from
# lower layers, never from a higher one. The model is the paper's, and the words are the locale tables' (what core
# says is keys and numbers); data, masks of heads and checkpoints read it;
# decoding runs it; the Translator wraps decoding for text; evaluation scores a Translator; training evaluates as
# it goes; the analyses and the Lab read trained models (the Lab trains its own with train's pieces), and the
# converter writes models of other projects in core's format (checking them with a Translator); the benchmark
# times all of them.
CORE_LAYERS = (("model", "words"), ("data", "instrument", "checkpoint"), ("decode",), ("translate",), ("evaluate",),
               ("train",), ("analysis", "lab", "convert"), ("bench",))


def core_imports(source, parts):
    """The core modules (or subpackages), by their name at core's top level, that the module at core/<parts>
    imports: ("decode.py",) or ("analysis", "heads.py")."""
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom) or not (node.level or (node.module or "").startswith("core.")):
            continue
        if node.level:  # from .x: the module's own package; from ..x: core's top level
            where = parts[:-1][:len(parts) - node.level] + tuple((node.module or "").split(".") if node.module else ())
        else:
            where = tuple(node.module.split(".")[1:])
        yield from (where[:1] if where else (alias.name for alias in node.names))


def test_core_imports_only_from_lower_layers():
    layer = {name: i for i, names in enumerate(CORE_LAYERS) for name in names}
    for path in sorted((ROOT / "core").rglob("*.py")):
        parts = path.relative_to(ROOT / "core").parts
        if parts == ("__init__.py",):
            continue  # the package's face: it re-exports the model
        me = parts[0] if len(parts) > 1 else path.stem
        assert me in layer, f"core/{'/'.join(parts)} is in no layer of CORE_LAYERS"
        for other in set(core_imports(path.read_text(encoding="utf-8"), parts)) - {me}:
            assert layer[other] < layer[me], (f"core/{'/'.join(parts)} (layer {layer[me] + 1}) imports core.{other} "
                                              f"(layer {layer[other] + 1})")


def test_the_layer_check_reads_every_form_of_import():
    assert set(core_imports("from .analysis.searchtree import SearchTree", ("translate.py",))) == {"analysis"}
    assert set(core_imports("from ..decode import x\nfrom .inside import y", ("analysis", "heads.py"))) == {
        "decode", "analysis"}
    assert set(core_imports("from core.train import rate\nfrom . import model", ("bench.py",))) == {"train", "model"}
    assert set(core_imports("import torch\nfrom torch import nn", ("model.py",))) == set()


def test_no_tool_module_lives_in_app():
    tools = [str(p.relative_to(ROOT)) for p in (ROOT / "app").rglob("*.py") if p.stem.startswith(TOOL_MODULES)]
    assert tools == [], "benches, load tests and servers belong in tools/"


# ---- tests that start something are marked slow --------------------------------------------------------

# (and the run's shared server and a module's browser, tests/conftest.py served_app and chromium, taken as fixtures)
STARTERS = {"subprocess", "Popen", "spawn", "launch", "AppProcess", "sync_playwright", "loadtest", "served_app",
            "chromium"}


def marked_slow(nodes):
    return any("pytest.mark.slow" in ast.unparse(n) for n in nodes)


def reaches(function, defs, seen=None):
    """The names a function uses, with those of the functions and fixtures of its module it calls or takes."""
    seen = set() if seen is None else seen
    seen.add(function.name)
    names = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(function) if isinstance(n, ast.Attribute)}
    names |= {a.arg for a in function.args.args}  # the fixtures it takes, conftest's among them
    for other in names & (defs.keys() - seen):
        names |= reaches(defs[other], defs, seen)
    return names


def test_tests_that_start_a_server_a_browser_or_a_process_are_marked_slow():
    """`pytest -m "not slow"` is the quick loop: no test in it may start a server, a browser or a process (the
    names a test reaches, through the fixtures and helpers of its module, include none of STARTERS)."""
    unmarked = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        marks = [n.value for n in tree.body if isinstance(n, ast.Assign)
                 and any(getattr(t, "id", None) == "pytestmark" for t in n.targets)]
        if marked_slow(marks):
            continue
        defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        unmarked += [f"{path.name}::{name} ({', '.join(sorted(reaches(f, defs) & STARTERS))})"
                     for name, f in defs.items() if name.startswith("test_") and not marked_slow(f.decorator_list)
                     and reaches(f, defs) & STARTERS]
    assert unmarked == []


# ---- the page's floors: the tabs, the figures beneath them, one language per event (issue 29) -------------

APP = ROOT / "app"
PAGE = {APP / "ui.py", APP / "tabs" / "__init__.py"}  # what assembles the tabs: the only importers of a tab


def module_name(path, root=ROOT):
    """app/tabs/learn.py -> app.tabs.learn (a package's __init__ by the package's name)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def app_imports(path, root=ROOT):
    """Every module an app module imports, by its absolute name; `from . import x` names app.<package>.x."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def imports_a_tab(path):
    return sorted({m for m in app_imports(path) if m == "app.tabs" or m.startswith("app.tabs.")})


def test_only_the_page_imports_the_tabs():
    """A tab never imports another tab, nor does any other module of app/ (the figures, links, the helpers):
    what two tabs share lives beneath them (app/figures, app/translating.py, app/learn_path.py ...)."""
    wrong = {str(p.relative_to(ROOT)): imports_a_tab(p) for p in sorted(APP.rglob("*.py")) if p not in PAGE}
    assert {p: m for p, m in wrong.items() if m} == {}
    assert imports_a_tab(APP / "ui.py")  # the check sees the page's own imports


def test_the_tab_import_check_reads_every_form(tmp_path):
    tabs = tmp_path / "app" / "tabs"
    tabs.mkdir(parents=True)
    for source, found in (("from . import masks", ["app.tabs", "app.tabs.masks"]),
                          ("from .translate import german_hint", ["app.tabs.translate", "app.tabs.translate.german_hint"]),
                          ("from ..figures import positional", []), ("import app.tabs.inside", ["app.tabs.inside"])):
        (tabs / "learn.py").write_text(source)
        got = [m for m in app_imports(tabs / "learn.py", tmp_path) if m.startswith("app.tabs")]
        assert sorted(set(got)) == found, source


def test_no_function_in_app_takes_a_language_by_default():
    """The language comes from the event (app.i18n.speaking, in_language): no parameter named lang has a default,
    so that nothing is drawn in a language no one chose."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        for f in functions(path):
            a = f.args
            positional = [*a.posonlyargs, *a.args]
            defaulted = positional[len(positional) - len(a.defaults):] if a.defaults else []
            defaulted += [arg for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            found += [f"{path.relative_to(ROOT)}:{f.lineno} {f.name}" for arg in defaulted if arg.arg == "lang"]
    assert found == []


FIGURE_CHANGES = {"update_layout", "update_xaxes", "update_yaxes", "update_traces", "update_annotations", "add_trace",
                  "add_annotation", "add_shape", "add_vline", "add_hline"}


def patched_figures(source):
    """The lines of `source` that change a figure: an assignment into .layout or .data[...], or a call of a
    figure's update_*/add_* methods."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            text = ast.unparse(t)
            if ".layout" in text or ".data[" in text:
                found.append((node.lineno, text))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FIGURE_CHANGES:
            found.append((node.lineno, ast.unparse(node.func)))
    return found


def test_no_tab_patches_a_figure_after_it_is_built():
    """A figure is built once, by a builder of app/figures, with what its caller needs as parameters: no tab
    relabels, hides or moves a part of it afterwards (the Learn path asks a builder for its own words)."""
    wrong = {str(p.relative_to(ROOT)): patched_figures(p.read_text(encoding="utf-8"))
             for p in sorted((APP / "tabs").glob("*.py"))}
    assert {p: f for p, f in wrong.items() if f} == {}
    assert patched_figures("fig.layout.annotations[0].text = 'x'\nfig.data[1].name = 'y'\nfig.update_yaxes(a=1)") == [
        (1, "fig.layout.annotations[0].text"), (2, "fig.data[1].name"), (3, "fig.update_yaxes")]
