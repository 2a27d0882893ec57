//! Settings of the server process itself.

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
        let err = std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env(MALLOC_ARENA_MAX, ARENAS)
            .exec();
        eprintln!(
            "warning: could not start again with {MALLOC_ARENA_MAX}={ARENAS} ({err}); \
             memory may grow with load"
        );
    }
}
