//! `gpu_class()`: the GPU vendor class of a machine (`docs/declarations.md`
//! §5). Read from files, the registry or the CPU architecture through
//! the [`Platform`]; never a subprocess or a driver library.

use super::Platform;
use crate::declaration::OsFamily;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Mutex;

/// The GPU class of a machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuClass {
    /// An NVIDIA GPU is present.
    Nvidia,
    /// An AMD GPU (and no NVIDIA one).
    Amd,
    /// An Intel GPU (and no NVIDIA or AMD one).
    Intel,
    /// A Mac with Apple silicon.
    AppleSilicon,
    /// GPU facts were read and name no known vendor.
    None,
    /// GPU facts could not be read; passes a `requires.gpu` check.
    Unknown,
}

impl GpuClass {
    /// The spelling of `docs/declarations.md` §1 (`nvidia`, `amd`, `intel`, `apple_silicon`, `none`, `unknown`).
    pub fn as_str(self) -> &'static str {
        match self {
            GpuClass::Nvidia => "nvidia",
            GpuClass::Amd => "amd",
            GpuClass::Intel => "intel",
            GpuClass::AppleSilicon => "apple_silicon",
            GpuClass::None => "none",
            GpuClass::Unknown => "unknown",
        }
    }

    /// Parses the spelling of `docs/declarations.md` §1; `None` for anything else.
    pub fn parse(s: &str) -> Option<GpuClass> {
        Some(match s {
            "nvidia" => GpuClass::Nvidia,
            "amd" => GpuClass::Amd,
            "intel" => GpuClass::Intel,
            "apple_silicon" => GpuClass::AppleSilicon,
            "none" => GpuClass::None,
            "unknown" => GpuClass::Unknown,
            _ => return None,
        })
    }
}

impl fmt::Display for GpuClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The cached result of `gpu_class` for one platform. GPU facts are read
/// once; `refresh_gpu_class` reads them again (e.g. after an eGPU is plugged in).
#[derive(Debug, Default)]
pub struct GpuCache(Mutex<Option<GpuClass>>);

impl GpuCache {
    /// An empty cache.
    pub fn new() -> GpuCache {
        GpuCache::default()
    }

    fn get(&self) -> Option<GpuClass> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, class: GpuClass) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(class);
    }
}

/// The GPU class of `platform`, read once and then served from its cache
/// (`docs/declarations.md` §5).
pub fn gpu_class(platform: &dyn Platform) -> GpuClass {
    if let Some(class) = platform.gpu_cache().get() {
        return class;
    }
    refresh_gpu_class(platform)
}

/// Reads the GPU facts of `platform` again, stores and returns the result.
pub fn refresh_gpu_class(platform: &dyn Platform) -> GpuClass {
    let class = read_gpu_class(platform);
    platform.gpu_cache().set(class);
    class
}

/// Reads the GPU class without the cache.
fn read_gpu_class(platform: &dyn Platform) -> GpuClass {
    if let Some(stated) = platform.stated_gpu_class() {
        return stated;
    }
    match platform.os_family() {
        OsFamily::Darwin => match platform.native_arch().as_deref() {
            Some("arm64") | Some("aarch64") => GpuClass::AppleSilicon,
            // Intel Macs: no registry or sysfs to read (docs/declarations.md §5.1).
            _ => GpuClass::Unknown,
        },
        OsFamily::Win32 => {
            let Some(adapters) = platform.display_adapters() else {
                return GpuClass::Unknown;
            };
            let mut ids = Vec::new();
            for a in adapters {
                let dev = a
                    .matching_device_id
                    .unwrap_or_default()
                    .to_ascii_uppercase();
                if let Some(at) = dev.find("VEN_") {
                    ids.push(dev[at + 4..].chars().take(4).collect::<String>());
                } else if !a.key.is_empty() && a.key.bytes().all(|b| b.is_ascii_digit()) {
                    // An adapter entry without a readable vendor.
                    ids.push(String::new());
                }
            }
            classify_vendor_ids(&ids)
        }
        OsFamily::Linux => read_linux_gpu(platform),
    }
}

