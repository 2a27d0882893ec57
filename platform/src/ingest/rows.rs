//! The row rules, in one place for uploads and streams: what makes a row of an uploaded CSV,
//! or a user of a JSON stream, a user of the cohort, or the reason it is rejected.
//!
//! - [`Columns::resolve`]: where the transformation's columns are in the header; a column it
//!   names that the header lacks fails the whole upload.
//! - [`Columns::check`]: one CSV row: as many fields as the header; the phone number not
//!   empty and normalised to E.164 with the region; every `required` column not empty. Every
//!   reason is reported, joined with `; `.
//! - [`stream_user`]: one streamed user: its number normalised to E.164 with the region.
//! - Both leave empty optional values out of the user (only white space counts as empty): no
//!   variable, no override, a null identifier.
//! - [`Admission`]: the rule across rows (a number repeating an accepted row of the same
//!   cohort is rejected, the first one wins), then the user sealed for its row.
//!
//! Everything here but [`Admission`] is a pure function of the row.

use contracts::domain::phone::{self, E164};
use contracts::model::Transformation;
use contracts::wire::{AppOverrides, CohortStreamUser, JsonObject};
use csv::StringRecord;
use serde::Serialize;
use serde::ser::SerializeMap;

use super::dedup::SeenNumbers;
use crate::keys::WorkspaceKeys;
use crate::store::cohorts::{AdmittedUsers, PhoneEntry};

/// Whether a value counts as empty: only white space.
pub(crate) fn is_blank(s: &str) -> bool {
    s.trim().is_empty()
}

/// The value unless it is empty.
fn non_blank(s: Option<&str>) -> Option<&str> {
    s.filter(|v| !is_blank(v))
}

/// An accepted user, borrowing its values from its row: the JSON sealed in
/// `cohort_users.data` (the stored form of
/// [`CohortUser`](crate::store::cohorts::CohortUser)). Duplicates are checked
/// next, by [`Admission`].
#[derive(Debug, Serialize)]
pub(crate) struct User<'r, V: Serialize> {
    /// The number, E.164.
    pub(crate) phone_number: E164,
    /// The identifier, when the row has one.
    pub(crate) user_identifier: Option<&'r str>,
    /// The agent variables: [`StrPairs`] from CSV columns, [`JsonVariables`] from a stream.
    pub(crate) app_variables: V,
    /// The agent overrides, left out when there are none (read back as none).
    #[serde(skip_serializing_if = "Overrides::is_none")]
    pub(crate) app_overrides: Overrides<'r>,
}

/// A user's agent overrides, borrowed from its row, the empty ones left out: the one
/// overrides type of ingest, serialised as the stored form ([`contracts::wire::AppOverrides`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Overrides<'a> {
    /// The agent's first message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) initial_bot_message: Option<&'a str>,
    /// The agent's starting state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) initial_state_name: Option<&'a str>,
    /// The agent's starting language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) initial_language_name: Option<&'a str>,
}

impl<'a> Overrides<'a> {
    /// Whether no override is set.
    pub(crate) fn is_none(&self) -> bool {
        *self == Overrides::default()
    }

    /// A streamed user's overrides.
    pub(crate) fn of_stream(o: Option<&'a AppOverrides>) -> Self {
        Overrides {
            initial_bot_message: o.and_then(|o| non_blank(o.initial_bot_message.as_deref())),
            initial_state_name: o.and_then(|o| non_blank(o.initial_state_name.as_deref())),
            initial_language_name: o.and_then(|o| non_blank(o.initial_language_name.as_deref())),
        }
    }

    /// Sets one override from a column, unless the value is empty.
    fn set(&mut self, which: Override, value: &'a str) {
        if is_blank(value) {
            return;
        }
        let slot = match which {
            Override::BotMessage => &mut self.initial_bot_message,
            Override::StateName => &mut self.initial_state_name,
            Override::LanguageName => &mut self.initial_language_name,
        };
        *slot = Some(value);
    }
}

/// Serialises `(name, value)` pairs as a JSON object without building a map: a CSV row's
/// variables.
#[derive(Debug)]
pub(crate) struct StrPairs<'a>(pub Vec<(&'a str, &'a str)>);

