//! What a `.wasm` file is and whether its imports fit the contract this
//! host implements (`guest-sdk/wit/plugin.wit`), checked before linking so
//! the error says why.

use super::failure::LoadFailure;
use wasmtime::Engine;
use wasmtime::component::Component;

/// The contract this host implements (`guest-sdk/wit/plugin.wit`).
pub const CONTRACT: &str = "wasmgate:plugin@0.1.0";
pub(super) const CONTRACT_PACKAGE: &str = "wasmgate:plugin";
pub(super) const CONTRACT_VERSION: &str = "0.1.0";

/// What the first 8 bytes of a file say it is.
pub(super) enum WasmKind {
    Empty,
    NotWasm,
    Core,
    Component,
}

/// The binary header is `\0asm` then a 16-bit version and a 16-bit layer:
/// layer 0 is a core module, layer 1 a component (component-model binary
/// format). Anything with the magic but an unknown layer goes to wasmtime,
/// whose error names what is wrong.
pub(super) fn wasm_layer(bytes: &[u8]) -> WasmKind {
    if bytes.is_empty() {
        return WasmKind::Empty;
    }
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return WasmKind::NotWasm;
    }
    match u16::from_le_bytes([bytes[6], bytes[7]]) {
        0 => WasmKind::Core,
        _ => WasmKind::Component,
    }
}

/// Refuses another contract version (naming both) and imports outside the
/// world before linking, so the error says why rather than "not found".
pub(super) fn check_imports(engine: &Engine, component: &Component) -> Result<(), LoadFailure> {
    let ty = component.component_type();
    for (name, _) in ty.imports(engine) {
        if name.starts_with("wasi:") {
            // Linked (with nothing granted) or refused by the linker below.
            continue;
        }
        if let Some(rest) = name
            .strip_prefix(CONTRACT_PACKAGE)
            .and_then(|r| r.strip_prefix('/'))
        {
            let version = rest.split_once('@').map(|(_, v)| v).unwrap_or("");
            if !same_contract(version) {
                return Err(LoadFailure::ContractVersion {
                    found: if version.is_empty() {
                        "(unversioned)".into()
                    } else {
                        version.into()
                    },
                });
            }
            continue;
        }
        return Err(LoadFailure::UnsupportedImport(name.to_string()));
    }
    Ok(())
}

/// 0.x versions are compatible only within the same minor (semver), which
/// is also what wasmtime's linker matches.
fn same_contract(version: &str) -> bool {
    let ours: Vec<&str> = CONTRACT_VERSION.split('.').collect();
    let theirs: Vec<&str> = version.split('.').collect();
    theirs.len() == 3 && theirs[0] == ours[0] && theirs[1] == ours[1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_kinds() {
        assert!(matches!(wasm_layer(b""), WasmKind::Empty));
        assert!(matches!(wasm_layer(b"hello world"), WasmKind::NotWasm));
        assert!(matches!(wasm_layer(b"\0asm\x01\0\0\0"), WasmKind::Core));
        assert!(matches!(
            wasm_layer(b"\0asm\x0d\0\x01\0"),
            WasmKind::Component
        ));
    }

    #[test]
    fn contract_versions() {
        assert!(same_contract("0.1.0"));
        assert!(same_contract("0.1.3"));
        assert!(!same_contract("0.2.0"));
        assert!(!same_contract("1.1.0"));
        assert!(!same_contract(""));
    }
}
