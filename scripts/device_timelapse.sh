#!/usr/bin/env bash
# The time-lapse run on a GPU machine: the shipped model's recipe trained from scratch, its history kept, exported
# with its points (the Time-lapse tab's assets/snapshots/), packed in parts small enough to come back from the
# device machine. On this project's 2-core CPU the same run takes about 3.2 hours, longer than a session.
#
#   MULTI30K_DIR=.devdata OUT=DIR bash scripts/device_timelapse.sh            # train (resumes), export, pack
#   OUT=DIR bash scripts/device_timelapse.sh parts 5                          # the parts from the 5th on, again
#   (here) bash scripts/device_timelapse.sh unpack DIR_WITH_PARTS assets      # the export, where the parts came
#
# The run lives in $RUN (default /tmp/timelapse, off the working tree): a machine held warm between calls keeps
# it, so a call cut off by its limit is resumed by the next (--resume; a checkpoint every minute). Once it has
# finished: the average of the last 5 epochs exported with the points of $LABELS in 4 bits, as one tar cut into
# parts of 15 MiB, of which the first $MAX_PARTS go to $OUT (a device call brings back at most 64 MiB); `parts N`
# copies the rest in a second call. Back here: unpack, then python -m core.analysis.timelapse and the evaluation
# (docs/training.md). TRAIN_ARGS replaces the recipe (a small run, to try the script on a CPU: DEVICE=cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
OUT=${OUT:-runs/device_timelapse}
RUN=${RUN:-/tmp/timelapse}
DEVICE=${DEVICE:-cuda}
MAX_PARTS=${MAX_PARTS:-4}
AVERAGE=${AVERAGE:-5}
LABELS=${LABELS:-init,step-25,step-50,step-100,step-200,step-400,step-800,epoch-1,epoch-2,epoch-4,epoch-7,epoch-12,epoch-20,epoch-28}
RECIPE="--layers 3 --d-model 256 --d-ff 1024 --heads 8 --dropout 0.15 --smoothing 0.1 --max-tokens 3072 --warmup 1000 \
        --factor 0.8 --epochs 28 --bleu-every 1"
# one line (the backslash joins them): `read` stops at the first newline, and a recipe over two lines lost its second
read -r -a recipe <<< "${TRAIN_ARGS:-$RECIPE}"
mkdir -p "$OUT"

copy_parts() {  # the parts from the $1-th on, at most MAX_PARTS of them, to $OUT
    local k=0 sent=0
    for part in "$RUN"/export.tar.part-*; do
        k=$((k + 1))
        if [ "$k" -ge "$1" ] && [ "$sent" -lt "$MAX_PARTS" ]; then cp "$part" "$OUT/"; sent=$((sent + 1)); fi
    done
    echo "parts: $k in all, $sent copied to $OUT, from part $1 on" | tee "$OUT/parts.txt"
}

case "${1:-train}" in
train)
    data=()
    [ -n "${MULTI30K_DIR:-}" ] && data=(--data-dir "$MULTI30K_DIR")
    resume=()
    [ -f "$RUN/last.pt" ] && resume=(--resume)
    autocast=()
    [ "$DEVICE" = cuda ] && autocast=(--bf16)
    python3 -m core.train --run-dir "$RUN" --spm assets/spm.model "${data[@]}" "${recipe[@]}" --device "$DEVICE" \
        "${autocast[@]}" --probes assets/probes.txt --save-every-min 1 --no-progress "${resume[@]}" \
        2>&1 | tee -a "$OUT/train.txt"
    cp "$RUN/log.jsonl" "$OUT/log.jsonl"
    python3 -m core.train --run-dir "$RUN" --spm assets/spm.model "${data[@]}" "${recipe[@]}" --device cpu --resume \
        --export-to "$RUN/export" --average "$AVERAGE" --snapshot-bits 4 --snapshot-labels "$LABELS" --probes assets/probes.txt \
        --no-progress 2>&1 | tee -a "$OUT/export.txt"
    rm -f "$RUN"/export.tar.part-*
    tar -C "$RUN/export" -cf - . | split -b 15M -d - "$RUN/export.tar.part-"
    copy_parts 1
    ;;
parts)
    copy_parts "${2:?which part to start from}"
    ;;
unpack)
    from=${2:?the folder the parts came back in}; to=${3:?where the export goes}
    mkdir -p "$to"
    cat "$from"/export.tar.part-* | tar -C "$to" -xf -
    echo "unpacked into $to"
    ;;
*)
    echo "usage: $0 [train | parts N | unpack FROM TO]" >&2
    exit 2
    ;;
esac
