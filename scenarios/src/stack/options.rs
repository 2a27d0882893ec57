//! [`StackOptions`]: what a [`super::Stack`] is built from, with the defaults `harness up`
//! uses.

use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use customer_kms_sim::KmsConfig;
use platform::config::{
    BYOK_DATA_KEY_CACHE_SECS, BYOK_REQUEST_TIMEOUT_MS, ClockMode, PlatformConfig,
};
use platform::store::WorkspaceRef;

/// The org of the BYOK workspace unless told otherwise.
pub const DEFAULT_ORG: &str = "org-1";
/// The BYOK workspace unless told otherwise.
pub const DEFAULT_WORKSPACE: &str = "ws-1";
/// The platform's port unless told otherwise; the key service listens on the next one.
pub const DEFAULT_PORT_BASE: u16 = 8080;
/// The `{partner}` path segment of the stack's own key-service configuration.
pub const DEFAULT_PARTNER: &str = "acme";
/// The client the platform authenticates as, when the key service's configuration has none.
pub const DEFAULT_CLIENT_ID: &str = "platform";
/// The alias that wraps the workspace's data key, when the key service's configuration has
/// none.
pub const DEFAULT_KEY_ALIAS: &str = "tenant-a";

/// Everything a stack is built from. `StackOptions::default()` is what `harness up` runs
/// without flags, except that it listens on free ports (`Ports::Any`) rather than 8080 and
/// 8081, so that tests and runners never collide.
#[derive(Debug, Clone)]
pub struct StackOptions {
    /// One clock for the platform and the key service.
    pub clock: StackClock,
    /// Seed of everything random: the platform's ids and choices, the telephony's outcomes
    /// and the key service's derived keys, nonces and token ids, unless the platform's or
    /// the key service's configuration pins its own (`seed` there; this one, when set,
    /// overrides both). `None`: the one remembered beside a database file, else drawn.
    pub seed: Option<u64>,
    /// Where the platform keeps its data.
    pub database: StackDatabase,
    /// Where the two listeners go.
    pub ports: Ports,
    /// The address both listen on: 127.0.0.1 unless told otherwise; `0.0.0.0` in a
    /// container, where the host reaches them through published ports.
    pub host: IpAddr,
    /// The host name the stack's URLs carry (what [`super::StackInfo`] and `harness up`
    /// print): for a stack that listens where clients cannot reach it as written. `None`:
    /// the [`StackOptions::host`], or loopback when that is `0.0.0.0` or `::`.
    pub public_host: Option<String>,
    /// The workspace whose data keys come from the key service (BYOK).
    pub workspace: WorkspaceRef,
    /// The platform's configuration. The stack sets its `listen`, `database`, `clock`,
    /// `sim_start` (and `seed` when [`StackOptions::seed`] is set), adds a `[[byok]]` entry
    /// for [`StackOptions::workspace`], and, when it has no API key, adds one that opens
    /// every workspace.
    pub platform: PlatformConfig,
    /// The key service's configuration; `None`: partner `acme`, client `platform`, alias
    /// `tenant-a`. A configuration without clients gets client `platform`, one without
    /// aliases gets `tenant-a`, one without an admin token gets a random one; secrets the
    /// stack adds are random and shown in [`super::StackInfo`].
    pub kms: Option<KmsConfig>,
    /// How the platform uses the key service for the BYOK workspace.
    pub byok: ByokOptions,
    /// Who moves the platform's engine.
    pub engine: EngineMode,
}

impl Default for StackOptions {
    fn default() -> Self {
        StackOptions {
            clock: StackClock::Real,
            seed: None,
            database: StackDatabase::Temporary,
            ports: Ports::Any,
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            public_host: None,
            workspace: WorkspaceRef::new(DEFAULT_ORG, DEFAULT_WORKSPACE),
            platform: PlatformConfig::default(),
            kms: None,
            byok: ByokOptions::default(),
            engine: EngineMode::Background,
        }
    }
}

impl StackOptions {
    /// A stack on a simulated clock starting at `start`, its engine moved only by the
    /// caller (the scenario runner's set-up); every other option at its default.
    pub fn simulated(start: DateTime<Utc>) -> Self {
        StackOptions {
            clock: StackClock::Simulated(start),
            engine: EngineMode::Manual,
            ..Default::default()
        }
    }

    /// The clock the platform's configuration asks for (`clock`, `sim_start`), for callers
    /// that read a platform file and have no clock flag: `Ok(None)` when it asks for the
    /// real clock.
    pub(crate) fn clock_of(config: &PlatformConfig) -> Result<Option<StackClock>, String> {
        match config.clock {
            ClockMode::Real => Ok(None),
            ClockMode::Simulated => Ok(Some(StackClock::Simulated(match &config.sim_start {
                Some(s) => parse_instant(s).map_err(|e| format!("sim_start: {e}"))?,
                None => contracts::clock::sim_start_now(),
            }))),
        }
    }
}

/// Parses an RFC 3339 instant, with a message that says what is expected.
pub fn parse_instant(s: &str) -> Result<DateTime<Utc>, String> {
    DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.to_utc())
        .map_err(|e| format!("'{s}' is not an RFC 3339 instant such as 2026-03-02T08:00:00Z ({e})"))
}

