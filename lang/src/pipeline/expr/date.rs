//! Date operators: the parts (`$year` … `$millisecond`, `$dayOfWeek`,
//! `$dayOfYear`, `$week`, `$isoWeek`, `$isoWeekYear`, `$isoDayOfWeek`),
//! `$dateToString`, `$dateFromString`, `$dateToParts`, `$dateFromParts`,
//! `$dateAdd`/`$dateSubtract`, `$dateDiff` and `$dateTrunc`.
//!
//! Time zones are UTC, fixed offsets (`+05:30`, `-0800`, `+03`) or IANA
//! names from the `chrono-tz` database; calendar arithmetic is `chrono`'s
//! proleptic Gregorian calendar, as MongoDB's.

use bson::{RawBson, RawBsonRef};
use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, Offset, TimeZone, Timelike};

use super::tree::{Arity, Node, OpDef, op};
use super::value::{Cx, Val, document, fail, integral, shown};
use crate::error::{Error, ErrorKind, ExprError, Result};

/// A time zone.
#[derive(Debug, Clone, Copy)]
pub(super) enum Zone {
    /// A fixed offset east of UTC, in seconds.
    Fixed(i32),
    Named(chrono_tz::Tz),
}

impl Zone {
    fn parse(name: &str) -> Result<Zone> {
        if let Some(offset) = fixed_offset(name) {
            return Ok(Zone::Fixed(offset));
        }
        name.parse::<chrono_tz::Tz>().map(Zone::Named).map_err(|_| {
            fail(
                ExprError::UnknownTimeZone,
                format!("unrecognized time zone identifier: \"{name}\""),
            )
        })
    }

    /// The offset east of UTC in force at an instant.
    fn offset_at(self, utc_millis: i64) -> i32 {
        match self {
            Zone::Fixed(s) => s,
            Zone::Named(tz) => match tz.timestamp_millis_opt(utc_millis) {
                chrono::LocalResult::Single(t) => t.offset().fix().local_minus_utc(),
                _ => 0,
            },
        }
    }

    /// The instant a local wall-clock time names (the earlier one when it
    /// is ambiguous, the offset before a gap when it does not exist).
    fn to_utc(self, local_millis: i64) -> i64 {
        let guess = local_millis - i64::from(self.offset_at(local_millis)) * 1000;
        local_millis - i64::from(self.offset_at(guess)) * 1000
    }
}

