//! The platform's state as a stack builds it: on the stack's clock (and, on a restart, the
//! store it keeps), with the key service's audit for the platform's live page: a
//! [`KeyServiceAudit`] over the in-process key service, for the workspace wired to it, so
//! the page reads the audit without the key service's admin token.

use contracts::clock::{SharedClock, SimClock};
use contracts::wire::{KeyServiceCall, KeyServiceCalls};
use customer_kms_sim::KeyService;
use platform::App;
use platform::app::{AuditSource, KeyServiceAudit};
use platform::config::PlatformConfig;
use platform::store::{Store, WorkspaceRef};

use super::StackError;

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
                    // The platform finds why it made the call by its request id.
                    reason: None,
                    request_id: e.request_id,
                })
                .collect(),
            next_seq: log.next_seq(),
            dropped: log.dropped(),
        }
    }
}

/// The platform's state over `config`, on the stack's clock, with `store` (a restart over
/// an in-memory database) and the audit of `kms`, which serves the workspace `ws`.
pub(super) fn build(
    config: &PlatformConfig,
    sim: &Option<SimClock>,
    clock: &SharedClock,
    store: Option<Store>,
    (kms, ws): (&KeyService, &WorkspaceRef),
) -> Result<App, StackError> {
    let audit = AuditSource {
        ws: ws.clone(),
        audit: std::sync::Arc::new(Audit(kms.clone())),
    };
    let mut builder = App::builder(config.clone()).key_service_audit(audit);
    builder = match sim {
        Some(s) => builder.sim_clock(s.clone()),
        None => builder.clock(clock.clone()),
    };
    if let Some(s) = store {
        builder = builder.store(s);
    }
    builder
        .build()
        .map_err(|e| StackError::Platform(e.to_string()))
}
