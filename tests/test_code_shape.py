"""The shape the code keeps: short functions, one module per tab, the paper's attention signature."""
import ast
import inspect

import pytest

from tests.conftest import ROOT

MAX_FUNCTION_LINES = 60
SOURCES = sorted(p for d in ("core", "app", "scripts") for p in (ROOT / d).rglob("*.py")) + [ROOT / "app.py"]
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