/// `Z`, `UTC`, `GMT`, `+hh`, `+hhmm` or `+hh:mm` as seconds east of UTC.
fn fixed_offset(name: &str) -> Option<i32> {
    if matches!(name, "UTC" | "GMT" | "Z" | "utc") {
        return Some(0);
    }
    let (sign, rest) = match name.as_bytes().first()? {
        b'+' => (1, &name[1..]),
        b'-' => (-1, &name[1..]),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if !digits.chars().all(|c| c.is_ascii_digit()) || rest.matches(':').count() > 1 {
        return None;
    }
    let (h, m) = match digits.len() {
        2 => (&digits[..2], "0"),
        4 => (&digits[..2], &digits[2..]),
        _ => return None,
    };
    let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
    (h <= 99 && m < 60).then_some(sign * (h * 3600 + m * 60))
}

/// A `timezone` argument: `None` when nullish (the result is then null).
fn zone_arg(v: &Val<'_>) -> Result<Option<Zone>> {
    if v.nullish() {
        return Ok(None);
    }
    match v.as_str() {
        Some(s) => Zone::parse(s).map(Some),
        None => Err(fail(
            ExprError::TimeZoneType,
            format!(
                "timezone must evaluate to a string, found {}",
                v.type_name()
            ),
        )),
    }
}

/// A value as a date, in milliseconds since the epoch: dates, timestamps
/// and ObjectIds convert; `None` when nullish.
fn date_arg(v: &Val<'_>) -> Result<Option<i64>> {
    if v.nullish() {
        return Ok(None);
    }
    match v.get() {
        Some(RawBsonRef::DateTime(d)) => Ok(Some(d.timestamp_millis())),
        Some(RawBsonRef::Timestamp(t)) => Ok(Some(i64::from(t.time) * 1000)),
        Some(RawBsonRef::ObjectId(o)) => Ok(Some(o.timestamp().timestamp_millis())),
        _ => Err(fail(
            ExprError::DateConversion,
            format!("can't convert from BSON type {} to Date", v.type_name()),
        )),
    }
}

/// A moment as a wall clock in some zone shows it.
struct Local {
    dt: NaiveDateTime,
    offset: i32,
}

fn out_of_range() -> Error {
    fail(
        ExprError::DateOutOfRange,
        "date is outside the range this server can represent",
    )
}

fn local(utc_millis: i64, zone: Zone) -> Result<Local> {
    let offset = zone.offset_at(utc_millis);
    let dt = chrono::DateTime::from_timestamp_millis(utc_millis + i64::from(offset) * 1000)
        .ok_or_else(out_of_range)?
        .naive_utc();
    Ok(Local { dt, offset })
}

fn millis_of(dt: NaiveDateTime) -> i64 {
    dt.and_utc().timestamp_millis()
}

impl Local {
    fn year(&self) -> i32 {
        self.dt.year()
    }
    fn millisecond(&self) -> u32 {
        self.dt.and_utc().timestamp_subsec_millis()
    }
    /// 1 (Sunday) to 7 (Saturday).
    fn day_of_week(&self) -> u32 {
        self.dt.weekday().num_days_from_sunday() + 1
    }
    /// 0 to 53: weeks starting on Sunday, days before the first Sunday in
    /// week 0.
    fn week(&self) -> u32 {
        (self.dt.ordinal0() + 7 - self.dt.weekday().num_days_from_sunday()) / 7
    }
    fn iso_week(&self) -> u32 {
        self.dt.iso_week().week()
    }
    fn iso_year(&self) -> i32 {
        self.dt.iso_week().year()
    }
    fn iso_day_of_week(&self) -> u32 {
        self.dt.weekday().number_from_monday()
    }
}

/// The part of a date a part operator returns.
#[derive(Debug, Clone, Copy)]
enum Part {
    Year,
    Month,
    DayOfMonth,
    Hour,
    Minute,
    Second,
    Millisecond,
    DayOfWeek,
    DayOfYear,
    Week,
    IsoWeek,
    IsoWeekYear,
    IsoDayOfWeek,
}

op!(YEAR, "$year", Arity::Exactly(2), year);
op!(MONTH, "$month", Arity::Exactly(2), month);
op!(DAY_OF_MONTH, "$dayOfMonth", Arity::Exactly(2), day_of_month);
op!(HOUR, "$hour", Arity::Exactly(2), hour);
op!(MINUTE, "$minute", Arity::Exactly(2), minute);
op!(SECOND, "$second", Arity::Exactly(2), second);
op!(MILLISECOND, "$millisecond", Arity::Exactly(2), millisecond);
op!(DAY_OF_WEEK, "$dayOfWeek", Arity::Exactly(2), day_of_week);
op!(DAY_OF_YEAR, "$dayOfYear", Arity::Exactly(2), day_of_year);
op!(WEEK, "$week", Arity::Exactly(2), week);
op!(ISO_WEEK, "$isoWeek", Arity::Exactly(2), iso_week);
op!(
    ISO_WEEK_YEAR,
    "$isoWeekYear",
    Arity::Exactly(2),
    iso_week_year
);
op!(
    ISO_DAY_OF_WEEK,
    "$isoDayOfWeek",
    Arity::Exactly(2),
    iso_day_of_week
);

static PART_OPS: &[&OpDef] = &[
    &YEAR,
    &MONTH,
    &DAY_OF_MONTH,
    &HOUR,
    &MINUTE,
    &SECOND,
    &MILLISECOND,
    &DAY_OF_WEEK,
    &DAY_OF_YEAR,
    &WEEK,
    &ISO_WEEK,
    &ISO_WEEK_YEAR,
    &ISO_DAY_OF_WEEK,
];

/// The date-part operator called `name`.
pub(super) fn part_op(name: &str) -> Option<&'static OpDef> {
    PART_OPS.iter().copied().find(|d| d.name == name)
}

fn part<'a>(args: Vec<Val<'a>>, part: Part) -> Result<Val<'a>> {
    let Some(millis) = date_arg(&args[0])? else {
        return Ok(Val::null());
    };
    let Some(zone) = zone_arg(&args[1])? else {
        return Ok(Val::null());
    };
    let l = local(millis, zone)?;
    let n = match part {
        Part::Year => l.year(),
        Part::Month => l.dt.month() as i32,
        Part::DayOfMonth => l.dt.day() as i32,
        Part::Hour => l.dt.hour() as i32,
        Part::Minute => l.dt.minute() as i32,
        Part::Second => l.dt.second() as i32,
        Part::Millisecond => l.millisecond() as i32,
        Part::DayOfWeek => l.day_of_week() as i32,
        Part::DayOfYear => l.dt.ordinal() as i32,
        Part::Week => l.week() as i32,
        Part::IsoWeek => l.iso_week() as i32,
        Part::IsoWeekYear => return Ok(Val::long(l.iso_year().into())),
        Part::IsoDayOfWeek => l.iso_day_of_week() as i32,
    };
    Ok(Val::int(n))
}

macro_rules! part_fn {
    ($f:ident, $p:ident) => {
        fn $f<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
            part(args, Part::$p)
        }
    };
}

part_fn!(year, Year);
part_fn!(month, Month);
part_fn!(day_of_month, DayOfMonth);
part_fn!(hour, Hour);
part_fn!(minute, Minute);
part_fn!(second, Second);
part_fn!(millisecond, Millisecond);
part_fn!(day_of_week, DayOfWeek);
part_fn!(day_of_year, DayOfYear);
part_fn!(week, Week);
part_fn!(iso_week, IsoWeek);
part_fn!(iso_week_year, IsoWeekYear);
part_fn!(iso_day_of_week, IsoDayOfWeek);

