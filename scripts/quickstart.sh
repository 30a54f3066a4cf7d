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
.venv/bin/acltuner tune "$out/resnet18.onnx" -o "$out/resnet18.plan.json"
.venv/bin/acltuner run "$out/resnet18.plan.json" --check
