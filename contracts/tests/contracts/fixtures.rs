//! The request bodies and the instant the contract tests start from.

use chrono::{DateTime, Duration, Utc};
use contracts::clock::{Clock, SimClock, format_instant};
use serde_json::{Value, json};

/// The instant validation runs at (a Monday).
pub const NOW: &str = "2026-03-02T12:00:00Z";

/// [`NOW`].
pub fn now() -> DateTime<Utc> {
    SimClock::at(NOW).now()
}

/// [`NOW`] moved by `offset`, as RFC 3339.
pub fn ts(offset: Duration) -> String {
    format_instant(now() + offset)
}

/// A valid campaign create body.
pub fn campaign() -> Value {
    json!({
        "name": "Spring outreach",
        "description": "Reminder calls",
        "start_timestamp": ts(Duration::hours(1)),
        "end_timestamp": ts(Duration::days(3)),
        "allowed_schedule": {
            "timezone": "America/New_York",
            "allowed_days": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"],
            "allowed_start_time": "09:00",
            "allowed_end_time": "17:00"
        },
        "app_config": {
            "app_id": "app-1",
            "app_version": 3,
            "app_type": "agent",
            "attempts_per_second": 2,
            "connection_configs": [
                {"connection_id": "conn-a", "phone_numbers": ["+14155550100"], "weight": 3},
                {"connection_id": "conn-b", "phone_numbers": ["+14155550101", "+14155550102"], "weight": 1}
            ],
            "retry_config": {"max_retries": 2, "retry_on": ["busy", "short_duration"], "threshold_seconds": 10},
            "webhook_config": {"url": "https://hooks.example.com/calls", "metadata": {"team": "a"}}
        }
    })
}

/// A valid deployment create body.
pub fn deployment() -> Value {
    json!({
        "name": "Front desk",
        "app_id": "app-1",
        "app_version": 1,
        "connection_configs": [{"connection_id": "conn-a", "phone_numbers": ["+14155550100"]}],
        "description": null,
        "inbound_config": {"start_time": "09:00", "end_time": "17:00", "allowed_days": ["Monday"], "timezone": "Asia/Kolkata"}
    })
}
