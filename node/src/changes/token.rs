//! Resume tokens: `{_data: <hex>}`, as mongod's begin: `82` (the
//! KeyString type of a Timestamp) and the 8-byte big-endian timestamp, so
//! the CDC tools that read the time off a token read it off ebb's; then
//! ebb's own bytes: a version (`01`), the kind (`80` an event, `00` a
//! high-water mark, `81` the invalidate that follows an event) and, for an
//! event, its number within its entry.
//!
//! Every member logs the same changes under the same `(ts, n)`
//! (`ebb_storage::changes`), so a token one member issued resumes on any
//! other.

use bson::{RawBsonRef, RawDocument, RawDocumentBuf, rawdoc};
use ebb_storage::changes;

use crate::error::{CommandError, CommandResult, codes};

const VERSION: u8 = 1;
const EVENT: u8 = 0x80;
const INVALIDATE: u8 = 0x81;
const HIGH_WATER: u8 = 0;

/// A place in the change log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Token {
    /// The change `n` of the entry at `ts`.
    Event { ts: u64, n: u32 },
    /// The invalidate that follows change `n` of the entry at `ts` (a drop
    /// or rename of what the stream watches).
    Invalidate { ts: u64, n: u32 },
    /// Every change of the entries up to `ts`.
    HighWater { ts: u64 },
}

impl Token {
    /// The first row key a stream resuming after this token reads.
    pub fn next_key(self) -> [u8; 14] {
        match self {
            Token::Event { ts, n } | Token::Invalidate { ts, n } => match n.checked_add(1) {
                Some(next) => changes::key(ts, next),
                None => changes::key(ts.saturating_add(1), 0),
            },
            Token::HighWater { ts } => changes::key(ts.saturating_add(1), 0),
        }
    }

    /// The entry time it names.
    pub fn ts(self) -> u64 {
        match self {
            Token::Event { ts, .. } | Token::Invalidate { ts, .. } | Token::HighWater { ts } => ts,
        }
    }

    /// The later of two places.
    pub fn max(self, other: Token) -> Token {
        if other.next_key() > self.next_key() {
            other
        } else {
            self
        }
    }

    /// `{_data}`, as drivers store and send it back.
    pub fn to_document(self) -> RawDocumentBuf {
        let mut bytes = vec![0x82];
        bytes.extend_from_slice(&self.ts().to_be_bytes());
        bytes.push(VERSION);
        match self {
            Token::Event { n, .. } => {
                bytes.push(EVENT);
                bytes.extend_from_slice(&n.to_be_bytes());
            }
            Token::Invalidate { n, .. } => {
                bytes.push(INVALIDATE);
                bytes.extend_from_slice(&n.to_be_bytes());
            }
            Token::HighWater { .. } => bytes.push(HIGH_WATER),
        }
        let data: String = bytes.iter().map(|b| format!("{b:02X}")).collect();
        rawdoc! { "_data": data }
    }

    /// Reads a token a driver sent back (`resumeAfter`, `startAfter`).
    pub fn parse(value: RawBsonRef<'_>) -> CommandResult<Token> {
        let RawBsonRef::Document(doc) = value else {
            return Err(invalid("the resume token must be an object"));
        };
        Self::parse_document(doc)
    }

    fn parse_document(doc: &RawDocument) -> CommandResult<Token> {
        let data = match doc.get("_data") {
            Ok(Some(RawBsonRef::String(s))) => s,
            _ => return Err(invalid("the resume token has no _data string")),
        };
        let bytes = unhex(data).ok_or_else(|| invalid("the resume token is not hex"))?;
        let wrong = || invalid("the resume token was not issued by ebb");
        let (&[0x82], rest) = bytes.split_at_checked(1).ok_or_else(wrong)? else {
            return Err(wrong());
        };
        let (ts, rest) = rest.split_at_checked(8).ok_or_else(wrong)?;
        let ts = u64::from_be_bytes(ts.try_into().map_err(|_| wrong())?);
        match rest {
            [VERSION, HIGH_WATER] => Ok(Token::HighWater { ts }),
            [VERSION, kind @ (EVENT | INVALIDATE), n @ ..] if n.len() == 4 => {
                let n = u32::from_be_bytes(n.try_into().map_err(|_| wrong())?);
                Ok(match *kind {
                    EVENT => Token::Event { ts, n },
                    _ => Token::Invalidate { ts, n },
                })
            }
            _ => Err(wrong()),
        }
    }
}

/// A timestamp as one number: seconds, then the counter.
pub fn ts_of(t: bson::Timestamp) -> u64 {
    (u64::from(t.time) << 32) | u64::from(t.increment)
}

/// The BSON timestamp of `ts`.
pub fn timestamp(ts: u64) -> bson::Timestamp {
    bson::Timestamp {
        time: (ts >> 32) as u32,
        increment: ts as u32,
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn invalid(why: &str) -> CommandError {
    CommandError::new(
        codes::INVALID_RESUME_TOKEN,
        format!("Invalid resume token: {why}"),
    )
}

#[cfg(test)]
mod tests {
    use bson::RawBsonRef;

    use super::Token;

    #[test]
    fn tokens_read_back_and_begin_with_the_timestamp() {
        for t in [
            Token::Event {
                ts: 0x6500_0000_0000_0003,
                n: 7,
            },
            Token::HighWater { ts: 42 },
            Token::Invalidate { ts: 42, n: 0 },
        ] {
            let doc = t.to_document();
            assert!(doc.get_str("_data").unwrap().starts_with("82"));
            assert_eq!(Token::parse(RawBsonRef::Document(&doc)).unwrap(), t);
        }
        let data = Token::HighWater {
            ts: 0x6500_0001_0000_0002,
        }
        .to_document();
        assert!(
            data.get_str("_data")
                .unwrap()
                .starts_with("826500000100000002")
        );
    }

    #[test]
    fn an_event_comes_before_the_high_water_mark_of_its_entry() {
        let event = Token::Event { ts: 9, n: 3 };
        let mark = Token::HighWater { ts: 9 };
        assert!(event.next_key() < mark.next_key());
        assert_eq!(event.max(mark), mark);
        assert_eq!(mark.max(event), mark);
    }

    #[test]
    fn foreign_tokens_are_refused() {
        let bad = bson::rawdoc! { "_data": "8200" };
        let e = Token::parse(RawBsonRef::Document(&bad)).unwrap_err();
        assert_eq!(e.code, 260);
    }
}
