//! Why the platform called its customer's key service: the reason of each call, kept by the
//! call's `x-request-id`. The key service's audit knows each call but not why it was made;
//! the live page ([`crate::service::live::key_service_calls`]) finds the reason of each call
//! of the audit here.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::keys::KeyCallReason;

/// How many calls' reasons are kept (the oldest go first).
pub(crate) const KEPT: usize = 4_096;

/// The reasons of the latest [`KEPT`] calls to key services, by request id.
#[derive(Debug, Default)]
pub(crate) struct CallReasons {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    order: VecDeque<String>,
    by_id: HashMap<String, KeyCallReason>,
}

impl CallReasons {
    /// Records why the call with this `x-request-id` is made.
    pub(crate) fn record(&self, request_id: &str, reason: KeyCallReason) {
        let mut kept = self.inner.lock().expect("lock");
        if kept.by_id.insert(request_id.to_string(), reason).is_none() {
            kept.order.push_back(request_id.to_string());
        }
        while kept.order.len() > KEPT {
            if let Some(old) = kept.order.pop_front() {
                kept.by_id.remove(&old);
            }
        }
    }

    /// Why the call with this `x-request-id` was made, while it is kept.
    pub(crate) fn get(&self, request_id: &str) -> Option<KeyCallReason> {
        self.inner
            .lock()
            .expect("lock")
            .by_id
            .get(request_id)
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_calls_are_kept() {
        let reasons = CallReasons::default();
        reasons.record("first", KeyCallReason::ColdStart);
        for i in 0..KEPT {
            reasons.record(&format!("r{i}"), KeyCallReason::KeyExpired);
        }
        assert_eq!(reasons.get("first"), None, "the oldest went");
        assert_eq!(reasons.get("r0"), Some(KeyCallReason::KeyExpired));
        assert_eq!(
            reasons.get(&format!("r{}", KEPT - 1)),
            Some(KeyCallReason::KeyExpired)
        );
        reasons.record("r0", KeyCallReason::TokenRefused);
        assert_eq!(reasons.get("r0"), Some(KeyCallReason::TokenRefused));
    }
}
