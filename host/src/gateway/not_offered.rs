//! The read-only resource `wasmgate://not-offered` of `wasmgate serve`
//! (`docs/mcp-client.md` §7): which plugin applications this machine does
//! not offer and why, in the availability sentences of
//! `docs/declarations.md` §6.3–6.4, so an agent can tell its user what to
//! install, update or start.

use crate::host::Host;

/// URI of the resource.
pub const NOT_OFFERED_URI: &str = "wasmgate://not-offered";

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
            "- `{}` ({from}): {}\n",
            crate::terminal::line(&n.server),
            crate::terminal::line(&n.sentence)
        ));
    }
    out
}
