//! The one evaluation: `availability(declaration)` (`docs/declarations.md`
//! §6), its seven states, `offerable`, and the user-facing sentences.
//!
//! Availability never probes, launches or connects: it locates, reads
//! versions when asked to, and uses the cached GPU class.

use crate::declaration::{AppDef, Declaration, GpuVendor, VersionKind};
use crate::platform::{GpuClass, Platform, gpu_class};
use crate::resolver::{self, Candidate, compare_keys, version_at_least, version_key};
use serde::Serialize;
use std::cmp::Ordering;
use std::fmt;

/// The state of an availability evaluation (`docs/declarations.md` §1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Found, and its version is acceptable or not required.
    Available,
    /// Reserved vocabulary; never produced by [`availability`].
    InstalledNotRunning,
    /// `requires.app` and no copy was found.
    MissingApp,
    /// `requires.min_version` and no found copy satisfies it (including
    /// copies whose version cannot be read).
    VersionTooOld,
    /// `requires.app` and no `app` block for the evaluated OS family.
    UnsupportedOs,
    /// `requires.gpu` names a vendor this machine's GPU class is not.
    UnsupportedGpu,
    /// Nothing required, or only a GPU that is present (or unknown).
    NoRequirements,
}

impl State {
    /// The spelling of `docs/declarations.md` §1 (`available`, `missing_app`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Available => "available",
            State::InstalledNotRunning => "installed_not_running",
            State::MissingApp => "missing_app",
            State::VersionTooOld => "version_too_old",
            State::UnsupportedOs => "unsupported_os",
            State::UnsupportedGpu => "unsupported_gpu",
            State::NoRequirements => "no_requirements",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of [`availability`] (docs/declarations.md §1.8). Deliberately not
/// convertible to `bool`: ask [`Availability::offerable`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Availability {
    /// The state.
    pub state: State,
    /// The version read from the reported copy (raw text), when one was read.
    pub version: Option<String>,
    /// Where the app was found, or first looked for.
    pub path: Option<String>,
    /// `requires.min_version`, copied.
    pub min_version: Option<String>,
}

impl Availability {
    fn bare(state: State, decl: &Declaration) -> Availability {
        Availability {
            state,
            version: None,
            path: None,
            min_version: decl.requires.min_version.clone(),
        }
    }

    /// `available` or `no_requirements`: the server may be offered.
    pub fn offerable(&self) -> bool {
        matches!(self.state, State::Available | State::NoRequirements)
    }
}

/// A version probe for `version.kind: custom` (the component's
/// `probe-version` export, run by the plugin layer): given the app definition
/// and a found copy's path, the raw version text or `None`.
pub type CustomVersionProbe<'a> = &'a dyn Fn(&AppDef, &str) -> Option<String>;

/// Evaluates `decl` on `platform` (docs/declarations.md §6.1; order is normative).
pub fn availability(decl: &Declaration, platform: &dyn Platform) -> Availability {
    availability_with(decl, platform, None)
}

/// [`availability`] with a probe for `version.kind: custom`.
pub fn availability_with(
    decl: &Declaration,
    platform: &dyn Platform,
    custom: Option<CustomVersionProbe<'_>>,
) -> Availability {
    let req = &decl.requires;
    // 1. Nothing required: no I/O at all.
    if !req.app && req.gpu.is_none() {
        return Availability::bare(State::NoRequirements, decl);
    }
    // 2–3. The app block for this OS family.
    let def = if req.app {
        match decl.app_for(platform.os_family()) {
            Some(d) => Some(d),
            None => return Availability::bare(State::UnsupportedOs, decl),
        }
    } else {
        None
    };
    // 4. GPU, from the cached class; `unknown` passes.
    if let Some(vendor) = req.gpu {
        let class = gpu_class(platform);
        if !gpu_satisfies(vendor, class) {
            return Availability::bare(State::UnsupportedGpu, decl);
        }
    }
    // 5. GPU only (or `app: false`).
    let Some(def) = def else {
        return Availability::bare(State::NoRequirements, decl);
    };
    // 6. Locate.
    let mut res = resolver::locate(def, platform);
    let Some(first_at) = res.candidates.iter().position(|c| c.present) else {
        // The reported path is the first candidate looked at (§3.7).
        return Availability {
            path: (!res.candidates.is_empty()).then(|| res.candidates.swap_remove(0).path),
            ..Availability::bare(State::MissingApp, decl)
        };
    };
    // 7. No version source: presence alone (the linux exception). The
    // common case takes its path out of the resolution rather than copying it.
    if def.version_kind == VersionKind::None {
        return Availability {
            path: Some(res.candidates.swap_remove(first_at).path),
            ..Availability::bare(State::Available, decl)
        };
    }
    let present: Vec<&Candidate> = res.present().collect();
    let first = present[0];
    let read = |c: &Candidate| -> Option<String> {
        match (def.version_kind, custom) {
            (VersionKind::Custom, Some(probe)) => probe(def, &c.path),
            _ => resolver::read_version(def, c, platform),
        }
    };
    // 8a. No minimum: the first copy, with whatever version it has.
    let Some(min) = req.min_version.as_deref() else {
        return Availability {
            version: read(first),
            path: Some(first.path.clone()),
            ..Availability::bare(State::Available, decl)
        };
    };
    // 8b. Every copy: the first that satisfies the minimum wins.
    let mut versions = Vec::with_capacity(present.len());
    for c in &present {
        let v = read(c);
        if v.as_deref().is_some_and(|v| version_at_least(v, min)) {
            return Availability {
                version: v,
                path: Some(c.path.clone()),
                ..Availability::bare(State::Available, decl)
            };
        }
        versions.push(v);
    }
    // None qualifies: report the highest readable version (first on ties),
    // else the first copy with whatever raw text it had.
    let mut best: Option<(usize, Vec<u64>)> = None;
    for (i, v) in versions.iter().enumerate() {
        if let Some(k) = v.as_deref().and_then(version_key) {
            let better = match &best {
                None => true,
                Some((_, bk)) => compare_keys(&k, bk) == Ordering::Greater,
            };
            if better {
                best = Some((i, k));
            }
        }
    }
    let i = best.map(|(i, _)| i).unwrap_or(0);
    Availability {
        version: versions[i].clone(),
        path: Some(present[i].path.clone()),
        ..Availability::bare(State::VersionTooOld, decl)
    }
}

