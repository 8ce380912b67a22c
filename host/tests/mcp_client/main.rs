//! The MCP client against real servers: our git server (stdio and HTTP),
//! faults, proxies, third-party servers and server names
//! (`docs/mcp-client.md`).
//!
//! One test binary, one module per concern, so the crates link once
//! (#21 item 7); each module's own doc says what it checks. The tests that
//! capture this process's logs or set its environment keep binaries of
//! their own (`mcp_edges`, `mcp_env`, `mcp_http_transports`, `mcp_secrets`).

#[path = "../common/mod.rs"]
mod common;

mod faults;
mod git;
mod interop;
mod proxy;
mod server_names;
