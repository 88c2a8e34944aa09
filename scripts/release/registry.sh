#!/usr/bin/env bash
# A real npm registry on a loopback port, for the release rehearsal: verdaccio (a devDependency) serving
# flash-worker from what scripts/release/publish.sh puts there, and proxying every other package from the
# registry this machine's npm is set up with. It never proxies flash-worker itself, so the rehearsal installs
# what was published here, whatever the public registry holds under that name. Runs in the foreground.
# Usage: scripts/release/registry.sh DIR PORT   (DIR: its storage and config, made if missing)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:?usage: registry.sh DIR PORT}
port=${2:?usage: registry.sh DIR PORT}
mkdir -p "$dir/storage"
dir=$(cd "$dir" && pwd)
uplink=$(npm config get registry)
cat >"$dir/config.yaml" <<YAML
storage: $dir/storage
auth:
  htpasswd:
    file: $dir/htpasswd
    max_users: 10
uplinks:
  upstream:
    url: $uplink
    timeout: 60s
packages:
  'flash-worker':
    access: \$all
    publish: \$authenticated
    unpublish: \$authenticated
  '**':
    access: \$all
    proxy: upstream
server:
  keepAliveTimeout: 60
log: { type: stdout, format: pretty, level: warn }
YAML
# verdaccio warns when run as root (CI runs as root here) and on Node 20 (it asks for 22; 6.8.0 runs on 20).
exec node "$repo/node_modules/verdaccio/bin/verdaccio" --config "$dir/config.yaml" --listen "127.0.0.1:$port"
