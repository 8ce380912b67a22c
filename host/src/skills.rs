//! Skills: SKILL.md front matter and the `requires_apps` skill gate
//! (`docs/declarations.md` §8).
//!
//! A skill is a markdown document that may start with YAML front matter
//! between two `---` lines. The host reads `name`, `description` and
//! `requires_apps` (a name or a list of names) from it. The skill gate shows a
//! skill only when every name in `requires_apps` resolves by lookup to a
//! declaration that is offerable; an unknown name hides the skill (fail
//! closed).
//!
//! This module is pure: it never evaluates availability itself. The caller
//! passes the lookup as a closure `Fn(&str) -> Option<bool>`: `Some(offerable)`
//! for a known name, `None` for an unknown one.

use std::fmt;

/// A parsed SKILL.md.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// The skill's name as its plugin gave it (used in every error and report).
    pub name: String,
    /// `description` from the front matter, when present.
    pub description: Option<String>,
    /// `requires_apps` from the front matter: the server or application names
    /// that must be offerable for the skill to be shown; empty = always shown.
    pub requires_apps: Vec<String>,
    /// The whole front matter as decoded (`Null` when the file has none).
    pub front_matter: yaml_serde::Value,
    /// The markdown after the front matter.
    pub body: String,
}

/// Why a SKILL.md could not be read. Every variant names the skill.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The opening `---` has no closing `---` line.
    #[error(
        "skill '{skill}': SKILL.md front matter starts with '---' but has no closing '---' line"
    )]
    UnterminatedFrontMatter {
        /// Skill name.
        skill: String,
    },
    /// The front matter is not valid YAML, or not a mapping.
    #[error("skill '{skill}': SKILL.md front matter: {message}")]
    BadFrontMatter {
        /// Skill name.
        skill: String,
        /// What the YAML reader said.
        message: String,
    },
    /// A known field has the wrong shape.
    #[error("skill '{skill}': SKILL.md front matter: {field} {message}")]
    BadField {
        /// Skill name.
        skill: String,
        /// Field path inside the front matter, e.g. `requires_apps[1]`.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// Splits `text` into (front matter YAML, body). `Ok(None)` when the file does
/// not start with a `---` line. The YAML keeps that line (YAML's own
/// document start), so the parser's line numbers are the file's.
fn split_front_matter<'a>(
    skill: &str,
    text: &'a str,
) -> Result<Option<(&'a str, &'a str)>, SkillError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next() else {
        return Ok(None);
    };
    if first.trim_end() != "---" {
        return Ok(None);
    }
    let start = first.len();
    let mut pos = start;
    for line in lines {
        let t = line.trim_end();
        if t == "---" || t == "..." {
            let yaml = &text[..pos];
            let body = &text[pos + line.len()..];
            return Ok(Some((yaml, body)));
        }
        pos += line.len();
    }
    Err(SkillError::UnterminatedFrontMatter {
        skill: skill.to_string(),
    })
}

