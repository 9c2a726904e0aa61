"""pymongo against ebbd: the manual's time-series TTL example, weather24h.

The "TTL Indexes" manual page creates weather24h with granularity "hours" and
expireAfterSeconds 86400; as in mongod, a whole bucket goes when its start +
bucketMaxSpanSeconds (30 days for "hours") + 86400 s has passed, so a measurement is kept
for up to about 31 days. The page's partial TTL index example passes expireAfterSeconds as
createIndex's third argument (commitQuorum in mongosh) and names eventlog; the test uses the
corrected form, on weather24h with expireAfterSeconds among the options. The node runs on
the system clock, so the measurements are placed in the past relative to now.
"""
import datetime
import time

DAY = datetime.timedelta(days=1)
HOUR = datetime.timedelta(hours=1)


def ttl_deleted(client):
    return client.admin.command("serverStatus")["metrics"]["ttl"]["deletedDocuments"]


def day_start(t):
    return t.replace(hour=0, minute=0, second=0, microsecond=0)


def wait_for(check, what, seconds=10):
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def create_weather24h(db):
    # The manual page's example, verbatim.
    db.create_collection(
        "weather24h",
        timeseries={"timeField": "timestamp", "metaField": "sensor", "granularity": "hours"},
        expireAfterSeconds=86400,
    )


def test_weather24h_is_listed_as_mongod_lists_it(db):
    create_weather24h(db)
    listed = {c["name"]: c for c in db.list_collections()}
    ts = listed["weather24h"]
    assert ts["type"] == "timeseries"
    assert ts["options"]["timeseries"] == {
        "timeField": "timestamp",
        "metaField": "sensor",
        "granularity": "hours",
        "bucketMaxSpanSeconds": 2592000,
    }
    assert ts["options"]["expireAfterSeconds"] == 86400
    assert listed["system.buckets.weather24h"]["type"] == "collection"
    # Creating it again with the same options is fine (pymongo's
    # create_collection refuses an existing name itself, so send the command).
    db.command("create", "weather24h",
               timeseries={"timeField": "timestamp", "metaField": "sensor", "granularity": "hours"},
               expireAfterSeconds=86400)


def test_weather24h_keeps_data_for_the_bucket_span(client, db):
    create_weather24h(db)
    now = datetime.datetime.now(datetime.timezone.utc)
    before = ttl_deleted(client)
    old = day_start(now - 32 * DAY)
    recent = now - 25 * DAY
    db.weather24h.insert_many([
        {"timestamp": old, "sensor": "MDB_NYC", "temp": 10},
        {"timestamp": old + HOUR, "sensor": "MDB_NYC", "temp": 11},
        # 25 days old: far past 24 hours, but its bucket (another sensor's,
        # so another bucket) has not run its span.
        {"timestamp": recent, "sensor": "MDB_SF", "temp": 12},
    ])
    wait_for(lambda: db.weather24h.count_documents({}) == 1, "the old bucket is still visible")
    assert [d["temp"] for d in db.weather24h.find()] == [12]
    wait_for(lambda: ttl_deleted(client) - before >= 1, "the old bucket was not deleted")
    # One bucket (of two measurements) deleted: the counter counts buckets.
    assert ttl_deleted(client) - before == 1
    assert db["system.buckets.weather24h"].count_documents({}) == 1


def test_corrected_partial_ttl_index_expires_one_sensor_sooner(db):
    create_weather24h(db)
    # The corrected form of the manual page's partial TTL index example.
    name = db.weather24h.create_index(
        [("timestamp", 1)],
        expireAfterSeconds=3600,
        partialFilterExpression={"sensor": {"$eq": "MDB_NYC"}},
    )
    info = db.weather24h.index_information()[name]
    assert info["key"] == [("timestamp", 1)]
    assert info["expireAfterSeconds"] == 3600
    assert info["partialFilterExpression"] == {"sensor": {"$eq": "MDB_NYC"}}

    now = datetime.datetime.now(datetime.timezone.utc)
    # A bucket start at least 30 days + 1 hour ago: due by the index.
    start = day_start(now - 30 * DAY - HOUR)
    db.weather24h.insert_many([
        {"timestamp": start, "sensor": "MDB_NYC", "temp": 1},
        {"timestamp": start, "sensor": "MDB_SF", "temp": 2},
    ])
    wait_for(lambda: db.weather24h.count_documents({"sensor": "MDB_NYC"}) == 0,
             "the NYC bucket did not expire by the partial index")
    if start + 31 * DAY > now:
        # Not yet due by the collection's own 86400 s.
        assert db.weather24h.count_documents({"sensor": "MDB_SF"}) == 1


def test_partial_ttl_index_rules(db):
    import pymongo.errors
    create_weather24h(db)

    def code_of(keys, **opts):
        try:
            db.weather24h.create_index(keys, **opts)
        except pymongo.errors.OperationFailure as e:
            return e.code
        return None

    assert code_of([("timestamp", 1)], expireAfterSeconds=60) == 72
    assert code_of([("timestamp", 1)], expireAfterSeconds=60,
                   partialFilterExpression={"temp": {"$gt": 5}}) == 72
    assert code_of([("sensor", 1)], expireAfterSeconds=60,
                   partialFilterExpression={"sensor": "x"}) == 72
    assert code_of([("timestamp", 1), ("sensor", 1)], expireAfterSeconds=60,
                   partialFilterExpression={"sensor": "x"}) == 67


def test_measurement_without_a_date_is_refused(db):
    import pymongo.errors
    create_weather24h(db)
    try:
        db.weather24h.insert_one({"timestamp": "today", "sensor": "MDB_NYC"})
        raise AssertionError("insert succeeded")
    except pymongo.errors.WriteError as e:
        assert e.code == 2
    assert db.weather24h.count_documents({}) == 0


def test_secondary_index_and_update_of_a_measurement(db):
    # As in jstests/core/timeseries/ddl/timeseries_index.js and
    # write/timeseries_update_one.js: create_index takes the user's key pattern and
    # index_information shows it; update_one changes one measurement, moving it to a
    # bucket of its new meta; the meta index finds it there.
    create_weather24h(db)
    coll = db["weather24h"]
    now = day_start(datetime.datetime.now(datetime.timezone.utc))
    coll.insert_many([
        {"_id": i, "timestamp": now + i * HOUR, "sensor": {"site": "MDB_NYC"}, "temp": 10 + i}
        for i in range(3)
    ])
    name = coll.create_index([("sensor.site", 1), ("timestamp", -1)])
    assert name == "sensor.site_1_timestamp_-1"
    info = coll.index_information()
    assert info[name]["key"] == [("sensor.site", 1), ("timestamp", -1)]
    result = coll.update_one({"_id": 1}, {"$set": {"sensor.site": "MDB_SF", "temp": 99}})
    assert (result.matched_count, result.modified_count) == (1, 1)
    moved = list(coll.find({"sensor.site": "MDB_SF"}).hint(name))
    assert [(m["_id"], m["temp"]) for m in moved] == [(1, 99)]
    assert sorted(m["_id"] for m in coll.find({"sensor.site": "MDB_NYC"})) == [0, 2]
    plan = coll.find({"sensor.site": "MDB_SF"}).explain()["queryPlanner"]["winningPlan"]
    while plan.get("stage") != "IXSCAN":
        plan = plan["inputStage"]
    assert plan["indexName"] == name
    coll.drop_index([("sensor.site", 1), ("timestamp", -1)])
    assert name not in coll.index_information()
