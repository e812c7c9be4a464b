"""The shape the code keeps: short functions, one module per tab, the paper's attention signature, the layers
(core below app below tools), and the tests that start something marked slow."""
import ast
import inspect

import pytest

from tests.conftest import ROOT

MAX_FUNCTION_LINES = 60
SOURCES = sorted(p for d in ("core", "app", "scripts", "tools") for p in (ROOT / d).rglob("*.py")) + [ROOT / "app.py"]
TABS = ("overview", "translate", "attention", "heads", "why", "whatif", "inside", "masks", "positional", "training", "engineering", "lab")


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


def test_no_tool_module_lives_in_app():
    tools = [str(p.relative_to(ROOT)) for p in (ROOT / "app").rglob("*.py") if p.stem.startswith(TOOL_MODULES)]
    assert tools == [], "benches, load tests and servers belong in tools/"


# ---- tests that start something are marked slow --------------------------------------------------------

STARTERS = {"subprocess", "Popen", "spawn", "launch", "AppProcess", "sync_playwright", "loadtest"}


def marked_slow(nodes):
    return any("pytest.mark.slow" in ast.unparse(n) for n in nodes)


def reaches(function, defs, seen=None):
    """The names a function uses, with those of the functions and fixtures of its module it calls or takes."""
    seen = set() if seen is None else seen
    seen.add(function.name)
    names = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(function) if isinstance(n, ast.Attribute)}
    for other in (names | {a.arg for a in function.args.args}) & (defs.keys() - seen):
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
