"""pymongo against ebbd: a session document is never returned after its
expiry, while 20,000 documents/s churn through the same collection.

The session-store pattern (connect-mongo, express-session stores): a TTL index
with expireAfterSeconds 0 on `expires`, each document due at the Date it holds.
MongoDB shows such a document until its monitor's next pass (up to 60 s);
ebbd hides it from the moment it is due. The reader takes the time before it
sends each query: ebbd's clock is read after that, so a document returned to a
query sent at or after the due time was returned expired.
"""
import datetime
import os
import threading
import time

import pymongo

RATE = 20_000  # documents/s
BATCH = 500


def utc_ms(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)


def churn(uri, dbname, stop, achieved):
    """Inserts RATE documents/s, each due a second later, until stopped."""
    client = pymongo.MongoClient(uri)
    coll = client[dbname].sessions
    started = time.monotonic()
    sent = 0
    while not stop.is_set():
        ahead = sent - (time.monotonic() - started) * RATE
        if ahead > 0:
            time.sleep(ahead / RATE)
            continue
        due = utc_ms(int(time.time() * 1000) + 1000)
        coll.insert_many([{"expires": due, "user": i} for i in range(BATCH)], ordered=False)
        sent += BATCH
    achieved.append(sent / (time.monotonic() - started))
    client.close()


def test_a_session_vanishes_exactly_at_its_expiry_under_churn(client, db):
    db.sessions.create_index("expires", expireAfterSeconds=0)
    db.sessions.create_index("user")
    stop, achieved = threading.Event(), []
    churner = threading.Thread(target=churn, args=(os.environ["EBB_URI"], db.name, stop, achieved))
    churner.start()
    try:
        time.sleep(1.5)  # the churn reaches its steady state: documents expire as others arrive
        due_ms = int(time.time() * 1000) + 2000
        db.sessions.insert_one({"_id": "session", "expires": utc_ms(due_ms), "user": "ann"})
        seen_before, returned_after, polls_after = 0, [], 0
        while True:
            sent_ms = int(time.time() * 1000)
            found = db.sessions.find_one({"_id": "session"})
            if sent_ms >= due_ms:
                polls_after += 1
                if found is not None:
                    returned_after.append(sent_ms - due_ms)
            elif found is not None:
                seen_before += 1
            # A second past due and a hundred polls after it, whichever is
            # later (a loaded machine polls slowly), within ten seconds.
            if sent_ms > due_ms + 1000 and polls_after >= 100 or sent_ms > due_ms + 10_000:
                break
            time.sleep(0.001)
    finally:
        stop.set()
        churner.join()
    assert seen_before > 0, "the session was never seen before its expiry"
    assert polls_after >= 100
    assert returned_after == [], f"returned {len(returned_after)} times after its expiry (ms past due: {returned_after[:10]})"
    assert achieved[0] >= 0.5 * RATE, f"churn reached only {achieved[0]:.0f} documents/s"
    # Nothing expired is counted or found either.
    now = utc_ms(int(time.time() * 1000))
    assert db.sessions.count_documents({"expires": {"$lte": now}}) == 0
    assert db.sessions.find_one({"expires": {"$lte": now}}) is None
