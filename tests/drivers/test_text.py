"""pymongo against ebbd: a model that declares a 2dsphere index, a text
index and a TTL index on one collection (listings that expire), searched
with $near, $geoWithin and $text sorted by score, then gone."""
import datetime
import time

import pymongo
import pytest
from pymongo.errors import OperationFailure


def point(lng, lat):
    return {"type": "Point", "coordinates": [lng, lat]}


def test_listings_are_found_by_place_and_words_and_then_expire(db):
    db.listings.create_index([("loc", pymongo.GEOSPHERE)])
    db.listings.create_index([("title", pymongo.TEXT), ("body", pymongo.TEXT)],
                             weights={"title": 5}, name="words")
    db.listings.create_index("posted", expireAfterSeconds=2)
    info = db.listings.index_information()["words"]
    assert info["key"] == [("_fts", "text"), ("_ftsx", 1)]
    assert info["weights"] == {"title": 5, "body": 1} and info["textIndexVersion"] == 3
    now = datetime.datetime.now(datetime.timezone.utc)
    db.listings.insert_many([
        {"_id": "bike", "title": "Red bike", "body": "a city bike, barely ridden",
         "loc": point(2.35, 48.85), "posted": now},
        {"_id": "bikes", "title": "Two bikes", "body": "bikes for kids",
         "loc": point(2.34, 48.86), "posted": now},
        {"_id": "sofa", "title": "Sofa", "body": "comes with a bike rack",
         "loc": point(2.29, 48.86), "posted": now},
        {"_id": "old", "title": "Old bike", "body": "bike",
         "loc": point(2.35, 48.85), "posted": now - datetime.timedelta(hours=1)},
    ])
    near = {"loc": {"$near": {"$geometry": point(2.351, 48.851), "$maxDistance": 2000}}}
    assert [d["_id"] for d in db.listings.find(near)] == ["bike", "bikes"]
    box = {"type": "Polygon", "coordinates": [[[2.3, 48.8], [2.4, 48.8], [2.4, 48.9], [2.3, 48.9], [2.3, 48.8]]]}
    assert sorted(d["_id"] for d in db.listings.find({"loc": {"$geoWithin": {"$geometry": box}}})) == ["bike", "bikes"]
    # $text, best first: title matches weigh five times; the due listing is hidden.
    score = {"score": {"$meta": "textScore"}}
    found = list(db.listings.find({"$text": {"$search": "bike"}}, score).sort([("score", {"$meta": "textScore"})]))
    assert [d["_id"] for d in found] == ["bikes", "bike", "sofa"]
    assert found[0]["score"] > found[1]["score"] > found[2]["score"] > 0
    assert [d["_id"] for d in db.listings.find({"$text": {"$search": "\"bike rack\""}})] == ["sofa"]
    ranked = list(db.listings.aggregate([
        {"$match": {"$text": {"$search": "bike -kids"}}},
        {"$sort": {"score": {"$meta": "textScore"}}},
        {"$project": {"_id": 1, "score": {"$meta": "textScore"}}},
    ]))
    assert [d["_id"] for d in ranked] == ["bike", "sofa"]
    with pytest.raises(OperationFailure) as refused:
        db.listings.find_one({"$text": {"$search": "bike", "$language": "klingon"}})
    assert refused.value.code == 2
    with pytest.raises(OperationFailure) as refused:
        db.listings.insert_one({"title": "x", "language": "klingon"})
    assert refused.value.code == 17262
    # The listings expire, and their words and locations with them.
    deadline = time.monotonic() + 30
    while db.command("validate", "listings")["nrecords"] > 0:
        assert time.monotonic() < deadline, "listings did not expire"
        time.sleep(0.1)
    assert list(db.listings.find({"$text": {"$search": "bike"}})) == []
    keys = db.command("validate", "listings")["keysPerIndex"]
    assert keys["words"] == 0 and keys["loc_2dsphere"] == 0


def test_a_tenant_prefixed_text_index_searches_one_tenant_at_a_time(db):
    db.notes.create_index([("tenant", pymongo.ASCENDING), ("body", pymongo.TEXT)])
    info = db.notes.index_information()["tenant_1_body_text"]
    assert info["key"] == [("tenant", 1), ("_fts", "text"), ("_ftsx", 1)]
    db.notes.insert_many([
        {"_id": 1, "tenant": "acme", "body": "quarterly coffee budget"},
        {"_id": 2, "tenant": "globex", "body": "coffee machine"},
    ])
    found = db.notes.find({"tenant": "acme", "$text": {"$search": "coffee"}})
    assert [d["_id"] for d in found] == [1]
    with pytest.raises(OperationFailure) as refused:
        list(db.notes.find({"$text": {"$search": "coffee"}}))
    assert refused.value.code == 291
