#!/usr/bin/env bash
# Runs inside an image (docker/build.sh copies it in): the image's own ENTRYPOINT + CMD, given as "$@",
# serves a load-balanced app on $PORT: /ping answers 200 once ready, flash-healthcheck passes, and
# SIGTERM sent to tini stops the server with exit code 0.
set -euo pipefail

log=/tmp/smoke-lb.log
"$@" >"$log" 2>&1 &
app=$!

ping() {
  node -e 'fetch("http://127.0.0.1:" + process.env.PORT + "/ping").then((r) => console.log(r.status), () => console.log(0))'
}
statuses=()
ready=no
for _ in $(seq 150); do
  status=$(ping)
  [[ ${statuses[*]:-} == *"$status" ]] || statuses+=("$status")
  if [[ $status == 200 ]]; then ready=yes && break; fi
  kill -0 "$app" 2>/dev/null || break
  sleep 0.2
done
health=0
flash-healthcheck || health=$?
kill -TERM "$app" 2>/dev/null || true
code=0
wait "$app" || code=$?
cat "$log"
echo "lb smoke: /ping statuses seen (0 = not listening yet): ${statuses[*]:-none}; ready: ${ready}; flash-healthcheck exit: ${health}; exit code after SIGTERM: ${code}"
[[ $ready == yes && $health == 0 && $code == 0 ]]
