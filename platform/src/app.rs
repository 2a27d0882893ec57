//! The platform instance: configuration, store, clock, ids, keys. Cheap to clone; handlers,
//! background work and the engine share one.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use std::sync::atomic::{AtomicU64, Ordering};

use contracts::clock::{SharedClock, SimClock, SystemClock};
use contracts::ids::IdGen;
use contracts::validate::Options;
use contracts::wire::KeyServiceCalls;
use rand::RngCore;

use crate::auth::KeyTable;
use crate::config::{ApiKeyConfig, Database, PlatformConfig};
use crate::keys::byok::ByokKeyService;
use crate::keys::{DataKeyRing, DataKeySource, LocalKeyService};
use crate::store::ids::PersistentIds;
use crate::store::{Store, StoreError, WorkspaceRef};

/// The audit of a customer key service running in the same process as the platform (the one
/// `harness up` starts): the calls it received, newest last, never a secret.
pub trait KeyServiceAudit: Send + Sync {
    /// The calls numbered after `after`, oldest first, at most `limit`.
    fn calls(&self, after: u64, limit: usize) -> KeyServiceCalls;
}

/// The key service whose audit the platform may show, and the workspace it serves.
#[derive(Clone)]
pub struct AuditSource {
    /// The workspace wired to the key service.
    pub ws: WorkspaceRef,
    /// Its audit.
    pub audit: Arc<dyn KeyServiceAudit>,
}

impl std::fmt::Debug for AuditSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditSource")
            .field("ws", &self.ws)
            .finish_non_exhaustive()
    }
}

/// A running platform's shared state.
#[derive(Clone)]
pub struct App {
    inner: Arc<AppInner>,
}

/// What an [`App`] holds.
pub struct AppInner {
    /// The configuration it started with.
    pub config: PlatformConfig,
    /// The database.
    pub store: Store,
    /// The time.
    pub clock: SharedClock,
    /// Request ids sent to other services and other incidental draws: a stream of the seed
    /// that never repeats across restarts (see [`crate::store::ids`]). Ids of stored
    /// resources come from [`App::draw_id`], never from here.
    pub(crate) ids: Arc<IdGen>,
    /// The generator of stored resources' ids, its position kept in the database: draw with
    /// [`App::draw_id`], or [`PersistentIds::draw`] inside the write that stores the resource
    /// (a campaign's or a deployment's create).
    pub(crate) resource_ids: Arc<PersistentIds>,
    /// Data keys of every workspace.
    pub keys: Arc<DataKeyRing>,
    /// API keys.
    pub auth: KeyTable,
    /// How strictly requests are read.
    pub(crate) validation: Options,
    /// The background worker that processes uploaded cohorts.
    pub cohorts: crate::ingest::Processor,
    /// Tells the engine that the API changed something it runs on.
    pub(crate) changes: Changes,
    /// The simulated clock, when the platform runs on one (the same time as `clock`).
    pub(crate) sim: Option<SimClock>,
    /// Deployment lists, served from memory.
    pub(crate) deployment_lists: Arc<crate::service::deployment_lists::ListCache>,
    /// Every request to the interface with its verdict.
    pub journal: Arc<crate::journal::Journal>,
    /// The fault rules in force.
    pub faults: Arc<crate::faults::Faults>,
    /// The key service running in the same process whose audit the live page shows (set by
    /// `harness up`).
    pub(crate) key_service_audit: Option<AuditSource>,
    /// Why each call to a customer key service was made, by its request id (the live page
    /// shows it beside the key service's audit).
    pub(crate) key_call_reasons: Arc<crate::keys::byok::reasons::CallReasons>,
}

/// A change counter the engine watches: campaigns created or changed, cohorts completed,
/// instant outbound calls queued. Bumping it wakes the engine's driver.
#[derive(Debug, Default)]
pub struct Changes {
    counter: AtomicU64,
    notify: tokio::sync::Notify,
}

impl Changes {
    /// Records a change and wakes the driver.
    pub(crate) fn bump(&self) {
        self.counter.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_one();
    }

