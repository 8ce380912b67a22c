//! Files a simulated host needs, made in code: a PE executable with (or
//! without) a version resource, and an XML `Info.plist`. The layouts are
//! the ones `wasmgate`'s readers accept (docs/simulated-host.md §3).

/// A minimal PE32+ executable (x86-64): headers, one `.rsrc` section and,
/// when `file_version` is given, an `RT_VERSION` resource whose
/// `VS_FIXEDFILEINFO` file version is those four 16-bit parts (the product
/// version is left at 0.0.0.0, so a reader of the wrong field sees
/// nothing). `None` gives a PE without any resource.
pub fn pe_executable(file_version: Option<[u16; 4]>) -> Vec<u8> {
    const FILE_ALIGN: u32 = 0x200;
    const SECTION_RVA: u32 = 0x1000;
    let rsrc = file_version
        .map(version_resource_section)
        .unwrap_or_default();
    let raw_size = (rsrc.len() as u32).div_ceil(FILE_ALIGN) * FILE_ALIGN;
    let mut b = vec![0u8; FILE_ALIGN as usize];
    // DOS header: "MZ", e_lfanew = 0x40.
    b[0..2].copy_from_slice(b"MZ");
    b[0x3C..0x40].copy_from_slice(&0x40u32.to_le_bytes());
    let mut h = Vec::new();
    h.extend_from_slice(b"PE\0\0");
    // IMAGE_FILE_HEADER
    h.extend_from_slice(&0x8664u16.to_le_bytes()); // Machine: x86-64
    h.extend_from_slice(&1u16.to_le_bytes()); // NumberOfSections
    h.extend_from_slice(&[0; 12]); // TimeDateStamp, PointerToSymbolTable, NumberOfSymbols
    h.extend_from_slice(&240u16.to_le_bytes()); // SizeOfOptionalHeader (112 + 16 * 8)
    h.extend_from_slice(&0x22u16.to_le_bytes()); // EXECUTABLE_IMAGE | LARGE_ADDRESS_AWARE
    // IMAGE_OPTIONAL_HEADER64
    h.extend_from_slice(&0x20Bu16.to_le_bytes()); // Magic: PE32+
    h.extend_from_slice(&[0; 2]); // linker version
    h.extend_from_slice(&0u32.to_le_bytes()); // SizeOfCode
    h.extend_from_slice(&raw_size.to_le_bytes()); // SizeOfInitializedData
    h.extend_from_slice(&[0; 12]); // SizeOfUninitializedData, AddressOfEntryPoint, BaseOfCode
    h.extend_from_slice(&0x1_4000_0000u64.to_le_bytes()); // ImageBase
    h.extend_from_slice(&0x1000u32.to_le_bytes()); // SectionAlignment
    h.extend_from_slice(&FILE_ALIGN.to_le_bytes()); // FileAlignment
    h.extend_from_slice(&6u16.to_le_bytes()); // MajorOperatingSystemVersion
    h.extend_from_slice(&[0; 6]); // minor OS, image version
    h.extend_from_slice(&6u16.to_le_bytes()); // MajorSubsystemVersion
    h.extend_from_slice(&[0; 6]); // minor subsystem, Win32VersionValue
    h.extend_from_slice(&(SECTION_RVA + 0x1000).to_le_bytes()); // SizeOfImage
    h.extend_from_slice(&FILE_ALIGN.to_le_bytes()); // SizeOfHeaders
    h.extend_from_slice(&0u32.to_le_bytes()); // CheckSum
    h.extend_from_slice(&3u16.to_le_bytes()); // Subsystem: console
    h.extend_from_slice(&0x8160u16.to_le_bytes()); // DllCharacteristics
    for v in [0x10_0000u64, 0x1000, 0x10_0000, 0x1000] {
        h.extend_from_slice(&v.to_le_bytes()); // stack and heap reserve / commit
    }
    h.extend_from_slice(&0u32.to_le_bytes()); // LoaderFlags
    h.extend_from_slice(&16u32.to_le_bytes()); // NumberOfRvaAndSizes
    for i in 0..16 {
        let (rva, size) = if i == 2 && !rsrc.is_empty() {
            (SECTION_RVA, rsrc.len() as u32)
        } else {
            (0, 0)
        };
        h.extend_from_slice(&rva.to_le_bytes());
        h.extend_from_slice(&size.to_le_bytes());
    }
    // IMAGE_SECTION_HEADER
    h.extend_from_slice(b".rsrc\0\0\0");
    h.extend_from_slice(&(rsrc.len().max(1) as u32).to_le_bytes()); // VirtualSize
    h.extend_from_slice(&SECTION_RVA.to_le_bytes()); // VirtualAddress
    h.extend_from_slice(&raw_size.to_le_bytes()); // SizeOfRawData
    h.extend_from_slice(&(if raw_size == 0 { 0 } else { FILE_ALIGN }).to_le_bytes());
    h.extend_from_slice(&[0; 12]); // relocations, line numbers
    h.extend_from_slice(&0x4000_0040u32.to_le_bytes()); // INITIALIZED_DATA | MEM_READ
    b[0x40..0x40 + h.len()].copy_from_slice(&h);
    let mut section = rsrc;
    section.resize(raw_size as usize, 0);
    b.extend_from_slice(&section);
    b
}

