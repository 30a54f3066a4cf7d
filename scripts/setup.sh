#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine for acltuner: the system packages (a C
# compiler, and the AArch64 cross compiler, qemu and sshd that the board tests use), a
# virtualenv in .venv, and acltuner itself, whose install builds the native engine.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(gcc make cmake gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user openssh-server
              openssh-client openssl python3-venv)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
echo "setup: installing acltuner (builds the native engine)"
.venv/bin/python -m pip install -q -e '.[test,report,peers]'
# ncnn's converter for `bench compare --engines ncnn`: only its own program is
# used, so not the PyTorch its wheel asks for.
.venv/bin/python -m pip install -q --no-deps "pnnx==$(.venv/bin/python -c \
  'from acltuner.bench.peers import PNNX_VERSION; print(PNNX_VERSION)')"
.venv/bin/acltuner --version
