# The client's tests (busybox sh and wget), then the verdict on what the client sent.
# HARNESS_URL and HARNESS_API_KEY come from the Compose file; BREAK_THE_CONTRACT=1 sends a
# misspelled field, to see the verdict fail.
set -eu
bb=/bin/busybox
base="$HARNESS_URL/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments"
field=description
[ -n "${BREAK_THE_CONTRACT:-}" ] && field=desciption

echo "client: create a deployment"
created=$($bb wget -q -O - --header "X-API-Key: $HARNESS_API_KEY" \
    --header 'Content-Type: application/json' \
    --post-data "{\"name\": \"Front desk\", \"app_id\": \"receptionist\", \"app_version\": 1, \"$field\": \"compose example\", \"connection_configs\": [{\"connection_id\": \"main\", \"phone_numbers\": [\"+14155550100\"]}]}" \
    "$base")
id=$(echo "$created" | $bb sed -n 's/.*"deployment_id":"\([^"]*\)".*/\1/p')
[ -n "$id" ] || { echo "client: no deployment_id in the answer"; exit 1; }

echo "client: list and read it"
$bb wget -q -O /dev/null --header "X-API-Key: $HARNESS_API_KEY" "$base?limit=10"
$bb wget -q -O /dev/null --header "X-API-Key: $HARNESS_API_KEY" "$base/$id"

echo "client: the verdict"
exec harness verify --url "$HARNESS_URL"
