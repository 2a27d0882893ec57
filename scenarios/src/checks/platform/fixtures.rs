//! What the checks create: recognisable names, fiction phone numbers, valid request bodies,
//! and the record of everything created so that it is removed at the end.
//!
//! Every name starts `harness-check-` and carries the run's token, so that a user can tell
//! what a run created (and find anything a crashed run left: deployments to delete,
//! campaigns to cancel). Phone numbers are North American fiction numbers `+1 NXX 555-xxxx`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::exchange::FormPart;

/// The prefix of every name a run creates.
pub const NAME_PREFIX: &str = "harness-check-";

/// Every day of the week, Monday first, as the contract spells them.
pub(crate) fn all_days() -> Vec<&'static str> {
    use chrono::Weekday::*;
    [Mon, Tue, Wed, Thu, Fri, Sat, Sun]
        .into_iter()
        .map(contracts::domain::schedule::weekday_name)
        .collect()
}

/// Names and numbers of one run.
#[derive(Debug)]
pub(crate) struct Names {
    run: String,
    area: u32,
    next: AtomicU32,
}

impl Names {
    /// Names of the run `token` (a few hex digits), numbers in an area code drawn from it.
    pub(crate) fn new(token: u32) -> Names {
        Names {
            run: format!("{:06x}", token & 0xff_ffff),
            // Area codes 200 to 999.
            area: 200 + token % 800,
            next: AtomicU32::new(0),
        }
    }

    /// The run's token, part of every name.
    pub(crate) fn run(&self) -> &str {
        &self.run
    }

    /// `harness-check-{run}-{label}`, at most 50 characters.
    pub(crate) fn name(&self, label: &str) -> String {
        let mut n = format!("{NAME_PREFIX}{}-{label}", self.run);
        n.truncate(50);
        n
    }

    /// A phone number no other call of this run returns (for agents and deployments).
    pub(crate) fn number(&self) -> String {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let area = 200 + (self.area - 200 + i / 8000) % 800;
        format!("+1{area}555{:04}", 2000 + i % 8000)
    }
}

/// A user number of the simulated telephony whose behaviour `yy` decides (`00` connected
/// 90 s, `01` always busy, `02` always no answer, `04` a 5 s call, `08` connected 30 s), in
/// area code `200 + i` so that users of one cohort differ.
pub(crate) fn magic_number(yy: u8, i: u32) -> String {
    format!("+1{}55501{yy:02}", 200 + i % 800)
}

/// An instant as the contract writes it: RFC 3339, UTC, milliseconds.
pub(crate) fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// An instant written at an offset of `east_secs` seconds east of UTC: RFC 3339,
/// milliseconds, `+05:30`.
pub(crate) fn ts_at_offset(t: DateTime<Utc>, east_secs: i32) -> String {
    let zone = chrono::FixedOffset::east_opt(east_secs).expect("an offset within a day");
    t.with_timezone(&zone)
        .to_rfc3339_opts(SecondsFormat::Millis, false)
}

/// Whole seconds as a duration.
pub(crate) fn secs(s: i64) -> Duration {
    Duration::seconds(s)
}

/// What created resources are made of: the agent and connection to use.
#[derive(Clone, Debug)]
pub struct Agent {
    /// `app_id` of created campaigns and deployments.
    pub(crate) app_id: String,
    /// `app_version` of created campaigns and deployments.
    pub(crate) app_version: i64,
    /// `connection_id` of their connection configs.
    pub(crate) connection_id: String,
}

