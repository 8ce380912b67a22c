//! Resolution and availability (`docs/declarations.md` §3–§7) on simulated
//! hosts and on this machine's real files.
//!
//! One test binary, one module per concern, so the crates link once
//! (#21 item 7); each module's own doc says what it checks.
#![cfg(unix)]

mod common;

mod availability_cases;
mod availability_simulated;
mod liveness;
mod posix_edges;
mod real;
mod simulated;
mod versions;
