//! The deployment list, served from memory.
//!
//! `GET .../deployments` is the hottest read of an inbound integration (dashboards poll it).
//! Each workspace's deployments are loaded from SQLite once, each item serialised once, and
//! kept with its three sort orders; a page is then a walk over one order. Every write to a
//! workspace's deployments drops its snapshot as soon as it commits (inside the write, so
//! a request dropped meanwhile cannot skip it), and a load that overlapped a write is not
//! kept, so a list never answers with less than a write already committed.
//!
//! Semantics match the SQL list exactly ([`crate::store::deployments::list`], which the
//! tests compare with): `search` is a substring of the name, the description or a number,
//! case-insensitive in ASCII (SQLite's `LIKE`); `name` sorts case-insensitively in ASCII
//! (`COLLATE NOCASE`); ties go by creation order in the same direction. A workspace with more
//! than [`MAX_CACHED`] deployments is not cached and is listed by SQL.
//!
//! A snapshot also keeps the latest answers it gave, serialised ([`Snapshot::answer`]): the
//! same request (the same `Host`, path and query) to an unchanged workspace is then answered
//! with the same bytes, shared, at the cost of a lookup. At most [`MAX_ANSWERS`] answers of at
//! most [`MAX_ANSWER_BYTES`] bytes in all are kept a workspace; they go with the snapshot at
//! the workspace's next write.

use std::cmp::Ordering;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use contracts::validate::ListParams;
use contracts::wire::{DeploymentListItem, DeploymentSortBy, SortOrder};
use serde_json::value::RawValue;

use crate::store::WorkspaceRef;
use crate::store::deployments::DeploymentRecord;

/// The largest workspace kept in memory.
pub(crate) const MAX_CACHED: usize = 10_000;

/// The most serialised answers a workspace's snapshot keeps.
pub(crate) const MAX_ANSWERS: usize = 16;

/// The most bytes of serialised answers a workspace's snapshot keeps.
pub(crate) const MAX_ANSWER_BYTES: usize = 512 * 1024;

/// Workspace snapshots, with a generation that every write bumps.
#[derive(Default)]
pub(crate) struct ListCache {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    generation: u64,
    workspaces: HashMap<WorkspaceRef, Arc<Snapshot>>,
    /// Workspaces known to hold more than [`MAX_CACHED`] deployments: listed by SQL
    /// without loading them first.
    too_big: std::collections::HashSet<WorkspaceRef>,
}

/// What [`ListCache::lookup`] found.
pub(crate) enum Lookup {
    /// The workspace is in memory.
    Hit(Arc<Snapshot>),
    /// The workspace is too large to keep: list it by SQL.
    TooBig,
    /// It is not: load it, then offer it with [`ListCache::offer`] and this generation.
    Miss(u64),
}

impl ListCache {
    /// The snapshot of a workspace, or the generation to load one under.
    pub(crate) fn lookup(&self, ws: &WorkspaceRef) -> Lookup {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match state.workspaces.get(ws) {
            Some(s) => Lookup::Hit(s.clone()),
            None if state.too_big.contains(ws) => Lookup::TooBig,
            None => Lookup::Miss(state.generation),
        }
    }

    /// Keeps a snapshot loaded under `generation`, unless a write happened since (the load
    /// may then predate it; it serves only the request that made it).
    pub(crate) fn offer(&self, ws: &WorkspaceRef, generation: u64, snapshot: Arc<Snapshot>) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.generation == generation {
            state.workspaces.insert(ws.clone(), snapshot);
        }
    }

    /// Records that a workspace loaded under `generation` is too large to keep, unless a
    /// write happened since.
    pub(crate) fn offer_too_big(&self, ws: &WorkspaceRef, generation: u64) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.generation == generation {
            state.too_big.insert(ws.clone());
        }
    }

    /// Drops what is known of a workspace. Called inside every write of its deployments,
    /// once it committed (so also when the request that made it is gone by then).
    pub(crate) fn invalidate(&self, ws: &WorkspaceRef) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.generation += 1;
        state.workspaces.remove(ws);
        state.too_big.remove(ws);
    }
}

/// A workspace's deployments, each serialised once, with the three ascending sort orders
/// (a descending order is the reverse: ties break by creation in the same direction).
pub(crate) struct Snapshot {
    entries: Vec<Entry>,
    by_created: Vec<u32>,
    by_updated: Vec<u32>,
    by_name: Vec<u32>,
    /// The latest answers given from this snapshot, newest last.
    answers: Mutex<Answers>,
}

