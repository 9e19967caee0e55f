#!/usr/bin/env bash
# Measure a cold `lwsc build` as a brand-new machine sees it: empty binary cache, empty Go build
# cache and empty Go module cache (all in a scratch dir, removed afterwards).
# Usage: benchmarks/cold_build.sh   (takes ~20-30 min on 2 cores; prints wall time and sizes)
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d /tmp/lwsc-cold.XXXXXX)"
trap 'chmod -R u+w "$scratch" 2>/dev/null; rm -rf "$scratch"' EXIT
export LWSC_CACHE_DIR="$scratch/lwsc" GOCACHE="$scratch/gocache" GOMODCACHE="$scratch/gomod"
start=$(date +%s)
.venv/bin/lwsc build
end=$(date +%s)
echo "cold build: $((end - start)) s"
echo "binary cache: $(du -sh "$LWSC_CACHE_DIR/bin" | cut -f1)"
echo "go module cache: $(du -sh "$GOMODCACHE" | cut -f1), go build cache: $(du -sh "$GOCACHE" | cut -f1)"
