//! Application declarations: the vocabulary, the parser, the registry
//! (`spec/declarations.md` §1, §2, §8). Pure: no I/O.

pub mod model;

pub use model::*;
