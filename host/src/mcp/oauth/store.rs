//! The per-server token store (docs/mcp-client.md §9, "Where tokens live"):
//! one JSON record per server, in the OS keyring (the `keyring` crate:
//! Secret Service, Keychain, Credential Manager; service
//! [`KEYRING_SERVICE`], the server's name as the user) when it is there,
//! else in a file `<dir>/<server>.json` readable only by the user (mode
//! 0600 in a 0700 folder on unix), written whole through a temporary file
//! and a rename so a crash never leaves half a token. A login saved to the
//! keyring removes the server's file, so a token is never kept twice.
//!
//! The file binds the tokens to the server's URL (the OAuth `resource`);
//! rmcp binds them to the issuer ([`StoredCredentials::issuer`]) and drops
//! them when the authorization server changes. A refresh response without
//! a refresh token keeps the previous one (rmcp does so before it saves,
//! and [`TokenStore::save`] does it again for any other writer).

use std::path::{Path, PathBuf};
use std::time::Duration;

use oauth2::TokenResponse as _;
use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

/// Largest token file read, in bytes: a token response is a few KiB.
pub const MAX_TOKEN_FILE_BYTES: u64 = 256 * 1024;

/// `WASMGATE_OAUTH_DIR`, else `<user config dir>/wasmgate/oauth`; `None`
/// when the machine has no user config dir.
pub fn default_token_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("WASMGATE_OAUTH_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    use etcetera::BaseStrategy;
    etcetera::choose_base_strategy()
        .ok()
        .map(|s| s.config_dir().join("wasmgate").join("oauth"))
}

/// The keyring service every login is kept under; the entry's user is the
/// server's name (its `mcp_servers` key).
pub const KEYRING_SERVICE: &str = "wasmgate-oauth";

