//! Reading a plugin's own files — its manifest (`plugin.yaml`,
//! `plugin.json`, `mcp.json`), its skill files and its `.wasm` component —
//! so that they stay in their folder (`docs/security.md`, "What a plugin's
//! manifest may reach"):
//!
//! * The path is opened relative to the plugin folder through a cap-std
//!   [`Dir`] (openat-style resolution): `..`, absolute paths and symbolic
//!   links that lead out of the folder are refused. A link inside the
//!   folder to a file inside the folder is followed (it reaches nothing the
//!   folder does not already hold).
//! * The file is opened with `O_NONBLOCK` (so a FIFO cannot block the open)
//!   and its type is checked on the opened handle, not by a separate `stat`
//!   of the path: only a regular file is read (no FIFO, socket or device).
//! * At most `limit + 1` bytes are read, so the cap holds on the bytes
//!   actually read even when the size the file system reports is wrong
//!   (`/proc` files report 0).
//!
//! The plugin folder itself (an entry of a plugins folder, or the folder
//! holding a `plugin.yaml`) may be a link: the user placed it there.

use cap_std::fs::{Dir, OpenOptions};
use std::io::Read;
use std::path::{Component, Path};

/// Why a plugin file was not read. Displays as a sentence that follows the
/// file's name (`<file>: is a link out of the plugin folder`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PluginFileError {
    /// No such file.
    #[error("cannot be read: not found")]
    NotFound,
    /// The path, or a link on it, leads out of the plugin folder.
    #[error(
        "is refused: it leads out of the plugin folder (a link or path outside it); \
         a plugin's files must stay in its folder"
    )]
    OutsideFolder,
    /// Not a regular file (`what`: `a FIFO`, `a folder`, `a device`, …).
    #[error("is refused: it is {what}, not a regular file")]
    NotRegular {
        /// The kind of file found.
        what: &'static str,
    },
    /// More than `limit` bytes (`size`: the size the file system reported,
    /// when it was already over; `None` when the read found it).
    #[error("is larger than {limit} bytes{}", reported_size(.size))]
    TooLarge {
        /// Reported size in bytes, when known.
        size: Option<u64>,
        /// The cap in bytes.
        limit: u64,
    },
    /// Any other I/O failure (the OS's message; a `String` so the error
    /// stays `Clone` for the load report that keeps it).
    #[error("cannot be read: {0}")]
    Io(String),
}

/// ` (N bytes)` when the file system reported the size, else nothing.
fn reported_size(size: &Option<u64>) -> String {
    size.map(|n| format!(" ({n} bytes)")).unwrap_or_default()
}

fn io_error(e: std::io::Error) -> PluginFileError {
    match e.kind() {
        std::io::ErrorKind::NotFound => PluginFileError::NotFound,
        // cap-std's refusal of a path that leaves the folder
        // ("a path led outside of the filesystem").
        std::io::ErrorKind::PermissionDenied if e.to_string().contains("outside") => {
            PluginFileError::OutsideFolder
        }
        _ => PluginFileError::Io(e.to_string()),
    }
}

fn kind_of(ft: &cap_std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use cap_std::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_char_device() || ft.is_block_device() {
            return "a device";
        }
    }
    "not a regular file"
}

/// Reads the file `rel` (relative, inside `dir`) of a plugin folder, at most
/// `limit` bytes; see the module docs for what is refused.
///
/// # Errors
/// [`PluginFileError`]: not found, out of the folder, not a regular file,
/// over `limit`, or another I/O error. Never blocks on a FIFO.
pub fn read_plugin_file(dir: &Path, rel: &Path, limit: u64) -> Result<Vec<u8>, PluginFileError> {
    let (file, size) = open_plugin_file(dir, rel, limit)?;
    let mut buf = Vec::with_capacity(size.min(limit) as usize);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(io_error)?;
    if buf.len() as u64 > limit {
        return Err(PluginFileError::TooLarge { size: None, limit });
    }
    Ok(buf)
}

