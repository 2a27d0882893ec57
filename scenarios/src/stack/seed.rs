//! The stack's seed: drawn, or remembered beside a kept database so that the key service's
//! master keys (derived from it) still open the database's data keys at the next start.

use std::path::{Path, PathBuf};

use contracts::ids::IdGen;

use super::StackError;

/// A seed drawn from the operating system, below 2^53 so that it survives the JSON readers
/// that hold numbers as doubles (JavaScript, jq).
pub(super) fn draw_seed() -> u64 {
    IdGen::from_entropy().seed() >> 11
}

/// The file beside a database that remembers the stack's seed.
pub fn seed_file(database: &Path) -> PathBuf {
    let mut s = database.as_os_str().to_owned();
    s.push(".seed");
    PathBuf::from(s)
}

/// The stack's seed for a kept database: the one remembered beside it (which `wanted`, when
/// given, must equal), else `wanted` or a drawn one, then remembered. The key service derives
/// its master keys from the seed, so a database reopened under another seed could not be
/// read.
pub(super) fn remembered_seed(database: &Path, wanted: Option<u64>) -> Result<u64, StackError> {
    let path = seed_file(database);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let stored: u64 = text.trim().parse().map_err(|_| {
                StackError::Seed(format!(
                    "{} should hold the seed the database was made with, a number; it holds {:?}: fix or delete it",
                    path.display(),
                    text.trim()
                ))
            })?;
            match wanted {
                Some(w) if w != stored => Err(StackError::Seed(format!(
                    "the database {} was made with seed {stored} (remembered in {}); the key service's master keys come from the seed, so under seed {w} its data could not be read: pass --seed {stored}, or use another database",
                    database.display(),
                    path.display()
                ))),
                _ => Ok(stored),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let seed = wanted.unwrap_or_else(draw_seed);
            let written = crate::write_atomically(&path, format!("{seed}\n").as_bytes());
            written.map_err(|e| {
                StackError::Seed(format!(
                    "cannot write {} (the seed of the database): {e}; check that its directory exists and is writable",
                    path.display()
                ))
            })?;
            Ok(seed)
        }
        Err(e) => Err(StackError::Seed(format!(
            "cannot read {} (the seed of the database): {e}",
            path.display()
        ))),
    }
}