impl Serialize for StrPairs<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// A streamed user's variables: any JSON object, `{}` when absent.
#[derive(Debug)]
pub(crate) struct JsonVariables<'a>(pub Option<&'a JsonObject>);

impl Serialize for JsonVariables<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(m) => m.serialize(s),
            None => s.serialize_map(Some(0))?.end(),
        }
    }
}

/// Where the transformation's columns are in the header.
#[derive(Debug)]
pub(crate) struct Columns {
    width: usize,
    phone: (usize, String),
    user_identifier: Option<Column>,
    variables: Vec<(String, Column)>,
    overrides: Vec<(Override, usize)>,
}

#[derive(Debug)]
struct Column {
    index: usize,
    name: String,
    required: bool,
}

#[derive(Debug, Clone, Copy)]
enum Override {
    BotMessage,
    StateName,
    LanguageName,
}

impl Columns {
    /// Finds every column the transformation names in the header (names trimmed, the first
    /// of repeated names winning); `Err` is the upload's `failure_reason` when any is
    /// missing.
    pub(crate) fn resolve(t: &Transformation, header: &StringRecord) -> Result<Columns, String> {
        let names: Vec<&str> = header.iter().map(|h| h.trim()).collect();
        let mut missing: Vec<String> = Vec::new();
        let mut find = |column: &str, role: &str| -> usize {
            match names.iter().position(|n| *n == column) {
                Some(i) => i,
                None => {
                    missing.push(format!("'{column}' ({role})"));
                    usize::MAX
                }
            }
        };
        let phone = find(&t.phone_column, "phone_number");
        let user_identifier = t.user_identifier.as_ref().map(|u| Column {
            index: find(&u.column, "user_identifier"),
            name: u.column.clone(),
            required: u.required,
        });
        let variables: Vec<(String, Column)> = t
            .app_variables
            .iter()
            .map(|(var, rule)| {
                (
                    var.clone(),
                    Column {
                        index: find(&rule.column, &format!("app_variables.{var}")),
                        name: rule.column.clone(),
                        required: rule.required,
                    },
                )
            })
            .collect();
        let overrides: Vec<(Override, usize)> = t
            .app_overrides
            .iter()
            .map(|(key, column)| {
                let o = match key.as_str() {
                    "initial_bot_message" => Override::BotMessage,
                    "initial_state_name" => Override::StateName,
                    _ => Override::LanguageName,
                };
                (o, find(column, &format!("app_overrides.{key}")))
            })
            .collect();
        if !missing.is_empty() {
            // The header's own names are not quoted: the reason is stored unencrypted, and in
            // a file without a header row the "header" is a user's data.
            let (noun, list) = match missing.split_last() {
                Some((last, [])) => ("column", last.clone()),
                Some((last, rest)) => ("columns", format!("{} and {last}", rest.join(", "))),
                None => unreachable!("missing is not empty"),
            };
            return Err(format!(
                "the header row ({} {}) lacks the {noun} {list} named by the transformation file; the first row of the file must name its columns, spelled exactly as in the transformation file",
                names.len(),
                if names.len() == 1 {
                    "column"
                } else {
                    "columns"
                }
            ));
        }
        Ok(Columns {
            width: header.len(),
            phone: (phone, t.phone_column.clone()),
            user_identifier,
            variables,
            overrides,
        })
    }