/// Opens the file `rel` of a plugin folder as [`read_plugin_file`] does,
/// with the same refusals, without reading it: the open file and its size
/// in bytes at opening (at most `limit`). The caller bounds its reads.
///
/// # Errors
/// As [`read_plugin_file`].
pub fn open_plugin_file(
    dir: &Path,
    rel: &Path,
    limit: u64,
) -> Result<(std::fs::File, u64), PluginFileError> {
    // `..` or an absolute path never names a file of the folder; cap-std
    // would refuse it too, this keeps the reason clear.
    if rel.as_os_str().is_empty()
        || rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(PluginFileError::OutsideFolder);
    }
    let folder = Dir::open_ambient_dir(dir, cap_std::ambient_authority()).map_err(io_error)?;
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        // A FIFO opened for reading without O_NONBLOCK waits for a writer;
        // O_NOCTTY keeps a terminal device from becoming ours.
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = folder.open_with(rel, &opts).map_err(io_error)?;
    // The type of what was opened, not of what the path names now.
    let meta = file.metadata().map_err(io_error)?;
    if !meta.is_file() {
        return Err(PluginFileError::NotRegular {
            what: kind_of(&meta.file_type()),
        });
    }
    if meta.len() > limit {
        return Err(PluginFileError::TooLarge {
            size: Some(meta.len()),
            limit,
        });
    }
    Ok((file.into_std(), meta.len()))
}

/// [`read_plugin_file`] of the file at `path`, inside the folder that holds
/// it (its parent): for a manifest or a `.wasm` file named by its path.
///
/// # Errors
/// As [`read_plugin_file`]; a path without a file name is
/// [`PluginFileError::OutsideFolder`].
pub fn read_file_in_its_folder(path: &Path, limit: u64) -> Result<Vec<u8>, PluginFileError> {
    let Some(name) = path.file_name() else {
        return Err(PluginFileError::OutsideFolder);
    };
    read_plugin_file(&super::schema::plugin_dir_of(path), Path::new(name), limit)
}

/// [`open_plugin_file`] of the file at `path`, inside the folder that holds it.
///
/// # Errors
/// As [`read_file_in_its_folder`].
pub fn open_file_in_its_folder(
    path: &Path,
    limit: u64,
) -> Result<(std::fs::File, u64), PluginFileError> {
    let Some(name) = path.file_name() else {
        return Err(PluginFileError::OutsideFolder);
    };
    open_plugin_file(&super::schema::plugin_dir_of(path), Path::new(name), limit)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn links_out_fifos_and_oversize_files_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("plugin");
        std::fs::create_dir_all(dir.join("skills")).unwrap();
        std::fs::write(root.path().join("secret"), "outside").unwrap();
        std::fs::write(dir.join("skills/a.md"), "inside").unwrap();
        std::os::unix::fs::symlink(root.path().join("secret"), dir.join("out")).unwrap();
        std::os::unix::fs::symlink("../secret", dir.join("rel-out")).unwrap();
        std::os::unix::fs::symlink("skills/a.md", dir.join("in")).unwrap();
        std::os::unix::fs::symlink("/proc/self/status", dir.join("proc")).unwrap();
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);

        let read = |p: &str| read_plugin_file(&dir, Path::new(p), 16);
        assert_eq!(read("skills/a.md").unwrap(), b"inside");
        assert_eq!(read("in").unwrap(), b"inside");
        assert_eq!(read("out"), Err(PluginFileError::OutsideFolder));
        assert_eq!(read("rel-out"), Err(PluginFileError::OutsideFolder));
        assert_eq!(read("proc"), Err(PluginFileError::OutsideFolder));
        assert_eq!(read("../secret"), Err(PluginFileError::OutsideFolder));
        assert_eq!(
            read_plugin_file(&dir, &root.path().join("secret"), 16),
            Err(PluginFileError::OutsideFolder)
        );
        assert_eq!(
            read("fifo"),
            Err(PluginFileError::NotRegular { what: "a FIFO" })
        );
        assert_eq!(
            read("skills"),
            Err(PluginFileError::NotRegular { what: "a folder" })
        );
        assert_eq!(read("missing"), Err(PluginFileError::NotFound));
        std::fs::write(dir.join("big"), [b'x'; 17]).unwrap();
        assert_eq!(
            read("big"),
            Err(PluginFileError::TooLarge {
                size: Some(17),
                limit: 16
            })
        );
        assert_eq!(
            read_file_in_its_folder(&dir.join("out"), 16),
            Err(PluginFileError::OutsideFolder)
        );
    }
}