/// Linux (and every other POSIX host): `/proc/driver/nvidia/version`, then
/// `/sys/class/drm/cardN/device/vendor` for every card in numeric order of N.
fn read_linux_gpu(platform: &dyn Platform) -> GpuClass {
    if platform.metadata("/proc/driver/nvidia/version").is_some() {
        return GpuClass::Nvidia;
    }
    let Ok(names) = platform.list_dir("/sys/class/drm") else {
        return GpuClass::Unknown;
    };
    let mut cards: Vec<(u64, String)> = names
        .into_iter()
        .filter_map(|n| {
            let digits = n.strip_prefix("card")?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None; // connectors (`card0-eDP-1`), `renderD128`, `version`
            }
            Some((digits.parse::<u64>().ok()?, n))
        })
        .collect();
    cards.sort();
    let ids: Vec<String> = cards
        .iter()
        .map(|(_, card)| {
            let path = format!("/sys/class/drm/{card}/device/vendor");
            match platform.read_file(&path, 64) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_string(),
                Err(_) => String::new(),
            }
        })
        .collect();
    classify_vendor_ids(&ids)
}

/// Classifies a list of PCI vendor ids (docs/declarations.md §5.4): a non-empty list of
/// blanks is `unknown`; otherwise the first of nvidia (`10de`), amd (`1002`),
/// intel (`8086`) that occurs, else `none`. Ids are compared without case,
/// surrounding whitespace or a `0x` prefix.
pub fn classify_vendor_ids(ids: &[String]) -> GpuClass {
    if !ids.is_empty() && ids.iter().all(|i| i.trim().is_empty()) {
        return GpuClass::Unknown;
    }
    let norm: Vec<String> = ids
        .iter()
        .map(|i| {
            let l = i.trim().to_ascii_lowercase();
            l.strip_prefix("0x").map(str::to_string).unwrap_or(l)
        })
        .collect();
    for (id, class) in [
        ("10de", GpuClass::Nvidia),
        ("1002", GpuClass::Amd),
        ("8086", GpuClass::Intel),
    ] {
        if norm.iter().any(|n| n == id) {
            return class;
        }
    }
    GpuClass::None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn classification_follows_vendor_priority() {
        assert_eq!(
            classify_vendor_ids(&ids(&["0x8086", "0x10de"])),
            GpuClass::Nvidia
        );
        assert_eq!(
            classify_vendor_ids(&ids(&["0x8086", "0x1002"])),
            GpuClass::Amd
        );
        assert_eq!(classify_vendor_ids(&ids(&["0x1af4"])), GpuClass::None);
        assert_eq!(classify_vendor_ids(&ids(&[])), GpuClass::None);
        assert_eq!(classify_vendor_ids(&ids(&[""])), GpuClass::Unknown);
        assert_eq!(classify_vendor_ids(&ids(&["  ", "\n"])), GpuClass::Unknown);
        assert_eq!(classify_vendor_ids(&ids(&["", "0x10de"])), GpuClass::Nvidia);
        assert_eq!(classify_vendor_ids(&ids(&["", "0x1af4"])), GpuClass::None);
        assert_eq!(classify_vendor_ids(&ids(&["10DE"])), GpuClass::Nvidia);
        assert_eq!(classify_vendor_ids(&ids(&["0X10DE"])), GpuClass::Nvidia);
    }

    #[test]
    fn spellings_round_trip() {
        for c in [
            GpuClass::Nvidia,
            GpuClass::Amd,
            GpuClass::Intel,
            GpuClass::AppleSilicon,
            GpuClass::None,
            GpuClass::Unknown,
        ] {
            assert_eq!(GpuClass::parse(c.as_str()), Some(c));
        }
        assert_eq!(GpuClass::parse("NVIDIA"), None);
    }
}
