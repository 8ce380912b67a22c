//! Tool naming (`docs/mcp-client.md` §2): `mcp_{server}_{tool}`, sanitized,
//! at most [`MAX_TOOL_NAME`] characters, collisions resolved by configured
//! server order. Below both its users: the MCP client mints names with it,
//! the manifest checks that server names mint distinct prefixes
//! (`docs/design.md` §3).
//!
//! Config servers' namespaces are kept from plugins ([`mint_all_reserving`],
//! `docs/security.md`, "What a plugin's manifest may reach"): a plugin
//! server's tool whose plain name starts with `mcp_<config server>_` gets
//! the hashed form, whether that config server is connected or not, so a
//! plugin server `bank.transfer` never takes `mcp_bank_transfer_to` from
//! the config's `bank`. The rule is stateless and deterministic.

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

/// Longest registered tool name, in characters.
pub const MAX_TOOL_NAME: usize = 64;
/// Characters kept before `_` + 8 hex digits in the hashed form.
const HASHED_PREFIX: usize = 55;

/// Replaces every character outside `[A-Za-z0-9_]` with `_` (one `_` per
/// code point, so `é` becomes one `_`).
pub fn sanitize(s: &str) -> String {
    // Most names need no change: one copy, not a push per character.
    if s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return s.to_string();
    }
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// First 8 hex digits of SHA-256 of `<server>/<tool>` (raw, unsanitized).
fn short_hash(server: &str, tool: &str) -> String {
    let digest = Sha256::digest(format!("{server}/{tool}").as_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

/// `mcp_{sanitize(server)}_{sanitize(tool)}` before any length rule.
fn plain_name(server: &str, tool: &str) -> String {
    format!("mcp_{}_{}", sanitize(server), sanitize(tool))
}

/// The hashed form: the first 55 characters of the plain name, `_`, and the
/// first 8 hex digits of SHA-256(`<server>/<tool>`). At most 64 characters;
/// unique per (server, tool). The client mints with an agent's budget
/// ([`hashed_name_within`]); this 64-character form is for tests.
#[cfg(any(test, feature = "internals"))]
pub fn hashed_name(server: &str, tool: &str) -> String {
    hashed_name_within(server, tool, MAX_TOOL_NAME)
}

/// [`hashed_name`] for names of at most `max` characters (a name budget,
/// [`agent_name_budget`]): the first `max - 9` characters of the plain
/// name, `_`, 8 hex digits.
pub fn hashed_name_within(server: &str, tool: &str, max: usize) -> String {
    let plain = plain_name(server, tool);
    let keep = max.clamp(MIN_NAME_BUDGET, MAX_TOOL_NAME) - 9;
    // The plain name is ASCII after sanitizing, so bytes == characters.
    let prefix = &plain[..plain.len().min(keep)];
    format!("{prefix}_{}", short_hash(server, tool))
}

/// The name a tool gets without collisions: the plain name, or the hashed
/// form when the plain name is longer than [`MAX_TOOL_NAME`].
pub fn tool_name(server: &str, tool: &str) -> String {
    tool_name_within(server, tool, MAX_TOOL_NAME)
}

/// [`tool_name`] within a name budget of `max` characters.
pub fn tool_name_within(server: &str, tool: &str, max: usize) -> String {
    let plain = plain_name(server, tool);
    if plain.len() > max.clamp(MIN_NAME_BUDGET, MAX_TOOL_NAME) {
        hashed_name_within(server, tool, max)
    } else {
        plain
    }
}

/// The smallest name budget: room for `mcp_` and a few characters before
/// the hashed form's `_` + 8 hex digits.
pub const MIN_NAME_BUDGET: usize = 24;

/// The agents `serve --name-budget` knows (`docs/mcp-client.md` §2.3).
pub const BUDGET_AGENTS: [&str; 8] = [
    "claude-code",
    "claude-desktop",
    "cursor",
    "windsurf",
    "vscode",
    "codex",
    "goose",
    "hermes",
];

/// The longest tool name `wasmgate serve`, added to `agent` under the
/// server name `server`, may offer so that the name the agent shows its
/// model stays within the agent's limit after the agent's own prefix:
/// Claude Code and Codex show `mcp__<server>__<tool>` and cap it at 64;
/// Cursor and Windsurf cap `<server>` + `<tool>` at 60; Goose shows
/// `<server>__<tool>`; VS Code and Hermes `mcp_<server>_<tool>`; Claude
/// Desktop sends `<tool>` under the API's 64. `None` for another agent.
pub fn agent_name_budget(agent: &str, server: &str) -> Option<usize> {
    let s = server.chars().count();
    let budget = match agent {
        "claude-code" | "codex" => 64usize.saturating_sub(s + 7),
        "cursor" | "windsurf" => 60usize.saturating_sub(s),
        "goose" => 64usize.saturating_sub(s + 2),
        "vscode" | "hermes" => 64usize.saturating_sub(s + 5),
        "claude-desktop" => 64,
        _ => return None,
    };
    Some(budget.clamp(MIN_NAME_BUDGET, MAX_TOOL_NAME))
}

/// Whether `name` can be a registered tool name of `server`: every name its
/// tools get, plain or hashed, starts with `mcp_<server>_` cut to the hashed
/// form's first 55 characters. (Servers whose names share a prefix may both
/// match.)
pub fn may_own_tool(server: &str, name: &str) -> bool {
    let prefix = format!("mcp_{}_", sanitize(server));
    // ASCII after sanitizing, so bytes == characters.
    name.starts_with(&prefix[..prefix.len().min(HASHED_PREFIX)])
}

/// A naming collision, reported in status (§2, §6).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Collision {
    /// The contested name.
    pub name: String,
    /// Server whose tool kept the name.
    pub kept_by: String,
    /// Server of the tool that lost it.
    pub server: String,
    /// That tool's original name.
    pub tool: String,
    /// The name it got instead (`None` when even the hashed form was taken
    /// and the tool is not registered).
    pub renamed_to: Option<String>,
    /// `true` when the name lies in the namespace of config server
    /// `kept_by` (kept for it whether it is connected or not); `false` for
    /// a name another server's tool took first.
    pub reserved: bool,
}

/// One registered name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minted {
    /// Registered name.
    pub name: String,
    /// Configured server name.
    pub server: String,
    /// Original tool name, used on the wire.
    pub tool: String,
}

