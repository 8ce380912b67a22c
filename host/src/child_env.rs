//! The filtered environment of a stdio child (`docs/mcp-client.md` §4):
//! only a safe baseline of the host's variables, plus the server's `env`, plus
//! the names it lists under `env_passthrough`. No API key, token or proxy
//! setting leaks by default.
//!
//! Below both its users: the MCP client builds each child's environment
//! with it, and the manifest checks a plugin's `env_passthrough` names
//! against the baseline (`docs/design.md` §3).

use std::collections::BTreeMap;

/// Host variables every stdio child sees (exact names).
pub const BASELINE: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TERM", "SHELL", "TMPDIR", "TZ",
];

/// The usual Windows set (docs/mcp-client.md §4.1), matched case-insensitively.
pub const WINDOWS_BASELINE: &[&str] = &[
    "ALLUSERSPROFILE",
    "APPDATA",
    "COMMONPROGRAMFILES",
    "COMMONPROGRAMFILES(X86)",
    "COMMONPROGRAMW6432",
    "COMPUTERNAME",
    "COMSPEC",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "NUMBER_OF_PROCESSORS",
    "OS",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "PROGRAMFILES(X86)",
    "PROGRAMW6432",
    "PUBLIC",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERDOMAIN",
    "USERNAME",
    "USERPROFILE",
    "WINDIR",
];

/// Whether a host variable belongs to the baseline on this OS: see
/// [`is_baseline_on`].
pub fn is_baseline(name: &str) -> bool {
    is_baseline_on(name, cfg!(windows))
}

/// Whether a host variable belongs to the baseline: an exact [`BASELINE`]
/// name, any `XDG_*`, or — on Windows only (`windows`), where variable
/// names are case-insensitive — a [`WINDOWS_BASELINE`] name in any case.
/// Elsewhere names are case-sensitive and the Windows names mean nothing:
/// `tmp` or `Public` on Linux are ordinary variables a child does not get
/// (docs/security.md, "MCP client bounds").
pub fn is_baseline_on(name: &str, windows: bool) -> bool {
    BASELINE.contains(&name)
        || name.starts_with("XDG_")
        || (windows
            && WINDOWS_BASELINE
                .iter()
                .any(|w| w.eq_ignore_ascii_case(name)))
}

/// Builds a child's environment from the host's variables `host`: the
/// baseline, then the names in `passthrough` that the host has, then `env`
/// (which overrides both).
pub fn child_env(
    host: impl IntoIterator<Item = (String, String)>,
    env: &BTreeMap<String, String>,
    passthrough: &[String],
) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = host
        .into_iter()
        .filter(|(k, _)| is_baseline(k) || passthrough.iter().any(|p| p == k))
        .collect();
    out.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}

/// [`child_env`] over this process's environment (variables that are not
/// valid Unicode are left out).
pub fn child_env_from_host(
    env: &BTreeMap<String, String>,
    passthrough: &[String],
) -> BTreeMap<String, String> {
    child_env(
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        env,
        passthrough,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Vec<(String, String)> {
        [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/u"),
            ("TZ", "UTC"),
            ("LOGNAME", "u"),
            ("XDG_CONFIG_HOME", "/home/u/.config"),
            ("SystemRoot", "C:\\Windows"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("HTTPS_PROXY", "http://proxy"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("MY_TOOL_HOME", "/opt/tool"),
            ("XDGNOT", "no"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    #[test]
    fn only_baseline_passes() {
        let out = child_env(host(), &BTreeMap::new(), &[]);
        let keys: Vec<&str> = out.keys().map(String::as_str).collect();
        let mut expected = vec!["HOME", "LOGNAME", "PATH", "TZ", "XDG_CONFIG_HOME"];
        if cfg!(windows) {
            expected.insert(3, "SystemRoot");
        }
        assert_eq!(keys, expected);
    }

    #[test]
    fn windows_names_match_in_any_case_only_on_windows() {
        for name in ["tmp", "Public", "SystemRoot", "windir"] {
            assert!(is_baseline_on(name, true), "{name}");
            assert!(!is_baseline_on(name, false), "{name}");
        }
        assert!(is_baseline_on("PATH", false));
        assert!(!is_baseline_on("path", false));
        assert!(!is_baseline_on("TMP", false));
    }

    #[test]
    fn env_overrides_and_passthrough_adds() {
        let mut env = BTreeMap::new();
        env.insert("PATH".to_string(), "/custom".to_string());
        env.insert("TOKEN".to_string(), "given".to_string());
        let out = child_env(
            host(),
            &env,
            &["MY_TOOL_HOME".to_string(), "ABSENT".to_string()],
        );
        assert_eq!(out["PATH"], "/custom");
        assert_eq!(out["TOKEN"], "given");
        assert_eq!(out["MY_TOOL_HOME"], "/opt/tool");
        assert!(!out.contains_key("ABSENT"));
        assert!(!out.contains_key("OPENAI_API_KEY"));
        assert!(!out.contains_key("HTTPS_PROXY"));
    }
}
