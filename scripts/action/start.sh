#!/usr/bin/env bash
# The action's second step: start the whole stack (`harness up`) in the background, wait
# until it serves, and hand its connection details to the job's later steps.
#
# Inputs (environment): INPUT_WORKSPACE (ORG/WORKSPACE, default org-1/ws-1), INPUT_CLOCK
# (simulated or real, default simulated), INPUT_SIM_START (RFC 3339), INPUT_SEED,
# INPUT_FIXTURES (a fixtures file), INPUT_PORT_BASE (default 8080; 0 for free ports),
# INPUT_API_KEY (default: a generated key), HARNESS (the executable, default: harness on
# PATH), RUNNER_TEMP (where the ready file, the log and the report at exit go).
#
# Outputs (GITHUB_OUTPUT), also exported to later steps (GITHUB_ENV) as HARNESS_*:
#   url (HARNESS_URL), api-key (HARNESS_API_KEY), org-id, workspace-id, webhook-secret,
#   openapi-url, kms-url, byok-base-url, kms-partner, kms-client-id, kms-client-secret,
#   kms-key-alias, kms-admin-url, kms-admin-token, ready-file, report-dir, log-file, pid.
# Secrets are masked in the job's log (::add-mask::).
set -euo pipefail

harness=${HARNESS:-harness}
work="${RUNNER_TEMP:-$(mktemp -d)}/voice-harness"
mkdir -p "$work"
ready="$work/stack.json"
log="$work/up.log"
report="$work/report"
rm -f "$ready"

args=(up --json --ready-file "$ready" --report-on-exit "$report"
    --port-base "${INPUT_PORT_BASE:-8080}"
    --workspace "${INPUT_WORKSPACE:-org-1/ws-1}"
    --clock "${INPUT_CLOCK:-simulated}")
[[ -n "${INPUT_SIM_START:-}" ]] && args+=(--sim-start "$INPUT_SIM_START")
[[ -n "${INPUT_SEED:-}" ]] && args+=(--seed "$INPUT_SEED")
[[ -n "${INPUT_FIXTURES:-}" ]] && args+=(--fixtures "$INPUT_FIXTURES")
[[ -n "${INPUT_API_KEY:-}" ]] && args+=(--api-key "$INPUT_API_KEY")

# Detached from this step: the stack outlives it, until the job ends (or the verify step
# stops it).
nohup "$harness" "${args[@]}" >"$log" 2>&1 </dev/null &
pid=$!

# The ready file is written once both servers listen (and the fixtures exist).
for _ in $(seq 600); do
    [[ -s "$ready" ]] && break
    if ! kill -0 "$pid" 2>/dev/null; then
        echo "::error::harness up did not start:"
        cat "$log"
        exit 2
    fi
    sleep 0.1
done
if [[ ! -s "$ready" ]]; then
    echo "::error::harness up wrote no ready file within 60 s; its log:"
    cat "$log"
    kill "$pid" 2>/dev/null || true
    exit 2
fi

field() { jq -er "$1" "$ready"; }
declare -A out=(
    [url]=$(field .platform.url)
    [api-key]=$(field .platform.api_key)
    [org-id]=$(field .platform.org_id)
    [workspace-id]=$(field .platform.workspace_id)
    [webhook-secret]=$(field .platform.webhook_secret)
    [openapi-url]=$(field .platform.openapi_url)
    [kms-url]=$(field .key_service.url)
    [byok-base-url]=$(field .key_service.byok_base_url)
    [kms-partner]=$(field .key_service.partner)
    [kms-client-id]=$(field .key_service.client_id)
    [kms-client-secret]=$(field .key_service.client_secret)
    [kms-key-alias]=$(field .key_service.key_alias)
    [kms-admin-url]=$(field .key_service.admin_url)
    [kms-admin-token]=$(field .key_service.admin_token)
    [ready-file]=$ready
    [report-dir]=$report
    [log-file]=$log
    [pid]=$pid
)
for secret in api-key webhook-secret kms-client-secret kms-admin-token; do
    echo "::add-mask::${out[$secret]}"
done

names=(url api-key org-id workspace-id webhook-secret openapi-url kms-url byok-base-url
    kms-partner kms-client-id kms-client-secret kms-key-alias kms-admin-url kms-admin-token
    ready-file report-dir log-file pid)
for name in "${names[@]}"; do
    env_name="HARNESS_$(tr 'a-z-' 'A-Z_' <<<"$name")"
    [[ -n "${GITHUB_OUTPUT:-}" ]] && echo "$name=${out[$name]}" >>"$GITHUB_OUTPUT"
    [[ -n "${GITHUB_ENV:-}" ]] && echo "$env_name=${out[$name]}" >>"$GITHUB_ENV"
done
echo "harness up: platform ${out[url]} (workspace ${out[org-id]}/${out[workspace-id]}), key service ${out[byok-base-url]}, clock ${INPUT_CLOCK:-simulated}; log $log"
