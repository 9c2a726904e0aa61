//! Geospatial values and predicates, as mongod's `2dsphere` queries see
//! them: shapes on the sphere from GeoJSON (`Point`, `LineString`,
//! `Polygon` with holes, the `Multi*` kinds, `GeometryCollection`), legacy
//! coordinate pairs (`[x, y]` or a document of two numbers, read as
//! longitude and latitude), and the regions a query names.
//!
//! Spherical geometry is the `s2rst` library's (a port of Google's S2, the
//! library mongod indexes the sphere with): loops, polygons, polylines,
//! caps, distances. Distances in meters use mongod's Earth radius.
//!
//! The room's files: `shape.rs` holds the types (positions, shapes,
//! stored locations, regions); `parse.rs` reads them from BSON with
//! mongod's refusals; `relate.rs` says whether a location lies within a
//! region, intersects a shape, and how far it is from a point.

mod parse;
mod relate;
mod shape;

pub use parse::{number, parse_query_geometry, parse_region, query_pair, stored_shapes};
pub use relate::{distance_radians, intersects, within};
pub use shape::{EARTH_RADIUS_METERS, Position, Region, Shape, Stored};

#[cfg(test)]
mod tests;