/// How long one keyring operation may take: a Secret Service whose
/// collection is locked may wait for an unlock prompt nobody sees. Past it
/// the keyring counts as unavailable and the file is used.
const KEYRING_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a store keeps its logins (`WASMGATE_OAUTH_STORE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// The OS keyring, the file when the keyring is unavailable or refuses
    /// the record (Windows' Credential Manager holds at most 2,560 bytes).
    Keyring,
    /// Files only.
    File,
}

impl StoreKind {
    /// `WASMGATE_OAUTH_STORE` (`keyring` or `file`); unset or empty:
    /// `default`.
    ///
    /// # Errors
    /// Another value, named.
    pub fn from_env(default: StoreKind) -> Result<StoreKind, String> {
        match std::env::var("WASMGATE_OAUTH_STORE").as_deref() {
            Err(_) | Ok("") => Ok(default),
            Ok("keyring") => Ok(StoreKind::Keyring),
            Ok("file") => Ok(StoreKind::File),
            Ok(other) => Err(format!(
                "WASMGATE_OAUTH_STORE must be `keyring` or `file` (got {:?})",
                crate::terminal::cut_chars(other, 40)
            )),
        }
    }
}

/// What one token file holds.
#[derive(Serialize, Deserialize)]
struct TokenFile {
    /// The server URL the tokens were granted for.
    resource: String,
    credentials: StoredCredentials,
    /// The `WWW-Authenticate` challenge of a 403 `insufficient_scope`
    /// (scope step-up): the next login asks for its scope. Kept across
    /// refreshes, dropped by the login that follows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step_up: Option<String>,
}

/// Longest step-up challenge kept, in bytes (a header of a few scopes).
pub const MAX_STEP_UP_BYTES: usize = 4096;

/// The login of one server, an rmcp [`CredentialStore`]: its keyring
/// entry or its token file.
#[derive(Debug, Clone)]
pub struct TokenStore {
    path: PathBuf,
    resource: String,
    server: String,
    kind: StoreKind,
}

impl TokenStore {
    /// The store of server `server` (its `mcp_servers` key) at `url`, with
    /// its file in `dir`. The server name is a file name: names that are
    /// not plain (`/`, `..`, control characters) are hex-encoded.
    pub fn new(dir: &Path, server: &str, url: &str, kind: StoreKind) -> TokenStore {
        TokenStore {
            path: dir.join(format!("{}.json", file_stem(server))),
            resource: url.to_string(),
            server: server.to_string(),
            kind,
        }
    }

    /// The file's path (the login is there when the keyring is not used).
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the login is kept now, in words: "the OS keyring" or the
    /// file's path; `None` without a login.
    pub fn kept_in(&self) -> Option<String> {
        if self.kind == StoreKind::Keyring
            && matches!(self.keyring_get(), Ok(Some(text)) if self.parse(&text, "keyring").is_some())
        {
            return Some("the OS keyring".into());
        }
        matches!(self.read_from_file(), Ok(Some(_))).then(|| self.path.display().to_string())
    }

    /// Whether the file holds a token response for this server's URL.
    pub fn has_tokens(&self) -> bool {
        matches!(self.read(), Ok(Some(c)) if c.token_response.is_some())
    }

    /// Removes the login (`wasmgate logout`): the keyring entry and the
    /// file; `Ok(false)` when there was neither.
    ///
    /// # Errors
    /// The file exists and cannot be removed, or the keyring holds an
    /// entry it refuses to delete.
    pub fn remove(&self) -> Result<bool, String> {
        let mut removed = false;
        if self.kind == StoreKind::Keyring {
            match self.keyring_delete() {
                Ok(had) => removed |= had,
                // An unreachable keyring holds nothing of ours to remove.
                Err(KeyringFailure::Unavailable(why)) => {
                    tracing::debug!(server = %self.server, "keyring: {why}")
                }
                Err(KeyringFailure::Refused(why)) => {
                    return Err(format!("the OS keyring: {why}"));
                }
            }
        }
        match std::fs::remove_file(&self.path) {
            Ok(()) => removed = true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("{}: {e}", self.path.display())),
        }
        Ok(removed)
    }

    fn read(&self) -> Result<Option<StoredCredentials>, String> {
        Ok(self.read_file()?.map(|f| f.credentials))
    }

    /// The step-up challenge recorded by [`TokenStore::record_step_up`].
    pub fn step_up(&self) -> Option<String> {
        self.read_file().ok().flatten().and_then(|f| f.step_up)
    }

    /// Records a 403 `insufficient_scope` challenge of this server (cut to
    /// [`MAX_STEP_UP_BYTES`]) so the next login asks for its scope; nothing
    /// happens without a login on file.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn record_step_up(&self, challenge: &str) -> Result<(), String> {
        let Some(mut file) = self.read_file()? else {
            return Ok(());
        };
        let mut cut = challenge.len().min(MAX_STEP_UP_BYTES);
        while !challenge.is_char_boundary(cut) {
            cut -= 1;
        }
        file.step_up = Some(challenge[..cut].to_string());
        self.write_file(&file)
    }

    /// Drops the step-up challenge (the login that asked for it succeeded).
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn clear_step_up(&self) -> Result<(), String> {
        match self.read_file()? {
            Some(mut file) if file.step_up.is_some() => {
                file.step_up = None;
                self.write_file(&file)
            }
            _ => Ok(()),
        }
    }

    /// The record: the keyring's entry, else the file (a login from before
    /// the keyring, or one the keyring refused).
    fn read_file(&self) -> Result<Option<TokenFile>, String> {
        if self.kind == StoreKind::Keyring {
            match self.keyring_get() {
                Ok(Some(text)) => return Ok(self.parse(&text, "keyring")),
                Ok(None) => {}
                Err(why) => tracing::debug!(server = %self.server, "keyring: {why}"),
            }
        }
        self.read_from_file()
    }

    /// A record's text, bound to this server's URL; `None` when it does not
    /// parse or is another URL's.
    fn parse(&self, text: &str, from: &str) -> Option<TokenFile> {
        // A record that no longer parses (another version, damage) means
        // "not logged in", never a crash; the error names no value.
        let Ok(file) = serde_json::from_str::<TokenFile>(text) else {
            tracing::warn!(server = %self.server, from, "the stored login does not parse; ignored");
            return None;
        };
        (file.resource == self.resource).then_some(file)
    }

    fn read_from_file(&self) -> Result<Option<TokenFile>, String> {
        use std::io::Read;
        let f = match std::fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", self.path.display())),
        };
        let mut text = String::new();
        f.take(MAX_TOKEN_FILE_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        if text.len() as u64 > MAX_TOKEN_FILE_BYTES {
            return Err(format!(
                "{}: larger than {MAX_TOKEN_FILE_BYTES} bytes",
                self.path.display()
            ));
        }
        Ok(self.parse(&text, "file"))
    }

    fn write(&self, credentials: StoredCredentials) -> Result<(), String> {
        let step_up = self.read_file().ok().flatten().and_then(|f| f.step_up);
        self.write_file(&TokenFile {
            resource: self.resource.clone(),
            credentials,
            step_up,
        })
    }

    /// Saves the record: to the keyring (and the file, now stale, goes),
    /// else to the file, saying once per process why the keyring was not
    /// used.
    fn write_file(&self, file: &TokenFile) -> Result<(), String> {
        let text = serde_json::to_string(file).map_err(|e| e.to_string())?;
        if self.kind == StoreKind::Keyring {
            match self.keyring_set(&text) {
                Ok(()) => {
                    match std::fs::remove_file(&self.path) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => tracing::warn!(
                            "{}: the login is in the OS keyring, but this older copy cannot be removed: {e}",
                            self.path.display()
                        ),
                    }
                    return Ok(());
                }
                Err(why) => {
                    static SAID: std::sync::Once = std::sync::Once::new();
                    SAID.call_once(|| {
                        tracing::warn!(
                            "the OS keyring is not used ({}); logins are kept in files readable only by you, in {}",
                            why.text(),
                            self.path.parent().unwrap_or(Path::new(".")).display()
                        )
                    });
                }
            }
        }
        self.write_to_file(text.as_bytes())
    }

    fn write_to_file(&self, text: &[u8]) -> Result<(), String> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let tmp = self
            .path
            .with_extension(format!("json.{}.tmp", std::process::id()));
        write_private(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: {e}", self.path.display())
        })
    }
}

/// Why a keyring operation did not happen.
#[derive(Debug)]
enum KeyringFailure {
    /// No keyring here (no Secret Service on the bus, no bus, no answer in
    /// [`KEYRING_TIMEOUT`], a platform without one).
    Unavailable(String),
    /// The keyring answered and refused (too long, no access).
    Refused(String),
}

impl KeyringFailure {
    fn text(&self) -> &str {
        match self {
            KeyringFailure::Unavailable(s) | KeyringFailure::Refused(s) => s,
        }
    }
}

impl std::fmt::Display for KeyringFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

impl TokenStore {
    fn keyring_get(&self) -> Result<Option<String>, KeyringFailure> {
        let text = keyring_op(&self.server, |e| match e.get_password() {
            Ok(t) => Ok(Some(t)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(e),
        })?;
        // The same bound as a token file.
        Ok(text.filter(|t| {
            let fits = t.len() as u64 <= MAX_TOKEN_FILE_BYTES;
            if !fits {
                tracing::warn!(server = %self.server, "the keyring's login is over {MAX_TOKEN_FILE_BYTES} bytes; ignored");
            }
            fits
        }))
    }

    fn keyring_set(&self, text: &str) -> Result<(), KeyringFailure> {
        let text = text.to_string();
        keyring_op(&self.server, move |e| e.set_password(&text))
    }

    fn keyring_delete(&self) -> Result<bool, KeyringFailure> {
        keyring_op(&self.server, |e| match e.delete_credential() {
            Ok(()) => Ok(true),
            Err(keyring::Error::NoEntry) => Ok(false),
            Err(e) => Err(e),
        })
    }
}

/// Runs `op` on the keyring entry of `server` on a thread of its own (the
/// Secret Service client runs its own runtime, which must not start inside
/// the caller's), waiting at most [`KEYRING_TIMEOUT`].
#[cfg(any(target_os = "linux", target_os = "macos", windows))]
fn keyring_op<T: Send + 'static>(
    server: &str,
    op: impl FnOnce(&keyring::Entry) -> keyring::Result<T> + Send + 'static,
) -> Result<T, KeyringFailure> {
    let server = server.to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("wasmgate-keyring".into())
        .spawn(move || {
            let r = keyring::Entry::new(KEYRING_SERVICE, &server).and_then(|e| op(&e));
            let _ = tx.send(r);
        })
        .map_err(|e| KeyringFailure::Unavailable(format!("no thread for the keyring: {e}")))?;
    match rx.recv_timeout(KEYRING_TIMEOUT) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(keyring_failure(&e)),
        Err(_) => Err(KeyringFailure::Unavailable(format!(
            "no answer from the OS keyring within {} s",
            KEYRING_TIMEOUT.as_secs()
        ))),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
fn keyring_op<T>(
    _: &str,
    _: impl FnOnce(&keyring::Entry) -> keyring::Result<T>,
) -> Result<T, KeyringFailure> {
    Err(KeyringFailure::Unavailable(
        "this platform has no keyring wasmgate uses".into(),
    ))
}

/// A keyring error in words; the record's bytes (in `BadEncoding`) are
/// never shown.
#[cfg(any(target_os = "linux", target_os = "macos", windows))]
fn keyring_failure(e: &keyring::Error) -> KeyringFailure {
    let cut = |s: String| crate::terminal::line(&crate::terminal::cut_chars(&s, 300)).into_owned();
    match e {
        keyring::Error::PlatformFailure(p) => KeyringFailure::Unavailable(cut(p.to_string())),
        keyring::Error::NoStorageAccess(p) => {
            KeyringFailure::Refused(cut(format!("no access: {p}")))
        }
        keyring::Error::TooLong(what, max) => KeyringFailure::Refused(format!(
            "its {} is over the platform's limit of {max}",
            cut(what.clone())
        )),
        keyring::Error::BadEncoding(_) => KeyringFailure::Refused("the entry is not UTF-8".into()),
        other => KeyringFailure::Refused(cut(format!("{other}").chars().take(120).collect())),
    }
}

/// `server` as a file stem: kept when it is letters, digits, `-`, `_`, `.`
/// (not leading), else `x-` and its bytes in hex.
fn file_stem(server: &str) -> String {
    let plain = !server.is_empty()
        && !server.starts_with('.')
        && server.len() <= 100
        && server
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if plain {
        server.to_string()
    } else {
        let hex: String = server
            .bytes()
            .take(100)
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("x-{hex}")
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(path)?;
    // A file left by an older umask is narrowed too.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    f.write_all(bytes)?;
    f.sync_all()
}

#[async_trait::async_trait]
impl CredentialStore for TokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.read().map_err(AuthError::CredentialStoreError)
    }

    async fn save(&self, mut credentials: StoredCredentials) -> Result<(), AuthError> {
        // Keep the refresh token when a new response carries none (RFC 6749
        // §6 lets the server omit it; erasing it would force a new login).
        let client_id = credentials.client_id.clone();
        if let (Some(new), Ok(Some(old))) = (credentials.token_response.as_mut(), self.read())
            && new.refresh_token().is_none()
            && old.client_id == client_id
            && let Some(old_refresh) = old.token_response.as_ref().and_then(|t| t.refresh_token())
        {
            new.set_refresh_token(Some(old_refresh.clone()));
        }
        self.write(credentials)
            .map_err(AuthError::CredentialStoreError)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove()
            .map(|_| ())
            .map_err(AuthError::CredentialStoreError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oauth2::TokenResponse;
    use rmcp::transport::auth::OAuthTokenResponse;

    fn creds(access: &str, refresh: Option<&str>) -> StoredCredentials {
        let mut v = serde_json::json!({"access_token": access, "token_type": "Bearer"});
        if let Some(r) = refresh {
            v["refresh_token"] = r.into();
        }
        let t: OAuthTokenResponse = serde_json::from_value(v).unwrap();
        StoredCredentials::new("client-1".into(), Some(t), vec![], Some(1))
    }

    #[tokio::test]
    async fn a_step_up_challenge_is_kept_across_refreshes_and_dropped_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::new(
            dir.path(),
            "srv",
            "https://mcp.example/mcp",
            StoreKind::File,
        );
        // No login on file: nothing to attach it to.
        store.record_step_up("Bearer scope=\"a\"").unwrap();
        assert_eq!(store.step_up(), None);
        store.save(creds("at-1", Some("rt-1"))).await.unwrap();
        let long = format!(
            "Bearer error=\"insufficient_scope\", scope=\"a b\"{}",
            "x".repeat(9000)
        );
        store.record_step_up(&long).unwrap();
        let kept = store.step_up().unwrap();
        assert!(kept.len() <= MAX_STEP_UP_BYTES && long.starts_with(&kept));
        // A refresh saves new tokens: the challenge stays for the login.
        store.save(creds("at-2", None)).await.unwrap();
        assert_eq!(store.step_up().as_deref(), Some(kept.as_str()));
        let c = store.load().await.unwrap().unwrap();
        assert_eq!(c.token_response.unwrap().access_token().secret(), "at-2");
        store.clear_step_up().unwrap();
        assert_eq!(store.step_up(), None);
        assert!(store.has_tokens());
    }

    #[tokio::test]
    async fn file_is_private_bound_to_the_url_and_keeps_the_refresh_token() {
        let dir = tempfile::tempdir().unwrap();
        let tokens = dir.path().join("oauth");
        let s = TokenStore::new(
            &tokens,
            "remote",
            "https://mcp.example/mcp",
            StoreKind::File,
        );
        assert!(s.load().await.unwrap().is_none());
        s.save(creds("access-1", Some("refresh-1"))).await.unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(s.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "token file mode {mode:o}");
            let dmode = std::fs::metadata(&tokens).unwrap().permissions().mode();
            assert_eq!(dmode & 0o777, 0o700, "token folder mode {dmode:o}");
        }
        // A refresh response without a refresh token keeps the old one.
        s.save(creds("access-2", None)).await.unwrap();
        let back = s.load().await.unwrap().unwrap();
        let t = back.token_response.unwrap();
        assert_eq!(t.access_token().secret(), "access-2");
        assert_eq!(t.refresh_token().unwrap().secret(), "refresh-1");
        // A rotated one replaces it.
        s.save(creds("access-3", Some("refresh-2"))).await.unwrap();
        let t = s.load().await.unwrap().unwrap().token_response.unwrap();
        assert_eq!(t.refresh_token().unwrap().secret(), "refresh-2");
        // Another URL under the same name sees no login.
        let other = TokenStore::new(
            &tokens,
            "remote",
            "https://elsewhere.example/mcp",
            StoreKind::File,
        );
        assert!(other.load().await.unwrap().is_none());
        assert!(!other.has_tokens());
        assert!(s.has_tokens());
        // Logout forgets it.
        assert!(s.remove().unwrap());
        assert!(!s.remove().unwrap());
        assert!(s.load().await.unwrap().is_none());
    }

    #[tokio::test]
    async fn damaged_or_huge_files_are_no_login_and_names_stay_in_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let s = TokenStore::new(dir.path(), "a", "https://x.example/", StoreKind::File);
        std::fs::write(s.path(), "{not json").unwrap();
        assert!(s.load().await.unwrap().is_none());
        std::fs::write(s.path(), vec![b' '; MAX_TOKEN_FILE_BYTES as usize + 10]).unwrap();
        assert!(s.load().await.is_err());
        for name in ["../x", "a/b", ".hidden", "", "x\u{1b}y"] {
            let p = TokenStore::new(dir.path(), name, "https://x.example/", StoreKind::File);
            assert_eq!(p.path().parent(), Some(dir.path()), "{name:?}");
            assert!(
                p.path()
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with("x-")
            );
        }
        assert_eq!(file_stem("linear-2.prod"), "linear-2.prod");
    }
}