/// The `.rsrc` section (at RVA 0x1000) holding one `RT_VERSION` resource:
/// the type / name / language directory levels, one data entry, then the
/// `VS_VERSIONINFO` node with its `VS_FIXEDFILEINFO` value.
fn version_resource_section(v: [u16; 4]) -> Vec<u8> {
    fn directory(out: &mut Vec<u8>, id: u32, target: u32) {
        out.extend_from_slice(&[0; 12]); // Characteristics, TimeDateStamp, version
        out.extend_from_slice(&0u16.to_le_bytes()); // NumberOfNamedEntries
        out.extend_from_slice(&1u16.to_le_bytes()); // NumberOfIdEntries
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&target.to_le_bytes());
    }
    const SUBDIR: u32 = 0x8000_0000;
    let mut s = Vec::new();
    directory(&mut s, 16, SUBDIR | 24); // RT_VERSION → names at 24
    directory(&mut s, 1, SUBDIR | 48); // name 1 → languages at 48
    directory(&mut s, 0x409, 72); // en-US → data entry at 72
    let mut node = Vec::new();
    node.extend_from_slice(&0u16.to_le_bytes()); // wLength, set below
    node.extend_from_slice(&52u16.to_le_bytes()); // wValueLength
    node.extend_from_slice(&0u16.to_le_bytes()); // wType: binary
    for u in "VS_VERSION_INFO\0".encode_utf16() {
        node.extend_from_slice(&u.to_le_bytes());
    }
    while node.len() % 4 != 0 {
        node.push(0);
    }
    let ms = (u32::from(v[0]) << 16) | u32::from(v[1]);
    let ls = (u32::from(v[2]) << 16) | u32::from(v[3]);
    for x in [
        0xFEEF_04BDu32,
        0x0001_0000,
        ms,
        ls,
        0,
        0,
        0x3F,
        0,
        0x4,
        0x1,
        0,
        0,
        0,
    ] {
        node.extend_from_slice(&x.to_le_bytes());
    }
    let len = node.len() as u16;
    node[0..2].copy_from_slice(&len.to_le_bytes());
    // IMAGE_RESOURCE_DATA_ENTRY: RVA of the node (section RVA + 88), size.
    s.extend_from_slice(&(0x1000u32 + 88).to_le_bytes());
    s.extend_from_slice(&u32::from(len).to_le_bytes());
    s.extend_from_slice(&[0; 8]); // CodePage, Reserved
    debug_assert_eq!(s.len(), 88);
    s.extend_from_slice(&node);
    s
}

/// Parses `a.b.c.d` (one to four decimal parts, each at most 65535) for
/// [`pe_executable`]; `None` for anything else.
pub fn pe_version_parts(text: &str) -> Option<[u16; 4]> {
    let mut parts = [0u16; 4];
    for (n, p) in text.split('.').enumerate() {
        if n == 4 || p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        parts[n] = p.parse().ok()?;
    }
    Some(parts)
}

/// An XML property list holding `entries` as `<key>`/`<string>` pairs.
pub fn info_plist<'a>(entries: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    fn esc(s: &str) -> String {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    }
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \
         \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <plist version=\"1.0\">\n<dict>\n",
    );
    for (k, v) in entries {
        out.push_str(&format!(
            "\t<key>{}</key>\n\t<string>{}</string>\n",
            esc(k),
            esc(v)
        ));
    }
    out.push_str("</dict>\n</plist>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_parts() {
        assert_eq!(pe_version_parts("2.3.0.12594"), Some([2, 3, 0, 12594]));
        assert_eq!(pe_version_parts("2.3"), Some([2, 3, 0, 0]));
        assert_eq!(pe_version_parts("1.2.3.4.5"), None);
        assert_eq!(pe_version_parts("70000"), None);
        assert_eq!(pe_version_parts("1.x"), None);
    }

    #[test]
    fn the_pe_reader_of_the_host_reads_the_version_back() {
        let dir = tempfile::tempdir().unwrap();
        let with = dir.path().join("with.exe");
        let without = dir.path().join("without.exe");
        std::fs::write(&with, pe_executable(Some([2, 3, 0, 12594]))).unwrap();
        std::fs::write(&without, pe_executable(None)).unwrap();
        let p = wasmgate::platform::RealPlatform::new();
        assert_eq!(
            wasmgate::resolver::pe::file_version(&p, with.to_str().unwrap()).as_deref(),
            Some("2.3.0.12594")
        );
        assert_eq!(
            wasmgate::resolver::pe::file_version(&p, without.to_str().unwrap()),
            None
        );
    }
}
