//! Tests of the `harness` command line, one module per command.

mod verify;
