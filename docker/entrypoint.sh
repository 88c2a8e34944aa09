#!/usr/bin/env bash
# flash-entrypoint: what tini starts in the flash-worker images.
#   flash-entrypoint                     -> flash start (handler.ts / handler.js / ... in the working directory)
#   flash-entrypoint handler.ts [flags]  -> flash start handler.ts [flags]   (the user Dockerfile's CMD ["handler.ts"])
#   flash-entrypoint flash <cmd> [...]   -> flash <cmd> [...]
#   flash-entrypoint <program> [...]     -> runs <program> as is (bash, node, npm, ...)
# As the runtime starts it reports the GPUs (GPU image, beside the start) and which copy of flash-worker runs.
set -euo pipefail

# The copy installed in the image; /node_modules/flash-worker links here so `import "flash-worker"` resolves
# from any working directory (ESM ignores NODE_PATH and global folders, but walks up to /node_modules).
IMAGE_RUNTIME=${FLASH_IMAGE_RUNTIME:-/usr/local/lib/node_modules/flash-worker}
# Node's compile cache (Node >= 22.1), filled with the runtime's start path when the image was built (install.sh).
IMAGE_COMPILE_CACHE=/var/cache/flash-worker/node-compile-cache

# One line in the runtime's own log format (src/log): text for people, JSON lines on the platform.
log() {
  local level=$1 message=$2
  if [[ -n ${RUNPOD_ENDPOINT_ID:-} ]]; then
    message=${message//\\/\\\\}
    message=${message//\"/\\\"}
    message=${message//$'\n'/\\n}
    message=${message//$'\t'/\\t}
    printf '{"requestId":null,"level":"%s","message":"%s"}\n' "$level" "$message"
  else
    printf '%s | %s | image | %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" "$level" "$message"
  fi
}

# GPU image only (NVIDIA_VISIBLE_DEVICES is set there): say which GPUs the container sees. nvidia-smi is
# mounted by the NVIDIA container toolkit on GPU hosts; on a CPU host it is absent, which is not an error.
report_gpus() {
  [[ -n ${NVIDIA_VISIBLE_DEVICES:-} ]] || return 0
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    log INFO "GPUs: none visible (no nvidia-smi: a CPU host, or the NVIDIA container toolkit is not active)"
    return 0
  fi
  local gpus
  # A wedged driver can hang nvidia-smi; the worker must start anyway.
  if gpus=$(timeout 10 nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>&1); then
    if [[ -z $gpus ]]; then
      log INFO "GPUs: none visible (nvidia-smi lists no GPU)"
      return 0
    fi
    local line
    while IFS= read -r line; do
      log INFO "GPU ${line}"
    done <<<"$gpus"
  else
    log WARN "GPUs: nvidia-smi failed, continuing without a GPU report: ${gpus//$'\n'/ }"
  fi
}

# The flash-worker copy that `import "flash-worker"` resolves to from folder $1 (node's walk up node_modules
# folders), into $runtime. Bash only, no subprocess: each fork and exec cost a cold start milliseconds.
resolve_runtime() {
  local dir=$1
  while true; do
    if [[ -f $dir/node_modules/flash-worker/package.json ]]; then
      runtime=$dir/node_modules/flash-worker
      return
    fi
    [[ -n $dir && $dir != / ]] || break
    dir=${dir%/*}
  done
  runtime=$IMAGE_RUNTIME
}

# Runs `flash "$@"` with the copy the handler's imports will load, so there is exactly one runtime instance
# (one handler registry). An app that installed its own flash-worker gets its own copy, and is told so.
run_flash() {
  local from=$PWD runtime
  if [[ ${1:-} == start || ${1:-} == run ]] && [[ -n ${2:-} && ${2:-} != -* ]]; then
    local file=$2
    [[ $file == /* ]] || file=$PWD/$file
    # Node resolves imports from where the handler really lies: a linked file is followed (rare, one realpath)
    # and linked folders by cd -P, which needs no subprocess.
    [[ ! -L $file ]] || file=$(realpath -m -- "$file")
    if cd -P -- "${file%/*}" 2>/dev/null; then
      from=$PWD
      cd -- "$OLDPWD"
    fi
  fi
  resolve_runtime "$from"
  # -ef compares what the paths name (device and inode): /node_modules/flash-worker links to the image's copy.
  if [[ $runtime -ef $IMAGE_RUNTIME ]]; then
    runtime=$IMAGE_RUNTIME
  else
    local versions
    # Only this rare path pays for a node start; package.json formatting varies, so JSON is parsed properly.
    versions=$(node -p 'process.argv.slice(1).map((p) => { try { return require(p).version } catch { return "unknown" } }).join(" ")' \
      "$runtime/package.json" "$IMAGE_RUNTIME/package.json")
    local app_version=${versions%% *} image_version=${versions##* }
    if [[ $app_version != "$image_version" ]]; then
      log WARN "flash-worker ${app_version} installed by the app (${runtime}) differs from the image's ${image_version}; running the app's copy. Drop flash-worker from the app's dependencies to use the image's, or build FROM an image tag of the same version."
    else
      log INFO "flash-worker ${app_version}: running the app's own copy (${runtime}), the same version as the image's."
    fi
  fi
  if [[ ! -f $runtime/dist/cli/main.js ]]; then
    log ERROR "flash-worker at ${runtime} has no dist/cli/main.js; reinstall it (npm ci) or remove it to use the image's copy."
    exit 1
  fi
  # No V8 flags: a capped young generation saved ~20 MB of RSS under load but made the handlers' own allocation
  # 1.6-5x slower (docs/benchmarks-history.md); flags of the app's own go in NODE_OPTIONS.
  # A new container then reads the runtime's compiled code instead of compiling its ~70 modules at every start
  # (docs/benchmarks-history.md); a NODE_COMPILE_CACHE of the app's own wins.
  export NODE_COMPILE_CACHE=${NODE_COMPILE_CACHE:-$IMAGE_COMPILE_CACHE}
  exec node "$runtime/dist/cli/main.js" "$@"
}

# Beside the start, not before it: nvidia-smi loads the driver's NVML and takes its time on every GPU host, and
# the worker's own fitness check reports each GPU anyway. In a subshell, so that tini reaps it once node replaces
# this shell.
if [[ -n ${NVIDIA_VISIBLE_DEVICES:-} ]]; then
  (report_gpus &)
fi

case ${1:-} in
  "" | -*) run_flash start "$@" ;;
  flash) shift && run_flash "$@" ;;
  *.ts | *.mts | *.cts | *.tsx | *.js | *.mjs | *.cjs) run_flash start "$@" ;;
  *) exec "$@" ;;
esac
