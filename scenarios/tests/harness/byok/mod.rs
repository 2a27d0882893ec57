//! `harness check byok` against customer-kms-sim, started in process on `127.0.0.1:0` on
//! the system clock (the validator sends real timestamps, as a platform does); the checks
//! that wait for a token's expiry run both on one simulated clock instead, which the
//! validator moves rather than waits on.

mod baseline;
mod blind;
mod cli;
mod leak;
mod mutants;
mod tls;

use std::collections::BTreeSet;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use contracts::clock::{Clock, SharedClock, SimClock, SystemClock};
use customer_kms_sim::{KeyService, KmsConfig};
use scenarios::checks::byok::time::CheckTime;
use scenarios::checks::byok::{ByokArgs, Settings, validate};
use scenarios::checks::{CheckReport, Outcome};

pub const PARTNER: &str = "acme";
pub const CLIENT: &str = "platform";
pub const SECRET: &str = "Zq7vN2pXw4Lk9sRtQ8mC";
pub const API_KEY: &str = "sk_Gq2Rw9ZtK4mXv8PjH3";
pub const ALIAS: &str = "tenant-a";
pub const OTHER_ALIAS: &str = "tenant-b";
pub const DATA_KEY: [u8; 32] = [0x42; 32];

/// The service every test starts from: one client, one API key, two aliases.
pub fn config() -> KmsConfig {
    KmsConfig::new(PARTNER)
        .with_seed(11)
        .with_client(CLIENT, &[SECRET])
        .with_api_key("static", API_KEY)
        .with_alias(ALIAS, 1)
        .with_alias(OTHER_ALIAS, 1)
        .with_admin_token("admin-token")
}

/// A key service on a free port; stopped on drop.
pub struct Kms {
    pub svc: KeyService,
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Kms {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

pub async fn spawn_kms(config: KmsConfig) -> Kms {
    spawn_kms_on(config, SystemClock::shared()).await
}

/// A simulated clock starting at the wall clock's time (the validator's timestamps then
/// agree with the service's until the clock is moved).
pub fn sim_clock() -> SimClock {
    SimClock::new(SystemClock.now())
}

/// A key service on a free port reading `clock`; stopped on drop.
pub async fn spawn_kms_on(config: KmsConfig, clock: SharedClock) -> Kms {
    let svc = KeyService::new(config, clock).expect("valid test config");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(customer_kms_sim::serve(listener, svc.clone(), async {
        let _ = stopped.await;
    }));
    Kms {
        svc,
        addr,
        stop: Some(stop),
    }
}

/// Base64 of [`DATA_KEY`].
pub fn plaintext() -> String {
    STANDARD.encode(DATA_KEY)
}

impl Kms {
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// [`DATA_KEY`] wrapped under [`ALIAS`].
    pub fn given_key(&self) -> String {
        self.svc.wrap_data_key(ALIAS, &DATA_KEY).unwrap().0
    }

    /// Every check that can run without waiting for a token's expiry: client credentials,
    /// a given key, rotation, another alias; a generous latency budget (the machine is
    /// shared) and a short load phase.
    pub fn args(&self) -> ByokArgs {
        ByokArgs {
            base_url: Some(self.base_url()),
            partner: Some(PARTNER.into()),
            client_id: Some(CLIENT.into()),
            client_secret: Some(SECRET.into()),
            key_alias: Some(ALIAS.into()),
            other_key_alias: Some(OTHER_ALIAS.into()),
            encrypted_key: Some(self.given_key()),
            expected_plaintext: Some(plaintext()),
            use_rotate: true,
            latency_budget_ms: Some(1000),
            calls: Some(40),
            concurrency: Some(8),
            // The tests run many checks at once on a shared machine: an answer late by
            // seconds is the machine's, not the service's.
            timeout_ms: Some(30_000),
            ..ByokArgs::default()
        }
    }
}

/// Runs the validator in process.
pub async fn check(args: &ByokArgs) -> CheckReport {
    check_at(args, CheckTime::Wall).await
}

/// Runs the validator in process on `time` (a simulated clock the service reads too).
pub async fn check_at(args: &ByokArgs, time: CheckTime) -> CheckReport {
    let mut settings = Settings::resolve(args).expect("valid settings");
    settings.time = time;
    validate(settings).await.expect("the check runs")
}

/// Runs the validator where it cannot run; answers its message.
pub async fn cannot_run(args: &ByokArgs) -> String {
    let settings = Settings::resolve(args).expect("valid settings");
    validate(settings)
        .await
        .expect_err("the check cannot run")
        .to_string()
}

/// The ids of the checks that failed, of either severity.
pub fn failing(report: &CheckReport) -> BTreeSet<String> {
    ids_with(report, Outcome::Fail)
}

pub fn ids_with(report: &CheckReport, outcome: Outcome) -> BTreeSet<String> {
    report
        .checks
        .iter()
        .filter(|c| c.result == outcome)
        .map(|c| c.id.clone())
        .collect()
}
