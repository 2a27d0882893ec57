#!/usr/bin/env bash
# Contract check of a client in CI: start the platform mock in the background, wait for its
# ready file, run the client's tests against it, then judge the client from the mock's
# request journal (`harness verify`). Reports land in $REPORT_DIR: contract.xml (JUnit, one
# test case per operation of the API), contract.json, and at-exit/ from the mock itself.
#
# Environment:
#   CLIENT_TESTS  the command that runs your client's tests; it gets PLATFORM_URL and
#                 PLATFORM_API_KEY (default: a small demo client made of curl calls)
#   FIXTURES      a fixture file to create campaigns, deployments and cohorts at start
#   MIN_COVERAGE  the least share of the API's operations to exercise, in percent (0)
#   REPORT_DIR    where the reports go (contract-reports)
#   PLATFORM, HARNESS  the two binaries (platform and harness, from PATH)
#
# Exit status: that of the client's tests when they fail, else that of `harness verify`
# (0 kept the contract, 1 broke it or covered too little, 2 could not judge).
set -euo pipefail

PLATFORM=${PLATFORM:-platform}
HARNESS=${HARNESS:-harness}
REPORT_DIR=${REPORT_DIR:-contract-reports}
MIN_COVERAGE=${MIN_COVERAGE:-0}
API_KEY="sk-ci-$RANDOM$RANDOM"
work=$(mktemp -d)
mkdir -p "$REPORT_DIR"

"$PLATFORM" serve --listen 127.0.0.1:0 --database "$work/platform.db" \
  --clock simulated --seed 1 --api-key "*/*=$API_KEY:ci" \
  ${FIXTURES:+--fixtures "$FIXTURES"} \
  --ready-file "$work/ready.json" --report-on-exit "$REPORT_DIR/at-exit" \
  >"$REPORT_DIR/platform.log" 2>&1 &
platform_pid=$!
trap 'kill "$platform_pid" 2>/dev/null || true; rm -rf "$work"' EXIT

for _ in $(seq 600); do
  [ -s "$work/ready.json" ] && break
  if ! kill -0 "$platform_pid" 2>/dev/null; then
    echo "the platform did not start:" >&2
    cat "$REPORT_DIR/platform.log" >&2
    exit 2
  fi
  sleep 0.1
done
[ -s "$work/ready.json" ] || { echo "no ready file after 60 s" >&2; exit 2; }
PLATFORM_URL=$(sed -n 's/^ *"url": *"\([^"]*\)".*/\1/p' "$work/ready.json")
PLATFORM_API_KEY=$API_KEY
export PLATFORM_URL PLATFORM_API_KEY

demo_client() {
  local d="$PLATFORM_URL/api/app-authoring/v1/orgs/acme/workspaces/prod/deployments"
  local id
  id=$(curl -fsS -X POST "$d" -H "X-API-Key: $PLATFORM_API_KEY" -H 'content-type: application/json' \
    -d '{"name": "Front desk", "app_id": "receptionist", "app_version": 1,
         "connection_configs": [{"connection_id": "main", "phone_numbers": ["+14155550100"]}]}' |
    sed -n 's/.*"deployment_id":"\([^"]*\)".*/\1/p')
  curl -fsS "$d?limit=10" -H "X-API-Key: $PLATFORM_API_KEY" >/dev/null
  curl -fsS "$d/$id" -H "X-API-Key: $PLATFORM_API_KEY" >/dev/null
  curl -fsS -X PUT "$d/$id/status" -H "X-API-Key: $PLATFORM_API_KEY" \
    -H 'content-type: application/json' -d '{"action": "pause"}' >/dev/null
}

status=0
if [ -n "${CLIENT_TESTS:-}" ]; then
  bash -c "$CLIENT_TESTS" || status=$?
else
  demo_client || status=$?
fi
verdict=0
"$HARNESS" verify --url "$PLATFORM_URL" --api-key "$API_KEY" --min-coverage "$MIN_COVERAGE" \
  --junit "$REPORT_DIR/contract.xml" --json "$REPORT_DIR/contract.json" || verdict=$?

kill -TERM "$platform_pid"
wait "$platform_pid" || true
if [ "$status" -ne 0 ]; then
  echo "the client's tests failed (exit $status)" >&2
  exit "$status"
fi
exit "$verdict"
