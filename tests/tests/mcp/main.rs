//! The MCP client against real and hostile servers, mostly through the
//! real `wasmgate` binary (`docs/mcp-client.md`, `docs/security.md`).
//!
//! One test binary, one module per concern, so the crates link once
//! (#21 item 7); each module's own doc says what it checks.

mod hostile_client;
mod hostile_http;
mod status;
mod tls;
