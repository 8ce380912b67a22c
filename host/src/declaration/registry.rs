//! The declaration registry (`docs/declarations.md` §8, §8.1).
//!
//! A map from configured server name to its [`Declaration`], owned by the
//! host as a value (share it with `Arc<Registry>`). Unlike the original's
//! single `on_change` slot it has any number of
//! change subscribers, a mutation that changes nothing notifies nobody, and
//! no subscriber ever runs while the registry's lock is held, so a
//! subscriber may call back into the registry.

use super::model::Declaration;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// What changed; passed to every subscriber after the change is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryChange {
    /// A declaration was added or replaced by a different one.
    Registered(String),
    /// A declaration was removed.
    Unregistered(String),
    /// Every declaration was removed (the registry was not empty).
    Cleared,
}

/// Handle returned by [`Registry::subscribe`]; pass it to [`Registry::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

type Subscriber = Arc<dyn Fn(&RegistryChange) + Send + Sync>;

#[derive(Default)]
struct Inner {
    decls: BTreeMap<String, Arc<Declaration>>,
    subscribers: Vec<(SubscriptionId, Subscriber)>,
    next_id: u64,
}

/// Server name → declaration, with change subscriptions.
#[derive(Default)]
pub struct Registry {
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = self.lock();
        f.debug_struct("Registry")
            .field("declarations", &g.decls.keys().collect::<Vec<_>>())
            .field("subscribers", &g.subscribers.len())
            .finish()
    }
}

impl Registry {
    /// An empty registry with no subscribers.
    pub fn new() -> Registry {
        Registry::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A subscriber never runs under the lock, so a poisoned lock can only
        // come from a panic inside these short methods; the map is still valid.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn notify(&self, change: RegistryChange) {
        let subs: Vec<Subscriber> = self
            .lock()
            .subscribers
            .iter()
            .map(|(_, s)| Arc::clone(s))
            .collect();
        for s in subs {
            s(&change);
        }
    }

    /// Inserts or replaces `name`'s declaration and returns the shared value.
    /// Notifies subscribers unless an equal declaration was already registered.
    pub fn register(&self, name: &str, decl: Declaration) -> Arc<Declaration> {
        let (arc, changed) = {
            let mut g = self.lock();
            match g.decls.get(name) {
                Some(old) if **old == decl => (Arc::clone(old), false),
                _ => {
                    let arc = Arc::new(decl);
                    g.decls.insert(name.to_string(), Arc::clone(&arc));
                    (arc, true)
                }
            }
        };
        if changed {
            self.notify(RegistryChange::Registered(name.to_string()));
        }
        arc
    }

    /// Removes `name`; returns the removed declaration. Absent → `None`, no notification.
    pub fn unregister(&self, name: &str) -> Option<Arc<Declaration>> {
        let removed = self.lock().decls.remove(name);
        if removed.is_some() {
            self.notify(RegistryChange::Unregistered(name.to_string()));
        }
        removed
    }

    /// The declaration registered for `name` (the same shared value), if any.
    pub fn lookup(&self, name: &str) -> Option<Arc<Declaration>> {
        self.lock().decls.get(name).cloned()
    }

    /// Removes every declaration; notifies once, and only if it was not empty.
    pub fn clear(&self) {
        let was_empty = {
            let mut g = self.lock();
            let empty = g.decls.is_empty();
            g.decls.clear();
            empty
        };
        if !was_empty {
            self.notify(RegistryChange::Cleared);
        }
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

    /// Adds a subscriber called after every effective change, outside the lock.
    pub fn subscribe<F>(&self, f: F) -> SubscriptionId
    where
        F: Fn(&RegistryChange) + Send + Sync + 'static,
    {
        let mut g = self.lock();
        let id = SubscriptionId(g.next_id);
        g.next_id += 1;
        g.subscribers.push((id, Arc::new(f)));
        id
    }

    /// Removes a subscriber; `false` if it was not subscribed.
    pub fn unsubscribe(&self, id: SubscriptionId) -> bool {
        let mut g = self.lock();
        let before = g.subscribers.len();
        g.subscribers.retain(|(i, _)| *i != id);
        g.subscribers.len() != before
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::declaration::model::Requires;
    use std::sync::atomic::{AtomicUsize, Ordering};

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

    #[test]
    fn every_subscriber_sees_effective_changes_only() {
        let r = Registry::new();
        let (c1, c2) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (k1, k2) = (Arc::clone(&c1), Arc::clone(&c2));
        r.subscribe(move |_| {
            k1.fetch_add(1, Ordering::SeqCst);
        });
        let id2 = r.subscribe(move |_| {
            k2.fetch_add(1, Ordering::SeqCst);
        });
        r.register("a", decl("a", true)); // change
        r.register("a", decl("a", true)); // same → no-op
        r.register("a", decl("a", false)); // replaced → change
        r.unregister("zz"); // absent → no-op
        r.unregister("a"); // change
        r.clear(); // empty → no-op
        assert_eq!(c1.load(Ordering::SeqCst), 3);
        assert_eq!(c2.load(Ordering::SeqCst), 3);
        assert!(r.unsubscribe(id2));
        assert!(!r.unsubscribe(id2));
        r.register("b", decl("b", true));
        r.clear();
        assert_eq!(c1.load(Ordering::SeqCst), 5);
        assert_eq!(c2.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn subscriber_may_call_back_into_the_registry() {
        let r = Arc::new(Registry::new());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (r2, seen2) = (Arc::clone(&r), Arc::clone(&seen));
        r.subscribe(move |change| {
            // Would deadlock if callbacks ran under the lock.
            let n = r2.len();
            seen2.lock().unwrap().push((change.clone(), n));
        });
        r.register("a", decl("a", true));
        r.clear();
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![
                (RegistryChange::Registered("a".into()), 1),
                (RegistryChange::Cleared, 0)
            ]
        );
    }
}
