//! `wasmgate login SERVER` and `wasmgate logout SERVER` (docs/mcp-client.md
//! §9): the OAuth login of one `auth: oauth` server, and forgetting it.
//! Neither prints a token.

use crate::host::Host;
use crate::manifest::Transport;
use crate::mcp::oauth::{self, login};

/// `wasmgate login` arguments.
#[derive(Debug, clap::Args)]
pub struct LoginArgs {
    /// The server's name (its `mcp_servers` key).
    pub server: String,
    /// Do not open a browser; only print the URL to open elsewhere.
    #[arg(long)]
    pub no_browser: bool,
    /// Log in with a code entered on another device (the OAuth device
    /// grant, for a machine without a browser): prints a URL and a code,
    /// and waits for the approval.
    #[arg(long)]
    pub device: bool,
    /// Seconds to wait for the browser's redirect or the device approval
    /// (default 300).
    #[arg(long, value_name = "SECONDS", default_value_t = crate::mcp::oauth::login::DEFAULT_LOGIN_WAIT.as_secs())]
    pub wait: u64,
}

/// The URL and OAuth settings of `server`, or the exit message.
fn oauth_server(h: &Host, server: &str) -> Result<(String, crate::OAuthConfig), String> {
    let Some(s) = h.servers().iter().find(|s| s.spec.name == server) else {
        return Err(format!(
            "no configured server is named '{}'; `wasmgate status` lists them",
            crate::terminal::line(server)
        ));
    };
    match (&s.spec.transport, &s.spec.oauth) {
        (Transport::Http { url, .. }, Some(cfg)) => Ok((url.clone(), (**cfg).clone())),
        _ => Err(format!(
            "server '{}' has no `auth: oauth` in its entry (docs/mcp-client.md §9)",
            crate::terminal::line(server)
        )),
    }
}

/// Runs `wasmgate login`; the exit code.
pub async fn run_login(h: &Host, args: &LoginArgs) -> u8 {
    let (url, cfg) = match oauth_server(h, &args.server) {
        Ok(v) => v,
        Err(msg) => {
            eprintln!("wasmgate login: {msg}");
            return 1;
        }
    };
    let wait = std::time::Duration::from_secs(args.wait.clamp(1, 3600));
    if args.device {
        let no_browser = args.no_browser;
        let show = move |p: &oauth::device::DevicePrompt| {
            eprintln!(
                "To log in, open {} on any device and enter the code {} (it expires in {} s).",
                p.verification_uri, p.user_code, p.expires_in
            );
            if let Some(u) = &p.verification_uri_complete {
                eprintln!("Or open this URL, which has the code in it:\n  {u}");
                if !no_browser {
                    login::open_with_system(u);
                }
            }
        };
        return match oauth::device::login_device(&args.server, &url, &cfg, show, wait).await {
            Ok(()) => logged_in(&args.server, &url),
            Err(e) => {
                eprintln!("wasmgate login: {}", crate::terminal::line(&e));
                1
            }
        };
    }
    let browser = if args.no_browser {
        Box::new(
            |url: String| -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
                Box::pin(async move { eprintln!("Open this URL in a browser to log in:\n  {url}") })
            },
        ) as login::OpenBrowser
    } else {
        login::system_browser()
    };
    match login::login(&args.server, &url, &cfg, browser, wait).await {
        Ok(()) => logged_in(&args.server, &url),
        Err(e) => {
            eprintln!("wasmgate login: {}", crate::terminal::line(&e));
            1
        }
    }
}

/// Says the login worked and where it is kept (the OS keyring or the
/// file); the exit code.
fn logged_in(server: &str, url: &str) -> u8 {
    let kept = oauth::store_for(server, url)
        .ok()
        .and_then(|s| s.kept_in())
        .map(|w| format!(" (kept in {w})"))
        .unwrap_or_default();
    eprintln!(
        "wasmgate login: logged in to '{}'{kept}",
        crate::terminal::line(server)
    );
    0
}

/// Runs `wasmgate logout SERVER`: removes the server's token file.
pub fn run_logout(h: &Host, server: &str) -> u8 {
    let (url, _) = match oauth_server(h, server) {
        Ok(v) => v,
        Err(msg) => {
            eprintln!("wasmgate logout: {msg}");
            return 1;
        }
    };
    let store = match oauth::store_for(server, &url) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("wasmgate logout: {e}");
            return 1;
        }
    };
    match store.remove() {
        Ok(true) => {
            eprintln!(
                "wasmgate logout: forgot the login of '{}'",
                crate::terminal::line(server)
            );
            0
        }
        Ok(false) => {
            eprintln!(
                "wasmgate logout: '{}' was not logged in",
                crate::terminal::line(server)
            );
            0
        }
        Err(e) => {
            eprintln!("wasmgate logout: {e}");
            1
        }
    }
}
