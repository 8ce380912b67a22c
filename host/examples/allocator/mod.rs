//! The allocator of the manifest benchmarks (`manifest_bench`,
//! `peer_bench`): the `wasmgate` binary's (`host/src/main.rs`), so their
//! figures are what `wasmgate check` and a start do; built with
//! `--no-default-features --features internals`, the system's.

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Which allocator the benchmark runs on, for its output.
#[cfg(feature = "mimalloc")]
pub const NAME: &str = "mimalloc (the `wasmgate` binary's)";
/// Which allocator the benchmark runs on, for its output.
#[cfg(not(feature = "mimalloc"))]
pub const NAME: &str = "the system's (built without the `mimalloc` feature)";
