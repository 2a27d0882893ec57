//! The platform API's own validation of the requests inside a scenario file (a campaign's or
//! deployment's `request`, a step's `patch`): each failure at the line of the field it is
//! about, a misspelt field with the field meant (`attempts_per_sec`: did you mean
//! `attempts_per_second`?).

use contracts::error::{LocItem, ValidationErrors};

use super::check::Checker;
use super::locate::{ApiPlace, near};

impl Checker<'_> {
    /// Every failure of `e` as a problem at its field: "`what`: the API would refuse
    /// request.app_config.attempts_per_sec: ... (extra_forbidden); did you mean
    /// `attempts_per_second`?". A field reported missing because it was misspelt is said
    /// once, at the misspelling.
    pub(super) fn api_errors(&mut self, at: &ApiPlace, what: &str, e: &ValidationErrors) {
        let mut meant: Vec<(Vec<LocItem>, String)> = vec![];
        for d in e.details() {
            if d.error_type != "extra_forbidden" {
                continue;
            }
            if let Some((LocItem::Key(k), parent)) = d.loc.split_last()
                && let Some(known) = e.known_fields_at(parent)
                && let Some(m) = near(k, known.iter().map(String::as_str))
            {
                meant.push((d.loc.clone(), m.to_string()));
            }
        }
        for d in e.details() {
            let loc = &d.loc[1.min(d.loc.len())..];
            let said_at_misspelling = d.error_type == "missing"
                && meant.iter().any(|(l, m)| {
                    l.len() == d.loc.len()
                        && l[..l.len() - 1] == d.loc[..d.loc.len() - 1]
                        && d.loc.last() == Some(&LocItem::Key(m.clone()))
                });
            if said_at_misspelling {
                continue;
            }
            let dotted: Vec<String> = loc
                .iter()
                .map(|i| match i {
                    LocItem::Key(k) => k.clone(),
                    LocItem::Index(n) => n.to_string(),
                })
                .collect();
            let hint = meant
                .iter()
                .find(|(l, _)| *l == d.loc)
                .map_or(String::new(), |(_, m)| format!("; did you mean `{m}`?"));
            let span = self.place(&at.path(loc), &at.fallback);
            self.at(
                &span,
                format!(
                    "{what}: the API would refuse {}.{}: {} ({}){hint}",
                    at.field,
                    dotted.join("."),
                    d.msg,
                    d.error_type
                ),
            );
        }
    }
}
