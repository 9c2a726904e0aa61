//! Layering: built-in defaults ← TOML file ← `EBB_*` environment ← command-line overrides.
//!
//! The `config` crate merges the file and the environment into one tree; before serde sees
//! that tree, every key is checked against the keys of the default config, so a typo is
//! reported with its full dotted path. The process environment is read only in
//! [`Config::load`]; everything else takes the environment as an argument so tests never
//! touch it. This module does not decide what values are valid: that is `Config::validate`.
//!
//! Environment mapping: strip `EBB_`, split the rest on `__` (double underscore) into the
//! key path, and match each segment case-insensitively against the real key names, so
//! `EBB_NET__PORT` sets `net.port` and `EBB_SETPARAMETER__TTLMONITORSLEEPSECS` sets
//! `setParameter.ttlMonitorSleepSecs`. An `EBB_` variable that maps to no key is ignored and
//! reported in [`Loaded::ignored_env`] (the daemon logs it), so `EBB_URI` in a shell cannot stop
//! the node; unknown keys in the file stay fatal.

use std::path::{Path, PathBuf};

use config::{FileFormat, Map, Value, ValueKind};

use crate::{Authorization, Config, ConfigError};

const ENV_PREFIX: &str = "EBB_";
const ENV_SEPARATOR: &str = "__";
/// What parse errors blame when the TOML did not come from a file.
const INLINE_ORIGIN: &str = "TOML";

/// Values given on the command line; each one, when present, wins over file and environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// The TOML file to read (`--config`). Without it only defaults and environment apply.
    pub config_file: Option<PathBuf>,
    /// `net.bind`.
    pub bind: Option<String>,
    /// `net.port`.
    pub port: Option<u16>,
    /// `storage.path`.
    pub db_path: Option<PathBuf>,
    /// `security.authorization` (mongod's `--auth`).
    pub authorization: Option<Authorization>,
    /// `replication.repl_set_name` (mongod's `--replSet`).
    pub repl_set_name: Option<String>,
    /// `security.key_file` (mongod's `--keyFile`).
    pub key_file: Option<PathBuf>,
    /// `security.javascript_enabled = false` (mongod's `--noscripting`).
    pub no_scripting: bool,
}

impl Overrides {
    fn apply(&self, config: &mut Config) {
        if let Some(bind) = &self.bind {
            config.net.bind.clone_from(bind);
        }
        if let Some(port) = self.port {
            config.net.port = port;
        }
        if let Some(path) = &self.db_path {
            config.storage.path.clone_from(path);
        }
        if let Some(authorization) = self.authorization {
            config.security.authorization = authorization;
        }
        if let Some(name) = &self.repl_set_name {
            config.replication.repl_set_name.clone_from(name);
        }
        if let Some(file) = &self.key_file {
            config.security.key_file.clone_from(file);
        }
        if self.no_scripting {
            config.security.javascript_enabled = false;
        }
    }
}

/// TOML text and the name to blame in syntax errors.
struct TomlSource {
    origin: String,
    text: String,
}

/// A configuration as loaded, with the warnings to log once logging is set up.
#[derive(Debug)]
pub struct Loaded {
    pub config: Config,
    /// `EBB_*` variables that name no setting: ignored, so a variable such as
    /// `EBB_URI` in a user's shell cannot stop the node (a typo in the file still does).
    pub ignored_env: Vec<String>,
}

impl Config {
    /// Loads the configuration the daemon runs with: defaults ← the TOML file (if given; a
    /// missing file that was asked for is an error) ← `EBB_*` variables of this process ←
    /// `overrides`; then validates it.
    pub fn load(overrides: &Overrides) -> Result<Loaded, ConfigError> {
        // Variables that are not Unicode cannot name a setting; skip them rather than panic.
        let env = std::env::vars_os().filter_map(|(name, value)| {
            Some((name.into_string().ok()?, value.into_string().ok()?))
        });
        Self::load_with_env(overrides, env)
    }

