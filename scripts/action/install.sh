#!/usr/bin/env bash
# The action's first step: put a `harness` executable on the PATH of the job's later steps.
#
#   INPUT_HARNESS_PATH  an executable to use as it is (a build of your own, a cached one)
#   INPUT_VERSION       else: the release whose static executable to download (default: the
#                       action's own ref, GITHUB_ACTION_REF, such as v0.2.0), from
#                       INPUT_REPOSITORY (default: GITHUB_ACTION_REPOSITORY), checked
#                       against the release's SHA256SUMS
#   RUNNER_TEMP         where it goes (a temporary folder when unset)
#   GITHUB_PATH         the file that extends later steps' PATH (skipped when unset)
#   GITHUB_OUTPUT       gets `harness-path=...` and `harness-version=...`
set -euo pipefail

dir="${RUNNER_TEMP:-$(mktemp -d)}/voice-harness/bin"
mkdir -p "$dir"

if [[ -n "${INPUT_HARNESS_PATH:-}" ]]; then
    if [[ ! -x "$INPUT_HARNESS_PATH" ]]; then
        echo "::error::harness-path '$INPUT_HARNESS_PATH' is not an executable file"
        exit 2
    fi
    cp "$INPUT_HARNESS_PATH" "$dir/harness"
else
    version=${INPUT_VERSION:-${GITHUB_ACTION_REF:-}}
    repo=${INPUT_REPOSITORY:-${GITHUB_ACTION_REPOSITORY:-}}
    if [[ -z "$version" || -z "$repo" ]]; then
        echo "::error::say which release to download (the 'version' input, and 'repository' outside a published action), or give 'harness-path'"
        exit 2
    fi
    if [[ "$(uname -s)/$(uname -m)" != "Linux/x86_64" ]]; then
        echo "::error::the released executables are for Linux x86_64; on $(uname -s)/$(uname -m) give 'harness-path' (cargo install --path scenarios)"
        exit 2
    fi
    base="https://github.com/$repo/releases/download/$version"
    curl -fsSL --retry 3 -o "$dir/harness" "$base/harness"
    curl -fsSL --retry 3 -o "$dir/SHA256SUMS" "$base/SHA256SUMS"
    (cd "$dir" && grep ' harness$' SHA256SUMS | sha256sum -c --quiet -)
fi
chmod +x "$dir/harness"
# The other two commands are the same executable under their names.
ln -sf harness "$dir/platform"
ln -sf harness "$dir/customer-kms-sim"

version_line=$("$dir/harness" --version)
echo "installed: $version_line ($dir)"
if [[ -n "${GITHUB_PATH:-}" ]]; then echo "$dir" >>"$GITHUB_PATH"; fi
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
    {
        echo "harness-path=$dir/harness"
        echo "harness-version=$version_line"
    } >>"$GITHUB_OUTPUT"
fi
