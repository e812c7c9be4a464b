"""One repository, three hosts: the Space's configuration against ZeroGPU's published constraints, the GPU
function's results against the CPU process's, and the app serving with `spaces` installed and no ZeroGPU."""
import ast
import inspect
import os
import urllib.request
from pathlib import Path

import pytest
import torch
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]

# ZeroGPU's published constraints (Hugging Face hub docs, "Spaces ZeroGPU", as cited in docs/hosting.md):
# the Pythons it offers and the ends of the PyTorch range it lists as supported.
ZEROGPU_PYTHONS = ("3.10.13", "3.12.12")
ZEROGPU_TORCH = ("2.8.0", "2.11.0")


def front_matter():
    """The README's YAML front matter: the Space's configuration."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def requirements():
    """requirements.txt's requirements by name."""
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    reqs = [Requirement(line.strip()) for line in lines if line.strip() and not line.lstrip().startswith("#")]
    return {r.name: r for r in reqs}


def gpu_decorated():
    """The functions in app/, core/ and app.py decorated with `spaces.GPU` (bare or called), by file."""
    found = []
    for path in [ROOT / "app.py", *sorted((ROOT / "app").rglob("*.py")), *sorted((ROOT / "core").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    target = dec.func if isinstance(dec, ast.Call) else dec
                    if ast.unparse(target) == "spaces.GPU":
                        found.append((path.relative_to(ROOT).as_posix(), node.name))
    return found


def test_the_front_matter_asks_for_a_python_zerogpu_offers_and_the_app_runs_on_it():
    meta = front_matter()
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py" and (ROOT / meta["app_file"]).exists()
    assert meta["python_version"] in ZEROGPU_PYTHONS
    # the code keeps to what the oldest Python ZeroGPU offers runs: ruff's target-version says so
    pyproject = (ROOT / "pyproject.toml").read_text()
    oldest = min(ZEROGPU_PYTHONS, key=Version)
    assert f'target-version = "py{oldest.split(".")[0]}{oldest.split(".")[1]}"' in pyproject
    gradio = requirements()["gradio"]
    assert meta["sdk_version"] in gradio.specifier  # the Space's Gradio is one requirements.txt admits


def test_requirements_admit_a_torch_zerogpu_supports_and_the_one_installed_here():
    reqs = requirements()
    torch_range = reqs["torch"].specifier
    assert all(v in torch_range for v in ZEROGPU_TORCH), torch_range
    assert Version(torch.__version__).base_version in torch_range  # 2.13.0 on the project's machines
    assert "spaces" in reqs


def test_at_least_one_function_is_decorated_with_spaces_gpu_and_it_is_the_labs():
    found = gpu_decorated()
    assert ("app/hosting.py", "lab_on_gpu") in found, found


def test_off_zerogpu_the_decorator_gives_the_function_back_unchanged():
    """The spaces package, read at 0.51.3: `if not Config.zero_gpu: return task`. Here (no SPACES_ZERO_GPU) the
    GPU function is the plain generator, so nothing changes locally or on a CPU Space."""
    import spaces

    from app import hosting

    assert not hosting.ZERO_GPU and os.environ.get("SPACES_ZERO_GPU") is None

    def f(x):
        return x + 1

    assert spaces.GPU(f) is f and spaces.GPU(duration=5)(f) is f
    assert inspect.isgeneratorfunction(hosting.lab_on_gpu) and not hasattr(hosting.lab_on_gpu, "zerogpu")
    assert hosting.lab_device() == ("cuda" if torch.cuda.is_available() else "cpu")


def test_the_labs_gpu_duration_follows_its_steps_and_stays_within_its_cap():
    from app import hosting
    from core.lab import BUDGET, DEEP, Config
    for task in BUDGET:
        short, full, deep = (hosting.lab_duration(Config(task, steps=40)), hosting.lab_duration(Config(task)),
                             hosting.lab_duration(Config(task, layers=DEEP)))
        assert hosting.START_S < short < full < deep
        cfg = Config(task, layers=DEEP).checked()
        assert deep <= hosting.START_S + cfg.seconds  # never more than the run itself may take
        assert full == pytest.approx(hosting.START_S + min(cfg.steps * hosting.STEP_S, Config(task).checked().seconds))
        assert hosting.within_duration(Config(task, layers=DEEP)) == cfg  # off ZeroGPU: no duration enforced
        capped = hosting.within_duration(Config(task, layers=DEEP), zero_gpu=True)  # ends before the GPU goes
        assert capped.steps == cfg.steps and capped.seconds == pytest.approx(deep - hosting.START_S)
        assert capped.seconds <= cfg.seconds


@pytest.mark.slow
def test_the_gpu_function_gives_the_cpu_process_result():
    """The same seed gives the same run: hosting.lab_on_gpu (in this process, on the CPU here; on the GPU on
    ZeroGPU) against `python -m core.lab` in its own process, the CPU path the tab takes off ZeroGPU."""
    from app import hosting
    from app.tabs import lab as tab
    cfg = tab.config_from("reverse", ["no_warmup"], 0.1, 2, steps=40)
    on_gpu = list(tab.curves(hosting.lab_on_gpu(cfg)))
    in_process = list(tab.curves(tab.run_process(cfg)))
    a, b = on_gpu[-1], in_process[-1]
    assert a["steps"] == b["steps"] == 40 and a["curve"]["step"] == b["curve"]["step"]
    assert a["curve"]["lr"] == b["curve"]["lr"]
    # on the CPU, one thread each: the same arithmetic, so the same numbers
    assert a["curve"]["loss"] == b["curve"]["loss"] and a["held_out_loss"] == b["held_out_loss"]
    assert a["exact_match"] == b["exact_match"] and a["examples"] == b["examples"]
    assert a["attention"] == b["attention"]
    assert a["gradient_check"]["max_rel_diff"] < 1e-5 and b["gradient_check"]["max_rel_diff"] < 1e-5
    assert len(on_gpu) == len(in_process) == 3  # the curve at steps 20 and 40, then the record


@pytest.mark.slow
def test_the_app_serves_with_spaces_installed_and_no_zerogpu(served_app):
    import spaces  # noqa: F401  (installed: a requirement)

    from tests.conftest import SERVED_ENV
    assert "SPACES_ZERO_GPU" in SERVED_ENV and SERVED_ENV["SPACES_ZERO_GPU"] is None  # the run's app: no ZeroGPU
    app = served_app
    page = urllib.request.urlopen(app.url, timeout=30).read().decode("utf-8", "replace")
    config = urllib.request.urlopen(app.url + "config", timeout=30).read().decode("utf-8", "replace")
    assert "<html" in page.lower() and "lab-train" in config and "lab-progress" in config
    assert "Traceback" not in app.tail()


def test_on_zerogpu_the_tab_trains_in_the_gpu_function_and_falls_back_to_the_cpu_when_refused(monkeypatch):
    """The tab's choice of path, with ZeroGPU stood in for: its runs go through hosting.lab_on_gpu (whose messages
    become the curve as the process's do), and a call ZeroGPU refuses before the first step (spaces raises
    gr.Error for a spent quota) trains in the CPU process instead, the progress line saying so."""
    import gradio as gr

    from app import hosting
    from app.i18n import speaking
    from app.tabs import lab as tab
    cfg = tab.config_from("sort", ["no_scale"], 0.2, 2)
    points = [{"progress": {"step": [20], "loss": [2.5], "lr": [1e-4]}},
              {"progress": {"step": [40], "loss": [2.0], "lr": [2e-4]}}]
    monkeypatch.setattr(hosting, "ZERO_GPU", True)
    monkeypatch.setattr(tab, "run_process", lambda c: iter(points))  # the CPU process, stood in for

    def on_gpu(c):
        assert c == cfg
        yield from points[:1]
    monkeypatch.setattr(hosting, "lab_on_gpu", on_gpu)
    assert [m["step"][-1] for m in tab.run_lab(cfg)] == [20]
    with speaking("en"):
        updates = list(tab.train_run("sort", ["no_scale"], 0.2, 2))
    assert "on the GPU: 20 of 700 steps" in updates[-2]["progress"]
    assert updates[-1]["progress"].startswith("✗ **sort/no_scale**")

    def refused(c):
        raise gr.Error("You have exceeded your free GPU quota")
        yield  # a generator, as the decorated function is
    monkeypatch.setattr(hosting, "lab_on_gpu", refused)
    assert [m.get("device") or m["step"][-1] for m in tab.run_lab(cfg)] == ["fallback", 20, 40]
    with speaking("zh-CN"):
        lines = [u["progress"] for u in tab.train_run("sort", ["no_scale"], 0.2, 2)]
    assert "在 CPU 上（没有分到 GPU" in lines[-2] and "已完成 40/700 步" in lines[-2]