    /// The checks of one row: the user's values, or every reason to reject it.
    pub(crate) fn check<'r>(
        &'r self,
        row: &'r StringRecord,
        region: Option<&str>,
    ) -> Result<User<'r, StrPairs<'r>>, String> {
        if row.len() != self.width {
            return Err(format!(
                "the row has {} fields but the header has {}",
                row.len(),
                self.width
            ));
        }
        let mut reasons: Vec<String> = Vec::new();
        let raw_phone = &row[self.phone.0];
        let phone = if is_blank(raw_phone) {
            reasons.push(format!(
                "the phone number is empty (column '{}')",
                self.phone.1
            ));
            None
        } else {
            match phone::normalize(raw_phone, region) {
                Ok(p) => Some(p),
                Err(e) => {
                    reasons.push(e.to_string());
                    None
                }
            }
        };
        let mut user_identifier = None;
        if let Some(u) = &self.user_identifier {
            let v = &row[u.index];
            if is_blank(v) {
                if u.required {
                    reasons.push(format!(
                        "the required column '{}' (user_identifier) is empty",
                        u.name
                    ));
                }
            } else {
                user_identifier = Some(v);
            }
        }
        let mut variables = Vec::with_capacity(self.variables.len());
        for (var, col) in &self.variables {
            let v = &row[col.index];
            if is_blank(v) {
                if col.required {
                    reasons.push(format!(
                        "the required column '{}' (app_variables.{var}) is empty",
                        col.name
                    ));
                }
            } else {
                variables.push((var.as_str(), v));
            }
        }
        let mut overrides = Overrides::default();
        for (o, index) in &self.overrides {
            overrides.set(*o, &row[*index]);
        }
        match phone {
            Some(phone) if reasons.is_empty() => Ok(User {
                phone_number: phone,
                user_identifier,
                app_variables: StrPairs(variables),
                app_overrides: overrides,
            }),
            _ => Err(reasons.join("; ")),
        }
    }
}

/// The checks of one streamed user: the user's values, or the reason to reject it.
pub(crate) fn stream_user<'u>(
    u: &'u CohortStreamUser,
    region: Option<&str>,
) -> Result<User<'u, JsonVariables<'u>>, String> {
    let phone = phone::normalize(&u.phone_number, region).map_err(|e| e.to_string())?;
    Ok(User {
        phone_number: phone,
        user_identifier: non_blank(u.user_identifier.as_deref()),
        app_variables: JsonVariables(u.app_variables.as_ref()),
        app_overrides: Overrides::of_stream(u.app_overrides.as_ref()),
    })
}

/// The rejection reason of a number that repeats accepted row `first`.
pub(crate) fn duplicate_reason(phone: &E164, first: u64) -> String {
    format!(
        "duplicate phone number: {} is already in data row {first}",
        phone.as_str()
    )
}

/// The `failure_reason` for override keys outside the three.
pub fn unknown_overrides_reason(keys: &[String]) -> String {
    let quoted: Vec<String> = keys.iter().map(|k| format!("'{k}'")).collect();
    format!(
        "app_overrides of the transformation file has {} {}; the allowed keys are 'initial_bot_message', 'initial_state_name' and 'initial_language_name'",
        if keys.len() == 1 {
            "a key that is not an override:"
        } else {
            "keys that are not overrides:"
        },
        quoted.join(", ")
    )
}

/// The rule across the rows of one cohort: a user whose number repeats an accepted row is
/// rejected (the first one wins); an admitted user's JSON is added to the batch being built,
/// to be sealed for its row ([`AdmittedUsers::seal_into`]) before it is stored.
pub(crate) struct Admission<'a> {
    keys: &'a WorkspaceKeys,
    seen: SeenNumbers,
}

impl<'a> Admission<'a> {
    /// Admission to a cohort whose numbers are hashed with `keys`.
    pub(crate) fn new(keys: &'a WorkspaceKeys) -> Self {
        Admission {
            keys,
            seen: SeenNumbers::new(),
        }
    }

    /// Admits the user of row `row_no` onto `batch` (the batch being built, in row order),
    /// or answers the reason it is a duplicate.
    pub(crate) fn admit<V: Serialize>(
        &mut self,
        row_no: u64,
        user: &User<'_, V>,
        batch: &mut AdmittedUsers,
    ) -> Result<(), String> {
        let hash = self.keys.lookup_hash(user.phone_number.as_str());
        if let Some(first) = self.seen.first_row(&hash) {
            return Err(duplicate_reason(&user.phone_number, first));
        }
        self.seen.insert(&hash, row_no);
        batch.push(row_no, hash, |out| {
            serde_json::to_writer(out, user).expect("user JSON serialises")
        });
        Ok(())
    }

    /// The lookup entries of the admitted users, in row order (for
    /// [`index_phones`](crate::store::cohorts::index_phones)).
    pub(crate) fn into_phones(self) -> Vec<PhoneEntry> {
        self.seen.into_entries()
    }
}

#[cfg(test)]
mod tests;
