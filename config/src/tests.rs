//! Loading and validating the configuration: defaults, the shipped
//! `ebb.toml`, files, environment, and the errors bad values get.

use std::path::PathBuf;
use std::time::Duration;

use super::*;

const SHIPPED: &str = include_str!("../../ebb.toml");

fn error_of(toml: &str) -> String {
    Config::from_toml_str(toml).unwrap_err().to_string()
}

#[test]
fn defaults_match_the_documented_values() {
    let config = Config::default();
    assert_eq!(config.net.bind, "127.0.0.1");
    assert_eq!(config.net.port, 27017);
    assert_eq!(config.net.max_connections, 10_000);
    assert_eq!(config.net.max_message_bytes, 48_000_000);
    assert_eq!(config.storage.path, PathBuf::from("./data"));
    assert_eq!(
        config.storage.sync,
        SyncPolicy::Interval(Duration::from_millis(100))
    );
    assert_eq!(config.storage.block_cache, ByteSize(256 * 1024 * 1024));
    assert_eq!(config.storage.write_buffer, ByteSize(64 * 1024 * 1024));
    assert!(config.ttl.prompt);
    assert!(config.ttl.hide_expired);
    assert_eq!(config.ttl.max_deletes_per_sec, 0);
    assert_eq!(config.ttl.sweep_after, Duration::from_secs(2));
    assert_eq!(config.ttl.overload, crate::Overload::Backlog);
    assert_eq!(config.cursors.idle_timeout, Duration::from_secs(600));
    assert_eq!(config.log.level, "info");
    assert_eq!(config.log.format, LogFormat::Text);
    assert_eq!(config.set_parameter, ServerParameters::default());
    assert_eq!(config.validate().map_err(|e| e.to_string()), Ok(()));
}

#[test]
fn shipped_ebb_toml_equals_the_built_in_defaults() {
    assert_eq!(Config::from_toml_str(SHIPPED).unwrap(), Config::default());
}

#[test]
fn shipped_ebb_toml_spells_out_every_key() {
    let shipped = config::Config::builder()
        .add_source(config::File::from_str(SHIPPED, config::FileFormat::Toml))
        .build()
        .unwrap();
    let defaults = config::Config::try_from(&Config::default()).unwrap();
    assert_eq!(
        key_paths(&shipped.cache, ""),
        key_paths(&defaults.cache, ""),
        "ebb.toml must list every key, so it can serve as the reference"
    );
}

fn key_paths(value: &config::Value, prefix: &str) -> Vec<String> {
    let config::ValueKind::Table(table) = &value.kind else {
        return vec![prefix.to_string()];
    };
    let mut paths: Vec<String> = table
        .iter()
        .flat_map(|(key, value)| key_paths(value, &format!("{prefix}.{key}")))
        .collect();
    paths.sort();
    paths
}

#[test]
fn an_empty_file_means_defaults() {
    assert_eq!(Config::from_toml_str("").unwrap(), Config::default());
}

#[test]
fn a_file_sets_only_the_keys_it_names() {
    let config = Config::from_toml_str(
        r#"
        [net]
        port = 27018
        [storage]
        sync = "always"
        block_cache = "1GiB"
        write_buffer = 1048576
        [cursors]
        idle_timeout = "30s"
        [log]
        format = "json"
        [setParameter]
        ttlMonitorSleepSecs = 1
        ttlMonitorEnabled = false
        "#,
    )
    .unwrap();
    assert_eq!(config.net.port, 27018);
    assert_eq!(config.net.bind, "127.0.0.1");
    assert_eq!(config.storage.sync, SyncPolicy::Always);
    assert_eq!(config.storage.block_cache, ByteSize::gib(1));
    assert_eq!(config.storage.write_buffer, ByteSize::mib(1));
    assert_eq!(config.cursors.idle_timeout, Duration::from_secs(30));
    assert_eq!(config.log.format, LogFormat::Json);
    assert_eq!(config.set_parameter.ttl_monitor_sleep_secs(), 1);
    assert!(!config.set_parameter.ttl_monitor_enabled());
    assert_eq!(config.set_parameter.ttl_index_delete_target_docs(), 50_000);
}

#[test]
fn unknown_nested_key_is_named_with_its_path() {
    assert_eq!(
        error_of("[storage]\nsyncc = \"always\""),
        "invalid config: unknown key 'storage.syncc'"
    );
    assert_eq!(
        error_of("[setParameter]\nttlMonitorSleepSeconds = 1"),
        "invalid config: unknown key 'setParameter.ttlMonitorSleepSeconds'"
    );
}

#[test]
fn every_unknown_key_is_listed_in_order() {
    assert_eq!(
        error_of("colour = 1\n[net]\nprot = 1\n[extra]\nx = 1"),
        "invalid config: unknown keys 'colour', 'extra', 'net.prot'"
    );
}

#[test]
fn bad_sync_policy_names_the_key_and_the_choices() {
    assert_eq!(
        error_of("[storage]\nsync = \"sometimes\""),
        r#"invalid config: storage.sync: expected "always" or a duration like "100ms", got "sometimes""#
    );
}

#[test]
fn zero_sync_interval_is_rejected() {
    assert_eq!(
        error_of("[storage]\nsync = \"0ms\""),
        r#"invalid config: storage.sync: the interval must be greater than 0 (use "always" to sync every write)"#
    );
}