// ---- $dateToString ----

op!(
    DATE_TO_STRING,
    "$dateToString",
    Arity::Between(2, 3),
    date_to_string
);

const DEFAULT_FORMAT: &str = "%Y-%m-%dT%H:%M:%S.%LZ";
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// The specifiers `$dateToString` writes.
const TO_STRING_SPECIFIERS: &str = "dGHjLmMSuUVwYzZ%bB";
/// The specifiers `$dateFromString` reads.
const FROM_STRING_SPECIFIERS: &str = "dHLmMSYzZ%j";

/// Checks a date format: every `%` starts one of `specifiers`.
fn check_format(format: &str, specifiers: &str) -> Result<()> {
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        match chars.next() {
            None => {
                return Err(fail(
                    ExprError::FormatUnmatchedPercent,
                    "Unmatched '%' at end of format string",
                ));
            }
            Some(known) if specifiers.contains(known) => {}
            Some(other) => {
                return Err(fail(
                    ExprError::FormatInvalidSpecifier,
                    format!("Invalid format character '%{other}' in format string"),
                ));
            }
        }
    }
    Ok(())
}

/// A year for `%Y`/`%G`: four digits, 0 to 9999.
fn four_digit_year(y: i32) -> Result<String> {
    if !(0..=9999).contains(&y) {
        return Err(fail(
            ExprError::FormatYearRange,
            format!(
                "Could not convert date to string: date component was outside the supported range of 0-9999: {y}"
            ),
        ));
    }
    Ok(format!("{y:04}"))
}

/// Formats an instant with a checked format string in a zone.
fn format_in(millis: i64, format: &str, zone: Zone) -> Result<String> {
    let l = local(millis, zone)?;
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(spec) = chars.next() else { break };
        let piece = match spec {
            'd' => format!("{:02}", l.dt.day()),
            'G' => four_digit_year(l.iso_year())?,
            'H' => format!("{:02}", l.dt.hour()),
            'j' => format!("{:03}", l.dt.ordinal()),
            'L' => format!("{:03}", l.millisecond()),
            'm' => format!("{:02}", l.dt.month()),
            'M' => format!("{:02}", l.dt.minute()),
            'S' => format!("{:02}", l.dt.second()),
            'u' => l.iso_day_of_week().to_string(),
            'U' => format!("{:02}", l.week()),
            'V' => format!("{:02}", l.iso_week()),
            'w' => l.day_of_week().to_string(),
            'Y' => four_digit_year(l.year())?,
            'z' => {
                let sign = if l.offset < 0 { '-' } else { '+' };
                let a = l.offset.abs();
                format!("{sign}{:02}{:02}", a / 3600, a % 3600 / 60)
            }
            'Z' => (l.offset / 60).to_string(),
            'b' => MONTHS[l.dt.month0() as usize][..3].to_owned(),
            'B' => MONTHS[l.dt.month0() as usize].to_owned(),
            other => other.to_string(),
        };
        out.push_str(&piece);
    }
    Ok(out)
}

/// An instant formatted in UTC (what `$toString` of a date gives).
pub(super) fn format_date(millis: i64, format: &str, _utc: i32) -> Result<String> {
    format_in(millis, format, Zone::Fixed(0))
}

/// `[date, timezone, format?]`; a nullish date is the evaluator's `onNull`.
fn date_to_string<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let format = match args.get(2) {
        None => Some(DEFAULT_FORMAT),
        Some(f) if f.nullish() => None,
        Some(f) => match f.as_str() {
            Some(s) => {
                check_format(s, TO_STRING_SPECIFIERS)?;
                Some(s)
            }
            None => {
                return Err(fail(
                    ExprError::DateToStringFormatType,
                    format!(
                        "$dateToString requires that 'format' be a string, found: {} with value {}",
                        f.type_name(),
                        shown(f)
                    ),
                ));
            }
        },
    };
    let zone = zone_arg(&args[1])?;
    if args[0].nullish() {
        return Ok(Val::null());
    }
    let (Some(zone), Some(format)) = (zone, format) else {
        return Ok(Val::null());
    };
    let Some(millis) = date_arg(&args[0])? else {
        return Ok(Val::null());
    };
    Ok(Val::string(format_in(millis, format, zone)?))
}

// ---- $dateFromString ----

op!(
    DATE_FROM_STRING,
    "$dateFromString",
    Arity::Between(2, 3),
    date_from_string
);

fn conversion_failure(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::ConversionFailure, message)
}

/// `[dateString, timezone, format?]`.
fn date_from_string<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let format = match args.get(2) {
        None => Some(None),
        Some(f) if f.nullish() => None,
        Some(f) => match f.as_str() {
            Some(s) => {
                check_format(s, FROM_STRING_SPECIFIERS)?;
                Some(Some(s))
            }
            None => {
                return Err(fail(
                    ExprError::DateFromStringFormatType,
                    format!(
                        "$dateFromString requires that 'format' be a string, found: {} with value {}",
                        f.type_name(),
                        shown(f)
                    ),
                ));
            }
        },
    };
    let zone = zone_arg(&args[1])?;
    let input = &args[0];
    if input.nullish() {
        return Ok(Val::null());
    }
    let Some(s) = input.as_str() else {
        return Err(conversion_failure(format!(
            "$dateFromString requires that 'dateString' be a string, found: {} with value {}",
            input.type_name(),
            shown(input)
        )));
    };
    let (Some(zone), Some(format)) = (zone, format) else {
        return Ok(Val::null());
    };
    Ok(Val::date(parse_in(s, format, zone)?))
}

