//! What a scenario creates through the platform's API: campaigns, cohorts (inline CSV, a CSV
//! file beside the scenario, or generated from a number pattern) and deployments.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::time::At;

/// A campaign, created at the scenario's start with `POST .../campaigns`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CampaignDef {
    /// The scenario's name for it: steps, cohorts and expectations refer to it by this.
    pub(crate) key: String,
    /// Its `start_timestamp`.
    pub(crate) start: At,
    /// Its `end_timestamp`.
    pub(crate) end: At,
    /// Send its webhooks to the runner's receiver, which checks every signature (sets
    /// `app_config.webhook_config.url`; default false).
    #[serde(default)]
    pub(crate) webhooks: bool,
    /// The rest of the create request, as the API takes it: `name`, `allowed_schedule`,
    /// `app_config` (`app_id`, `app_version`, `attempts_per_second`, `connection_configs`,
    /// `retry_config`, ...). `start_timestamp` and `end_timestamp` come from `start` and
    /// `end`.
    #[schemars(with = "BTreeMap<String, Value>")]
    pub(crate) request: Value,
}

/// A deployment, created at the scenario's start with `POST .../deployments`. Its inbound-call
/// events go to the runner's receiver.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeploymentDef {
    /// The scenario's name for it.
    pub(crate) key: String,
    /// The create request, as the API takes it: `name`, `app_id`, `app_version`,
    /// `connection_configs`, `inbound_config`, ...
    #[schemars(with = "BTreeMap<String, Value>")]
    pub(crate) request: Value,
}

/// A cohort of users, uploaded as a multipart CSV to a campaign or a deployment.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CohortDef {
    /// The scenario's name for it.
    pub(crate) key: String,
    /// The campaign it goes to (by key); or `deployment`.
    #[serde(default)]
    pub(crate) campaign: Option<String>,
    /// The deployment it goes to (by key); or `campaign`.
    #[serde(default)]
    pub(crate) deployment: Option<String>,
    /// Its `name` on upload (default: the key).
    #[serde(default)]
    pub(crate) name: Option<String>,
    /// `cohort` (default) or `stop_file`.
    #[serde(default)]
    pub(crate) category: Option<String>,
    /// When it is uploaded (default: at the start, unless an `upload_cohort` step uploads
    /// it).
    #[serde(default)]
    pub(crate) upload_at: Option<At>,
    /// The CSV, inline (header row first).
    #[serde(default)]
    pub(crate) csv: Option<String>,
    /// A CSV file, relative to the scenario file.
    #[serde(default)]
    pub(crate) file: Option<String>,
    /// Generated users.
    #[serde(default)]
    pub(crate) generate: Option<Generate>,
    /// The transformation config (the `cohort_transformation_file`), as the API takes it.
    /// Default: columns `phone_number`, `user_identifier`, and every other column as an
    /// agent variable.
    #[serde(default)]
    #[schemars(with = "Option<BTreeMap<String, Value>>")]
    pub(crate) transformation: Option<Value>,
}

/// Users generated from a number pattern: `count` users numbered from `first`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Generate {
    /// How many users (1 to 10,000,000).
    pub(crate) count: u64,
    /// Their numbers: the `#` signs are replaced by the user's index, zero-padded to their
    /// count (`"+1312555####"` gives `+13125550000`, `+13125550001`, ...).
    pub(crate) numbers: String,
    /// The first index (default 0).
    #[serde(default)]
    pub(crate) first: u64,
    /// Their `user_identifier`, `{i}` replaced by the index (default `"user-{i}"`).
    #[serde(default)]
    pub(crate) identifier: Option<String>,
    /// Agent variables of every user, `{i}` replaced by the index.
    #[serde(default)]
    pub(crate) variables: BTreeMap<String, String>,
}

impl Generate {
    /// The width of the number pattern's index (its `#` signs, which must be one run).
    pub(crate) fn width(&self) -> Result<usize, String> {
        let hashes = self.numbers.matches('#').count();
        if hashes == 0 {
            return Err(format!(
                "the number pattern {:?} has no '#': mark where the index goes, such as \"+1312555####\"",
                self.numbers
            ));
        }
        if !self.numbers.contains(&"#".repeat(hashes)) {
            return Err(format!(
                "the number pattern {:?} has '#' signs in more than one place: write them as one run",
                self.numbers
            ));
        }
        if self.count == 0 || self.count > 10_000_000 {
            return Err(format!(
                "count is {}: generate 1 to 10,000,000 users",
                self.count
            ));
        }
        let last = self.first.saturating_add(self.count - 1);
        let digits = last.to_string().len();
        if digits > hashes {
            return Err(format!(
                "the last index, {last}, has {digits} digits but the pattern {:?} has room for {hashes}",
                self.numbers
            ));
        }
        Ok(hashes)
    }

