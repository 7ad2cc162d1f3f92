#!/usr/bin/env bash
# llama.cpp's OpenAI-compatible server (llama-cpp-python, pyproject's model-server extra) for
# tests/judges_thirdparty and bench_llamacpp_throughput. pip compiles it from source on a new machine
# (about 10 minutes on 2 cores), then keeps the wheel in its cache. Here the compile runs in the background:
# the suite starts at once, and the tests that need the server wait for it (tests/judges_thirdparty/
# conftest.py reads .data/llamacpp-build.rc). The server's Python dependencies come with the dev extra, so
# the wheel goes in alone (--no-deps) and changes nothing the running suite has imported.
# --wait builds in the foreground instead (make bench).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="$1"
DATA="${CONCORD_DATA_DIR:-.data}"
mkdir -p "$DATA"
if "$PY" -c "import llama_cpp.server" >/dev/null 2>&1; then exit 0; fi
pin=$(grep -o '"llama-cpp-python\[server\]==[^"]*"' pyproject.toml | tr -d '"' | sed 's/\[server\]//')
build="'$PY' -m pip wheel -q --no-deps -w '$DATA/wheels' '$pin' && '$PY' -m pip install -q --no-deps --no-index --find-links '$DATA/wheels' '$pin'"
if [ "${2:-}" = "--wait" ]; then
  bash -c "$build"
  exit 0
fi
if [ -f "$DATA/llamacpp-build.pid" ] && kill -0 "$(cat "$DATA/llamacpp-build.pid")" 2>/dev/null; then exit 0; fi
rm -f "$DATA/llamacpp-build.rc"
echo "Building llama.cpp ($pin) in the background for the third-party model server tests; log: $DATA/llamacpp-build.log"
nohup bash -c "($build) > '$DATA/llamacpp-build.log' 2>&1; echo \$? > '$DATA/llamacpp-build.rc'" >/dev/null 2>&1 &
echo $! > "$DATA/llamacpp-build.pid"
