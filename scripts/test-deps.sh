#!/usr/bin/env bash
# The one list of system packages the test suites need: installs what is missing when run as root (Debian),
# otherwise fails naming what to install. `npm test` (pretest) and .ci/run both run it.
set -euo pipefail

# package | the check that it is there (what the suites actually use)
checks=(
  "python3-cloudpickle|/usr/bin/python3 -c 'import cloudpickle'"     # pickle interop and differential tests
  "chromium|test -x \"\${CHROMIUM_PATH:-/usr/bin/chromium}\""         # the console's browser test
  "buildah|command -v buildah"                                         # image builds without a Docker engine
  "debootstrap|test -x /usr/sbin/debootstrap || command -v debootstrap" # the images' stand-in base
  "docker-registry|command -v docker-registry"                         # a loopback OCI registry for deploy tests
  "wrk|command -v wrk"                                                 # HTTP load for the routes benchmark
  "python3-fastapi|/usr/bin/python3 -c 'import fastapi'"              # the serve-api benchmark's runpod-python stand-in
  "python3-uvicorn|/usr/bin/python3 -c 'import uvicorn'"              # its server
  "openssl|command -v openssl"                                         # a TLS certificate for the https transport test
  "gcc|command -v cc"                                                  # the stand-in GPU driver for the koffi binding tests
)

# fills `missing` with the packages whose check fails
find_missing() {
  missing=()
  local entry
  for entry in "${checks[@]}"; do
    bash -c "${entry#*|}" >/dev/null 2>&1 || missing+=("${entry%%|*}")
  done
}

find_missing
((${#missing[@]} == 0)) && exit 0

if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
  echo "test-deps: missing system packages: ${missing[*]}" >&2
  echo "test-deps: install them as root (Debian: apt-get install -y --no-install-recommends ${missing[*]})," >&2
  echo "test-deps: or run this script as root: bash scripts/test-deps.sh" >&2
  exit 1
fi

echo "test-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
find_missing
if ((${#missing[@]} > 0)); then
  echo "test-deps: still missing after apt-get install: ${missing[*]} (is CHROMIUM_PATH right?)" >&2
  exit 1
fi
