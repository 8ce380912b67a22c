//! `wasmgate new NAME [--sdk PATH]`: scaffolds a plugin crate in a new
//! folder `NAME` of the current folder, outside any workspace (its
//! Cargo.toml has an empty `[workspace]` table):
//!
//! | file | what |
//! |---|---|
//! | `Cargo.toml` | a `cdylib` depending on `wasmgate-sdk`: `"0.1"` from crates.io, or with `--sdk PATH` a path dependency on that `guest-sdk` folder |
//! | `src/lib.rs` | the manifest: one stdio server `NAME` with a declaration for win32, darwin and linux, and one skill |
//! | `skills/NAME/SKILL.md` | every front-matter key the host reads (`name`, `description`, `requires_apps`) |
//! | `server/NAME-mcp` | a small stdio MCP server (Python 3, no packages) with one tool, `hello`, shipped beside the component |
//! | `README.md` | the build, check and status commands |
//! | `.gitignore` | `target/`, `dist/` |
//!
//! The templates are compiled into the binary (`host/templates/plugin/`).
//! Exit status: 0 created, 1 the folder exists or cannot be written, 2 a bad
//! NAME or `--sdk` PATH.

use std::path::{Path, PathBuf};

/// Arguments of `wasmgate new`.
#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The plugin's name: lowercase ASCII letters, digits and `-`, starting
    /// with a letter, at most 64 characters. It names the crate, the
    /// plugin, its server and its skill.
    pub name: String,
    /// A local `guest-sdk` folder (of a wasmgate checkout) to depend on by
    /// path, instead of `wasmgate-sdk = "0.1"` from crates.io.
    #[arg(long, value_name = "PATH")]
    pub sdk: Option<PathBuf>,
}

const CARGO_TOML: &str = include_str!("../../templates/plugin/Cargo.toml.in");
const LIB_RS: &str = include_str!("../../templates/plugin/lib.rs.in");
const SKILL_MD: &str = include_str!("../../templates/plugin/SKILL.md.in");
const SERVER: &str = include_str!("../../templates/plugin/server.py.in");
const README: &str = include_str!("../../templates/plugin/README.md.in");
const GITIGNORE: &str = include_str!("../../templates/plugin/gitignore.in");

/// Why a scaffold was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NewError {
    /// NAME is not a usable plugin and crate name (exit 2).
    #[error(
        "NAME {0:?} must be lowercase ASCII letters, digits and '-', start with a letter, not end with '-', at most 64 characters (e.g. my-app)"
    )]
    BadName(String),
    /// `--sdk` does not name a `wasmgate-sdk` crate folder (exit 2).
    #[error("--sdk {0}: {1}")]
    BadSdk(String, String),
    /// The target folder exists already (exit 1).
    #[error("{0} exists already; choose another NAME or remove it")]
    Exists(String),
    /// Writing failed (exit 1).
    #[error("{0}: cannot write: {1}")]
    Write(String, String),
}

impl NewError {
    /// The exit status of this error.
    pub fn exit_code(&self) -> u8 {
        match self {
            NewError::BadName(_) | NewError::BadSdk(..) => 2,
            NewError::Exists(_) | NewError::Write(..) => 1,
        }
    }
}

/// Runs `wasmgate new` in the current folder; prints the folder made.
pub fn run(args: &NewArgs) -> u8 {
    match scaffold(Path::new("."), &args.name, args.sdk.as_deref()) {
        Ok(files) => {
            println!("created {}/ with:", args.name);
            for f in files {
                println!("  {}", f.display());
            }
            println!(
                "next: cd {} and follow README.md (build, check, status)",
                args.name
            );
            0
        }
        Err(e) => {
            eprintln!("wasmgate new: {e}");
            e.exit_code()
        }
    }
}

