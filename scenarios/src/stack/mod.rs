//! The whole stack in one process: customer-kms-sim and the platform (with the simulated
//! telephony inside it) on 127.0.0.1 (or the address given), BYOK on for one workspace,
//! SQLite embedded.
//!
//! `harness up` runs it until Ctrl-C; the scenario runner builds it on a simulated clock,
//! drives the engine itself ([`EngineMode::Manual`]) and restarts the platform mid-run.
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! use scenarios::stack::{Stack, StackOptions};
//!
//! let start = scenarios::stack::parse_instant("2026-03-02T08:00:00Z").map_err(anyhow::Error::msg)?;
//! let mut stack = Stack::start(StackOptions { seed: Some(7), ..StackOptions::simulated(start) }).await?;
//! let info = stack.info().clone();
//! // ... requests to info.platform.url with X-API-Key: info.platform.api_key ...
//! stack.driver().advance(contracts::validate::sim::Advance::By(chrono::Duration::hours(1))).await?;
//! stack.restart_platform().await?; // same database, same clock, same URL
//! stack.stop().await?;
//! # Ok(()) }
//! ```
//!
//! How the stack is wired:
//! - one clock ([`StackClock`]): the wall clock, or one [`SimClock`] shared by the platform
//!   and the key service (the key service checks `x-request-timestamp` against it);
//! - the key service serves on a real socket and the platform reaches it over HTTP, as in
//!   production, with client credentials, and a data key wrapped by the key service
//!   (`byok:v1:...`, through its library) as the workspace's configured key;
//! - the platform's listener is bound once, so a restart keeps its URL (connections made
//!   while it is stopped wait in the listen queue);
//! - the telephony simulator and the webhook secret survive a restart, so scripted number
//!   rules and the dial journal carry on.
//!
//! Submodules: `options` ([`StackOptions`] and its parts), `info` ([`StackInfo`]), `app`
//! (the platform's state on the stack's clock, with the key service's audit for its live
//! page), `kms`
//! (the key service's configuration completed with a client, an alias and an admin token),
//! `seed` (the seed remembered beside a kept database).

mod app;
mod info;
mod kms;
mod options;
mod seed;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use base64::Engine as _;
use contracts::clock::{SharedClock, SimClock, SystemClock};
use contracts::ids::IdGen;
use contracts::net::{http_url, reachable};
use customer_kms_sim::KeyService;
use platform::App;
use platform::auth::KeyTable;
use platform::config::{ByokConfig, ClockMode, PlatformConfig, Secret};
use platform::engine::driver::Driver;
use platform::server::{Platform, ServeOptions};
use platform::store::{Store, WorkspaceRef};
use telephony_sim::TelephonySim;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use info::{ClockInfo, DatabaseInfo, KeyServiceInfo, PlatformInfo, StackInfo, TelephonyInfo};
use kms::KmsSetup;
pub use options::{
    ByokOptions, DEFAULT_CLIENT_ID, DEFAULT_KEY_ALIAS, DEFAULT_ORG, DEFAULT_PARTNER,
    DEFAULT_PORT_BASE, DEFAULT_WORKSPACE, EngineMode, Ports, StackClock, StackDatabase,
    StackOptions, parse_instant,
};
pub use seed::seed_file;
use seed::{draw_seed, remembered_seed};

/// Why a stack could not start, restart or stop. Each says what to change.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// A port could not be bound.
    #[error(
        "cannot listen on {addr} for the {what}: {source}; choose another --port-base, or 0 for free ports"
    )]
    Listen {
        /// `platform` or `key service`.
        what: &'static str,
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The options contradict each other or are out of range.
    #[error("{0}")]
    Options(String),
    /// The seed remembered beside the database could not be read or written, or differs.
    #[error("{0}")]
    Seed(String),
    /// The key service's configuration is wrong.
    #[error("key service: {0}")]
    KeyService(String),
    /// The platform could not start.
    #[error("platform: {0}")]
    Platform(String),
    /// A temporary directory could not be made.
    #[error("cannot create a temporary directory for the database: {0}")]
    TempDir(std::io::Error),
    /// A server task ended abnormally.
    #[error("the {what} stopped abnormally: {message}")]
    Task {
        /// Which server.
        what: &'static str,
        /// The panic or cancellation.
        message: String,
    },
    /// The database could not be checkpointed at stop.
    #[error("checkpointing the database at stop: {0}")]
    Checkpoint(String),
}

/// A server task and the sender that stops it.
struct Running {
    what: &'static str,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Running {
    fn spawn<F>(what: &'static str, serve: impl FnOnce(oneshot::Receiver<()>) -> F) -> Running
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        Running {
            what,
            stop: Some(tx),
            task: Some(tokio::spawn(serve(rx))),
        }
    }

