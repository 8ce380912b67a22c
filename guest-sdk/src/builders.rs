//! Typed builders for manifests, application declarations, servers and skills.
//! Each produces the WIT records of `wasmgate:plugin/types@0.1.0`; the
//! vocabulary is that of `docs/declarations.md` §1 and `docs/mcp-client.md` §1.

use crate::wit;
use crate::{GpuVendor, OsFamily, Presence, VersionSource};

/// Everything a plugin tells the host (`manifest` in the WIT).
#[derive(Debug, Clone)]
pub struct Manifest {
    name: String,
    version: String,
    servers: Vec<Server>,
    skills: Vec<Skill>,
}

impl Manifest {
    /// A manifest for plugin `name` at `version` (use
    /// `env!("CARGO_PKG_VERSION")` to follow the crate).
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Manifest {
            name: name.into(),
            version: version.into(),
            servers: Vec::new(),
            skills: Vec::new(),
        }
    }

    /// Adds an MCP server; servers keep the order they are added in.
    pub fn server(mut self, server: Server) -> Self {
        self.servers.push(server);
        self
    }

    /// Adds a skill (see [`crate::skill!`] to embed a SKILL.md file).
    pub fn skill(mut self, skill: Skill) -> Self {
        self.skills.push(skill);
        self
    }

    /// The WIT record the `manifest` export returns.
    pub fn into_wit(self) -> wit::Manifest {
        wit::Manifest {
            name: self.name,
            version: self.version,
            servers: self.servers.into_iter().map(Server::into_wit).collect(),
            skills: self.skills.into_iter().map(Skill::into_wit).collect(),
        }
    }
}

/// A skill: a SKILL.md document, front matter included. The front matter's
/// `requires_apps:` names servers whose declarations must be offerable for
/// the host to show the skill.
#[derive(Debug, Clone)]
pub struct Skill {
    name: String,
    markdown: String,
}

impl Skill {
    /// A skill named `name` (unique within the plugin) with the whole
    /// SKILL.md text.
    pub fn new(name: impl Into<String>, markdown: impl Into<String>) -> Self {
        Skill {
            name: name.into(),
            markdown: markdown.into(),
        }
    }

    fn into_wit(self) -> wit::Skill {
        wit::Skill {
            name: self.name,
            markdown: self.markdown,
        }
    }
}

/// A server started as a child process speaking MCP over stdio.
/// `${PLUGIN_DIR}` in the command, arguments and environment values is the
/// folder the component was loaded from.
#[derive(Debug, Clone)]
pub struct Stdio {
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    env_passthrough: Vec<String>,
}

impl Stdio {
    /// Runs `command` (a bare name on PATH, or a path such as
    /// `${PLUGIN_DIR}/my-server`).
    pub fn new(command: impl Into<String>) -> Self {
        Stdio {
            command: command.into(),
            args: Vec::new(),
            env: Vec::new(),
            env_passthrough: Vec::new(),
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the child.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Lets the child also see the host's variable `name`.
    pub fn env_passthrough(mut self, name: impl Into<String>) -> Self {
        self.env_passthrough.push(name.into());
        self
    }
}

/// A server reached over streamable HTTP.
#[derive(Debug, Clone)]
pub struct Http {
    url: String,
    headers: Vec<(String, String)>,
}

impl Http {
    /// The endpoint `url`.
    pub fn new(url: impl Into<String>) -> Self {
        Http {
            url: url.into(),
            headers: Vec::new(),
        }
    }

    /// Adds a header sent with every request.
    pub fn header(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((key.into(), value.into()));
        self
    }
}

/// How the host reaches a server.
#[derive(Debug, Clone)]
pub enum Transport {
    /// A child process over stdio.
    Stdio(Stdio),
    /// Streamable HTTP.
    Http(Http),
    /// The running application's endpoint, read from its `server_json`
    /// (needs a [`ServerJson`] liveness block).
    AppEndpoint,
}

impl From<Stdio> for Transport {
    fn from(s: Stdio) -> Self {
        Transport::Stdio(s)
    }
}

impl From<Http> for Transport {
    fn from(h: Http) -> Self {
        Transport::Http(h)
    }
}

fn pairs(v: Vec<(String, String)>) -> Vec<wit::Pair> {
    v.into_iter()
        .map(|(key, value)| wit::Pair { key, value })
        .collect()
}

impl Transport {
    fn into_wit(self) -> wit::Transport {
        match self {
            Transport::Stdio(s) => wit::Transport::Stdio(wit::StdioServer {
                command: s.command,
                args: s.args,
                env: pairs(s.env),
                env_passthrough: s.env_passthrough,
            }),
            Transport::Http(h) => wit::Transport::Http(wit::HttpServer {
                url: h.url,
                headers: pairs(h.headers),
            }),
            Transport::AppEndpoint => wit::Transport::AppEndpoint,
        }
    }
}

/// One MCP server the plugin brings (`mcp_servers.<name>`).
#[derive(Debug, Clone)]
pub struct Server {
    name: String,
    transport: Transport,
    timeout_seconds: Option<u32>,
    connect_timeout_seconds: Option<u32>,
    app: Vec<App>,
    requires: Option<Requires>,
}

impl Server {
    /// A server named `name` (its tools become `mcp_<name>_<tool>`).
    pub fn new(name: impl Into<String>, transport: impl Into<Transport>) -> Self {
        Server {
            name: name.into(),
            transport: transport.into(),
            timeout_seconds: None,
            connect_timeout_seconds: None,
            app: Vec::new(),
            requires: None,
        }
    }

    /// Shorthand for `Server::new(name, Stdio::new(command))`; add arguments
    /// with [`Server::args`].
    pub fn stdio(name: impl Into<String>, command: impl Into<String>) -> Self {
        Server::new(name, Stdio::new(command))
    }

    /// Shorthand for `Server::new(name, Http::new(url))`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> Self {
        Server::new(name, Http::new(url))
    }

    /// A server whose URL and token come from the running application's
    /// `server_json` (see [`App::liveness`]).
    pub fn app_endpoint(name: impl Into<String>) -> Self {
        Server::new(name, Transport::AppEndpoint)
    }

    /// Appends arguments to a stdio server's command.
    ///
    /// # Panics
    /// When the server is not a stdio server: a plugin bug caught the first
    /// time `manifest()` runs (the host reports the trap).
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        match &mut self.transport {
            Transport::Stdio(s) => s.args.extend(args.into_iter().map(Into::into)),
            _ => panic!("Server::args on a server that is not stdio"),
        }
        self
    }

