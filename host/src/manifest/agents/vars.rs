//! The variables of the JSON agents' configs (`docs/mcp-client.md` §1.4):
//! Claude Code's `${VAR}` / `${VAR:-default}`, Cursor's and VS Code's
//! `${env:NAME}`, `${userHome}`, `${workspaceFolder}`,
//! `${workspaceFolderBasename}`, `${pathSeparator}` (`${/}`), and VS
//! Code's `${input:ID}` (refused: wasmgate cannot prompt).
//!
//! In `command`, `args` and `url` wasmgate itself expands no variables, so
//! the converter expands them there ([`expand`] with an environment). In
//! `env` and `headers` only the place variables are replaced and `${VAR}`
//! stays for the validator, which reads the environment and records the
//! values as secrets to redact (`docs/security.md`, "Redaction").

use super::Places;
use std::collections::BTreeMap;

/// Expands the agent variables of `s`. With `env`, `${VAR}`,
/// `${env:VAR}` and `${VAR:-default}` are replaced too (an unset one
/// without a default stays as written); without, they stay as written.
///
/// # Errors
/// The message for `${input:…}`, for `${workspaceFolder}` in a file that
/// belongs to no project, and for `${userHome}` without a home folder.
pub fn expand(
    s: &str,
    places: &Places,
    env: Option<&BTreeMap<String, String>>,
) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let whole = &rest[start..start + 2 + end + 1];
        let body = after[..end].trim();
        rest = &after[end + 1..];
        let path_text = |p: &std::path::Path| p.to_string_lossy().into_owned();
        match body {
            "userHome" => match &places.home {
                Some(h) => out.push_str(&path_text(h)),
                None => return Err("uses ${userHome}, but HOME is not set".into()),
            },
            "workspaceFolder" | "workspaceFolderBasename" => match &places.workspace {
                Some(ws) if body == "workspaceFolder" => out.push_str(&path_text(ws)),
                Some(ws) => out.push_str(
                    &ws.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                ),
                None => {
                    return Err(format!(
                        "uses ${{{body}}}, but this file belongs to no project folder (it is not in a .cursor or .vscode folder, nor a project's .mcp.json)"
                    ));
                }
            },
            "pathSeparator" | "/" => out.push(std::path::MAIN_SEPARATOR),
            b if b.starts_with("input:") => {
                return Err(format!(
                    "uses {whole}, a value VS Code asks the user for; wasmgate cannot ask: write the value, or ${{env:NAME}} to read it from the environment"
                ));
            }
            b if b.starts_with("command:")
                || b.starts_with("config:")
                || b.starts_with("file:") =>
            {
                return Err(format!(
                    "uses {whole}, an editor variable wasmgate cannot resolve; write the value instead"
                ));
            }
            b => match env {
                Some(env) => {
                    let (var, default) = split_default(b);
                    match (
                        env.get(var).filter(|v| !v.is_empty() || default.is_none()),
                        default,
                    ) {
                        (Some(v), _) => out.push_str(v),
                        (None, Some(d)) => out.push_str(d),
                        (None, None) => out.push_str(whole),
                    }
                }
                None => out.push_str(whole),
            },
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// `VAR:-default` → (`VAR`, `Some("default")`); `env:VAR` → (`VAR`, `None`).
/// The default is used when the variable is unset or empty (the shell's
/// `:-`, as Claude Code documents it).
pub fn split_default(body: &str) -> (&str, Option<&str>) {
    let body = body.trim();
    let body = body.strip_prefix("env:").unwrap_or(body).trim();
    match body.split_once(":-") {
        Some((v, d)) => (v.trim(), Some(d)),
        None => (body, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn agent_variables_expand_or_are_refused() {
        let places = Places {
            home: Some(PathBuf::from("/home/u")),
            workspace: Some(PathBuf::from("/w/proj")),
            cwd: None,
            keep_env_vars: false,
        };
        let env: BTreeMap<String, String> = [("A".to_string(), "1".to_string())].into();
        let e = |s| expand(s, &places, Some(&env));
        assert_eq!(e("${userHome}/x").unwrap(), "/home/u/x");
        assert_eq!(
            e("${workspaceFolder}:${workspaceFolderBasename}").unwrap(),
            "/w/proj:proj"
        );
        assert_eq!(
            e("${A}-${env:A}-${B:-dflt}-${B}-${A:-no}").unwrap(),
            "1-1-dflt-${B}-1"
        );
        assert!(e("${input:key}").unwrap_err().contains("${input:key}"));
        // Without an environment only the places are replaced.
        assert_eq!(
            expand("${userHome} ${A}", &places, None).unwrap(),
            "/home/u ${A}"
        );
        let none = Places::default();
        assert!(
            expand("${workspaceFolder}", &none, None)
                .unwrap_err()
                .contains("no project")
        );
        assert_eq!(e("a ${ unterminated").unwrap(), "a ${ unterminated");
    }
}
