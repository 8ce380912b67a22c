//! Guest stdout/stderr: captured into a bounded buffer, then sent to the
//! log with the plugin's name. Output past the cap is counted and dropped,
//! never an error, so a chatty plugin neither traps nor grows host memory.

use bytes::Bytes;
use std::sync::{Arc, Mutex};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

#[derive(Debug, Default)]
struct Buffer {
    kept: Vec<u8>,
    dropped: u64,
}

/// One captured guest stream (stdout or stderr) with a byte cap.
#[derive(Clone, Debug)]
pub(crate) struct CapturedOutput {
    cap: usize,
    buffer: Arc<Mutex<Buffer>>,
}

impl CapturedOutput {
    /// Keeps at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> Self {
        CapturedOutput {
            cap,
            buffer: Arc::default(),
        }
    }

    fn push(&self, bytes: &[u8]) {
        let mut b = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        let room = self.cap.saturating_sub(b.kept.len());
        let take = room.min(bytes.len());
        b.kept.extend_from_slice(&bytes[..take]);
        b.dropped += (bytes.len() - take) as u64;
    }

    /// Sends what was captured to the log, one event per line, tagged with
    /// `plugin` and `stream`, and empties the buffer.
    pub(crate) fn flush_to_log(&self, plugin: &str, stream: &'static str) {
        let (kept, dropped) = {
            let mut b = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
            (std::mem::take(&mut b.kept), std::mem::take(&mut b.dropped))
        };
        for line in String::from_utf8_lossy(&kept).lines() {
            tracing::info!(plugin, stream, "{line}");
        }
        if dropped > 0 {
            tracing::warn!(
                plugin,
                stream,
                "{dropped} bytes of guest output past the {} byte cap were dropped",
                self.cap
            );
        }
    }

    /// The last non-empty line kept, cut to `max` characters; Rust's
    /// `note: run with RUST_BACKTRACE…` hint after a panic message is skipped.
    pub(crate) fn last_line(&self, max: usize) -> Option<String> {
        let b = self.buffer.lock().unwrap_or_else(|e| e.into_inner());
        let text = String::from_utf8_lossy(&b.kept);
        let line = text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty() && !l.starts_with("note: "))?;
        Some(line.trim().chars().take(max).collect())
    }

    /// Bytes kept so far (tests).
    #[cfg(test)]
    pub(crate) fn kept(&self) -> Vec<u8> {
        self.buffer.lock().unwrap().kept.clone()
    }
}

impl IsTerminal for CapturedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CapturedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CapturedOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always ready; past the cap bytes are counted and dropped.
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for CapturedOutput {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.push(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_past_the_cap_is_counted_and_dropped() {
        let out = CapturedOutput::new(4);
        out.push(b"abc");
        out.push(b"defg");
        assert_eq!(out.kept(), b"abcd");
        assert_eq!(out.buffer.lock().unwrap().dropped, 3);
        out.flush_to_log("p", "stdout");
        assert!(out.kept().is_empty());
    }
}