    /// Stops the server and waits for the requests in flight.
    async fn stop(&mut self) -> Result<(), StackError> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match self.task.take() {
            Some(t) => t.await.map_err(|e| StackError::Task {
                what: self.what,
                message: e.to_string(),
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// The whole stack, running. See the [module documentation](self).
///
/// End it with [`Stack::stop`]: dropping it only tells both servers to stop, without waiting
/// for them, and removes a temporary database at once.
pub struct Stack {
    info: StackInfo,
    sim: Option<SimClock>,
    clock: SharedClock,
    kms: KeyService,
    kms_server: Running,
    platform: Platform,
    platform_server: Option<Running>,
    platform_listener: std::net::TcpListener,
    platform_config: PlatformConfig,
    /// The in-memory store, kept across restarts.
    memory_store: Option<Store>,
    telephony: Arc<TelephonySim>,
    webhook_secret: Vec<u8>,
    engine: EngineMode,
    // Last: removed after everything above is dropped.
    _temp: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("platform", &self.info.platform.url)
            .field("key_service", &self.info.key_service.url)
            .field("seed", &self.info.seed)
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

impl Stack {
    /// Binds both listeners, starts the key service, wraps the workspace's data key, starts
    /// the platform with BYOK on for the workspace, and answers once both serve.
    pub async fn start(options: StackOptions) -> Result<Stack, StackError> {
        let StackOptions {
            clock,
            seed,
            database,
            ports,
            host,
            public_host,
            workspace,
            platform: mut config,
            kms,
            byok,
            engine,
        } = options;
        check_workspace(&workspace)?;

        // The database, and the seed remembered beside a kept file.
        let mut temp = None;
        let db_path = match &database {
            StackDatabase::Temporary => {
                let dir = tempfile::Builder::new()
                    .prefix("harness-")
                    .tempdir()
                    .map_err(StackError::TempDir)?;
                let path = dir.path().join("platform.db");
                temp = Some(dir);
                Some(path)
            }
            StackDatabase::Memory => None,
            StackDatabase::File(p) => Some(p.clone()),
        };
        // A seed given in the options wins over the seeds of the two configurations.
        let seed_given = seed.is_some();
        let seed = match &database {
            StackDatabase::File(p) => remembered_seed(p, seed)?,
            _ => seed.unwrap_or_else(draw_seed),
        };

        // One clock.
        let (sim, shared) = match clock {
            StackClock::Real => (None, SystemClock::shared()),
            StackClock::Simulated(start) => {
                let sim = SimClock::new(start);
                let shared = sim.shared();
                (Some(sim), shared)
            }
        };

        // Listeners first: a taken port fails before anything starts.
        let (platform_port, kms_port) = ports.pair().map_err(StackError::Options)?;
        let platform_listener = bind("platform", host, platform_port)?;
        let kms_listener = bind("key service", host, kms_port)?;
        let platform_addr = platform_listener.local_addr().expect("bound");
        let kms_addr = kms_listener.local_addr().expect("bound");
        // The platform calls the key service where this machine reaches it; users are given
        // the public host.
        let kms_inside = http_url(&reachable(host).to_string(), kms_addr.port());
        let shown_host = public_host.unwrap_or_else(|| reachable(host).to_string());

        // The key service, and the workspace's data key wrapped by it.
        let kms_setup = KmsSetup::new(kms, &byok, seed, seed_given)?;
        let kms = KeyService::new(kms_setup.config.clone(), shared.clone())
            .map_err(|e| StackError::KeyService(e.to_string()))?;
        let wrapped = kms
            .new_data_key(&kms_setup.alias)
            .map_err(|e| StackError::KeyService(format!("wrapping the data key: {e}")))?;
        let kms_url = http_url(&shown_host, kms_addr.port());
        let kms_tokio = tokio_listener(kms_listener, "key service")?;
        let served = kms.clone();
        let kms_server = Running::spawn("key service", move |rx| {
            customer_kms_sim::serve(kms_tokio, served, async {
                let _ = rx.await;
            })
        });

        // The platform's configuration.
        config.listen = platform_addr;
        config.database = match &db_path {
            Some(p) => p.display().to_string(),
            None => ":memory:".into(),
        };
        if database == StackDatabase::Memory && config.local_key.is_none() {
            // Kept across restarts, which build a new key service for the same store.
            let key: [u8; 32] = IdGen::from_entropy().bytes();
            config.local_key = Some(base64::engine::general_purpose::STANDARD.encode(key));
        }
        if seed_given || config.seed.is_none() {
            config.seed = Some(seed);
        }
        let platform_seed = config.seed.unwrap_or(seed);
        match clock {
            StackClock::Real => {
                config.clock = ClockMode::Real;
                config.sim_start = None;
            }
            StackClock::Simulated(start) => {
                config.clock = ClockMode::Simulated;
                config.sim_start = Some(contracts::clock::format_instant(start));
            }
        }
        if config.api_keys.is_empty() {
            config
                .api_keys
                .push(platform::app::generate_local_api_key(&IdGen::from_entropy()));
        }
        let api_key = KeyTable::new(config.api_keys.clone());
        let api_key = config
            .api_keys
            .iter()
            .find(|k| api_key.check(&k.key, &workspace).is_some())
            .map(|k| k.key.clone())
            .ok_or_else(|| {
                StackError::Options(format!(
                    "no API key of the platform's configuration opens {workspace}; add one ({}/{}=KEY) or remove them all to get a generated one",
                    workspace.org_id, workspace.workspace_id
                ))
            })?;
        if config
            .byok
            .iter()
            .any(|b| b.org_id == workspace.org_id && b.workspace_id == workspace.workspace_id)
        {
            return Err(StackError::Options(format!(
                "the platform's configuration has a [[byok]] entry for {workspace}, the workspace the stack wires to its own key service; remove that entry or choose another workspace"
            )));
        }
        config.byok.push(ByokConfig {
            org_id: workspace.org_id.clone(),
            workspace_id: workspace.workspace_id.clone(),
            customer_base_url: kms_inside,
            partner: kms.partner().to_string(),
            client_id: Some(kms_setup.client_id.clone()),
            client_secret: Some(Secret::new(kms_setup.client_secret.clone())),
            api_key: None,
            key_alias: kms_setup.alias.clone(),
            encrypted_key: wrapped.encrypted_key.clone(),
            data_key_cache_secs: byok.data_key_cache_secs,
            request_timeout_ms: byok.request_timeout_ms,
            rotation_period_secs: byok.rotation_period_secs,
        });

        // The platform.
        // A temporary file is deleted with the stack: it is opened with smaller caches and
        // without flushes ([`Store::open_throwaway`]).
        let throwaway = match (&database, &db_path) {
            (StackDatabase::Temporary, Some(path)) => {
                Some(Store::open_throwaway(path).map_err(|e| StackError::Platform(e.to_string()))?)
            }
            _ => None,
        };
        let app = app::build(&config, &sim, &shared, throwaway, (&kms, &workspace))?;
        let memory_store = (database == StackDatabase::Memory).then(|| app.store.clone());
        let platform = Platform::from_config(app).map_err(StackError::Platform)?;
        let telephony = platform.driver.engine().telephony().clone();
        let webhook_secret = platform.webhook_secret().to_vec();

        let platform_url = http_url(&shown_host, platform_addr.port());
        let info = StackInfo {
            platform: PlatformInfo {
                openapi_url: format!("{platform_url}/openapi.json"),
                ui_url: PlatformInfo::ui_link(&platform_url, &api_key, &workspace),
                url: platform_url,
                api_key,
                org_id: workspace.org_id.clone(),
                workspace_id: workspace.workspace_id.clone(),
                database: DatabaseInfo {
                    path: config.database.clone(),
                    kept: matches!(database, StackDatabase::File(_)),
                },
                webhook_secret: String::from_utf8_lossy(&webhook_secret).into_owned(),
                seed: platform_seed,
            },
            key_service: KeyServiceInfo {
                byok_base_url: format!("{kms_url}/{}/byok/v1", kms.partner()),
                admin_url: format!("{kms_url}/_admin"),
                url: kms_url,
                partner: kms.partner().to_string(),
                client_id: kms_setup.client_id,
                client_secret: kms_setup.client_secret,
                key_alias: kms_setup.alias,
                encrypted_key: wrapped.encrypted_key,
                admin_token: kms_setup.admin_token,
                seed: kms.seed(),
            },
            telephony: TelephonyInfo {
                seed: config.telephony.seed.unwrap_or(platform_seed),
                magic_numbers: config
                    .telephony
                    .model
                    .as_ref()
                    .is_none_or(|m| m.magic_numbers),
            },
            clock: ClockInfo::of(clock),
            seed,
        };
        let mut stack = Stack {
            info,
            sim,
            clock: shared,
            kms,
            kms_server,
            platform,
            platform_server: None,
            platform_listener,
            platform_config: config,
            memory_store,
            telephony,
            webhook_secret,
            engine,
            _temp: temp,
        };
        stack.serve_platform()?;
        Ok(stack)
    }

    fn serve_platform(&mut self) -> Result<(), StackError> {
        let listener = self
            .platform_listener
            .try_clone()
            .map_err(|e| StackError::Platform(format!("cannot reuse the listener: {e}")))?;
        let listener = tokio_listener(listener, "platform")?;
        let platform = self.platform.clone();
        let options = ServeOptions {
            engine_loop: self.engine == EngineMode::Background,
        };
        self.platform_server = Some(Running::spawn("platform", move |rx| {
            platform::server::serve_with(
                platform,
                listener,
                async {
                    let _ = rx.await;
                },
                options,
            )
        }));
        Ok(())
    }

    /// The connection details: URLs, credentials, seeds, clock.
    pub fn info(&self) -> &StackInfo {
        &self.info
    }

    /// The platform (its state and engine driver). A new one after each
    /// [`Stack::restart_platform`]: do not keep it across a restart.
    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    /// The platform's shared state (store, keys, clock, configuration as started).
    pub fn app(&self) -> &App {
        &self.platform.app
    }

    /// The platform's engine driver: [`Driver::advance`] and [`Driver::run_until`] move a
    /// simulated clock and run every step due.
    pub fn driver(&self) -> &Arc<Driver> {
        &self.platform.driver
    }

    /// The key service, in process: audit log, faults, keys, tokens.
    pub fn kms(&self) -> &KeyService {
        &self.kms
    }

    /// The telephony simulator the platform dials through (rules, journal); the same one
    /// after a restart.
    pub fn telephony(&self) -> &Arc<TelephonySim> {
        &self.telephony
    }

    /// The simulated clock shared by the platform and the key service, if the stack runs on
    /// one.
    pub fn sim_clock(&self) -> Option<&SimClock> {
        self.sim.as_ref()
    }

    /// The stack's clock (the simulated one, or the wall clock).
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// Stops the platform as `platform serve` stops on Ctrl-C: requests in flight finish,
    /// the engine and the cohort worker stop, the database is checkpointed. The key service
    /// keeps serving and the URL stays bound (new connections wait).
    pub async fn stop_platform(&mut self) -> Result<(), StackError> {
        if let Some(mut running) = self.platform_server.take() {
            running.stop().await?;
            self.platform
                .app
                .store
                .checkpoint()
                .map_err(|e| StackError::Checkpoint(e.to_string()))?;
        }
        Ok(())
    }

    /// Starts a new platform over the same database, local key, configuration, clock,
    /// telephony and webhook secret, on the same URL; its keys are fetched again from the
    /// key service. Does nothing when the platform is running.
    pub async fn start_platform(&mut self) -> Result<(), StackError> {
        if self.platform_server.is_some() {
            return Ok(());
        }
        let p = &self.info.platform;
        let ws = WorkspaceRef::new(&p.org_id, &p.workspace_id);
        let app = app::build(
            &self.platform_config,
            &self.sim,
            &self.clock,
            self.memory_store.clone(),
            (&self.kms, &ws),
        )?;
        self.platform = Platform::new(app, self.telephony.clone(), self.webhook_secret.clone());
        self.serve_platform()
    }

    /// [`Stack::stop_platform`] then [`Stack::start_platform`]: a platform restart on the same
    /// database mid-run.
    pub async fn restart_platform(&mut self) -> Result<(), StackError> {
        self.stop_platform().await?;
        self.start_platform().await
    }

    /// Stops the platform (requests in flight finish, the database is checkpointed), then
    /// the key service; a temporary database is removed.
    pub async fn stop(mut self) -> Result<(), StackError> {
        let platform = self.stop_platform().await;
        let kms = self.kms_server.stop().await;
        platform.and(kms)
    }
}

fn check_workspace(ws: &WorkspaceRef) -> Result<(), StackError> {
    let ok = |s: &str| {
        !s.is_empty()
            && s != "*"
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'))
    };
    if ok(&ws.org_id) && ok(&ws.workspace_id) {
        Ok(())
    } else {
        Err(StackError::Options(format!(
            "workspace '{ws}': org and workspace must be non-empty and of A-Z a-z 0-9 - _ . ~ (they go into URLs)"
        )))
    }
}

fn bind(what: &'static str, host: IpAddr, port: u16) -> Result<std::net::TcpListener, StackError> {
    let addr = SocketAddr::new(host, port);
    let listener = std::net::TcpListener::bind(addr).map_err(|source| StackError::Listen {
        what,
        addr: addr.to_string(),
        source,
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| StackError::Listen {
            what,
            addr: addr.to_string(),
            source,
        })?;
    Ok(listener)
}

fn tokio_listener(
    listener: std::net::TcpListener,
    what: &'static str,
) -> Result<tokio::net::TcpListener, StackError> {
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    tokio::net::TcpListener::from_std(listener).map_err(|source| StackError::Listen {
        what,
        addr,
        source,
    })
}

#[cfg(test)]
mod tests;
