//! Integration tests of the simulated key service: one binary, a real server on
//! `127.0.0.1:0` per test, a simulated clock, a fixed seed, reqwest as the client.

mod admin;
mod audit;
mod bad_requests;
mod cli;
mod endpoints;
mod faults;
mod fuzz;
mod headers;
mod helpers;
mod mutants;
mod rotation;
