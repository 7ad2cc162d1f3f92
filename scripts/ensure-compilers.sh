#!/usr/bin/env bash
# The dev extra builds llama.cpp from source (llama-cpp-python, for tests/judges_thirdparty): it needs a
# C/C++ compiler; scikit-build-core fetches CMake and Ninja from PyPI itself when they are missing.
set -euo pipefail
if command -v gcc >/dev/null 2>&1 && command -v g++ >/dev/null 2>&1; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "Installing Debian's C/C++ compilers to build llama.cpp..."
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq gcc g++ make >/dev/null
  exit 0
fi
echo "gcc/g++ not found and apt-get is unavailable: install a C/C++ compiler (llama-cpp-python builds llama.cpp)." >&2
exit 1
