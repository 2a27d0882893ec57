//! CLI tests of the `harness` binary, one module per command.

mod platform_check;
