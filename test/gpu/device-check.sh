#!/usr/bin/env bash
# The GPU device check: run from the repository root on a GPU machine (no internet, no Node) with $OUT set,
# after test/gpu/prepare-device.sh built .device/ here. Unpacks Node 24 and the packed package to /tmp,
# then runs (each step under `timeout`): flash doctor --json, the real-binding checks, examples/gpu through
# `flash run`, and a real queue worker's startup fitness checks. Results go to $OUT, a summary to stdout.
set -u
ROOT=$(pwd)
OUT=${OUT:?set OUT to the folder for the results}
W=/tmp/flash-device
rm -rf "$W" && mkdir -p "$W/app"
# fd 3 is the script's stdout, so a step's summary line stays out of the file its output goes to.
exec 3>&1
summary() { echo "$*" >> "$OUT/summary.txt"; echo "$*" >&3; }

if command -v xz >/dev/null; then
  xz -dc "$ROOT/.device/node.xz" > "$W/node"
  tar -xJf "$ROOT/.device/app.tar.xz" -C "$W/app"
else # no xz on the machine: Python's lzma reads the same files
  python3 -c 'import lzma,shutil,sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
    "$ROOT/.device/node.xz" "$W/node"
  python3 -c 'import tarfile,sys; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
    "$ROOT/.device/app.tar.xz" "$W/app"
fi
chmod +x "$W/node"
export PATH="$W:$PATH"
PKG="$W/app/node_modules/flash-worker"
FLASH="$PKG/dist/cli/main.js"
mkdir -p "$W/app/gpu" && cp "$ROOT/examples/gpu/handler.ts" "$ROOT/examples/gpu/test_input.json" "$W/app/gpu/"

{
  echo "node $(node --version)"
  nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv 2>&1 | head -10
  nvidia-smi 2>&1 | grep -m1 "CUDA Version"
  ls -la /dev/nvidiactl /proc/driver/nvidia/version 2>&1
} > "$OUT/env.txt" 2>&1
# Where neither /proc/driver/nvidia nor /dev/nvidiactl shows, point the runtime at the driver's libraries.
if [ ! -e /proc/driver/nvidia/version ] && [ ! -e /dev/nvidiactl ] && [ -z "${FLASH_GPU_LIBRARY_DIR:-}" ]; then
  LIBCUDA=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
  [ -n "$LIBCUDA" ] && export FLASH_GPU_LIBRARY_DIR=$(dirname "$LIBCUDA") && echo "FLASH_GPU_LIBRARY_DIR=$FLASH_GPU_LIBRARY_DIR" >> "$OUT/env.txt"
fi
summary "== $(head -1 "$OUT/env.txt") | $(grep -m1 'CUDA Version' "$OUT/env.txt" | tr -s ' ')"

# A local listener for the network check: the device has no internet, and the check never dials out here.
node -e 'require("net").createServer((s) => s.end()).listen(47100, "127.0.0.1")' &
LISTENER=$!
sleep 0.3

step() { # name, seconds, command...
  local name=$1 seconds=$2
  shift 2
  local t0=$(date +%s%N)
  timeout -k 5 "$seconds" "$@"
  local rc=$?
  summary "$(printf '%-26s rc=%-3s %6d ms' "$name" "$rc" $(( ($(date +%s%N) - t0) / 1000000 )))"
  return 0
}

cd "$W/app"
step "doctor --json" 60 env RUNPOD_NETWORK_CHECK_HOST=127.0.0.1 RUNPOD_NETWORK_CHECK_PORT=47100 \
  node "$FLASH" doctor --json > "$OUT/doctor.json" 2>&1
step "doctor (table)" 60 env RUNPOD_NETWORK_CHECK_HOST=127.0.0.1 RUNPOD_NETWORK_CHECK_PORT=47100 \
  node "$FLASH" doctor > "$OUT/doctor.txt" 2>&1
step "real bindings" 90 node "$ROOT/test/gpu/device-bindings.mjs" "$PKG" > "$OUT/bindings.json" 2>&1
cd "$W/app/gpu"
step "flash run examples/gpu" 60 node "$FLASH" run handler.ts > "$OUT/example.json" 2> "$OUT/example.log"
step "queue worker + fitness" 120 node "$ROOT/test/gpu/device-worker.mjs" "$FLASH" "$W/app/gpu/handler.ts" \
  > "$OUT/worker.json" 2>&1
kill "$LISTENER" 2>/dev/null

# The headline numbers, pulled from the files above.
node -e '
const fs = require("fs"), out = process.env.OUT;
const read = (f) => { try { return JSON.parse(fs.readFileSync(`${out}/${f}`, "utf8")); } catch (e) { return { unreadable: String(e).slice(0, 200) }; } };
const d = read("doctor.json"), b = read("bindings.json"), w = read("worker.json");
console.log("doctor ok:", d.ok, "| gpu:", d.gpu?.state, (d.checks || []).map((c) => `${c.name}=${c.ok ? "pass" : "FAIL"}(${Math.round(c.ms)}ms)`).join(" "));
for (const c of b.checks || []) console.log("bindings:", c.pass ? "pass" : "FAIL", c.name, c.msPerLaunch ? `${c.msPerLaunch.toFixed(4)} ms/launch` : "");
console.log("bindings: cuInit", Math.round(b.cuInitMs), "ms, NVML", Math.round(b.nvml?.ms), "ms, health check", Math.round(b.healthCheckMs), "ms");
for (const s of Array.isArray(w) ? w : []) console.log("worker:", s.scenario, "exit", s.exitCode, "| spawn->first take", s.msSpawnToFirstTake, "ms | takes", s.takes, "| unhealthy", JSON.stringify(s.unhealthy.map((u) => u.q.check + ": " + u.q.reason)), "| result", s.result ? (s.result.output ? "output mismatches=" + s.result.output.mismatches : "error") : "none");
' 2>&1 | tee -a "$OUT/summary.txt"
summary "example: $(grep -o '"mismatches":[0-9]*' "$OUT/example.json" | head -1) $(grep -c '^{"output"' "$OUT/example.json") result line(s)"
