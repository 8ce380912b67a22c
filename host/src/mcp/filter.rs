//! The `tools: {include, exclude}` filter (`docs/mcp-client.md` §1): exact
//! original tool names or globs with `*` and `?`; include wins; `include: []`
//! offers no tools.

use crate::manifest::server::ToolFilter;
use regex::Regex;

/// Whether `name` matches `pattern` (`*` any run, `?` one character;
/// case-sensitive; everything else literal).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    if !pattern.contains(['*', '?']) {
        return pattern == name;
    }
    let mut re = String::from("^");
    for c in pattern.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&regex::escape(&c.to_string())),
        }
    }
    re.push('$');
    // The pattern is built from escaped literals, so it always compiles.
    Regex::new(&re).map(|r| r.is_match(name)).unwrap_or(false)
}

/// Whether the filter offers the tool with this original name.
pub fn offers(filter: &ToolFilter, tool: &str) -> bool {
    match &filter.include {
        Some(include) => include.iter().any(|p| glob_match(p, tool)),
        None => !filter.exclude.iter().any(|p| glob_match(p, tool)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("read_*", "read_file"));
        assert!(glob_match("?og", "log"));
        assert!(!glob_match("?og", "blog"));
        assert!(glob_match("a.b", "a.b"));
        assert!(!glob_match("a.b*", "axb"));
        assert!(!glob_match("Read*", "read"));
    }

    #[test]
    fn include_wins_and_empty_include_offers_none() {
        let f = ToolFilter {
            include: Some(vec!["log".into(), "st*".into()]),
            exclude: vec!["log".into()],
        };
        assert!(offers(&f, "log"));
        assert!(offers(&f, "status"));
        assert!(!offers(&f, "diff"));
        let none = ToolFilter {
            include: Some(vec![]),
            exclude: vec![],
        };
        assert!(!offers(&none, "log"));
        let ex = ToolFilter {
            include: None,
            exclude: vec!["d*".into()],
        };
        assert!(!offers(&ex, "diff"));
        assert!(offers(&ex, "log"));
        assert!(offers(&ToolFilter::default(), "anything"));
    }
}
