//! The `wasmgate` command line; see `wasmgate --help`.

/// mimalloc as the process's allocator: the manifest pipeline makes many
/// small allocations (a scalar, a key, a mapping's entries each), and with
/// glibc's allocator a fifth of `plugin.yaml`'s load was spent in it
/// (`docs/performance.md`, "2026-12-05 (evening), mimalloc in the
/// binary"). The library sets no allocator: an embedder chooses its own.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    wasmgate::run_cli()
}
