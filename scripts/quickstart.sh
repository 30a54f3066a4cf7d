#!/usr/bin/env bash
# Quickstart: set everything up, then run the main job on an embedded default:
# a zoo ResNet-18 (random weights, built locally), its tasks, its tuning on this
# machine into a plan, and the whole model run with that plan, checked against
# onnxruntime.  Records go to ~/.cache/acltuner, so a second run reuses every
# measurement and tunes in seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out=build/quickstart
mkdir -p "$out"
.venv/bin/acltuner zoo resnet18 -o "$out/resnet18.onnx"
.venv/bin/acltuner tasks "$out/resnet18.onnx"
.venv/bin/acltuner tune "$out/resnet18.onnx" -o "$out/resnet18.plan.json" 2>&1 | tee "$out/tune.log"
.venv/bin/acltuner run "$out/resnet18.plan.json" --check
# The result that matters, last: the tune's whole-model line (tuned against
# the default plan and onnxruntime, measured side by side).
grep '^whole model:' "$out/tune.log"
