#!/usr/bin/env bash
# Contract fuzzing: Schemathesis against a running platform and customer-kms-sim, each
# tested against its committed OpenAPI document (contracts/openapi/), after
# openapi-spec-validator has accepted both documents. Fails on any failure Schemathesis
# reports. Seeded: the same seed and binaries make the same requests.
#
#   bash .ci/schemathesis.sh                 # what CI runs
#   ST_SEED=7 ST_EXAMPLES=50 bash .ci/schemathesis.sh
#
# Environment: ST_SEED (default 1), ST_EXAMPLES (test cases per operation and phase, every
# phase; unset: the configurations' counts, 25, and 150 scenarios of the platform's stateful
# phase), ST_VENV (where the Python tools are installed, default
# target/schemathesis-venv), ST_REPORT_DIR (JUnit reports, default target/schemathesis).
# Each run ends with Schemathesis's summary: test cases generated, failures, time.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEMATHESIS_VERSION=4.32.5
SPEC_VALIDATOR_VERSION=0.9.0
seed=${ST_SEED:-1}
examples=${ST_EXAMPLES:-}
venv=${ST_VENV:-target/schemathesis-venv}
reports=${ST_REPORT_DIR:-target/schemathesis}
api_key=sk-schemathesis

# Python 3.12 or later when the machine has it (also a pyenv-installed one), else python3
# (Schemathesis 4 needs 3.11 or later).
pick_python() {
    local c
    for c in python3.13 python3.12 $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3 2>/dev/null | sort -rV) python3; do
        if command -v "$c" >/dev/null 2>&1 &&
            "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
            echo "$c"
            return
        fi
    done
    echo "schemathesis: no Python 3.11 or later found (install python3.12)" >&2
    exit 2
}

# The venv is made again when the pinned versions or the Python it would be made with change
# (a venv made before Python 3.12 was installed is replaced by one on 3.12).
python=$(pick_python)
want="schemathesis==$SCHEMATHESIS_VERSION openapi-spec-validator==$SPEC_VALIDATOR_VERSION $("$python" --version 2>&1)"
if [[ ! -x "$venv/bin/st" || "$(cat "$venv/.pinned" 2>/dev/null)" != "$want" ]]; then
    echo "schemathesis: installing $want into $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        "schemathesis==$SCHEMATHESIS_VERSION" "openapi-spec-validator==$SPEC_VALIDATOR_VERSION"
    echo "$want" >"$venv/.pinned"
fi
echo "schemathesis: $("$venv/bin/st" --version), $("$venv/bin/python" --version)"

"$venv/bin/openapi-spec-validator" contracts/openapi/platform.json contracts/openapi/byok.json

cargo build --quiet --workspace --bins
mkdir -p "$reports"
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# Waits for "<name> listening on http://ADDR" in a server's output and prints ADDR.
address_of() {
    local log=$1 name=$2 i
    for i in $(seq 1 600); do
        if grep -q "^$name listening on http://" "$log" 2>/dev/null; then
            sed -n "s|^$name listening on http://\([^ ]*\).*|\1|p" "$log" | head -1
            return
        fi
        sleep 0.1
    done
    echo "schemathesis: $name did not start:" >&2
    cat "$log" >&2
    exit 2
}

# The platform on a simulated clock, in memory, with a fixed key and seed: the same requests
# give the same ids and outcomes.
target/debug/platform serve --config .ci/schemathesis/platform-server.toml --listen 127.0.0.1:0 --database :memory: --seed "$seed" \
    --clock simulated --sim-start 2026-03-02T08:00:00Z --webhook-secret whsec_schemathesis \
    --api-key "*/*=$api_key:schemathesis" >"$work/platform.log" 2>&1 &
pids+=($!)
# The key service on a simulated clock too; the timestamp skew is opened wide because a
# generated x-request-timestamp is any date-time (the document cannot tie it to a clock).
target/debug/customer-kms-sim serve --listen 127.0.0.1:0 --seed "$seed" \
    --sim-clock 2026-03-02T08:00:00Z --skew-secs 1000000000000 >"$work/kms.log" 2>&1 &
pids+=($!)
platform=$(address_of "$work/platform.log" platform)
kms=$(address_of "$work/kms.log" customer-kms-sim)

status=0
run() {
    local name=$1 config=$2 document=$3 url=$4
    shift 4
    local started=$SECONDS
    local count=()
    if [[ -n "$examples" ]]; then count=(--max-examples "$examples"); fi
    echo "schemathesis: $name ($document against $url, seed $seed, ${examples:-configured} examples)"
    "$venv/bin/st" --config-file "$config" run "$document" --url "$url" \
        --seed "$seed" "${count[@]}" --workers 1 \
        --generation-database none --no-color \
        --report junit --report-dir "$reports" --report-junit-path "$reports/$name.xml" \
        "$@" || status=1
    echo "schemathesis: $name took $((SECONDS - started)) s"
}

# The hooks put half of the generated campaigns' times in the window the platform's clock
# allows, so the stateful phase works on real campaigns (see .ci/schemathesis/hooks.py).
PYTHONPATH=.ci/schemathesis SCHEMATHESIS_HOOKS=hooks PLATFORM_URL="http://$platform" PLATFORM_API_KEY=$api_key \
    run platform .ci/schemathesis/platform.toml contracts/openapi/platform.json "http://$platform" \
    -H "X-API-Key: $api_key"
run byok .ci/schemathesis/byok.toml contracts/openapi/byok.json "http://$kms"

exit "$status"