/// A valid campaign create body: open every day 00:00 to 23:59 UTC, 1 dial a second.
pub(crate) fn campaign(
    agent: &Agent,
    name: &str,
    agent_number: &str,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Value {
    json!({
        "name": name,
        "description": "Created by harness check platform; cancelled by it when done.",
        "start_timestamp": ts(start),
        "end_timestamp": ts(end),
        "allowed_schedule": {
            "timezone": "UTC",
            "allowed_days": all_days(),
            "allowed_start_time": "00:00",
            "allowed_end_time": "23:59"
        },
        "app_config": {
            "app_id": agent.app_id,
            "app_version": agent.app_version,
            "app_type": "agent",
            "attempts_per_second": 1,
            "connection_configs": [
                {"connection_id": agent.connection_id, "phone_numbers": [agent_number], "weight": 1}
            ],
            "retry_config": {
                "max_retries": 1,
                "retry_on": ["busy", "no_answer", "short_duration"],
                "threshold_seconds": 10
            }
        }
    })
}

/// A valid deployment create body without a schedule (calls answered at all times).
pub(crate) fn deployment(agent: &Agent, name: &str, numbers: &[String]) -> Value {
    json!({
        "name": name,
        "app_id": agent.app_id,
        "app_version": agent.app_version,
        "connection_configs": [
            {"connection_id": agent.connection_id, "phone_numbers": numbers}
        ],
        "description": "Created by harness check platform; deleted by it when done."
    })
}

/// A valid instant outbound call to `user_number`.
pub(crate) fn outbound(agent: &Agent, agent_number: &str, user_number: &str) -> Value {
    json!({
        "app_config": {
            "app_id": agent.app_id,
            "app_version": agent.app_version,
            "app_type": "agent",
            "connection_config": {
                "connection_id": agent.connection_id,
                "agent_phone_number": agent_number
            },
            "agent_variables": {"source": "harness check platform"}
        },
        "user_config": {"user_phone_number": user_number}
    })
}

/// The rows of the cohort CSV: three valid users and two whose numbers are no telephone
/// numbers (`99` second, `12345` last: [`COHORT_CSV_REJECTED_ROWS`]), which are rejected.
pub(crate) const COHORT_CSV: &str = "phone,id,first_name\n\
+12025550102,u1,Ada\n\
99,u5,Edsger\n\
(303) 555-0102,u2,Grace\n\
404-555-0102,u3,Alan\n\
12345,u4,Barbara\n";

/// The rejected rows of [`COHORT_CSV`], in file order: the number and the user id of each.
pub(crate) const COHORT_CSV_REJECTED_ROWS: [(&str, &str); 2] = [("99", "u5"), ("12345", "u4")];
/// The number of rows of [`COHORT_CSV`] that are rejected.
pub(crate) const COHORT_CSV_REJECTED: u64 = COHORT_CSV_REJECTED_ROWS.len() as u64;
/// The number of rows of [`COHORT_CSV`].
pub(crate) const COHORT_CSV_ROWS: u64 = 5;

/// The transformation config of [`COHORT_CSV`]; `phone_column` names its phone column.
pub(crate) fn transformation(phone_column: &str) -> Value {
    json!({
        "phone_number": {"column_name": phone_column, "country_code": "US"},
        "user_identifier": {"column_name": "id", "required": true},
        "app_variables": {"first_name": {"column_name": "first_name", "required": false}}
    })
}

/// A multipart cohort upload of [`COHORT_CSV`] named `name`, its config naming
/// `phone_column` as the phone column.
pub(crate) fn cohort_upload(name: &str, phone_column: &str) -> Vec<FormPart> {
    cohort_form(name, COHORT_CSV, &transformation(phone_column).to_string())
}

/// The multipart form of a cohort upload of `csv` with the transformation `config`, named
/// `name`, each file sent as given.
pub(crate) fn cohort_form(name: &str, csv: &str, config: &str) -> Vec<FormPart> {
    vec![
        FormPart::text("name", name),
        FormPart::file(
            "cohort_file",
            "users.csv",
            "text/csv",
            csv.as_bytes().to_vec(),
        ),
        FormPart::file(
            "cohort_transformation_file",
            "transformation.json",
            "application/json",
            config.as_bytes().to_vec(),
        ),
    ]
}

/// A JSON cohort of `users` (`(phone_number, user_identifier)`).
pub(crate) fn cohort_stream(name: &str, users: &[(String, String)]) -> Value {
    let users: Vec<Value> = users
        .iter()
        .map(|(phone, id)| json!({"phone_number": phone, "user_identifier": id}))
        .collect();
    json!({"name": name, "users": users})
}

/// Which of the two workspaces: the one under check, or the other one (`--other-workspace`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    /// `--workspace`.
    Main,
    /// `--other-workspace`.
    Other,
}

