//! The main job end to end (`cargo xtask demo`, README "Set up"): the real
//! `wasmgate` binary over the example plugins built from source, on this
//! machine, with real git.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use wasmgate_conformance::{
    git, git_repo, plugins_dir, status_server, stdout_json, wasmgate_dev, workspace_root,
};

fn wasmgate(args: &[&str]) -> Output {
    wasmgate_dev()
        .args(args)
        .current_dir(workspace_root())
        .env_remove("WASMGATE_PLUGINS")
        .output()
        .expect("run wasmgate")
}

fn which_git() -> PathBuf {
    let path = std::env::var_os("PATH").expect("PATH is set");
    std::env::split_paths(&path)
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .expect("git is on PATH on this machine")
}

#[test]
fn status_reports_each_example_plugin_as_this_machine_allows() {
    let plugins = plugins_dir();
    let out = wasmgate(&["status", "--json", "--plugins", plugins.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let st = stdout_json(&out);

    let git = status_server(&st, "git");
    assert_eq!(git["availability"]["state"], "available", "{git:#}");
    assert_eq!(
        git["availability"]["path"],
        which_git().display().to_string(),
        "the real git path"
    );
    assert_eq!(git["connection"], "connected", "{git:#}");
    let tools: Vec<&str> = git["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.iter().filter(|t| t.starts_with("mcp_git_")).count() >= 2,
        "{tools:?}"
    );

    let blender = status_server(&st, "blender");
    assert_eq!(
        blender["availability"]["state"], "missing_app",
        "{blender:#}"
    );
    assert_eq!(blender["connection"], "gated");
    assert!(
        blender["availability"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not installed")),
        "{blender:#}"
    );

    // The gpu plugin's state follows from this machine's gpu_class().
    let gpu_class = st["gpu_class"].as_str().unwrap();
    let gpu = st["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["plugin"] == "gpu-render")
        .expect("the gpu-render plugin's server");
    let expected = if matches!(gpu_class, "nvidia" | "unknown") {
        "no_requirements"
    } else {
        "unsupported_gpu"
    };
    assert_eq!(
        gpu["availability"]["state"], expected,
        "gpu_class {gpu_class}"
    );
    if !Path::new("/sys/class/drm").exists() && !Path::new("/proc/driver/nvidia/version").exists() {
        assert_eq!(gpu_class, "unknown");
    }

    // Skills: git's is visible, blender's hidden (fail closed on a missing app).
    let skills = st["skills"].as_array().unwrap();
    let skill = |plugin: &str| {
        skills
            .iter()
            .find(|k| k["plugin"] == plugin)
            .unwrap_or_else(|| panic!("a skill of {plugin}: {skills:?}"))
    };
    assert_eq!(skill("git")["visible"], true);
    assert_eq!(skill("blender")["visible"], false);
    assert!(st["problems"].as_array().unwrap().is_empty(), "{st:#}");
}

#[test]
fn call_returns_real_git_output() {
    let plugins = plugins_dir();
    let root = workspace_root();
    let repo = tempfile::tempdir().unwrap();
    git_repo(repo.path(), &[]);
    std::fs::write(repo.path().join("a.txt"), "a").unwrap();
    git(repo.path(), &["add", "a.txt"]);
    git(
        repo.path(),
        &["commit", "-q", "-m", "a commit subject only git can know"],
    );

    let args = serde_json::json!({"path": repo.path()}).to_string();
    let out = wasmgate(&[
        "call",
        "mcp_git_log",
        "--plugins",
        plugins.to_str().unwrap(),
        "--args",
        &args,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("a commit subject only git can know"),
        "{text}"
    );
    let _ = root;
}

#[test]
fn call_of_a_gated_tool_is_refused() {
    let plugins = plugins_dir();
    let out = wasmgate(&[
        "call",
        "mcp_blender_get_scene_info",
        "--plugins",
        plugins.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mcp_blender_get_scene_info"), "{err}");
}

#[test]
fn malformed_component_is_one_error_line_and_the_others_load() {
    let plugins = plugins_dir();
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&plugins).unwrap() {
        let entry = entry.unwrap();
        copy_tree(&entry.path(), &dir.path().join(entry.file_name()));
    }
    std::fs::write(dir.path().join("broken.wasm"), b"\0asm\x0d\0\x01\0garbage").unwrap();
    let out = wasmgate(&[
        "status",
        "--json",
        "--plugins",
        dir.path().to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let st = stdout_json(&out);
    let problems = st["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].as_str().unwrap().contains("broken.wasm"),
        "{problems:?}"
    );
    let names: Vec<&str> = st["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    for p in ["git", "blender", "gpu-render"] {
        assert!(names.contains(&p), "{names:?}");
    }
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::copy(from, to).unwrap();
    }
}
