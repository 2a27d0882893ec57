#!/usr/bin/env bash
# Contract fuzzing: Schemathesis against a running platform (in `harness up`, beside the key
# service it is wired to) and a customer-kms-sim, each tested against its committed OpenAPI
# document (contracts/openapi/), after openapi-spec-validator has accepted both documents.
# The platform starts with the fixtures of .ci/schemathesis/fixtures.toml, and the hooks
# (.ci/schemathesis/hooks.py, byok_hooks.py) give the generated requests real ids and the
# values no schema can state. Fails on any failure Schemathesis reports, on a "missing test
# data" or "schema validation mismatch" warning, when an operation never reached a 2xx, and
# when the stateful phase followed half of the document's links or fewer (the tables printed
# after each run, .ci/schemathesis/tally.py). Seeded: the same seed and binaries make the same
# requests. How to run it, and the last figures of CI's run and the long run:
# docs/guide/fuzzing.md.
#
#   bash .ci/schemathesis.sh                          # what CI runs
#   ST_SEED=7 ST_EXAMPLES=50 bash .ci/schemathesis.sh
#   ST_LONG=1 bash .ci/schemathesis.sh                # the long run: minutes, not seconds
#
# Environment: ST_SEED (default 1), ST_EXAMPLES (test cases per operation and phase, every
# phase; unset: the configurations' counts, 25, and 150 scenarios of the platform's stateful
# phase), ST_STATEFUL (scenarios of the stateful phases, overriding ST_EXAMPLES there),
# ST_STATEFUL_PASSES (passes of the stateful phase, each with the next seed; default 1),
# ST_LONG=1 (ST_EXAMPLES=150 and ST_STATEFUL_PASSES=10 unless set), ST_VENV (where the
# Python tools are installed, default target/schemathesis-venv), ST_REPORT_DIR (JUnit reports
# and the tallies, default target/schemathesis), ST_DEBUG=1 (the tallies keep the start of
# each refusal of valid data). Each run ends with Schemathesis's summary (test cases
# generated, failures, warnings, links covered, time) and the table of requests per
# operation.
set -euo pipefail
cd "$(dirname "$0")/.."
# The hooks' modules are imported from .ci/schemathesis: no bytecode beside them.
export PYTHONDONTWRITEBYTECODE=1

SCHEMATHESIS_VERSION=4.32.5
SPEC_VALIDATOR_VERSION=0.9.0
seed=${ST_SEED:-1}
if [[ -n "${ST_LONG:-}" ]]; then
    : "${ST_EXAMPLES:=150}" "${ST_STATEFUL_PASSES:=10}"
fi
examples=${ST_EXAMPLES:-}
stateful=${ST_STATEFUL:-$examples}
passes=${ST_STATEFUL_PASSES:-1}
venv=${ST_VENV:-target/schemathesis-venv}
reports=${ST_REPORT_DIR:-target/schemathesis}
api_key=sk-schemathesis
# The key of the workspace the fault rules go to (nothing else sends requests there).
faults_key=sk-schemathesis-faults
kms_admin_token=kms-admin-schemathesis

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
# The hooks' own tests (what they fill, how the table is counted).
"$venv/bin/python" -m unittest discover --start-directory .ci/schemathesis --pattern 'test_*.py'

# `harness up` runs the platform and its key service in-process; the other key service is
# customer-kms-sim.
cargo build --quiet -p scenarios -p customer-kms-sim --bin harness --bin customer-kms-sim
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

# Waits for the ready file of `harness up` and prints the platform's URL.
platform_url() {
    local ready=$1 log=$2 i
    for i in $(seq 1 600); do
        if [[ -s "$ready" ]]; then
            "$venv/bin/python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["platform"]["url"])' "$ready"
            return
        fi
        sleep 0.1
    done
    echo "schemathesis: harness up did not start:" >&2
    cat "$log" >&2
    exit 2
}

