//! The request journal's settings (the configuration's `[journal]` table); the journal
//! itself is [`crate::journal`].

/// Default of [`JournalSettings::capacity`].
pub const DEFAULT_CAPACITY: usize = 10_000;
/// Default of [`JournalSettings::body_limit_bytes`].
pub(crate) const DEFAULT_BODY_LIMIT_BYTES: usize = 8 * 1024;
/// How the journal is set up (the configuration's `[journal]` table).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, clap::Args)]
#[serde(deny_unknown_fields, default)]
pub struct JournalSettings {
    /// Entries the request journal keeps in memory (GET /sim/v1/journal); 0 turns it off
    /// [default: 10000].
    #[arg(
        long = "journal-capacity",
        id = "journal_capacity",
        env = "PLATFORM_JOURNAL_CAPACITY",
        value_name = "N",
        required = false
    )]
    pub capacity: usize,
    /// Bodies larger than this (in bytes) are described by their size only.
    #[arg(skip)]
    pub body_limit_bytes: usize,
    /// Also keep the request journal in the database (table `journal_entries`), so that
    /// the journal and its counts survive a restart.
    #[arg(long = "journal-persist", id = "journal_persist", env = "PLATFORM_JOURNAL_PERSIST", action = clap::ArgAction::Set, num_args = 0, default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new(), required = false)]
    pub persist: bool,
    /// Which answers' bodies are kept (redacted): those of failed answers (the default), or
    /// all. Request bodies are always kept.
    #[arg(skip)]
    pub response_bodies: ResponseBodies,
}

/// Which answers' bodies the journal keeps ([`JournalSettings::response_bodies`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseBodies {
    /// Answers of 400 and above, and those a fault rule touched: what a failed request
    /// needs to be understood. The body of a successful answer is what the platform made
    /// of the request, which the request itself shows; reading, parsing and redacting it
    /// for every request would cost more than the rest of the journal.
    #[default]
    Failures,
    /// Every answer.
    All,
}

impl Default for JournalSettings {
    fn default() -> Self {
        JournalSettings {
            capacity: DEFAULT_CAPACITY,
            body_limit_bytes: DEFAULT_BODY_LIMIT_BYTES,
            persist: false,
            response_bodies: ResponseBodies::Failures,
        }
    }
}
