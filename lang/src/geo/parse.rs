//! Reading shapes and regions from BSON: GeoJSON objects (with the CRS
//! mongod accepts), legacy coordinate pairs, and `$geoWithin`'s regions,
//! each refused with mongod's reason when it is not one.

use bson::{RawBsonRef, RawDocument};
use s2rst::s2::polyline::Polyline;
use s2rst::s2::{Loop, Point, Polygon};

use super::shape::{Position, Region, Shape, Stored};
use crate::encoding::display::shell;
use crate::error::{Error, Result};

/// The CRS names of longitude/latitude on WGS84 (GeoJSON's default).
const CRS_NAMES: &[&str] = &["urn:ogc:def:crs:OGC:1.3:CRS84", "EPSG:4326"];
/// mongod's CRS for polygons larger than a hemisphere.
const STRICT_WINDING: &str = "urn:x-mongodb:crs:strictwinding:EPSG:4326";

/// A number of any numeric type, as a coordinate.
pub fn number(v: RawBsonRef<'_>) -> Option<f64> {
    match v {
        RawBsonRef::Double(d) => Some(d),
        RawBsonRef::Int32(i) => Some(f64::from(i)),
        RawBsonRef::Int64(i) => Some(i as f64),
        RawBsonRef::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

fn shown(v: RawBsonRef<'_>) -> String {
    bson::Bson::try_from(v).map_or_else(|_| "?".into(), |b| shell(&b))
}

/// A legacy pair: an array or a document whose values are two numbers.
fn legacy_pair(v: RawBsonRef<'_>) -> Option<Position> {
    let mut values: Vec<RawBsonRef<'_>> = match v {
        RawBsonRef::Array(a) => a.into_iter().collect::<std::result::Result<_, _>>().ok()?,
        RawBsonRef::Document(d) => d
            .iter()
            .map(|e| e.map(|(_, v)| v))
            .collect::<std::result::Result<_, _>>()
            .ok()?,
        _ => return None,
    };
    if values.len() != 2 {
        return None;
    }
    let y = number(values.pop()?)?;
    let x = number(values.pop()?)?;
    Some(Position { x, y })
}

/// A GeoJSON position `[lng, lat]` on the sphere.
fn position(v: RawBsonRef<'_>) -> Result<Position> {
    let RawBsonRef::Array(a) = v else {
        return Err(Error::bad_value("GeoJSON coordinates must be an array"));
    };
    let mut coords = Vec::with_capacity(2);
    for c in a {
        match number(c?) {
            Some(n) => coords.push(n),
            None => return Err(Error::bad_value("Point must only contain numeric elements")),
        }
    }
    if coords.len() != 2 {
        return Err(Error::bad_value(
            "Point must only contain two numeric elements",
        ));
    }
    let p = Position {
        x: coords[0],
        y: coords[1],
    };
    on_sphere(p)?;
    Ok(p)
}

/// Refuses a longitude or latitude out of range.
fn on_sphere(p: Position) -> Result<()> {
    if (-180.0..=180.0).contains(&p.x) && (-90.0..=90.0).contains(&p.y) {
        return Ok(());
    }
    Err(Error::bad_value(format!(
        "longitude/latitude is out of bounds, lng: {} lat: {}",
        p.x, p.y
    )))
}

fn positions(v: RawBsonRef<'_>) -> Result<Vec<Position>> {
    let RawBsonRef::Array(a) = v else {
        return Err(Error::bad_value("GeoJSON coordinates must be an array"));
    };
    a.into_iter().map(|p| position(p?)).collect()
}

/// Positions without consecutive repeats (mongod drops them).
fn dedup(points: &[Position]) -> Vec<Position> {
    let mut out: Vec<Position> = Vec::with_capacity(points.len());
    for p in points {
        if out.last() != Some(p) {
            out.push(*p);
        }
    }
    out
}

fn line(v: RawBsonRef<'_>) -> Result<Polyline> {
    let points = dedup(&positions(v)?);
    if points.len() < 2 {
        return Err(Error::bad_value(
            "GeoJSON LineString must have at least 2 vertices",
        ));
    }
    let line = Polyline::new(points.iter().map(|p| p.to_point()).collect());
    line.validate()
        .map_err(|e| Error::bad_value(format!("GeoJSON LineString is not valid: {e}")))?;
    Ok(line)
}

/// A closed ring as a normalized loop (at most a hemisphere, whatever the
/// ring's orientation), as mongod reads polygons.
fn ring(v: RawBsonRef<'_>) -> Result<Loop> {
    let points = positions(v)?;
    if points.len() < 4 {
        return Err(Error::bad_value(
            "Loop must have at least 3 different vertices",
        ));
    }
    if points.first() != points.last() {
        return Err(Error::bad_value(
            "Loop is not closed, first vertex does not equal last vertex",
        ));
    }
    let mut points = dedup(&points);
    points.pop();
    if points.len() < 3 {
        return Err(Error::bad_value(
            "Loop must have at least 3 different vertices",
        ));
    }
    let mut ring = Loop::new(points.iter().map(|p| p.to_point()).collect::<Vec<Point>>());
    ring.validate()
        .map_err(|e| Error::bad_value(format!("Loop is not valid: {e}")))?;
    ring.normalize();
    Ok(ring)
}

fn polygon(v: RawBsonRef<'_>) -> Result<Polygon> {
    let RawBsonRef::Array(rings) = v else {
        return Err(Error::bad_value("GeoJSON coordinates must be an array"));
    };
    let mut loops = Vec::new();
    for r in rings {
        loops.push(ring(r?)?);
    }
    let Some(shell) = loops.first() else {
        return Err(Error::bad_value(
            "Polygon coordinates must be an array of at least one loop",
        ));
    };
    if loops[1..].iter().any(|hole| !shell.contains_loop(hole)) {
        return Err(Error::bad_value(
            "Secondary loops not contained by first exterior loop - secondary loops must be holes",
        ));
    }
    let polygon = Polygon::from_loops(loops);
    if let Some(e) = polygon.find_validation_error() {
        return Err(Error::bad_value(format!("Polygon is not valid: {e:?}")));
    }
    Ok(polygon)
}

fn each<T>(
    v: RawBsonRef<'_>,
    what: &str,
    f: impl Fn(RawBsonRef<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let RawBsonRef::Array(a) = v else {
        return Err(Error::bad_value(format!(
            "GeoJSON {what} coordinates must be an array"
        )));
    };
    let out = a.into_iter().map(|e| f(e?)).collect::<Result<Vec<T>>>()?;
    if out.is_empty() {
        return Err(Error::bad_value(format!(
            "{what} coordinates must have at least 1 element"
        )));
    }
    Ok(out)
}

/// Refuses a CRS other than longitude/latitude on WGS84.
fn check_crs(doc: &RawDocument) -> Result<()> {
    let Some(crs) = doc.get("crs")? else {
        return Ok(());
    };
    let name = match crs {
        RawBsonRef::Document(c) => c
            .get_document("properties")
            .ok()
            .and_then(|p| p.get_str("name").ok()),
        _ => None,
    };
    match name {
        Some(n) if CRS_NAMES.contains(&n) => Ok(()),
        Some(STRICT_WINDING) => Err(Error::not_implemented(
            "the strict-winding CRS (polygons larger than a hemisphere)",
        )),
        _ => Err(Error::bad_value(format!(
            "Unable to parse CRS: {}",
            shown(crs)
        ))),
    }
}

/// A GeoJSON object: its shape, or why it is not one.
fn geojson(doc: &RawDocument) -> Result<Shape> {
    let kind = match doc.get("type")? {
        Some(RawBsonRef::String(t)) => t,
        _ => {
            return Err(Error::bad_value(format!(
                "unknown GeoJSON type: {}",
                shown(RawBsonRef::Document(doc))
            )));
        }
    };
    check_crs(doc)?;
    if kind == "GeometryCollection" {
        let Some(RawBsonRef::Array(members)) = doc.get("geometries")? else {
            return Err(Error::bad_value(
                "GeometryCollection geometries must be an array",
            ));
        };
        let mut shapes = Vec::new();
        for m in members {
            match m? {
                RawBsonRef::Document(d) => shapes.push(geojson(d)?),
                _ => {
                    return Err(Error::bad_value(
                        "Element of GeometryCollection geometries must be an object",
                    ));
                }
            }
        }
        return Ok(Shape::Collection(shapes));
    }
    let Some(coords) = doc.get("coordinates")? else {
        return Err(Error::bad_value(format!(
            "coordinates field missing in GeoJSON {kind}"
        )));
    };
    Ok(match kind {
        "Point" => Shape::Point(position(coords)?),
        "LineString" => Shape::LineString(line(coords)?),
        "Polygon" => Shape::Polygon(Box::new(polygon(coords)?)),
        "MultiPoint" => Shape::MultiPoint(each(coords, "MultiPoint", position)?),
        "MultiLineString" => Shape::MultiLineString(each(coords, "MultiLineString", line)?),
        "MultiPolygon" => Shape::MultiPolygon(each(coords, "MultiPolygon", polygon)?),
        other => {
            return Err(Error::bad_value(format!("unknown GeoJSON type: {other}")));
        }
    })
}

/// The locations a stored value holds: a GeoJSON object, a legacy pair,
/// or an array of either; `None` for `null` or an empty array, an error
/// for anything else that is not a valid location (for an index, mongod's
/// "Can't extract geo keys"; a filter does not match it).
pub fn stored_shapes(v: RawBsonRef<'_>) -> Result<Option<Vec<Stored>>> {
    match v {
        RawBsonRef::Document(d) if d.get("type")?.is_some() => {
            Ok(Some(vec![Stored::Shape(geojson(d)?)]))
        }
        _ if legacy_pair(v).is_some() => {
            let p = legacy_pair(v).expect("checked");
            Ok(Some(vec![Stored::Legacy(p)]))
        }
        RawBsonRef::Array(a) => {
            let mut out = Vec::new();
            for e in a {
                match stored_shapes(e?)? {
                    Some(found) => out.extend(found),
                    None => {
                        return Err(Error::bad_value("geo element must be an array or object"));
                    }
                }
            }
            Ok((!out.is_empty()).then_some(out))
        }
        RawBsonRef::Null | RawBsonRef::Undefined => Ok(None),
        _ => Err(Error::bad_value("geo element must be an array or object")),
    }
}

/// The GeoJSON shape a query names (`$geometry`).
pub fn parse_query_geometry(v: RawBsonRef<'_>) -> Result<Shape> {
    match v {
        RawBsonRef::Document(d) => geojson(d),
        other => Err(Error::bad_value(format!(
            "$geometry must be an object, got {}",
            shown(other)
        ))),
    }
}

/// A legacy point of a query (`$box`, `$center`, `$near: [x, y]`).
pub fn query_pair(v: RawBsonRef<'_>, what: &str) -> Result<Position> {
    legacy_pair(v).ok_or_else(|| {
        Error::bad_value(format!(
            "Point for {what} must be an array or object of two numbers, got {}",
            shown(v)
        ))
    })
}

/// The elements of a region's array operand.
fn array_of<'a>(name: &str, value: RawBsonRef<'a>) -> Result<Vec<RawBsonRef<'a>>> {
    match value {
        RawBsonRef::Array(a) => Ok(a.into_iter().collect::<std::result::Result<_, _>>()?),
        other => Err(Error::bad_value(format!(
            "{name} must be an array, got {}",
            shown(other)
        ))),
    }
}

