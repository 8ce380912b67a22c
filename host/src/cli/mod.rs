//! The `wasmgate` commands (clap).

pub mod availability;
pub mod check;

use std::process::ExitCode;

/// Runs the command line; returns the process exit code.
pub fn main() -> ExitCode {
    ExitCode::SUCCESS
}
