//! Config files, agents' config files and `wasmgate check` through the
//! real `wasmgate` binary (`docs/mcp-client.md` §1, `docs/skills.md`).
//!
//! One test binary, one module per concern, so the crates link once
//! (#21 item 7); each module's own doc says what it checks.

mod agent_configs;
mod check_author;
mod config;
