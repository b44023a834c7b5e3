#!/usr/bin/env bash
# The built-in default job: check the shipped task set and list the tune split.
set -euo pipefail
cd "$(dirname "$0")/.."
FARM=.venv/bin/farm
$FARM tasks check tasks/
$FARM tasks list --split tune
