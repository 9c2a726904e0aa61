//! The geo room's types: a position, a shape on the sphere, a stored
//! location, and the regions `$geoWithin` names.

use s2rst::s2::polyline::Polyline;
use s2rst::s2::{LatLng, Point, Polygon};

/// mongod's radius of the Earth, for distances in meters
/// (`kRadiusOfEarthInMeters`).
pub const EARTH_RADIUS_METERS: f64 = 6_378_100.0;

/// A position: longitude and latitude in degrees (or `x` and `y` of a
/// legacy pair).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Position {
    pub x: f64,
    pub y: f64,
}

impl Position {
    /// The point on the sphere at this longitude and latitude.
    pub fn to_point(self) -> Point {
        LatLng::from_degrees(self.y, self.x).normalized().to_point()
    }
}

/// A shape on the sphere, as GeoJSON gives it.
#[derive(Debug, Clone)]
pub enum Shape {
    Point(Position),
    LineString(Polyline),
    Polygon(Box<Polygon>),
    MultiPoint(Vec<Position>),
    MultiLineString(Vec<Polyline>),
    MultiPolygon(Vec<Polygon>),
    Collection(Vec<Shape>),
}

/// A stored location: a GeoJSON shape, or a legacy coordinate pair (on the
/// sphere for `2dsphere`, on the plane for the flat regions).
#[derive(Debug, Clone)]
pub enum Stored {
    Shape(Shape),
    Legacy(Position),
}

impl Stored {
    /// The location as a shape on the sphere.
    pub fn shape(&self) -> Shape {
        match self {
            Stored::Shape(s) => s.clone(),
            Stored::Legacy(p) => Shape::Point(*p),
        }
    }

    /// The position of a point location (either form).
    pub fn position(&self) -> Option<Position> {
        match self {
            Stored::Shape(Shape::Point(p)) | Stored::Legacy(p) => Some(*p),
            _ => None,
        }
    }
}

/// What a `$geoWithin` names.
#[derive(Debug, Clone)]
pub enum Region {
    /// `$geometry`: a `Polygon` or `MultiPolygon` on the sphere.
    Sphere(Shape),
    /// `$centerSphere`: a cap around a position, its radius in radians.
    Cap { center: Position, radians: f64 },
    /// `$box`: a rectangle on the plane, lower-left and upper-right.
    Box { min: Position, max: Position },
    /// `$polygon`: a polygon on the plane.
    FlatPolygon(Vec<Position>),
    /// `$center`: a circle on the plane.
    Circle { center: Position, radius: f64 },
}
