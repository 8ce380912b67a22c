//! One tool call on a session, tolerant of lenient servers, with its
//! result bounded before it is kept (`docs/mcp-client.md` §4;
//! `docs/security.md`, "MCP client bounds").

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientRequest, RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, ServiceRole};
use std::sync::Arc;

/// A `tools/call` result with its content blocks as JSON: the typed ones
/// serialized again, and — when a block of a type this client does not know
/// made the typed parse fail — every block as the server sent it.
pub(super) struct RawCallResult {
    pub(super) content: Vec<serde_json::Value>,
    pub(super) structured_content: Option<serde_json::Value>,
    pub(super) is_error: bool,
}

/// Sends `notifications/cancelled` for a request when dropped before
/// [`CancelOnDrop::disarm`] (a call abandoned by its caller or its timeout;
/// on the gateway's side, a request to its agent that the server withdrew
/// or whose call ended).
pub(crate) struct CancelOnDrop<R: ServiceRole = RoleClient>
where
    R::Not: From<CancelledNotification>,
{
    pub(crate) peer: Peer<R>,
    pub(crate) id: Option<RequestId>,
}

impl<R: ServiceRole> CancelOnDrop<R>
where
    R::Not: From<CancelledNotification>,
{
    pub(crate) fn disarm(&mut self) {
        self.id = None;
    }
}

impl<R: ServiceRole> Drop for CancelOnDrop<R>
where
    R::Not: From<CancelledNotification>,
{
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        rt.spawn(async move {
            let n = CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some("request abandoned by the caller".into()),
            ));
            let _ = peer.send_notification(n.into()).await;
        });
    }
}

/// `tools/call` that survives content blocks of unknown types. rmcp's typed
/// `call_tool` fails the whole call ("Unexpected response type") when one
/// block does not parse, because the result then arrives as a
/// `CustomResult`; here that raw result is read leniently instead: its
/// `content` blocks kept as sent (the CLI names the unknown type and shows
/// its JSON), `isError` and `structuredContent` as given.
pub(super) async fn call_tool_tolerant(
    peer: &Peer<RoleClient>,
    params: CallToolRequestParams,
    progress: Option<(
        &Arc<super::upstream::ProgressRoutes>,
        super::upstream::ProgressSink,
    )>,
) -> Result<RawCallResult, rmcp::ServiceError> {
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let handle = peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await?;
    // rmcp put a fresh progress token on the request: the caller gets the
    // progress with that token, and nobody else does.
    let _route =
        progress.map(|(routes, sink)| routes.register(handle.progress_token.clone(), sink));
    let mut guard = CancelOnDrop {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let result = handle.await_response().await;
    guard.disarm();
    match result? {
        ServerResult::CallToolResult(r) => Ok(RawCallResult {
            content: r
                .content
                .iter()
                .map(|b| serde_json::to_value(b).unwrap_or(serde_json::Value::Null))
                .collect(),
            structured_content: r.structured_content,
            is_error: r.is_error == Some(true),
        }),
        ServerResult::CustomResult(custom) => lenient_call_result(custom.0),
        ServerResult::EmptyResult(_) => Ok(RawCallResult {
            content: Vec::new(),
            structured_content: None,
            is_error: false,
        }),
        _ => Err(rmcp::ServiceError::UnexpectedResponse),
    }
}

/// Reads a `tools/call` result that did not fit the typed parse: an object
/// whose `content` (absent = none) is a list. Anything else is still an
/// unexpected response.
pub(super) fn lenient_call_result(
    v: serde_json::Value,
) -> Result<RawCallResult, rmcp::ServiceError> {
    let serde_json::Value::Object(mut o) = v else {
        return Err(rmcp::ServiceError::UnexpectedResponse);
    };
    let content = match o.remove("content") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(a)) => a,
        Some(_) => return Err(rmcp::ServiceError::UnexpectedResponse),
    };
    Ok(RawCallResult {
        content,
        structured_content: o.remove("structuredContent").filter(|v| !v.is_null()),
        is_error: o.get("isError").and_then(serde_json::Value::as_bool) == Some(true),
    })
}

/// Bytes of a JSON value when serialized.
pub(super) fn json_len(v: &serde_json::Value) -> usize {
    serde_json::to_string(v).map(|s| s.len()).unwrap_or(0)
}

/// Applies `f` to every string inside a JSON value.
pub(super) fn map_strings(v: &mut serde_json::Value, f: &dyn Fn(&str) -> String) {
    match v {
        serde_json::Value::String(s) => *s = f(s),
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| map_strings(x, f)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| map_strings(x, f)),
        _ => {}
    }
}

/// Cuts a result to `max` bytes (serialized): whole blocks while they fit,
/// the first text block that does not fit is cut, the rest is left out, and
/// a note says how much.
pub(super) fn bound_result(
    content: &mut Vec<serde_json::Value>,
    structured: &mut Option<serde_json::Value>,
    max: usize,
) -> usize {
    let total: usize =
        content.iter().map(json_len).sum::<usize>() + structured.as_ref().map_or(0, json_len);
    if total <= max {
        return 0;
    }
    let mut budget = max;
    let mut kept = Vec::new();
    for mut block in content.drain(..) {
        let len = json_len(&block);
        if len <= budget {
            budget -= len;
            kept.push(block);
            continue;
        }
        if let Some(serde_json::Value::String(text)) = block.get_mut("text")
            && budget > 64
        {
            let mut cut = (budget - 64).min(text.len());
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            kept.push(block);
        }
        break;
    }
    let structured_len = structured.as_ref().map_or(0, json_len);
    let kept_len: usize = kept.iter().map(json_len).sum();
    if structured_len > max.saturating_sub(kept_len) {
        *structured = None;
    }
    let now = kept_len + structured.as_ref().map_or(0, json_len);
    let left_out = total.saturating_sub(now);
    kept.push(serde_json::json!({
        "type": "text",
        "text": format!("[result truncated: about {left_out} of {total} bytes left out (max_result_bytes = {max})]"),
    }));
    *content = kept;
    left_out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_bounded_with_a_note() {
        let mut content = vec![
            serde_json::json!({"type": "text", "text": "a".repeat(100)}),
            serde_json::json!({"type": "text", "text": "b".repeat(10_000)}),
            serde_json::json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
        ];
        let mut structured = Some(serde_json::json!({"big": "c".repeat(5000)}));
        let left = bound_result(&mut content, &mut structured, 1000);
        assert!(left > 14_000, "{left}");
        assert!(structured.is_none());
        assert_eq!(content.len(), 3);
        let note = content[2]["text"].as_str().unwrap();
        assert!(note.contains("left out"), "{note}");
        let total: usize = content[..2].iter().map(json_len).sum();
        assert!(total <= 1000);

        let mut small = vec![serde_json::json!({"type": "text", "text": "ok"})];
        let mut none = None;
        assert_eq!(bound_result(&mut small, &mut none, 1000), 0);
        assert_eq!(small.len(), 1);
    }
}
