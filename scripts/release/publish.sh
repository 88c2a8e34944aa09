#!/usr/bin/env bash
# Publishes a packed flash-worker tarball (scripts/release/pack.sh's). Two places only:
#   FLASH_RELEASE_REGISTRY=http://127.0.0.1:PORT  the rehearsal registry (scripts/release/registry.sh): a user is
#                                                 added there and its token used from a config of its own
#   in GitHub Actions (GITHUB_ACTIONS=true)       the npm registry, with provenance (the workflow's id-token) and
#                                                 the token setup-node wrote (NODE_AUTH_TOKEN)
# Anywhere else it refuses: a release is the tag's workflow, never a command run by hand.
# Usage: scripts/release/publish.sh TARBALL
set -euo pipefail
tarball=${1:?usage: publish.sh TARBALL}
[[ -f $tarball ]] || { echo "publish: no such tarball: $tarball" >&2; exit 1; }

if [[ -n ${FLASH_RELEASE_REGISTRY:-} ]]; then
  registry=${FLASH_RELEASE_REGISTRY%/}
  [[ $registry == http://127.0.0.1:* ]] || { echo "publish: the rehearsal registry must be on 127.0.0.1, not $registry" >&2; exit 1; }
  config=$(mktemp)
  trap 'rm -f "$config"' EXIT
  # What `npm adduser` does (its prompts need a terminal): the CouchDB user document, answered with a token.
  token=$(REGISTRY="$registry" node -e '
    const r = await fetch(`${process.env.REGISTRY}/-/user/org.couchdb.user:rehearsal`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "rehearsal", password: "rehearsal-password", type: "user" }),
    });
    const body = await r.json();
    if (!body.token) { console.error(`publish: adding a user: ${r.status} ${JSON.stringify(body)}`); process.exit(1); }
    console.log(body.token);' --input-type=module)
  printf 'registry=%s/\n//%s/:_authToken=%s\n' "$registry" "${registry#http://}" "$token" >"$config"
  npm publish "$tarball" --userconfig "$config" --registry "$registry/" --ignore-scripts --no-audit
  exit 0
fi

if [[ ${GITHUB_ACTIONS:-} != true ]]; then
  echo "publish: refusing to publish to the npm registry outside the release workflow (set FLASH_RELEASE_REGISTRY to rehearse)" >&2
  exit 1
fi
npm publish "$tarball" --provenance --access public --ignore-scripts
