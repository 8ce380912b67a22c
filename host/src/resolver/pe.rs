//! `pe_resource`: the version resource of a PE executable, read in pure Rust
//! on every host (`docs/declarations.md` §4).
//!
//! The `object` crate walks the PE headers and the resource directory, reading
//! the file lazily through [`object::read::ReadCache`] (a large executable is
//! not loaded whole). The `VS_VERSIONINFO` blob it finds is a small tree of
//! length-prefixed nodes (`wLength`, `wValueLength`, `wType`, UTF-16 key,
//! 32-bit aligned value and children); [`version_from_resource`] walks it with
//! bounds checks on every read.

use crate::platform::Platform;
use object::LittleEndian as LE;
use object::ReadRef;
use object::pe::{ImageNtHeaders32, ImageNtHeaders64, RT_VERSION};
use object::read::ReadCache;
use object::read::pe::{ImageNtHeaders, PeFile};

/// `VS_FIXEDFILEINFO.dwSignature`.
const FIXED_SIGNATURE: u32 = 0xFEEF_04BD;

/// A version resource is at most 64 KiB (`wLength` is 16 bits).
const MAX_RESOURCE: u32 = 64 * 1024;

/// The file version of the PE at `path`: `VS_FIXEDFILEINFO` as `a.b.c.d` when
/// its signature is right and it is not `0.0.0.0`; else the string table's
/// `FileVersion`, then `ProductVersion`. `None` when the file is not a PE or
/// has no usable version resource.
pub fn file_version(platform: &dyn Platform, path: &str) -> Option<String> {
    let file = platform.open_file(path).ok()?;
    let cache = ReadCache::new(file);
    let blob = version_resource::<ImageNtHeaders64, _>(&cache)
        .or_else(|| version_resource::<ImageNtHeaders32, _>(&cache))?;
    version_from_resource(&blob)
}

/// The bytes of the first `RT_VERSION` resource (first name, first language).
fn version_resource<'a, Pe: ImageNtHeaders, R: ReadRef<'a>>(data: R) -> Option<Vec<u8>> {
    let pe = PeFile::<Pe, R>::parse(data).ok()?;
    let sections = pe.section_table();
    let rsrc = pe
        .data_directories()
        .resource_directory(data, &sections)
        .ok()??;
    let root = rsrc.root().ok()?;
    let by_type = root
        .entries
        .iter()
        .find(|e| e.name_or_id().id() == Some(RT_VERSION))?;
    let names = by_type.data(rsrc).ok()?.table()?;
    let langs = names.entries.first()?.data(rsrc).ok()?.table()?;
    let leaf = langs.entries.first()?.data(rsrc).ok()?.data()?;
    let rva = leaf.offset_to_data.get(LE);
    let size = leaf.size.get(LE).min(MAX_RESOURCE);
    let (offset, available) = sections.pe_file_range_at(rva)?;
    let len = size.min(available);
    data.read_bytes_at(u64::from(offset), u64::from(len))
        .ok()
        .map(<[u8]>::to_vec)
}

/// One node of the `VS_VERSIONINFO` tree.
struct Node<'a> {
    key: String,
    /// `wType`: 1 = text, 0 = binary.
    text: bool,
    /// The value bytes (for text: UTF-16 up to the node's end).
    value: &'a [u8],
    /// The children, from the aligned end of the value to the node's end.
    children: &'a [u8],
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Parses the node at the start of `buf` (which is 32-bit aligned relative to
/// the resource start); returns it and the length it occupies.
fn node(buf: &[u8]) -> Option<(Node<'_>, usize)> {
    let total = usize::from(u16_at(buf, 0)?);
    if total < 6 || total > buf.len() {
        return None;
    }
    let node = &buf[..total];
    let value_len = usize::from(u16_at(node, 2)?);
    let text = u16_at(node, 4)? == 1;
    let mut units = Vec::new();
    let mut at = 6;
    loop {
        let u = u16_at(node, at)?;
        at += 2;
        if u == 0 {
            break;
        }
        units.push(u);
    }
    let key = String::from_utf16_lossy(&units);
    let value_start = align4(at).min(total);
    // Text lengths are in UTF-16 units (some compilers write bytes); reading
    // to the first NUL below copes with both.
    let value_bytes = if text { value_len * 2 } else { value_len };
    let value_end = (value_start + value_bytes).min(total);
    let value = &node[value_start..value_end];
    let children_start = align4(value_end).min(total);
    Some((
        Node {
            key,
            text,
            value,
            children: &node[children_start..],
        },
        align4(total),
    ))
}

/// The nodes of a children area.
fn children(mut buf: &[u8]) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    while let Some((n, used)) = node(buf) {
        out.push(n);
        if used >= buf.len() {
            break;
        }
        buf = &buf[used..];
    }
    out
}

fn utf16_text(value: &[u8]) -> String {
    let units: Vec<u16> = value
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .take_while(|&u| u != 0)
        .collect();
    String::from_utf16_lossy(&units).trim().to_string()
}

/// The version text of a `VS_VERSIONINFO` blob (`docs/declarations.md` §4): the fixed file
/// version `a.b.c.d` (signature checked, `0.0.0.0` ignored), else the first
/// non-empty `FileVersion`, then `ProductVersion`, of the string tables.
/// A string-table version written with commas (`1, 2, 3, 4`) is given with dots.
pub fn version_from_resource(blob: &[u8]) -> Option<String> {
    let (root, _) = node(blob)?;
    if root.key != "VS_VERSION_INFO" {
        return None;
    }
    let v = root.value;
    if v.len() >= 52 && u32_at(v, 0) == Some(FIXED_SIGNATURE) {
        let ms = u32_at(v, 8)?;
        let ls = u32_at(v, 12)?;
        if ms != 0 || ls != 0 {
            return Some(format!(
                "{}.{}.{}.{}",
                ms >> 16,
                ms & 0xFFFF,
                ls >> 16,
                ls & 0xFFFF
            ));
        }
    }
    let strings: Vec<(String, String)> = children(root.children)
        .into_iter()
        .filter(|n| n.key == "StringFileInfo")
        .flat_map(|sfi| children(sfi.children))
        .flat_map(|table| children(table.children))
        .filter(|s| s.text || !s.value.is_empty())
        .map(|s| (s.key, utf16_text(s.value)))
        .collect();
    ["FileVersion", "ProductVersion"].iter().find_map(|want| {
        strings
            .iter()
            .find(|(k, v)| k == want && !v.is_empty())
            .map(|(_, v)| {
                if v.contains(',') && !v.contains('.') {
                    v.split(',').map(str::trim).collect::<Vec<_>>().join(".")
                } else {
                    v.clone()
                }
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_never_panics() {
        // Truncations and random-ish bytes at every length.
        let mut seed = 0x1234_5678u32;
        for len in 0..300 {
            let mut b = Vec::with_capacity(len);
            for _ in 0..len {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                b.push((seed >> 16) as u8);
            }
            if len >= 2 {
                b[0] = (len & 0xFF) as u8;
                b[1] = (len >> 8) as u8;
            }
            let _ = version_from_resource(&b);
        }
        assert_eq!(version_from_resource(&[]), None);
    }
}