    /// How many changes so far.
    pub(crate) fn current(&self) -> u64 {
        self.counter.load(Ordering::SeqCst)
    }

    /// Waits for the next change (or one made since the last wait).
    pub(crate) async fn changed(&self) {
        self.notify.notified().await;
    }
}

impl App {
    /// Draws a resource id with `f` (for example `|g| g.campaign_id()`), recording the
    /// generator's position in the database first, so that a restart with the same seed
    /// carries on after it.
    pub(crate) async fn draw_id<T: Send + 'static>(
        &self,
        f: impl FnOnce(&IdGen) -> T + Send + 'static,
    ) -> Result<T, StoreError> {
        let ids = self.resource_ids.clone();
        self.store.write(move |c| ids.draw(c, f)).await
    }
}

impl Deref for App {
    type Target = AppInner;

    fn deref(&self) -> &AppInner {
        &self.inner
    }
}

impl fmt::Debug for App {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("App")
            .field("store", &self.store)
            .field("seed", &self.ids.seed())
            .finish_non_exhaustive()
    }
}

/// Why a platform could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration is wrong.
    #[error("configuration: {0}")]
    Config(String),
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The local key file could not be read or written.
    #[error("local key file {path}: {message}")]
    KeyFile {
        /// The file.
        path: String,
        /// What failed.
        message: String,
    },
}

/// Builds an [`App`].
pub struct AppBuilder {
    config: PlatformConfig,
    clock: Option<SharedClock>,
    sim: Option<SimClock>,
    store: Option<Store>,
    key_service: Option<Arc<dyn DataKeySource>>,
    key_service_audit: Option<AuditSource>,
}

impl App {
    /// A builder from a configuration.
    pub fn builder(config: PlatformConfig) -> AppBuilder {
        AppBuilder {
            config,
            clock: None,
            sim: None,
            store: None,
            key_service: None,
            key_service_audit: None,
        }
    }
}

