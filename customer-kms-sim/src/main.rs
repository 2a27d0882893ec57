//! `customer-kms-sim`: run the simulated key service, or mint and read encrypted keys with
//! the same configuration (see [`customer_kms_sim::cli`]).

fn main() -> std::process::ExitCode {
    customer_kms_sim::cli::main(
        build_info::long_version!(),
        "customer-kms-sim",
        std::env::args_os(),
    )
}
