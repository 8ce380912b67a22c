//! Files a simulated host needs to answer the version sources, made in code
//! for plugin authors' tests (`guest-sdk/README.md`, "Test a plugin"):
//!
//! - [`pe_with_version`]: a minimal Windows PE executable (PE32+, x86-64,
//!   one `.rsrc` section, no code) whose `VS_VERSION_INFO` resource carries
//!   the version — what `version: {kind: pe_resource}` reads.
//! - [`plist_with_version`]: an XML `Info.plist` with
//!   `CFBundleShortVersionString` and `CFBundleVersion` — what
//!   `version: {kind: plist}` reads from `<bundle>/Contents/Info.plist`.
//!
//! Put them into a simulated host with
//! [`crate::SimulatedHostBuilder::file`]. The fields each source
//! reads are listed in `docs/declarations.md` ("Version sources").

/// A PE executable whose version resource gives `version`.
///
/// A version of one to four numbers below 65536 (`2.1`, `1.2.3.4`) goes
/// into the fixed file version (`VS_FIXEDFILEINFO`, read first) and into
/// the string table's `FileVersion` and `ProductVersion`; any other text
/// (`2.0-beta`) goes into the string table only, with a fixed version of
/// `0.0.0.0`, which the reader skips — so the host reads `version` back as
/// written, except that a fixed version is always four numbers (`2.1` reads
/// as `2.1.0.0`). The file is not runnable; it only has to be found and read.
pub fn pe_with_version(version: &str) -> Vec<u8> {
    let rsrc = resource_section(&version_info(version));
    pe_file(&rsrc)
}

/// A PE executable with an empty `.rsrc` section and no version resource:
/// `version: {kind: pe_resource}` finds the file and reads no version.
pub fn pe_without_version() -> Vec<u8> {
    pe_file(&[])
}

/// An XML `Info.plist` holding `entries` as string values, in order — for a
/// bundle whose keys differ from [`plist_with_version`]'s (only
/// `CFBundleVersion`, say, or none of the version keys).
pub fn plist_with<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let mut d = plist::Dictionary::new();
    for (k, v) in entries {
        d.insert(k.into(), plist::Value::String(v.into()));
    }
    let mut out = Vec::new();
    // Writing a dictionary of strings into memory cannot fail.
    let _ = plist::Value::Dictionary(d).to_writer_xml(&mut out);
    out
}

/// An XML `Info.plist` whose `CFBundleShortVersionString` and
/// `CFBundleVersion` are `version`, with `CFBundleName` `App`. Write it to
/// `<bundle>.app/Contents/Info.plist`.
pub fn plist_with_version(version: &str) -> Vec<u8> {
    plist_with([
        ("CFBundleName", "App"),
        ("CFBundleShortVersionString", version),
        ("CFBundleVersion", version),
    ])
}

fn utf16z(s: &str) -> Vec<u8> {
    s.encode_utf16()
        .chain(std::iter::once(0))
        .flat_map(u16::to_le_bytes)
        .collect()
}

fn pad4(b: &mut Vec<u8>) {
    while !b.len().is_multiple_of(4) {
        b.push(0);
    }
}

/// One `VS_VERSIONINFO` node: `wLength`, `wValueLength` (UTF-16 units for
/// text), `wType`, the key, the 32-bit aligned value, the aligned children.
fn node(key: &str, value: &[u8], text: bool, children: &[Vec<u8>]) -> Vec<u8> {
    let mut b = vec![0u8; 6];
    b.extend(utf16z(key));
    pad4(&mut b);
    b.extend_from_slice(value);
    for c in children {
        pad4(&mut b);
        b.extend_from_slice(c);
    }
    let value_len = if text { value.len() / 2 } else { value.len() };
    let total = u16::try_from(b.len()).unwrap_or(u16::MAX);
    b[0..2].copy_from_slice(&total.to_le_bytes());
    b[2..4].copy_from_slice(&u16::try_from(value_len).unwrap_or(u16::MAX).to_le_bytes());
    b[4..6].copy_from_slice(&u16::from(text).to_le_bytes());
    b
}