    /// Per tool call timeout in seconds (host default 120).
    pub fn timeout_seconds(mut self, seconds: u32) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Connect and discovery timeout in seconds (host default 60).
    pub fn connect_timeout_seconds(mut self, seconds: u32) -> Self {
        self.connect_timeout_seconds = Some(seconds);
        self
    }

    /// Adds the application block for one OS family (`app.<os>`); each
    /// family at most once (the host rejects duplicates).
    pub fn app(mut self, app: App) -> Self {
        self.app.push(app);
        self
    }

    /// Sets `requires:`.
    pub fn requires(mut self, requires: Requires) -> Self {
        self.requires = Some(requires);
        self
    }

    fn into_wit(self) -> wit::McpServer {
        wit::McpServer {
            name: self.name,
            transport: self.transport.into_wit(),
            timeout_seconds: self.timeout_seconds,
            connect_timeout_seconds: self.connect_timeout_seconds,
            app: self.app.into_iter().map(App::into_wit).collect(),
            requires: self.requires.map(Requires::into_wit),
        }
    }
}

/// The `server_json` runtime file a running application writes
/// (`docs/declarations.md` §7). Unset keys take the host defaults
/// (`pid`, `http`, `token`, `/mcp`).
#[derive(Debug, Clone)]
pub struct ServerJson {
    inner: wit::ServerJson,
}

impl ServerJson {
    /// The file at rooted `path` (`~/…`, `$VAR/…`, `/…`; `%VAR%` on win32).
    pub fn new(path: impl Into<String>) -> Self {
        ServerJson {
            inner: wit::ServerJson {
                path: path.into(),
                pid_key: None,
                url_key: None,
                token_key: None,
                endpoint_path: None,
            },
        }
    }

    /// Key of the process id (default `pid`).
    pub fn pid_key(mut self, key: impl Into<String>) -> Self {
        self.inner.pid_key = Some(key.into());
        self
    }

    /// Key of the loopback base URL (default `http`).
    pub fn url_key(mut self, key: impl Into<String>) -> Self {
        self.inner.url_key = Some(key.into());
        self
    }

    /// Key of the bearer token (default `token`).
    pub fn token_key(mut self, key: impl Into<String>) -> Self {
        self.inner.token_key = Some(key.into());
        self
    }

    /// Path of the MCP endpoint on that URL (default `/mcp`).
    pub fn endpoint_path(mut self, path: impl Into<String>) -> Self {
        self.inner.endpoint_path = Some(path.into());
        self
    }
}

/// How to find one application on one OS family (`app.<os>`).
/// Presence defaults to `executable`, version source to `none`, liveness to
/// none; locations are tried in the order they are added.
#[derive(Debug, Clone)]
pub struct App {
    os: OsFamily,
    presence: Presence,
    location: Vec<wit::Location>,
    version: VersionSource,
    liveness: wit::Liveness,
}

impl App {
    /// A block for `os`.
    pub fn new(os: OsFamily) -> Self {
        App {
            os,
            presence: Presence::Executable,
            location: Vec::new(),
            version: VersionSource::None,
            liveness: wit::Liveness::None,
        }
    }

    /// `app.win32`.
    pub fn win32() -> Self {
        App::new(OsFamily::Win32)
    }

    /// `app.darwin`.
    pub fn darwin() -> Self {
        App::new(OsFamily::Darwin)
    }

    /// `app.linux`.
    pub fn linux() -> Self {
        App::new(OsFamily::Linux)
    }

    /// Sets the presence (`executable` by default).
    pub fn presence(mut self, presence: Presence) -> Self {
        self.presence = presence;
        self
    }