/// Whether a machine of GPU class `class` satisfies `requires.gpu: vendor`
/// (`docs/declarations.md` §5: `unknown` passes).
pub fn gpu_satisfies(vendor: GpuVendor, class: GpuClass) -> bool {
    match class {
        GpuClass::Unknown => true,
        GpuClass::Nvidia => vendor == GpuVendor::Nvidia,
        _ => false,
    }
}

/// "an NVIDIA GPU" for `nvidia` (docs/declarations.md §1.9).
pub fn gpu_label(vendor: Option<GpuVendor>) -> &'static str {
    match vendor {
        Some(GpuVendor::Nvidia) => "an NVIDIA GPU",
        None => "a supported GPU",
    }
}

/// The status of a server whose application is declared (docs/declarations.md §6.4):
/// what the user is told when its tools are not offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStatus {
    /// `missing_app` or `unsupported_os`.
    MissingApp,
    /// `version_too_old`, with the version found and the minimum.
    VersionTooOld {
        /// The version read, when one was.
        version: Option<String>,
        /// `requires.min_version`.
        min_version: Option<String>,
    },
    /// `unsupported_gpu`, with the required vendor.
    UnsupportedGpu(Option<GpuVendor>),
}

impl ServerStatus {
    /// The status an availability result maps to, for states that are not
    /// offerable; `None` for offerable ones (liveness decides the rest).
    pub fn from_availability(decl: &Declaration, a: &Availability) -> Option<ServerStatus> {
        match a.state {
            State::MissingApp | State::UnsupportedOs => Some(ServerStatus::MissingApp),
            State::VersionTooOld => Some(ServerStatus::VersionTooOld {
                version: a.version.clone(),
                min_version: a.min_version.clone(),
            }),
            State::UnsupportedGpu => Some(ServerStatus::UnsupportedGpu(decl.requires.gpu)),
            State::Available | State::NoRequirements | State::InstalledNotRunning => None,
        }
    }

    /// The user-facing sentence (reason + action), exactly as
    /// docs/declarations.md §6.3–6.4 words it; `app` is the application's display name
    /// (the declaration name when there is none).
    pub fn sentence(&self, app: &str) -> String {
        match self {
            ServerStatus::MissingApp => {
                format!("{app} is not installed. Install {app}, then try again.")
            }
            ServerStatus::VersionTooOld {
                version,
                min_version,
            } => {
                let need = min_version
                    .as_deref()
                    .map(|m| format!("; version {m} or newer is required"))
                    .unwrap_or_default();
                match version.as_deref() {
                    Some(v) => {
                        format!("{app} version {v} is too old{need}. Update {app}, then try again.")
                    }
                    // No copy's version could be read (§4.5): saying "too
                    // old" would send the user to update a copy that may
                    // be new enough; the reason is in the warnings.
                    None => format!(
                        "{app}'s version could not be read{need}. Check that {app} is installed completely (the warnings say what failed), then try again."
                    ),
                }
            }
            ServerStatus::UnsupportedGpu(vendor) => {
                let gpu = gpu_label(*vendor);
                format!(
                    "{app} needs {gpu}; none was found on this machine. Use {app} on a machine with {gpu}."
                )
            }
        }
    }
}

/// The sentence for a server whose availability is not offerable (the
/// `message` of `wasmgate availability --json`); `None` when offerable.
pub fn message(decl: &Declaration, a: &Availability) -> Option<String> {
    ServerStatus::from_availability(decl, a).map(|s| s.sentence(&decl.name))
}

/// The install refusal for a plugin server that is not offerable (`docs/declarations.md` §6.3:
/// `Plugin '<plugin>' server '<server>' is unavailable: <state>[, found
/// version <v>].`, and for a GPU `… is unavailable: unsupported_gpu, needs an
/// NVIDIA GPU.`); `None` when offerable.
pub fn install_refusal(plugin: &str, decl: &Declaration, a: &Availability) -> Option<String> {
    if a.offerable() {
        return None;
    }
    let head = format!(
        "Plugin '{plugin}' server '{}' is unavailable: {}",
        decl.name, a.state
    );
    Some(match (a.state, &a.version) {
        (State::UnsupportedGpu, _) => {
            format!("{head}, needs {}.", gpu_label(decl.requires.gpu))
        }
        (_, Some(v)) => format!("{head}, found version {v}."),
        _ => format!("{head}."),
    })
}
