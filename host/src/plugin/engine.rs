//! The one wasmtime [`Engine`] and the epoch ticker that makes per-call
//! deadlines real (`docs/design.md`, "Sandbox and limits").

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;
use wasmtime::{Config, Engine};

/// Builds the engine every plugin shares: Cranelift, the component model
/// (no component-model-async, which triples call cost), and epoch
/// interruption so a running guest can be stopped at a deadline.
pub(crate) fn new_engine() -> wasmtime::Result<Engine> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
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
