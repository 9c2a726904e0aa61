"""pymongo against ebbd: places that expire, as an application models them
(a 2dsphere index beside a TTL index on one collection), searched with
$near, $geoWithin and $geoNear."""
import datetime
import time

import pymongo
import pytest
from pymongo.errors import OperationFailure


def point(lng, lat):
    return {"type": "Point", "coordinates": [lng, lat]}


def test_places_that_expire_are_found_nearest_first_and_then_gone(db):
    db.places.create_index([("loc", pymongo.GEOSPHERE)])
    db.places.create_index("seen", expireAfterSeconds=2)
    info = db.places.index_information()["loc_2dsphere"]
    assert info["key"] == [("loc", "2dsphere")] and info["2dsphereIndexVersion"] == 3
    now = datetime.datetime.now(datetime.timezone.utc)
    db.places.insert_many([
        {"_id": "cafe", "loc": point(2.35, 48.85), "seen": now},
        {"_id": "museum", "loc": point(2.34, 48.86), "seen": now},
        {"_id": "tower", "loc": point(2.29, 48.86), "seen": now},
        {"_id": "gone", "loc": point(2.35, 48.85), "seen": now - datetime.timedelta(hours=1)},
    ])
    near = {"loc": {"$near": {"$geometry": point(2.351, 48.851), "$maxDistance": 2000}}}
    assert [d["_id"] for d in db.places.find(near)] == ["cafe", "museum"]
    box = {"type": "Polygon", "coordinates": [[[2.3, 48.8], [2.4, 48.8], [2.4, 48.9], [2.3, 48.9], [2.3, 48.8]]]}
    within = sorted(d["_id"] for d in db.places.find({"loc": {"$geoWithin": {"$geometry": box}}}))
    assert within == ["cafe", "museum"]
    out = list(db.places.aggregate([
        {"$geoNear": {"near": point(2.29, 48.86), "distanceField": "meters", "maxDistance": 5000}},
    ]))
    assert [d["_id"] for d in out] == ["tower", "museum", "cafe"]
    assert out[0]["meters"] < 1 and 3000 < out[1]["meters"] < 4000
    with pytest.raises(OperationFailure) as refused:
        db.places.insert_one({"loc": {"type": "Point", "coordinates": [500, 0]}})
    assert refused.value.code == 16755
    # The places expire, and their locations with them.
    deadline = time.monotonic() + 30
    while db.command("validate", "places")["nrecords"] > 0:
        assert time.monotonic() < deadline, "places did not expire"
        time.sleep(0.1)
    assert list(db.places.find(near)) == []
    assert db.command("validate", "places")["keysPerIndex"]["loc_2dsphere"] == 0


def test_a_2d_model_is_searched_on_the_plane_and_refuses_what_it_cannot_key(db):
    # A legacy-pair field with a 2d index, as ODMs declare a point field.
    db.shops.create_index([("loc", pymongo.GEO2D)])
    assert db.shops.index_information()["loc_2d"]["key"] == [("loc", "2d")]
    db.shops.insert_many([
        {"_id": "a", "loc": [1, 1]},
        {"_id": "b", "loc": {"lng": 2, "lat": 2}},
        {"_id": "c", "loc": [[9, 9], [3, 3]]},
        {"_id": "d", "loc": [40, 40]},
    ])
    near = [d["_id"] for d in db.shops.find({"loc": {"$near": [0, 0]}}).limit(3)]
    assert near == ["a", "b", "c"]
    bounded = db.shops.find({"loc": {"$near": [0, 0], "$maxDistance": 3}})
    assert [d["_id"] for d in bounded] == ["a", "b"]
    boxed = db.shops.find({"loc": {"$within": {"$box": [[0, 0], [5, 5]]}}}).sort("_id")
    assert [d["_id"] for d in boxed] == ["a", "b", "c"]
    circle = db.shops.find({"loc": {"$geoWithin": {"$center": [[0, 0], 2]}}})
    assert [d["_id"] for d in circle] == ["a"]
    out = list(db.shops.aggregate([{"$geoNear": {"near": [40, 41], "distanceField": "d"}}]))
    assert out[0]["_id"] == "d" and out[0]["d"] == 1
    with pytest.raises(OperationFailure) as refused:
        db.shops.insert_one({"loc": [181, 0]})
    assert refused.value.code == 13027


def test_a_compound_2dsphere_index_serves_near_with_its_other_field(db):
    db.venues.create_index([("kind", pymongo.ASCENDING), ("loc", pymongo.GEOSPHERE)])
    db.venues.insert_many([
        {"_id": "cafe", "kind": "food", "loc": point(2.35, 48.85)},
        {"_id": "bakery", "kind": "food", "loc": point(2.36, 48.86)},
        {"_id": "hardware", "kind": "tools", "loc": point(2.35, 48.85)},
    ])
    near = {"kind": "food", "loc": {"$near": {"$geometry": point(2.351, 48.851), "$maxDistance": 5000}}}
    assert [d["_id"] for d in db.venues.find(near)] == ["cafe", "bakery"]
    plan = db.venues.find(near).explain()["queryPlanner"]["winningPlan"]
    while "inputStage" in plan and plan["stage"] != "IXSCAN":
        plan = plan["inputStage"]
    assert plan["indexName"] == "kind_1_loc_2dsphere"
    with pytest.raises(OperationFailure) as refused:
        db.venues.create_index([("kind", 1), ("flat", pymongo.GEO2D)])
    assert refused.value.code == 16801
