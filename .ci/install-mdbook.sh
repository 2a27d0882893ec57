#!/usr/bin/env bash
# mdBook for the guide (.ci/guide.sh), at the pinned version, from crates.io: nothing is
# done when that version is already on PATH (or in ~/.cargo/bin). Built without its server
# and file watcher (`mdbook serve`), which CI does not use: a few minutes instead of ten.
set -euo pipefail
version=0.5.4
export PATH="$HOME/.cargo/bin:$PATH"
if command -v mdbook >/dev/null 2>&1 && [[ "$(mdbook --version)" == "mdbook v$version" ]]; then
    exit 0
fi
echo "installing mdbook $version (cargo install)"
cargo install mdbook --version "$version" --locked --no-default-features --features search
mdbook --version
