//! Who a request is: the configured API keys ([`KeyTable`], compared in constant time),
//! what a key may see of the journal and the fault rules ([`Scope`]), who may move the
//! simulated clock ([`ClockMover`]), and the caller of a workspace's route ([`Principal`]).
//! The checks of a request's `X-API-Key` against its path are in [`crate::api::auth`].
//!
//! Every request to the platform belongs to one workspace ([`KeyTable::owner`]): the one
//! its key opens when the key is valid, else the one its path names, else none.
//!
//! A request's key is compared with the configured keys once ([`KeyTable::matching`]): its
//! owner, the journal's verdict of its key and the route's check follow from the match.

use std::borrow::Cow;

use subtle::ConstantTimeEq;

use crate::config::ApiKeyConfig;
use crate::store::WorkspaceRef;

/// The configured API keys, checked in constant time.
#[derive(Debug, Clone)]
pub struct KeyTable {
    keys: Vec<ApiKeyConfig>,
    clock_admins: Vec<String>,
    journal_admins: Vec<String>,
}

/// What a key may see and clear of the journal and the fault rules, which hold every
/// workspace's requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// An operator's key (a clock admin key, a journal admin key, or a key that opens
    /// every org and workspace): everything, requests of no workspace included.
    Operator,
    /// A workspace's key: the workspaces of these patterns (`*` matches any), the
    /// patterns of the configured keys it is.
    Workspaces(Vec<WorkspaceRef>),
}

impl Scope {
    /// Whether a request (or a rule) of `owner` is in the scope; one of no workspace is an
    /// operator's only.
    pub(crate) fn sees(&self, owner: Option<&WorkspaceRef>) -> bool {
        match self {
            Scope::Operator => true,
            Scope::Workspaces(patterns) => {
                owner.is_some_and(|o| patterns.iter().any(|p| p.takes_in(o)))
            }
        }
    }
}

/// Who may move the simulated clock, as [`KeyTable::clock_mover`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockMover {
    /// A clock admin key, or any workspace's key when no clock admin key is configured.
    Allowed,
    /// A workspace's key, while clock admin keys are configured.
    NotAdmin,
    /// No key of this platform.
    Unknown,
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// The workspace of the path.
    pub ws: WorkspaceRef,
    /// The key's name (`created_by`, `updated_by`).
    pub name: String,
}

/// The configured keys a presented key is, as [`KeyTable::matching`] finds them: their
/// places in the table, in its order (never the key). Found once for a request, it answers
/// the request's owner, its key's verdict and its name, for the journal and the routes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyMatch {
    /// The first key it is.
    first: Option<u32>,
    /// The others (one key configured for several workspaces); empty for most keys, so
    /// that finding one allocates nothing.
    rest: Vec<u32>,
}

impl KeyTable {
    /// A table of these keys.
    pub fn new(keys: Vec<ApiKeyConfig>) -> Self {
        KeyTable {
            keys,
            clock_admins: Vec::new(),
            journal_admins: Vec::new(),
        }
    }

    /// The same table with these journal admin keys (see
    /// [`crate::config::PlatformConfig::journal_admin_keys`]).
    pub(crate) fn with_journal_admins(mut self, keys: Vec<String>) -> Self {
        self.journal_admins = keys;
        self
    }

    /// The configured keys `presented` is: every configured key is compared, in constant
    /// time each, and nothing else of the table compares a key. What the key opens, whom
    /// its request belongs to and its name follow from the answer ([`KeyTable::owner`],
    /// [`KeyTable::name_opening`], [`KeyTable::name_of`]) without comparing it again.
    /// No key (`None`) is none of them.
    pub fn matching(&self, presented: Option<&str>) -> KeyMatch {
        let mut found = KeyMatch::default();
        let Some(presented) = presented else {
            return found;
        };
        for (i, k) in self.keys.iter().enumerate() {
            if bool::from(k.key.as_bytes().ct_eq(presented.as_bytes())) {
                let i = u32::try_from(i).expect("fewer than 2^32 keys");
                match found.first {
                    None => found.first = Some(i),
                    Some(_) => found.rest.push(i),
                }
            }
        }
        found
    }

