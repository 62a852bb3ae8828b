//! A setting the running gateway reads at each use and a configuration
//! reload replaces, for every holder at once: the front door's API keys,
//! the redaction of what upstreams relay, the sampler of local models.

use std::sync::{Arc, PoisonError, RwLock};

/// A shared, replaceable value. Clones share it; a reader gets the value
/// in place at that moment (what it started with stays valid for it).
#[derive(Default)]
pub struct Live<T>(Arc<RwLock<T>>);

impl<T> Clone for Live<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

// By hand: the value is no setting to print (and may be a secret's digest).
impl<T> std::fmt::Debug for Live<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Live")
    }
}

impl<T: Clone> Live<T> {
    pub fn new(value: T) -> Self {
        Self(Arc::new(RwLock::new(value)))
    }

    /// The value in place now.
    pub fn get(&self) -> T {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Puts `value` in place; returns the one it replaces.
    pub fn set(&self, value: T) -> T {
        std::mem::replace(
            &mut *self.0.write().unwrap_or_else(PoisonError::into_inner),
            value,
        )
    }
}