/// A resource a run created, to remove at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Created {
    /// Cancelled at the end (campaigns cannot be deleted).
    Campaign(Side, String),
    /// Deleted at the end.
    Deployment(Side, String),
}

/// Everything a run created and has not removed yet.
#[derive(Debug, Default)]
pub(crate) struct Ledger(Mutex<Vec<Created>>);

impl Ledger {
    /// Records a resource.
    pub(crate) fn add(&self, c: Created) {
        let mut v = self.0.lock().expect("not poisoned");
        if !v.contains(&c) {
            v.push(c);
        }
    }

    /// Forgets a resource (it was removed by a check).
    pub(crate) fn remove(&self, c: &Created) {
        self.0.lock().expect("not poisoned").retain(|x| x != c);
    }

    /// Takes everything recorded.
    pub(crate) fn take(&self) -> Vec<Created> {
        std::mem::take(&mut *self.0.lock().expect("not poisoned"))
    }
}

/// A kind of resource a check creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// `POST .../campaigns`.
    Campaign,
    /// `POST .../deployments`.
    Deployment,
    /// `POST .../cohorts/upload` or `.../cohorts/stream`.
    Cohort,
    /// `POST .../outbounds` (no name: one call).
    OutboundCall,
}

impl Kind {
    /// The kind's name, plural when `n` is not 1.
    pub(crate) fn noun(self, n: u32) -> &'static str {
        match (self, n == 1) {
            (Kind::Campaign, true) => "campaign",
            (Kind::Campaign, false) => "campaigns",
            (Kind::Deployment, true) => "deployment",
            (Kind::Deployment, false) => "deployments",
            (Kind::Cohort, true) => "cohort",
            (Kind::Cohort, false) => "cohorts",
            (Kind::OutboundCall, true) => "instant outbound call",
            (Kind::OutboundCall, false) => "instant outbound calls",
        }
    }
}

/// Resources a check creates on a conforming target: `count` of `kind` in the workspace
/// `side`, named `harness-check-{run}-{label}` (numbered `-1`, `-2`, ... or padded where the
/// check needs a length). `--dry-run` lists them; a test holds the list to what a run
/// creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Makes {
    /// What.
    pub kind: Kind,
    /// Where.
    pub side: Side,
    /// The part of the name after `harness-check-{run}-` (for an outbound call, which has no
    /// name, what tells it from another's).
    pub label: &'static str,
    /// How many.
    pub count: u32,
}

impl Makes {
    /// `count` of `kind` named after `label` in the workspace under check.
    pub(crate) const fn new(kind: Kind, label: &'static str, count: u32) -> Makes {
        Makes {
            kind,
            side: Side::Main,
            label,
            count,
        }
    }

    /// The same in the other workspace.
    pub(crate) const fn in_other(self) -> Makes {
        Makes {
            side: Side::Other,
            ..self
        }
    }

    /// `3 deployments harness-check-{run}-page-*`.
    pub(crate) fn describe(&self, run: &str) -> String {
        let what = self.kind.noun(self.count);
        if self.kind == Kind::OutboundCall {
            return format!("{} {what}", self.count);
        }
        let name = format!("{NAME_PREFIX}{run}-{}", self.label);
        if self.count == 1 {
            format!("1 {what} {name}")
        } else {
            format!("{} {what} {name}*", self.count)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_recognisable_and_valid() {
        let n = Names::new(0xabcdef12);
        assert_eq!(n.run(), "cdef12");
        assert_eq!(n.name("x"), "harness-check-cdef12-x");
        let long = n.name(&"y".repeat(60));
        assert_eq!(long.chars().count(), 50);
        let a = n.number();
        let b = n.number();
        assert_ne!(a, b);
        assert!(a.starts_with("+1") && a.len() == 12, "{a}");
        assert_eq!(magic_number(1, 3), "+12035550101");
    }
}