/// Names every `(server, tool)` pair, given in configured server order and
/// the server's own tool order. The first pair to want a name keeps it; a
/// later one gets the hashed form and a [`Collision`] is recorded. Exact
/// duplicates (the same server listing a tool twice) are kept once. The
/// client always mints with the reserved namespaces and the agents' budget
/// ([`mint_all_reserving_within`]); this form is for the rule's unit tests.
#[cfg(test)]
fn mint_all<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> (Vec<Minted>, Vec<Collision>) {
    mint_all_reserving(pairs.into_iter().map(|(s, t)| (s, t, false)), &[])
}

/// The config server of `reserved` whose namespace `mcp_<server>_` holds
/// the plain name of `server`'s `tool`, if any (the first in `reserved`
/// order). `server` itself never reserves against itself.
pub fn reserved_owner<'r>(reserved: &'r [String], server: &str, tool: &str) -> Option<&'r str> {
    let plain = plain_name(server, tool);
    reserved
        .iter()
        .filter(|c| c.as_str() != server)
        .find(|c| plain.starts_with(&format!("mcp_{}_", sanitize(c))))
        .map(String::as_str)
}

/// [`mint_all`] where each pair says whether its server comes from a
/// plugin, and `reserved` lists the config's server names (connected or
/// not). A plugin server's tool whose plain name lies in a reserved
/// namespace ([`reserved_owner`]) never gets its plain name: it gets the
/// hashed form, and a [`Collision`] with `reserved: true` names the config
/// server. Everything else is as in [`mint_all`].
#[cfg(test)]
fn mint_all_reserving<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str, bool)>,
    reserved: &[String],
) -> (Vec<Minted>, Vec<Collision>) {
    mint_all_reserving_within(pairs, reserved, MAX_TOOL_NAME)
}

