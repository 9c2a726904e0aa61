//! MongoDB's server parameters ebb takes (the TTL monitor's, and the transactions' lifetime):
//! names, defaults, bounds and value coercion, in one table.
//!
//! [`SERVER_PARAMS`] is the only place these parameters are described. The `[setParameter]` config
//! section and the node's runtime `setParameter` / `getParameter` commands both go through
//! [`ServerParameters::set_coerced`], so a value is accepted at startup exactly when it would be
//! accepted at runtime, with MongoDB's error text. This module knows nothing of BSON or of
//! MongoDB's numeric error codes: the node turns BSON values into [`ParamInput`] and maps
//! [`ParamError`] variants to codes.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A parameter's value. Integer parameters are MongoDB `int`s: always within `i32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamValue {
    /// A boolean parameter's value.
    Bool(bool),
    /// An integer parameter's value.
    Int(i64),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Bool(value) => write!(f, "{value}"),
            ParamValue::Int(value) => write!(f, "{value}"),
        }
    }
}

/// A value as a client or a config source supplied it, before coercion to the parameter's type.
///
/// The node builds this from the BSON element of a `setParameter` command (int32 and int64 as
/// `Int`, double as `Double`); the config file and environment supply the same shapes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamInput<'a> {
    /// A BSON bool or TOML boolean.
    Bool(bool),
    /// A BSON int32/int64 or TOML integer.
    Int(i64),
    /// A BSON double or TOML float.
    Double(f64),
    /// A string, as from an environment variable or a client sending `"5"`.
    Str(&'a str),
}

impl From<ParamValue> for ParamInput<'_> {
    fn from(value: ParamValue) -> Self {
        match value {
            ParamValue::Bool(value) => ParamInput::Bool(value),
            ParamValue::Int(value) => ParamInput::Int(value),
        }
    }
}

/// The lower bound an integer parameter must respect (MongoDB's IDL `gt` / `gte` validators).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Any value of the parameter's type.
    None,
    /// Strictly greater than this.
    GreaterThan(i64),
    /// Greater than or equal to this.
    AtLeast(i64),
}

impl Bound {
    /// Checks `value`, returning MongoDB's reason text when it is out of bounds.
    fn check(self, value: i64) -> Result<(), String> {
        match self {
            Bound::GreaterThan(limit) if value <= limit => {
                Err(format!("{value} is not greater than {limit}"))
            }
            Bound::AtLeast(limit) if value < limit => {
                Err(format!("{value} is not greater than or equal to {limit}"))
            }
            _ => Ok(()),
        }
    }
}

/// One server parameter: its MongoDB name, default (which also fixes its type) and bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: ParamValue,
    pub bound: Bound,
    pub doc: &'static str,
}

/// MongoDB's TTL monitor parameters and `transactionLifetimeLimitSeconds`, with MongoDB's
/// defaults and bounds. All are settable at startup (`[setParameter]`) and at runtime
/// (`setParameter`).
pub const SERVER_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "ttlMonitorEnabled",
        default: ParamValue::Bool(true),
        bound: Bound::None,
        doc: "Whether the TTL monitor deletes expired documents at all.",
    },
    ParamSpec {
        name: "ttlMonitorSleepSecs",
        default: ParamValue::Int(60),
        bound: Bound::GreaterThan(0),
        doc: "Seconds between TTL passes when the monitor is not woken earlier.",
    },
    ParamSpec {
        name: "ttlMonitorBatchDeletes",
        default: ParamValue::Bool(true),
        bound: Bound::None,
        doc: "Delete in batches with fair round-robin sub-passes; false deletes one document at a time.",
    },
    ParamSpec {
        name: "ttlIndexDeleteTargetDocs",
        default: ParamValue::Int(50_000),
        bound: Bound::AtLeast(0),
        doc: "Documents deleted per TTL index visit before moving on; 0 means no limit.",
    },
    ParamSpec {
        name: "ttlIndexDeleteTargetTimeMS",
        default: ParamValue::Int(1_000),
        bound: Bound::AtLeast(0),
        doc: "Milliseconds spent per TTL index visit before moving on; 0 means no limit.",
    },
    ParamSpec {
        name: "ttlMonitorSubPassTargetSecs",
        default: ParamValue::Int(60),
        bound: Bound::AtLeast(0),
        doc: "Seconds a sub-pass may run before the index list is refreshed; 0 visits each index once.",
    },
    ParamSpec {
        name: "transactionLifetimeLimitSeconds",
        default: ParamValue::Int(60),
        bound: Bound::AtLeast(1),
        doc: "Seconds a multi-document transaction may stay open before it is aborted.",
    },
];

/// The spec named `name` (case-sensitive, as in MongoDB).
pub fn find_param(name: &str) -> Option<&'static ParamSpec> {
    SERVER_PARAMS.iter().find(|spec| spec.name == name)
}

