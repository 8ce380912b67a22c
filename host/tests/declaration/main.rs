//! Declarations and manifests: the parser rule by rule and the one
//! validator every source goes through (`docs/declarations.md` §2, §2a).
//!
//! One test binary, one module per concern, so the crates link once
//! (#21 item 7); each module's own doc says what it checks.

mod manifest;
mod parse;
