//! The `blender` example plugin: the community `blender-mcp` server (run with
//! `uvx blender-mcp`) in front of Blender, with a full multi-OS application
//! declaration and `min_version: "3.0"`.

use wasmgate_sdk::{App, Manifest, Plugin, Requires, Server, VersionSource};

struct Blender;

impl Plugin for Blender {
    fn manifest() -> Manifest {
        Manifest::new("blender", env!("CARGO_PKG_VERSION"))
            .server(
                Server::stdio("blender", "uvx")
                    .args(["blender-mcp"])
                    // Linux: a distribution package on PATH, the Flathub
                    // build, or the snap. No version source: a linux copy
                    // cannot be version-checked (docs/declarations.md §2).
                    .app(
                        App::linux()
                            .command("blender")
                            .flatpak("org.blender.Blender")
                            .snap("blender"),
                    )
                    // macOS: the bundle; its Info.plist carries the version.
                    .app(
                        App::darwin()
                            .bundle()
                            .app_bundle("Blender.app")
                            .version(VersionSource::Plist),
                    )
                    // Windows: the installer's uninstall entry ("Blender" or
                    // "Blender 4.2"), then the default versioned folder; the
                    // executable's PE version resource gives the version.
                    .app(
                        App::win32()
                            .uninstall_registry("Blender", "blender.exe")
                            .path("%ProgramFiles%/Blender Foundation/Blender */blender.exe")
                            .version(VersionSource::PeResource),
                    )
                    .requires(Requires::app().min_version("3.0")),
            )
            .skill(wasmgate_sdk::skill!(
                "blender",
                "../skills/blender/SKILL.md"
            ))
    }
}

wasmgate_sdk::export_plugin!(Blender);
