//! `2dsphere` index keys: S2 cells on the sphere, as mongod indexes it. A
//! point is keyed by its leaf cell; a line or a polygon by the cells of a
//! covering no finer than [`FINEST`] (the level mongod indexes shapes
//! down to, about a meter). A key is the cell's 64-bit id, encoded so
//! keys sort as ids do.
//!
//! A query region is covered the same way, and its entries are found in
//! two kinds of ranges: every cell inside a covering cell (points and
//! finer shape cells), and each of its ancestors down to [`FINEST`]
//! exactly (a coarser cell of a large shape that holds the region's
//! cell). Every entry found is only a candidate: the filter decides.

use ebb_lang::encoding::keycode;
use ebb_lang::geo::{Position, Region, Shape, Stored};
use s2rst::s1::Angle;
use s2rst::s2::region_coverer::RegionCoverer;
use s2rst::s2::{Cap, CellId, Level};

use crate::engine::KeyRange;

/// The finest level a shape's covering uses (mongod's
/// `finestIndexedLevel`).
pub const FINEST: u8 = 23;
/// At most this many cells cover a stored shape or a query region.
const MAX_CELLS: usize = 20;

/// The key value of cell `id`: its id with the sign bit flipped, as a
/// signed number, so keys order as ids do.
pub fn cell_value(id: u64) -> i64 {
    (id ^ (1 << 63)) as i64
}

/// The encoded key prefix of cell `id` (before the `_id` suffix).
pub fn cell_key(id: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(12);
    keycode::encode_value(&mut out, bson::RawBsonRef::Int64(cell_value(id)));
    out
}

fn coverer() -> RegionCoverer {
    RegionCoverer::new()
        .max_level(Level::new(FINEST))
        .max_cells(MAX_CELLS)
}

/// The cells a stored location is keyed by.
pub fn cells_of(location: &Stored) -> Vec<u64> {
    let mut out = Vec::new();
    cells_of_shape(&location.shape(), &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

fn cells_of_shape(shape: &Shape, out: &mut Vec<u64>) {
    let cover = |region: &dyn s2rst::s2::Region, out: &mut Vec<u64>| {
        out.extend(coverer().covering(region).cell_ids().iter().map(|c| c.id()));
    };
    match shape {
        Shape::Point(p) => out.push(leaf(*p)),
        Shape::MultiPoint(ps) => out.extend(ps.iter().map(|p| leaf(*p))),
        Shape::LineString(l) => cover(l, out),
        Shape::MultiLineString(ls) => ls.iter().for_each(|l| cover(l, out)),
        Shape::Polygon(p) => cover(p.as_ref(), out),
        Shape::MultiPolygon(ps) => ps.iter().for_each(|p| cover(p, out)),
        Shape::Collection(shapes) => shapes.iter().for_each(|s| cells_of_shape(s, out)),
    }
}

fn leaf(p: Position) -> u64 {
    CellId::from_point(&p.to_point()).id()
}

/// The covering cells of what a `$geoWithin` (on the sphere) or a
/// `$geoIntersects` names; `None` for the flat regions, which a
/// `2dsphere` index does not serve.
pub fn query_cells(region: Option<&Region>, shape: Option<&Shape>) -> Option<Vec<CellId>> {
    let coverer = RegionCoverer::new().max_cells(MAX_CELLS);
    let mut cells = Vec::new();
    let mut cover = |r: &dyn s2rst::s2::Region| {
        cells.extend(coverer.covering(r).cell_ids().iter().copied());
    };
    match (region, shape) {
        (Some(Region::Cap { center, radians }), _) => {
            cover(&Cap::from_center_angle(
                center.to_point(),
                Angle::from_radians(*radians),
            ));
        }
        (Some(Region::Sphere(s)), _) | (None, Some(s)) => cover_shape(s, &mut cover),
        _ => return None,
    }
    Some(cells)
}

fn cover_shape(shape: &Shape, cover: &mut dyn FnMut(&dyn s2rst::s2::Region)) {
    match shape {
        Shape::Point(p) => cover(&Cap::from_point(p.to_point())),
        Shape::MultiPoint(ps) => ps
            .iter()
            .for_each(|p| cover(&Cap::from_point(p.to_point()))),
        Shape::LineString(l) => cover(l),
        Shape::MultiLineString(ls) => ls.iter().for_each(|l| cover(l)),
        Shape::Polygon(p) => cover(p.as_ref()),
        Shape::MultiPolygon(ps) => ps.iter().for_each(|p| cover(p)),
        Shape::Collection(shapes) => shapes.iter().for_each(|s| cover_shape(s, cover)),
    }
}

/// The index key ranges holding every entry that may lie in or touch the
/// cells: each cell's whole range, and its ancestors' exact keys from
/// [`FINEST`] up; merged, in key order. Also the bounds as explain shows
/// them.
pub fn ranges(cells: &[CellId]) -> (Vec<KeyRange>, Vec<String>) {
    let mut cells_spans: Vec<(u64, u64)> = Vec::new();
    for &c in cells {
        cells_spans.push((c.range_min().id(), c.range_max().id()));
        let mut ancestor = c;
        while ancestor.level().as_u8() > 0 {
            ancestor = ancestor.parent();
            if ancestor.level().as_u8() <= FINEST {
                cells_spans.push((ancestor.id(), ancestor.id()));
            }
        }
    }
    spans(cells_spans)
}

/// The key ranges of inclusive spans of 64-bit keys (a cell's first to
/// last id, a grid cell's hashes), merged, in key order; and the bounds as
/// explain shows them.
pub fn spans(mut spans: Vec<(u64, u64)>) -> (Vec<KeyRange>, Vec<String>) {
    spans.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (lo, hi) in spans {
        match merged.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    // Every key of value `hi` starts with its encoding: the range ends
    // past them all.
    let ranges = merged
        .iter()
        .map(|&(lo, hi)| KeyRange::new(cell_key(lo), keycode::prefix_successor(&cell_key(hi))))
        .collect();
    let shown = merged
        .iter()
        .map(|&(lo, hi)| format!("[{}, {}]", cell_value(lo), cell_value(hi)))
        .collect();
    (ranges, shown)
}
