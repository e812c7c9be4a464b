"""The Lab: train a small Transformer on a toy task in seconds, with one of the code's choices broken.

    python -m core.lab --list                                    # the tasks and the breaks
    python -m core.lab --task copy --break no_subsequent_mask --json
    python -m core.lab --task reverse --smoothing 0.1 --accum 4
    python -m core.lab --task copy --break post_norm --layers 6  # 6 layers in each stack (2 by default)
    python -m core.lab --bench                                   # the targets, every break beside the intact model
    python -m core.lab --precompute assets/lab.json              # what the Lab tab opens with (resumable)
    python -m tools.lab_table                                    # docs/lab.md's table, with the tab's readings

The model is built by the real `make_model` from core/model.py; a break is applied to the built model by
swapping or wrapping module instances (or, for the masks and the rate, by changing what the loop passes), so
the code the learner reads elsewhere is the code that runs here. The loop uses core/train.py's loss
(LabelSmoothing, SimpleLossCompute) and Noam rate, and core/data.py's Batch with its masks.

The package: `tasks` (the digit tasks and their batches), `breaks` (each choice undone), `run` (one run:
its Config, the loop, what is measured), `shipped` (assets/lab.json and the benchmark), `__main__` (the CLI).
The readings of the shipped runs are prose for learners and live in the locale tables (lab.reading.*), read
by the Lab's figures (app/figures/lab.py).

Sequences are digits 0-9 (token ids 4-13 beside the project's <blank>, <unk>, <s>, </s>) of 3 to 8 symbols,
so a batch is padded. A sequence is held out when a hash of it is 0 mod 10: the training stream never draws one,
and exact match is measured on 500 of them.
"""
from ..data import BOS, EOS, PAD  # noqa: F401,E402
from ..model import subsequent_mask  # noqa: F401,E402
from .breaks import (  # noqa: F401
    BREAKS,
    PostNormSublayerConnection,
    QueryScale,
    attention_layers,
    build_model,
    count,
    held_modules,
    held_parameters,
    lr_lambda,
    masks,
)
from .run import (  # noqa: F401
    ACCUM_CHOICES,
    ATTENTION_EXAMPLE_LEN,
    Config,
    SavedBytes,
    attention_maps,
    budget,
    evaluate,
    fit,
    gradient_check,
    greedy,
    held_out_loss,
    held_out_set,
    setup,
    step_loss,
    to_device,
    train,
)
from .shipped import (  # noqa: F401
    DEEP_RUNS,
    EXTRA,
    PRECOMPUTE_SECONDS_FACTOR,
    TARGETS,
    bench,
    compact,
    downsample,
    precompute,
    row_name,
    run_name,
    settings,
    shipped_configs,
    summary,
)
from .tasks import (  # noqa: F401
    ASSET,
    BATCH,
    BUDGET,
    DEEP,
    FACTOR,
    FIRST,
    HELD_OUT,
    HIGH_LR_FACTOR,
    MAX_LAYERS,
    MAX_LEN,
    MIN_LAYERS,
    MIN_LEN,
    SIZE,
    SYMBOLS,
    TASKS,
    VOCAB,
    WARMUP,
    answer,
    held_out,
    sample,
    to_batch,
)
