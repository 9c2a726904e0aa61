"""pymongo against ebbd: a wildcard index over documents of many shapes
(event attributes an application does not know in advance), used by a
query on any one path, with the answers a collection scan gives."""
import pymongo
import pytest
from pymongo.errors import OperationFailure


def ixscan(plan):
    while "inputStage" in plan:
        plan = plan["inputStage"]
    return plan


def test_attributes_of_any_shape_are_found_through_one_wildcard_index(db):
    db.events.create_index([("attrs.$**", pymongo.ASCENDING)])
    db.events.insert_many([
        {"_id": 1, "attrs": {"user": "ann", "tags": ["a", "b"]}},
        {"_id": 2, "attrs": {"user": "bob", "device": {"os": "linux", "ver": 6}}},
        {"_id": 3, "attrs": {"items": [{"sku": "x1", "qty": 2}, {"sku": "y2", "qty": 5}]}},
        {"_id": 4, "other": {"user": "ann"}},
    ])
    queries = [
        ({"attrs.user": "ann"}, [1]),
        ({"attrs.tags": "b"}, [1]),
        ({"attrs.device.ver": {"$gte": 5}}, [2]),
        ({"attrs.items.qty": {"$gt": 3}}, [3]),
        ({"attrs.device": {"$exists": True}}, [2]),
    ]
    for query, expected in queries:
        plan = db.events.find(query).explain()["queryPlanner"]["winningPlan"]
        scan = ixscan(plan)
        assert scan["stage"] == "IXSCAN", (query, plan)
        assert scan["indexName"] == "attrs.$**_1"
        path = next(iter(query))
        assert scan["keyPattern"] == {"$_path": 1, path: 1}
        assert sorted(d["_id"] for d in db.events.find(query)) == expected
        scanned = db.events.find(query).hint([("$natural", 1)])
        assert sorted(d["_id"] for d in scanned) == expected
    # Outside the subtree the index holds nothing: a collection scan.
    plan = db.events.find({"other.user": "ann"}).explain()["queryPlanner"]["winningPlan"]
    assert ixscan(plan)["stage"] == "COLLSCAN"
    with pytest.raises(OperationFailure) as refused:
        db.events.create_index([("$**", 1)], unique=True)
    assert refused.value.code == 67
    with pytest.raises(OperationFailure) as refused:
        db.events.create_index([("$**", 1)], wildcardProjection={"a": 1, "b": 0})
    assert refused.value.code == 31254
