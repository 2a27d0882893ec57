//! What the key service's calls share when they fail: [`CallError`], and [`clean`] for
//! quoting the key service's own text in a message.

/// At most this many characters of the key service's own error message are quoted.
pub(super) const MAX_QUOTED: usize = 200;

/// Why a call did not succeed.
pub(super) enum CallError {
    /// No usable answer: connection refused, timeout, cut-off or oversized body.
    Transport(String),
    /// An answer with a status other than 2xx.
    Status {
        status: u16,
        code: Option<String>,
        message: Option<String>,
        retry_after: Option<String>,
    },
}

/// Text from the key service, safe to put in a message: at most [`MAX_QUOTED`] characters,
/// control characters replaced.
pub(super) fn clean(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(MAX_QUOTED)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if s.chars().count() > MAX_QUOTED {
        out.push('…');
    }
    out
}