    /// The configured keys of `found`, in the table's order.
    fn keys_of<'t>(&'t self, found: &KeyMatch) -> impl Iterator<Item = &'t ApiKeyConfig> {
        found
            .first
            .into_iter()
            .chain(found.rest.iter().copied())
            .filter_map(|i| self.keys.get(i as usize))
    }

    /// What `presented` may see of the journal and the fault rules; `None` when it is no
    /// key of this platform. Every configured key is compared, in constant time each.
    pub(crate) fn scope(&self, presented: &str) -> Option<Scope> {
        let admin = self.is_clock_admin(presented) | one_of(&self.journal_admins, presented);
        let found = self.matching(Some(presented));
        let mut patterns = Vec::new();
        let mut all = false;
        for k in self.keys_of(&found) {
            all |= k.opens_all();
            patterns.push(k.pattern());
        }
        if admin || all {
            Some(Scope::Operator)
        } else if patterns.is_empty() {
            None
        } else {
            Some(Scope::Workspaces(patterns))
        }
    }

    /// The workspace a request belongs to, its key being `found` ([`KeyTable::matching`]):
    /// with a key of this platform, the workspace of `path` when the key opens it, else the
    /// key's own (its pattern, when it opens more than one), so that a request to another
    /// workspace's path, or to no path of the interface, counts against the caller; without
    /// one (no key, a wrong key), the workspace `path` names; else none.
    /// The path's workspace is answered borrowed (nothing is copied for the usual request).
    pub fn owner<'a>(
        &self,
        found: &KeyMatch,
        path: Option<&'a WorkspaceRef>,
    ) -> Option<Cow<'a, WorkspaceRef>> {
        let mut keys = self.keys_of(found);
        match (keys.next(), path) {
            (Some(k), Some(p)) if k.opens(p) || keys.any(|k| k.opens(p)) => Some(Cow::Borrowed(p)),
            (Some(k), _) => Some(Cow::Owned(k.pattern())),
            (None, p) => p.map(Cow::Borrowed),
        }
    }

    /// The name of the first key of `found` ([`KeyTable::matching`]) that opens `ws`.
    pub fn name_opening<'t>(&'t self, found: &KeyMatch, ws: &WorkspaceRef) -> Option<&'t str> {
        self.keys_of(found)
            .find(|k| k.opens(ws))
            .map(|k| k.name.as_str())
    }

    /// The name of the key `found` ([`KeyTable::matching`]) for a request to `path`: of
    /// the first that opens the workspace `path` names, or the first at all when `path`
    /// names none (the simulation API's instance-wide routes). The journal's verdict of a
    /// request's key.
    pub fn name_for<'t>(
        &'t self,
        found: &KeyMatch,
        path: Option<&WorkspaceRef>,
    ) -> Option<&'t str> {
        match path {
            Some(ws) => self.name_opening(found, ws),
            None => self.name_of(found),
        }
    }

    /// The name of the first key of `found` ([`KeyTable::matching`]), whatever it opens.
    pub fn name_of<'t>(&'t self, found: &KeyMatch) -> Option<&'t str> {
        self.keys_of(found).next().map(|k| k.name.as_str())
    }

    /// The same table with these clock admin keys (see
    /// [`crate::config::PlatformConfig::clock_admin_keys`]).
    pub(crate) fn with_clock_admins(mut self, keys: Vec<String>) -> Self {
        self.clock_admins = keys;
        self
    }

    /// Whether `presented` is a clock admin key (constant time per key).
    fn is_clock_admin(&self, presented: &str) -> bool {
        one_of(&self.clock_admins, presented)
    }

    /// Whether `presented` may read the clock: a key of any workspace or a clock admin key.
    pub(crate) fn may_read_clock(&self, presented: &str) -> bool {
        let admin = self.is_clock_admin(presented);
        self.is_workspace_key(presented) || admin
    }

    /// Whether `presented` may move the simulated clock.
    pub(crate) fn clock_mover(&self, presented: &str) -> ClockMover {
        let admin = self.is_clock_admin(presented);
        let workspace = self.is_workspace_key(presented);
        match (admin, workspace) {
            (true, _) => ClockMover::Allowed,
            (false, true) if self.clock_admins.is_empty() => ClockMover::Allowed,
            (false, true) => ClockMover::NotAdmin,
            (false, false) => ClockMover::Unknown,
        }
    }

    /// Whether `presented` is a key of any workspace (the simulation API's instance-wide
    /// routes).
    fn is_workspace_key(&self, presented: &str) -> bool {
        self.matching(Some(presented)).first.is_some()
    }

    /// The configured keys that `presented` is (one key may be configured for several
    /// workspaces), each compared in constant time.
    pub(crate) fn configs_of(&self, presented: &str) -> Vec<&ApiKeyConfig> {
        let found = self.matching(Some(presented));
        self.keys_of(&found).collect()
    }

    /// The name of the key that opens `ws`, if `presented` is one.
    pub fn check(&self, presented: &str, ws: &WorkspaceRef) -> Option<String> {
        self.name_opening(&self.matching(Some(presented)), ws)
            .map(String::from)
    }
}

