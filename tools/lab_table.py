"""The shipped Lab runs as the Markdown table of docs/lab.md, each row with its reading from the Lab tab:

    python -m tools.lab_table [PATH]      # PATH: assets/lab.json by default
"""
import json
import sys
from pathlib import Path

from app.figures.lab import READINGS
from core.lab import ASSET, BREAKS, DEEP, DEEP_RUNS, EXTRA, TASKS, row_name


def table(path=ASSET):
    """The shipped runs as a Markdown table: per break and task, exact match and final training loss; the reading.
    The rows of the deeper runs (N = DEEP) come last, named '@DEEP'."""
    runs = json.loads(Path(path).read_text())["runs"]
    head = "| configuration | " + " | ".join(f"{t}: exact match, loss" for t in TASKS) + " | what it shows |"
    lines = [head, "|" + "---|" * (len(TASKS) + 2)]
    for name in ["intact", *BREAKS, *("+".join(b) for b in EXTRA), *(row_name(b, DEEP) for b in DEEP_RUNS)]:
        cells = []
        for task in TASKS:
            r = runs.get(f"{task}/{name}")
            cells.append(f"{r['exact_match']:.1%}, {r['train_loss']:.3f}" if r else "")
        reading = READINGS.get(name, "the model as the code writes it" if name == "intact" else "")
        lines.append(f"| `{name}` | " + " | ".join(cells) + f" | {reading} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(*sys.argv[1:2]))
