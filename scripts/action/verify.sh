#!/usr/bin/env bash
# The verify action: judge the client from the stack's request journal (`harness verify`),
# write JUnit and JSON, a Markdown summary of the job (GITHUB_STEP_SUMMARY), and stop the
# stack so that it writes its own report at exit (copied to REPORT_DIR/at-exit).
#
# Inputs (environment): HARNESS_URL, HARNESS_API_KEY (set by the start step),
# INPUT_MIN_COVERAGE (percent, default 0), INPUT_ALLOW_VIOLATIONS (true: violations only
# warn), INPUT_REPORT_DIR (default harness-report), INPUT_STOP (true, the default: stop the
# stack afterwards; HARNESS_PID), HARNESS (the executable, default: harness on PATH).
#
# Outputs: verdict (passed or failed), junit, json (the files), and the exit status of
# `harness verify`: 0 kept the contract, 1 broke it or covered too little, 2 could not judge.
set -euo pipefail

harness=${HARNESS:-harness}
: "${HARNESS_URL:?the start step sets HARNESS_URL; run it first}"
dir=${INPUT_REPORT_DIR:-harness-report}
mkdir -p "$dir"
junit="$dir/junit.xml"
json="$dir/report.json"
text="$dir/report.txt"

args=(verify --url "$HARNESS_URL" --junit "$junit" --json "$json"
    --min-coverage "${INPUT_MIN_COVERAGE:-0}")
[[ "${INPUT_ALLOW_VIOLATIONS:-false}" == "true" ]] && args+=(--allow-violations)

status=0
"$harness" "${args[@]}" | tee "$text" || status=${PIPESTATUS[0]}

verdict=passed
[[ $status -ne 0 ]] && verdict=failed
if [[ -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
    {
        echo "### Contract verdict on the client: $verdict"
        echo
        if [[ -s "$json" ]]; then
            jq -r '"\(.summary.passed) passed, \(.summary.failures) failed, \(.summary.warnings) warnings, \(.summary.skipped) skipped"' "$json"
            echo
            failures=$(jq -r '.checks[] | select(.result == "fail") | "| `\(.id)` | \(.severity) | \((.evidence.cause // .expected // .description) | gsub("\\|"; "\\|") | gsub("\n"; " ")) |"' "$json")
            if [[ -n "$failures" ]]; then
                echo "| Check | Severity | Cause |"
                echo "|---|---|---|"
                echo "$failures"
                echo
            fi
            jq -r '.notes[]? | "- \(.)"' "$json"
            echo
        fi
        echo "<details><summary>harness verify</summary>"
        echo
        echo '```text'
        cat "$text"
        echo '```'
        echo
        echo "</details>"
    } >>"$GITHUB_STEP_SUMMARY"
fi
if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
    {
        echo "verdict=$verdict"
        echo "junit=$junit"
        echo "json=$json"
    } >>"$GITHUB_OUTPUT"
fi

if [[ "${INPUT_STOP:-true}" == "true" && -n "${HARNESS_PID:-}" ]]; then
    # SIGTERM: the stack finishes requests in flight and writes its report at exit.
    kill -TERM "$HARNESS_PID" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$HARNESS_PID" 2>/dev/null || break; sleep 0.1; done
    if [[ -n "${HARNESS_REPORT_DIR:-}" && -d "$HARNESS_REPORT_DIR" ]]; then
        cp -r "$HARNESS_REPORT_DIR" "$dir/at-exit"
    fi
fi
exit "$status"