fn position(name: &str) -> Option<usize> {
    SERVER_PARAMS.iter().position(|spec| spec.name == name)
}

/// Why a parameter could not be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// No parameter has this name. MongoDB answers code 72, InvalidOptions.
    #[error("attempted to set unrecognized parameter [{name}], use help:true to see options ")]
    Unknown { name: String },
    /// The value has the wrong type or breaks the bound. MongoDB answers code 2, BadValue.
    #[error("Invalid value for parameter {name}: {reason}")]
    BadValue { name: &'static str, reason: String },
}

const NOT_INTEGRAL: &str = "Unable to coerce value to integral type";
const OUT_OF_RANGE: &str = "Out of bounds coercing to integral value";

impl ParamSpec {
    /// Converts `input` to this parameter's type with MongoDB's coercion, then checks the bound.
    ///
    /// Integers: int and long must fit an `int`; a double is truncated toward zero; a string
    /// must be a decimal integer (as in `--setParameter name=5`); a bool is refused.
    /// Booleans: a number means "not zero"; a string must be true/false/1/0.
    pub fn coerce(&self, input: ParamInput<'_>) -> Result<ParamValue, ParamError> {
        let coerced = match self.default {
            ParamValue::Bool(_) => coerce_bool(input).map(ParamValue::Bool),
            ParamValue::Int(_) => coerce_int(input)
                .and_then(|value| self.bound.check(value).map(|()| ParamValue::Int(value))),
        };
        coerced.map_err(|reason| ParamError::BadValue {
            name: self.name,
            reason,
        })
    }
}

fn coerce_int(input: ParamInput<'_>) -> Result<i64, String> {
    let wide = match input {
        ParamInput::Int(value) => value,
        // `as` saturates, and a saturated value fails the range check below.
        ParamInput::Double(value) if value.is_finite() => value.trunc() as i64,
        ParamInput::Double(_) => return Err("Unable to coerce NaN/Inf to integral type".into()),
        ParamInput::Str(text) => text.trim().parse().map_err(|_| NOT_INTEGRAL.to_string())?,
        ParamInput::Bool(_) => return Err(NOT_INTEGRAL.into()),
    };
    i32::try_from(wide)
        .map(i64::from)
        .map_err(|_| OUT_OF_RANGE.into())
}

fn coerce_bool(input: ParamInput<'_>) -> Result<bool, String> {
    match input {
        ParamInput::Bool(value) => Ok(value),
        ParamInput::Int(value) => Ok(value != 0),
        ParamInput::Double(value) => Ok(value != 0.0),
        ParamInput::Str(text) => match text.trim() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err("Unable to coerce value to bool".into()),
        },
    }
}

/// The current value of every parameter in [`SERVER_PARAMS`]; always within bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerParameters {
    values: [ParamValue; SERVER_PARAMS.len()],
}

impl Default for ServerParameters {
    fn default() -> Self {
        Self {
            values: std::array::from_fn(|index| SERVER_PARAMS[index].default),
        }
    }
}

impl ServerParameters {
    /// The value of `name`, or `None` when no parameter has that name.
    pub fn get(&self, name: &str) -> Option<ParamValue> {
        position(name).map(|index| self.values[index])
    }

    /// Validates and sets `name`, returning the previous value (MongoDB's `was`).
    pub fn set(&mut self, name: &str, value: ParamValue) -> Result<ParamValue, ParamError> {
        self.set_coerced(name, value.into())
    }

    /// Coerces `input` to the parameter's type, validates and sets it; returns the previous
    /// value. On error nothing changes.
    pub fn set_coerced(
        &mut self,
        name: &str,
        input: ParamInput<'_>,
    ) -> Result<ParamValue, ParamError> {
        let index = position(name).ok_or_else(|| ParamError::Unknown {
            name: name.to_string(),
        })?;
        let value = SERVER_PARAMS[index].coerce(input)?;
        Ok(std::mem::replace(&mut self.values[index], value))
    }