    /// `presence: bundle` — a found copy must be a macOS bundle folder.
    pub fn bundle(self) -> Self {
        self.presence(Presence::Bundle)
    }

    /// A rooted path location (`/…`, `~/…`, `$VAR/…`; on win32 also `C:\…`
    /// and `%VAR%\…`). One `*` per segment stands for a versioned folder.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.location.push(wit::Location::Path(path.into()));
        self
    }

    /// A bare executable name looked up on PATH.
    pub fn command(mut self, name: impl Into<String>) -> Self {
        self.location.push(wit::Location::Command(name.into()));
        self
    }

    /// win32: uninstall entries whose `DisplayName` starts with
    /// `display_name_prefix`, joined with `file` (relative to the install folder).
    pub fn uninstall_registry(
        mut self,
        display_name_prefix: impl Into<String>,
        file: impl Into<String>,
    ) -> Self {
        self.location
            .push(wit::Location::UninstallRegistry(wit::UninstallLocation {
                display_name_prefix: display_name_prefix.into(),
                file: file.into(),
            }));
        self
    }

    /// darwin: a bundle name (`Blender.app`) in `/Applications`, `~/Applications`.
    pub fn app_bundle(mut self, name: impl Into<String>) -> Self {
        self.location.push(wit::Location::AppBundle(name.into()));
        self
    }

    /// linux: a flatpak application id (`org.blender.Blender`).
    pub fn flatpak(mut self, app_id: impl Into<String>) -> Self {
        self.location.push(wit::Location::Flatpak(app_id.into()));
        self
    }

    /// linux: a snap name.
    pub fn snap(mut self, name: impl Into<String>) -> Self {
        self.location.push(wit::Location::Snap(name.into()));
        self
    }

    /// Where the version comes from (`none` by default).
    pub fn version(mut self, version: VersionSource) -> Self {
        self.version = version;
        self
    }

    /// Checks liveness through the application's `server_json` file.
    pub fn liveness(mut self, server_json: ServerJson) -> Self {
        self.liveness = wit::Liveness::ServerJson(server_json.inner);
        self
    }

    fn into_wit(self) -> wit::AppDef {
        wit::AppDef {
            os: self.os,
            presence: self.presence,
            location: self.location,
            version: self.version,
            liveness: self.liveness,
        }
    }
}

/// What a server needs (`requires:`).
#[derive(Debug, Clone, Default)]
pub struct Requires {
    app: bool,
    min_version: Option<String>,
    gpu: Option<GpuVendor>,
}

impl Requires {
    /// Nothing required yet (add with the methods below).
    pub fn new() -> Self {
        Requires::default()
    }

    /// `app: true` — the application of the `app` blocks must be found.
    pub fn app() -> Self {
        Requires {
            app: true,
            ..Requires::default()
        }
    }

    /// `gpu: <vendor>` alone.
    pub fn gpu(vendor: GpuVendor) -> Self {
        Requires {
            gpu: Some(vendor),
            ..Requires::default()
        }
    }

    /// Adds `app: true`.
    pub fn with_app(mut self) -> Self {
        self.app = true;
        self
    }

    /// Adds a dotted numeric minimum version (`"3.0"`); needs `app: true`.
    pub fn min_version(mut self, version: impl Into<String>) -> Self {
        self.min_version = Some(version.into());
        self
    }

    /// Adds a GPU vendor that must be present.
    pub fn with_gpu(mut self, vendor: GpuVendor) -> Self {
        self.gpu = Some(vendor);
        self
    }

    fn into_wit(self) -> wit::Requires {
        wit::Requires {
            app: self.app,
            min_version: self.min_version,
            gpu: self.gpu,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_produce_the_wit_records_in_order() {
        let m = Manifest::new("p", "1.0")
            .server(
                Server::stdio("s", "${PLUGIN_DIR}/srv")
                    .args(["--x"])
                    .timeout_seconds(5)
                    .app(
                        App::win32()
                            .uninstall_registry("Thing", "bin/thing.exe")
                            .path("%ProgramFiles%/Thing/thing.exe")
                            .version(VersionSource::PeResource),
                    )
                    .app(App::darwin().bundle().app_bundle("Thing.app"))
                    .requires(
                        Requires::app()
                            .min_version("2.3")
                            .with_gpu(GpuVendor::Nvidia),
                    ),
            )
            .skill(Skill::new("k", "---\nrequires_apps: [s]\n---\n"))
            .into_wit();
        assert_eq!(m.servers.len(), 1);
        let s = &m.servers[0];
        assert!(matches!(&s.transport, wit::Transport::Stdio(st) if st.args == ["--x"]));
        assert_eq!(s.timeout_seconds, Some(5));
        assert_eq!(s.app.len(), 2);
        assert_eq!(s.app[0].location.len(), 2);
        assert!(matches!(s.app[0].version, VersionSource::PeResource));
        assert!(matches!(s.app[1].presence, Presence::Bundle));
        let r = s.requires.as_ref().unwrap();
        assert!(r.app);
        assert_eq!(r.min_version.as_deref(), Some("2.3"));
        assert_eq!(m.skills[0].name, "k");
    }
}