impl AppBuilder {
    /// Uses this clock (default: the system clock, or a simulated clock when the
    /// configuration asks for one).
    pub fn clock(mut self, clock: SharedClock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Runs on this simulated clock: time moves only through the simulation API.
    pub fn sim_clock(mut self, clock: SimClock) -> Self {
        self.clock = Some(clock.shared());
        self.sim = Some(clock);
        self
    }

    /// Uses this store instead of opening the configured one.
    pub fn store(mut self, store: Store) -> Self {
        self.store = Some(store);
        self
    }

    /// Shows the audit of this key service, which serves `source.ws` in the same process,
    /// to that workspace's keys (`GET .../key-service/calls`).
    pub fn key_service_audit(mut self, source: AuditSource) -> Self {
        self.key_service_audit = Some(source);
        self
    }

    /// Opens the store, loads or creates the local key, and builds the app.
    pub fn build(self) -> Result<App, StartError> {
        let config = self.config;
        let mut sim = self.sim;
        if sim.is_none()
            && self.clock.is_none()
            && config.clock == crate::config::ClockMode::Simulated
        {
            let start = match &config.sim_start {
                Some(s) => chrono::DateTime::parse_from_rfc3339(s)
                    .map_err(|e| StartError::Config(format!("sim_start '{s}': {e}")))?
                    .to_utc(),
                None => contracts::clock::sim_start_now(),
            };
            sim = Some(SimClock::new(start));
        }
        let clock = match (&sim, self.clock) {
            (Some(s), _) => s.shared(),
            (None, Some(c)) => c,
            (None, None) => SystemClock::shared(),
        };
        let store = match self.store {
            Some(s) => s,
            None => match config.database() {
                Database::Memory => Store::in_memory()?,
                Database::File(path) => Store::open(path)?,
            },
        };
        let key_service = match self.key_service {
            Some(s) => s,
            None => Arc::new(LocalKeyService::new(&local_master_key(&config)?)),
        };
        let seed = config.seed.unwrap_or_else(|| IdGen::from_entropy().seed());
        let resource_ids = Arc::new(store.write_blocking(|c| PersistentIds::load(c, seed))?);
        let ids = Arc::new(store.write_blocking(|c| crate::store::ids::request_ids(c, seed))?);
        config.validate_byok().map_err(StartError::Config)?;
        config.validate_faults().map_err(StartError::Config)?;
        let started = contracts::clock::Clock::now(&*clock);
        let journal = Arc::new(if config.journal.persist {
            crate::journal::Journal::persistent(config.journal.clone(), started, &store)?
        } else {
            crate::journal::Journal::new(config.journal.clone(), started)
        });
        let faults = Arc::new(crate::faults::Faults::new(ids.seed()));
        for rule in &config.faults {
            faults.add(rule.clone(), None);
        }
        let keys = Arc::new(DataKeyRing::new(store.clone(), clock.clone(), key_service));
        let key_call_reasons = Arc::new(crate::keys::byok::reasons::CallReasons::default());
        for entry in &config.byok {
            let service =
                ByokKeyService::new(entry, clock.clone(), ids.clone(), key_call_reasons.clone())
                    .map_err(StartError::Config)?;
            keys.set_service(entry.workspace(), Arc::new(service));
        }
        config.validate_server().map_err(StartError::Config)?;
        let auth = KeyTable::new(config.api_keys.clone())
            .with_clock_admins(config.clock_admin_keys.clone())
            .with_journal_admins(config.journal_admin_keys.clone());
        let validation = Options {
            strict: config.strict,
        };
        Ok(App {
            inner: Arc::new(AppInner {
                config,
                store,
                clock,
                ids,
                resource_ids,
                keys,
                auth,
                validation,
                cohorts: crate::ingest::Processor::new(),
                changes: Changes::default(),
                sim,
                deployment_lists: Default::default(),
                journal,
                faults,
                key_service_audit: self.key_service_audit,
                key_call_reasons,
            }),
        })
    }
}

/// The local master key: from the configuration, else from `<database>.key`, else a new one
/// written there (mode 0600). An in-memory store gets a fresh key each run.
fn local_master_key(config: &PlatformConfig) -> Result<[u8; 32], StartError> {
    if let Some(k) = config.local_key_bytes().map_err(StartError::Config)? {
        return Ok(k);
    }
    let path = match config.database() {
        Database::Memory => {
            let mut k = [0u8; 32];
            rand::rngs::OsRng.fill_bytes(&mut k);
            return Ok(k);
        }
        Database::File(p) => {
            let mut s = p.into_os_string();
            s.push(".key");
            std::path::PathBuf::from(s)
        }
    };
    let fail = |message: String| StartError::KeyFile {
        path: path.display().to_string(),
        message,
    };
    match std::fs::read(&path) {
        Ok(bytes) => bytes
            .as_slice()
            .try_into()
            .map_err(|_| fail(format!("holds {} bytes, expected 32", bytes.len()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut k = [0u8; 32];
            rand::rngs::OsRng.fill_bytes(&mut k);
            write_private(&path, &k).map_err(|e| fail(e.to_string()))?;
            Ok(k)
        }
        Err(e) => Err(fail(e.to_string())),
    }
}

fn write_private(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// A random API key for local use, printed at start-up when none is configured.
pub fn generate_local_api_key(ids: &IdGen) -> ApiKeyConfig {
    let bytes: [u8; 18] = ids.bytes();
    ApiKeyConfig {
        org_id: "*".into(),
        workspace_id: "*".into(),
        key: format!("sk-local-{}", hex_lower(&bytes)),
        name: "local".into(),
    }
}

fn hex_lower(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_key_file_is_created_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let config = PlatformConfig {
            database: dir.path().join("p.db").display().to_string(),
            ..Default::default()
        };
        let a = local_master_key(&config).unwrap();
        let b = local_master_key(&config).unwrap();
        assert_eq!(a, b);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("p.db.key"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(dir.path().join("p.db.key"), b"short").unwrap();
        assert!(matches!(
            local_master_key(&config),
            Err(StartError::KeyFile { .. })
        ));
    }
}