    /// Every parameter with its current value, in table order (for `getParameter: "*"`).
    pub fn iter(&self) -> impl Iterator<Item = (&'static ParamSpec, ParamValue)> + '_ {
        SERVER_PARAMS.iter().zip(self.values.iter().copied())
    }

    /// `ttlMonitorEnabled`.
    pub fn ttl_monitor_enabled(&self) -> bool {
        self.bool_param("ttlMonitorEnabled")
    }

    /// `ttlMonitorSleepSecs`: at least 1.
    pub fn ttl_monitor_sleep_secs(&self) -> u64 {
        self.count_param("ttlMonitorSleepSecs")
    }

    /// `ttlMonitorBatchDeletes`.
    pub fn ttl_monitor_batch_deletes(&self) -> bool {
        self.bool_param("ttlMonitorBatchDeletes")
    }

    /// `ttlIndexDeleteTargetDocs`: 0 means no limit.
    pub fn ttl_index_delete_target_docs(&self) -> u64 {
        self.count_param("ttlIndexDeleteTargetDocs")
    }

    /// `ttlIndexDeleteTargetTimeMS`: 0 means no limit.
    pub fn ttl_index_delete_target_time_ms(&self) -> u64 {
        self.count_param("ttlIndexDeleteTargetTimeMS")
    }

    /// `ttlMonitorSubPassTargetSecs`: 0 means each index is visited once per sub-pass.
    pub fn ttl_monitor_sub_pass_target_secs(&self) -> u64 {
        self.count_param("ttlMonitorSubPassTargetSecs")
    }

    fn bool_param(&self, name: &'static str) -> bool {
        match self.get(name) {
            Some(ParamValue::Bool(value)) => value,
            other => unreachable!("{name} is a bool in SERVER_PARAMS, found {other:?}"),
        }
    }

    /// Every integer TTL parameter has a lower bound of at least 0, so it fits `u64`.
    fn count_param(&self, name: &'static str) -> u64 {
        match self.get(name) {
            Some(ParamValue::Int(value)) => u64::try_from(value).unwrap_or(0),
            other => unreachable!("{name} is an int in SERVER_PARAMS, found {other:?}"),
        }
    }
}

impl Serialize for ServerParameters {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(SERVER_PARAMS.len()))?;
        for (spec, value) in self.iter() {
            match value {
                ParamValue::Bool(value) => map.serialize_entry(spec.name, &value)?,
                ParamValue::Int(value) => map.serialize_entry(spec.name, &value)?,
            }
        }
        map.end()
    }
}

/// Reads `[setParameter]` through the same coercion as the runtime command. Each value is
/// coerced inside its own `DeserializeSeed`, so the `config` crate tags a bad value with its
/// full key path (`setParameter.ttlMonitorSleepSecs`).
impl<'de> Deserialize<'de> for ServerParameters {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ParametersVisitor)
    }
}

struct ParametersVisitor;

impl<'de> Visitor<'de> for ParametersVisitor {
    type Value = ServerParameters;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a table of server parameters")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ServerParameters, A::Error> {
        let mut parameters = ServerParameters::default();
        while let Some(name) = map.next_key::<String>()? {
            let index = position(&name)
                .ok_or_else(|| de::Error::custom(format!("unknown server parameter '{name}'")))?;
            parameters.values[index] = map.next_value_seed(ValueSeed(&SERVER_PARAMS[index]))?;
        }
        Ok(parameters)
    }
}