    /// [`Config::load`] with the environment given explicitly.
    pub fn load_with_env(
        overrides: &Overrides,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Loaded, ConfigError> {
        let file = overrides
            .config_file
            .as_deref()
            .map(read_file)
            .transpose()?;
        let (mut config, ignored_env) = layered(file, env)?;
        overrides.apply(&mut config);
        config.settle();
        config.validate()?;
        Ok(Loaded {
            config,
            ignored_env,
        })
    }

    /// Parses and validates a TOML document on top of the defaults, ignoring the environment.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        let source = TomlSource {
            origin: INLINE_ORIGIN.to_string(),
            text: text.to_string(),
        };
        let (mut config, _) = layered(Some(source), std::iter::empty())?;
        config.settle();
        config.validate()?;
        Ok(config)
    }
}

fn read_file(path: &Path) -> Result<TomlSource, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(TomlSource {
        origin: path.display().to_string(),
        text,
    })
}

/// Merges the file and environment layers and deserializes them over the defaults; also
/// returns the `EBB_*` variables that name no setting.
fn layered(
    file: Option<TomlSource>,
    env: impl IntoIterator<Item = (String, String)>,
) -> Result<(Config, Vec<String>), ConfigError> {
    let known = known_keys();
    let mut builder = config::Config::builder();
    if let Some(source) = &file {
        builder = builder.add_source(config::File::from_str(&source.text, FileFormat::Toml));
    }
    let (overrides, ignored) = env_overrides(env, &known);
    for (key, value) in overrides {
        builder = builder
            .set_override(&key, value)
            .map_err(|error| ConfigError::invalid(&key, error.to_string()))?;
    }
    let merged = builder.build().map_err(|error| {
        let origin = file.as_ref().map_or(INLINE_ORIGIN, |source| &source.origin);
        ConfigError::Parse(format!("{origin}: {error}"))
    })?;
    let tree = table_of(merged.cache.clone());
    let mut unknown = Vec::new();
    collect_unknown_keys(&tree, &known, "", &mut unknown);
    if !unknown.is_empty() {
        unknown.sort();
        return Err(ConfigError::UnknownKeys(unknown));
    }
    let config = merged.try_deserialize().map_err(keyed_error)?;
    Ok((config, ignored))
}

/// The key tree of the default config: every key a file or variable may set.
fn known_keys() -> Map<String, Value> {
    let defaults = config::Config::try_from(&Config::default())
        .expect("the default config serializes to a table");
    table_of(defaults.cache)
}

fn table_of(value: Value) -> Map<String, Value> {
    match value.kind {
        ValueKind::Table(table) => table,
        _ => Map::new(),
    }
}

fn collect_unknown_keys(
    given: &Map<String, Value>,
    known: &Map<String, Value>,
    prefix: &str,
    unknown: &mut Vec<String>,
) {
    for (key, value) in given {
        let path = format!("{prefix}{key}");
        match (known.get(key).map(|known| &known.kind), &value.kind) {
            (None, _) => unknown.push(path),
            (Some(ValueKind::Table(known)), ValueKind::Table(given)) => {
                collect_unknown_keys(given, known, &format!("{path}."), unknown);
            }
            // A scalar where a table belongs (or the reverse) is a type error for serde.
            _ => {}
        }
    }
}

/// The `EBB_*` variables as (dotted key path, value) pairs, keys spelled as in the file, and
/// the names of those that map to no key.
fn env_overrides(
    env: impl IntoIterator<Item = (String, String)>,
    known: &Map<String, Value>,
) -> (Vec<(String, String)>, Vec<String>) {
    let mut overrides = Vec::new();
    let mut ignored = Vec::new();
    for (var, value) in env {
        let Some(rest) = strip_prefix_ignore_case(&var, ENV_PREFIX) else {
            continue;
        };
        match canonical_key(rest, known) {
            Some(key) => overrides.push((key, value)),
            None => ignored.push(var),
        }
    }
    ignored.sort();
    (overrides, ignored)
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// `NET__MAX_CONNECTIONS` → `net.max_connections`, walking the key tree case-insensitively.
fn canonical_key(env_key: &str, known: &Map<String, Value>) -> Option<String> {
    let mut level = Some(known);
    let mut path = Vec::new();
    for segment in env_key.split(ENV_SEPARATOR) {
        let (name, value) = level?
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(segment))?;
        path.push(name.as_str());
        level = match &value.kind {
            ValueKind::Table(table) => Some(table),
            _ => None,
        };
    }
    Some(path.join("."))
}