/// [`mint_all_reserving`] with every name at most `max` characters (the
/// same hashed form and collision rule, [`tool_name_within`]).
pub fn mint_all_reserving_within<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str, bool)>,
    reserved: &[String],
    max: usize,
) -> (Vec<Minted>, Vec<Collision>) {
    let tool_name = |s: &str, t: &str| tool_name_within(s, t, max);
    let hashed_name = |s: &str, t: &str| hashed_name_within(s, t, max);
    let mut taken: std::collections::BTreeMap<String, String> = Default::default();
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let mut out = Vec::new();
    let mut collisions = Vec::new();
    for (server, tool, from_plugin) in pairs {
        if !seen.insert((server.to_string(), tool.to_string())) {
            continue;
        }
        let want = tool_name(server, tool);
        // Who keeps the plain name instead: a config server whose namespace
        // a plugin server's tool lies in, or the server that took it first.
        let squat = from_plugin
            .then(|| reserved_owner(reserved, server, tool))
            .flatten();
        let owner = match squat {
            Some(config) => Some((config.to_string(), true)),
            None => taken.get(&want).map(|o| (o.clone(), false)),
        };
        let name = match owner {
            None => want,
            Some((kept_by, is_reserved)) => {
                let alt = hashed_name(server, tool);
                let renamed = (!taken.contains_key(&alt)).then(|| alt.clone());
                collisions.push(Collision {
                    name: want,
                    kept_by,
                    server: server.to_string(),
                    tool: tool.to_string(),
                    renamed_to: renamed.clone(),
                    reserved: is_reserved,
                });
                match renamed {
                    Some(n) => n,
                    None => continue,
                }
            }
        };
        taken.insert(name.clone(), server.to_string());
        out.push(Minted {
            name,
            server: server.to_string(),
            tool: tool.to_string(),
        });
    }
    (out, collisions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_of_plain_and_hashed_names() {
        assert!(may_own_tool("git", &tool_name("git", "log")));
        assert!(!may_own_tool("git", &tool_name("blender", "log")));
        let long = "a-server-name-that-is-long-enough-to-be-cut-in-the-hashed-form";
        let hashed = tool_name(long, "tool");
        assert_eq!(hashed, hashed_name(long, "tool"));
        assert!(may_own_tool(long, &hashed));
        assert!(!may_own_tool("git", &hashed));
    }

    #[test]
    fn sanitize_examples_of_the_seed() {
        assert_eq!(
            tool_name("filesystem", "read_file"),
            "mcp_filesystem_read_file"
        );
        assert_eq!(tool_name("github", "list-issues"), "mcp_github_list_issues");
        assert_eq!(tool_name("my-api", "fetch.data"), "mcp_my_api_fetch_data");
        assert_eq!(sanitize("a b/c:é"), "a_b_c__");
        assert_eq!(sanitize("日本"), "__");
    }

    #[test]
    fn long_names_get_the_hashed_form() {
        let tool = "t".repeat(80);
        let n = tool_name("srv", &tool);
        assert_eq!(n.len(), 64);
        let plain = format!("mcp_srv_{tool}");
        assert_eq!(&n[..55], &plain[..55]);
        assert_eq!(&n[55..56], "_");
        let digest = Sha256::digest(format!("srv/{tool}").as_bytes());
        let hex: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(&n[56..], hex);
        // Exactly 64 stays plain.
        let t = "x".repeat(64 - "mcp_s_".len());
        assert_eq!(tool_name("s", &t), format!("mcp_s_{t}"));
        // Hash is of the raw names: two tools that sanitize alike differ.
        let a = "a".repeat(70) + "-x";
        let b = "a".repeat(70) + ".x";
        assert_ne!(tool_name("s", &a), tool_name("s", &b));
    }

    #[test]
    fn collisions_first_configured_keeps_the_name() {
        // Servers "a-b" and "a_b" both mint mcp_a_b_run.
        let (names, coll) = mint_all([("a-b", "run"), ("a_b", "run"), ("a_b", "other")]);
        assert_eq!(names[0].name, "mcp_a_b_run");
        assert_eq!(names[0].server, "a-b");
        assert_eq!(names[1].name, hashed_name("a_b", "run"));
        assert_eq!(names[1].tool, "run");
        assert_eq!(names[2].name, "mcp_a_b_other");
        assert_eq!(coll.len(), 1);
        assert_eq!(coll[0].kept_by, "a-b");
        assert_eq!(coll[0].server, "a_b");
        assert_eq!(coll[0].renamed_to.as_deref(), Some(names[1].name.as_str()));
    }

    #[test]
    fn a_plugin_server_inside_a_config_namespace_gets_hashed_names() {
        let reserved = vec!["bank".to_string(), "my_api".to_string()];
        // The config's `bank` is down: only the plugin's tools are minted.
        let (names, coll) = mint_all_reserving(
            [
                ("bank.transfer", "to", true),
                ("bank.transfer", "from", true),
                ("my", "api_x", true),
                ("my", "other", true),
                ("banker", "x", true),
            ],
            &reserved,
        );
        let got: Vec<&str> = names.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            got,
            [
                hashed_name("bank.transfer", "to").as_str(),
                hashed_name("bank.transfer", "from").as_str(),
                hashed_name("my", "api_x").as_str(),
                "mcp_my_other",
                "mcp_banker_x",
            ]
        );
        assert_ne!(got[0], "mcp_bank_transfer_to");
        assert_eq!(coll.len(), 3);
        assert_eq!(coll[0].name, "mcp_bank_transfer_to");
        assert_eq!(coll[0].kept_by, "bank");
        assert!(coll[0].reserved);
        assert_eq!(coll[2].kept_by, "my_api");
        // With `bank` connected the result is the same for the plugin, and
        // the config's own tool keeps its plain name.
        let (names, _) = mint_all_reserving(
            [
                ("bank", "transfer_to", false),
                ("bank.transfer", "to", true),
            ],
            &reserved,
        );
        assert_eq!(names[0].name, "mcp_bank_transfer_to");
        assert_eq!(names[1].name, hashed_name("bank.transfer", "to"));
        // A config server is never reserved against itself or its peers.
        let (names, coll) = mint_all_reserving([("bank", "x", false)], &reserved);
        assert_eq!(names[0].name, "mcp_bank_x");
        assert!(coll.is_empty());
    }

    #[test]
    fn same_server_sanitize_collision_and_duplicates() {
        let (names, coll) = mint_all([("s", "read-file"), ("s", "read_file"), ("s", "read-file")]);
        assert_eq!(names.len(), 2);
        assert_eq!(names[0].name, "mcp_s_read_file");
        assert_eq!(names[1].name, hashed_name("s", "read_file"));
        assert_eq!(coll.len(), 1);
    }

    #[test]
    fn a_name_budget_keeps_every_name_within_the_agents_limit() {
        // Claude Code: mcp__wasmgate__<tool> at most 64 characters.
        let budget = agent_name_budget("claude-code", "wasmgate").unwrap();
        assert_eq!(budget, 64 - "mcp__wasmgate__".len());
        let long = "a_rather_long_tool_name_that_goes_on_and_on";
        let pairs = [
            ("git_hub", "create_issue"),
            ("github", long),
            // Sanitises to the same plain name (`.` becomes `_`): the
            // collision rule.
            ("git.hub", "create_issue"),
        ];
        let (names, coll) =
            mint_all_reserving_within(pairs.iter().map(|(s, t)| (*s, *t, false)), &[], budget);
        for n in &names {
            assert!(n.name.len() <= budget, "{}", n.name);
            assert!(format!("mcp__wasmgate__{}", n.name).len() <= 64);
        }
        assert_eq!(names[0].name, "mcp_git_hub_create_issue");
        // Deterministic hashed form: the plain name cut to budget - 9, `_`, 8 hex.
        assert_eq!(names[1].name, hashed_name_within("github", long, budget));
        assert_eq!(names[1].name.len(), budget);
        assert!(
            names[1]
                .name
                .starts_with(&plain_name("github", long)[..budget - 9])
        );
        assert_eq!(
            names[2].name,
            hashed_name_within("git.hub", "create_issue", budget)
        );
        assert_eq!(coll.len(), 1);
        assert_eq!(coll[0].kept_by, "git_hub");
        // Without a budget the 64-character rule is unchanged.
        assert_eq!(
            tool_name_within("github", long, MAX_TOOL_NAME),
            tool_name("github", long)
        );
        assert_eq!(agent_name_budget("notepad", "wasmgate"), None);
        // A budget never goes below the minimum.
        assert_eq!(
            agent_name_budget("cursor", &"x".repeat(100)),
            Some(MIN_NAME_BUDGET)
        );
    }
}
