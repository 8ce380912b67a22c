//! The data of one short-lived store: its WASI context (nothing granted),
//! its limiter, captured output and the probe grant (`docs/security.md`).

use super::contract::latest::wasmgate::plugin::types as wit;
use super::grant::ProbeGrant;
use super::output::CapturedOutput;
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, StoreLimits};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Records which limit was hit, so a trap that follows a refused growth is
/// reported as the memory limit rather than as a bare trap.
pub(super) struct Limiter {
    pub(super) inner: StoreLimits,
    pub(super) hit: bool,
}

impl Limiter {
    /// Notes a refused (or failed) growth and passes the answer on.
    fn record(&mut self, r: wasmtime::Result<bool>) -> wasmtime::Result<bool> {
        if !matches!(r, Ok(true)) {
            self.hit = true;
        }
        r
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let r = self.inner.memory_growing(current, desired, maximum);
        self.record(r)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let r = self.inner.table_growing(current, desired, maximum);
        self.record(r)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

/// The data of one short-lived [`Store`].
pub(super) struct StoreState {
    pub(super) plugin: Arc<str>,
    pub(super) os: wit::OsFamily,
    pub(super) wasi: WasiCtx,
    pub(super) table: ResourceTable,
    pub(super) limiter: Limiter,
    pub(super) stdout: CapturedOutput,
    pub(super) stderr: CapturedOutput,
    pub(super) grant: Option<ProbeGrant>,
    pub(super) read_cap: u64,
    pub(super) list_cap: u64,
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
