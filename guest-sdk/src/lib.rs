//! wasmgate guest SDK (placeholder).