/// Parses a date string in UTC (`$toDate`, `$convert`).
pub(super) fn parse_date_string(s: &str, format: Option<&str>, _utc: i32) -> Result<i64> {
    parse_in(s, format, Zone::Fixed(0))
}

/// Reads `n` digits (at most) from `s` at `*i`.
fn digits(s: &[u8], i: &mut usize, min: usize, max: usize) -> Option<i64> {
    let start = *i;
    while *i < s.len() && *i - start < max && s[*i].is_ascii_digit() {
        *i += 1;
    }
    if *i - start < min {
        return None;
    }
    std::str::from_utf8(&s[start..*i]).ok()?.parse().ok()
}

/// A `Z`, `±hh`, `±hhmm` or `±hh:mm` offset at `*i`, in seconds.
fn offset_at(s: &[u8], i: &mut usize) -> Option<i32> {
    match s.get(*i)? {
        b'Z' => {
            *i += 1;
            Some(0)
        }
        b'+' | b'-' => {
            let sign = if s[*i] == b'-' { -1 } else { 1 };
            *i += 1;
            let h = digits(s, i, 2, 2)?;
            if s.get(*i) == Some(&b':') {
                *i += 1;
            }
            let m = digits(s, i, 0, 2).unwrap_or(0);
            Some(sign * (h as i32 * 3600 + m as i32 * 60))
        }
        _ => None,
    }
}

fn parse_in(s: &str, format: Option<&str>, zone: Zone) -> Result<i64> {
    let bad = || conversion_failure(format!("Error parsing date string '{s}'"));
    let fields = match format {
        Some(f) => parse_with_format(s, f).ok_or_else(bad)?,
        None => parse_iso(s).ok_or_else(bad)?,
    };
    let date = NaiveDate::from_ymd_opt(fields.year as i32, fields.month as u32, fields.day as u32)
        .ok_or_else(bad)?;
    let time = date
        .and_hms_milli_opt(
            fields.hour as u32,
            fields.minute as u32,
            fields.second as u32,
            fields.millis as u32,
        )
        .ok_or_else(bad)?;
    let local = millis_of(time);
    Ok(match fields.offset {
        Some(off) => local - i64::from(off) * 1000,
        None => zone.to_utc(local),
    })
}

#[derive(Default)]
struct Fields {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    millis: i64,
    offset: Option<i32>,
}

/// `YYYY-MM-DD[(T| )hh:mm[:ss[.fff]]][Z|±hh[:mm]]`.
fn parse_iso(s: &str) -> Option<Fields> {
    let b = s.trim().as_bytes();
    let mut i = 0;
    let mut f = Fields {
        year: digits(b, &mut i, 4, 4)?,
        ..Fields::default()
    };
    let sep = |i: &mut usize, c: u8| -> Option<()> { (b.get(*i) == Some(&c)).then(|| *i += 1) };
    sep(&mut i, b'-')?;
    f.month = digits(b, &mut i, 1, 2)?;
    sep(&mut i, b'-')?;
    f.day = digits(b, &mut i, 1, 2)?;
    if i < b.len() && (b[i] == b'T' || b[i] == b' ') {
        i += 1;
        f.hour = digits(b, &mut i, 1, 2)?;
        sep(&mut i, b':')?;
        f.minute = digits(b, &mut i, 2, 2)?;
        if sep(&mut i, b':').is_some() {
            f.second = digits(b, &mut i, 2, 2)?;
            if sep(&mut i, b'.').is_some() {
                let start = i;
                let frac = digits(b, &mut i, 1, 9)?;
                let n = i - start;
                f.millis = if n >= 3 {
                    frac / 10i64.pow((n - 3) as u32)
                } else {
                    frac * 10i64.pow((3 - n) as u32)
                };
            }
        }
        if i < b.len() {
            f.offset = Some(offset_at(b, &mut i)?);
        }
    }
    (i == b.len()).then_some(f)
}