/// What an answer of the list depends on besides the snapshot: the `Host` header (the page
/// links' base when no public URL is configured), the path as requested and the raw query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AnswerKey<'a> {
    /// The `Host` header as text, if any.
    pub host: Option<&'a str>,
    /// The path as requested.
    pub path: &'a str,
    /// The raw query string.
    pub query: &'a str,
}

#[derive(Default)]
struct Answers {
    kept: VecDeque<KeptAnswer>,
    bytes: usize,
}

struct KeptAnswer {
    host: Option<Box<str>>,
    path: Box<str>,
    query: Box<str>,
    bytes: Bytes,
}

impl AnswerKey<'_> {
    fn answered_by(&self, kept: &KeptAnswer) -> bool {
        *kept.path == *self.path && *kept.query == *self.query && kept.host.as_deref() == self.host
    }
}

struct Entry {
    /// Name, description and numbers, ASCII-lowercased, for `search`.
    name_lc: String,
    description_lc: Option<String>,
    numbers_lc: Vec<String>,
    json: Box<RawValue>,
}

impl Snapshot {
    /// Builds a snapshot from the workspace's deployments in creation order (as
    /// [`crate::store::deployments::all`] answers them).
    pub(crate) fn build(records: &[(i64, DeploymentRecord)]) -> Snapshot {
        let entries: Vec<Entry> = records
            .iter()
            .map(|(_, r)| {
                let item = DeploymentListItem {
                    deployment: r.to_wire(),
                    phone_numbers: r.phone_numbers(),
                };
                Entry {
                    name_lc: r.config.name.to_ascii_lowercase(),
                    description_lc: r.config.description.as_deref().map(str::to_ascii_lowercase),
                    numbers_lc: item
                        .phone_numbers
                        .iter()
                        .map(|n| n.to_ascii_lowercase())
                        .collect(),
                    json: serde_json::value::to_raw_value(&item)
                        .expect("a deployment list item serialises"),
                }
            })
            .collect();
        // Records come in creation (seq) order, so a stable sort by the key alone breaks
        // ties by creation.
        let order = |key: &dyn Fn(usize, usize) -> Ordering| {
            let mut idx: Vec<u32> = (0..entries.len() as u32).collect();
            idx.sort_by(|&a, &b| key(a as usize, b as usize));
            idx
        };
        let by_created = order(&|a, b| records[a].1.created_at.cmp(&records[b].1.created_at));
        let by_updated = order(&|a, b| records[a].1.updated_at.cmp(&records[b].1.updated_at));
        let by_name = order(&|a, b| entries[a].name_lc.cmp(&entries[b].name_lc));
        Snapshot {
            entries,
            by_created,
            by_updated,
            by_name,
            answers: Mutex::default(),
        }
    }

    /// The answer this snapshot gave to a request of `key`, if still kept.
    pub(crate) fn answer(&self, key: AnswerKey<'_>) -> Option<Bytes> {
        let answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        answers
            .kept
            .iter()
            .rev()
            .find(|kept| key.answered_by(kept))
            .map(|kept| kept.bytes.clone())
    }

    /// Keeps the answer to a request of `key`, dropping the oldest kept ones beyond
    /// [`MAX_ANSWERS`] and [`MAX_ANSWER_BYTES`]; an answer larger than that is not kept.
    pub(crate) fn keep_answer(&self, key: AnswerKey<'_>, answer: Bytes) {
        if answer.len() > MAX_ANSWER_BYTES {
            return;
        }
        let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        if answers.kept.iter().any(|kept| key.answered_by(kept)) {
            return;
        }
        while answers.kept.len() >= MAX_ANSWERS || answers.bytes + answer.len() > MAX_ANSWER_BYTES {
            let Some(old) = answers.kept.pop_front() else {
                break;
            };
            answers.bytes -= old.bytes.len();
        }
        answers.bytes += answer.len();
        answers.kept.push_back(KeptAnswer {
            host: key.host.map(Into::into),
            path: key.path.into(),
            query: key.query.into(),
            bytes: answer,
        });
    }

    /// One page and the total number of matches, in the order and filter of `p`.
    pub(crate) fn page(&self, p: &ListParams<DeploymentSortBy>) -> (Vec<&RawValue>, u64) {
        let order = match p.sort_by {
            DeploymentSortBy::CreatedAt => &self.by_created,
            DeploymentSortBy::UpdatedAt => &self.by_updated,
            DeploymentSortBy::Name => &self.by_name,
        };
        let offset = usize::try_from(p.offset).unwrap_or(usize::MAX);
        let limit = p.limit as usize;
        let ordered: Box<dyn Iterator<Item = &u32>> = match p.sort_order {
            SortOrder::Asc => Box::new(order.iter()),
            SortOrder::Desc => Box::new(order.iter().rev()),
        };
        match p.search.as_deref() {
            None => {
                let page = ordered
                    .skip(offset)
                    .take(limit)
                    .map(|&i| &*self.entries[i as usize].json)
                    .collect();
                (page, self.entries.len() as u64)
            }
            Some(s) => {
                let needle = s.to_ascii_lowercase();
                let mut total = 0u64;
                let mut page = Vec::with_capacity(limit.min(self.entries.len()));
                for &i in ordered {
                    let e = &self.entries[i as usize];
                    if e.matches(&needle) {
                        if total >= offset as u64 && page.len() < limit {
                            page.push(&*e.json);
                        }
                        total += 1;
                    }
                }
                (page, total)
            }
        }
    }
}

