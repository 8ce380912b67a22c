//! The sandboxed view a probe gets of the machine: the host's OS family, the
//! host log, and bounded reads inside the folder granted for one call.

use crate::__bindings::wasmgate::plugin::host;
use crate::{DirEntry, LogLevel, OsFamily, ProbeError};
use std::marker::PhantomData;

/// Largest file [`Grant::read_file`] asks for: 1 MiB (the host may cap lower).
pub const DEFAULT_MAX_BYTES: u32 = 1 << 20;
/// Most entries [`Grant::list_dir`] asks for: 4096 (the host may cap lower).
pub const DEFAULT_MAX_ENTRIES: u32 = 4096;

/// Read-only access to the install folder the host located, lent for one
/// [`crate::Plugin::probe_version`] call. Paths are relative to that folder
/// and `/`-separated; `..`, absolute paths and links that leave the folder
/// are refused ([`ProbeError::Denied`]).
#[derive(Debug)]
pub struct Grant {
    pub(crate) _private: PhantomData<*const ()>,
}

impl Grant {
    /// The bytes of the file at `path`, at most [`DEFAULT_MAX_BYTES`];
    /// a larger file is [`ProbeError::TooLarge`].
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>, ProbeError> {
        self.read_file_max(path, DEFAULT_MAX_BYTES)
    }

    /// As [`Grant::read_file`] with an explicit cap in bytes.
    pub fn read_file_max(&self, path: &str, max_bytes: u32) -> Result<Vec<u8>, ProbeError> {
        host::read_file(path, max_bytes)
    }

    /// The file at `path` as UTF-8 text (invalid sequences replaced).
    pub fn read_to_string(&self, path: &str) -> Result<String, ProbeError> {
        self.read_file(path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// The entries of the folder at `path` (`""` or `.` for the granted
    /// folder itself), at most [`DEFAULT_MAX_ENTRIES`].
    pub fn list_dir(&self, path: &str) -> Result<Vec<DirEntry>, ProbeError> {
        self.list_dir_max(path, DEFAULT_MAX_ENTRIES)
    }

    /// As [`Grant::list_dir`] with an explicit cap on entries.
    pub fn list_dir_max(&self, path: &str, max_entries: u32) -> Result<Vec<DirEntry>, ProbeError> {
        host::list_dir(path, max_entries)
    }
}

/// The OS family the host is evaluating (a simulated host may differ from
/// the machine).
pub fn host_os() -> OsFamily {
    host::host_os()
}

/// Writes `message` to the host log at `level`, tagged with the plugin name.
pub fn log(level: LogLevel, message: &str) {
    host::log(level, message)
}