/// A string read with a `$dateFromString` format.
fn parse_with_format(s: &str, format: &str) -> Option<Fields> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut f = Fields {
        year: 1970,
        month: 1,
        day: 1,
        ..Fields::default()
    };
    let mut day_of_year = None;
    let mut spec = format.chars();
    while let Some(c) = spec.next() {
        if c != '%' {
            let mut buf = [0u8; 4];
            let lit = c.encode_utf8(&mut buf).as_bytes();
            if !b[i..].starts_with(lit) {
                return None;
            }
            i += lit.len();
            continue;
        }
        match spec.next()? {
            'Y' => f.year = digits(b, &mut i, 4, 4)?,
            'm' => f.month = digits(b, &mut i, 1, 2)?,
            'd' => f.day = digits(b, &mut i, 1, 2)?,
            'H' => f.hour = digits(b, &mut i, 1, 2)?,
            'M' => f.minute = digits(b, &mut i, 1, 2)?,
            'S' => f.second = digits(b, &mut i, 1, 2)?,
            'L' => f.millis = digits(b, &mut i, 1, 3)?,
            'j' => day_of_year = Some(digits(b, &mut i, 1, 3)?),
            'z' => f.offset = Some(offset_at(b, &mut i)?),
            'Z' => {
                let sign = match b.get(i) {
                    Some(b'-') => {
                        i += 1;
                        -1
                    }
                    Some(b'+') => {
                        i += 1;
                        1
                    }
                    _ => 1,
                };
                f.offset = Some(sign * digits(b, &mut i, 1, 4)? as i32 * 60);
            }
            '%' => {
                if b.get(i) != Some(&b'%') {
                    return None;
                }
                i += 1;
            }
            _ => return None,
        }
    }
    if let Some(n) = day_of_year {
        let d = NaiveDate::from_yo_opt(f.year as i32, n as u32)?;
        f.month = d.month().into();
        f.day = d.day().into();
    }
    (i == b.len()).then_some(f)
}

// ---- $dateToParts / $dateFromParts ----

op!(
    DATE_TO_PARTS,
    "$dateToParts",
    Arity::Exactly(3),
    date_to_parts
);
op!(
    DATE_FROM_PARTS,
    "$dateFromParts",
    Arity::Exactly(12),
    date_from_parts
);

/// `[date, timezone, iso8601]`.
fn date_to_parts<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let Some(zone) = zone_arg(&args[1])? else {
        return Ok(Val::null());
    };
    let iso = &args[2];
    if iso.nullish() {
        return Ok(Val::null());
    }
    let Some(RawBsonRef::Boolean(iso)) = iso.get() else {
        return Err(fail(
            ExprError::DateToPartsIsoType,
            format!("iso8601 must evaluate to a bool, found {}", iso.type_name()),
        ));
    };
    let Some(millis) = date_arg(&args[0])? else {
        return Ok(Val::null());
    };
    let l = local(millis, zone)?;
    let int = |n: u32| Val::int(n as i32);
    let mut fields = if iso {
        vec![
            ("isoWeekYear".to_owned(), Val::int(l.iso_year())),
            ("isoWeek".to_owned(), int(l.iso_week())),
            ("isoDayOfWeek".to_owned(), int(l.iso_day_of_week())),
        ]
    } else {
        vec![
            ("year".to_owned(), Val::int(l.year())),
            ("month".to_owned(), int(l.dt.month())),
            ("day".to_owned(), int(l.dt.day())),
        ]
    };
    fields.push(("hour".to_owned(), int(l.dt.hour())));
    fields.push(("minute".to_owned(), int(l.dt.minute())));
    fields.push(("second".to_owned(), int(l.dt.second())));
    fields.push(("millisecond".to_owned(), int(l.millisecond())));
    document(fields)
}

/// The named arguments of `$dateFromParts`, in the order its call lays
/// them out after the calendar flag.
pub(super) const FROM_PARTS_FIELDS: &[&str] = &[
    "year",
    "month",
    "day",
    "hour",
    "minute",
    "second",
    "millisecond",
    "isoWeekYear",
    "isoWeek",
    "isoDayOfWeek",
    "timezone",
];

/// What an absent `$dateFromParts` argument means.
pub(super) fn from_parts_default(name: &str) -> Node {
    Node::Const(match name {
        "year" | "isoWeekYear" => RawBson::Int32(1970),
        "month" | "day" | "isoWeek" | "isoDayOfWeek" => RawBson::Int32(1),
        "timezone" => RawBson::String("UTC".into()),
        _ => RawBson::Int32(0),
    })
}

