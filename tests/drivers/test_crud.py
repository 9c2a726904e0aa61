"""pymongo against ebbd: CRUD and indexes, results checked."""
import pymongo
import pytest
from pymongo.errors import DuplicateKeyError, OperationFailure


def test_insert_many_find_sort_limit_count(db):
    docs = [{"i": i, "group": i % 10, "name": f"n{i:05d}"} for i in range(10_000)]
    result = db.items.insert_many(docs)
    assert len(result.inserted_ids) == 10_000

    found = list(db.items.find({"group": 3, "i": {"$gte": 5000}}).sort("i", pymongo.DESCENDING).limit(5))
    assert [d["i"] for d in found] == [9993, 9983, 9973, 9963, 9953]

    assert db.items.count_documents({}) == 10_000
    assert db.items.count_documents({"group": {"$in": [1, 2]}}) == 2_000
    assert db.items.estimated_document_count() == 10_000

    everything = list(db.items.find({}, {"_id": 0, "i": 1}).sort("i", 1))
    assert [d["i"] for d in everything] == list(range(10_000))


def test_update_many_and_delete_many(db):
    db.items.insert_many([{"i": i, "even": i % 2 == 0} for i in range(1000)])
    r = db.items.update_many({"even": True}, {"$set": {"tag": "e"}, "$inc": {"i": 1000}})
    assert (r.matched_count, r.modified_count) == (500, 500)
    assert db.items.count_documents({"tag": "e"}) == 500
    assert db.items.find_one({"i": 1000})["tag"] == "e"

    r = db.items.delete_many({"even": False})
    assert r.deleted_count == 500
    assert db.items.count_documents({}) == 500

    r = db.items.update_one({"i": -1}, {"$set": {"x": 1}}, upsert=True)
    assert r.upserted_id is not None
    assert db.items.find_one({"_id": r.upserted_id}) == {"_id": r.upserted_id, "i": -1, "x": 1}


def test_indexes_create_list_drop_and_duplicate_key(db):
    assert db.users.create_index("email", unique=True) == "email_1"
    assert db.users.create_index([("age", pymongo.DESCENDING), ("name", 1)]) == "age_-1_name_1"
    info = db.users.index_information()
    assert set(info) == {"_id_", "email_1", "age_-1_name_1"}
    assert info["email_1"]["unique"] is True
    assert info["age_-1_name_1"]["key"] == [("age", -1), ("name", 1)]

    db.users.insert_one({"email": "a@x", "age": 30})
    with pytest.raises(DuplicateKeyError) as e:
        db.users.insert_one({"email": "a@x", "age": 31})
    assert "E11000 duplicate key error collection" in str(e.value)
    assert "email_1" in str(e.value)

    plan = db.users.find({"email": "a@x"}).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["indexName"] == "email_1"

    db.users.drop_index("email_1")
    assert set(db.users.index_information()) == {"_id_", "age_-1_name_1"}
    db.users.insert_one({"email": "a@x", "age": 32})
    assert db.users.count_documents({"email": "a@x"}) == 2


def test_find_one_and_update_and_errors(db):
    db.c.insert_one({"_id": 1, "n": 1})
    after = db.c.find_one_and_update({"_id": 1}, {"$inc": {"n": 1}}, return_document=pymongo.ReturnDocument.AFTER)
    assert after == {"_id": 1, "n": 2}
    with pytest.raises(OperationFailure) as e:
        db.c.update_one({"_id": 1}, {"$frob": {"n": 1}})
    assert e.value.code == 9
    with pytest.raises(OperationFailure) as e:
        db.command("noSuchCommand")
    assert e.value.code == 59


def test_a_hashed_index_serves_equality_with_mongods_hashes(db):
    db.tokens.create_index([("owner", pymongo.HASHED)])
    assert db.tokens.index_information()["owner_hashed"]["key"] == [("owner", "hashed")]
    db.tokens.insert_many([{"_id": i, "owner": i % 7} for i in range(70)])
    assert sorted(d["_id"] for d in db.tokens.find({"owner": 3})) == list(range(3, 70, 7))
    plan = db.tokens.find({"owner": 42}).explain()["queryPlanner"]["winningPlan"]
    assert plan["inputStage"]["indexName"] == "owner_hashed"
    # convertShardKeyToHashed(42) in the mongo shell.
    assert plan["inputStage"]["indexBounds"] == {"owner": ["[-944302157085130861, -944302157085130861]"]}
    with pytest.raises(OperationFailure) as refused:
        db.tokens.insert_one({"owner": [1, 2]})
    assert refused.value.code == 16766


def test_a_view_reads_through_its_pipeline_and_refuses_writes(db):
    db.orders.insert_many([{"_id": i, "status": "open" if i % 2 else "done", "n": i} for i in range(6)])
    db.create_collection("open_orders", viewOn="orders", pipeline=[{"$match": {"status": "open"}}])
    view = db.open_orders
    assert [d["_id"] for d in view.find({}, sort=[("n", -1)], limit=2)] == [5, 3]
    assert view.count_documents({"n": {"$gt": 1}}) == 2
    assert sorted(view.distinct("n")) == [1, 3, 5]
    assert list(view.aggregate([{"$group": {"_id": None, "s": {"$sum": "$n"}}}])) == [{"_id": None, "s": 9}]
    views = {c["name"]: c for c in db.list_collections(filter={"type": "view"})}
    assert views["open_orders"]["options"]["viewOn"] == "orders"
    with pytest.raises(OperationFailure) as e:
        view.insert_one({"n": 1})
    assert e.value.code == 166
    db.drop_collection("open_orders")
    assert "open_orders" not in db.list_collection_names()
