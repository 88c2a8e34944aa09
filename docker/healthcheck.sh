#!/usr/bin/env bash
# flash-healthcheck: the images' HEALTHCHECK. A load-balanced app serves /ping on $PORT (204 while it starts,
# 200 when ready); a queue worker serves nothing (its health is the platform's heartbeat), so it passes.
# Pure bash (/dev/tcp): the slim bases have no curl, and a node start every interval would cost ~40 MB.
set -euo pipefail

port=${PORT:-80}

# A refused connection on loopback answers at once: then nothing listens, which is a queue worker.
host=""
for candidate in 127.0.0.1 ::1; do
  if { exec 3<>"/dev/tcp/${candidate}/${port}"; } 2>/dev/null; then
    host=$candidate
    break
  fi
done
if [[ -z $host ]]; then
  echo "nothing listens on port ${port}: a queue worker (the platform's heartbeat checks it), healthy"
  exit 0
fi

[[ $host == *:* ]] && host="[${host}]"
printf 'GET /ping HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n' "$host" "$port" >&3
status_line=""
IFS= read -r -t "${FLASH_HEALTHCHECK_TIMEOUT:-4}" status_line <&3 || true
exec 3<&-
read -r _ status _ <<<"${status_line}" || true
case ${status:-} in
  200) echo "GET /ping: 200, ready" ;;
  204) echo "GET /ping: 204, still initializing" && exit 1 ;;
  "") echo "GET /ping on port ${port}: no answer" && exit 1 ;;
  *) echo "GET /ping on port ${port}: ${status}" && exit 1 ;;
esac
