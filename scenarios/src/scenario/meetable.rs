//! Expectations that cannot be met, or cannot fail, by construction, refused when the file
//! is checked: `attempts_per_user` of a number in no cohort of the campaign, a
//! `key_service_calls` outcome the key service never logs, a `weight_split` or
//! `numbers_used_equally` naming a connection the campaign does not have, an `inbound`
//! rejection the platform never gives (or one given for a call expected answered). Each at
//! the field's line, with the values that exist.

use std::collections::BTreeSet;

use contracts::domain::phone::normalize;
use contracts::error::ByokErrorCode;
use serde_json::Value;

use super::check::Checker;
use super::expect::{Expect, Expectation};
use super::locate::{Seg, near};
use super::located::Located;
use super::model::Scenario;
use super::setup::CohortDef;
use super::timeline::Action;

/// The rejections of an inbound call the platform gives.
pub(crate) const REJECTIONS: [&str; 4] = [
    "deployment_paused",
    "outside_schedule",
    "no_deployment",
    "key_service_unavailable",
];

/// The outcomes the key service's log records: `OK`, an error code, `NO_RESPONSE`.
pub(crate) fn key_service_outcomes() -> Vec<&'static str> {
    let mut out = vec![
        customer_kms_sim::audit::OK,
        customer_kms_sim::audit::NO_RESPONSE,
    ];
    out.extend(ByokErrorCode::ALL.iter().map(|c| c.as_str()));
    out
}