/// Parses a SKILL.md given by its plugin under `name`.
///
/// A file without front matter is a skill with no `requires_apps`. Errors:
/// an unterminated front matter, YAML that does not parse or is not a
/// mapping, `description` that is not a string, `requires_apps` that is not
/// a non-empty name or a list of them.
pub fn parse_skill(name: &str, text: &str) -> Result<Skill, SkillError> {
    let Some((yaml, body)) = split_front_matter(name, text)? else {
        return Ok(Skill {
            name: name.to_string(),
            description: None,
            requires_apps: Vec::new(),
            front_matter: yaml_serde::Value::Null,
            body: text.to_string(),
        });
    };
    let bad = |message: String| SkillError::BadFrontMatter {
        skill: name.to_string(),
        message,
    };
    let field = |field: &str, message: &str| SkillError::BadField {
        skill: name.to_string(),
        field: field.to_string(),
        message: message.to_string(),
    };
    // Nothing after the opening `---` line: no front matter.
    let empty = yaml
        .split_once('\n')
        .is_none_or(|(_, rest)| rest.trim().is_empty());
    let fm: yaml_serde::Value = if empty {
        yaml_serde::Value::Null
    } else {
        crate::manifest::depth::check_yaml_depth(yaml, crate::manifest::depth::MAX_DEPTH)
            .map_err(bad)?;
        yaml_serde::from_str(yaml).map_err(|e| bad(e.to_string()))?
    };
    if !matches!(fm, yaml_serde::Value::Null | yaml_serde::Value::Mapping(_)) {
        return Err(bad("must be a mapping of keys to values".to_string()));
    }
    let description = match fm.get("description") {
        None | Some(yaml_serde::Value::Null) => None,
        Some(v) => Some(
            v.as_str()
                .ok_or_else(|| field("description", "must be a string"))?
                .to_string(),
        ),
    };
    let requires_apps = match fm.get("requires_apps") {
        None | Some(yaml_serde::Value::Null) => Vec::new(),
        Some(yaml_serde::Value::String(s)) => {
            if s.trim().is_empty() {
                return Err(field("requires_apps", "must not be an empty name"));
            }
            vec![s.trim().to_string()]
        }
        Some(yaml_serde::Value::Sequence(seq)) => {
            let mut names = Vec::with_capacity(seq.len());
            for (i, v) in seq.iter().enumerate() {
                let path = format!("requires_apps[{i}]");
                let s = v
                    .as_str()
                    .ok_or_else(|| field(&path, "must be a name (a string)"))?;
                if s.trim().is_empty() {
                    return Err(field(&path, "must not be an empty name"));
                }
                names.push(s.trim().to_string());
            }
            names
        }
        Some(_) => {
            return Err(field("requires_apps", "must be a name or a list of names"));
        }
    };
    Ok(Skill {
        name: name.to_string(),
        description,
        requires_apps,
        front_matter: fm,
        body: body.to_string(),
    })
}

/// The name of a skill read from a file: `skills/git/SKILL.md` → `git`; a
/// file named otherwise → its stem (`docs/skills.md`).
pub fn skill_name_from_path(path: &std::path::Path) -> String {
    let is_skill_md = path
        .file_name()
        .is_some_and(|n| n.eq_ignore_ascii_case("SKILL.md"));
    let named = if is_skill_md {
        path.parent().and_then(std::path::Path::file_name)
    } else {
        path.file_stem()
    };
    named.map_or_else(|| "skill".into(), |n| n.to_string_lossy().into_owned())
}

/// Why the skill gate hides a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HiddenReason {
    /// The name does not resolve by lookup (fail closed).
    UnknownApp(String),
    /// The name resolves, but its declaration is not offerable here.
    NotOfferable(String),
}

impl fmt::Display for HiddenReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HiddenReason::UnknownApp(n) => write!(f, "requires_apps names unknown '{n}'"),
            HiddenReason::NotOfferable(n) => write!(f, "requires_apps '{n}' is not offerable"),
        }
    }
}

/// The skill gate's decision for one skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillGate {
    /// Every `requires_apps` name is known and offerable (or there are none).
    Visible,
    /// At least one name is unknown or not offerable; every such name is listed.
    Hidden(Vec<HiddenReason>),
}

impl SkillGate {
    /// True for [`SkillGate::Visible`].
    pub fn is_visible(&self) -> bool {
        matches!(self, SkillGate::Visible)
    }
}