/// `1.2.3.4` → its four 16-bit parts; `None` when it is not 1–4 numbers.
fn fixed_parts(version: &str) -> Option<[u16; 4]> {
    let parts: Vec<&str> = version.trim().split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut out = [0u16; 4];
    for (i, p) in parts.iter().enumerate() {
        out[i] = p.parse().ok()?;
    }
    Some(out)
}

fn version_info(version: &str) -> Vec<u8> {
    let [a, b, c, d] = fixed_parts(version).unwrap_or([0; 4]);
    let ms = (u32::from(a) << 16) | u32::from(b);
    let ls = (u32::from(c) << 16) | u32::from(d);
    let fixed: Vec<u8> = [
        0xFEEF_04BD, // dwSignature
        0x0001_0000, // dwStrucVersion
        ms,
        ls, // file version
        ms,
        ls,          // product version
        0x3F,        // dwFileFlagsMask
        0,           // dwFileFlags
        0x0004_0004, // VOS_NT_WINDOWS32
        1,           // VFT_APP
        0,
        0,
        0,
    ]
    .iter()
    .flat_map(|v: &u32| v.to_le_bytes())
    .collect();
    let string = |k: &str, v: &str| node(k, &utf16z(v), true, &[]);
    let table = node(
        "040904B0",
        &[],
        true,
        &[
            string("FileVersion", version),
            string("ProductVersion", version),
        ],
    );
    let sfi = node("StringFileInfo", &[], true, &[table]);
    node("VS_VERSION_INFO", &fixed, false, &[sfi])
}

/// Section RVA of `.rsrc` (the first page after the headers).
const RSRC_RVA: u32 = 0x1000;
const FILE_ALIGN: u32 = 0x200;

/// The `.rsrc` section: type `RT_VERSION` (16) → name 1 → language 0x0409
/// → the data entry → the blob.
fn resource_section(blob: &[u8]) -> Vec<u8> {
    let mut s = Vec::new();
    let dir = |s: &mut Vec<u8>, id: u32, target: u32| {
        s.extend_from_slice(&[0; 12]); // characteristics, time stamp, version
        s.extend_from_slice(&0u16.to_le_bytes()); // named entries
        s.extend_from_slice(&1u16.to_le_bytes()); // id entries
        s.extend_from_slice(&id.to_le_bytes());
        s.extend_from_slice(&target.to_le_bytes());
    };
    // Each directory is 24 bytes; the data entry 16; the blob follows.
    dir(&mut s, 16, 0x8000_0000 | 24);
    dir(&mut s, 1, 0x8000_0000 | 48);
    dir(&mut s, 0x0409, 72);
    let blob_at = 88u32;
    s.extend_from_slice(&(RSRC_RVA + blob_at).to_le_bytes());
    s.extend_from_slice(&u32::try_from(blob.len()).unwrap_or(0).to_le_bytes());
    s.extend_from_slice(&[0; 8]); // code page, reserved
    s.extend_from_slice(blob);
    s
}

