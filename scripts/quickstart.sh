#!/usr/bin/env bash
# Quickstart: set everything up, then run the main job on the embedded default:
# what this machine's engine offers, and every algorithm on ResNet-18's layers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/acltuner engine list
.venv/bin/acltuner bench conv --quick --layers "$(.venv/bin/python -c \
  'from acltuner.bench.layers import RESNET18; print(",".join(n for n, _ in RESNET18))')"
