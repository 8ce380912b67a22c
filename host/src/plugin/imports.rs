//! The host side of the `wasmgate:plugin` imports a guest may call
//! (`guest-sdk/wit/plugin.wit`, interface `host`): the OS family, logging,
//! and file reads inside a probe's grant only (`docs/security.md`).

use super::contract::latest as bindings;
use super::contract::latest::wasmgate::plugin::types as wit;
use super::store::StoreState;
use crate::declaration::OsFamily;

impl wit::Host for StoreState {}

impl bindings::wasmgate::plugin::host::Host for StoreState {
    fn host_os(&mut self) -> wit::OsFamily {
        self.os
    }

    fn log(&mut self, level: wit::LogLevel, message: String) {
        let plugin = &*self.plugin;
        match level {
            wit::LogLevel::Trace => tracing::trace!(plugin, "{message}"),
            wit::LogLevel::Debug => tracing::debug!(plugin, "{message}"),
            wit::LogLevel::Info => tracing::info!(plugin, "{message}"),
            wit::LogLevel::Warn => tracing::warn!(plugin, "{message}"),
            wit::LogLevel::Error => tracing::error!(plugin, "{message}"),
        }
    }

    fn read_file(&mut self, path: String, max_bytes: u32) -> Result<Vec<u8>, wit::ProbeError> {
        match &self.grant {
            Some(g) => g.read_file(&path, u64::from(max_bytes).min(self.read_cap)),
            None => Err(no_grant(&path)),
        }
    }

    fn list_dir(
        &mut self,
        path: String,
        max_entries: u32,
    ) -> Result<Vec<wit::DirEntry>, wit::ProbeError> {
        match &self.grant {
            Some(g) => g.list_dir(&path, u64::from(max_entries).min(self.list_cap)),
            None => Err(no_grant(&path)),
        }
    }
}

fn no_grant(path: &str) -> wit::ProbeError {
    wit::ProbeError::Denied(format!(
        "{path}: nothing is granted outside a probe-version call"
    ))
}

pub(super) fn to_wit_os(os: OsFamily) -> wit::OsFamily {
    match os {
        OsFamily::Win32 => wit::OsFamily::Win32,
        OsFamily::Darwin => wit::OsFamily::Darwin,
        OsFamily::Linux => wit::OsFamily::Linux,
    }
}
