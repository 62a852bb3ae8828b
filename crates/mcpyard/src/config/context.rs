//! Where a config file's strings are expanded, and where its relative
//! paths start.

use std::path::Path;

use super::error::ConfigError;
use super::expand::expand;

/// Where and how strings are expanded, and where relative paths start.
pub(crate) struct Context<'a> {
    /// The file as the user named it, for messages.
    pub(crate) file: &'a str,
    /// The directory of the file: a relative `cwd` is resolved against it.
    pub(crate) base_dir: Option<&'a Path>,
    pub(crate) lookup: &'a dyn Fn(&str) -> Option<String>,
}

impl Context<'_> {
    /// Expands `${VAR}` in `value`, found at `key`.
    pub(crate) fn expand(&self, key: &str, value: &str) -> Result<String, ConfigError> {
        expand(value, self.lookup).map_err(|e| ConfigError::at(self.file, key, e.to_string()))
    }

    pub(crate) fn error(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::at(self.file, key, message)
    }
}
