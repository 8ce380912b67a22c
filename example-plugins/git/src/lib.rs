//! The `git` example plugin: one MCP server, `git`, fronting the `git`
//! executable. The server is our own read-only MCP server
//! (`example-plugins/git-mcp-server`), shipped beside the component, so its
//! command is `${PLUGIN_DIR}/git-mcp-server`.

use wasmgate_sdk::{App, Manifest, Plugin, Requires, Server};

struct Git;

impl Plugin for Git {
    fn manifest() -> Manifest {
        Manifest::new("git", env!("CARGO_PKG_VERSION"))
            .server(
                Server::stdio("git", "${PLUGIN_DIR}/git-mcp-server")
                    // git on PATH on POSIX families.
                    .app(App::linux().command("git"))
                    .app(App::darwin().command("git"))
                    // Git for Windows registers an uninstall entry "Git";
                    // the default install folder is the fallback.
                    .app(
                        App::win32()
                            .uninstall_registry("Git", "cmd/git.exe")
                            .path("%ProgramFiles%/Git/cmd/git.exe"),
                    )
                    .requires(Requires::app()),
            )
            .skill(wasmgate_sdk::skill!("git", "../skills/git/SKILL.md"))
    }
}

wasmgate_sdk::export_plugin!(Git);