#[test]
fn out_of_bounds_server_parameter_uses_mongodb_message() {
    assert_eq!(
        error_of("[setParameter]\nttlMonitorSleepSecs = 0"),
        "invalid config: setParameter.ttlMonitorSleepSecs: Invalid value for parameter ttlMonitorSleepSecs: 0 is not greater than 0"
    );
    assert_eq!(
        error_of("[setParameter]\nttlIndexDeleteTargetDocs = -1"),
        "invalid config: setParameter.ttlIndexDeleteTargetDocs: Invalid value for parameter ttlIndexDeleteTargetDocs: -1 is not greater than or equal to 0"
    );
}

#[test]
fn wrong_type_names_the_key() {
    assert_eq!(
        error_of("[net]\nport = \"high\""),
        r#"invalid config: net.port: expected an integer, got string "high""#
    );
    assert_eq!(
        error_of("[net]\nport = 70000"),
        "invalid config: net.port: expected an unsigned 16 bit integer, got 64-bit unsigned integer `70000`"
    );
    assert_eq!(
        error_of("net = 5"),
        "invalid config: net: invalid type: integer `5`, expected struct Net"
    );
}

#[test]
fn bad_byte_size_duration_and_format_name_their_keys() {
    assert_eq!(
        error_of("[storage]\nblock_cache = \"lots\""),
        r#"invalid config: storage.block_cache: expected a byte size like "256MiB", "1GiB" or a number of bytes, got "lots""#
    );
    assert_eq!(
        error_of("[cursors]\nidle_timeout = \"600\""),
        r#"invalid config: cursors.idle_timeout: expected a duration like "30s" or "10m", got "600""#
    );
    assert_eq!(
        error_of("[log]\nformat = \"xml\""),
        r#"invalid config: log.format: expected "text" or "json", got "xml""#
    );
}

#[test]
fn range_checks_name_their_keys() {
    let cases = [
        ("[net]\nbind = \"\"", "net.bind: must not be empty"),
        (
            "[net]\nmax_connections = 0",
            "net.max_connections: must be greater than 0",
        ),
        (
            "[net]\nmax_message_bytes = 48000001",
            "net.max_message_bytes: must be between 1 and 48000000, got 48000001",
        ),
        ("[storage]\npath = \"\"", "storage.path: must not be empty"),
        (
            "[storage]\nwrite_buffer = 0",
            "storage.write_buffer: must be greater than 0",
        ),
        (
            "[cursors]\nidle_timeout = \"0s\"",
            "cursors.idle_timeout: must be greater than 0",
        ),
    ];
    for (toml, message) in cases {
        assert_eq!(
            error_of(toml),
            format!("invalid config: {message}"),
            "{toml}"
        );
    }
}

#[test]
fn a_key_file_turns_authorization_on_and_a_set_with_authorization_needs_one() {
    let config = Config::from_toml_str("[security]\nkey_file = \"/etc/ebb/key\"").unwrap();
    assert_eq!(config.security.authorization, Authorization::Enabled);
    assert_eq!(
        error_of("[security]\nauthorization = \"enabled\"\n[replication]\nrepl_set_name = \"rs0\""),
        "invalid config: replication.repl_set_name: a replica set with security.authorization \
         enabled needs security.key_file: members authenticate to each other with it"
    );
    let set = Config::from_toml_str(
        "[security]\nkey_file = \"/etc/ebb/key\"\n[replication]\nrepl_set_name = \"rs0\"",
    )
    .unwrap();
    assert!(set.replication.enabled());
}

#[test]
fn a_set_over_tls_needs_the_authorities_members_trust() {
    let tls = "[net.tls]\nmode = \"requireTLS\"\ncertificate_key_file = \"/etc/ebb/node.pem\"\n";
    let set = "[replication]\nrepl_set_name = \"rs0\"\n";
    assert_eq!(
        error_of(&format!("{tls}{set}")),
        "invalid config: net.tls.ca_file: a replica set with net.tls.mode \"preferTLS\" or \
         \"requireTLS\" needs it: members connect to each other over TLS and verify each \
         other's certificates against it"
    );
    Config::from_toml_str(tls).unwrap();
    Config::from_toml_str(&format!("{tls}ca_file = \"/etc/ebb/ca.pem\"\n{set}")).unwrap();
    let allow = tls.replace("requireTLS", "allowTLS");
    Config::from_toml_str(&format!("{allow}{set}")).unwrap();
}

#[test]
fn max_message_bytes_may_be_lowered() {
    let config = Config::from_toml_str("[net]\nmax_message_bytes = 1000000").unwrap();
    assert_eq!(config.net.max_message_bytes, 1_000_000);
}

#[test]
fn log_level_must_be_a_filter_directive() {
    let config = Config::from_toml_str("[log]\nlevel = \"warn,ebb_storage=debug\"").unwrap();
    assert_eq!(config.log.level, "warn,ebb_storage=debug");
    let message = error_of("[log]\nlevel = \"=[\"");
    assert!(
        message.starts_with("invalid config: log.level: not a log filter"),
        "{message}"
    );
}

#[test]
fn toml_syntax_errors_are_reported() {
    let message = error_of("[net\nport = 1");
    assert!(message.starts_with("invalid config: TOML: "), "{message}");
}
