//! The calls in progress the engine keeps in memory, and how many each workspace has, so
//! that the workspaces whose keys the next step may need are known without reading every
//! call in progress from the database.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::Id;
use crate::store::WorkspaceRef;
use crate::store::calls;

/// Calls in progress by attempt id, with a count per workspace (keyed by the calls' own
/// shared workspace, so that counting a call copies no text, and finding it compares no
/// text either: a shared workspace is found by its pointer).
#[derive(Debug, Default)]
pub(super) struct Inflight {
    calls: FxHashMap<Id, calls::Call>,
    per_ws: FxHashMap<Arc<WorkspaceRef>, usize>,
}

impl Inflight {
    /// The call, if in progress.
    pub(super) fn get(&self, id: &str) -> Option<&calls::Call> {
        self.calls.get(id)
    }

    /// Records a call in progress (replacing any earlier record of it).
    pub(super) fn insert(&mut self, id: Id, call: calls::Call) {
        *self.per_ws.entry(call.ws.clone()).or_default() += 1;
        if let Some(old) = self.calls.insert(id, call) {
            self.forget_ws(&old.ws);
        }
    }

    /// Takes a call out.
    pub(super) fn remove(&mut self, id: &str) -> Option<calls::Call> {
        let call = self.calls.remove(id)?;
        self.forget_ws(&call.ws);
        Some(call)
    }

    /// The workspaces with a call in progress, in no order.
    pub(super) fn workspaces(&self) -> impl Iterator<Item = &WorkspaceRef> {
        self.per_ws.keys().map(|ws| &**ws)
    }

    fn forget_ws(&mut self, ws: &WorkspaceRef) {
        if let Some(n) = self.per_ws.get_mut(ws) {
            *n -= 1;
            if *n == 0 {
                self.per_ws.remove(ws);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, ws: &str) -> calls::Call {
        calls::Call {
            status: crate::store::states::CallStatus::Calling,
            ..calls::Call::queued(
                id.into(),
                crate::store::states::CallKind::Outbound,
                WorkspaceRef::new("o", ws).into(),
                Vec::new(),
                chrono::DateTime::UNIX_EPOCH,
            )
        }
    }

    #[test]
    fn workspaces_follow_the_calls_in_progress() {
        let mut f = Inflight::default();
        f.insert("a".into(), call("a", "w1"));
        f.insert("b".into(), call("b", "w1"));
        f.insert("c".into(), call("c", "w2"));
        f.insert("c".into(), call("c", "w2"));
        let ws = |f: &Inflight| {
            let mut ws: Vec<_> = f.workspaces().map(|w| w.workspace_id.clone()).collect();
            ws.sort();
            ws
        };
        assert_eq!(ws(&f), ["w1", "w2"]);
        assert!(f.remove("c").is_some());
        assert_eq!(ws(&f), ["w1"], "a replaced record counts once");
        assert!(f.remove("a").is_some() && f.remove("a").is_none());
        assert_eq!(ws(&f), ["w1"]);
        f.remove("b");
        assert!(ws(&f).is_empty());
        assert!(f.get("b").is_none());
    }
}
