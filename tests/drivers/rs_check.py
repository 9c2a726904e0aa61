"""pymongo against the three-member set rs_check.js initiated: the driver finds
the primary from ?replicaSet=rs0, writes with w: "majority" (retryable writes on,
pymongo's default) and reads the writes back from a secondary; a causally
consistent session reads each of its own w: 1 writes from a secondary; a reader
with maxStalenessSeconds finds the secondaries fresh; watch() sees every change
and resumes from a token, also on a secondary, and with showExpandedEvents the
catalog's changes; a TTL index with ebb's archiveTo keeps what it expires.
Transactions: txn_check.py."""
import datetime
import os
import sys
import time

import pymongo
from pymongo.errors import NotPrimaryError

hosts = os.environ["EBB_RS_HOSTS"]
client = pymongo.MongoClient(f"mongodb://{hosts}/?replicaSet=rs0", serverSelectionTimeoutMS=30000)
coll = client.rs.check.with_options(write_concern=pymongo.WriteConcern(w="majority"))
coll.insert_many([{"_id": i, "n": 0} for i in range(10)])
coll.update_one({"_id": 3}, {"$inc": {"n": 1}})
primary = client.primary
assert primary is not None, "no primary"
secondaries = client.secondaries
assert len(secondaries) == 2, secondaries

reader = client.rs.check.with_options(read_preference=pymongo.ReadPreference.SECONDARY)
deadline = time.time() + 30
while True:
    docs = list(reader.find().sort("_id"))
    if len(docs) == 10 and docs[3]["n"] == 1:
        break
    assert time.time() < deadline, f"a secondary did not apply the writes: {docs}"
    time.sleep(0.05)

with client.start_session(causal_consistency=True) as session:
    causal = client.rs.causal.with_options(
        write_concern=pymongo.WriteConcern(w=1), read_preference=pymongo.ReadPreference.SECONDARY
    )
    for i in range(50):
        causal.insert_one({"_id": i}, session=session)
        assert causal.find_one({"_id": i}, session=session) is not None, f"write {i} not read back"
    assert session.operation_time is not None, "no operationTime reached the session"

fresh = pymongo.MongoClient(
    f"mongodb://{hosts}/?replicaSet=rs0&readPreference=secondary&maxStalenessSeconds=90",
    serverSelectionTimeoutMS=30000,
)
assert fresh.rs.check.count_documents({}) == 10

host, port = next(iter(secondaries))
direct = pymongo.MongoClient(host, port, directConnection=True)
try:
    direct.rs.check.insert_one({"x": 1})
    sys.exit("a secondary took a write")
except NotPrimaryError as e:
    assert e.details and e.details.get("code") == 10107, e.details

def events(stream, n):
    out = []
    deadline = time.time() + 30
    while len(out) < n:
        assert time.time() < deadline, f"only {len(out)} of {n} events: {out}"
        change = stream.try_next()
        if change is not None:
            out.append(change)
    return out


watched = client.rs.watched.with_options(write_concern=pymongo.WriteConcern(w="majority"))
with watched.watch(full_document="updateLookup") as stream:
    watched.insert_one({"_id": 1, "n": 1})
    watched.update_one({"_id": 1}, {"$inc": {"n": 1}})
    # updateLookup reads the document as it is when the event is read.
    seen = events(stream, 2)
    watched.replace_one({"_id": 1}, {"n": 10})
    watched.delete_one({"_id": 1})
    seen += events(stream, 2)
kinds = [e["operationType"] for e in seen]
assert kinds == ["insert", "update", "replace", "delete"], kinds
assert seen[1]["updateDescription"]["updatedFields"] == {"n": 2}, seen[1]
assert seen[1]["fullDocument"] == {"_id": 1, "n": 2}, seen[1]
assert all(e["documentKey"] == {"_id": 1} for e in seen), seen
secondary_reader = client.rs.watched.with_options(
    read_preference=pymongo.ReadPreference.SECONDARY
)
with secondary_reader.watch(resume_after=seen[1]["_id"]) as resumed:
    again = events(resumed, 2)
assert [e["_id"] for e in again] == [e["_id"] for e in seen[2:]], again

# showExpandedEvents: the catalog's changes, with each collection's UUID.
expanded_db = client.get_database("rs_ddl", write_concern=pymongo.WriteConcern(w="majority"))
with expanded_db.watch(show_expanded_events=True) as stream:
    expanded_db.create_collection("made")
    expanded_db.made.create_index("k")
    expanded_db.made.drop_index("k_1")
    expanded_db.made.drop()
    ddl = events(stream, 4)
assert [e["operationType"] for e in ddl] == ["create", "createIndexes", "dropIndexes", "drop"], ddl
assert ddl[1]["operationDescription"]["indexes"][0]["key"] == {"k": 1}, ddl[1]
assert len({e["collectionUUID"] for e in ddl}) == 1, ddl

# Archive on expire (ebb's archiveTo): each expired document, kept.
archived_db = client.get_database("rs_archive", write_concern=pymongo.WriteConcern(w="majority"))
archived_db.sessions.create_index("at", expireAfterSeconds=0, archiveTo="sessions_expired")
specs = {i["name"]: i for i in archived_db.sessions.list_indexes()}
assert specs["at_1"]["archiveTo"] == "sessions_expired", specs
past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=1)
archived_db.sessions.insert_many([{"_id": i, "user": f"u{i}", "at": past} for i in range(20)])
deadline = time.time() + 30
while archived_db.sessions_expired.count_documents({}) < 20:
    assert time.time() < deadline, "the expired sessions were not archived"
    time.sleep(0.05)
kept = archived_db.sessions_expired.find_one({"doc.user": "u7"})
assert kept["doc"]["_id"] == 7 and kept["expiredBy"]["index"] == "at_1", kept

print(
    f"pymongo: majority writes through {primary[0]}:{primary[1]}, read back from a secondary; "
    "causal reads on a secondary; maxStalenessSeconds; watch() resumed on a secondary; "
    "expanded events; archive on expire"
)