/// `"a", "b"`.
fn listed<'s>(items: impl IntoIterator<Item = &'s str>) -> String {
    items
        .into_iter()
        .map(|k| format!("{k:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `; did you mean "x"?` when a known value is near.
fn hint<'s>(word: &str, known: impl IntoIterator<Item = &'s str>) -> String {
    near(word, known).map_or(String::new(), |m| format!("; did you mean {m:?}?"))
}

impl Checker<'_> {
    /// Refuses expectation `i` when what it asks cannot be met, or cannot fail, by
    /// construction.
    pub(super) fn meetable(&mut self, i: usize, e: &Located<Expectation>, s: &Scenario) {
        let field = |name: &str| -> Vec<Seg> { vec!["expect".into(), i.into(), name.into()] };
        match &e.check {
            Expect::AttemptsPerUser {
                campaign,
                number: Some(number),
                ..
            } => {
                let place = self.place(&field("number"), &e.span);
                let Ok(n) = normalize(number, None) else {
                    self.at(
                        &place,
                        format!(
                            "number {number:?} is not an E.164 number: write it as the platform dials it, such as \"+13125550100\""
                        ),
                    );
                    return;
                };
                let cohorts: Vec<&Located<CohortDef>> = s
                    .cohorts
                    .iter()
                    .filter(|c| c.campaign.as_deref() == Some(campaign.as_str()))
                    .filter(|c| c.category.as_deref() != Some("stop_file"))
                    .collect();
                let holds = |c: &&Located<CohortDef>| self.cohort_holds(c, n.as_str());
                if cohorts.iter().any(holds) {
                    return;
                }
                let example = cohorts
                    .iter()
                    .find_map(|c| self.first_number(c))
                    .map_or(String::new(), |x| format!(" (such as {x:?})"));
                self.at(
                    &place,
                    format!(
                        "number {number:?} is in no cohort of campaign {campaign:?}: it is never dialled, so its attempts are 0 by construction; give a number of the campaign's cohorts{example}"
                    ),
                );
            }
            Expect::KeyServiceCalls {
                outcome: Some(o), ..
            } => {
                let known = key_service_outcomes();
                if !known.contains(&o.as_str()) {
                    let place = self.place(&field("outcome"), &e.span);
                    self.at(
                        &place,
                        format!(
                            "outcome {o:?} is not one the key service logs ({}), so no call ever has it{}",
                            listed(known.iter().copied()),
                            hint(o, known.iter().copied())
                        ),
                    );
                }
            }
            Expect::WeightSplit {
                campaign, shares, ..
            } => {
                let known = connection_ids(s, campaign);
                for conn in shares.keys() {
                    if !known.contains(conn) {
                        let mut path = field("shares");
                        path.push(conn.as_str().into());
                        let place = self.place(&path, &e.span);
                        self.unknown_connection(&place, conn, campaign, &known);
                    }
                }
            }
            Expect::NumbersUsedEqually {
                campaign,
                connection: Some(conn),
                ..
            } => {
                let known = connection_ids(s, campaign);
                if !known.contains(conn) {
                    let place = self.place(&field("connection"), &e.span);
                    self.unknown_connection(&place, conn, campaign, &known);
                }
            }
            Expect::Inbound {
                answered,
                rejection: Some(r),
                ..
            } => {
                let place = self.place(&field("rejection"), &e.span);
                if !REJECTIONS.contains(&r.as_str()) {
                    self.at(
                        &place,
                        format!(
                            "rejection {r:?} is not one the platform gives ({}){}",
                            listed(REJECTIONS),
                            hint(r, REJECTIONS)
                        ),
                    );
                } else if *answered {
                    self.at(
                        &place,
                        format!(
                            "a call expected answered has no rejection: give answered = false with rejection = {r:?}, or leave rejection out"
                        ),
                    );
                }
            }
            _ => {}
        }
    }

    fn unknown_connection(
        &mut self,
        place: &std::ops::Range<usize>,
        conn: &str,
        campaign: &str,
        known: &BTreeSet<String>,
    ) {
        self.at(
            place,
            format!(
                "connection {conn:?} is not a connection of campaign {campaign:?} (its connections: {}), so it has no dial by construction{}",
                listed(known.iter().map(String::as_str)),
                hint(conn, known.iter().map(String::as_str))
            ),
        );
    }

    /// Whether the cohort's users include `number` (E.164): a generated one by its pattern
    /// and range, a CSV one by its phone column read as the platform reads it.
    fn cohort_holds(&self, c: &CohortDef, number: &str) -> bool {
        if let Some(g) = &c.generate {
            return g.index_of(number).is_some();
        }
        self.csv_numbers(c).iter().any(|n| n == number)
    }

    /// The cohort's first number, for messages.
    fn first_number(&self, c: &CohortDef) -> Option<String> {
        match &c.generate {
            Some(g) => g.number_pattern().ok().map(|p| p.number(g.first)),
            None => self.csv_numbers(c).into_iter().next(),
        }
    }

    /// The numbers of a CSV cohort (inline or a file), normalised as the platform does with
    /// the transformation's phone column and country; rows it would reject are left out.
    fn csv_numbers(&self, c: &CohortDef) -> Vec<String> {
        let Ok((csv, transformation)) = crate::runner::cohorts::build(c, self.dir) else {
            return vec![];
        };
        let column = transformation["phone_number"]["column_name"].as_str();
        let country = transformation["phone_number"]["country_code"].as_str();
        let mut r = csv::ReaderBuilder::new().from_reader(csv.as_slice());
        let Some(at) = r
            .headers()
            .ok()
            .and_then(|h| h.iter().position(|x| Some(x) == column))
        else {
            return vec![];
        };
        r.records()
            .filter_map(Result::ok)
            .filter_map(|row| row.get(at).and_then(|raw| normalize(raw, country).ok()))
            .map(|n| n.into_string())
            .collect()
    }
}

/// The `connection_id`s a campaign has at any time: its request's and those its patches
/// bring.
pub(crate) fn connection_ids(s: &Scenario, campaign: &str) -> BTreeSet<String> {
    let of = |app: &Value| -> Vec<String> {
        app["connection_configs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["connection_id"].as_str().map(str::to_string))
            .collect()
    };
    let mut out = BTreeSet::new();
    for c in s.campaigns.iter().filter(|c| c.key == campaign) {
        out.extend(of(&c.request["app_config"]));
    }
    for st in &s.timeline {
        if let Action::PatchCampaign {
            campaign: k, patch, ..
        } = &st.action
            && k == campaign
        {
            out.extend(of(&patch["app_config"]));
        }
    }
    out
}
