//! The per-call grant of a probe: read-only, bounded access to one located
//! install folder through a cap-std [`Dir`] (`docs/declarations.md`,
//! `docs/security.md` "Custom probes in availability"). cap-std refuses every path that would leave
//! the folder (`..`, absolute paths, symbolic links pointing out).

use super::contract::latest::wasmgate::plugin::types::{DirEntry, ProbeError};
use cap_std::fs::Dir;
use std::io::Read;
use std::path::Path;

/// Read-only access to one install folder, lent to a plugin for one
/// `probe-version` call.
#[derive(Debug)]
pub struct ProbeGrant {
    dir: Dir,
}

impl ProbeGrant {
    /// Grants the folder at `path` (the located bundle, or the executable's
    /// folder). Errors: the folder cannot be opened.
    pub fn open(path: &Path) -> std::io::Result<ProbeGrant> {
        Dir::open_ambient_dir(path, cap_std::ambient_authority()).map(ProbeGrant::from_dir)
    }

    /// Grants an already opened folder.
    pub fn from_dir(dir: Dir) -> ProbeGrant {
        ProbeGrant { dir }
    }

    /// Reads `path` (relative, `/`-separated) if it holds at most
    /// `max_bytes` bytes; a larger file is `too-large` rather than cut short,
    /// so a probe never parses a truncated version file.
    pub(crate) fn read_file(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ProbeError> {
        let rel = check_path(path)?;
        let mut opts = cap_std::fs::OpenOptions::new();
        opts.read(true);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            // A FIFO in the install folder must not block the host thread
            // (the guest's deadline cannot interrupt a blocking open).
            opts.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
        }
        let file = self
            .dir
            .open_with(rel, &opts)
            .map_err(|e| io_error(path, e))?;
        // The type of what was opened: only a regular file is read.
        let meta = file.metadata().map_err(|e| io_error(path, e))?;
        if meta.is_dir() {
            return Err(ProbeError::Io(format!("{path}: is a folder")));
        }
        if !meta.is_file() {
            return Err(ProbeError::Io(format!("{path}: is not a regular file")));
        }
        if meta.len() > max_bytes {
            return Err(too_large_bytes(path, max_bytes));
        }
        let mut buf = Vec::with_capacity(meta.len() as usize);
        // The file may grow between metadata and read: read one byte past
        // the cap to notice.
        file.into_std()
            .take(max_bytes + 1)
            .read_to_end(&mut buf)
            .map_err(|e| io_error(path, e))?;
        if buf.len() as u64 > max_bytes {
            return Err(too_large_bytes(path, max_bytes));
        }
        Ok(buf)
    }

    /// Lists `path` (`""` or `.` for the granted folder), at most
    /// `max_entries` entries; more is `too-large`. Sorted by name.
    pub(crate) fn list_dir(
        &self,
        path: &str,
        max_entries: u64,
    ) -> Result<Vec<DirEntry>, ProbeError> {
        let rel = check_path(path)?;
        let entries = if rel.as_os_str().is_empty() {
            self.dir.entries()
        } else {
            self.dir.read_dir(rel)
        }
        .map_err(|e| io_error(path, e))?;
        let mut out = Vec::new();
        for entry in entries {
            if out.len() as u64 >= max_entries {
                return Err(ProbeError::TooLarge(format!(
                    "{path}: more than {max_entries} entries"
                )));
            }
            let entry = entry.map_err(|e| io_error(path, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let ft = entry.file_type().map_err(|e| io_error(path, e))?;
            let size = if ft.is_dir() {
                0
            } else {
                entry.metadata().map(|m| m.len()).unwrap_or(0)
            };
            out.push(DirEntry {
                name,
                is_dir: ft.is_dir(),
                size,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

fn too_large_bytes(path: &str, max: u64) -> ProbeError {
    ProbeError::TooLarge(format!("{path}: larger than {max} bytes"))
}

/// Accepts relative `/`-separated paths without `..`; the empty path and
/// `.` mean the granted folder. Everything else is `denied` before any
/// file system call (cap-std would refuse it too; this gives a clear reason).
fn check_path(path: &str) -> Result<&Path, ProbeError> {
    if path.starts_with('/') || path.starts_with('\\') || path.contains(':') {
        return Err(ProbeError::Denied(format!(
            "{path}: absolute paths are outside the grant"
        )));
    }
    if path.contains('\\') || path.contains('\0') {
        return Err(ProbeError::Denied(format!(
            "{path}: use '/' as the separator"
        )));
    }
    if path.split('/').any(|seg| seg == "..") {
        return Err(ProbeError::Denied(format!("{path}: '..' leaves the grant")));
    }
    let trimmed = path.trim_start_matches("./");
    if trimmed == "." {
        return Ok(Path::new(""));
    }
    Ok(Path::new(trimmed))
}

fn io_error(path: &str, e: std::io::Error) -> ProbeError {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound => ProbeError::NotFound(path.to_string()),
        // cap-std reports a path that would leave the folder (a symbolic
        // link pointing out) as PermissionDenied.
        K::PermissionDenied => ProbeError::Denied(format!("{path}: outside the grant")),
        _ => ProbeError::Io(format!("{path}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant() -> (tempfile::TempDir, ProbeGrant) {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("app")).unwrap();
        std::fs::write(root.path().join("app/VERSION"), "4.2.1\n").unwrap();
        std::fs::write(root.path().join("secret"), "no").unwrap();
        std::fs::create_dir(root.path().join("app/sub")).unwrap();
        let g = ProbeGrant::open(&root.path().join("app")).unwrap();
        (root, g)
    }

    #[test]
    fn reads_and_lists_inside_the_grant() {
        let (_root, g) = grant();
        assert_eq!(g.read_file("VERSION", 100).unwrap(), b"4.2.1\n");
        assert_eq!(g.read_file("./VERSION", 100).unwrap(), b"4.2.1\n");
        let names: Vec<_> = g
            .list_dir("", 10)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["VERSION", "sub"]);
    }

    #[test]
    fn escapes_are_denied() {
        let (root, g) = grant();
        assert!(matches!(
            g.read_file("../secret", 100),
            Err(ProbeError::Denied(_))
        ));
        let abs = root.path().join("secret").display().to_string();
        assert!(matches!(g.read_file(&abs, 100), Err(ProbeError::Denied(_))));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.path().join("secret"), root.path().join("app/link"))
                .unwrap();
            assert!(matches!(
                g.read_file("link", 100),
                Err(ProbeError::Denied(_))
            ));
            // A FIFO is refused at once rather than waited on.
            let fifo =
                std::ffi::CString::new(root.path().join("app/fifo").to_str().unwrap().to_string())
                    .unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
            assert!(matches!(
                g.read_file("fifo", 100),
                Err(ProbeError::Io(m)) if m.contains("not a regular file")
            ));
        }
    }

    #[test]
    fn caps_give_too_large() {
        let (_root, g) = grant();
        assert!(matches!(
            g.read_file("VERSION", 3),
            Err(ProbeError::TooLarge(_))
        ));
        assert!(matches!(g.list_dir(".", 1), Err(ProbeError::TooLarge(_))));
        assert!(matches!(
            g.read_file("nope", 3),
            Err(ProbeError::NotFound(_))
        ));
    }
}
