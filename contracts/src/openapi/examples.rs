//! Example bodies of the requests, shown in the documents and sent by a fuzzer's examples
//! phase. They fit the walkthrough of the README: a platform on a simulated clock started at
//! `2026-03-02T08:00:00Z` (the campaign starts an hour later).

use serde_json::{Value, json};

/// `(component, example)` pairs.
fn examples() -> Vec<(&'static str, Value)> {
    let connection = json!({"connection_id": "conn-1", "phone_numbers": ["+14155550100"]});
    let window = json!({
        "start_time": "09:00", "end_time": "17:00",
        "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
        "timezone": "America/New_York",
    });
    vec![
        (
            "OutboundRequest",
            json!({
                "app_config": {
                    "app_id": "app-1", "app_version": 1, "app_type": "agent",
                    "connection_config": {"connection_id": "conn-1", "agent_phone_number": "+14155550100"},
                    "agent_variables": {"first_name": "Ada"},
                },
                "user_config": {"user_phone_number": "+919876543210"},
                "webhook_config": {"url": "https://hooks.example.com/calls", "metadata": {"ticket": "T-1"}},
            }),
        ),
        (
            "CampaignCreateRequest",
            json!({
                "name": "March renewals",
                "description": "Renewal reminders",
                "start_timestamp": "2026-03-02T09:00:00Z",
                "end_timestamp": "2026-03-31T17:00:00Z",
                "allowed_schedule": {
                    "timezone": "UTC",
                    "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
                    "allowed_start_time": "09:00", "allowed_end_time": "17:00",
                },
                "app_config": {
                    "app_id": "app-1", "app_version": 1, "attempts_per_second": 1,
                    "connection_configs": [{"connection_id": "conn-1", "phone_numbers": ["+14155550100"], "weight": 3}],
                    "retry_config": {"max_retries": 2, "retry_on": ["busy", "no_answer", "short_duration"], "threshold_seconds": 10},
                },
            }),
        ),
        (
            "CampaignPatchRequest",
            json!({"description": null, "app_config": {"attempts_per_second": 2}}),
        ),
        ("CampaignStatusRequest", json!({"action": "pause"})),
        (
            "CohortStreamRequest",
            json!({
                "name": "Walk-ins", "country_code": "IN",
                "users": [{"phone_number": "98765 43210", "user_identifier": "u1", "app_variables": {"first_name": "Ada"}}],
            }),
        ),
        (
            "DeploymentCreateRequest",
            json!({
                "name": "Front desk", "app_id": "app-1", "app_version": 1,
                "connection_configs": [connection], "description": "Answers the front desk line",
                "inbound_config": window,
            }),
        ),
        (
            "DeploymentPatchRequest",
            json!({"app_version": 2, "inbound_config": null}),
        ),
        ("DeploymentStatusRequest", json!({"action": "pause"})),
        ("ClockAdvanceRequest", json!({"seconds": 3600})),
        ("ClockSetRequest", json!({"now": "2026-03-02T10:00:00Z"})),
        (
            "InboundCallRequest",
            json!({"caller": "+919876543210", "dialled": "+14155550100"}),
        ),
    ]
}

/// Sets `examples` on the request components.
pub(super) fn platform(doc: &mut Value) {
    for (schema, example) in examples() {
        let target = doc
            .pointer_mut(&format!("/components/schemas/{schema}"))
            .unwrap_or_else(|| panic!("no component {schema}"));
        target["examples"] = json!([example]);
    }
}
