//! The one error type of ebb-config: why a configuration was refused.
//!
//! Every message starts with "invalid config:" and names the key (as a dotted path such as
//! `storage.sync`) or the file or variable at fault, because it is printed to a person who
//! must fix it. It says nothing about MongoDB error codes: a bad config stops the daemon
//! before any client connects.

use std::path::PathBuf;

/// A configuration that cannot be used, with a message that says where and why.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The config file given on the command line could not be read.
    #[error("invalid config: cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML (the message carries the parser's line and column), or a
    /// value could not be read and the `config` crate did not say which key.
    #[error("invalid config: {0}")]
    Parse(String),
    /// Keys that no setting has: usually a typo. Listed in sorted order.
    #[error("invalid config: {}", describe_unknown(.0))]
    UnknownKeys(Vec<String>),
    /// A setting whose value has the wrong type or is out of range.
    #[error("invalid config: {key}: {message}")]
    Invalid { key: String, message: String },
}

fn describe_unknown(keys: &[String]) -> String {
    let quoted: Vec<String> = keys.iter().map(|key| format!("'{key}'")).collect();
    let noun = if keys.len() == 1 { "key" } else { "keys" };
    format!("unknown {noun} {}", quoted.join(", "))
}

impl ConfigError {
    pub(crate) fn invalid(key: &str, message: impl Into<String>) -> Self {
        ConfigError::Invalid {
            key: key.to_string(),
            message: message.into(),
        }
    }
}
