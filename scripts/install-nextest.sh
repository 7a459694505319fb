#!/usr/bin/env bash
# Installs the pinned cargo-nextest (`make test` runs the suite with it: its test groups keep the
# tests that share a broker window apart, which plain `cargo test` cannot). Idempotent: an
# installed binary at the pinned version is left alone. Prints one line saying what it did.
set -euo pipefail

version="0.9.143"

installed="$(cargo nextest --version 2>/dev/null | sed -n 's/^cargo-nextest \([0-9.]*\).*/\1/p' | head -n 1 || true)"
if [ "$installed" = "$version" ]; then
    echo "install-nextest: cargo-nextest $version present"
    exit 0
fi
echo "install-nextest: installing cargo-nextest $version from crates.io (found: ${installed:-none})"
cargo install cargo-nextest --locked --version "$version"
