//! Application declarations: the vocabulary, the parser, the registry
//! (`docs/declarations.md` §1, §2, §8). Pure: no I/O.

pub mod kinds;
pub mod model;
pub mod parse;
pub mod registry;

pub use model::*;
pub use parse::{DeclarationError, ParseOptions, parse_declaration};
#[cfg(any(test, feature = "internals"))]
pub use parse::render_declaration;
pub use registry::Registry;
