//! How a stored location relates to a query: lies within a region,
//! intersects a shape, or lies at some distance from a point. Shapes on
//! the sphere are decomposed into points, polylines and polygons and
//! compared with S2's predicates; the flat regions (`$box`, `$polygon`,
//! `$center`) hold points only, compared by their coordinates.

use s2rst::s1::Angle;
use s2rst::s2::polyline::Polyline;
use s2rst::s2::{Cap, Point, Polygon, Region as _};

use super::shape::{Position, Region, Shape, Stored};

/// The primitive parts of a shape.
enum Part<'a> {
    Point(Point),
    Line(&'a Polyline),
    Polygon(&'a Polygon),
}

fn parts(shape: &Shape) -> Vec<Part<'_>> {
    let mut out = Vec::new();
    collect(shape, &mut out);
    out
}

fn collect<'a>(shape: &'a Shape, out: &mut Vec<Part<'a>>) {
    match shape {
        Shape::Point(p) => out.push(Part::Point(p.to_point())),
        Shape::MultiPoint(ps) => out.extend(ps.iter().map(|p| Part::Point(p.to_point()))),
        Shape::LineString(l) => out.push(Part::Line(l)),
        Shape::MultiLineString(ls) => out.extend(ls.iter().map(Part::Line)),
        Shape::Polygon(p) => out.push(Part::Polygon(p)),
        Shape::MultiPolygon(ps) => out.extend(ps.iter().map(Part::Polygon)),
        Shape::Collection(shapes) => shapes.iter().for_each(|s| collect(s, out)),
    }
}

/// Points this close (radians, about a micrometer) are one point.
const SAME: f64 = 1e-13;

fn vertices(part: &Part<'_>) -> Vec<Point> {
    match part {
        Part::Point(p) => vec![*p],
        Part::Line(l) => (0..l.num_vertices()).map(|i| l.vertex(i)).collect(),
        Part::Polygon(p) => p
            .loops()
            .iter()
            .flat_map(|l| l.vertices().iter().copied())
            .collect(),
    }
}

/// Whether `inner` lies within polygon `outer`.
fn polygon_contains(outer: &Polygon, inner: &Part<'_>) -> bool {
    match inner {
        Part::Point(p) => outer.contains_point(p),
        Part::Line(l) => outer.clone().contains_polyline(l),
        Part::Polygon(p) => outer.contains_polygon(p),
    }
}

/// Whether the stored location lies within `region`.
pub fn within(stored: &Stored, region: &Region) -> bool {
    match region {
        Region::Sphere(area) => {
            let shape = stored.shape();
            let areas = parts(area);
            parts(&shape).iter().all(|part| {
                areas.iter().any(|a| match a {
                    Part::Polygon(outer) => polygon_contains(outer, part),
                    _ => false,
                })
            })
        }
        Region::Cap { center, radians } => {
            let cap = Cap::from_center_angle(center.to_point(), Angle::from_radians(*radians));
            let shape = stored.shape();
            parts(&shape)
                .iter()
                .all(|part| vertices(part).into_iter().all(|v| cap.contains_point(v)))
        }
        flat => stored.position().is_some_and(|p| flat_contains(flat, p)),
    }
}

/// Whether a point lies in a flat region (boundaries included).
fn flat_contains(region: &Region, p: Position) -> bool {
    match region {
        Region::Box { min, max } => {
            (min.x..=max.x).contains(&p.x) && (min.y..=max.y).contains(&p.y)
        }
        Region::Circle { center, radius } => (p.x - center.x).hypot(p.y - center.y) <= *radius,
        Region::FlatPolygon(vs) => in_flat_polygon(vs, p),
        Region::Sphere(_) | Region::Cap { .. } => false,
    }
}

/// Even-odd ray casting, with points on an edge inside.
fn in_flat_polygon(vs: &[Position], p: Position) -> bool {
    let mut inside = false;
    for (i, a) in vs.iter().enumerate() {
        let b = vs[(i + 1) % vs.len()];
        let cross = (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x);
        let on_segment = cross.abs() < 1e-12
            && p.x >= a.x.min(b.x)
            && p.x <= a.x.max(b.x)
            && p.y >= a.y.min(b.y)
            && p.y <= a.y.max(b.y);
        if on_segment {
            return true;
        }
        if (a.y > p.y) != (b.y > p.y) && p.x < (b.x - a.x) * (p.y - a.y) / (b.y - a.y) + a.x {
            inside = !inside;
        }
    }
    inside
}

fn point_on_line(p: Point, l: &Polyline) -> bool {
    let (closest, _) = l.project(p);
    closest.distance(p).radians() <= SAME
}

fn parts_intersect(a: &Part<'_>, b: &Part<'_>) -> bool {
    match (a, b) {
        (Part::Point(x), Part::Point(y)) => x.distance(*y).radians() <= SAME,
        (Part::Point(p), Part::Line(l)) | (Part::Line(l), Part::Point(p)) => point_on_line(*p, l),
        (Part::Point(p), Part::Polygon(g)) | (Part::Polygon(g), Part::Point(p)) => {
            g.contains_point(p)
        }
        (Part::Line(x), Part::Line(y)) => x.intersects(y),
        (Part::Line(l), Part::Polygon(g)) | (Part::Polygon(g), Part::Line(l)) => {
            (*g).clone().intersects_polyline(l)
        }
        (Part::Polygon(x), Part::Polygon(y)) => x.intersects_polygon(y),
    }
}

/// Whether the stored location and `query` share a point.
pub fn intersects(stored: &Stored, query: &Shape) -> bool {
    let shape = stored.shape();
    let (mine, theirs) = (parts(&shape), parts(query));
    mine.iter()
        .any(|a| theirs.iter().any(|b| parts_intersect(a, b)))
}

/// The angle from `from` to the nearest point of the stored location, in
/// radians (0 inside a polygon).
pub fn distance_radians(stored: &Stored, from: Position) -> f64 {
    let x = from.to_point();
    let shape = stored.shape();
    parts(&shape)
        .iter()
        .map(|part| match part {
            Part::Point(p) => p.distance(x).radians(),
            Part::Line(l) => l.project(x).0.distance(x).radians(),
            Part::Polygon(g) => g.get_distance(x).radians(),
        })
        .fold(f64::INFINITY, f64::min)
}
