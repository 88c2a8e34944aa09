#!/usr/bin/env bash
# Packs the package as it is published: the built dist/ (run `npm run build` first; nothing here rebuilds it,
# so a test can pack while others use dist/) and the `files` of package.json. Prints the tarball's path.
# Usage: scripts/release/pack.sh OUTDIR
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: pack.sh OUTDIR}
[[ -f $repo/dist/cli/main.js && -f $repo/dist/package-lock.json ]] || {
  echo "pack: no complete dist/ in $repo: run npm run build first" >&2
  exit 1
}
mkdir -p "$out"
out=$(cd "$out" && pwd)
name=$(cd "$repo" && npm pack --ignore-scripts --json --pack-destination "$out" | node -e '
  let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s)[0].filename));')
echo "$out/$name"
