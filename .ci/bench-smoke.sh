#!/usr/bin/env bash
# Runs every load-harness scenario at a tiny size so the harness cannot rot.
# No timing is asserted here (the machine is shared and the build is a debug
# build); BENCHMARKS.md holds the measured figures. Usage: .ci/bench-smoke.sh target/debug
set -euo pipefail
bin=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin/ebb-bench" purge --docs 3000 --ebbd "$bin/ebbd" --json "$out/purge.json" --plot "$out/purge.svg"
"$bin/ebb-bench" purge --docs 3000 --keep 10 --ebbd "$bin/ebbd" --json "$out/purge-keep.json"
"$bin/ebb-bench" lag --rate 500 --duration 2 --ebbd "$bin/ebbd" --json "$out/lag.json" --plot "$out/lag.svg"
"$bin/ebb-bench" lag --rate 500 --duration 2 --show-expired --ebbd "$bin/ebbd" --json "$out/lag-shown.json"
"$bin/ebb-bench" insert --docs 3000 --clients 2 --ebbd "$bin/ebbd" --json "$out/insert.json" --plot "$out/insert.svg"
"$bin/ebb-bench" foreground --docs 3000 --ebbd "$bin/ebbd" --json "$out/foreground.json" --plot "$out/foreground.svg"
"$bin/ebb-bench" scans --docs 3000 --clients 2 --duration 1 --ebbd "$bin/ebbd" --json "$out/scans.json"
"$bin/ebb-bench" access --docs 3000 --clients 2 --connections 5 --ebbd "$bin/ebbd" --json "$out/access.json"
"$bin/ebb-bench" timeseries --docs 3000 --ebbd "$bin/ebbd" --json "$out/timeseries.json" --plot "$out/timeseries.svg"
for f in purge purge-keep lag lag-shown insert foreground scans access timeseries; do
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['scenario']=='${f%-*}', d" "$out/$f.json"
done
for f in purge lag insert foreground timeseries; do grep -q "<polyline" "$out/$f.svg"; done
echo "bench smoke passed"
