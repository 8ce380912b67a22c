//! Text and JSON renderings of `status`, `tools`, `skills` and `call`.

use crate::host::{Host, HostStatus};
use crate::mcp::{CallError, CallResult};
use crate::terminal::line as esc;
use std::fmt::Write;

fn json<T: serde::Serialize>(v: &T) -> String {
    let mut s = crate::terminal::json_text(
        serde_json::to_string_pretty(v).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")),
    );
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
        if s.connection == "invalid" {
            let _ = writeln!(o, "  server {}: invalid", esc(&s.name));
            for p in &s.problems {
                let _ = writeln!(o, "    problem: {}", esc(p));
            }
            return;
        }
        let _ = write!(o, "  server {} ({})", esc(&s.name), s.transport);
        match &s.availability {
            Some(a) => {
                let _ = write!(o, ": {}", a.state);
                if let Some(v) = &a.version {
                    let _ = write!(o, ", version {}", esc(v));
                }
                if let Some(p) = &a.path {
                    let _ = write!(o, ", path {}", esc(p));
                }
                if let Some(m) = &a.min_version {
                    let _ = write!(o, ", min_version {m}");
                }
            }
            None => o.push_str(": no declaration"),
        }
        let _ = writeln!(o);
        if let Some(m) = s.availability.as_ref().and_then(|a| a.message.as_ref()) {
            let _ = writeln!(o, "    {}", esc(m));
        }
        let _ = write!(o, "    connection: {}", s.connection);
        if !s.tools.is_empty() {
            let _ = write!(o, "; tools: {}", esc(&s.tools.join(", ")));
        }
        let _ = writeln!(o);
        for c in &s.collisions {
            let whose = if c.reserved {
                format!("lies in the namespace of config server '{}'", c.kept_by)
            } else {
                format!("is taken by server '{}'", c.kept_by)
            };
            let _ = writeln!(
                o,
                "    name collision: tool '{}' wanted {}, which {}; registered as {}",
                c.tool.escape_default(),
                esc(&c.name),
                esc(&whose),
                esc(c.renamed_to.as_deref().unwrap_or("(not registered)"))
            );
        }
        for w in &s.withheld_tools {
            let _ = writeln!(
                o,
                "    tool {} withheld ({}): {}",
                esc(&w.tool),
                w.reason,
                esc(&w.changes.join("; "))
            );
            let _ = writeln!(o, "      approve with: {}", esc(&w.approve));
        }
        if let Some(e) = &s.last_error {
            let _ = writeln!(o, "    last error: {}", esc(e));
        }
    };
    for p in &st.plugins {
        let _ = writeln!(
            o,
            "plugin {} {} ({}, {})",
            esc(&p.name),
            esc(&p.version),
            p.kind,
            esc(&p.file.display().to_string())
        );
        if !p.trust.state.runs() {
            let _ = writeln!(
                o,
                "  {}: held back; none of its servers is started",
                p.trust.state.as_str()
            );
            // A change names plugin-controlled values (a location, a
            // server name): escaped like every other line here.
            for c in &p.trust.changes {
                let _ = writeln!(o, "    {}", esc(c));
            }
            if let Some(a) = &p.trust.approve {
                let _ = writeln!(o, "  approve with: {}", esc(a));
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
                let _ = writeln!(o, "  skill {}: visible", esc(&k.name));
            } else {
                let _ = writeln!(
                    o,
                    "  skill {}: hidden ({})",
                    esc(&k.name),
                    esc(&k.hidden_because.join("; "))
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
        for p in crate::terminal::listed(&st.problems, " (`--json` lists all)") {
            let _ = writeln!(o, "  {}", esc(&p));
        }
    }
    if !st.warnings.is_empty() {
        let _ = writeln!(o, "warnings:");
        for w in crate::terminal::listed(&st.warnings, " (`--json` lists all)") {
            let _ = writeln!(o, "  {}", esc(&w));
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
            esc(&t.name),
            esc(&t.server),
            esc(&t.original_name),
            esc(first_line(&t.description))
        );
    }
    if tools.is_empty() {
        let _ = writeln!(o, "no tools are offered (see `wasmgate status`)");
    }
    print_load_notes(h);
    print_held_back(h);
    o
}

/// The plugins held back by trust, on stderr: their servers' tools and
/// their skills are left out of what `tools` and `skills` list.
fn print_held_back(h: &Host) {
    for p in h.plugins().iter().filter(|p| !p.trust.state.runs()) {
        eprintln!(
            "plugin {} is {} and held back; see `wasmgate status`",
            esc(&p.name),
            p.trust.state.as_str()
        );
    }
}

/// Load problems and warnings on stderr, for the commands whose stdout is
/// their answer (`tools`, `call`).
fn print_load_notes(h: &Host) {
    for p in crate::terminal::listed(h.problems(), " (`wasmgate status --json` lists all)") {
        eprintln!("{}", esc(&p));
    }
    for w in crate::terminal::listed(h.warnings(), " (`wasmgate status --json` lists all)") {
        eprintln!("warning: {}", esc(&w));
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
        let _ = writeln!(
            o,
            "{} (plugin {}): {}",
            esc(&k.name),
            esc(&k.plugin),
            esc(&state)
        );
        if let Some(d) = &k.description {
            let _ = writeln!(o, "  {}", esc(first_line(d)));
        }
    }
    if h.skills().is_empty() {
        let _ = writeln!(o, "no skills");
    }
    // A held-back plugin's skills are not listed: say so, and why.
    print_load_notes(h);
    print_held_back(h);
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
                print!("{}", call_text(&r));
                if r.truncated_bytes > 0 {
                    eprintln!("(result cut: {} bytes left out)", r.truncated_bytes);
                }
            }
            u8::from(r.is_error)
        }
        Err(e) => {
            match &e {
                CallError::UnknownTool { .. } => {
                    eprintln!("wasmgate call: {}", esc(&e.to_string()));
                    // `call` connects only the server that can own the name:
                    // say why its tool is not there.
                    let owner = h
                        .servers()
                        .iter()
                        .find(|s| crate::naming::may_own_tool(&s.spec.name, tool));
                    match owner {
                        Some(s) if !s.spec.enabled => {
                            eprintln!(
                                "server '{}' is disabled (enabled: false)",
                                esc(&s.spec.name)
                            )
                        }
                        Some(s) if !s.offerable() => eprintln!(
                            "server '{}' is not offered on this machine: {}",
                            esc(&s.spec.name),
                            esc(s
                                .message
                                .as_deref()
                                .unwrap_or("its declaration is not offerable"))
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
                                Some(err) => eprintln!("{}", esc(&err)),
                                None => eprintln!(
                                    "server '{}' does not offer this tool; `wasmgate tools` lists the offered tools",
                                    esc(&s.spec.name)
                                ),
                            }
                        }
                        None => {
                            // A held-back plugin's server may own it.
                            let held = h.plugins().iter().find(|p| {
                                !p.trust.state.runs()
                                    && p.servers
                                        .iter()
                                        .any(|s| crate::naming::may_own_tool(s, tool))
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
                _ => eprintln!("wasmgate call: {}", esc(&e.to_string())),
            }
            print_load_notes(h);
            1
        }
    }
}

/// Server-controlled text on its way to the terminal (`call` output,
/// invalid servers' problems in `status`). Every such text passes here, so
/// one function decides how it is shown.
fn shown(s: &str) -> std::borrow::Cow<'_, str> {
    crate::terminal::text(s)
}

/// `wasmgate call` without `--json` (`docs/mcp-client.md` §8, "`wasmgate call`"): every
/// content block in order, one or more lines each — text as its text;
/// image and audio as `[image: <mime type>, <n> bytes]`; a resource link as
/// `[resource link: <uri>]`; an embedded resource as `[resource: <uri>]`
/// and its text, or `[resource: <uri>, <mime type>, <n> bytes]` for a blob;
/// a block of an unknown type (or a known type missing its fields) as
/// `[content block of unknown type "<type>"] <its JSON>`. Then
/// `structuredContent` as pretty JSON, and for an `isError` result without
/// content a line that says so. Ends with a newline.
pub fn call_text(r: &CallResult) -> String {
    let mut o = String::new();
    for block in &r.content {
        match known_block(block) {
            Some(line) => o.push_str(&line),
            None => {
                let kind = match block.get("type") {
                    Some(serde_json::Value::String(t)) => format!("\"{}\"", shown(t)),
                    Some(other) => other.to_string(),
                    None => "(none)".to_string(),
                };
                let _ = write!(
                    o,
                    "[content block of unknown type {kind}] {}",
                    shown(&block.to_string())
                );
            }
        }
        o.push('\n');
    }
    if let Some(sc) = &r.structured_content {
        let pretty = serde_json::to_string_pretty(sc).unwrap_or_else(|_| sc.to_string());
        let _ = writeln!(o, "[structured content]\n{}", shown(&pretty));
    }
    if r.is_error && r.content.is_empty() && r.structured_content.is_none() {
        let _ = writeln!(o, "[the tool reported an error and sent no content]");
    }
    if r.content.is_empty() && r.structured_content.is_none() && !r.is_error {
        let _ = writeln!(o, "[the tool sent no content]");
    }
    o
}

/// The rendering of a block of a known type with its fields; `None` for
/// anything else.
fn known_block(b: &serde_json::Value) -> Option<String> {
    fn str_of<'a>(v: &'a serde_json::Value, k: &str) -> Option<&'a str> {
        v.get(k).and_then(|x| x.as_str())
    }
    match str_of(b, "type")? {
        "text" => Some(shown(str_of(b, "text")?).into_owned()),
        kind @ ("image" | "audio") => {
            let mime = str_of(b, "mimeType")?;
            let n = base64_len(str_of(b, "data")?);
            Some(format!("[{kind}: {}, {n} bytes]", shown(mime)))
        }
        "resource_link" => Some(format!("[resource link: {}]", shown(str_of(b, "uri")?))),
        "resource" => {
            let res = b.get("resource")?;
            let uri = shown(str_of(res, "uri")?);
            if let Some(text) = str_of(res, "text") {
                return Some(format!("[resource: {uri}]\n{}", shown(text)));
            }
            let n = base64_len(str_of(res, "blob")?);
            let mime = str_of(res, "mimeType").unwrap_or("application/octet-stream");
            Some(format!("[resource: {uri}, {}, {n} bytes]", shown(mime)))
        }
        _ => None,
    }
}

/// Decoded length in bytes of base64 text (whitespace ignored, `=` padding
/// subtracted); the data itself is never decoded.
fn base64_len(data: &str) -> usize {
    let mut chars = 0usize;
    let mut pad = 0usize;
    for b in data.bytes() {
        match b {
            b'=' => pad += 1,
            b if b.is_ascii_whitespace() => {}
            _ => chars += 1,
        }
    }
    let total = chars + pad;
    let whole = total / 4 * 3 + (total % 4).saturating_sub(1);
    whole.saturating_sub(pad.min(2))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}
