#!/usr/bin/env bash
# The lint .ci/run runs (after scripts/setup.sh): ruff and mypy on the Python
# (pyproject.toml), clang-format on the C (.clang-format),
# and the engine, launcher and C tests built with warnings as errors, in the
# folder the tests share (tests/support/c_suites.py: CHECKS_BUILD, configured alike).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/ruff check
.venv/bin/mypy
git ls-files 'native/*.c' 'native/*.h' | xargs .venv/bin/clang-format --dry-run --Werror
cmake -S native -B build/checks -DCMAKE_BUILD_TYPE=Release -DACL_WERROR=ON \
  -DACL_FAULT_INJECTION=ON >/dev/null
cmake --build build/checks -j "$(nproc)" >/dev/null
echo "lint: ok"