/// Rewrites a `config` crate error as "key: problem". The crate records the dotted key path
/// of the value that failed; errors without one are reported whole.
fn keyed_error(error: config::ConfigError) -> ConfigError {
    match error {
        config::ConfigError::Type {
            unexpected,
            expected,
            key: Some(key),
            ..
        } => ConfigError::invalid(&key, format!("expected {expected}, got {unexpected}")),
        config::ConfigError::At {
            error,
            key: Some(key),
            ..
        } => ConfigError::invalid(&key, error.to_string()),
        other => ConfigError::Parse(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::SyncPolicy;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|&(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    fn file_with(toml: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(toml.as_bytes()).unwrap();
        file
    }

    /// The configuration alone, for tests that expect no ignored variables.
    fn load(overrides: &Overrides, env: Vec<(String, String)>) -> Result<Config, ConfigError> {
        let loaded = Config::load_with_env(overrides, env)?;
        assert_eq!(loaded.ignored_env, Vec::<String>::new());
        Ok(loaded.config)
    }

    fn overrides_for(file: &tempfile::NamedTempFile) -> Overrides {
        Overrides {
            config_file: Some(file.path().to_path_buf()),
            ..Overrides::default()
        }
    }

    #[test]
    fn no_file_and_no_environment_means_defaults() {
        let config = load(&Overrides::default(), env(&[])).unwrap();
        assert_eq!(config, Config::default());
    }

    #[test]
    fn environment_sets_keys_at_any_depth() {
        let config = load(
            &Overrides::default(),
            env(&[
                ("EBB_NET__PORT", "27018"),
                ("EBB_STORAGE__PATH", "/x"),
                ("EBB_STORAGE__SYNC", "always"),
                ("EBB_STORAGE__BLOCK_CACHE", "1GiB"),
                ("EBB_TTL__MAX_DELETES_PER_SEC", "5000"),
                ("EBB_TTL__PROMPT", "false"),
                ("EBB_TTL__HIDE_EXPIRED", "false"),
                ("EBB_TTL__SWEEP_AFTER", "250ms"),
                ("PATH", "/usr/bin"),
            ]),
        )
        .unwrap();
        assert_eq!(config.net.port, 27018);
        assert_eq!(config.storage.path, PathBuf::from("/x"));
        assert_eq!(config.storage.sync, SyncPolicy::Always);
        assert_eq!(config.storage.block_cache, crate::ByteSize::gib(1));
        assert_eq!(config.ttl.max_deletes_per_sec, 5000);
        assert!(!config.ttl.prompt);
        assert!(!config.ttl.hide_expired);
        assert_eq!(
            config.ttl.sweep_after,
            std::time::Duration::from_millis(250)
        );
    }

    #[test]
    fn environment_names_server_parameters_case_insensitively() {
        let config = load(
            &Overrides::default(),
            env(&[
                ("EBB_SETPARAMETER__TTLMONITORSLEEPSECS", "1"),
                ("ebb_setParameter__ttlMonitorEnabled", "false"),
                ("EBB_SETPARAMETER__TTLINDEXDELETETARGETTIMEMS", "0"),
            ]),
        )
        .unwrap();
        assert_eq!(config.set_parameter.ttl_monitor_sleep_secs(), 1);
        assert!(!config.set_parameter.ttl_monitor_enabled());
        assert_eq!(config.set_parameter.ttl_index_delete_target_time_ms(), 0);
    }

    #[test]
    fn environment_values_are_validated_with_their_key() {
        let error = load(
            &Overrides::default(),
            env(&[("EBB_SETPARAMETER__TTLMONITORSLEEPSECS", "0")]),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid config: setParameter.ttlMonitorSleepSecs: Invalid value for parameter ttlMonitorSleepSecs: 0 is not greater than 0"
        );
        let error = load(&Overrides::default(), env(&[("EBB_NET__PORT", "high")])).unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"invalid config: net.port: expected an integer, got string "high""#
        );
    }

    #[test]
    fn environment_variable_for_no_key_is_ignored_and_reported() {
        // `EBB_URI` in a user's shell must not stop the node; the daemon logs a warning.
        let loaded = Config::load_with_env(
            &Overrides::default(),
            env(&[
                ("EBB_URI", "mongodb://localhost"),
                ("EBB_NET__PROT", "1"),
                ("EBB_NET__PORT__X", "1"),
                ("EBB_NET__PORT", "27018"),
            ]),
        )
        .unwrap();
        assert_eq!(loaded.config.net.port, 27018);
        assert_eq!(
            loaded.ignored_env,
            ["EBB_NET__PORT__X", "EBB_NET__PROT", "EBB_URI"],
            "a scalar key has no children"
        );
    }

    #[test]
    fn file_is_read_from_the_given_path() {
        let file = file_with("[net]\nport = 27019\n[setParameter]\nttlMonitorSleepSecs = 5\n");
        let config = load(&overrides_for(&file), env(&[])).unwrap();
        assert_eq!(config.net.port, 27019);
        assert_eq!(config.set_parameter.ttl_monitor_sleep_secs(), 5);
    }

    #[test]
    fn missing_config_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent.toml");
        let overrides = Overrides {
            config_file: Some(path.clone()),
            ..Overrides::default()
        };
        let message = load(&overrides, env(&[])).unwrap_err().to_string();
        assert!(
            message.starts_with(&format!("invalid config: cannot read {}: ", path.display())),
            "{message}"
        );
    }

    #[test]
    fn syntax_error_names_the_file() {
        let file = file_with("[net\n");
        let message = load(&overrides_for(&file), env(&[]))
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with(&format!("invalid config: {}: ", file.path().display())),
            "{message}"
        );
    }

    #[test]
    fn command_line_beats_environment_which_beats_file() {
        let file = file_with(
            "[net]\nbind = \"10.0.0.1\"\nallow_unauthenticated_remote = true\nport = 1001\n[storage]\npath = \"/file\"\nblock_cache = \"1MiB\"\n",
        );
        let environment = env(&[
            ("EBB_NET__PORT", "1002"),
            ("EBB_STORAGE__PATH", "/env"),
            ("EBB_STORAGE__BLOCK_CACHE", "2MiB"),
        ]);
        let overrides = Overrides {
            port: Some(1003),
            db_path: Some(PathBuf::from("/cli")),
            ..overrides_for(&file)
        };
        let config = load(&overrides, environment.clone()).unwrap();
        assert_eq!(config.net.bind, "10.0.0.1", "file value with no override");
        assert_eq!(config.net.port, 1003, "command line wins over environment");
        assert_eq!(config.storage.path, PathBuf::from("/cli"));
        assert_eq!(
            config.storage.block_cache,
            crate::ByteSize::mib(2),
            "environment wins over file"
        );

        let without_cli = load(&overrides_for(&file), environment).unwrap();
        assert_eq!(without_cli.net.port, 1002);
        assert_eq!(without_cli.storage.path, PathBuf::from("/env"));
    }

    #[test]
    fn authorization_comes_from_file_environment_or_command_line() {
        assert_eq!(
            Config::default().security.authorization,
            Authorization::Disabled
        );
        let file = file_with("[security]\nauthorization = \"enabled\"\n");
        let config = load(&overrides_for(&file), env(&[])).unwrap();
        assert_eq!(config.security.authorization, Authorization::Enabled);
        let config = load(
            &overrides_for(&file),
            env(&[("EBB_SECURITY__AUTHORIZATION", "disabled")]),
        )
        .unwrap();
        assert_eq!(config.security.authorization, Authorization::Disabled);
        let overrides = Overrides {
            authorization: Some(Authorization::Enabled),
            ..Overrides::default()
        };
        let config = load(
            &overrides,
            env(&[("EBB_SECURITY__AUTHORIZATION", "disabled")]),
        )
        .unwrap();
        assert_eq!(config.security.authorization, Authorization::Enabled);
        let error = Config::from_toml_str("[security]\nauthorization = \"on\"\n").unwrap_err();
        assert!(
            error.to_string().contains("security.authorization"),
            "{error}"
        );
    }

    #[test]
    fn tls_mode_needs_a_certificate() {
        let error = load(
            &Overrides::default(),
            env(&[("EBB_NET__TLS__MODE", "requireTLS")]),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid config: net.tls.certificate_key_file: must be set when net.tls.mode is not \"disabled\""
        );
        let config = load(
            &Overrides::default(),
            env(&[
                ("EBB_NET__TLS__MODE", "allowTLS"),
                ("EBB_NET__TLS__CERTIFICATE_KEY_FILE", "/etc/ebb/server.pem"),
            ]),
        )
        .unwrap();
        assert_eq!(config.net.tls.mode, crate::TlsMode::AllowTls);
        assert_eq!(
            config.net.tls.certificate_key_file,
            PathBuf::from("/etc/ebb/server.pem")
        );
        assert!(Config::from_toml_str("[net.tls]\nmode = \"on\"\n").is_err());
    }

    #[test]
    fn command_line_values_are_validated_too() {
        let overrides = Overrides {
            bind: Some(String::new()),
            ..Overrides::default()
        };
        let error = load(&overrides, env(&[])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid config: net.bind: must not be empty"
        );
    }

    #[test]
    fn a_remote_bind_needs_authorization_or_an_explicit_opt_out() {
        for address in ["0.0.0.0", "10.0.0.1", "::", "db.example.com"] {
            let overrides = Overrides {
                bind: Some(address.to_string()),
                ..Overrides::default()
            };
            let error = load(&overrides, env(&[])).unwrap_err().to_string();
            assert!(
                error.starts_with(&format!(
                    "invalid config: net.bind: \"{address}\" is not a loopback address"
                )),
                "{error}"
            );
            let authorized = Overrides {
                authorization: Some(Authorization::Enabled),
                ..overrides.clone()
            };
            assert!(load(&authorized, env(&[])).is_ok(), "{address} with --auth");
            let opted_out = load(
                &overrides,
                env(&[("EBB_NET__ALLOW_UNAUTHENTICATED_REMOTE", "true")]),
            );
            assert!(opted_out.is_ok(), "{address} with the opt-out");
        }
        for address in ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"] {
            let overrides = Overrides {
                bind: Some(address.to_string()),
                ..Overrides::default()
            };
            assert!(load(&overrides, env(&[])).is_ok(), "{address} is loopback");
        }
        let error = load(
            &Overrides::default(),
            env(&[
                ("EBB_NET__HTTP__ENABLED", "true"),
                ("EBB_NET__HTTP__BIND", "0.0.0.0"),
            ]),
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("invalid config: net.http.bind"),
            "{error}"
        );
    }

    #[test]
    fn https_for_the_http_listener_needs_a_certificate() {
        let error = load(
            &Overrides::default(),
            env(&[
                ("EBB_NET__HTTP__ENABLED", "true"),
                ("EBB_NET__HTTP__TLS", "true"),
            ]),
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("invalid config: net.http.tls"),
            "{error}"
        );
        let loaded = load(
            &Overrides::default(),
            env(&[
                ("EBB_NET__HTTP__TLS", "true"),
                ("EBB_NET__TLS__CERTIFICATE_KEY_FILE", "server.pem"),
            ]),
        )
        .unwrap();
        assert!(loaded.net.http.tls);
    }
}