/// Whether `presented` is one of `keys`, each compared in constant time.
fn one_of(keys: &[String], presented: &str) -> bool {
    let mut found = false;
    for k in keys {
        found |= bool::from(k.as_bytes().ct_eq(presented.as_bytes()));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_open_only_their_workspace() {
        let t = KeyTable::new(vec![
            ApiKeyConfig::parse("o/a=ka:alice").unwrap(),
            ApiKeyConfig::parse("*/*=kall:local").unwrap(),
        ]);
        let a = WorkspaceRef::new("o", "a");
        let b = WorkspaceRef::new("o", "b");
        assert_eq!(t.check("ka", &a).as_deref(), Some("alice"));
        assert_eq!(t.check("ka", &b), None);
        assert_eq!(t.check("kall", &b).as_deref(), Some("local"));
        assert_eq!(t.check("k", &a), None);
        assert_eq!(t.check("", &a), None);
    }

    #[test]
    fn clock_admin_keys_alone_move_the_clock_once_configured() {
        let keys = vec![ApiKeyConfig::parse("o/a=ka:alice").unwrap()];
        let open = KeyTable::new(keys.clone());
        assert_eq!(open.clock_mover("ka"), ClockMover::Allowed);
        assert_eq!(open.clock_mover("nope"), ClockMover::Unknown);
        let closed = KeyTable::new(keys).with_clock_admins(vec!["k-clock".into()]);
        assert_eq!(closed.clock_mover("ka"), ClockMover::NotAdmin);
        assert_eq!(closed.clock_mover("k-clock"), ClockMover::Allowed);
        assert_eq!(closed.clock_mover("nope"), ClockMover::Unknown);
        assert!(closed.may_read_clock("ka") && closed.may_read_clock("k-clock"));
        assert!(!closed.may_read_clock("nope"));
        assert!(
            !closed.is_workspace_key("k-clock"),
            "an admin key opens no workspace"
        );
    }

    #[test]
    fn a_workspace_key_sees_its_workspace_and_an_operator_everything() {
        let t = KeyTable::new(vec![
            ApiKeyConfig::parse("o/a=ka:alice").unwrap(),
            ApiKeyConfig::parse("o/*=korg:org").unwrap(),
            ApiKeyConfig::parse("*/*=kall:local").unwrap(),
        ])
        .with_clock_admins(vec!["k-clock".into()])
        .with_journal_admins(vec!["k-ops".into()]);
        let a = WorkspaceRef::new("o", "a");
        let b = WorkspaceRef::new("o", "b");
        let other = WorkspaceRef::new("p", "a");
        let alice = t.scope("ka").unwrap();
        assert_eq!(alice, Scope::Workspaces(vec![a.clone()]));
        assert!(alice.sees(Some(&a)) && !alice.sees(Some(&b)) && !alice.sees(None));
        let org = t.scope("korg").unwrap();
        assert!(org.sees(Some(&a)) && org.sees(Some(&b)) && !org.sees(Some(&other)));
        assert!(
            !alice.sees(Some(&WorkspaceRef::new("o", "*"))),
            "a narrower key does not see its org's requests of no one workspace"
        );
        for operator in ["kall", "k-clock", "k-ops"] {
            let s = t.scope(operator).unwrap();
            assert_eq!(s, Scope::Operator, "{operator}");
            assert!(s.sees(None) && s.sees(Some(&other)));
        }
        assert_eq!(t.scope("nope"), None);
        assert_eq!(t.scope(""), None);
    }

    #[test]
    fn a_request_belongs_to_its_keys_workspace_else_to_its_paths() {
        let t = KeyTable::new(vec![
            ApiKeyConfig::parse("o/a=ka:alice").unwrap(),
            ApiKeyConfig::parse("o/*=korg:org").unwrap(),
        ]);
        let owner = |key, path| t.owner(&t.matching(key), path).map(Cow::into_owned);
        let a = WorkspaceRef::new("o", "a");
        let b = WorkspaceRef::new("o", "b");
        assert_eq!(owner(Some("ka"), Some(&a)), Some(a.clone()));
        assert_eq!(
            owner(Some("ka"), Some(&b)),
            Some(a.clone()),
            "another workspace's path counts against the caller"
        );
        assert_eq!(owner(Some("ka"), None), Some(a.clone()));
        assert_eq!(owner(Some("korg"), Some(&b)), Some(b.clone()));
        assert_eq!(owner(Some("korg"), None), Some(WorkspaceRef::new("o", "*")));
        assert_eq!(owner(Some("wrong"), Some(&b)), Some(b.clone()));
        assert_eq!(owner(None, Some(&b)), Some(b.clone()));
        assert_eq!(owner(None, None), None);
        assert_eq!(owner(Some("wrong"), None), None);
        assert!(
            matches!(
                t.owner(&t.matching(Some("ka")), Some(&a)),
                Some(Cow::Borrowed(_))
            ),
            "the path's workspace is not copied"
        );
    }
}