impl Entry {
    fn matches(&self, needle: &str) -> bool {
        self.name_lc.contains(needle)
            || self
                .description_lc
                .as_deref()
                .is_some_and(|d| d.contains(needle))
            || self.numbers_lc.iter().any(|n| n.contains(needle))
    }
}

#[cfg(test)]
mod tests {
    use chrono::{Duration, TimeZone, Utc};
    use contracts::validate::{Options, deployment_create, deployment_list_query};
    use contracts::wire::DeploymentStatus;
    use serde_json::{Value, json};

    use super::*;
    use crate::store::{Store, deployments};

    /// Names, descriptions and numbers that exercise ASCII case folding, non-ASCII
    /// letters, `LIKE` wildcards taken literally, missing descriptions and equal timestamps.
    fn fill(store: &Store, ws: &WorkspaceRef) {
        let names = [
            "Front desk",
            "front Desk",
            "ÉCOLE",
            "école",
            "off_line",
            "Zeta",
            "alpha",
            "ALPHA",
            "back-office",
            "Ünïcode",
        ];
        let base = Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0).unwrap();
        store
            .write_blocking(|c| {
                for i in 0..40usize {
                    let name = names[i % names.len()];
                    let mut body = json!({
                        "name": format!("{name} {}", i / names.len()),
                        "app_id": "app-1",
                        "app_version": 1,
                        "connection_configs": [{"connection_id": "c", "phone_numbers": [format!("+1415555{i:04}")]}],
                    });
                    if i % 3 != 0 {
                        body["description"] = Value::from(format!("Desk {} 10%_ \\ {name}", i % 4));
                    }
                    let spec = deployment_create(&body, Options::default()).unwrap();
                    // Four deployments share each creation time; updates reorder them.
                    let created = base + Duration::seconds((i / 4) as i64);
                    let updated = created + Duration::seconds(((i * 7) % 11) as i64);
                    let rec = DeploymentRecord {
                        id: format!("dep-{i:03}"),
                        ws: ws.clone(),
                        status: if i % 5 == 0 {
                            DeploymentStatus::Paused
                        } else {
                            DeploymentStatus::Active
                        },
                        config: spec.to_create_request(),
                        created_by: "alice".into(),
                        updated_by: None,
                        created_at: created,
                        updated_at: updated,
                    };
                    deployments::insert(c, &rec)?;
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn every_page_matches_the_sql_list() {
        let store = Store::in_memory().unwrap();
        let ws = WorkspaceRef::new("org", "ws");
        fill(&store, &ws);
        let records = store
            .read_blocking(|c| deployments::all(c, &ws, MAX_CACHED))
            .unwrap();
        assert_eq!(records.len(), 40);
        let snapshot = Snapshot::build(&records);
        let searches = [
            None,
            Some("desk"),
            Some("DESK"),
            Some("école"),
            Some("ÉCOLE"),
            Some("%"),
            Some("_"),
            Some("10%_"),
            Some("\\"),
            Some("+1415555001"),
            Some("nothing like it"),
        ];
        let mut compared = 0;
        for sort_by in ["created_at", "updated_at", "name"] {
            for sort_order in ["asc", "desc"] {
                for search in searches {
                    for (offset, limit) in [(0, 100), (0, 7), (5, 7), (35, 10), (60, 5)] {
                        let mut q = vec![
                            ("sort_by".to_string(), sort_by.to_string()),
                            ("sort_order".to_string(), sort_order.to_string()),
                            ("offset".to_string(), offset.to_string()),
                            ("limit".to_string(), limit.to_string()),
                        ];
                        if let Some(s) = search {
                            q.push(("search".to_string(), s.to_string()));
                        }
                        let p = deployment_list_query(&q).unwrap();
                        let (rows, total) = store
                            .read_blocking(|c| deployments::list(c, &ws, &p))
                            .unwrap();
                        let want: Vec<String> = rows
                            .iter()
                            .map(|r| {
                                serde_json::to_string(&DeploymentListItem {
                                    deployment: r.to_wire(),
                                    phone_numbers: r.phone_numbers(),
                                })
                                .unwrap()
                            })
                            .collect();
                        let (items, got_total) = snapshot.page(&p);
                        let got: Vec<String> = items.iter().map(|r| r.get().to_string()).collect();
                        assert_eq!(got_total, total, "{q:?}");
                        assert_eq!(got, want, "{q:?}");
                        compared += 1;
                    }
                }
            }
        }
        assert_eq!(compared, 3 * 2 * 11 * 5);
    }

    #[test]
    fn an_answer_is_kept_for_its_host_path_and_query_only_and_within_the_bounds() {
        let snapshot = Snapshot::build(&[]);
        let key = |host, query| AnswerKey {
            host,
            path: "/p",
            query,
        };
        let answer = |n: usize| Bytes::from(vec![b'x'; n]);
        assert_eq!(snapshot.answer(key(Some("a"), "limit=5")), None);
        snapshot.keep_answer(key(Some("a"), "limit=5"), answer(10));
        assert_eq!(snapshot.answer(key(Some("a"), "limit=5")), Some(answer(10)));
        for other in [
            key(Some("b"), "limit=5"),
            key(None, "limit=5"),
            key(Some("a"), "limit=6"),
            AnswerKey {
                path: "/q",
                ..key(Some("a"), "limit=5")
            },
        ] {
            assert_eq!(snapshot.answer(other), None, "{other:?}");
        }
        snapshot.keep_answer(key(None, "limit=5"), answer(11));
        assert_eq!(snapshot.answer(key(None, "limit=5")), Some(answer(11)));
        // The oldest go beyond the count, and beyond the bytes.
        let queries: Vec<String> = (0..MAX_ANSWERS).map(|i| format!("offset={i}")).collect();
        for q in &queries {
            snapshot.keep_answer(key(Some("c"), q), answer(1));
        }
        assert_eq!(snapshot.answer(key(Some("a"), "limit=5")), None);
        assert_eq!(snapshot.answer(key(None, "limit=5")), None);
        assert!(snapshot.answer(key(Some("c"), "offset=0")).is_some());
        snapshot.keep_answer(key(Some("d"), ""), answer(MAX_ANSWER_BYTES - 1));
        assert!(snapshot.answer(key(Some("c"), "offset=0")).is_none());
        assert!(snapshot.answer(key(Some("c"), "offset=14")).is_none());
        assert!(
            snapshot.answer(key(Some("c"), "offset=15")).is_some(),
            "exactly at the bytes"
        );
        assert!(snapshot.answer(key(Some("d"), "")).is_some());
        snapshot.keep_answer(key(Some("e"), ""), answer(MAX_ANSWER_BYTES + 1));
        assert!(snapshot.answer(key(Some("e"), "")).is_none(), "too large");
        assert!(snapshot.answer(key(Some("d"), "")).is_some());
    }

    #[test]
    fn a_write_drops_the_snapshot_and_a_load_that_overlapped_it_is_not_kept() {
        let cache = ListCache::default();
        let ws = WorkspaceRef::new("org", "ws");
        let other = WorkspaceRef::new("org", "other");
        let empty = || Arc::new(Snapshot::build(&[]));
        let Lookup::Miss(g) = cache.lookup(&ws) else {
            panic!("empty cache")
        };
        cache.offer(&ws, g, empty());
        assert!(matches!(cache.lookup(&ws), Lookup::Hit(_)));
        cache.invalidate(&ws);
        assert!(matches!(cache.lookup(&ws), Lookup::Miss(_)));
        // A load started before a write (of any workspace) finishes after it: not kept.
        let Lookup::Miss(g) = cache.lookup(&other) else {
            panic!("not loaded yet")
        };
        cache.invalidate(&ws);
        cache.offer(&other, g, empty());
        assert!(matches!(cache.lookup(&other), Lookup::Miss(_)));
        // A workspace too large to keep is remembered as such until its next write.
        let Lookup::Miss(g) = cache.lookup(&ws) else {
            panic!("dropped")
        };
        cache.offer_too_big(&ws, g);
        assert!(matches!(cache.lookup(&ws), Lookup::TooBig));
        cache.invalidate(&ws);
        assert!(matches!(cache.lookup(&ws), Lookup::Miss(_)));
        let Lookup::Miss(g) = cache.lookup(&ws) else {
            panic!("dropped")
        };
        cache.invalidate(&other);
        cache.offer_too_big(&ws, g);
        assert!(matches!(cache.lookup(&ws), Lookup::Miss(_)), "a stale load");
    }
}
