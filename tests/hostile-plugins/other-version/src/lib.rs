//! A plugin built against `wasmgate:plugin@0.2.0`: `build.rs` writes the
//! contract (`guest-sdk/wit/plugin.wit`) with only its version changed. It calls the `host` import
//! so the versioned interface is certainly among its imports.

wit_bindgen::generate!({
    path: concat!(env!("OUT_DIR"), "/wit"),
    world: "plugin",
});

struct Other;

impl Guest for Other {
    fn manifest() -> Manifest {
        let _ = wasmgate::plugin::host::host_os();
        Manifest {
            name: "other-version".into(),
            version: "0.2.0".into(),
            servers: vec![],
            skills: vec![],
        }
    }

    fn probe_version(_: String, _: OsFamily) -> Result<Option<String>, String> {
        Ok(None)
    }
}

export!(Other);
