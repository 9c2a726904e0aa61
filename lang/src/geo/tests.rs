use bson::{RawBsonRef, rawdoc};

use super::*;

fn stored(v: bson::RawDocumentBuf) -> Stored {
    let value = v.get("v").unwrap().unwrap();
    stored_shapes(value).unwrap().unwrap().remove(0)
}

fn square(x0: f64, y0: f64, x1: f64, y1: f64) -> bson::RawDocumentBuf {
    rawdoc! { "type": "Polygon", "coordinates": [[[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]] }
}

fn region(shape: bson::RawDocumentBuf) -> Region {
    parse_region(RawBsonRef::Document(&rawdoc! { "$geometry": shape })).unwrap()
}

#[test]
fn points_polygons_and_legacy_pairs_are_read_and_related() {
    let inside = stored(rawdoc! { "v": { "type": "Point", "coordinates": [1.0, 1.0] } });
    let outside = stored(rawdoc! { "v": [5, 5] });
    let r = region(square(0.0, 0.0, 2.0, 2.0));
    assert!(within(&inside, &r));
    assert!(!within(&outside, &r));
    let line =
        stored(rawdoc! { "v": { "type": "LineString", "coordinates": [[0.5, 0.5], [1.5, 1.5]] } });
    assert!(within(&line, &r));
    let crossing =
        stored(rawdoc! { "v": { "type": "LineString", "coordinates": [[1.0, 1.0], [3.0, 1.0]] } });
    assert!(!within(&crossing, &r));
    let query = parse_query_geometry(RawBsonRef::Document(&square(0.0, 0.0, 2.0, 2.0))).unwrap();
    assert!(intersects(&crossing, &query));
    // A polygon with a hole does not hold a point in its hole.
    let holed = rawdoc! { "type": "Polygon", "coordinates": [
        [[0.0, 0.0], [4.0, 0.0], [4.0, 4.0], [0.0, 4.0], [0.0, 0.0]],
        [[1.0, 1.0], [3.0, 1.0], [3.0, 3.0], [1.0, 3.0], [1.0, 1.0]],
    ] };
    let r = region(holed);
    assert!(!within(&stored(rawdoc! { "v": [2, 2] }), &r));
    assert!(within(&stored(rawdoc! { "v": [0.5, 2] }), &r));
}

#[test]
fn caps_and_flat_regions_and_distances() {
    // A degree of longitude at the equator, in radians.
    let degree = std::f64::consts::PI / 180.0;
    let at = stored(rawdoc! { "v": [1, 0] });
    let cap = |r: f64| Region::Cap {
        center: Position { x: 0.0, y: 0.0 },
        radians: r,
    };
    assert!(within(&at, &cap(degree * 1.01)));
    assert!(!within(&at, &cap(degree * 0.99)));
    let d = distance_radians(&at, Position { x: 0.0, y: 0.0 });
    assert!((d - degree).abs() < 1e-12, "{d}");
    let boxed = parse_region(RawBsonRef::Document(&rawdoc! { "$box": [[0, 0], [2, 2]] })).unwrap();
    assert!(within(&at, &boxed));
    let circle = parse_region(RawBsonRef::Document(&rawdoc! { "$center": [[0, 0], 0.5] })).unwrap();
    assert!(!within(&at, &circle));
    let tri = parse_region(RawBsonRef::Document(
        &rawdoc! { "$polygon": [[0, -1], [3, 0], [0, 1]] },
    ))
    .unwrap();
    assert!(within(&at, &tri));
}

#[test]
fn invalid_shapes_are_refused_with_mongods_reasons() {
    let err = |d: bson::RawDocumentBuf| {
        parse_query_geometry(RawBsonRef::Document(&d))
            .unwrap_err()
            .message
    };
    assert!(err(rawdoc! { "type": "Point", "coordinates": [200, 0] }).contains("out of bounds"));
    assert!(err(rawdoc! { "type": "Point", "coordinates": ["a", 0] }).contains("numeric"));
    assert!(
        err(rawdoc! { "type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]] })
            .contains("not closed")
    );
    assert!(
        err(rawdoc! { "type": "Polygon", "coordinates": [[[0, 0], [1, 0], [0, 0]]] })
            .contains("at least 3")
    );
    // A bow tie: its edges cross.
    assert!(
        err(
            rawdoc! { "type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]] }
        )
        .contains("not valid")
    );
    assert!(
        err(rawdoc! { "type": "Circle", "coordinates": [0, 0] }).contains("unknown GeoJSON type")
    );
    assert!(stored_shapes(RawBsonRef::String("x")).is_err());
    assert!(stored_shapes(RawBsonRef::Null).unwrap().is_none());
}
