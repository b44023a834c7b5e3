#!/usr/bin/env bash
# `make demo`: check the shipped task set, start two virtual phones on a private adb server, run the
# tune split on them with the simulated agent app, write the reports and print where they are.
# The phones and the private adb server are stopped on exit; a developer's adb server (5037) and
# real phones are never touched.
set -euo pipefail
cd "$(dirname "$0")/.."
FARM=.venv/bin/farm
PORT="${DEMO_PORT:-5137}"
RUNS="${DEMO_RUNS_DIR:-runs}"
export ANDROID_ADB_SERVER_PORT="$PORT"
# A state directory of its own, so a `farm sim up` the developer left running is not touched.
FARM_SIM_STATE_DIR="$(mktemp -d -t farm-demo.XXXXXX)"
export FARM_SIM_STATE_DIR

$FARM tasks check tasks/

cleanup() {
    "$FARM" sim down >/dev/null 2>&1 || true
    adb -P "$PORT" kill-server >/dev/null 2>&1 || true
    rm -rf "$FARM_SIM_STATE_DIR"
}
trap cleanup EXIT

echo "== starting two virtual phones (adb server on 127.0.0.1:$PORT)"
$FARM sim up --count 2 --adb-port "$PORT"
$FARM devices
STAMP="$(date -u +%Y%m%d-%H%M%S)"
echo "== farm run --split tune --all (the simulated on-device agent app, am instrument)"
$FARM run --split tune --all --runs-dir "$RUNS" --run-id "demo-$STAMP"
echo "== farm run --split tune --all --executor host --policy scripted (host agent driving the phones)"
$FARM run --split tune --all --executor host --policy scripted --runs-dir "$RUNS" --run-id "demo-host-$STAMP"
echo "== both runs side by side (paired on the common task × phone units)"
$FARM report "demo-$STAMP" "demo-host-$STAMP" --runs-dir "$RUNS"
echo "== done. The main report:"
echo "$RUNS/demo-$STAMP/report.md"
