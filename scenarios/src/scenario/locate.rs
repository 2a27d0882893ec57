//! Where a value is written in a scenario file, by its path (`campaigns`, 0, `request`,
//! `app_config`, `attempts_per_sec`), so that a refusal found inside a table the types keep
//! as plain JSON (a campaign's `request`, a step's `patch`) points at the field's own line;
//! and the near name of a misspelt field.

use std::ops::Range;

use contracts::error::LocItem;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// One step of a path into the file: a key of a table, or an index of an array.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    /// A table's key.
    Key(String),
    /// An array's index.
    Index(usize),
}

impl From<&str> for Seg {
    fn from(k: &str) -> Seg {
        Seg::Key(k.to_string())
    }
}

impl From<usize> for Seg {
    fn from(i: usize) -> Seg {
        Seg::Index(i)
    }
}

/// The file's tree of spanned values (empty when the text does not parse: the parse error is
/// reported by itself).
pub(crate) struct Tree<'a> {
    root: Option<Spanned<DeTable<'a>>>,
}

impl<'a> Tree<'a> {
    /// The tree of `text`.
    pub(crate) fn parse(text: &'a str) -> Tree<'a> {
        Tree {
            root: DeTable::parse(text).ok(),
        }
    }

    /// Where `path` is written: a table's key for a last step that names one (the line of
    /// `attempts_per_sec = 5`), an array's item for an index; when the path goes where
    /// nothing is written (a missing field), the deepest table or item on the way. `None`
    /// only for an empty path or a text that did not parse.
    pub(crate) fn span(&self, path: &[Seg]) -> Option<Range<usize>> {
        let root = self.root.as_ref()?;
        let mut table: &DeTable<'a> = root.get_ref();
        let mut here: Option<Range<usize>> = None;
        let mut value: Option<&DeValue<'a>> = None;
        for seg in path {
            match (seg, value) {
                (Seg::Key(k), None) | (Seg::Key(k), Some(DeValue::Table(_))) => {
                    if let Some(DeValue::Table(t)) = value {
                        table = t;
                    }
                    let Some((key, v)) = table.iter().find(|(key, _)| key.get_ref() == k) else {
                        return here;
                    };
                    here = Some(key.span());
                    value = Some(v.get_ref());
                }
                (Seg::Index(i), Some(DeValue::Array(items))) => {
                    let Some(item) = items.get(*i) else {
                        return here;
                    };
                    here = Some(item.span());
                    value = Some(item.get_ref());
                }
                _ => return here,
            }
        }
        here
    }
}

/// The candidate nearest to `word` when it is near enough to be what was meant: one starts
/// with the other, or they differ by a few edits (about a third of the word).
pub(crate) fn near<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    let w = word.to_ascii_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let lc = c.to_ascii_lowercase();
        if lc == w {
            return Some(c);
        }
        let d = if w.len() >= 3 && (lc.starts_with(&w) || w.starts_with(&lc))
            || w.len() >= 4 && (lc.contains(&w) || w.contains(&lc))
        {
            1
        } else {
            contracts::spelling::distance(&w, &lc)
        };
        if d <= (w.len() / 3).max(2) && best.is_none_or(|(b, _)| d < b) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// Where a request sits in the file: the path of its entry (`campaigns`, 0), the field that
/// holds the body (`request`, `patch`), and the entry's span for what cannot be placed.
pub(super) struct ApiPlace {
    entry: Vec<Seg>,
    pub(super) field: &'static str,
    pub(super) fallback: Range<usize>,
}

impl ApiPlace {
    pub(super) fn new(field: &'static str, entry: &[Seg], fallback: &Range<usize>) -> ApiPlace {
        ApiPlace {
            entry: entry.to_vec(),
            field,
            fallback: fallback.clone(),
        }
    }

    /// The file path of a failure's `loc` (after `body`). A campaign's timestamps are not
    /// in its `request`: they are its `start` and `end`.
    pub(super) fn path(&self, loc: &[LocItem]) -> Vec<Seg> {
        let mut path = self.entry.clone();
        match loc.first() {
            Some(LocItem::Key(k)) if self.field == "request" && k == "start_timestamp" => {
                path.push("start".into())
            }
            Some(LocItem::Key(k)) if self.field == "request" && k == "end_timestamp" => {
                path.push("end".into())
            }
            _ => {
                path.push(self.field.into());
                path.extend(loc.iter().map(seg));
            }
        }
        path
    }
}

/// A `loc` item as a path step.
pub(super) fn seg(l: &LocItem) -> Seg {
    match l {
        LocItem::Key(k) => Seg::Key(k.clone()),
        LocItem::Index(n) => Seg::Index(*n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::located::line_col;

    const TEXT: &str = "start = \"x\"\n\n[[campaigns]]\nkey = \"c\"\n\n[campaigns.request.app_config]\napp_id = \"a\"\nattempts_per_sec = 5\nretry_config = { max_retries = 1, retry_on = [\"busy\"] }\n";

    fn line(path: &[Seg]) -> Option<usize> {
        Tree::parse(TEXT)
            .span(path)
            .map(|s| line_col(TEXT, s.start).0)
    }

    #[test]
    fn a_path_finds_its_line() {
        let p = |segs: &[&str]| -> Vec<Seg> {
            let mut out = vec![Seg::from("campaigns"), Seg::from(0)];
            out.extend(segs.iter().map(|s| Seg::from(*s)));
            out
        };
        assert_eq!(
            line(&p(&["request", "app_config", "attempts_per_sec"])),
            Some(8)
        );
        assert_eq!(
            line(&p(&["request", "app_config", "retry_config", "retry_on"])),
            Some(9)
        );
        assert_eq!(
            line(&p(&[
                "request",
                "app_config",
                "retry_config",
                "retry_on",
                "0"
            ])),
            Some(9),
            "a key where an index is: the deepest place found"
        );
        // A missing field: the table it is missing from.
        assert_eq!(line(&p(&["request", "app_config", "app_version"])), Some(6));
        assert_eq!(line(&[Seg::from("start")]), Some(1));
        assert_eq!(Tree::parse("a = [").span(&[Seg::from("a")]), None);
    }

    #[test]
    fn a_misspelt_name_finds_the_one_meant() {
        let known = [
            "attempts_per_second",
            "app_id",
            "app_version",
            "retry_config",
        ];
        assert_eq!(near("attempts_per_sec", known), Some("attempts_per_second"));
        assert_eq!(near("app_verison", known), Some("app_version"));
        assert_eq!(near("APP_ID", known), Some("app_id"));
        assert_eq!(near("colour", known), None);
        assert_eq!(near("ned", ["key", "start", "end"]), Some("end"));
        assert_eq!(
            near("UNAVAILABLE", ["OK", "SERVICE_UNAVAILABLE"]),
            Some("SERVICE_UNAVAILABLE")
        );
        assert_eq!(contracts::spelling::distance("kitten", "sitting"), 3);
        assert_eq!(contracts::spelling::distance("ned", "end"), 1);
    }
}
