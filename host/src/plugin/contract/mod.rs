//! The contract this host implements, one module per version as Zed lays
//! out its extension API (`host/wit/since_v0.1.0/`, [`since_v0_1_0`]):
//! what a `.wasm` file is, which version its imports are built against —
//! checked before linking, against the world parsed from the same WIT the
//! bindings are generated from, so the error says why — and
//! [`PluginPre`] / [`Plugin`] over the versions.

pub(super) mod since_v0_1_0;
/// The newest version: the types the host's imports and stores speak.
pub(super) use since_v0_1_0 as latest;

use std::sync::LazyLock;

use super::failure::LoadFailure;
use super::store::StoreState;
use latest::wasmgate::plugin::types as wit;
use wasmtime::component::{Component, HasSelf, InstancePre, Linker};
use wasmtime::{Engine, Store};

/// One contract version's `plugin` world, as its WIT declares it.
pub(super) struct World {
    /// `wasmgate:plugin`: the package without its version.
    package: String,
    /// The version of its `package` line.
    version: semver::Version,
    /// The interfaces of that package the world imports (`types`, `host`).
    imports: Vec<String>,
}

impl World {
    /// The `plugin` world of `wit` (one package).
    fn parse(wit: &str) -> Result<World, String> {
        let mut resolve = wit_parser::Resolve::default();
        let pkg = resolve
            .push_str("plugin.wit", wit)
            .map_err(|e| format!("{e:#}"))?;
        let world = resolve
            .select_world(&[pkg], Some("plugin"))
            .map_err(|e| format!("{e:#}"))?;
        let name = &resolve.packages[pkg].name;
        let version = name
            .version
            .clone()
            .ok_or("the contract's package has no version")?;
        let imports = resolve.worlds[world]
            .imports
            .values()
            .filter_map(|item| match item {
                wit_parser::WorldItem::Interface { id, .. } => {
                    let iface = &resolve.interfaces[*id];
                    (iface.package == Some(pkg)).then(|| iface.name.clone())?
                }
                _ => None,
            })
            .collect();
        Ok(World {
            package: format!("{}:{}", name.namespace, name.name),
            version,
            imports,
        })
    }
}

/// A contract version this host serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Version {
    /// `wasmgate:plugin@0.1.x` ([`since_v0_1_0`]).
    V0_1_0,
}

impl Version {
    /// Every served version, oldest first.
    const ALL: [Version; 1] = [Version::V0_1_0];

    /// The newest served version.
    const LATEST: Version = Version::V0_1_0;

    /// The oldest contract version this version's bindings serve.
    fn min_version(self) -> semver::Version {
        match self {
            Version::V0_1_0 => since_v0_1_0::MIN_VERSION,
        }
    }

    /// Its world, parsed once from the WIT its bindings come from.
    fn world(self) -> &'static World {
        static V0_1_0: LazyLock<World> = LazyLock::new(|| built_in(since_v0_1_0::WIT));
        match self {
            Version::V0_1_0 => &V0_1_0,
        }
    }

    /// The served version for a component built against `found`: the
    /// newest whose series (same major, and same minor for 0.x — semver,
    /// as wasmtime's linker matches) holds `found` at or after its
    /// [`Version::min_version`].
    fn serving(found: &semver::Version) -> Option<Version> {
        Version::ALL.into_iter().rev().find(|v| {
            let min = v.min_version();
            min.major == found.major
                && (min.major != 0 || min.minor == found.minor)
                && *found >= min
        })
    }
}

/// The world of a WIT file built into this crate. It is this crate's own
/// text, parsed by a unit test too, so failing here is a build defect.
fn built_in(wit: &str) -> World {
    World::parse(wit).unwrap_or_else(|e| panic!("the contract's WIT built into wasmgate: {e}"))
}

/// The contract this host implements, `wasmgate:plugin@0.1.0`: the
/// package and version of the newest served version's WIT
/// (`host/wit/since_v0.1.0/plugin.wit`).
pub fn contract() -> &'static str {
    static CONTRACT: LazyLock<String> = LazyLock::new(|| {
        let w = Version::LATEST.world();
        format!("{}@{}", w.package, w.version)
    });
    &CONTRACT
}

/// The contract's package without a version, `wasmgate:plugin`.
pub(super) fn contract_package() -> &'static str {
    &Version::LATEST.world().package
}

/// Links every served version's `host` import (and WASI's, by the caller).
pub(super) fn add_to_linker(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    since_v0_1_0::Plugin::add_to_linker::<StoreState, HasSelf<StoreState>>(linker, |s| s)
}

/// A linked component of one served version, ready to instantiate.
pub(super) enum PluginPre {
    /// Built against 0.1.x.
    V0_1_0(since_v0_1_0::PluginPre<StoreState>),
}

impl PluginPre {
    /// The bindings of `version` over a linked component.
    pub(super) fn new(version: Version, pre: InstancePre<StoreState>) -> wasmtime::Result<Self> {
        Ok(match version {
            Version::V0_1_0 => PluginPre::V0_1_0(since_v0_1_0::PluginPre::new(pre)?),
        })
    }

    /// An instance in `store`.
    pub(super) fn instantiate(&self, store: &mut Store<StoreState>) -> wasmtime::Result<Plugin> {
        Ok(match self {
            PluginPre::V0_1_0(pre) => Plugin::V0_1_0(pre.instantiate(store)?),
        })
    }
}

/// An instance of one served version; its calls answer in the newest
/// version's types.
pub(super) enum Plugin {
    /// Built against 0.1.x.
    V0_1_0(since_v0_1_0::Plugin),
}

