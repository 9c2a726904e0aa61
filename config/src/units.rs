//! Config values written as text: byte sizes, durations, the sync policy and the log format.
//!
//! Each type here parses from the one string form a person writes in `ebb.toml` or an `EBB_*`
//! variable and prints back to that same form, so the serialized defaults read like the
//! shipped file. Parsing only checks syntax and reports it in a message meant for a config
//! error; range checks ("must be greater than 0") belong to `Config::validate`, so values built
//! in code are held to the same rules as values read from a file.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A number of bytes, written `"256MiB"`, `"1GiB"`, `"64MB"` or as a plain integer.
///
/// Binary units (`KiB`, `MiB`, `GiB`, `TiB`) are powers of 1024 and decimal units (`KB`, `MB`,
/// `GB`, `TB`) powers of 1000, so `"64MB"` and `"64MiB"` mean what they say. Units are
/// case-insensitive; fractions are not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

const KIB: u64 = 1024;

/// Units from largest to smallest, so printing picks the largest one that divides exactly.
const BYTE_UNITS: &[(&str, u64)] = &[
    ("TiB", KIB * KIB * KIB * KIB),
    ("GiB", KIB * KIB * KIB),
    ("MiB", KIB * KIB),
    ("KiB", KIB),
    ("TB", 1_000_000_000_000),
    ("GB", 1_000_000_000),
    ("MB", 1_000_000),
    ("KB", 1_000),
    ("B", 1),
];

impl ByteSize {
    /// `n` mebibytes.
    pub const fn mib(n: u64) -> Self {
        Self(n * KIB * KIB)
    }

    /// `n` gibibytes.
    pub const fn gib(n: u64) -> Self {
        Self(n * KIB * KIB * KIB)
    }

    /// The size in bytes.
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let invalid = || {
            format!(
                r#"expected a byte size like "256MiB", "1GiB" or a number of bytes, got "{text}""#
            )
        };
        let trimmed = text.trim();
        let digits_end = trimmed
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(trimmed.len());
        let (digits, unit) = trimmed.split_at(digits_end);
        let count: u64 = digits.parse().map_err(|_| invalid())?;
        let unit = unit.trim();
        let multiplier = if unit.is_empty() {
            1
        } else {
            BYTE_UNITS
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(unit))
                .map(|&(_, multiplier)| multiplier)
                .ok_or_else(invalid)?
        };
        count
            .checked_mul(multiplier)
            .map(ByteSize)
            .ok_or_else(|| format!(r#"byte size "{text}" does not fit in 64 bits"#))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Only binary units are used for printing: the defaults are binary, and a size that
        // is a round number of both (e.g. 0) reads best in the binary form.
        let binary = BYTE_UNITS.iter().filter(|(name, _)| name.ends_with("iB"));
        match binary
            .copied()
            .find(|&(_, multiplier)| self.0 != 0 && self.0.is_multiple_of(multiplier))
        {
            Some((name, multiplier)) => write!(f, "{}{name}", self.0 / multiplier),
            None => write!(f, "{}", self.0),
        }
    }
}

/// When the write-ahead log is synced to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// `sync = "always"`: every acknowledged write is fsynced before the reply.
    Always,
    /// `sync = "100ms"`: group commit. The WAL is synced at this interval, like MongoDB's
    /// journal commit interval; a write with `j: true` is still synced before its reply.
    Interval(Duration),
}

impl FromStr for SyncPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.trim().eq_ignore_ascii_case("always") {
            return Ok(SyncPolicy::Always);
        }
        humantime::parse_duration(text.trim())
            .map(SyncPolicy::Interval)
            .map_err(|_| format!(r#"expected "always" or a duration like "100ms", got "{text}""#))
    }
}

impl fmt::Display for SyncPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncPolicy::Always => f.write_str("always"),
            SyncPolicy::Interval(interval) => {
                write!(f, "{}", humantime::format_duration(*interval))
            }
        }
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            _ => Err(format!(r#"expected "text" or "json", got "{text}""#)),
        }
    }
}

impl fmt::Display for LogFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        })
    }
}

/// Parses a humantime duration ("100ms", "30s", "10m") with a message fit for a config error.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|_| format!(r#"expected a duration like "30s" or "10m", got "{text}""#))
}

