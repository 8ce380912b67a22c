//! Text and JSON renderings of `status`, `tools`, `skills` and `call`.

use crate::host::{Host, HostStatus};
use crate::mcp::CallError;
use std::fmt::Write;

fn json<T: serde::Serialize>(v: &T) -> String {
    let mut s =
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// `wasmgate status`.
pub fn status(h: &Host, as_json: bool) -> String {
    let st: HostStatus = h.status();
    if as_json {
        return json(&st);
    }
    let mut o = String::new();
    if let Some(n) = st.trust.notice {
        let _ = writeln!(o, "trust: {n}");
    }
    let _ = writeln!(
        o,
        "os_family: {}  gpu_class: {}",
        st.os_family, st.gpu_class
    );
    let server_line = |o: &mut String, s: &crate::host::ServerStatusLine| {
        let _ = write!(o, "  server {} ({})", s.name, s.transport);
        match &s.availability {
            Some(a) => {
                let _ = write!(o, ": {}", a.state);
                if let Some(v) = &a.version {
                    let _ = write!(o, ", version {v}");
                }
                if let Some(p) = &a.path {
                    let _ = write!(o, ", path {p}");
                }
                if let Some(m) = &a.min_version {
                    let _ = write!(o, ", min_version {m}");
                }
            }
            None => o.push_str(": no declaration"),
        }
        let _ = writeln!(o);
        if let Some(m) = s.availability.as_ref().and_then(|a| a.message.as_ref()) {
            let _ = writeln!(o, "    {m}");
        }
        let _ = write!(o, "    connection: {}", s.connection);
        if !s.tools.is_empty() {
            let _ = write!(o, "; tools: {}", s.tools.join(", "));
        }
        let _ = writeln!(o);
        for w in &s.withheld_tools {
            let _ = writeln!(
                o,
                "    tool {} withheld ({}): {}",
                w.tool,
                w.reason,
                w.changes.join("; ")
            );
            let _ = writeln!(o, "      approve with: {}", w.approve);
        }
        if let Some(e) = &s.last_error {
            let _ = writeln!(o, "    last error: {e}");
        }
    };
    for p in &st.plugins {
        let _ = writeln!(
            o,
            "plugin {} {} ({}, {})",
            p.name,
            p.version,
            p.kind,
            p.file.display()
        );
        if !p.trust.state.runs() {
            let _ = writeln!(
                o,
                "  {}: held back; none of its servers is started",
                p.trust.state.as_str()
            );
            for c in &p.trust.changes {
                let _ = writeln!(o, "    {c}");
            }
            if let Some(a) = &p.trust.approve {
                let _ = writeln!(o, "  approve with: {a}");
            }
        }
        for s in st
            .servers
            .iter()
            .filter(|s| s.plugin.as_deref() == Some(&p.name))
        {
            server_line(&mut o, s);
        }
        for k in st.skills.iter().filter(|k| k.plugin == p.name) {
            if k.visible {
                let _ = writeln!(o, "  skill {}: visible", k.name);
            } else {
                let _ = writeln!(
                    o,
                    "  skill {}: hidden ({})",
                    k.name,
                    k.hidden_because.join("; ")
                );
            }
        }
    }
    let config: Vec<_> = st.servers.iter().filter(|s| s.plugin.is_none()).collect();
    if !config.is_empty() {
        let _ = writeln!(o, "config servers");
        for s in config {
            server_line(&mut o, s);
        }
    }
    if st.plugins.is_empty() && st.servers.is_empty() {
        let _ = writeln!(o, "{}", crate::mcp::NO_SERVERS_CONFIGURED);
    }
    if !st.problems.is_empty() {
        let _ = writeln!(o, "problems:");
        for p in &st.problems {
            let _ = writeln!(o, "  {p}");
        }
    }
    if !st.warnings.is_empty() {
        let _ = writeln!(o, "warnings:");
        for w in &st.warnings {
            let _ = writeln!(o, "  {w}");
        }
    }
    o
}

/// `wasmgate tools`.
pub fn tools(h: &Host, as_json: bool) -> String {
    let tools = h.offered_tools();
    if as_json {
        return json(&tools);
    }
    let mut o = String::new();
    for t in &tools {
        let _ = writeln!(
            o,
            "{}  ({} / {})  {}",
            t.name,
            t.server,
            t.original_name,
            first_line(&t.description)
        );
    }
    if tools.is_empty() {
        let _ = writeln!(o, "no tools are offered (see `wasmgate status`)");
    }
    print_load_notes(h);
    for p in h.plugins().iter().filter(|p| !p.trust.state.runs()) {
        eprintln!(
            "plugin {} is {} and held back; see `wasmgate status`",
            p.name,
            p.trust.state.as_str()
        );
    }
    o
}

/// Load problems and warnings on stderr, for the commands whose stdout is
/// their answer (`tools`, `call`).
fn print_load_notes(h: &Host) {
    for p in h.problems() {
        eprintln!("{p}");
    }
    for w in h.warnings() {
        eprintln!("warning: {w}");
    }
}

/// `wasmgate skills`.
pub fn skills(h: &Host, as_json: bool) -> String {
    if as_json {
        return json(&h.skills());
    }
    let mut o = String::new();
    for k in h.skills() {
        let state = if k.visible {
            "visible".to_string()
        } else {
            format!("hidden ({})", k.hidden_because.join("; "))
        };
        let _ = writeln!(o, "{} (plugin {}): {}", k.name, k.plugin, state);
        if let Some(d) = &k.description {
            let _ = writeln!(o, "  {}", first_line(d));
        }
    }
    if h.skills().is_empty() {
        let _ = writeln!(o, "no skills");
    }
    o
}

/// `wasmgate call`: prints the result; returns the exit code (1 for a tool
/// error or a failed call).
pub async fn call(h: &Host, tool: &str, args: serde_json::Value, as_json: bool) -> u8 {
    match h.call(tool, args).await {
        Ok(r) => {
            if as_json {
                print!("{}", json(&r));
            } else {
                let text = r.text();
                println!("{text}");
                if r.truncated_bytes > 0 {
                    eprintln!("(result cut: {} bytes left out)", r.truncated_bytes);
                }
            }
            u8::from(r.is_error)
        }
        Err(e) => {
            match &e {
                CallError::UnknownTool { .. } => {
                    eprintln!("wasmgate call: {e}");
                    // `call` connects only the server that can own the name:
                    // say why its tool is not there.
                    let owner = h
                        .servers()
                        .iter()
                        .find(|s| crate::mcp::naming::may_own_tool(&s.spec.name, tool));
                    match owner {
                        Some(s) if !s.spec.enabled => {
                            eprintln!("server '{}' is disabled (enabled: false)", s.spec.name)
                        }
                        Some(s) if !s.offerable() => eprintln!(
                            "server '{}' is not offered on this machine: {}",
                            s.spec.name,
                            s.message
                                .as_deref()
                                .unwrap_or("its declaration is not offerable")
                        ),
                        Some(s) => {
                            // A server that failed to connect: its error is
                            // the answer.
                            let status = h.status();
                            let failed = status
                                .servers
                                .iter()
                                .find(|l| l.name == s.spec.name)
                                .and_then(|l| l.last_error.clone());
                            match failed {
                                Some(err) => eprintln!("{err}"),
                                None => eprintln!(
                                    "server '{}' does not offer this tool; `wasmgate tools` lists the offered tools",
                                    s.spec.name
                                ),
                            }
                        }
                        None => {
                            // A held-back plugin's server may own it.
                            let held = h.plugins().iter().find(|p| {
                                !p.trust.state.runs()
                                    && p.servers
                                        .iter()
                                        .any(|s| crate::mcp::naming::may_own_tool(s, tool))
                            });
                            match held {
                                Some(p) => eprintln!(
                                    "plugin '{}' is {} and held back: none of its servers is started{}",
                                    p.name,
                                    p.trust.state.as_str(),
                                    p.trust
                                        .approve
                                        .as_deref()
                                        .map(|a| format!("; approve with: {a}"))
                                        .unwrap_or_default()
                                ),
                                None => eprintln!(
                                    "no configured server owns this name; `wasmgate tools` lists the offered tools"
                                ),
                            }
                        }
                    }
                }
                _ => eprintln!("wasmgate call: {e}"),
            }
            print_load_notes(h);
            1
        }
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}
