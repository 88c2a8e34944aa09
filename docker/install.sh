#!/usr/bin/env bash
# Runs inside Dockerfile.cpu / Dockerfile.gpu, after the package files were copied to $RUNTIME: installs tini
# and the runtime's production dependencies, links the commands, and proves `import "flash-worker"` resolves
# from /app. One script for both images, so the CPU and CUDA images cannot drift apart.
set -euo pipefail

RUNTIME=/usr/local/lib/node_modules/flash-worker
export DEBIAN_FRONTEND=noninteractive

# The GPU image copies node and npm from the node image; npm's own bin links are not part of that copy.
if [[ ! -e /usr/local/bin/npm && -f /usr/local/lib/node_modules/npm/bin/npm-cli.js ]]; then
  ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm
  ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx
fi

# tini as PID 1: forwards SIGTERM to the runtime (which then drains) and reaps zombies from user code.
if [[ ! -x /usr/bin/tini ]]; then
  apt-get update -o Acquire::Languages=none
  apt-get install -y --no-install-recommends tini
  # The downloaded .deb too (a debootstrap base has no docker-clean hook that drops it).
  rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/apt/archives/*.deb
fi

# A CA handed over as a build secret (Dockerfile: RUN --mount=type=secret,id=npm_ca) for a registry behind a
# TLS-intercepting proxy; it exists for this RUN only.
if [[ -f /run/secrets/npm_ca ]]; then
  export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca npm_config_cafile=/run/secrets/npm_ca
fi

# Exactly the locked production dependencies; no lifecycle scripts (tsc is not here and dist/ is built).
# The npm cache lives in /tmp for this step only, so no cache ends up in the image.
cd "$RUNTIME"
# npm never packs package-lock.json: an installed flash-worker carries the copy `npm run build` writes to dist/.
[[ -f package-lock.json ]] || cp dist/package-lock.json package-lock.json
npm ci --omit=dev --ignore-scripts --no-audit --no-fund --cache /tmp/npm-cache --loglevel=warn
rm -rf /tmp/npm-cache /root/.npm
# tsx and esbuild (4.9 MB of the layer, gzipped) are for Node 20 and `flash dev`: the image's Node 24 runs a .ts
# handler itself, type stripping first and its own transform for what stripping refuses (an enum, a "commonjs"
# package's imports), so on a Node that has both they stay out of the image. The lock says nothing else needs them.
if node -e 'const m = require("node:module"); process.exit(typeof m.registerHooks === "function" && typeof m.stripTypeScriptTypes === "function" ? 0 : 1)'; then
  node -e '
    const gone = new Set(["tsx", "esbuild", "get-tsconfig", "resolve-pkg-maps"]);
    const name = (path) => path.slice(path.lastIndexOf("node_modules/") + 13);
    const needs = Object.entries(require("./package-lock.json").packages)
      .filter(([path, p]) => path && !p.dev && !gone.has(name(path)) && !name(path).startsWith("@esbuild/"))
      .filter(([, p]) => Object.keys({ ...p.dependencies, ...p.peerDependencies }).some((d) => gone.has(d)));
    if (needs.length > 0) throw new Error("install.sh: needed by " + needs.map(([path]) => path).join(", "));
  '
  rm -rf node_modules/tsx node_modules/esbuild node_modules/@esbuild node_modules/get-tsconfig \
    node_modules/resolve-pkg-maps node_modules/.bin/tsx node_modules/.bin/esbuild
fi
# Installed by copy rather than `npm install -g`, so npm did not mark the bin executable.
chmod 0755 dist/cli/main.js docker/entrypoint.sh docker/healthcheck.sh

ln -sf "$RUNTIME/dist/cli/main.js" /usr/local/bin/flash
ln -sf "$RUNTIME/docker/entrypoint.sh" /usr/local/bin/flash-entrypoint
ln -sf "$RUNTIME/docker/healthcheck.sh" /usr/local/bin/flash-healthcheck
# ESM resolution ignores NODE_PATH and global folders but walks up to /node_modules from any directory,
# so this link makes `import "flash-worker"` work in /app (or anywhere) without the app installing it.
mkdir -p /node_modules /app
ln -sfn "$RUNTIME" /node_modules/flash-worker
# The runtime is ESM-only (its exports have an "import" condition only), and tsx compiles a .ts file as
# CommonJS unless the nearest package.json says "module". An app that copies in no package.json of its own
# (as the examples) gets this one; an app's own package.json replaces it.
cat >/app/package.json <<'JSON'
{
  "description": "flash-worker image default: handler files in /app are ES modules. The app's own package.json replaces this one.",
  "private": true,
  "type": "module"
}
JSON

# Fail the build, not the first cold start, if the resolution or the CLI does not work.
cd /app
# shellcheck disable=SC2016 # the single quotes hold JavaScript, whose template literal is not for bash
node --input-type=module -e '
  const { handler } = await import("flash-worker");
  if (typeof handler !== "function") throw new Error("flash-worker resolved without a handler export");
  console.log(`flash-worker resolves from /app to ${import.meta.resolve("flash-worker")}`);
'
flash --help >/dev/null
tini --version

# Node's compile cache (Node >= 22.1; the entrypoint points NODE_COMPILE_CACHE here): the queue worker's start
# path (the CLI, `import "flash-worker"`, the queue worker's modules) and the modules tracing and JSON logs load,
# compiled once now, so a new container reads V8's code instead of compiling it. Node keys it by user: it serves
# a container that runs as root.
warm=$(mktemp -d)
printf 'import { handler } from "flash-worker";\nexport default handler(() => ({}));\n' >"$warm/handler.mjs"
export NODE_COMPILE_CACHE=/var/cache/flash-worker/node-compile-cache
flash start "$warm/handler.mjs" --test_input '{"input": {}}' >"$warm/out" 2>&1 || { cat "$warm/out"; exit 1; }
node --input-type=module -e "await (await import('$RUNTIME/dist/runtime/start.js')).loadQueueModules()"
# And what tracing (OTEL_EXPORTER_OTLP_ENDPOINT) and LOG_FORMAT=json load on demand: imported, not started.
node --input-type=module -e "await import('$RUNTIME/dist/trace/otel.js'); await import('$RUNTIME/dist/log/json.js')"
unset NODE_COMPILE_CACHE
# A .ts handler with an enum runs in the image (Node's transform where tsx was left out above), or the build fails.
printf '{"type": "module"}\n' >"$warm/package.json"
printf 'import { handler } from "flash-worker";\nenum Answer { Yes = "yes" }\nexport default handler(() => ({ answer: Answer.Yes }));\n' >"$warm/enum.ts"
flash start "$warm/enum.ts" --test_input '{"input": {}}' >"$warm/out" 2>&1 && grep -qF '{"output":{"answer":"yes"}}' "$warm/out" ||
  { cat "$warm/out"; exit 1; }
# npm and `flash` (module.enableCompileCache) left a compile cache of this build's runs in the temporary folder:
# 2.5 MB no container reads (the entrypoint points NODE_COMPILE_CACHE at the one above).
rm -rf "$warm" /tmp/node-compile-cache
