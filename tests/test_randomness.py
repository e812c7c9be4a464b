"""Randomness is local: a model whose weights need a seed draws them from a generator of its own
(core.train.seeded), never by seeding the process's global generator, which a threaded server shares between
events. The Lab's models keep the very weights torch.manual_seed gave them (assets/lab.json was trained from
those), two Lab runs started together give the same curves, and nothing in app/ or core/ seeds the process."""
import ast
import json
import threading
from dataclasses import replace

import pytest
import torch

from core import lab
from core.lab import breaks as lab_breaks
from core.train import seeded
from tests.conftest import ASSETS, ROOT


def test_a_block_draws_every_kind_of_draw_from_its_own_generator():
    before = torch.get_rng_state()
    x = torch.ones(8)
    with seeded(3):
        got = [torch.rand(5), torch.randn(4), torch.randint(0, 10, (6,)), torch.randperm(7), torch.empty(3).uniform_(),
               torch.empty(3).normal_(), torch.bernoulli(torch.full((6,), 0.5)), torch.multinomial(x, 3),
               torch.nn.functional.dropout(x, 0.5, training=True), torch.poisson(x * 3), torch.poisson(x * 3, None)]
    g = torch.Generator().manual_seed(3)
    want = [torch.rand(5, generator=g), torch.randn(4, generator=g), torch.randint(0, 10, (6,), generator=g),
            torch.randperm(7, generator=g), torch.empty(3).uniform_(generator=g), torch.empty(3).normal_(generator=g),
            torch.bernoulli(torch.full((6,), 0.5), generator=g), torch.multinomial(x, 3, generator=g),
            x * torch.empty(8).bernoulli_(0.5, generator=g) * 2, torch.poisson(x * 3, g), torch.poisson(x * 3, g)]
    assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))
    assert torch.equal(torch.get_rng_state(), before)  # the global generator neither read nor moved
    # an explicit generator is kept; a draw that takes none is refused rather than made from the global one
    with seeded(3):
        assert torch.equal(torch.rand(4, generator=torch.Generator().manual_seed(7)),
                           torch.rand(4, generator=torch.Generator().manual_seed(7)))
        with pytest.raises(RuntimeError, match="global generator"):
            torch.ops.aten.native_dropout(x, 0.5, True)


def old_build(breaks, seed, layers=0):
    """build_model as it was when assets/lab.json was trained: the global generator seeded, then make_model."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return lab_breaks._broken(breaks, dict(lab.SIZE, N=layers) if layers else lab.SIZE)


def same_weights(a, b):
    pa, pb = lab.held_parameters(a), lab.held_parameters(b)
    sa, sb = a.state_dict(), b.state_dict()
    return (len(pa) == len(pb) and all(torch.equal(x, y) for x, y in zip(pa, pb)) and sa.keys() == sb.keys()
            and all(torch.equal(sa[k], sb[k]) for k in sa))


def check_weights(models, seeds):
    for breaks, layers in models:
        for seed in seeds:
            torch.manual_seed(1234)
            before = torch.get_rng_state()
            new = lab.build_model(breaks, seed, layers=layers)
            assert torch.equal(torch.get_rng_state(), before), breaks  # the global generator as it was
            assert same_weights(new, old_build(breaks, seed, layers)), (breaks, layers, seed)


def test_lab_models_have_the_weights_the_global_seed_gave_them():
    """Bit for bit the weights of the old global seeding: the intact model, the breaks that draw weights of
    their own (default_init, untied), one layer object and a deep post-norm; the global generator untouched."""
    check_weights([((), 0), (("default_init",), 0), (("untied",), 0), (("shared_layers",), 0),
                   (("post_norm",), lab.DEEP)], (0,))
    assert not same_weights(lab.build_model((), 0), lab.build_model((), 1))


@pytest.mark.slow
def test_every_shipped_configuration_has_the_weights_the_global_seed_gave_it():
    """Every shipped configuration (each break, the mixes, the deep runs), two seeds."""
    models = sorted({(c.breaks, c.layers) for c in lab.shipped_configs()})
    assert len(models) >= 18 and any("default_init" in b for b, _ in models)
    check_weights(models, (0, 1))


def test_a_draw_of_another_thread_in_the_middle_of_a_build_changes_nothing(monkeypatch):
    """Another event reseeds and draws from the global generator while a Lab model is being built, after its seed
    is set and before its weights are drawn (made to happen there, not left to chance): the weights are still
    its seed's."""
    want = lab.build_model((), 0)
    building, drawn = threading.Event(), threading.Event()
    make_model = lab_breaks.make_model

    def pausing(*args, **kwargs):
        building.set()
        assert drawn.wait(10)
        return make_model(*args, **kwargs)

    def neighbour():
        building.wait(10)
        torch.manual_seed(99)
        torch.rand(1000)
        drawn.set()

    monkeypatch.setattr(lab_breaks, "make_model", pausing)
    other = threading.Thread(target=neighbour)
    other.start()
    got = lab.build_model((), 0)
    other.join()
    assert same_weights(got, want)