impl Plugin {
    /// The `manifest` export.
    pub(super) fn call_manifest(
        &self,
        store: &mut Store<StoreState>,
    ) -> wasmtime::Result<wit::Manifest> {
        match self {
            Plugin::V0_1_0(p) => p.call_manifest(store),
        }
    }

    /// The `probe-version` export.
    pub(super) fn call_probe_version(
        &self,
        store: &mut Store<StoreState>,
        server: &str,
        os: wit::OsFamily,
    ) -> wasmtime::Result<Result<Option<String>, String>> {
        match self {
            Plugin::V0_1_0(p) => p.call_probe_version(store, server, os),
        }
    }
}

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

/// The served version `component` is built against. Refuses another
/// contract version (naming both), an import of our package that the
/// version's world does not have, and imports outside the world before
/// linking, so the error says why rather than "not found".
pub(super) fn check_imports(
    engine: &Engine,
    component: &Component,
) -> Result<Version, LoadFailure> {
    let package = contract_package();
    let mut chosen: Option<Version> = None;
    for (name, _) in component.component_type().imports(engine) {
        if name.starts_with("wasi:") {
            // Linked (with nothing granted) or refused by the linker below.
            continue;
        }
        let Some(rest) = name.strip_prefix(package).and_then(|r| r.strip_prefix('/')) else {
            return Err(LoadFailure::UnsupportedImport(name.to_string()));
        };
        let (interface, version) = rest.split_once('@').unwrap_or((rest, ""));
        let refused = || LoadFailure::ContractVersion {
            found: if version.is_empty() {
                "(unversioned)".into()
            } else {
                version.into()
            },
        };
        let served = semver::Version::parse(version)
            .ok()
            .and_then(|v| Version::serving(&v))
            .ok_or_else(refused)?;
        if chosen.is_some_and(|c| c != served) {
            // Two versions of the contract in one component.
            return Err(refused());
        }
        if !served.world().imports.iter().any(|i| i == interface) {
            return Err(LoadFailure::UnsupportedImport(name.to_string()));
        }
        chosen = Some(served);
    }
    Ok(chosen.unwrap_or(Version::LATEST))
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
        let served = |v: &str| Version::serving(&semver::Version::parse(v).unwrap());
        assert_eq!(served("0.1.0"), Some(Version::V0_1_0));
        assert_eq!(served("0.1.3"), Some(Version::V0_1_0));
        assert_eq!(served("0.2.0"), None);
        assert_eq!(served("0.0.9"), None);
        assert_eq!(served("1.1.0"), None);
    }

    /// A component whose only imports are empty instances named `names`.
    fn importing(engine: &Engine, names: &[&str]) -> Component {
        use wasm_encoder::{
            ComponentImportSection, ComponentTypeRef, ComponentTypeSection, InstanceType,
        };
        let mut c = wasm_encoder::Component::new();
        let mut types = ComponentTypeSection::new();
        types.instance(&InstanceType::new());
        c.section(&types);
        let mut imports = ComponentImportSection::new();
        for name in names {
            imports.import(*name, ComponentTypeRef::Instance(0));
        }
        c.section(&imports);
        Component::new(engine, c.finish()).unwrap()
    }

    #[test]
    fn imports_are_checked_against_the_versions_world() {
        let engine = Engine::default();
        let check = |names: &[&str]| check_imports(&engine, &importing(&engine, names));
        assert_eq!(check(&[]).unwrap(), Version::LATEST);
        assert_eq!(
            check(&["wasmgate:plugin/types@0.1.0", "wasmgate:plugin/host@0.1.2"]).unwrap(),
            Version::V0_1_0
        );
        assert_eq!(
            check(&["wasi:cli/environment@0.2.0"]).unwrap(),
            Version::LATEST
        );
        // Our package, an interface the world does not have.
        assert_eq!(
            check(&["wasmgate:plugin/net@0.1.0"]),
            Err(LoadFailure::UnsupportedImport(
                "wasmgate:plugin/net@0.1.0".into()
            ))
        );
        assert_eq!(
            check(&["evil:net/sock"]),
            Err(LoadFailure::UnsupportedImport("evil:net/sock".into()))
        );
        let version = |found: &str| {
            Err(LoadFailure::ContractVersion {
                found: found.into(),
            })
        };
        assert_eq!(check(&["wasmgate:plugin/host@0.2.0"]), version("0.2.0"));
        assert_eq!(check(&["wasmgate:plugin/host"]), version("(unversioned)"));
        // Two versions of the contract in one component.
        assert_eq!(
            check(&["wasmgate:plugin/types@0.1.0", "wasmgate:plugin/host@0.2.0"]),
            version("0.2.0")
        );
    }

    /// Each version module's WIT parses, says the version its folder
    /// (`host/wit/since_v…`) and `MIN_VERSION` say, and its world imports the `host` interface.
    #[test]
    fn each_version_is_the_wit_it_is_built_from() {
        for v in Version::ALL {
            let w = World::parse(match v {
                Version::V0_1_0 => since_v0_1_0::WIT,
            })
            .unwrap();
            assert_eq!(w.package, "wasmgate:plugin");
            assert_eq!(w.version, v.min_version(), "{v:?}");
            assert!(w.imports.iter().any(|i| i == "host"), "{:?}", w.imports);
        }
        // One folder per version, named for its MIN_VERSION.
        let mut folders: Vec<String> =
            std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/wit"))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
        folders.sort();
        let expected: Vec<String> = Version::ALL
            .iter()
            .map(|v| format!("since_v{}", v.min_version()))
            .collect();
        assert_eq!(folders, expected);
        assert_eq!(contract(), "wasmgate:plugin@0.1.0");
        assert_eq!(contract_package(), "wasmgate:plugin");
    }
}