/// What `$geoWithin` names: one of `$geometry`, `$centerSphere`, `$box`,
/// `$polygon`, `$center`.
pub fn parse_region(v: RawBsonRef<'_>) -> Result<Region> {
    let RawBsonRef::Document(d) = v else {
        return Err(Error::bad_value(format!(
            "$geoWithin must be an object, got {}",
            shown(v)
        )));
    };
    let mut fields = d.iter();
    let Some(first) = fields.next() else {
        return Err(Error::bad_value("$geoWithin needs a shape"));
    };
    let (name, value) = first?;
    if fields.next().is_some() {
        return Err(Error::bad_value("$geoWithin takes exactly one shape"));
    }
    let array = |value| array_of(name.as_str(), value);
    Ok(match name.as_str() {
        "$geometry" => match parse_query_geometry(value)? {
            s @ (Shape::Polygon(_) | Shape::MultiPolygon(_)) => Region::Sphere(s),
            _ => {
                return Err(Error::bad_value(format!(
                    "$geoWithin not supported with provided geometry: {}",
                    shown(value)
                )));
            }
        },
        "$centerSphere" => {
            let parts = array(value)?;
            let (Some(c), Some(r), 2) = (parts.first(), parts.get(1), parts.len()) else {
                return Err(Error::bad_value("$centerSphere must be [center, radius]"));
            };
            let center = query_pair(*c, "$centerSphere")?;
            on_sphere(center)?;
            match number(*r) {
                Some(radians) if radians >= 0.0 => Region::Cap { center, radians },
                _ => {
                    return Err(Error::bad_value("radius must be a non-negative number"));
                }
            }
        }
        "$center" => {
            let parts = array(value)?;
            let (Some(c), Some(r), 2) = (parts.first(), parts.get(1), parts.len()) else {
                return Err(Error::bad_value("$center must be [center, radius]"));
            };
            let center = query_pair(*c, "$center")?;
            match number(*r) {
                Some(radius) if radius >= 0.0 => Region::Circle { center, radius },
                _ => {
                    return Err(Error::bad_value("radius must be a non-negative number"));
                }
            }
        }
        "$box" => {
            let parts = array(value)?;
            let [a, b] = parts.as_slice() else {
                return Err(Error::bad_value("$box must be two points"));
            };
            let (a, b) = (query_pair(*a, "$box")?, query_pair(*b, "$box")?);
            Region::Box {
                min: Position {
                    x: a.x.min(b.x),
                    y: a.y.min(b.y),
                },
                max: Position {
                    x: a.x.max(b.x),
                    y: a.y.max(b.y),
                },
            }
        }
        "$polygon" => {
            let parts = array(value)?;
            let points = parts
                .iter()
                .map(|p| query_pair(*p, "$polygon"))
                .collect::<Result<Vec<_>>>()?;
            if points.len() < 3 {
                return Err(Error::bad_value("Polygon must have at least 3 points"));
            }
            Region::FlatPolygon(points)
        }
        other => {
            return Err(Error::bad_value(format!(
                "unknown geo specifier: {other}: {}",
                shown(value)
            )));
        }
    })
}