# The platform in `harness up`, on a simulated clock, in memory, with fixed keys and seed: the
# same requests give the same ids and outcomes. The fixtures' workspace is the one wired to
# the stack's key service, so its data key comes through BYOK and its key-service audit is
# there to read. One key opens every workspace; another only the faults workspace.
target/debug/harness up --port-base 0 --platform-config .ci/schemathesis/platform-server.toml \
    --clock simulated --sim-start 2026-03-02T08:00:00Z --seed "$seed" --database :memory: \
    --workspace st-org/st-ws --fixtures .ci/schemathesis/fixtures.toml \
    --api-key "*/*=$api_key:schemathesis" --api-key "st-faults/st-ws=$faults_key:faults" \
    --ready-file "$work/stack.json" >"$work/stack.log" 2>&1 &
pids+=($!)
# The key service on a simulated clock too; the timestamp skew is opened wide because a
# generated x-request-timestamp is any date-time (the document cannot tie it to a clock).
target/debug/customer-kms-sim serve --listen 127.0.0.1:0 --seed "$seed" --admin-token "$kms_admin_token" \
    --sim-clock 2026-03-02T08:00:00Z --skew-secs 1000000000000 >"$work/kms.log" 2>&1 &
pids+=($!)
platform=$(platform_url "$work/stack.json" "$work/stack.log")
kms=$(address_of "$work/kms.log" customer-kms-sim)

status=0
run() {
    local name=$1 config=$2 document=$3 url=$4
    shift 4
    local started=$SECONDS
    local tally="$reports/$name.tally.jsonl" links="$reports/$name.links.json"
    # The configuration with the counts asked for (the stateful phase's own line, then the rest).
    local effective="$work/$name.toml"
    sed -e "${stateful:+s/^stateful\.generation\.max-examples = .*/stateful.generation.max-examples = $stateful/}" \
        -e "${examples:+s/^generation\.max-examples = .*/generation.max-examples = $examples/}" \
        "$config" >"$effective"
    if [[ -n "$stateful" ]] && ! grep -q '^stateful\.generation\.max-examples' "$effective"; then
        sed -i "s/^stateful\.enabled = true/&\nstateful.generation.max-examples = $stateful/" "$effective"
    fi
    rm -f "$tally" "$links"
    echo "schemathesis: $name ($document against $url, seed $seed, ${examples:-configured} examples, ${stateful:-configured} stateful scenarios, $passes stateful passes)"
    ST_TALLY=$tally ST_LINKS=$links "$venv/bin/st" --config-file "$effective" run "$document" --url "$url" \
        --seed "$seed" --workers 1 \
        --generation-database none --no-color \
        --report junit --report-dir "$reports" --report-junit-path "$reports/$name.xml" \
        "$@" || status=1
    # More passes of the stateful phase alone, each with the next seed: Hypothesis ends a pass
    # on its own once a replayed scenario meets the API in another state.
    local pass
    for ((pass = 1; pass < passes; pass++)); do
        echo "schemathesis: $name, stateful pass $((pass + 1)) of $passes (seed $((seed + pass)))"
        ST_TALLY=$tally ST_LINKS=$links "$venv/bin/st" --config-file "$effective" run "$document" --url "$url" \
            --seed "$((seed + pass))" --workers 1 --phases stateful \
            --generation-database none --no-color \
            --report junit --report-dir "$reports" --report-junit-path "$reports/$name.stateful-$((pass + 1)).xml" \
            "$@" || status=1
    done
    "$venv/bin/python" .ci/schemathesis/tally.py "$name" "$tally" "$document" "$config" "$links" || status=1
    echo "schemathesis: $name took $((SECONDS - started)) s"
}

# The hooks give the platform's requests real ids and fill what no schema can state (see
# .ci/schemathesis/hooks.py); the key service's put keys it wrapped in its decrypt requests.
export PYTHONPATH=.ci/schemathesis
SCHEMATHESIS_HOOKS=hooks ST_FIXTURES=.ci/schemathesis/fixtures.toml \
    PLATFORM_URL=$platform PLATFORM_API_KEY=$api_key PLATFORM_FAULTS_KEY=$faults_key \
    run platform .ci/schemathesis/platform.toml contracts/openapi/platform.json "$platform"
SCHEMATHESIS_HOOKS=byok_hooks KMS_URL="http://$kms" KMS_ADMIN_TOKEN=$kms_admin_token \
    run byok .ci/schemathesis/byok.toml contracts/openapi/byok.json "http://$kms"

exit "$status"
