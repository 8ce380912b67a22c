//! TODO: owned by a helper; see the issue.