    /// The number pattern split around its run of `#` signs ([`Generate::width`] checks it),
    /// to fill in user after user.
    pub(crate) fn number_pattern(&self) -> Result<NumberPattern<'_>, String> {
        let width = self.width()?;
        // `width` checked that the signs are one run: it begins at the first.
        let at = self.numbers.find('#').unwrap_or(0);
        Ok(NumberPattern {
            before: &self.numbers[..at],
            width,
            after: &self.numbers[at + width..],
        })
    }

    /// The index of the user with `number`, if one of the users has it.
    pub(crate) fn index_of(&self, number: &str) -> Option<u64> {
        let p = self.number_pattern().ok()?;
        let digits = number
            .strip_prefix(p.before)?
            .strip_suffix(p.after)
            .filter(|d| d.len() == p.width && d.bytes().all(|b| b.is_ascii_digit()))?;
        let i: u64 = digits.parse().ok()?;
        (i >= self.first && i - self.first < self.count).then_some(i)
    }
}

/// A number pattern ([`Generate::number_pattern`]): the text around the run of `#` signs and
/// its width.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NumberPattern<'a> {
    before: &'a str,
    width: usize,
    after: &'a str,
}

impl NumberPattern<'_> {
    /// Appends the `i`-th number (`i` from `first`): the `#` signs replaced by `i`,
    /// zero-padded to their count.
    pub(crate) fn push(&self, i: u64, out: &mut String) {
        use std::fmt::Write as _;
        out.push_str(self.before);
        let _ = write!(out, "{i:0width$}", width = self.width);
        out.push_str(self.after);
    }

    /// The `i`-th number (`i` from `first`).
    pub(crate) fn number(&self, i: u64) -> String {
        let mut out = String::with_capacity(self.before.len() + self.width + self.after.len());
        self.push(i, &mut out);
        out
    }
}

/// The campaign's create body: its `request` with the timestamps and, with `webhooks`, the
/// webhook URL filled in.
pub(crate) fn campaign_body(c: &CampaignDef, start: DateTime<Utc>, webhook_url: &str) -> Value {
    let mut body = c.request.clone();
    if let Some(o) = body.as_object_mut() {
        o.insert(
            "start_timestamp".into(),
            contracts::clock::format_instant(c.start.resolve(start)).into(),
        );
        o.insert(
            "end_timestamp".into(),
            contracts::clock::format_instant(c.end.resolve(start)).into(),
        );
        if c.webhooks
            && let Some(app) = o.get_mut("app_config").and_then(Value::as_object_mut)
        {
            let metadata = app
                .get("webhook_config")
                .and_then(|w| w.get("metadata"))
                .cloned()
                .unwrap_or_else(|| serde_json::json!({}));
            app.insert(
                "webhook_config".into(),
                serde_json::json!({"url": webhook_url, "metadata": metadata}),
            );
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_fill_the_hashes_with_the_index() {
        let g = Generate {
            count: 100,
            numbers: "+1312555##00".into(),
            first: 0,
            identifier: None,
            variables: BTreeMap::new(),
        };
        assert_eq!(g.number_pattern().unwrap().number(7), "+13125550700");
        let too_many = Generate {
            count: 101,
            ..g.clone()
        };
        assert!(too_many.width().unwrap_err().contains("room for 2"));
        let split = Generate {
            numbers: "+1#2#".into(),
            ..g
        };
        assert!(split.width().unwrap_err().contains("one run"));
    }

    #[test]
    fn a_number_is_found_by_its_index_in_range() {
        let g = Generate {
            count: 10,
            numbers: "+1312555##00".into(),
            first: 5,
            identifier: None,
            variables: BTreeMap::new(),
        };
        assert_eq!(g.index_of("+13125550700"), Some(7));
        assert_eq!(g.index_of("+13125551400"), Some(14));
        assert_eq!(g.index_of("+13125550400"), None, "below first");
        assert_eq!(g.index_of("+13125551500"), None, "past the count");
        assert_eq!(g.index_of("+13125550701"), None, "another suffix");
        assert_eq!(g.index_of("+1312555070"), None, "too short");
    }
}
