//! The one wasmtime [`Engine`] and the epoch ticker that makes per-call
//! deadlines real (`docs/design.md`, "Sandbox and limits").

use super::config::SandboxConfig;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Builds the engine every plugin shares: Cranelift, the component model
/// (no component-model-async, which triples call cost), and epoch
/// interruption so a running guest can be stopped at a deadline; with
/// [`SandboxConfig::instance_pool`], the pooling instance allocator.
pub(crate) fn new_engine(host: &SandboxConfig) -> wasmtime::Result<Engine> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    if let Some(instances) = host.instance_pool {
        // Slots must hold the largest memory any plugin may grow to, or an
        // override above the default would fail to grow instead of
        // reaching its own limit.
        let largest = host
            .overrides
            .values()
            .filter_map(|o| o.memory_limit)
            .fold(host.memory_limit, usize::max);
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(instances)
            // A Rust guest for wasip2 is a handful of core instances (its
            // module and the WASI adapter's shims) with one or two memories.
            .total_core_instances(instances.saturating_mul(8))
            .total_memories(instances.saturating_mul(2))
            .total_tables(instances.saturating_mul(4))
            .total_stacks(instances)
            // Tables keep the pool's default element cap, stricter than
            // the store's limit; guests' tables are small.
            .max_memory_size(largest);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    // Guests get wasmtime's default 512 KiB wasm stack; deep recursion traps
    // with `StackOverflow` instead of touching the host stack.
    Engine::new(&config)
}

/// A thread that calls [`Engine::increment_epoch`] every `tick`. Stores set
/// their deadline in ticks, so a deadline of `n` ticks fires after between
/// `n-1` and `n` ticks. Dropping the ticker stops and joins the thread.
pub(crate) struct EpochTicker {
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    /// Starts ticking `engine` every `tick`.
    pub(crate) fn start(engine: Engine, tick: Duration) -> std::io::Result<EpochTicker> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("wasmgate-epoch".into())
            .spawn(move || {
                // Stops on a stop message, or when the ticker was dropped.
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(tick) {
                    engine.increment_epoch();
                }
            })?;
        Ok(EpochTicker {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
