//! The gateway (`wasmgate serve` and the `Gateway` library API,
//! `docs/mcp-client.md` §7).
//!
//! One test binary, one module per concern, so the crates link once
//! (#21 item 7); each module's own doc says what it checks.

mod embed;
mod hostile;
mod inspector;
mod live;
mod not_offered;
mod python;
mod reload;
mod sampling;
mod transparent;
