//! `2d` index keys: legacy coordinate pairs on a flat grid, as mongod's
//! `2d` indexes key them. Each coordinate is scaled from the index's
//! `[min, max]` (−180 to 180 unless given) to 32 bits, the two are
//! interleaved (x first) into a 64-bit geohash, and the hash is cut to the
//! index's `bits` per coordinate (26 unless given). A key is the hash,
//! encoded so keys sort as hashes do: the points of one square cell of the
//! grid share their hash's prefix, so a cell is one range of keys.
//!
//! A query's rectangle is covered by the cells of the finest level that
//! needs at most `MAX_CELLS` of them. Every entry found is only a
//! candidate: the filter decides.

use bson::RawBsonRef;
use ebb_lang::geo::{Position, Region, number};
use s2rst::s1::Angle;
use s2rst::s2::Cap;

use super::geo::{cell_key, spans};
use crate::catalog::IndexMeta;
use crate::engine::KeyRange;

/// mongod's defaults: 26 bits per coordinate, on `[-180, 180]`.
pub const DEFAULT_BITS: u32 = 26;
pub const DEFAULT_MIN: f64 = -180.0;
pub const DEFAULT_MAX: f64 = 180.0;
/// At most this many cells cover a query's rectangle.
const MAX_CELLS: u64 = 16;

/// Why a value cannot be keyed by a `2d` index (mongod's reasons, each
/// with its own code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// A list of locations holds something that is no location (16804).
    NotALocation,
    /// A location with no value (13067).
    Empty,
    /// A location with one value (13068).
    OneElement,
    /// A location whose first two values are not both numbers (13026).
    NotNumbers,
    /// A coordinate outside the index's `[min, max]` (13027).
    OutOfRange,
}

impl Fault {
    /// mongod's words for the fault.
    pub fn reason(self, grid: &Grid) -> String {
        match self {
            Fault::NotALocation => {
                "location object expected, location array not in correct format".into()
            }
            Fault::Empty => "geo field is empty".into(),
            Fault::OneElement => "geo field only has 1 element".into(),
            Fault::NotNumbers => {
                "geo values must be 'legacy coordinate pairs' for 2d indexes".into()
            }
            Fault::OutOfRange => format!(
                "point not in interval of [ {}, {} ]",
                shown(grid.min),
                shown(grid.max)
            ),
        }
    }
}

/// A bound as mongod prints it (`-180`, `0.5`).
fn shown(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// The grid of a `2d` index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    bits: u32,
    min: f64,
    max: f64,
    /// Hash units per coordinate unit.
    scaling: f64,
}

impl Grid {
    /// The grid of `bits` (1–32) per coordinate over `[min, max]`
    /// (`min < max`, both finite: checked where the index is created).
    pub fn new(bits: u32, min: f64, max: f64) -> Grid {
        Grid {
            bits,
            min,
            max,
            scaling: 4_294_967_296.0 / (max - min),
        }
    }

    /// A `2d` index's grid, from its `bits`, `min` and `max` (mongod's
    /// defaults for those not given); `None` for any other index.
    pub fn of(index: &IndexMeta) -> Option<Grid> {
        if !index.is_flat() {
            return None;
        }
        let number = |field: &str| {
            let v = index.extra.get(field)?;
            v.as_f64()
                .or_else(|| v.as_i32().map(f64::from))
                .or_else(|| v.as_i64().map(|n| n as f64))
        };
        Some(Grid::new(
            number("bits").map_or(DEFAULT_BITS, |b| b as u32),
            number("min").unwrap_or(DEFAULT_MIN),
            number("max").unwrap_or(DEFAULT_MAX),
        ))
    }

    /// The width of the grid, in its units.
    pub fn width(&self) -> f64 {
        self.max - self.min
    }

    /// The hash of a position inside the grid's bounds.
    pub fn hash(&self, p: Position) -> u64 {
        let cut = 64 - 2 * self.bits;
        let h = (spread(self.scale(p.x)) << 1) | spread(self.scale(p.y));
        if cut == 0 { h } else { h >> cut << cut }
    }

    /// A coordinate on the 32-bit scale (the bounds' last value falls in
    /// the last cell).
    fn scale(&self, v: f64) -> u32 {
        // A cast from f64 saturates: below min is 0, at max is u32::MAX.
        ((v - self.min) * self.scaling) as u32
    }

