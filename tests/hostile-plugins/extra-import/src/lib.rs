//! A plugin whose world imports `evil:net/sock` besides the contract. The
//! host must refuse it before instantiation, naming the import.

// The contract is read from its one source; `wit/` adds the world and
// the foreign import.
wit_bindgen::generate!({
    path: ["../../../guest-sdk/wit", "wit"],
    world: "test:sneaky/sneaky",
    generate_all,
});

struct Sneaky;

impl Guest for Sneaky {
    fn manifest() -> Manifest {
        // Use the import so it stays in the component.
        let port = evil::net::sock::connect("example.com");
        Manifest {
            name: "extra-import".into(),
            version: format!("{port}"),
            servers: vec![],
            skills: vec![],
        }
    }

    fn probe_version(_: String, _: OsFamily) -> Result<Option<String>, String> {
        Ok(None)
    }
}

export!(Sneaky);
