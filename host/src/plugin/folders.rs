//! What in a plugins folder is a plugin: the one scan of the folders,
//! shared by [`super::PluginRuntime::load_dirs`] and the host's load, so both
//! see the same plugins (`docs/design.md` §3). Which `*.wasm` files are
//! components, and their `${PLUGIN_DIR}`, is the rule described on
//! [`super::PluginRuntime`] ("Plugin folders"). Besides them: a `plugin.yaml`
//! or `plugin.json` directly in a plugins folder makes the folder a
//! manifest plugin, and so does one in a subfolder without a component
//! (next to a component, that file is documentation, not a second plugin).

use super::{LoadFailure, PluginLoadError};
use crate::manifest::manifest_file;
use std::path::{Path, PathBuf};

/// The plugins found in a list of plugin folders.
#[derive(Debug, Default)]
pub(crate) struct PluginFolders {
    /// Component files with their `${PLUGIN_DIR}`, in load order.
    pub(crate) components: Vec<(PathBuf, PathBuf)>,
    /// Manifest files (`plugin.yaml` / `plugin.json`) of manifest plugins.
    pub(crate) manifests: Vec<PathBuf>,
    /// Folders that could not be listed, with the OS's reason.
    pub(crate) unreadable: Vec<(PathBuf, std::io::Error)>,
}

impl PluginFolders {
    /// Each folder that could not be listed as a load error naming it.
    pub(crate) fn unreadable_errors(&self) -> impl Iterator<Item = PluginLoadError> + '_ {
        self.unreadable.iter().map(|(dir, e)| PluginLoadError {
            file: dir.clone(),
            reason: LoadFailure::Io(e.to_string()),
        })
    }
}

/// Lists `dirs` once (each folder and its subfolders, one level down).
pub(crate) fn scan(dirs: &[PathBuf]) -> PluginFolders {
    let mut found = PluginFolders::default();
    for dir in dirs {
        let entries = match sorted_entries(dir) {
            Ok(e) => e,
            Err(e) => {
                found.unreadable.push((dir.clone(), e));
                continue;
            }
        };
        if let Some(m) = manifest_file(dir) {
            found.manifests.push(m);
        }
        found.components.extend(
            entries
                .iter()
                .filter(|p| is_wasm(p))
                .map(|p| (p.clone(), dir.clone())),
        );
        for sub in entries.iter().filter(|p| p.is_dir()) {
            let Ok(inner) = sorted_entries(sub) else {
                continue;
            };
            let before = found.components.len();
            found.components.extend(
                inner
                    .into_iter()
                    .filter(|f| is_wasm(f))
                    .map(|f| (f, sub.clone())),
            );
            if found.components.len() == before
                && let Some(m) = manifest_file(sub)
            {
                found.manifests.push(m);
            }
        }
    }
    found
}

fn sorted_entries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    Ok(entries)
}

/// Any entry named `*.wasm` but a folder, not following links: a link or
/// FIFO is then refused by name by the loader, not skipped silently.
fn is_wasm(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "wasm")
        && std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_and_manifests_in_name_order_one_level_down() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().to_path_buf();
        let write = |p: &str| {
            let p = root.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, b"x").unwrap();
        };
        write("b.wasm");
        write("a.wasm");
        // A component's folder: its plugin.yaml is documentation.
        write("git/git.wasm");
        write("git/plugin.yaml");
        // A manifest plugin.
        write("blender/plugin.yaml");
        // Two levels down is not looked at.
        write("deep/er/x.wasm");
        // A folder named *.wasm is not a component.
        std::fs::create_dir_all(root.join("odd.wasm")).unwrap();
        let found = scan(std::slice::from_ref(&root));
        let names: Vec<_> = found
            .components
            .iter()
            .map(|(f, d)| {
                (
                    f.strip_prefix(&root).unwrap().display().to_string(),
                    d.strip_prefix(&root).unwrap().display().to_string(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("a.wasm".to_string(), String::new()),
                ("b.wasm".to_string(), String::new()),
                ("git/git.wasm".to_string(), "git".to_string()),
            ]
        );
        assert_eq!(found.manifests, [root.join("blender/plugin.yaml")]);
        assert!(found.unreadable.is_empty());

        let missing = root.join("missing");
        let found = scan(std::slice::from_ref(&missing));
        assert_eq!(found.unreadable.len(), 1);
        assert_eq!(found.unreadable[0].0, missing);
    }
}