/// Serde support for the text types: each is written as its `Display` form and read through
/// its `FromStr`, so file, environment and serialized defaults share one syntax.
macro_rules! serde_as_text {
    ($($ty:ty),*) => {$(
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserialize_parsed(deserializer, str::parse)
            }
        }
    )*};
}

serde_as_text!(ByteSize, SyncPolicy, LogFormat);

/// Reads a string (the `config` crate also hands integers over as their digits) and parses it,
/// turning a parse failure into a custom error the `config` crate tags with the key path.
fn deserialize_parsed<'de, D, T>(
    deserializer: D,
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let text = <String as serde::Deserialize>::deserialize(deserializer)?;
    parse(&text).map_err(serde::de::Error::custom)
}

/// `#[serde(with = "humantime_text")]` for `Duration` fields.
pub(crate) mod humantime_text {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(
        duration: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&humantime::format_duration(*duration))
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Duration, D::Error> {
        super::deserialize_parsed(deserializer, super::parse_duration)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_accept_binary_and_decimal_units_and_plain_bytes() {
        assert_eq!("256MiB".parse(), Ok(ByteSize::mib(256)));
        assert_eq!("1GiB".parse(), Ok(ByteSize::gib(1)));
        assert_eq!("1 gib".parse(), Ok(ByteSize::gib(1)));
        assert_eq!("64MB".parse(), Ok(ByteSize(64_000_000)));
        assert_eq!("4KiB".parse(), Ok(ByteSize(4096)));
        assert_eq!("1000".parse(), Ok(ByteSize(1000)));
        assert_eq!("12B".parse(), Ok(ByteSize(12)));
        assert_eq!("0".parse(), Ok(ByteSize(0)));
    }

    #[test]
    fn byte_size_rejects_unknown_units_fractions_and_overflow() {
        assert_eq!(
            "12 parsecs".parse::<ByteSize>(),
            Err(r#"expected a byte size like "256MiB", "1GiB" or a number of bytes, got "12 parsecs""#.to_string())
        );
        assert!("1.5GiB".parse::<ByteSize>().is_err());
        assert!("MiB".parse::<ByteSize>().is_err());
        assert!("-1".parse::<ByteSize>().is_err());
        assert_eq!(
            "17000000TiB".parse::<ByteSize>(),
            Err(r#"byte size "17000000TiB" does not fit in 64 bits"#.to_string())
        );
    }

    #[test]
    fn byte_size_prints_in_the_largest_exact_binary_unit() {
        assert_eq!(ByteSize::mib(256).to_string(), "256MiB");
        assert_eq!(ByteSize::gib(1).to_string(), "1GiB");
        assert_eq!(ByteSize(1536).to_string(), "1536");
        assert_eq!(ByteSize(2048).to_string(), "2KiB");
        assert_eq!(ByteSize(0).to_string(), "0");
    }

    #[test]
    fn sync_policy_is_always_or_an_interval() {
        assert_eq!("always".parse(), Ok(SyncPolicy::Always));
        assert_eq!(
            "100ms".parse(),
            Ok(SyncPolicy::Interval(Duration::from_millis(100)))
        );
        assert_eq!(
            "sometimes".parse::<SyncPolicy>(),
            Err(r#"expected "always" or a duration like "100ms", got "sometimes""#.to_string())
        );
    }

    #[test]
    fn text_values_print_back_to_what_parses() {
        for text in ["always", "100ms", "1s 500ms"] {
            assert_eq!(text.parse::<SyncPolicy>().unwrap().to_string(), text);
        }
        for text in ["text", "json"] {
            assert_eq!(text.parse::<LogFormat>().unwrap().to_string(), text);
        }
    }

    #[test]
    fn durations_use_humantime_units() {
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(
            parse_duration("600"),
            Err(r#"expected a duration like "30s" or "10m", got "600""#.to_string())
        );
    }

    #[test]
    fn log_format_is_text_or_json() {
        assert_eq!("JSON".parse(), Ok(LogFormat::Json));
        assert_eq!(
            "xml".parse::<LogFormat>(),
            Err(r#"expected "text" or "json", got "xml""#.to_string())
        );
    }
}
