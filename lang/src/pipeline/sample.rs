//! `$sample: {size}`: parsing, and the random numbers the runner's
//! reservoir sampling draws. The randomness need not be cryptographic, only
//! different from run to run: a splitmix64 sequence seeded from the
//! standard library's per-process random hasher keys.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

use bson::RawBsonRef;

use super::kind::Stage;
use crate::error::{Error, ErrorKind, Result, StageError};
use crate::query::value::number_as_f64;

fn fail(kind: StageError, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Stage(kind), message)
}

/// `$sample: {size: <positive number>}`.
pub(super) fn parse(spec: RawBsonRef<'_>) -> Result<Stage> {
    let RawBsonRef::Document(d) = spec else {
        return Err(fail(
            StageError::SampleNotObject,
            "the $sample stage specification must be an object",
        ));
    };
    let mut size = None;
    for el in d.iter() {
        let (k, v) = el?;
        if k.as_str() != "size" {
            return Err(fail(
                StageError::SampleUnknownOption,
                format!("unrecognized option to $sample: {}", k.as_str()),
            ));
        }
        let Some(n) = number_as_f64(v) else {
            return Err(fail(
                StageError::SampleSizeType,
                "size argument to $sample must be a number",
            ));
        };
        size = Some(n.trunc());
    }
    match size {
        None => Err(fail(
            StageError::SampleWithoutSize,
            "$sample stage must specify a size",
        )),
        // NaN is not > 0 either.
        Some(n) if n >= 1.0 => Ok(Stage::Sample(n.min(u64::MAX as f64) as u64)),
        Some(_) => Err(fail(
            StageError::SampleSizeNotPositive,
            "size argument to $sample must be a positive integer",
        )),
    }
}

/// A small random number generator (splitmix64).
#[derive(Debug, Clone)]
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new() -> Rng {
        Rng(RandomState::new().build_hasher().finish())
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`); the modulo bias is below 2^-32 for
    /// any `n` a collection can reach.
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    fn kind(spec: bson::RawDocumentBuf) -> ErrorKind {
        parse(RawBsonRef::Document(&spec)).unwrap_err().kind
    }

    #[test]
    fn sample_size_is_parsed_and_checked() {
        let spec = rawdoc! { "size": 3 };
        assert!(matches!(
            parse(RawBsonRef::Document(&spec)),
            Ok(Stage::Sample(3))
        ));
        assert_eq!(
            kind(rawdoc! {}),
            ErrorKind::Stage(StageError::SampleWithoutSize)
        );
        assert_eq!(
            kind(rawdoc! { "size": "3" }),
            ErrorKind::Stage(StageError::SampleSizeType)
        );
        assert_eq!(
            kind(rawdoc! { "size": 0 }),
            ErrorKind::Stage(StageError::SampleSizeNotPositive)
        );
        assert_eq!(
            kind(rawdoc! { "size": 1, "other": 1 }),
            ErrorKind::Stage(StageError::SampleUnknownOption)
        );
        assert_eq!(
            parse(RawBsonRef::Int32(1)).unwrap_err().kind,
            ErrorKind::Stage(StageError::SampleNotObject)
        );
    }

    #[test]
    fn rng_stays_below_its_bound() {
        let mut rng = Rng::new();
        assert!((0..1000).all(|_| rng.below(7) < 7));
    }
}
