//! `platform serve`: runs the platform mock on a port, over a SQLite file (see
//! [`platform::cli`]).

fn main() -> anyhow::Result<std::process::ExitCode> {
    platform::cli::main(build_info::long_version!(), "platform", std::env::args_os())
}
