//! The declaration registry (`docs/declarations.md` §8, §8.1).
//!
//! A map from configured server name to its [`Declaration`], owned by the
//! host as a value (share it with `Arc<Registry>`). The original's
//! `on_change` slot has no counterpart: a [`crate::host::Host`] is built
//! whole and replaced whole on a refresh, and the gateway announces what a
//! refresh changed (`docs/mcp-client.md` §7), so nothing subscribes here.

use super::model::Declaration;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Default)]
struct Inner {
    decls: BTreeMap<String, Arc<Declaration>>,
}

/// Server name → declaration.
#[derive(Default)]
pub struct Registry {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = self.lock();
        f.debug_struct("Registry")
            .field("declarations", &g.decls.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Registry {
        Registry::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock can only come from a panic inside these short
        // methods; the map is still valid.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Inserts or replaces `name`'s declaration and returns the shared value
    /// (the one already registered when it is equal, so lookups keep
    /// sharing it).
    pub fn register(&self, name: &str, decl: Declaration) -> Arc<Declaration> {
        let mut g = self.lock();
        match g.decls.get(name) {
            Some(old) if **old == decl => Arc::clone(old),
            _ => {
                let arc = Arc::new(decl);
                g.decls.insert(name.to_string(), Arc::clone(&arc));
                arc
            }
        }
    }

    /// Removes `name`; returns the removed declaration (`None` when absent).
    pub fn unregister(&self, name: &str) -> Option<Arc<Declaration>> {
        self.lock().decls.remove(name)
    }

    /// The declaration registered for `name` (the same shared value), if any.
    pub fn lookup(&self, name: &str) -> Option<Arc<Declaration>> {
        self.lock().decls.get(name).cloned()
    }

    /// Removes every declaration.
    pub fn clear(&self) {
        self.lock().decls.clear();
    }

    /// Registered server names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.lock().decls.keys().cloned().collect()
    }

    /// Number of registered declarations.
    pub fn len(&self) -> usize {
        self.lock().decls.len()
    }

    /// Whether nothing is registered.
    pub fn is_empty(&self) -> bool {
        self.lock().decls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::model::Requires;

    fn decl(name: &str, gpu: bool) -> Declaration {
        Declaration {
            name: name.into(),
            app: None,
            requires: Requires {
                gpu: gpu.then_some(crate::declaration::model::GpuVendor::Nvidia),
                ..Requires::default()
            },
        }
    }

    #[test]
    fn register_lookup_unregister_clear() {
        let r = Registry::new();
        assert!(r.lookup("a").is_none());
        let a = r.register("a", decl("a", true));
        assert!(Arc::ptr_eq(&a, &r.lookup("a").unwrap()));
        r.register("b", decl("b", false));
        assert_eq!(r.names(), vec!["a".to_string(), "b".to_string()]);
        assert_eq!(r.unregister("a").as_deref(), Some(&decl("a", true)));
        assert!(r.unregister("a").is_none());
        r.clear();
        assert!(r.is_empty());
    }
}