/// `[iso?, year, month, day, hour, minute, second, millisecond,
/// isoWeekYear, isoWeek, isoDayOfWeek, timezone]`.
fn date_from_parts<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    let iso = args[0].truthy();
    let mut n = [0i64; 10];
    for (i, name) in FROM_PARTS_FIELDS[..10].iter().enumerate() {
        let v = &args[i + 1];
        if v.nullish() {
            return Ok(Val::null());
        }
        let Some(x) = integral(v).filter(|_| v.is_number()) else {
            return Err(fail(
                ExprError::DatePartNotInteger,
                format!(
                    "'{name}' must evaluate to an integer, found {} with value {}",
                    v.type_name(),
                    shown(v)
                ),
            ));
        };
        let bounded = matches!(
            *name,
            "month" | "day" | "hour" | "minute" | "isoWeek" | "isoDayOfWeek"
        );
        if bounded && !(-32768..=32767).contains(&x) {
            return Err(fail(
                ExprError::DatePartRange,
                format!(
                    "'{name}' must evaluate to a value in the range [-32768, 32767]; value {x} is not in range"
                ),
            ));
        }
        n[i] = x;
    }
    let Some(zone) = zone_arg(&args[11])? else {
        return Ok(Val::null());
    };
    let [
        year,
        month,
        day,
        hour,
        minute,
        second,
        millis,
        iso_year,
        iso_week,
        iso_dow,
    ] = n;
    let (y, what) = if iso {
        (iso_year, "isoWeekYear")
    } else {
        (year, "year")
    };
    if !(1..=9999).contains(&y) {
        return Err(fail(
            if iso {
                ExprError::DateFromPartsIsoYearRange
            } else {
                ExprError::DateFromPartsYearRange
            },
            format!("'{what}' must evaluate to an integer in the range 1 to 9999, found {y}"),
        ));
    }
    let start = if iso {
        // Monday of ISO week 1, then whole weeks and days from there.
        let jan4 = NaiveDate::from_ymd_opt(y as i32, 1, 4).ok_or_else(out_of_range)?;
        let monday = jan4 - Duration::days(i64::from(jan4.weekday().num_days_from_monday()));
        monday + Duration::days((iso_week - 1) * 7 + (iso_dow - 1))
    } else {
        let months = y * 12 + (month - 1);
        let first = NaiveDate::from_ymd_opt(
            months.div_euclid(12) as i32,
            months.rem_euclid(12) as u32 + 1,
            1,
        )
        .ok_or_else(out_of_range)?;
        first + Duration::days(day - 1)
    };
    let local = millis_of(start.and_hms_opt(0, 0, 0).ok_or_else(out_of_range)?)
        .checked_add(hour * 3_600_000 + minute * 60_000)
        .and_then(|m| m.checked_add(second.checked_mul(1000)?))
        .and_then(|m| m.checked_add(millis))
        .ok_or_else(out_of_range)?;
    Ok(Val::date(zone.to_utc(local)))
}

// ---- $dateAdd / $dateSubtract / $dateDiff / $dateTrunc ----

op!(DATE_ADD, "$dateAdd", Arity::Exactly(4), date_add);
op!(
    DATE_SUBTRACT,
    "$dateSubtract",
    Arity::Exactly(4),
    date_subtract
);
op!(DATE_DIFF, "$dateDiff", Arity::Exactly(5), date_diff);
op!(DATE_TRUNC, "$dateTrunc", Arity::Exactly(5), date_trunc);

/// A unit of time: `$dateAdd`'s, and the `unit` of window ranges,
/// `$derivative`, `$integral` and `$densify` steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Year,
    Quarter,
    Month,
    Week,
    Day,
    Hour,
    Minute,
    Second,
    Millisecond,
}

impl Unit {
    pub fn parse(s: &str) -> Option<Unit> {
        Some(match s {
            "year" => Unit::Year,
            "quarter" => Unit::Quarter,
            "month" => Unit::Month,
            "week" => Unit::Week,
            "day" => Unit::Day,
            "hour" => Unit::Hour,
            "minute" => Unit::Minute,
            "second" => Unit::Second,
            "millisecond" => Unit::Millisecond,
            _ => return None,
        })
    }

    /// The length of a fixed-length unit (a week or less) in milliseconds.
    pub fn fixed_millis(self) -> Option<i64> {
        match self {
            Unit::Week => Some(7 * 86_400_000),
            Unit::Day => Some(86_400_000),
            Unit::Hour => Some(3_600_000),
            Unit::Minute => Some(60_000),
            Unit::Second => Some(1000),
            Unit::Millisecond => Some(1),
            _ => None,
        }
    }

    fn months(self) -> Option<i64> {
        match self {
            Unit::Year => Some(12),
            Unit::Quarter => Some(3),
            Unit::Month => Some(1),
            _ => None,
        }
    }

    /// `utc_millis` moved by `amount` of this unit in UTC: fixed units by
    /// their length, months, quarters and years on the calendar (the day
    /// clamped to the end of the month, as `$dateAdd` does). None past the
    /// dates BSON can hold.
    pub fn add_utc(self, utc_millis: i64, amount: i64) -> Option<i64> {
        match (self.months(), self.fixed_millis()) {
            (_, Some(ms)) => amount.checked_mul(ms)?.checked_add(utc_millis),
            (Some(m), None) => {
                let dt = chrono::DateTime::from_timestamp_millis(utc_millis)?.naive_utc();
                Some(millis_of(add_months(dt, amount.checked_mul(m)?)?))
            }
            (None, None) => None,
        }
    }
}

fn unit_arg(op: &str, v: &Val<'_>) -> Result<Unit> {
    let Some(s) = v.as_str() else {
        return Err(fail(
            ExprError::DateUnitType,
            format!(
                "{op} requires 'unit' to be a string, but got {}",
                v.type_name()
            ),
        ));
    };
    Unit::parse(s).ok_or_else(|| {
        fail(
            ExprError::DateUnitUnknown,
            format!("{op} parameter 'unit' value cannot be recognized as a time unit: {s}"),
        )
    })
}

