#!/usr/bin/env bash
# The accelerator checks of the training and decoding code, as one short script for a GPU machine.
#
#   MULTI30K_DIR=DIR OUT=DIR bash scripts/device_check.sh          # on a machine with CUDA
#   DEVICE=cpu NPROC=2 OUT=/tmp/dc bash scripts/device_check.sh    # the same steps on a CPU (gloo)
#
# 1. one process, bf16 autocast: two epochs of a small model on Multi30k, validation loss and BLEU
#    logged, exported as config.json + safetensors, reloaded and used on the CPU;
# 2. the same through torchrun with DistributedDataParallel (NCCL on CUDA), one process per GPU
#    (NPROC to override): a finite loss that falls, and the world size it ran with;
# 3. decoding on the device: greedy and beam 4 with the shipped model on the probe sentences, compared
#    with the CPU's output;
# 4. the Lab's GPU path (app/hosting.py's lab_on_gpu, what runs inside @spaces.GPU on ZeroGPU): short runs,
#    one with a plain-list break (layers that .to() does not reach), trained on the device and on the CPU from
#    the same seed and compared within a tolerance, with a step's seconds on each (the duration's input).
# Everything lands in $OUT (logs, summary.json). The data directory comes from $MULTI30K_DIR; on the
# project's device machine `../shared` is not there, so copy the gzipped files into an ignored folder
# of the checkout and carry it, for instance (about 3 minutes of device time):
#   mkdir -p .devdata && cp ../shared/data/multi30k/*.gz .devdata/ && echo /.devdata/ >> .git/info/exclude
#   device run: command "MULTI30K_DIR=.devdata bash scripts/device_check.sh", carry [".devdata"]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-runs/device_check}
DEVICE=${DEVICE:-cuda}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1

if [ "$DEVICE" = cuda ]; then
    python3 -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; \
print(torch.__version__, torch.cuda.get_device_name(0), torch.cuda.device_count())" | tee "$OUT/device.txt"
    NPROC=${NPROC:-$(python3 -c "import torch; print(torch.cuda.device_count())")}
else
    NPROC=${NPROC:-2}
fi

common=(--layers 2 --d-model 128 --d-ff 512 --heads 4 --dropout 0.1 --max-tokens 4096 --warmup 100
        --factor 1.0 --bf16 --epochs 2 --val-limit 300 --no-progress --device "$DEVICE")
if [ "$DEVICE" = cpu ]; then common+=(--train-limit 600 --val-limit 20 --threads 1); fi

echo "== 1. one process, $DEVICE, bf16"
python3 -m core.train --run-dir "$OUT/single" "${common[@]}" --export-to "$OUT/single_model" 2>&1 | tee "$OUT/single.txt"

echo "== 2. torchrun, $NPROC processes"
python3 -m torch.distributed.run --standalone --nproc_per_node="$NPROC" -m core.train --run-dir "$OUT/ddp" \
    "${common[@]}" 2>&1 | tee "$OUT/ddp.txt"

echo "== 3. decoding on $DEVICE against the CPU, and the summary"
python3 - "$OUT" "$DEVICE" <<'EOF'
import json, sys, time
from pathlib import Path
import torch
from core import Translator
from core.data import nonblank_lines

out, device = Path(sys.argv[1]), sys.argv[2]
summary = {"device": device, "torch": torch.__version__}
for run in ("single", "ddp"):
    log = [json.loads(line) for line in (out / run / "log.jsonl").read_text().splitlines()]
    steps = [r for r in log if r.get("type") == "step"]
    epochs = [r for r in log if r.get("type") == "epoch"]
    config = next(r for r in log if r.get("type") == "config")
    first, last = steps[0]["loss"], steps[-1]["loss"]
    assert all(map(lambda r: r["loss"] == r["loss"], steps)), f"{run}: a NaN loss"
    assert last < first, f"{run}: the loss did not fall ({first} -> {last})"
    summary[run] = {"steps": len(steps), "first_loss": first, "last_loss": last,
                    "world_size": config.get("world_size"), "device": config.get("device"),
                    "val": {k: v for k, v in epochs[-1].items() if k in ("val_loss", "val_ppl", "val_bleu")}}
# the exported model reloads on the CPU and translates
cpu_small = Translator.load(out / "single_model")
summary["single"]["exported_translation"] = cpu_small.translate("Ein Hund rennt über eine Wiese.")
# the shipped model decodes on the device as on the CPU
probes = nonblank_lines(Path("assets/probes.txt").read_text())
cpu, dev = Translator.load(), Translator.load(device=device)
for beam in (1, 4):
    t0 = time.perf_counter()
    a = dev.translate(probes, beam=beam, batch_size=1)
    seconds = time.perf_counter() - t0
    b = cpu.translate(probes, beam=beam, batch_size=1)
    summary[f"decode_beam{beam}"] = {"same_as_cpu": sum(x == y for x, y in zip(a, b)), "sentences": len(probes),
                                     "seconds_on_device": round(seconds, 3)}
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
print(json.dumps(summary, indent=2))
EOF

echo "== 4. the Lab's GPU path on $DEVICE against the CPU"
python3 - "$OUT" <<'EOF'
import json, sys
from pathlib import Path
import torch
from app import hosting
from core.lab import Config, train

out = Path(sys.argv[1])
summary = json.loads((out / "summary.json").read_text())
lab = {"device": hosting.lab_device(), "duration_step_estimate_s": hosting.STEP_S, "runs": {}}
for cfg in (Config("copy", steps=100), Config("reverse", ("plain_list",), steps=60), Config("copy", layers=6, steps=40)):
    cfg = cfg.checked()
    on_device = list(hosting.lab_on_gpu(cfg))  # the curve's points every 20 steps, then the record
    a, b = on_device[-1], train(cfg, threads=1)  # b: the CPU path, one thread as in core.lab's process
    assert all(not isinstance(v, torch.Tensor) for v in a.values()), "a tensor left the GPU function"
    assert a["steps"] == b["steps"] == cfg.steps and a["curve"]["lr"] == b["curve"]["lr"]
    diff = max(abs(x - y) for x, y in zip(a["curve"]["loss"], b["curve"]["loss"]))
    first = max(abs(x - y) for x, y in zip(a["curve"]["loss"][:10], b["curve"]["loss"][:10]))
    assert first < 1e-3, f"{cfg.key()}: the first steps' losses differ by {first}"
    assert abs(a["exact_match"] - b["exact_match"]) < 0.1, (a["exact_match"], b["exact_match"])
    lab["runs"][f"{cfg.task}/{'+'.join(cfg.breaks) or 'intact'}@{cfg.layers}x{cfg.steps}"] = {
        "step_s_device": round(a["seconds"] / a["steps"], 4), "step_s_cpu": round(b["seconds"] / b["steps"], 4),
        "loss_max_abs_diff": round(diff, 5), "loss_first_10_max_abs_diff": round(first, 6),
        "exact_match_device": a["exact_match"], "exact_match_cpu": b["exact_match"],
        "progress_updates": len(on_device) - 1}
summary["lab_gpu_path"] = lab
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
print(json.dumps(lab, indent=2))
EOF
