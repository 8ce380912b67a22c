//! This machine, seen through the [`Platform`] trait (`cfg` per OS).

use super::read_bounded;
use super::{DisplayAdapter, FileKind, GpuCache, Platform, ReadError, ReadSeek, UninstallEntry};
use crate::declaration::OsFamily;
use std::fs;
use std::io;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(windows)]
mod windows;

/// The machine this process runs on. Its OS family is the one it was built
/// for ([`OsFamily::current`]).
#[derive(Debug, Default)]
pub struct RealPlatform {
    calls: AtomicU64,
    gpu_cache: GpuCache,
}

impl RealPlatform {
    /// A fresh view of this machine with its own file-system call counter and
    /// GPU cache.
    pub fn new() -> RealPlatform {
        RealPlatform::default()
    }

    /// The process-wide instance: its GPU cache is the one every caller shares.
    pub fn shared() -> &'static RealPlatform {
        static SHARED: OnceLock<RealPlatform> = OnceLock::new();
        SHARED.get_or_init(RealPlatform::new)
    }

    fn count(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }
}

/// Opens a regular file; also returns its length in bytes (a read's size hint).
fn open_regular(path: &str) -> io::Result<(fs::File, u64)> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        // A FIFO at a declared path (a `server_json` in /tmp) must not
        // block the open without end; the type is checked on the handle.
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let f = opts.open(path)?;
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok((f, m.len()))
}

impl Platform for RealPlatform {
    fn os_family(&self) -> OsFamily {
        OsFamily::current()
    }

    fn home(&self) -> Option<String> {
        if cfg!(windows) {
            if let Some(p) = self.env_var("USERPROFILE").filter(|s| !s.is_empty()) {
                return Some(p);
            }
            match (self.env_var("HOMEDRIVE"), self.env_var("HOMEPATH")) {
                (Some(d), Some(p)) => Some(format!("{d}{p}")),
                _ => None,
            }
        } else {
            self.env_var("HOME")
                .filter(|s| !s.is_empty())
                .or_else(|| std::env::home_dir().map(|p| p.to_string_lossy().into_owned()))
        }
    }

    fn env_var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }

    fn user_home(&self, user: &str) -> Option<String> {
        user_home(user)
    }

    fn metadata(&self, path: &str) -> Option<FileKind> {
        self.count();
        let m = fs::metadata(path).ok()?;
        Some(if m.is_file() {
            FileKind::File {
                executable: exec_bit(&m),
            }
        } else if m.is_dir() {
            FileKind::Dir
        } else {
            FileKind::Other
        })
    }

    fn read_file(&self, path: &str, max_bytes: u64) -> Result<Vec<u8>, ReadError> {
        self.count();
        let (f, len) = open_regular(path).map_err(ReadError::Io)?;
        read_bounded(f, max_bytes, len)
    }

    fn open_file(&self, path: &str) -> io::Result<Box<dyn ReadSeek>> {
        self.count();
        Ok(Box::new(open_regular(path)?.0))
    }

    fn list_dir(&self, path: &str) -> io::Result<Vec<String>> {
        self.count();
        let mut names = Vec::new();
        for entry in fs::read_dir(path)? {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        Ok(names)
    }

    fn uninstall_entries(&self) -> Vec<UninstallEntry> {
        #[cfg(windows)]
        {
            windows::uninstall_entries()
        }
        #[cfg(not(windows))]
        {
            Vec::new()
        }
    }

    fn display_adapters(&self) -> Option<Vec<DisplayAdapter>> {
        #[cfg(windows)]
        {
            windows::display_adapters()
        }
        #[cfg(not(windows))]
        {
            None
        }
    }

    fn native_arch(&self) -> Option<String> {
        let arch = match std::env::consts::ARCH {
            "aarch64" => "arm64",
            other => other,
        };
        if arch == "x86_64" && rosetta_translated() {
            return Some("arm64".into());
        }
        Some(arch.to_string())
    }

    fn process_alive(&self, pid: u32) -> bool {
        process_alive(pid)
    }

    fn fs_calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    fn gpu_cache(&self) -> &GpuCache {
        &self.gpu_cache
    }

    fn open_grant_dir(&self, path: &str) -> Option<cap_std::fs::Dir> {
        self.count();
        cap_std::fs::Dir::open_ambient_dir(path, cap_std::ambient_authority()).ok()
    }
}

/// The home folder of `user` from the user database (`getpwnam_r`), like a
/// shell's `~user`. `None` for an unknown user, a name with a NUL byte, or a
/// home that is not UTF-8 or empty.
#[cfg(unix)]
fn user_home(user: &str) -> Option<String> {
    use std::ffi::{CStr, CString};
    let name = CString::new(user).ok()?;
    // Entries are small; a bounded buffer that grows on ERANGE up to 1 MiB.
    let mut buf_len = 1024usize;
    loop {
        let mut buf = vec![0 as libc::c_char; buf_len];
        // SAFETY: an all-zero passwd is a valid value to be filled in.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer refers to a live buffer of the stated size;
        // `result` is set to `&pwd` or null.
        let rc = unsafe {
            libc::getpwnam_r(
                name.as_ptr(),
                &mut pwd,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        if rc == libc::ERANGE && buf_len < (1 << 20) {
            buf_len *= 4;
            continue;
        }
        if rc != 0 || result.is_null() || pwd.pw_dir.is_null() {
            return None;
        }
        // SAFETY: pw_dir points into `buf`, NUL-terminated by getpwnam_r.
        let dir = unsafe { CStr::from_ptr(pwd.pw_dir) };
        return dir
            .to_str()
            .ok()
            .filter(|d| !d.is_empty())
            .map(str::to_string);
    }
}

#[cfg(not(unix))]
fn user_home(_user: &str) -> Option<String> {
    None
}

#[cfg(unix)]
fn exec_bit(m: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn exec_bit(_m: &fs::Metadata) -> bool {
    false
}

/// An x86-64 process on an Apple-silicon Mac runs under Rosetta
/// (`sysctl.proc_translated == 1`): its native architecture is arm64.
#[cfg(target_os = "macos")]
fn rosetta_translated() -> bool {
    let mut value: libc::c_int = 0;
    let mut size = std::mem::size_of::<libc::c_int>();
    // SAFETY: the name is NUL-terminated; `value`/`size` describe a valid c_int buffer.
    let rc = unsafe {
        libc::sysctlbyname(
            c"sysctl.proc_translated".as_ptr(),
            (&mut value as *mut libc::c_int).cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    rc == 0 && value == 1
}

#[cfg(not(target_os = "macos"))]
fn rosetta_translated() -> bool {
    false
}

/// POSIX: signal 0. "No such process" is dead; "permission denied" means the
/// process exists (another user's). Pids above `i32::MAX` or 0 are never alive
/// (0 would signal our own process group).
#[cfg(unix)]
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(windows)]
fn process_alive(pid: u32) -> bool {
    windows::process_alive(pid)
}

#[cfg(not(any(unix, windows)))]
fn process_alive(_pid: u32) -> bool {
    false
}
