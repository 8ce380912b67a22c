//! A probing test plugin. Its servers declare `version.kind: custom` on
//! linux; `probe_version` reads `VERSION` from the granted install folder.
//! The other servers try to leave the grant or exceed its caps, and report
//! what the host answered as their error text, so the tests can check each
//! refusal. `manifest()` also tries a read while nothing is granted and
//! puts the answer in a skill.

use wasmgate_sdk::{
    App, Grant, LogLevel, Manifest, OsFamily, Plugin, Requires, Server, Skill, VersionSource,
};

struct Probe;

const SERVERS: &[&str] = &[
    "version-file",
    "escape-dotdot",
    "escape-absolute",
    "escape-symlink",
    "list-huge",
    "read-huge",
    "spin",
];

impl Plugin for Probe {
    fn manifest() -> Manifest {
        // The raw import: the SDK lends a `Grant` only inside probe calls.
        let outside =
            match wasmgate_sdk::__bindings::wasmgate::plugin::host::read_file("VERSION", 100) {
                Ok(_) => "read succeeded".to_string(),
                Err(e) => format!("{e:?}"),
            };
        wasmgate_sdk::log(LogLevel::Info, "probe plugin manifest");
        let mut m = Manifest::new("probe", "0.1.0");
        for name in SERVERS {
            m = m.server(
                Server::stdio(*name, "/opt/vendor/bin/server")
                    .app(
                        App::linux()
                            .path("/opt/vendor/bin/vendor")
                            .version(VersionSource::Custom),
                    )
                    .requires(Requires::app()),
            );
        }
        // A probe that panics, for an application the tests install under
        // `$WASMGATE_PROBE_APP`, so the host's availability pass runs it.
        m = m.server(
            Server::stdio("panic-probe", "vendor")
                .app(
                    App::linux()
                        .path("$WASMGATE_PROBE_APP/vendor")
                        .version(VersionSource::Custom),
                )
                .requires(Requires::app().min_version("1.0")),
        );
        m.skill(Skill::new("outside-probe", outside))
    }

    fn probe_version(server: &str, os: OsFamily, grant: &Grant) -> Result<Option<String>, String> {
        let err = |e| format!("{e:?}");
        match server {
            "version-file" => {
                let text = grant.read_to_string("VERSION").map_err(err)?;
                let listing = grant.list_dir("").map_err(err)?;
                let names: Vec<_> = listing.iter().map(|e| e.name.as_str()).collect();
                let os = match os {
                    OsFamily::Linux => "linux",
                    OsFamily::Darwin => "darwin",
                    OsFamily::Win32 => "win32",
                };
                Ok(Some(format!("{} {os} {names:?}", text.trim())))
            }
            "escape-dotdot" => grant.read_file("../secret").map(|_| None).map_err(err),
            "escape-absolute" => grant.read_file("/etc/hostname").map(|_| None).map_err(err),
            "escape-symlink" => grant.read_file("link").map(|_| None).map_err(err),
            "list-huge" => grant.list_dir("many").map(|_| None).map_err(err),
            "read-huge" => grant.read_file("big.bin").map(|_| None).map_err(err),
            "panic-probe" => panic!("this probe always panics"),
            "spin" => loop {
                std::hint::black_box(());
            },
            _ => Ok(None),
        }
    }
}

wasmgate_sdk::export_plugin!(Probe);
