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
"$bin/ebb-bench" interleaved --archive --docs 3000 --ebbd "$bin/ebbd" --json "$out/interleaved.json" --plot "$out/interleaved.svg"
python3 - "$out/interleaved.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
# The archiving run checked its archive holds exactly the expired documents.
assert d["ratio_archiving_to_plain"] > 0, d
PY
"$bin/ebb-bench" churn --rate 2000 --duration 4 --ttl 1 --ebbd "$bin/ebbd" --json "$out/churn.json" --plot "$out/churn.svg"
"$bin/ebb-bench" churn --find-capacity --rate 20000 --duration 2 --ttl 1 --docs 3000 --ebbd "$bin/ebbd" --json "$out/capacity.json" --plot "$out/capacity.svg"
"$bin/ebb-bench" timeseries-churn --rate 20000 --duration 4 --ttl 1 --ebbd "$bin/ebbd" --json "$out/tschurn.json" --plot "$out/tschurn.svg"
"$bin/ebb-bench" aggregation --docs 3000 --runs 1 --ebbd "$bin/ebbd" --json "$out/aggregation.json"
"$bin/ebb-bench" forecast --docs 3000 --ebbd "$bin/ebbd" --json "$out/forecast.json"
python3 - "$out/forecast.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
# Dated over the week from two minutes on: all but the last few minutes' fall due in it.
# 3,000 keys are within the forecast's budget: counted whole, not estimated.
assert d["forecast_week_total"] >= 2995 and d["forecast_exact"] and not d["forecast_estimated"], d
PY
"$bin/ebb-bench" page --docs 3000 --ebbd "$bin/ebbd" --json "$out/page.json"
python3 - "$out/page.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
# Every TTL index is a row of the overview: 100 small collections and the big one.
assert d["overview_ttl_rows"] == 101, d
PY
"$bin/ebb-bench" watch --rate 1000 --duration 3 --ttl 1 --ebbd "$bin/ebbd" --json "$out/watch.json"
python3 - "$out/watch.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
# A change stream on a one-member set: an insert event for each document, then one delete
# event each as they expire.
assert d["insert_events"] == d["inserted"] > 0, d
assert d["expired_without_event"] == 0 and d["expired_with_two_events"] == 0, d
PY
# Peers whose servers are not installed are skipped, and the run says so
# (benches/install-peers.sh installs them; CI does not).
"$bin/ebb-bench" peers --docs 2000 --rate 1000 --duration 3 --ttl 1 --ebbd "$bin/ebbd" --json "$out/peers.json"
python3 - "$out/peers.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for peer in ("redis", "postgres"):
    if peer in d:
        print(f"bench smoke: peers: {peer} {d[peer]}")
    else:
        assert f"ratio_interleaved_ebb_to_{peer}" in d, d
PY
for f in purge purge-keep lag lag-shown insert foreground scans access timeseries interleaved churn aggregation peers forecast page watch; do
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['scenario']=='${f%-*}', d" "$out/$f.json"
done
python3 - "$out/tschurn.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["scenario"] == "timeseries-churn", d
# The harness's bucket model must match what the node deleted.
assert d["buckets_deleted"] == d["buckets_expected"] and d["buckets_left"] == 0, d
PY
for f in purge lag insert foreground timeseries interleaved churn tschurn; do grep -q "<polyline" "$out/$f.svg"; done
echo "bench smoke passed"