    /// The positions a value at the index's field is keyed by, in mongod's
    /// grammar: a location (`[x, y]` or `{a: x, b: y}`, extra values
    /// ignored) or a list of them (an array or a document of locations);
    /// nothing for a value that holds neither (a string, an empty array).
    pub fn locations(&self, value: RawBsonRef<'_>) -> Result<Vec<Position>, Fault> {
        let Some(items) = elements(value) else {
            return Ok(Vec::new());
        };
        match items.first() {
            None => Ok(Vec::new()),
            Some(first) if number(*first).is_some() => Ok(vec![self.location(&items)?]),
            Some(_) => {
                let mut out = Vec::new();
                for item in items {
                    let inner = elements(item).ok_or(Fault::NotALocation)?;
                    if !inner.is_empty() {
                        out.push(self.location(&inner)?);
                    }
                }
                Ok(out)
            }
        }
    }

    fn location(&self, values: &[RawBsonRef<'_>]) -> Result<Position, Fault> {
        let (x, y) = match values {
            [] => return Err(Fault::Empty),
            [_] => return Err(Fault::OneElement),
            [x, y, ..] => (number(*x), number(*y)),
        };
        let (Some(x), Some(y)) = (x, y) else {
            return Err(Fault::NotNumbers);
        };
        let inside = |v: f64| (self.min..=self.max).contains(&v);
        if !(inside(x) && inside(y)) {
            return Err(Fault::OutOfRange);
        }
        Ok(Position { x, y })
    }

    /// The key ranges holding every entry inside the rectangle `lo`–`hi`
    /// (merged, in key order; none when it misses the grid), and the bounds
    /// as explain shows them.
    pub fn ranges(&self, lo: Position, hi: Position) -> (Vec<KeyRange>, Vec<String>) {
        let clamp = |v: f64| v.clamp(self.min, self.max);
        if lo.x > self.max || lo.y > self.max || hi.x < self.min || hi.y < self.min {
            return (Vec::new(), Vec::new());
        }
        let (x0, x1) = (self.scale(clamp(lo.x)), self.scale(clamp(hi.x)));
        let (y0, y1) = (self.scale(clamp(lo.y)), self.scale(clamp(hi.y)));
        // The finest level whose cells over the rectangle are few enough.
        let cells_at = |level: u32| {
            let shift = 32 - level;
            let span = |a: u32, b: u32| u64::from((b >> shift) - (a >> shift)) + 1;
            span(x0, x1) * span(y0, y1)
        };
        let level = (1..=self.bits)
            .take_while(|l| cells_at(*l) <= MAX_CELLS)
            .last()
            .unwrap_or(0);
        if level == 0 {
            return spans(vec![(0, u64::MAX)]);
        }
        let shift = 32 - level;
        let below = (1u64 << (64 - 2 * level)) - 1;
        let mut cells = Vec::new();
        for cx in (x0 >> shift)..=(x1 >> shift) {
            for cy in (y0 >> shift)..=(y1 >> shift) {
                let h = (spread(cx << shift) << 1) | spread(cy << shift);
                cells.push((h, h | below));
            }
        }
        spans(cells)
    }

    /// The rectangle holding every point of `region` the grid can hold
    /// (its bounding box; a cap's bound in degrees, the whole width when
    /// it crosses the antimeridian); `None` for a region on the sphere
    /// that is no cap.
    pub fn bounds(&self, region: &Region) -> Option<(Position, Position)> {
        let pad = |r: f64| r * (1.0 + 1e-9) + (self.max - self.min) * 1e-12;
        let around = |c: Position, r: f64| {
            let r = pad(r);
            (
                Position {
                    x: c.x - r,
                    y: c.y - r,
                },
                Position {
                    x: c.x + r,
                    y: c.y + r,
                },
            )
        };
        match region {
            Region::Box { min, max } => Some((*min, *max)),
            Region::Circle { center, radius } => Some(around(*center, *radius)),
            Region::FlatPolygon(vs) => {
                let fold = |f: fn(f64, f64) -> f64, start: f64, pick: fn(&Position) -> f64| {
                    vs.iter().map(pick).fold(start, f)
                };
                Some((
                    Position {
                        x: fold(f64::min, f64::INFINITY, |p| p.x),
                        y: fold(f64::min, f64::INFINITY, |p| p.y),
                    },
                    Position {
                        x: fold(f64::max, f64::NEG_INFINITY, |p| p.x),
                        y: fold(f64::max, f64::NEG_INFINITY, |p| p.y),
                    },
                ))
            }
            Region::Cap { center, radians } => Some(self.cap_bounds(*center, *radians)),
            Region::Sphere(_) => None,
        }
    }

    /// The bounds of the points within `radians` of `center` on the
    /// sphere, as longitude (x) and latitude (y) in degrees.
    pub fn cap_bounds(&self, center: Position, radians: f64) -> (Position, Position) {
        let rect =
            Cap::from_center_angle(center.to_point(), Angle::from_radians(radians)).rect_bound();
        let deg = |r: f64| Angle::from_radians(r).degrees();
        let pad = 1e-9;
        let (x_lo, x_hi) = if rect.lng.is_full() || rect.lng.is_inverted() {
            (self.min, self.max)
        } else {
            (deg(rect.lng.lo) - pad, deg(rect.lng.hi) + pad)
        };
        (
            Position {
                x: x_lo,
                y: deg(rect.lat.lo) - pad,
            },
            Position {
                x: x_hi,
                y: deg(rect.lat.hi) + pad,
            },
        )
    }
}

/// The key of hash `h` (before the `_id` suffix).
pub fn hash_key(h: u64) -> Vec<u8> {
    cell_key(h)
}

/// The bits of `v` spread to the even positions of a 64-bit word.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// The values of an array or a document; `None` for any other value.
fn elements(v: RawBsonRef<'_>) -> Option<Vec<RawBsonRef<'_>>> {
    match v {
        RawBsonRef::Array(a) => a.into_iter().collect::<Result<_, _>>().ok(),
        RawBsonRef::Document(d) => d
            .iter()
            .map(|e| e.map(|(_, v)| v))
            .collect::<Result<_, _>>()
            .ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid::new(DEFAULT_BITS, DEFAULT_MIN, DEFAULT_MAX)
    }

    #[test]
    fn a_cell_holds_the_points_that_share_its_prefix() {
        let g = grid();
        let a = g.hash(Position { x: 10.0, y: 10.0 });
        let b = g.hash(Position {
            x: 10.000_001,
            y: 10.0,
        });
        let far = g.hash(Position { x: -10.0, y: 10.0 });
        // x's top bit differs first: the highest bit of the hash.
        assert_eq!(a >> 63, 1);
        assert_eq!(far >> 63, 0);
        assert_eq!(a >> 20, b >> 20);
        // The bits below 2 × 26 are cut.
        assert_eq!(a & ((1 << 12) - 1), 0);
    }

    #[test]
    fn the_grammar_of_locations_is_mongods() {
        let g = grid();
        let doc = bson::rawdoc! {
            "pair": [1, 2.5],
            "named": { "lng": 3, "lat": 4, "extra": "ignored" },
            "many": [[1, 2], { "x": 5, "y": 6 }, []],
            "empty": [],
            "text": "nowhere",
            "one": [1],
            "strings": ["a", "b"],
            "far": [200, 0],
            "mixed": [[1, 2], "x"],
        };
        let at = |k: &str| g.locations(doc.get(k).unwrap().unwrap());
        assert_eq!(at("pair").unwrap(), vec![Position { x: 1.0, y: 2.5 }]);
        assert_eq!(at("named").unwrap(), vec![Position { x: 3.0, y: 4.0 }]);
        assert_eq!(at("many").unwrap().len(), 2);
        assert!(at("empty").unwrap().is_empty());
        assert!(at("text").unwrap().is_empty());
        assert_eq!(at("one"), Err(Fault::OneElement));
        assert_eq!(at("strings"), Err(Fault::NotALocation));
        assert_eq!(at("far"), Err(Fault::OutOfRange));
        assert_eq!(at("mixed"), Err(Fault::NotALocation));
        let bad = bson::rawdoc! { "v": [["a", "b"]] };
        assert_eq!(
            g.locations(bad.get("v").unwrap().unwrap()),
            Err(Fault::NotNumbers)
        );
    }

    #[test]
    fn a_rectangle_is_covered_by_few_ranges_holding_every_point_inside() {
        let g = grid();
        let (lo, hi) = (Position { x: -3.3, y: 40.1 }, Position { x: -1.2, y: 41.9 });
        let (ranges, shown) = g.ranges(lo, hi);
        assert!(!ranges.is_empty() && ranges.len() <= MAX_CELLS as usize);
        assert_eq!(ranges.len(), shown.len());
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..2000 {
            let p = Position {
                x: lo.x + (hi.x - lo.x) * next(),
                y: lo.y + (hi.y - lo.y) * next(),
            };
            let key = hash_key(g.hash(p));
            assert!(
                ranges
                    .iter()
                    .any(|r| r.lower <= key && r.upper.as_ref().is_none_or(|u| key < *u)),
                "{p:?} inside the rectangle is outside every range"
            );
        }
        // A rectangle beside the grid holds nothing; one over all of it, everything.
        assert!(
            g.ranges(Position { x: 190.0, y: 0.0 }, Position { x: 200.0, y: 1.0 })
                .0
                .is_empty()
        );
        let whole = g.ranges(
            Position {
                x: -500.0,
                y: -500.0,
            },
            Position { x: 500.0, y: 500.0 },
        );
        assert_eq!(whole.0.len(), 1);
    }
}