/// Deserializes one parameter value, coerced and checked against its spec.
struct ValueSeed(&'static ParamSpec);

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = ParamValue;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ParamValue, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl ValueSeed {
    fn coerce<E: de::Error>(&self, input: ParamInput<'_>) -> Result<ParamValue, E> {
        self.0.coerce(input).map_err(E::custom)
    }
}

impl Visitor<'_> for ValueSeed {
    type Value = ParamValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a value for {}", self.0.name)
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<ParamValue, E> {
        self.coerce(ParamInput::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<ParamValue, E> {
        self.coerce(ParamInput::Int(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<ParamValue, E> {
        // Too large for i64 is certainly too large for an int: saturate and let coercion say so.
        self.coerce(ParamInput::Int(i64::try_from(value).unwrap_or(i64::MAX)))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<ParamValue, E> {
        self.coerce(ParamInput::Double(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<ParamValue, E> {
        self.coerce(ParamInput::Str(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad_value(name: &'static str, reason: &str) -> ParamError {
        ParamError::BadValue {
            name,
            reason: reason.to_string(),
        }
    }

    #[test]
    fn defaults_are_mongodb_defaults() {
        let params = ServerParameters::default();
        assert!(params.ttl_monitor_enabled());
        assert_eq!(params.ttl_monitor_sleep_secs(), 60);
        assert!(params.ttl_monitor_batch_deletes());
        assert_eq!(params.ttl_index_delete_target_docs(), 50_000);
        assert_eq!(params.ttl_index_delete_target_time_ms(), 1_000);
        assert_eq!(params.ttl_monitor_sub_pass_target_secs(), 60);
    }

    #[test]
    fn set_returns_the_previous_value() {
        let mut params = ServerParameters::default();
        assert_eq!(
            params.set("ttlMonitorSleepSecs", ParamValue::Int(1)),
            Ok(ParamValue::Int(60))
        );
        assert_eq!(params.get("ttlMonitorSleepSecs"), Some(ParamValue::Int(1)));
        assert_eq!(params.ttl_monitor_sleep_secs(), 1);
        assert_eq!(
            params.set("ttlMonitorEnabled", ParamValue::Bool(false)),
            Ok(ParamValue::Bool(true))
        );
        assert!(!params.ttl_monitor_enabled());
    }

    #[test]
    fn sleep_secs_must_be_greater_than_zero() {
        let mut params = ServerParameters::default();
        let error = params
            .set("ttlMonitorSleepSecs", ParamValue::Int(0))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "Invalid value for parameter ttlMonitorSleepSecs: 0 is not greater than 0"
        );
        assert_eq!(
            params.ttl_monitor_sleep_secs(),
            60,
            "a rejected set changes nothing"
        );
    }

    #[test]
    fn non_negative_params_reject_negative_values() {
        let mut params = ServerParameters::default();
        for name in [
            "ttlIndexDeleteTargetDocs",
            "ttlIndexDeleteTargetTimeMS",
            "ttlMonitorSubPassTargetSecs",
        ] {
            let error = params.set(name, ParamValue::Int(-1)).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("Invalid value for parameter {name}: -1 is not greater than or equal to 0")
            );
            assert_eq!(params.set(name, ParamValue::Int(0)).map(|_| ()), Ok(()));
        }
    }

    #[test]
    fn unknown_parameter_is_named_in_mongodb_words() {
        let mut params = ServerParameters::default();
        let error = params
            .set("ttlMonitorSleepSeconds", ParamValue::Int(1))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "attempted to set unrecognized parameter [ttlMonitorSleepSeconds], use help:true to see options "
        );
        assert_eq!(
            params.get("ttlmonitorsleepsecs"),
            None,
            "names are case-sensitive"
        );
    }

    #[test]
    fn int_params_coerce_doubles_and_numeric_strings() {
        let mut params = ServerParameters::default();
        params
            .set_coerced("ttlMonitorSleepSecs", ParamInput::Double(2.9))
            .unwrap();
        assert_eq!(params.ttl_monitor_sleep_secs(), 2);
        params
            .set_coerced("ttlMonitorSleepSecs", ParamInput::Str("7"))
            .unwrap();
        assert_eq!(params.ttl_monitor_sleep_secs(), 7);
        assert_eq!(
            params.set_coerced("ttlMonitorSleepSecs", ParamInput::Double(0.5)),
            Err(bad_value("ttlMonitorSleepSecs", "0 is not greater than 0"))
        );
    }

    #[test]
    fn int_params_reject_bools_words_and_out_of_range_values() {
        let mut params = ServerParameters::default();
        let name = "ttlIndexDeleteTargetDocs";
        assert_eq!(
            params.set_coerced(name, ParamInput::Bool(true)),
            Err(bad_value(name, NOT_INTEGRAL))
        );
        assert_eq!(
            params.set_coerced(name, ParamInput::Str("many")),
            Err(bad_value(name, NOT_INTEGRAL))
        );
        assert_eq!(
            params.set_coerced(name, ParamInput::Int(i64::from(i32::MAX) + 1)),
            Err(bad_value(name, OUT_OF_RANGE))
        );
        assert_eq!(
            params.set_coerced(name, ParamInput::Double(1e300)),
            Err(bad_value(name, OUT_OF_RANGE))
        );
        assert_eq!(
            params.set_coerced(name, ParamInput::Double(f64::NAN)),
            Err(bad_value(name, "Unable to coerce NaN/Inf to integral type"))
        );
        assert_eq!(params.ttl_index_delete_target_docs(), 50_000);
    }

    #[test]
    fn bool_params_take_numbers_as_nonzero_and_true_false_strings() {
        let mut params = ServerParameters::default();
        let name = "ttlMonitorBatchDeletes";
        params.set_coerced(name, ParamInput::Int(0)).unwrap();
        assert!(!params.ttl_monitor_batch_deletes());
        params.set_coerced(name, ParamInput::Double(2.0)).unwrap();
        assert!(params.ttl_monitor_batch_deletes());
        params.set_coerced(name, ParamInput::Str("false")).unwrap();
        assert!(!params.ttl_monitor_batch_deletes());
        assert_eq!(
            params.set_coerced(name, ParamInput::Str("nope")),
            Err(bad_value(name, "Unable to coerce value to bool"))
        );
    }

    #[test]
    fn iter_lists_every_parameter_in_table_order() {
        let names: Vec<_> = ServerParameters::default()
            .iter()
            .map(|(spec, _)| spec.name)
            .collect();
        let table: Vec<_> = SERVER_PARAMS.iter().map(|spec| spec.name).collect();
        assert_eq!(names, table);
    }

    #[test]
    fn every_default_is_within_its_bound() {
        for spec in SERVER_PARAMS {
            assert_eq!(
                spec.coerce(spec.default.into()),
                Ok(spec.default),
                "{}",
                spec.name
            );
        }
    }
}
