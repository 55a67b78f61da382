#!/usr/bin/env bash
# Runs every test: first installs what they need (scripts/setup.sh), then
# `cargo test --workspace` with this script's arguments. With CI=true a test whose
# tool or JDK is missing fails, naming it, instead of skipping with a note.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec cargo test --workspace "$@"