fn start_of_week(op: &str, v: &Val<'_>) -> Result<chrono::Weekday> {
    let Some(s) = v.as_str() else {
        return Err(fail(
            ExprError::StartOfWeekType,
            format!(
                "{op} requires 'startOfWeek' to be a string, but got {}",
                v.type_name()
            ),
        ));
    };
    use chrono::Weekday::*;
    Ok(match s.to_ascii_lowercase().as_str() {
        "monday" | "mon" => Mon,
        "tuesday" | "tue" => Tue,
        "wednesday" | "wed" => Wed,
        "thursday" | "thu" => Thu,
        "friday" | "fri" => Fri,
        "saturday" | "sat" => Sat,
        "sunday" | "sun" => Sun,
        _ => {
            return Err(fail(
                ExprError::StartOfWeekUnknown,
                format!(
                    "{op} parameter 'startOfWeek' value cannot be recognized as a day of a week: {s}"
                ),
            ));
        }
    })
}

/// A local date-time moved by whole months, the day clamped to the end of
/// the month (January 31 plus a month is the last day of February).
fn add_months(dt: NaiveDateTime, months: i64) -> Option<NaiveDateTime> {
    let total = i64::from(dt.year()) * 12 + i64::from(dt.month0()) + months;
    let (y, m) = (
        i32::try_from(total.div_euclid(12)).ok()?,
        total.rem_euclid(12) as u32 + 1,
    );
    let mut day = dt.day();
    loop {
        if let Some(d) = NaiveDate::from_ymd_opt(y, m, day) {
            return Some(d.and_time(dt.time()));
        }
        day = day.checked_sub(1)?;
    }
}

fn date_add<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    shift_date("$dateAdd", args, 1)
}

fn date_subtract<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    shift_date("$dateSubtract", args, -1)
}

/// `[startDate, unit, amount, timezone]`.
fn shift_date<'a>(op: &str, args: Vec<Val<'a>>, sign: i64) -> Result<Val<'a>> {
    if args.iter().any(Val::nullish) {
        return Ok(Val::null());
    }
    let start = date_arg(&args[0]).map_err(|_| {
        fail(
            ExprError::DateArithStartType,
            format!("{op} requires startDate to be convertible to a date"),
        )
    })?;
    let Some(start) = start else {
        return Ok(Val::null());
    };
    let unit = unit_arg(op, &args[1])?;
    let Some(amount) = integral(&args[2]).filter(|_| args[2].is_number()) else {
        return Err(fail(
            ExprError::DateArithAmountType,
            format!("{op} expects integer amount of time units"),
        ));
    };
    let Some(zone) = zone_arg(&args[3])? else {
        return Ok(Val::null());
    };
    let overflow = || fail(ExprError::DateArithOverflow, format!("{op} overflowed"));
    let amount = amount.checked_mul(sign).ok_or_else(overflow)?;
    let out = match unit {
        Unit::Hour | Unit::Minute | Unit::Second | Unit::Millisecond => unit
            .fixed_millis()
            .and_then(|m| amount.checked_mul(m))
            .and_then(|d| start.checked_add(d))
            .ok_or_else(overflow)?,
        _ => {
            let l = local(start, zone)?;
            let moved = match (unit.months(), unit.fixed_millis()) {
                (Some(m), _) => amount.checked_mul(m).and_then(|n| add_months(l.dt, n)),
                (None, Some(ms)) => amount
                    .checked_mul(ms / 86_400_000)
                    .and_then(|days| l.dt.checked_add_signed(Duration::try_days(days)?)),
                _ => None,
            }
            .ok_or_else(overflow)?;
            zone.to_utc(millis_of(moved))
        }
    };
    Ok(Val::date(out))
}

/// `[startDate, endDate, unit, timezone, startOfWeek]`.
fn date_diff<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    if args[..4].iter().any(Val::nullish) {
        return Ok(Val::null());
    }
    let date = |v: &Val<'_>, what: &str| -> Result<i64> {
        date_arg(v).ok().flatten().ok_or_else(|| {
            fail(
                ExprError::DateDiffDateType,
                format!(
                    "$dateDiff requires '{what}' to be a date, but got {}",
                    v.type_name()
                ),
            )
        })
    };
    let start = date(&args[0], "startDate")?;
    let end = date(&args[1], "endDate")?;
    let unit = unit_arg("$dateDiff", &args[2])?;
    let Some(zone) = zone_arg(&args[3])? else {
        return Ok(Val::null());
    };
    let week_start = if unit == Unit::Week && !args[4].nullish() {
        start_of_week("$dateDiff", &args[4])?
    } else {
        chrono::Weekday::Sun
    };
    let (a, b) = (local(start, zone)?, local(end, zone)?);
    let n = match unit {
        Unit::Year => i64::from(b.year() - a.year()),
        Unit::Quarter => {
            let q = |l: &Local| i64::from(l.year()) * 4 + i64::from(l.dt.month0() / 3);
            q(&b) - q(&a)
        }
        Unit::Month => {
            let m = |l: &Local| i64::from(l.year()) * 12 + i64::from(l.dt.month0());
            m(&b) - m(&a)
        }
        Unit::Week => {
            let w = |l: &Local| {
                let days = l.dt.date().num_days_from_ce() as i64;
                let shift = i64::from(
                    (l.dt.weekday().num_days_from_monday() + 7 - week_start.num_days_from_monday())
                        % 7,
                );
                (days - shift).div_euclid(7)
            };
            w(&b) - w(&a)
        }
        Unit::Day => {
            i64::from(b.dt.date().num_days_from_ce()) - i64::from(a.dt.date().num_days_from_ce())
        }
        other => {
            let ms = other.fixed_millis().unwrap_or(1);
            let offset = i64::from(a.offset) * 1000;
            (end + offset).div_euclid(ms) - (start + offset).div_euclid(ms)
        }
    };
    Ok(Val::long(n))
}

