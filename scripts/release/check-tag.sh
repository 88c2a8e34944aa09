#!/usr/bin/env bash
# The release workflow's first step: the pushed tag is v<package.json's version>, CHANGELOG.md has a heading for
# that version, and package.json's repository is the repository the workflow runs in (npm provenance checks it).
# Usage: scripts/release/check-tag.sh TAG [OWNER/NAME]   (in Actions: "$GITHUB_REF_NAME" "$GITHUB_REPOSITORY")
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tag=${1:?usage: check-tag.sh TAG [OWNER/NAME]}
version=$(node -p 'require(process.argv[1]).version' "$repo/package.json")
[[ $tag == "v$version" ]] || { echo "check-tag: tag $tag is not v$version, package.json's version" >&2; exit 1; }
grep -qx "## $version" "$repo/CHANGELOG.md" || { echo "check-tag: CHANGELOG.md has no \"## $version\" heading" >&2; exit 1; }
if [[ -n ${2:-} ]]; then
  url=$(node -p 'require(process.argv[1]).repository.url' "$repo/package.json")
  [[ $url == "git+https://github.com/$2.git" ]] || { echo "check-tag: package.json's repository is $url, not github.com/$2" >&2; exit 1; }
fi
echo "check-tag: releasing $version"
