//! The live session of a connected server, for the gateway's pass-through
//! of what a server offers besides tools (`docs/mcp-client.md` §7,
//! "Pass-through"): prompts, resources, completions, log level.

use super::McpClient;
use rmcp::RoleClient;
use rmcp::service::Peer;

impl McpClient {
    /// The rmcp peer of `server`'s live session, with the server's
    /// `initialize` capabilities as JSON (`{}` when it sent none); `None`
    /// when the server is not connected now. The caller applies the gate
    /// (offerable) and bounds every request it sends (time, pages).
    pub fn peer_of(&self, server: &str) -> Option<(Peer<RoleClient>, serde_json::Value)> {
        let st = self.inner.read();
        let slot = st.servers.iter().find(|s| s.spec.name == server)?;
        let session = slot.session.as_ref()?;
        let caps = session
            .peer
            .peer_info()
            .and_then(|i| serde_json::to_value(&i.capabilities).ok())
            .unwrap_or_else(|| serde_json::json!({}));
        Some((session.peer.clone(), caps))
    }
}
