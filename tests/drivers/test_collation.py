"""pymongo against ebbd: a case-insensitive session lookup with collation.
Expected results follow the MongoDB manual's "Collation" page:
strength 2 compares letters and accents, not case."""
import pytest
from pymongo.collation import Collation, CollationStrength
from pymongo.errors import DuplicateKeyError, OperationFailure

CI = Collation(locale="en_US", strength=CollationStrength.SECONDARY)


def test_case_insensitive_session_lookup(db):
    sessions = db.sessions
    sessions.create_index("user", unique=True, collation=CI)
    sessions.insert_many([{"user": "Alice", "sid": "s1"}, {"user": "bob", "sid": "s2"}])

    found = sessions.find_one({"user": "ALICE"}, collation=CI)
    assert found is not None and found["sid"] == "s1"
    assert sessions.find_one({"user": "ALICE"}) is None

    # The unique index is case-insensitive too.
    with pytest.raises(DuplicateKeyError):
        sessions.insert_one({"user": "alice", "sid": "s3"})

    assert sessions.count_documents({"user": {"$in": ["ALICE", "BOB"]}}, collation=CI) == 2
    r = sessions.update_many({"user": "BoB"}, {"$set": {"seen": True}}, collation=CI)
    assert r.matched_count == 1
    doc = sessions.find_one_and_update({"user": "aLiCe"}, {"$set": {"sid": "s9"}}, collation=CI)
    assert doc["sid"] == "s1"
    assert sessions.delete_many({"user": "ALICE"}, collation=CI).deleted_count == 1
    assert sessions.count_documents({}) == 1


def test_collection_default_collation(db):
    db.create_collection("tokens", collation=CI)
    db.tokens.insert_many([{"k": "ping"}, {"k": "PING"}])
    assert db.tokens.count_documents({"k": "Ping"}) == 2
    simple = Collation(locale="simple")
    assert db.tokens.count_documents({"k": "Ping"}, collation=simple) == 0
    info = db.tokens.options()
    assert info["collation"]["strength"] == 2 and info["collation"]["locale"] == "en_US"


def test_bad_collation_is_refused(db):
    with pytest.raises(OperationFailure) as e:
        db.things.find_one({}, collation=Collation(locale="xx"))
    assert e.value.code == 2
