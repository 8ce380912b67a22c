//! Windows facts: the uninstall registry, the display-adapter class key and
//! process liveness (`docs/declarations.md` §3, §5, §7).

use super::super::{DisplayAdapter, Hive, UninstallEntry};
use winreg::RegKey;
use winreg::enums::{
    HKEY_CURRENT_USER, HKEY_LOCAL_MACHINE, KEY_READ, KEY_WOW64_32KEY, KEY_WOW64_64KEY,
};

const UNINSTALL: &str = r"SOFTWARE\Microsoft\Windows\CurrentVersion\Uninstall";
const DISPLAY_CLASS: &str =
    r"SYSTEM\CurrentControlSet\Control\Class\{4d36e968-e325-11ce-bfc1-08002be10318}";

/// Uninstall entries: HKLM 64-bit view, HKLM 32-bit view, HKCU — with explicit
/// view flags so a 32-bit process still sees both HKLM views. A root that
/// cannot be opened is skipped; a subkey that vanishes reads as no values.
pub(super) fn uninstall_entries() -> Vec<UninstallEntry> {
    let roots = [
        (HKEY_LOCAL_MACHINE, KEY_WOW64_64KEY, Hive::Hklm, 64u8),
        (HKEY_LOCAL_MACHINE, KEY_WOW64_32KEY, Hive::Hklm, 32u8),
        (HKEY_CURRENT_USER, 0, Hive::Hkcu, 64u8),
    ];
    let mut out = Vec::new();
    for (hkey, view_flag, hive, view) in roots {
        let Ok(root) = RegKey::predef(hkey).open_subkey_with_flags(UNINSTALL, KEY_READ | view_flag)
        else {
            continue;
        };
        for name in root.enum_keys().flatten() {
            let sub = root
                .open_subkey_with_flags(&name, KEY_READ | view_flag)
                .ok();
            let get = |v: &str| -> Option<String> { sub.as_ref()?.get_value::<String, _>(v).ok() };
            out.push(UninstallEntry {
                hive,
                view,
                display_name: get("DisplayName"),
                display_version: get("DisplayVersion"),
                install_location: get("InstallLocation"),
                key: name,
            });
        }
    }
    out
}

/// Every subkey of the display-adapter class key, in enumeration order;
/// `None` when the class key cannot be opened.
pub(super) fn display_adapters() -> Option<Vec<DisplayAdapter>> {
    let class = RegKey::predef(HKEY_LOCAL_MACHINE)
        .open_subkey_with_flags(DISPLAY_CLASS, KEY_READ)
        .ok()?;
    let mut out = Vec::new();
    for name in class.enum_keys().flatten() {
        let id = class
            .open_subkey_with_flags(&name, KEY_READ)
            .ok()
            .and_then(|k| k.get_value::<String, _>("MatchingDeviceId").ok());
        out.push(DisplayAdapter {
            key: name,
            matching_device_id: id,
        });
    }
    Some(out)
}

/// A process is alive when it can be opened with
/// `PROCESS_QUERY_LIMITED_INFORMATION`.
pub(super) fn process_alive(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::CloseHandle;
    use windows_sys::Win32::System::Threading::{OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION};
    if pid == 0 {
        return false;
    }
    // SAFETY: OpenProcess takes plain values; a non-null handle is closed once.
    unsafe {
        let h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
        if h.is_null() {
            return false;
        }
        CloseHandle(h);
    }
    true
}
