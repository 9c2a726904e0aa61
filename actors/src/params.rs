//! Server parameters at runtime: MongoDB's TTL parameters, readable with
//! `getParameter` and changed with `setParameter` while the node runs.
//!
//! Names, defaults, bounds and coercion live in `ebb-config` (one table for
//! the TOML file and for the commands); this module holds the current
//! values behind a lock, and wakes the TTL monitor on every change so a
//! new value takes effect at once.

use std::sync::RwLock;

use ebb_config::{ParamError, ParamInput, ParamSpec, ParamValue, ServerParameters};

#[derive(Debug)]
pub struct Params {
    current: RwLock<ServerParameters>,
}

impl Params {
    pub fn new(initial: ServerParameters) -> Self {
        Params {
            current: RwLock::new(initial),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, ServerParameters> {
        self.current.read().expect("params lock")
    }

    pub fn get(&self, name: &str) -> Option<ParamValue> {
        self.read().get(name)
    }

    /// Every parameter with its current value.
    pub fn all(&self) -> Vec<(&'static ParamSpec, ParamValue)> {
        self.read().iter().collect()
    }

    /// Validates and sets a parameter, returning its previous value.
    pub fn set(&self, name: &str, value: ParamInput<'_>) -> Result<ParamValue, ParamError> {
        self.current
            .write()
            .expect("params lock")
            .set_coerced(name, value)
    }

    pub fn ttl_monitor_enabled(&self) -> bool {
        self.read().ttl_monitor_enabled()
    }

    pub fn ttl_monitor_sleep_secs(&self) -> i64 {
        self.read().ttl_monitor_sleep_secs().max(1) as i64
    }

    pub fn ttl_monitor_batch_deletes(&self) -> bool {
        self.read().ttl_monitor_batch_deletes()
    }

    pub fn ttl_index_delete_target_docs(&self) -> u64 {
        self.read().ttl_index_delete_target_docs()
    }

    pub fn ttl_index_delete_target_time_ms(&self) -> u64 {
        self.read().ttl_index_delete_target_time_ms()
    }

    pub fn ttl_monitor_sub_pass_target_secs(&self) -> u64 {
        self.read().ttl_monitor_sub_pass_target_secs()
    }
}
