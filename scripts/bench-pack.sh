#!/usr/bin/env bash
# Packs what the benchmarks need on a machine without node_modules (a lent GPU host, where only the working tree and
# a few carried paths travel): the production dependencies (tsx among them) as one tarball in .device/bench/, which
# git ignores. Carry `dist` and `.device/bench` there, then: tar xzf .device/bench/node_modules.tgz &&
# node --import tsx test/bench/run.ts <bench> (docs/benchmarks-history.md, "Model servers").
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -f dist/cli/main.js ]]; then
  echo "bench-pack: no dist/cli/main.js: run npm run build first" >&2
  exit 1
fi
out=.device/bench
mkdir -p "$out"
# Every installed production package, nested ones too, each without its own node_modules (listed apart).
npm ls --omit=dev --all --parseable | tail -n +2 | sed "s|^$PWD/||" | sort -u >"$out/packages.txt"
while read -r dir; do
  find "$dir" -path "$dir/node_modules" -prune -o -print
done <"$out/packages.txt" >"$out/files.txt"
tar czf "$out/node_modules.tgz" --no-recursion -T "$out/files.txt"
rm "$out/files.txt"
echo "bench-pack: $out/node_modules.tgz ($(du -h "$out/node_modules.tgz" | cut -f1), $(wc -l <"$out/packages.txt") packages)"
