//! Settings and limits of the server process itself: its malloc arenas, and how many files
//! it may open.

/// The variable glibc reads, once, for how many malloc arenas it may make.
pub const MALLOC_ARENA_MAX: &str = "MALLOC_ARENA_MAX";
/// The arenas the platform runs with unless told otherwise.
pub const ARENAS: &str = "2";

/// Makes this process run with at most [`ARENAS`] glibc malloc arenas, unless
/// `MALLOC_ARENA_MAX` is already set (an operator's value wins); call it first thing in
/// `main`, before any thread starts.
///
/// Why: glibc gives a thread that meets a busy arena a new one, up to eight per core, and
/// each arena keeps the memory freed in it. The server allocates on many threads (its
/// runtime's workers and blocking pool, SQLite's connections, the engine), so its resident
/// memory grew with every request, about 10 KB per instant outbound call and up to 200 MB
/// on two cores, although what it keeps alive stays small. With two arenas it stays near
/// what is alive, at no measured cost in speed (see the `outbound_memory` benchmark).
///
/// glibc reads the variable only when the process starts, so the process starts itself
/// again (`exec`, the same process id) with it set. When that is not possible the process
/// carries on as it is, after a warning. Other C libraries ignore the variable.
pub fn limit_malloc_arenas() {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os(MALLOC_ARENA_MAX).is_some() {
            return;
        }
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        let mut args = std::env::args_os();
        let mut command = std::process::Command::new(exe);
        // The name it was started as, kept: one executable answers to several names
        // (`harness`, `platform`), and the name picks the command.
        if let Some(arg0) = args.next() {
            command.arg0(arg0);
        }
        let err = command.args(args).env(MALLOC_ARENA_MAX, ARENAS).exec();
        eprintln!(
            "warning: could not start again with {MALLOC_ARENA_MAX}={ARENAS} ({err}); \
             memory may grow with load"
        );
    }
}

/// How many files (sockets included) this process may open: the soft `RLIMIT_NOFILE`, read
/// from `/proc/self/limits` on Linux; `None` when unlimited or not known (other systems).
pub(crate) fn open_file_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    parse_open_file_limit(&limits)
}

/// The soft limit of the `Max open files` line of a `/proc/<pid>/limits` text.
fn parse_open_file_limit(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let soft = line
        .strip_prefix("Max open files")?
        .split_whitespace()
        .next()?;
    soft.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_open_file_limit_is_read_from_proc_limits() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             94857                94857                processes \n\
                      Max open files            1024                 524288               files     \n\
                      Max locked memory         8388608              8388608              bytes     \n";
        assert_eq!(parse_open_file_limit(limits), Some(1024));
        let unlimited =
            "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_open_file_limit(unlimited), None);
        assert_eq!(parse_open_file_limit(""), None);
        #[cfg(target_os = "linux")]
        assert!(open_file_limit().is_some_and(|n| n > 0));
    }
}
