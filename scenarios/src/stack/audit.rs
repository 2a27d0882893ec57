//! The key service's audit as the platform's live page shows it: the stack hands the
//! platform a [`KeyServiceAudit`] over its in-process key service, for the workspace it wired
//! to it, so the page reads the audit without the key service's admin token.

use contracts::wire::{KeyServiceCall, KeyServiceCalls};
use customer_kms_sim::KeyService;
use platform::service::live::{AuditSource, KeyServiceAudit};
use platform::store::WorkspaceRef;

struct Audit(KeyService);

impl KeyServiceAudit for Audit {
    fn calls(&self, after: u64, limit: usize) -> KeyServiceCalls {
        let log = self.0.audit();
        KeyServiceCalls {
            items: log
                .since(after, limit)
                .into_iter()
                .map(|e| KeyServiceCall {
                    seq: e.seq,
                    at: e.time,
                    endpoint: e.endpoint.as_str().to_string(),
                    caller: e.caller,
                    key_alias: e.key_alias,
                    outcome: e.outcome,
                    status: e.status,
                    latency_ms: e.latency_ms,
                    faults: e.fault_kinds,
                })
                .collect(),
            next_seq: log.next_seq(),
            dropped: log.dropped(),
        }
    }
}

/// The audit of `kms`, which serves `ws`.
pub(super) fn source(kms: &KeyService, ws: WorkspaceRef) -> AuditSource {
    AuditSource {
        ws,
        audit: std::sync::Arc::new(Audit(kms.clone())),
    }
}