/// The skill gate (`docs/declarations.md` §8): `lookup(name)` returns
/// `Some(offerable)` for a known name and `None` for an unknown one.
pub fn gate(skill: &Skill, lookup: impl Fn(&str) -> Option<bool>) -> SkillGate {
    let reasons: Vec<HiddenReason> = skill
        .requires_apps
        .iter()
        .filter_map(|name| match lookup(name) {
            Some(true) => None,
            Some(false) => Some(HiddenReason::NotOfferable(name.clone())),
            None => Some(HiddenReason::UnknownApp(name.clone())),
        })
        .collect();
    if reasons.is_empty() {
        SkillGate::Visible
    } else {
        SkillGate::Hidden(reasons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_list_and_body() {
        let s = parse_skill(
            "git-helper",
            "---\nname: git-helper\ndescription: Use git\nrequires_apps: [git, gh]\n---\n# Body\n",
        )
        .unwrap();
        assert_eq!(s.requires_apps, vec!["git", "gh"]);
        assert_eq!(s.description.as_deref(), Some("Use git"));
        assert_eq!(s.body, "# Body\n");
    }

    #[test]
    fn requires_apps_single_name() {
        let s = parse_skill("x", "---\r\nrequires_apps: blender\r\n---\r\nhi").unwrap();
        assert_eq!(s.requires_apps, vec!["blender"]);
        assert_eq!(s.body, "hi");
    }

    #[test]
    fn no_front_matter_is_ungated() {
        let s = parse_skill("plain", "# Just markdown\n---\n").unwrap();
        assert!(s.requires_apps.is_empty());
        assert_eq!(gate(&s, |_| None), SkillGate::Visible);
    }

    #[test]
    fn bad_front_matter_names_the_skill() {
        let e = parse_skill("broken", "---\nrequires_apps: [git\n---\n").unwrap_err();
        assert!(matches!(e, SkillError::BadFrontMatter { .. }));
        assert!(e.to_string().starts_with("skill 'broken':"), "{e}");

        let e = parse_skill("open", "---\nname: x\n").unwrap_err();
        assert_eq!(
            e,
            SkillError::UnterminatedFrontMatter {
                skill: "open".into()
            }
        );

        let e = parse_skill("seq", "---\n- a\n- b\n---\n").unwrap_err();
        assert!(e.to_string().contains("must be a mapping"), "{e}");

        let e = parse_skill("num", "---\nrequires_apps: [git, 3]\n---\n").unwrap_err();
        assert!(e.to_string().contains("requires_apps[1]"), "{e}");

        let e = parse_skill("map", "---\nrequires_apps: {a: b}\n---\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("requires_apps must be a name or a list"),
            "{e}"
        );

        let e = parse_skill("empty", "---\nrequires_apps: ''\n---\n").unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
    }

    /// Lines are the file's (the opening `---` is line 1), and the guards'
    /// messages are not prefixed twice.
    #[test]
    fn front_matter_errors_name_the_files_line() {
        let deep = format!("{}1{}", "[".repeat(70), "]".repeat(70));
        let e = parse_skill("deep", &format!("---\na: 1\nb: {deep}\n---\nbody\n")).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "skill 'deep': SKILL.md front matter: is nested deeper than 64 levels (at line 3)"
            ),
            "{e}"
        );
        let e = parse_skill("syntax", "\u{feff}---\r\na: 1\nb: [x\n---\n").unwrap_err();
        assert!(e.to_string().contains("line 3"), "{e}");
        // A marker with trailing blanks, and nothing but blanks after it.
        let s = parse_skill("blank", "---  \n\n  \n---\nbody\n").unwrap();
        assert_eq!(s.front_matter, yaml_serde::Value::Null);
        assert_eq!(s.body, "body\n");
        let s = parse_skill("ok", "--- \ndescription: d\n...\nbody\n").unwrap();
        assert_eq!(s.description.as_deref(), Some("d"));
    }

    #[test]
    fn gate_fails_closed() {
        let s = parse_skill("s", "---\nrequires_apps: [git, blender, nope]\n---\n").unwrap();
        let lookup = |n: &str| match n {
            "git" => Some(true),
            "blender" => Some(false),
            _ => None,
        };
        assert_eq!(
            gate(&s, lookup),
            SkillGate::Hidden(vec![
                HiddenReason::NotOfferable("blender".into()),
                HiddenReason::UnknownApp("nope".into()),
            ])
        );
        let only_git = parse_skill("g", "---\nrequires_apps: git\n---\n").unwrap();
        assert!(gate(&only_git, lookup).is_visible());
    }
}