@pytest.mark.slow
def test_two_lab_runs_with_the_same_seed_started_together_give_identical_curves():
    """Two runs of one configuration trained at the same time in two threads (as two visitors' events would),
    while a third thread keeps reseeding the global generator: both curves are the run's own, as when trained
    alone."""
    cfg = replace(lab.Config("copy", ("no_warmup",)).checked(), steps=40, seconds=600.0)
    alone = lab.fit(cfg)[1]
    curves, stop = {}, threading.Event()

    def run(name):
        curves[name] = lab.fit(cfg)[1]

    def neighbour():
        while not stop.is_set():
            torch.manual_seed(7)
            torch.rand(64)

    noise = threading.Thread(target=neighbour)
    runs = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
    noise.start()
    for t in runs:
        t.start()
    for t in runs:
        t.join()
    stop.set()
    noise.join()
    assert curves["a"] == curves["b"] == alone and len(alone["loss"]) == 40


@pytest.mark.slow
@pytest.mark.parametrize("name", ["copy/intact", "copy/default_init", "reverse/untied", "copy/intact@6"])
def test_shipped_runs_start_as_they_were_trained(name):
    """The first steps of shipped runs, trained again now: the losses assets/lab.json holds for them."""
    run = json.loads((ASSETS / "lab.json").read_text(encoding="utf-8"))["runs"][name]
    cfg = lab.Config(run["task"], tuple(run["breaks"]), layers=run.get("layers", 0)).checked()
    curve = lab.fit(replace(cfg, steps=13))[1]
    got = dict(zip(curve["step"], curve["loss"]))
    shipped = [(s, loss) for s, loss in zip(run["curve"]["step"], run["curve"]["loss"]) if s <= 13]
    assert len(shipped) >= 3 and all(got[s] == loss for s, loss in shipped), (shipped, got)


# ---- nothing seeds the process --------------------------------------------------------------------------

GLOBAL_SEEDS = {("torch", "manual_seed"), ("torch", "seed"), ("torch.random", "manual_seed"), ("torch.random", "seed"),
                ("torch.cuda", "manual_seed"), ("torch.cuda", "manual_seed_all"), ("random", "seed"),
                ("np.random", "seed"), ("numpy.random", "seed")}
OWN_PROCESS = {("core/train.py", "main")}  # command-line entry points that own their process


def dotted(node):
    """"torch.cuda" for the expression torch.cuda; None for anything but names and attributes."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return base and f"{base}.{node.attr}"
    return None


def global_seedings(source):
    """The functions (or "<module>") that call a seeding of a process-wide generator: torch.manual_seed(0),
    random.seed(0), np.random.seed(0), ... (a generator object's own manual_seed is no such call)."""
    found = []

    def visit(node, where):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and \
                    (dotted(child.func.value), child.func.attr) in GLOBAL_SEEDS:
                found.append(where)
            visit(child, inner)
    visit(ast.parse(source), "<module>")
    return found


def test_the_seeding_check_finds_each_form():
    assert global_seedings("import torch\ntorch.manual_seed(0)") == ["<module>"]
    assert global_seedings("def f():\n    random.seed(1)\n    np.random.seed(2)\n    torch.cuda.manual_seed_all(3)") \
        == ["f", "f", "f"]
    assert global_seedings("g = torch.Generator().manual_seed(0)\ngen.manual_seed(1)\nrandom.Random(2)") == []


def test_nothing_in_the_app_or_core_seeds_the_process():
    paths = sorted(p for d in ("app", "core") for p in (ROOT / d).rglob("*.py")) + [ROOT / "app.py"]
    seeding = [(str(p.relative_to(ROOT)), where) for p in paths
               for where in global_seedings(p.read_text(encoding="utf-8"))]
    assert set(seeding) <= OWN_PROCESS, seeding
    assert ("core/train.py", "main") in seeding  # the check sees the one there is