/// The one clock of a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackClock {
    /// The wall clock.
    Real,
    /// A simulated clock starting at this instant, shared by the platform and the key
    /// service; it moves only through the platform's `/sim/v1/clock` (or
    /// [`platform::engine::driver::Driver::advance`]).
    Simulated(DateTime<Utc>),
}

/// Where the platform keeps its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StackDatabase {
    /// A SQLite file in a temporary directory, removed when the stack is dropped.
    Temporary,
    /// SQLite in memory: lost at exit; kept across [`super::Stack::restart_platform`].
    Memory,
    /// A SQLite file, created when missing and kept, with the platform's local key beside it
    /// (`<file>.key`) and the stack's seed (`<file>.seed`).
    File(PathBuf),
}

impl StackDatabase {
    /// `:memory:` is [`StackDatabase::Memory`], anything else a file.
    pub(crate) fn parse(s: &str) -> StackDatabase {
        if s == ":memory:" {
            StackDatabase::Memory
        } else {
            StackDatabase::File(PathBuf::from(s))
        }
    }
}

/// Which ports the listeners take (on [`StackOptions::host`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ports {
    /// The platform on this port, the key service on the next one.
    Base(u16),
    /// Free ports chosen by the operating system (port 0).
    Any,
}

impl Ports {
    /// `0` is [`Ports::Any`], any other port a base.
    pub(crate) fn from_base(base: u16) -> Ports {
        if base == 0 {
            Ports::Any
        } else {
            Ports::Base(base)
        }
    }

    /// The platform's and the key service's ports (0 for any).
    pub(crate) fn pair(self) -> Result<(u16, u16), String> {
        match self {
            Ports::Any => Ok((0, 0)),
            Ports::Base(p) => match p.checked_add(1) {
                Some(next) => Ok((p, next)),
                None => Err(format!(
                    "port base {p}: the key service needs the next port; choose at most 65534, or 0 for free ports"
                )),
            },
        }
    }
}

/// How the platform uses the key service for the BYOK workspace (the parts of its
/// `[[byok]]` entry the stack does not fill in itself).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ByokOptions {
    /// The key-service client the platform authenticates as; default: the first client of
    /// the key service's configuration.
    pub(crate) client_id: Option<String>,
    /// The alias whose master key wraps the workspace's data key; default: the client's
    /// `default_alias`, else the key service's `default_alias`, else its first alias.
    pub(crate) key_alias: Option<String>,
    /// Seconds a decrypted data key stays in the platform's memory (injected clock).
    pub(crate) data_key_cache_secs: u64,
    /// Milliseconds one call to the key service may take (wall clock).
    pub(crate) request_timeout_ms: u64,
    /// Rotate the data key when the active one is this many seconds old; `None`: only when
    /// asked (`POST .../data-keys/rotate`).
    pub(crate) rotation_period_secs: Option<u64>,
}

impl Default for ByokOptions {
    fn default() -> Self {
        ByokOptions {
            client_id: None,
            key_alias: None,
            data_key_cache_secs: BYOK_DATA_KEY_CACHE_SECS,
            request_timeout_ms: BYOK_REQUEST_TIMEOUT_MS,
            rotation_period_secs: None,
        }
    }
}

/// Who moves the platform's engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineMode {
    /// The platform's own loop, as in `platform serve`: on the real clock it steps the engine
    /// at each due time; on a simulated clock it runs what the API makes due now, and
    /// `/sim/v1/clock` moves time.
    Background,
    /// Nothing runs the engine but the caller, through [`super::Stack::driver`]
    /// (`advance`, `run_until`) or `/sim/v1/clock`: every step happens at its command, so a
    /// run is the same every time.
    Manual,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_base_zero_means_free_ports_and_the_last_port_has_no_successor() {
        assert_eq!(Ports::from_base(0), Ports::Any);
        assert_eq!(Ports::from_base(8080).pair().unwrap(), (8080, 8081));
        assert_eq!(Ports::Any.pair().unwrap(), (0, 0));
        let e = Ports::from_base(65535).pair().unwrap_err();
        assert!(e.contains("at most 65534"), "{e}");
    }

    #[test]
    fn memory_is_the_only_special_database_name() {
        assert_eq!(StackDatabase::parse(":memory:"), StackDatabase::Memory);
        assert_eq!(
            StackDatabase::parse("dev.db"),
            StackDatabase::File("dev.db".into())
        );
    }

    #[test]
    fn the_platform_files_clock_is_read_with_its_start() {
        let mut c = PlatformConfig::default();
        assert_eq!(StackOptions::clock_of(&c).unwrap(), None);
        c.clock = ClockMode::Simulated;
        c.sim_start = Some("2026-03-02T08:00:00Z".into());
        assert_eq!(
            StackOptions::clock_of(&c).unwrap(),
            Some(StackClock::Simulated(
                parse_instant("2026-03-02T08:00:00Z").unwrap()
            ))
        );
        c.sim_start = Some("tomorrow".into());
        let e = StackOptions::clock_of(&c).unwrap_err();
        assert!(e.contains("sim_start") && e.contains("RFC 3339"), "{e}");
    }
}