/// `[date, unit, binSize, timezone, startOfWeek]`.
fn date_trunc<'a>(_: &Cx<'_>, args: Vec<Val<'a>>) -> Result<Val<'a>> {
    if args[..4].iter().any(Val::nullish) {
        return Ok(Val::null());
    }
    let millis = date_arg(&args[0]).ok().flatten().ok_or_else(|| {
        fail(
            ExprError::DateTruncDateType,
            format!(
                "$dateTrunc requires 'date' to be a date, but got {}",
                args[0].type_name()
            ),
        )
    })?;
    let unit = unit_arg("$dateTrunc", &args[1])?;
    let bin = &args[2];
    let Some(bin) = integral(bin).filter(|_| bin.is_number()) else {
        return Err(fail(
            ExprError::DateTruncBinSizeType,
            format!(
                "$dateTrunc requires 'binSize' to be a 64-bit integer, but got value '{}' of type {}",
                shown(bin),
                bin.type_name()
            ),
        ));
    };
    if bin <= 0 {
        return Err(fail(
            ExprError::DateTruncBinSizeNotPositive,
            format!("$dateTrunc requires 'binSize' to be greater than 0, but got value {bin}"),
        ));
    }
    let Some(zone) = zone_arg(&args[3])? else {
        return Ok(Val::null());
    };
    let week_start = if unit == Unit::Week && !args[4].nullish() {
        start_of_week("$dateTrunc", &args[4])?
    } else {
        chrono::Weekday::Sun
    };
    let l = local(millis, zone)?;
    // Bins count from 2000-01-01T00:00 local time, as MongoDB's do.
    let reference = NaiveDate::from_ymd_opt(2000, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .ok_or_else(out_of_range)?;
    let truncated = match unit {
        Unit::Year | Unit::Quarter | Unit::Month => {
            let per = unit.months().unwrap_or(1) * bin;
            let months = (i64::from(l.year()) - 2000) * 12 + i64::from(l.dt.month0());
            add_months(reference, months.div_euclid(per) * per).ok_or_else(out_of_range)?
        }
        Unit::Week => {
            let shift = i64::from(
                (7 + week_start.num_days_from_monday()
                    - chrono::Weekday::Sat.num_days_from_monday())
                    % 7,
            );
            let start = reference + Duration::days(shift - if shift > 0 { 7 } else { 0 });
            let days = (l.dt - start).num_days();
            start + Duration::days(days.div_euclid(7 * bin) * 7 * bin)
        }
        Unit::Day => {
            let days = (l.dt - reference).num_days();
            reference + Duration::days(days.div_euclid(bin) * bin)
        }
        other => {
            let ms = other.fixed_millis().unwrap_or(1).saturating_mul(bin);
            let since = millis_of(l.dt) - millis_of(reference);
            let local_out = millis_of(reference) + since.div_euclid(ms) * ms;
            // Units of an hour or less keep the instant's own offset.
            return Ok(Val::date(local_out - i64::from(l.offset) * 1000));
        }
    };
    Ok(Val::date(zone.to_utc(millis_of(truncated))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_offsets_parse_in_every_form_mongodb_accepts() {
        assert_eq!(fixed_offset("+05:30"), Some(19800));
        assert_eq!(fixed_offset("-0800"), Some(-28800));
        assert_eq!(fixed_offset("+03"), Some(10800));
        assert_eq!(fixed_offset("UTC"), Some(0));
        assert_eq!(fixed_offset("+5:30"), None);
        assert!(Zone::parse("DoesNotExist").is_err());
        assert!(Zone::parse("America/New_York").is_ok());
    }

    #[test]
    fn iso_strings_parse_with_offsets_and_fractions() {
        let utc = Zone::Fixed(0);
        assert_eq!(parse_in("1970-01-01T00:00:00.001Z", None, utc).unwrap(), 1);
        assert_eq!(parse_in("1970-01-01", None, utc).unwrap(), 0);
        assert_eq!(parse_in("1970-01-01T01:00:00+01:00", None, utc).unwrap(), 0);
        assert!(parse_in("not a date", None, utc).is_err());
        assert_eq!(
            parse_in("02/01/1970", Some("%d/%m/%Y"), utc).unwrap(),
            86_400_000
        );
    }
}
