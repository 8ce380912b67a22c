//! The per-server token store (docs/mcp-client.md §9, "Where tokens live"):
//! one JSON file per server, `<dir>/<server>.json`, readable only by the
//! user (mode 0600 in a 0700 folder on unix), written whole through a
//! temporary file and a rename so a crash never leaves half a token.
//!
//! The file binds the tokens to the server's URL (the OAuth `resource`);
//! rmcp binds them to the issuer ([`StoredCredentials::issuer`]) and drops
//! them when the authorization server changes. A refresh response without
//! a refresh token keeps the previous one (rmcp does so before it saves,
//! and [`FileCredentialStore::save`] does it again for any other writer).

use std::path::{Path, PathBuf};

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

/// The token file of one server, an rmcp [`CredentialStore`].
#[derive(Debug, Clone)]
pub struct FileCredentialStore {
    path: PathBuf,
    resource: String,
}

impl FileCredentialStore {
    /// The store of server `server` (its `mcp_servers` key) at `url`,
    /// in `dir`. The server name is a file name: names that are not plain
    /// (`/`, `..`, control characters) are hex-encoded.
    pub fn new(dir: &Path, server: &str, url: &str) -> FileCredentialStore {
        FileCredentialStore {
            path: dir.join(format!("{}.json", file_stem(server))),
            resource: url.to_string(),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the file holds a token response for this server's URL.
    pub fn has_tokens(&self) -> bool {
        matches!(self.read(), Ok(Some(c)) if c.token_response.is_some())
    }

    /// Removes the file (`wasmgate logout`); `Ok(false)` when there was none.
    ///
    /// # Errors
    /// The file exists and cannot be removed.
    pub fn remove(&self) -> std::io::Result<bool> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn read(&self) -> Result<Option<StoredCredentials>, String> {
        Ok(self.read_file()?.map(|f| f.credentials))
    }

    /// The step-up challenge recorded by [`FileCredentialStore::record_step_up`].
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

    fn read_file(&self) -> Result<Option<TokenFile>, String> {
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
        // A file that no longer parses (another version, damage) means
        // "not logged in", never a crash; the error names no value.
        let Ok(file) = serde_json::from_str::<TokenFile>(&text) else {
            tracing::warn!(path = %self.path.display(), "token file does not parse; ignored");
            return Ok(None);
        };
        Ok((file.resource == self.resource).then_some(file))
    }

    fn write(&self, credentials: StoredCredentials) -> Result<(), String> {
        let step_up = self.read_file().ok().flatten().and_then(|f| f.step_up);
        self.write_file(&TokenFile {
            resource: self.resource.clone(),
            credentials,
            step_up,
        })
    }

    fn write_file(&self, file: &TokenFile) -> Result<(), String> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let text = serde_json::to_vec(file).map_err(|e| e.to_string())?;
        let tmp = self
            .path
            .with_extension(format!("json.{}.tmp", std::process::id()));
        write_private(&tmp, &text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("{}: {e}", self.path.display())
        })
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
impl CredentialStore for FileCredentialStore {
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
            .map_err(|e| AuthError::CredentialStoreError(format!("{}: {e}", self.path.display())))
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
        let store = FileCredentialStore::new(dir.path(), "srv", "https://mcp.example/mcp");
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
        let s = FileCredentialStore::new(&tokens, "remote", "https://mcp.example/mcp");
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
        let other = FileCredentialStore::new(&tokens, "remote", "https://elsewhere.example/mcp");
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
        let s = FileCredentialStore::new(dir.path(), "a", "https://x.example/");
        std::fs::write(s.path(), "{not json").unwrap();
        assert!(s.load().await.unwrap().is_none());
        std::fs::write(s.path(), vec![b' '; MAX_TOKEN_FILE_BYTES as usize + 10]).unwrap();
        assert!(s.load().await.is_err());
        for name in ["../x", "a/b", ".hidden", "", "x\u{1b}y"] {
            let p = FileCredentialStore::new(dir.path(), name, "https://x.example/");
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