/// Whether `name` can name the plugin, its crate, server and skill.
fn is_scaffold_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && !name.ends_with('-')
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// `my-app` → `MyApp` (the Rust type and the application's display name).
fn camel(name: &str) -> String {
    name.split('-')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// Largest `--sdk` Cargo.toml read, in bytes (1 MiB).
const MAX_SDK_MANIFEST_BYTES: u64 = 1024 * 1024;

/// The `wasmgate-sdk` dependency line and the README's note about it.
fn sdk_dependency(sdk: Option<&Path>) -> Result<(String, String), NewError> {
    let Some(sdk) = sdk else {
        return Ok((
            "# From crates.io. For a local wasmgate checkout write\n\
             # wasmgate-sdk = { path = \"/path/to/wasmgate/guest-sdk\" } (or run\n\
             # `wasmgate new NAME --sdk /path/to/wasmgate/guest-sdk`).\n\
             wasmgate-sdk = \"0.1\""
                .into(),
            "Its Cargo.toml depends on `wasmgate-sdk = \"0.1\"` from crates.io; to \
             build against a local wasmgate checkout, make it\n`wasmgate-sdk = { path = \
             \"/path/to/wasmgate/guest-sdk\" }` (what `wasmgate new NAME --sdk PATH` writes)."
                .into(),
        ));
    };
    let shown = sdk.display().to_string();
    let bad = |why: &str| NewError::BadSdk(shown.clone(), why.to_string());
    // Bounded, and a FIFO named Cargo.toml never blocks (docs/security.md,
    // "MCP client bounds").
    let text = match crate::manifest::files::read_plugin_file(
        sdk,
        Path::new("Cargo.toml"),
        MAX_SDK_MANIFEST_BYTES,
    ) {
        Ok(bytes) => String::from_utf8(bytes).unwrap_or_default(),
        Err(crate::manifest::files::PluginFileError::TooLarge { .. }) => {
            return Err(bad(&format!(
                "its Cargo.toml is larger than {MAX_SDK_MANIFEST_BYTES} bytes"
            )));
        }
        Err(_) => return Err(bad("is not a crate folder (no readable Cargo.toml)")),
    };
    if !text
        .lines()
        .any(|l| l.replace(' ', "") == "name=\"wasmgate-sdk\"")
    {
        return Err(bad(
            "is not the wasmgate-sdk crate (its Cargo.toml names another package)",
        ));
    }
    let abs = std::fs::canonicalize(sdk).map_err(|e| bad(&e.to_string()))?;
    let path = abs.to_string_lossy().into_owned();
    if path.chars().any(char::is_control) {
        return Err(bad("has control characters in its path"));
    }
    // A TOML basic string: `\` and `"` escaped (Windows paths).
    let quoted = path.replace('\\', "\\\\").replace('"', "\\\"");
    Ok((
        format!("wasmgate-sdk = {{ path = \"{quoted}\" }}"),
        format!(
            "Its Cargo.toml depends on the local SDK at `{path}` (`--sdk`); for the \
             published one write `wasmgate-sdk = \"0.1\"`."
        ),
    ))
}

/// Writes the scaffold for `name` into `parent/name`; returns the files
/// made, relative to that folder.
///
/// # Errors
/// [`NewError`]: a bad name or `--sdk` path, an existing folder, a write
/// that failed (what was written stays, so nothing of the user's is lost).
pub fn scaffold(parent: &Path, name: &str, sdk: Option<&Path>) -> Result<Vec<PathBuf>, NewError> {
    if !is_scaffold_name(name) {
        return Err(NewError::BadName(name.to_string()));
    }
    let (dependency, sdk_note) = sdk_dependency(sdk)?;
    let root = parent.join(name);
    if std::fs::symlink_metadata(&root).is_ok() {
        return Err(NewError::Exists(root.display().to_string()));
    }
    let fill = |t: &str| {
        t.replace("{{sdk_dependency}}", &dependency)
            .replace("{{sdk_note}}", &sdk_note)
            .replace("{{type_name}}", &camel(name))
            .replace("{{title}}", &camel(name))
            .replace("{{lib_name}}", &name.replace('-', "_"))
            .replace("{{tool_server}}", &crate::naming::sanitize(name))
            .replace("{{name}}", name)
    };
    let server = format!("server/{name}-mcp");
    let files: Vec<(String, String)> = vec![
        ("Cargo.toml".into(), fill(CARGO_TOML)),
        ("src/lib.rs".into(), fill(LIB_RS)),
        (format!("skills/{name}/SKILL.md"), fill(SKILL_MD)),
        (server.clone(), fill(SERVER)),
        ("README.md".into(), fill(README)),
        (".gitignore".into(), fill(GITIGNORE)),
    ];
    let write_err =
        |p: &Path, e: std::io::Error| NewError::Write(p.display().to_string(), e.to_string());
    // `create_dir` (not `_all`) for the top folder: one that appeared since
    // the check above is not written into.
    std::fs::create_dir(&root).map_err(|e| write_err(&root, e))?;
    let mut made = Vec::with_capacity(files.len());
    for (rel, text) in files {
        let path = root.join(&rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| write_err(dir, e))?;
        }
        std::fs::write(&path, text).map_err(|e| write_err(&path, e))?;
        #[cfg(unix)]
        if rel == server {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| write_err(&path, e))?;
        }
        made.push(PathBuf::from(rel));
    }
    Ok(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_refusals() {
        for good in ["a", "my-app", "x2", "blender-4"] {
            assert!(is_scaffold_name(good), "{good}");
        }
        for bad in [
            "",
            "My",
            "-a",
            "a-",
            "a_b",
            "1a",
            "a b",
            "a/b",
            &"a".repeat(65),
        ] {
            assert!(!is_scaffold_name(bad), "{bad}");
        }
        assert_eq!(camel("my-app"), "MyApp");
        let t = tempfile::tempdir().unwrap();
        assert!(matches!(
            scaffold(t.path(), "../x", None),
            Err(NewError::BadName(_))
        ));
        assert!(matches!(
            scaffold(t.path(), "x", Some(t.path())),
            Err(NewError::BadSdk(..))
        ));
        let sdk = t.path().join("big-sdk");
        std::fs::create_dir_all(&sdk).unwrap();
        std::fs::write(
            sdk.join("Cargo.toml"),
            vec![b'#'; MAX_SDK_MANIFEST_BYTES as usize + 1],
        )
        .unwrap();
        let e = scaffold(t.path(), "x", Some(&sdk)).unwrap_err().to_string();
        assert!(
            e.contains("big-sdk") && e.contains("Cargo.toml is larger than 1048576 bytes"),
            "{e}"
        );
        let files = scaffold(t.path(), "demo-app", None).unwrap();
        assert!(files.contains(&PathBuf::from("skills/demo-app/SKILL.md")));
        let cargo = std::fs::read_to_string(t.path().join("demo-app/Cargo.toml")).unwrap();
        assert!(cargo.contains("wasmgate-sdk = \"0.1\""), "{cargo}");
        assert!(cargo.contains("\n[workspace]\n"), "{cargo}");
        // The way to `cargo test` it is there, commented out, so `cargo
        // build` never resolves the host's dependencies.
        assert!(
            cargo.contains("# [dev-dependencies]\n# wasmgate = ")
                && cargo.contains("# [profile.dev.package.\"*\"]\n# opt-level = 1")
                && cargo.contains("\"Test a plugin\""),
            "{cargo}"
        );
        let lib = std::fs::read_to_string(t.path().join("demo-app/src/lib.rs")).unwrap();
        assert!(
            lib.contains("struct DemoApp;") && !lib.contains("{{"),
            "{lib}"
        );
        assert_eq!(
            scaffold(t.path(), "demo-app", None).unwrap_err(),
            NewError::Exists(t.path().join("demo-app").display().to_string())
        );
    }
}
