#!/usr/bin/env bash
# Builds the harness's release executables, fully static Linux x86_64 (glibc static-pie,
# `-C target-feature=+crt-static`: nothing to download), stripped, into one folder with a
# SHA256SUMS file:
#
#   bash scripts/build-static.sh [OUT_DIR]        # default: dist
#
# OUT_DIR/harness is one executable serving every command; OUT_DIR/platform and
# OUT_DIR/customer-kms-sim are the same file under the other two names (hard links): the name
# it is started as picks the command. Each prints its version, git commit and target with
# --version. The commit is HARNESS_GIT_COMMIT when set, else git's HEAD.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-dist}
target=x86_64-unknown-linux-gnu
profile=dist
names=(harness platform customer-kms-sim)

if [[ "$(uname -s)/$(uname -m)" != "Linux/x86_64" ]]; then
    echo "build-static: builds on Linux x86_64 only (this is $(uname -s)/$(uname -m))" >&2
    exit 2
fi
if [[ -z "${HARNESS_GIT_COMMIT:-}" ]]; then
    HARNESS_GIT_COMMIT=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
fi
export HARNESS_GIT_COMMIT

start=$(date +%s)
echo "build-static: cargo build --profile $profile --target $target (static, commit $HARNESS_GIT_COMMIT)"
# With --target, RUSTFLAGS reach only the executables' code, not build scripts or
# procedural macros (which cannot be static).
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
    cargo build --locked --profile "$profile" --target "$target" -p scenarios --bin harness
bin="${CARGO_TARGET_DIR:-target}/$target/$profile/harness"

# Static, or nothing: an executable that needs the host's C library fails in an empty image.
if ! ldd "$bin" 2>&1 | grep -Eq 'not a dynamic executable|statically linked'; then
    echo "build-static: $bin is not static:" >&2
    ldd "$bin" >&2 || true
    exit 1
fi

rm -rf "$out"
mkdir -p "$out"
cp "$bin" "$out/harness"
ln "$out/harness" "$out/platform"
ln "$out/harness" "$out/customer-kms-sim"
(cd "$out" && sha256sum "${names[@]}" >SHA256SUMS)

echo "build-static: $(($(date +%s) - start)) s; in $out:"
for n in "${names[@]}"; do
    printf '  %-17s %6.1f MB  %s\n' "$n" "$(($(stat -c %s "$out/$n") / 1000))e-3" "$("$out/$n" --version)"
done
echo "  SHA256SUMS"
