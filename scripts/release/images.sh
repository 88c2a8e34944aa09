#!/usr/bin/env bash
# The release's image steps, on the images docker/build.sh --real-bases left in buildah storage
# (localhost/flash-worker:cpu, :cuda, :cuda-runtime and :cuda-cudnn, in FLASH_IMAGE_WORK's storage as build.sh
# keeps it, else buildah's default storage):
#   images.sh login REGISTRY               log in with REGISTRY_USER and REGISTRY_PASSWORD (env); syft and cosign
#                                          read the same file when REGISTRY_AUTH_FILE is $DOCKER_CONFIG/config.json
#   images.sh push REPO VERSION [FLAVOUR…] tag each flavour (default: all four) REPO:VERSION-FLAVOUR and
#                                          REPO:FLAVOUR, push both; prints REPO@DIGEST for each flavour
#   images.sh attest REPO@DIGEST…          for each: an SPDX SBOM of the pushed image (syft), attached as a
#                                          signed attestation, then the image signed (cosign, keyless in Actions)
# A registry on 127.0.0.1 or localhost is pushed to without TLS (the rehearsal's loopback registry).
set -euo pipefail
# Every image docker/build.sh --real-bases makes (Dockerfile.cpu; Dockerfile.gpu on each nvidia/cuda flavor).
FLAVOURS=(cpu cuda cuda-runtime cuda-cudnn)

bh() {
  if [[ -n ${FLASH_IMAGE_WORK:-} ]]; then
    buildah --root "$FLASH_IMAGE_WORK/storage" --runroot "$FLASH_IMAGE_WORK/run" --storage-driver vfs "$@"
  else
    buildah "$@"
  fi
}
die() {
  echo "images: $*" >&2
  exit 1
}
tls_for() { [[ $1 == 127.0.0.1:* || $1 == localhost:* ]] && echo --tls-verify=false || echo --tls-verify=true; }

cmd=${1:-}
shift || true
case $cmd in
  login)
    registry=${1:?usage: images.sh login REGISTRY}
    [[ -n ${REGISTRY_USER:-} && -n ${REGISTRY_PASSWORD:-} ]] || die "login needs REGISTRY_USER and REGISTRY_PASSWORD"
    printf '%s' "$REGISTRY_PASSWORD" | bh login --username "$REGISTRY_USER" --password-stdin "$registry"
    ;;
  push)
    repo=${1:?usage: images.sh push REPO VERSION [FLAVOUR...]}
    version=${2:?usage: images.sh push REPO VERSION [FLAVOUR...]}
    shift 2
    [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z.-]+)?$ ]] || die "not a version: $version"
    (($# > 0)) || set -- "${FLAVOURS[@]}"
    tls=$(tls_for "$repo")
    digests=$(mktemp)
    trap 'rm -f "$digests"' EXIT
    for flavour in "$@"; do
      [[ " ${FLAVOURS[*]} " == *" $flavour "* ]] || die "no such flavour: $flavour (${FLAVOURS[*]})"
      source=localhost/flash-worker:$flavour
      bh inspect --type image "$source" >/dev/null 2>&1 ||
        die "no $source here: build it first (docker/build.sh --real-bases --keep)"
      for tag in "$version-$flavour" "$flavour"; do
        bh push "$tls" --digestfile "$digests" "$source" "docker://$repo:$tag" >&2
      done
      echo "$repo@$(cat "$digests")"
    done
    ;;
  attest)
    (($# > 0)) || die "usage: images.sh attest REPO@DIGEST..."
    for ref in "$@"; do
      [[ $ref == *@sha256:* ]] || die "attest takes images by digest (REPO@sha256:…), not $ref"
    done
    command -v syft >/dev/null || die "attest needs syft (the workflow installs it)"
    command -v cosign >/dev/null || die "attest needs cosign (the workflow installs it)"
    sbom=$(mktemp --suffix=.spdx.json)
    trap 'rm -f "$sbom"' EXIT
    for ref in "$@"; do
      syft scan "registry:$ref" --output "spdx-json=$sbom"
      cosign attest --yes --type spdxjson --predicate "$sbom" "$ref"
      cosign sign --yes "$ref"
    done
    ;;
  *)
    die "usage: images.sh login REGISTRY | push REPO VERSION [FLAVOUR...] | attest REPO@DIGEST..."
    ;;
esac
