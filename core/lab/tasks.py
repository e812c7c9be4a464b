"""The Lab's toy tasks: digit sequences, their answers, the held-out split and batches of them."""
import torch

from ..data import ASSETS, BOS, EOS, PAD, Batch
from ..words import said

SYMBOLS = 10                   # digits 0..9
FIRST = 4                      # token id of digit 0 (0-3 are <blank>, <unk>, <s>, </s>)
VOCAB = FIRST + SYMBOLS
MIN_LEN, MAX_LEN = 3, 8        # symbols per sequence
HELD_OUT = 500                 # sequences decoded for exact match
SIZE = dict(N=2, d_model=32, d_ff=64, h=4, dropout=0.0)  # fresh data every step: no dropout
BATCH = 64                     # sequences per optimizer step
FACTOR, WARMUP = 0.35, 100     # Noam: peak rate 0.35 * 32^-0.5 * 100^-0.5 = 6.2e-3 at step 100
HIGH_LR_FACTOR = 10.0          # high_lr: the same schedule, ten times higher
# per task: (optimizer steps, seconds) -- whichever comes first ends training
BUDGET = {"copy": (450, 15.0), "reverse": (700, 30.0), "sort": (700, 30.0)}
# depth (layers in each stack): SIZE's N unless a run asks for more. A deeper run keeps the task's steps and
# gets its seconds times layers / N (a step takes about that much longer), so that it is ended by steps as the
# Lab's runs are; the intact model at the same depth gets exactly the same budget.
MIN_LAYERS, MAX_LAYERS = SIZE["N"], 6
DEEP = 6                       # the depth of the shipped deep runs (post-norm's trouble needs depth)
ASSET = ASSETS / "lab.json"

# each task by its name, and what it asks for as the locale tables say it (lab.task.<name>, core/words.py)
TASKS = {name: said(f"lab.task.{name}") for name in ("copy", "reverse", "sort")}


def answer(task, symbols):
    """The target symbols of a task for a list of input symbols."""
    if task == "copy":
        return list(symbols)
    if task == "reverse":
        return list(reversed(symbols))
    if task == "sort":
        return sorted(symbols)
    raise ValueError(f"unknown task {task!r}; the tasks are {', '.join(TASKS)}")


def held_out(seq):
    """Whether a symbol sequence belongs to the held-out split (a hash of it is 0 mod 10)."""
    h = 0
    for s in seq:
        h = (h * 31 + s + 1) % 1_000_003
    return h % 10 == 0


def sample(n, gen, split="train"):
    """n symbol sequences (lists of 0..9) of MIN_LEN..MAX_LEN symbols from the split ('train' or 'held_out')."""
    out = []
    while len(out) < n:
        length = int(torch.randint(MIN_LEN, MAX_LEN + 1, (1,), generator=gen))
        seq = torch.randint(0, SYMBOLS, (length,), generator=gen).tolist()
        if held_out(seq) == (split == "held_out"):
            out.append(seq)
    return out


def to_batch(task, seqs):
    """A core.data.Batch: source = the symbols, target = <s> answer </s>, both right-padded."""
    width = max(len(s) for s in seqs)
    src = [[a + FIRST for a in s] + [PAD] * (width - len(s)) for s in seqs]
    tgt = [[BOS] + [a + FIRST for a in answer(task, s)] + [EOS] + [PAD] * (width - len(s)) for s in seqs]
    return Batch(torch.tensor(src), torch.tensor(tgt), PAD)

