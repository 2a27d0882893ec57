//! The audit log: one entry per call to the three endpoints, bounded, never holding a
//! plaintext key, secret or token.
//!
//! Entries carry a sequence number that only grows, so a reader can ask for what came
//! after the last entry it saw ([`AuditLog::since`]). When the log is full the oldest entry
//! is dropped and counted ([`AuditLog::dropped`]). Appending is one short lock and a push.

use std::collections::VecDeque;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::auth::CallerKind;
use crate::faults::Endpoint;

/// The outcome of a call that got no answer: a hang that ended because the client went
/// away or the service stopped.
pub const NO_RESPONSE: &str = "NO_RESPONSE";
/// The outcome of a successful call.
pub const OK: &str = "OK";

/// One call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Position in the log, from 1, never reused.
    pub seq: u64,
    /// When the call arrived (service clock).
    #[serde(with = "contracts::clock::rfc3339")]
    pub time: DateTime<Utc>,
    /// Which endpoint.
    pub endpoint: Endpoint,
    /// HTTP method.
    pub method: String,
    /// `x-request-id` when it was a UUID.
    pub request_id: Option<String>,
    /// `x-trace-id` when it was a UUID.
    pub trace_id: Option<String>,
    /// `x-request-timestamp` as sent (at most 64 characters).
    pub request_timestamp: Option<String>,
    /// Client id or API-key name, once authenticated.
    pub caller: Option<String>,
    /// How the caller authenticated.
    pub caller_kind: Option<CallerKind>,
    /// The `key_alias` of the call (at most 128 characters).
    pub key_alias: Option<String>,
    /// The master-key version involved (read from the envelope, or the version that wrapped).
    pub key_version: Option<u32>,
    /// `OK`, the error code, or `NO_RESPONSE`.
    pub outcome: String,
    /// HTTP status, absent for `NO_RESPONSE`.
    pub status: Option<u16>,
    /// Wall time spent, milliseconds (microsecond resolution), injected latency included.
    pub latency_ms: f64,
    /// Ids of the faults that fired on this call.
    pub faults: Vec<String>,
    /// The kinds of those faults, in the same order (`latency`, `hang`, `malformed_json`,
    /// ...): what the call was served, also when its outcome says `OK` (a damaged 200).
    #[serde(default)]
    pub fault_kinds: Vec<String>,
}

struct Inner {
    entries: VecDeque<AuditEntry>,
    next_seq: u64,
    dropped: u64,
}

/// The bounded audit log.
pub struct AuditLog {
    capacity: usize,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("capacity", &self.capacity)
            .field("len", &self.len())
            .finish()
    }
}

impl AuditLog {
    /// A log keeping at most `capacity` entries.
    pub(crate) fn new(capacity: usize) -> Self {
        AuditLog {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner {
                entries: VecDeque::with_capacity(capacity.clamp(1, 4096)),
                next_seq: 1,
                dropped: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends `entry`, giving it the next sequence number; answers that number.
    pub(crate) fn append(&self, mut entry: AuditEntry) -> u64 {
        let mut g = self.lock();
        entry.seq = g.next_seq;
        g.next_seq += 1;
        if g.entries.len() == self.capacity {
            g.entries.pop_front();
            g.dropped += 1;
        }
        g.entries.push_back(entry);
        g.next_seq - 1
    }

    /// Every entry kept, oldest first.
    pub fn entries(&self) -> Vec<AuditEntry> {
        self.lock().entries.iter().cloned().collect()
    }

    /// Entries with `seq > after`, oldest first, at most `limit`.
    pub fn since(&self, after: u64, limit: usize) -> Vec<AuditEntry> {
        let g = self.lock();
        // Sequence numbers are consecutive, so the start index follows from the first one.
        let first = g.entries.front().map_or(0, |e| e.seq);
        let skip =
            usize::try_from(after.saturating_add(1).saturating_sub(first)).unwrap_or(usize::MAX);
        g.entries.iter().skip(skip).take(limit).cloned().collect()
    }

    /// Number of entries kept.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether no entry is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries dropped because the log was full.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// The sequence number the next entry will get.
    pub fn next_seq(&self) -> u64 {
        self.lock().next_seq
    }

    /// Counts the entries that satisfy `pred`.
    pub fn count(&self, pred: impl Fn(&AuditEntry) -> bool) -> usize {
        self.lock().entries.iter().filter(|e| pred(e)).count()
    }

    /// Removes every entry (sequence numbers go on); answers how many there were.
    pub(crate) fn clear(&self) -> usize {
        let mut g = self.lock();
        let n = g.entries.len();
        g.entries.clear();
        g.dropped = 0;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(alias: &str) -> AuditEntry {
        AuditEntry {
            seq: 0,
            time: DateTime::parse_from_rfc3339("2026-03-01T00:00:00Z")
                .unwrap()
                .with_timezone(&Utc),
            endpoint: Endpoint::DecryptKey,
            method: "POST".into(),
            request_id: None,
            trace_id: None,
            request_timestamp: None,
            caller: None,
            caller_kind: None,
            key_alias: Some(alias.into()),
            key_version: None,
            outcome: OK.into(),
            status: Some(200),
            latency_ms: 0.0,
            faults: vec![],
            fault_kinds: vec![],
        }
    }

    #[test]
    fn bounded_with_growing_sequence() {
        let log = AuditLog::new(3);
        for i in 0..5 {
            assert_eq!(log.append(entry(&format!("a{i}"))), i + 1);
        }
        let seqs: Vec<u64> = log.entries().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [3, 4, 5]);
        assert_eq!(log.dropped(), 2);
        assert_eq!(log.next_seq(), 6);
        assert_eq!(
            log.since(3, 10).iter().map(|e| e.seq).collect::<Vec<_>>(),
            [4, 5]
        );
        assert_eq!(log.since(0, 10).len(), 3);
        assert_eq!(log.since(0, 1)[0].seq, 3);
        assert!(log.since(5, 10).is_empty());
        assert_eq!(log.count(|e| e.key_alias.as_deref() == Some("a4")), 1);
        assert_eq!(log.clear(), 3);
        assert!(log.is_empty());
        assert_eq!(log.append(entry("x")), 6, "sequence goes on after clear");
    }
}
