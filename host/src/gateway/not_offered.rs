//! The read-only resource `wasmgate://not-offered` of `wasmgate serve`
//! (`docs/mcp-client.md` §7): which plugin applications this machine does
//! not offer and why, in the availability sentences of
//! `docs/declarations.md` §6.3–6.4, so an agent can tell its user what to
//! install, update or start. With `serve --not-offered-tool` the same
//! text is also the result of the tool [`NOT_OFFERED_TOOL`], for agents
//! that read no resources.

use crate::host::Host;

/// URI of the resource.
pub const NOT_OFFERED_URI: &str = "wasmgate://not-offered";

/// Name of the matching tool (offered only with `serve --not-offered-tool`).
pub const NOT_OFFERED_TOOL: &str = "wasmgate_not_offered";

/// The MCP tool [`NOT_OFFERED_TOOL`]: no arguments, read-only; its result
/// is one text block, [`not_offered_markdown`].
pub fn not_offered_tool() -> rmcp::model::Tool {
    let mut schema = serde_json::Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert(
        "properties".into(),
        serde_json::Value::Object(Default::default()),
    );
    rmcp::model::Tool::new(
        NOT_OFFERED_TOOL,
        "Lists the plugin applications that are not offered on this machine and why \
         (not installed, too old, not running), with what the user can install, update \
         or start. The same text as the resource wasmgate://not-offered.",
        std::sync::Arc::new(schema),
    )
    .with_title("Applications not offered here")
    .with_annotations(rmcp::model::ToolAnnotations::new().read_only(true))
}

/// One server that is not offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotOffered {
    /// Configured server name.
    pub server: String,
    /// The plugin that brings it (`None`: the config file).
    pub plugin: Option<String>,
    /// Why, and what to do (`crate::availability::ServerStatus::sentence`).
    pub sentence: String,
}

/// Every server whose declaration is not offerable on this machine, in
/// configured order.
pub fn not_offered(host: &Host) -> Vec<NotOffered> {
    host.servers()
        .iter()
        .filter(|s| !s.offerable())
        .filter_map(|s| {
            Some(NotOffered {
                server: s.spec.name.clone(),
                plugin: s.spec.plugin.clone(),
                sentence: s.message.clone()?,
            })
        })
        .collect()
}

/// The resource's text (Markdown): one line per server that is not
/// offered, or a line saying every application is offered.
pub fn not_offered_markdown(host: &Host) -> String {
    let list = not_offered(host);
    let mut out = String::from("# Applications not offered on this machine\n\n");
    if list.is_empty() {
        out.push_str("Every plugin application is offered on this machine.\n");
    }
    for n in list {
        let from = match &n.plugin {
            Some(p) => format!("plugin {p}"),
            None => "the config file".to_string(),
        };
        out.push_str(&format!(
            "- {} ({from}): {}\n",
            code_span(&crate::terminal::line(&n.server)),
            crate::terminal::line(&n.sentence)
        ));
    }
    out
}

/// `s` as a Markdown code span that a backtick in it cannot end early (a
/// server name is plugin-controlled): fenced by one backtick more than its
/// longest run, padded with spaces when it starts or ends with one.
fn code_span(s: &str) -> String {
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if longest > 0 {
        format!("{fence} {s} {fence}")
    } else {
        format!("{fence}{s}{fence}")
    }
}
