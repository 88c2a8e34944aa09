#!/usr/bin/env bash
# Runs inside an image (docker/build.sh copies it in): the image's own ENTRYPOINT + CMD, given as "$@",
# works as a queue worker against fake-platform.mjs: takes the job, and SIGTERM sent to tini while the job
# runs reaches the runtime, which drains (the job finishes and its result is posted) and exits 0.
set -euo pipefail

here=$(dirname "$0")
port=${SMOKE_PORT:?}
job=${SMOKE_JOB:?}
expect=${SMOKE_EXPECT:?}
running=${SMOKE_RUNNING:?}
log=/tmp/smoke-queue.log
platform_log=/tmp/smoke-platform.log

# The fake platform is plain JavaScript: it runs on whichever node the image has (a stand-in may have Node 20).
node "$here/fake-platform.mjs" "$port" "$job" >"$platform_log" 2>&1 &
platform=$!
trap 'kill "$platform" 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q listening "$platform_log" && break; sleep 0.1; done

export RUNPOD_WEBHOOK_GET_JOB="http://127.0.0.1:${port}/take/\$ID"
export RUNPOD_WEBHOOK_POST_OUTPUT="http://127.0.0.1:${port}/done/\$RUNPOD_POD_ID/\$ID"
export RUNPOD_WEBHOOK_POST_STREAM="http://127.0.0.1:${port}/stream/\$RUNPOD_POD_ID/\$ID"
export RUNPOD_POD_ID=smoke-pod
"$@" >"$log" 2>&1 &
worker=$!

# SIGTERM while the job runs (the job is slow enough), as `docker stop` sends it to PID 1: here tini, which
# starts "$@". The runtime must stop taking, let the job finish, post its result and exit 0.
for _ in $(seq 300); do
  grep -qF -- "$running" "$log" && break
  kill -0 "$worker" 2>/dev/null || break
  sleep 0.1
done
kill -TERM "$worker" 2>/dev/null || true
started=$SECONDS
code=0
wait "$worker" || code=$?
posted=no
grep -qF -- "$expect" "$platform_log" && posted=yes
cat "$platform_log" "$log"
echo "queue smoke: SIGTERM while the job ran; result posted during the drain: ${posted}; exit code: ${code} (after $((SECONDS - started)) s)"
[[ $posted == yes && $code == 0 ]]
