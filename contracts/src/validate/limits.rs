//! Every limit of the interface. The spec's Limits table is marked (spec); the rest are the
//! harness's assumptions, recorded in `docs/interface.md`.

/// `start_timestamp` at least this many seconds from now (spec).
pub(crate) const START_MIN_AHEAD_SECS: i64 = 120;
/// `start_timestamp` at most this many seconds from now: 7 days (spec).
pub(crate) const START_MAX_AHEAD_SECS: i64 = 7 * 24 * 3600;
/// `end_timestamp` at least this many seconds after the start (spec).
pub(crate) const END_MIN_AFTER_START_SECS: i64 = 120;
/// `end_timestamp` at most this many seconds after the start: 30 days (spec).
pub(crate) const END_MAX_AFTER_START_SECS: i64 = 30 * 24 * 3600;
/// Least `attempts_per_second` (spec).
pub const RATE_MIN: f64 = 0.1;
/// Greatest `attempts_per_second` (spec).
pub const RATE_MAX: f64 = 500.0;
/// Least `retry_config.threshold_seconds` (spec).
pub const THRESHOLD_MIN: u32 = 1;
/// Greatest `retry_config.threshold_seconds` (spec).
pub const THRESHOLD_MAX: u32 = 1200;
/// Default `threshold_seconds` when none is given (assumed).
pub(crate) const THRESHOLD_DEFAULT: u32 = 10;
/// Greatest `retry_config.max_retries` (assumed; the spec shows no maximum).
pub const MAX_RETRIES_MAX: u32 = 10;
/// Least `retry_interval_minutes` (assumed).
pub const RETRY_INTERVAL_MIN: u32 = 1;
/// Greatest `retry_interval_minutes`: 7 days (assumed).
pub const RETRY_INTERVAL_MAX: u32 = 7 * 24 * 60;
/// Default `retry_interval_minutes` (assumed).
pub(crate) const RETRY_INTERVAL_DEFAULT: u32 = 30;
/// Longest request target (path and query) the platform's HTTP layer reads, in bytes; longer
/// is 414 (assumed).
pub const HTTP_MAX_URI_BYTES: usize = 8 * 1024;
/// Most header fields in a request; more is 431 (assumed).
pub const HTTP_MAX_HEADERS: usize = 100;
/// Largest request head (request line and header fields), in bytes; larger is 431 (assumed).
pub const HTTP_MAX_HEAD_BYTES: usize = 64 * 1024;
/// Longest campaign or deployment description, in characters (spec).
pub const DESCRIPTION_MAX_CHARS: usize = 150;
/// Text without NUL (U+0000), which C-string tools and many databases cut text at: the
/// descriptions, ids, column names and the list search refuse it (assumed); as a JSON Schema
/// pattern.
pub const NO_NUL_PATTERN: &str = "^[^\\x00]*$";
/// Longest campaign, deployment or cohort name, in characters (spec: `^[\w\- ]{1,50}$`).
pub const NAME_MAX_CHARS: usize = 50;
/// The name pattern as the spec writes it.
pub const NAME_PATTERN: &str = r"^[\w\- ]{1,50}$";
/// Least connection configs of a deployment (spec) or a campaign (assumed).
pub const CONNECTION_CONFIGS_MIN: usize = 1;
/// Least connection `weight` (reference).
pub const WEIGHT_MIN: u32 = 1;
/// Greatest connection `weight` (assumed).
pub const WEIGHT_MAX: u32 = 1_000_000;
/// Least agent version (assumed).
pub const APP_VERSION_MIN: i64 = 1;
/// Least list `limit` (spec).
pub const LIST_LIMIT_MIN: i64 = 1;
/// Greatest list `limit` (spec).
pub const LIST_LIMIT_MAX: i64 = 100;
/// `limit` when none is given (assumed).
pub(crate) const LIST_LIMIT_DEFAULT: i64 = 20;
/// Longest list `search`, in characters (assumed: far longer than any field it matches).
pub const LIST_SEARCH_MAX_CHARS: usize = 1000;
/// Least list `offset` (spec).
pub const LIST_OFFSET_MIN: i64 = 0;
/// Most entries of `allowed_days` (repeats are merged): four weeks' worth (assumed).
pub const WEEKDAYS_MAX: usize = 7 * 4;
/// Least users in a cohort stream (reference).
pub const STREAM_USERS_MIN: usize = 1;
/// Most users in a cohort stream (reference).
pub const STREAM_USERS_MAX: usize = 1000;
/// Farthest one move of the simulated clock may go, in seconds: 400 days, whether given as
/// `seconds` or as a target instant (`to`, `now`), so that no key can end every campaign for
/// good with one request (assumed).
pub const CLOCK_MOVE_MAX_SECS: i64 = 400 * 86_400;
/// Largest cohort upload by default, in bytes: 100 MB (assumed; configurable on the platform).
pub const UPLOAD_MAX_BYTES_DEFAULT: u64 = 100 * 1024 * 1024;
