//! Scenario files and their runner: whole stacks on a simulated clock, with reports. The
//! command-line entry point of the harness lives here.