/// A PE32+ image with `rsrc` as its one section, at RVA 0x1000 and file
/// offset 0x200.
fn pe_file(rsrc: &[u8]) -> Vec<u8> {
    let len = u32::try_from(rsrc.len()).unwrap_or(u32::MAX);
    let raw = len.div_ceil(FILE_ALIGN) * FILE_ALIGN;
    let image = (RSRC_RVA + len).div_ceil(0x1000) * 0x1000;
    let mut f = Vec::with_capacity((FILE_ALIGN + raw) as usize);
    let u16le = |f: &mut Vec<u8>, v: u16| f.extend_from_slice(&v.to_le_bytes());
    let u32le = |f: &mut Vec<u8>, v: u32| f.extend_from_slice(&v.to_le_bytes());
    let u64le = |f: &mut Vec<u8>, v: u64| f.extend_from_slice(&v.to_le_bytes());
    // DOS header: "MZ", e_lfanew at 0x3C → 0x40.
    f.extend_from_slice(b"MZ");
    f.resize(0x3C, 0);
    u32le(&mut f, 0x40);
    f.extend_from_slice(b"PE\0\0");
    // COFF header.
    u16le(&mut f, 0x8664); // x86-64
    u16le(&mut f, 1); // sections
    u32le(&mut f, 0); // time stamp
    u32le(&mut f, 0); // symbol table
    u32le(&mut f, 0); // symbols
    u16le(&mut f, 240); // optional header size
    u16le(&mut f, 0x0022); // executable, large address aware
    // Optional header (PE32+).
    u16le(&mut f, 0x20B);
    f.extend_from_slice(&[14, 0]); // linker version
    u32le(&mut f, 0); // size of code
    u32le(&mut f, raw); // initialized data
    u32le(&mut f, 0); // uninitialized data
    u32le(&mut f, 0); // entry point
    u32le(&mut f, RSRC_RVA); // base of code
    u64le(&mut f, 0x1_4000_0000); // image base
    u32le(&mut f, 0x1000); // section alignment
    u32le(&mut f, FILE_ALIGN);
    for v in [6, 0, 0, 0, 6, 0] {
        u16le(&mut f, v); // OS, image, subsystem versions
    }
    u32le(&mut f, 0); // Win32VersionValue
    u32le(&mut f, image);
    u32le(&mut f, FILE_ALIGN); // size of headers
    u32le(&mut f, 0); // checksum
    u16le(&mut f, 3); // console subsystem
    u16le(&mut f, 0x8160); // DLL characteristics
    for v in [0x10_0000, 0x1000, 0x10_0000, 0x1000] {
        u64le(&mut f, v); // stack and heap reserve / commit
    }
    u32le(&mut f, 0); // loader flags
    u32le(&mut f, 16); // data directories
    for i in 0..16 {
        if i == 2 {
            u32le(&mut f, RSRC_RVA);
            u32le(&mut f, len);
        } else {
            u64le(&mut f, 0);
        }
    }
    // Section header.
    f.extend_from_slice(b".rsrc\0\0\0");
    u32le(&mut f, len); // virtual size
    u32le(&mut f, RSRC_RVA);
    u32le(&mut f, raw);
    u32le(&mut f, FILE_ALIGN); // file offset
    f.extend_from_slice(&[0; 12]); // relocations, line numbers
    u32le(&mut f, 0x4000_0040); // initialized data, readable
    f.resize(FILE_ALIGN as usize, 0);
    f.extend_from_slice(rsrc);
    f.resize((FILE_ALIGN + raw) as usize, 0);
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::OsFamily;
    use crate::platform::SimulatedHost;

    #[test]
    fn the_resolver_reads_the_versions_back() {
        let t = tempfile::tempdir().unwrap();
        let host = SimulatedHost::builder(OsFamily::Win32)
            .file(r"C:\App\a.exe", pe_with_version("1.2.3.4"))
            .file(r"C:\App\b.exe", pe_with_version("2.1"))
            .file(r"C:\App\c.exe", pe_with_version("2.0-beta"))
            .file(r"C:\App\d.exe", pe_without_version())
            .build(t.path())
            .unwrap();
        let read = |p: &str| crate::resolver::pe::file_version(&host, p);
        assert_eq!(read(r"C:\App\a.exe").as_deref(), Some("1.2.3.4"));
        assert_eq!(read(r"C:\App\b.exe").as_deref(), Some("2.1.0.0"));
        assert_eq!(read(r"C:\App\c.exe").as_deref(), Some("2.0-beta"));
        assert_eq!(read(r"C:\App\d.exe"), None);

        let t = tempfile::tempdir().unwrap();
        let mac = SimulatedHost::builder(OsFamily::Darwin)
            .file(
                "/Applications/App.app/Contents/Info.plist",
                plist_with_version("4.2.1"),
            )
            .file(
                "/Applications/Old.app/Contents/Info.plist",
                plist_with([("CFBundleVersion", "77")]),
            )
            .build(t.path())
            .unwrap();
        assert_eq!(
            crate::resolver::version::plist_version("/Applications/App.app", &mac).as_deref(),
            Some("4.2.1")
        );
        assert_eq!(
            crate::resolver::version::plist_version("/Applications/Old.app", &mac).as_deref(),
            Some("77")
        );
    }
}
