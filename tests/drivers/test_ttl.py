"""pymongo against ebbd: the manual's TTL example on eventlog."""
import datetime
import time


def ttl_metrics(client):
    return client.admin.command("serverStatus")["metrics"]["ttl"]


def test_eventlog_expires_exactly_the_expired_documents(client, db):
    name = db.eventlog.create_index("lastModifiedDate", expireAfterSeconds=3600)
    assert name == "lastModifiedDate_1"
    info = db.eventlog.index_information()["lastModifiedDate_1"]
    assert info["expireAfterSeconds"] == 3600

    before = ttl_metrics(client)["deletedDocuments"]
    now = datetime.datetime.now(datetime.timezone.utc)
    db.eventlog.insert_many([
        {"_id": "two-hours-ago", "lastModifiedDate": now - datetime.timedelta(hours=2)},
        {"_id": "also-expired", "lastModifiedDate": now - datetime.timedelta(hours=1, minutes=1)},
        {"_id": "one-hour-ago-minus-a-minute", "lastModifiedDate": now - datetime.timedelta(minutes=59)},
        {"_id": "future", "lastModifiedDate": now + datetime.timedelta(days=1)},
        {"_id": "not-a-date", "lastModifiedDate": "2000-01-01"},
    ])
    was = client.admin.command("setParameter", 1, ttlMonitorSleepSecs=1)["was"]
    try:
        deadline = time.monotonic() + 10
        while db.eventlog.count_documents({}) > 3:
            assert time.monotonic() < deadline, "expired documents still present"
            time.sleep(0.05)
        remaining = sorted(d["_id"] for d in db.eventlog.find())
        assert remaining == ["future", "not-a-date", "one-hour-ago-minus-a-minute"]
        # Hidden from the moment they were due; the monitor deletes them.
        while ttl_metrics(client)["deletedDocuments"] - before < 2:
            assert time.monotonic() < deadline, "expired documents not deleted"
            time.sleep(0.05)
        assert ttl_metrics(client)["deletedDocuments"] - before == 2
        metrics = ttl_metrics(client)
        assert metrics["passes"] >= 1 and metrics["subPasses"] >= metrics["passes"]
    finally:
        client.admin.command("setParameter", 1, ttlMonitorSleepSecs=was)


def test_coll_mod_changes_expire_after_seconds(db):
    db.sessions.create_index("at", expireAfterSeconds=3600)
    r = db.command("collMod", "sessions", index={"keyPattern": {"at": 1}, "expireAfterSeconds": 60})
    assert (r["expireAfterSeconds_old"], r["expireAfterSeconds_new"]) == (3600, 60)
    assert db.sessions.index_information()["at_1"]["expireAfterSeconds"] == 60
