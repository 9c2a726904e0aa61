"""pymongo's transactions against the set whose URI is the first argument (a
three-member set and a one-member set in CI): with_transaction moves money
between two documents and writes a ledger entry in another collection, all at
once and seen by nobody before the commit; two threads racing on one account
are run again by the driver until each transfer commits once; an aborted
transaction leaves nothing; a conflicting commit is WriteConflict with
TransientTransactionError; a due document a transaction writes is hidden at
once and expired after the commit. With --crash (a three-member set on this
machine), kill -9 of the primary between statements and during a commit (the
killed member started again from its own command line): the set keeps all of
a transaction or none, a commit sent again says which, and with_transaction
commits on the new primary."""
import datetime
import os
import signal
import subprocess
import sys
import threading
import time

import pymongo
from pymongo.errors import OperationFailure

client = pymongo.MongoClient(sys.argv[1], serverSelectionTimeoutMS=30000)
bank = client.get_database("txn_check", write_concern=pymongo.WriteConcern(w="majority"))
client.drop_database("txn_check")
bank.accounts.insert_many([{"_id": "a", "balance": 100}, {"_id": "b", "balance": 0}])
bank.create_collection("ledger")


def transfer(session, amount):
    a = bank.accounts.find_one({"_id": "a"}, session=session)
    bank.accounts.update_one({"_id": "a"}, {"$set": {"balance": a["balance"] - amount}}, session=session)
    bank.accounts.update_one({"_id": "b"}, {"$inc": {"balance": amount}}, session=session)
    entry = bank.ledger.insert_one({"amount": amount}, session=session).inserted_id
    # Inside, the transaction sees its own writes; outside, nothing has moved.
    assert bank.ledger.find_one({"_id": entry}, session=session) is not None
    assert bank.ledger.find_one({"_id": entry}) is None


with client.start_session() as session:
    session.with_transaction(lambda s: transfer(s, 10))
assert bank.accounts.find_one({"_id": "a"})["balance"] == 90
assert bank.ledger.count_documents({}) == 1


def worker():
    with client.start_session() as session:
        for _ in range(10):
            session.with_transaction(lambda s: transfer(s, 1))


threads = [threading.Thread(target=worker) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
accounts = {d["_id"]: d["balance"] for d in bank.accounts.find()}
assert accounts == {"a": 70, "b": 30}, accounts
assert bank.ledger.count_documents({}) == 21

with client.start_session() as session:
    session.start_transaction()
    bank.ledger.insert_one({"amount": -1}, session=session)
    session.abort_transaction()
assert bank.ledger.count_documents({"amount": -1}) == 0

first, second = client.start_session(), client.start_session()
first.start_transaction()
second.start_transaction()
bank.accounts.update_one({"_id": "a"}, {"$inc": {"balance": -1}}, session=first)
bank.accounts.update_one({"_id": "a"}, {"$inc": {"balance": -2}}, session=second)
first.commit_transaction()
try:
    second.commit_transaction()
    sys.exit("two transactions that wrote one document both committed")
except OperationFailure as e:
    assert e.code == 112 and e.has_error_label("TransientTransactionError"), e.details
assert bank.accounts.find_one({"_id": "a"})["balance"] == 69

# TTL and transactions: a due document is hidden from the transaction that
# writes it and from everyone after the commit, and the monitor deletes it.
now = datetime.datetime.now(datetime.timezone.utc)
bank.sessions.create_index("at", expireAfterSeconds=0)
deleted_before = client.admin.command("serverStatus")["metrics"]["ttl"]["deletedDocuments"]
with client.start_session() as session:
    def expiring(s):
        bank.sessions.insert_many(
            [{"_id": "due", "at": now - datetime.timedelta(hours=1)},
             {"_id": "live", "at": now + datetime.timedelta(hours=1)}],
            session=s,
        )
        assert [d["_id"] for d in bank.sessions.find({}, session=s)] == ["live"]
    session.with_transaction(expiring)
assert [d["_id"] for d in bank.sessions.find()] == ["live"]
deadline = time.time() + 30
while client.admin.command("serverStatus")["metrics"]["ttl"]["deletedDocuments"] == deleted_before:
    assert time.time() < deadline, "the committed due document was not expired"
    time.sleep(0.05)

checked = "commit, conflicts retried, abort, WriteConflict, TTL"
if "--crash" in sys.argv:
    restarted = []

    def kill_primary():
        """Kills the primary with SIGKILL; returns how to start it again."""
        argv = client.admin.command("getCmdLineOpts")["argv"]
        pid = client.admin.command("serverStatus")["pid"]
        os.kill(pid, signal.SIGKILL)
        return argv

    def start_again(argv):
        restarted.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.time() + 60
        while len(client.nodes) < 3 or len(client.secondaries) < 2:
            assert time.time() < deadline, "the killed member did not rejoin"
            time.sleep(0.1)

    crash = bank.get_collection("crash")
    bank.create_collection("crash")
    # Between statements: the open transaction is gone with its primary.
    with client.start_session() as session:
        session.start_transaction()
        crash.insert_many([{"round": 0, "i": i} for i in range(5)], session=session)
        argv = kill_primary()
        try:
            session.commit_transaction()
        except OperationFailure as e:
            assert e.has_error_label("TransientTransactionError") or e.code == 251, e.details
        except pymongo.errors.PyMongoError:
            pass
    held = crash.count_documents({"round": 0})
    assert held in (0, 5), held
    with client.start_session() as session:
        session.with_transaction(
            lambda s: crash.insert_many([{"round": 1, "i": i} for i in range(5)], session=s)
        )
    assert crash.count_documents({"round": 1}) == 5
    start_again(argv)

    # During the commit: all of it or none, and a commit sent again says which.
    for round_, delay in [(2, 0.0), (3, 0.005)]:
        session = client.start_session()
        session.start_transaction(write_concern=pymongo.WriteConcern(w="majority"))
        crash.insert_many([{"round": round_, "i": i} for i in range(50)], session=session)
        argv = client.admin.command("getCmdLineOpts")["argv"]
        pid = client.admin.command("serverStatus")["pid"]
        outcome = {}

        def commit():
            try:
                session.commit_transaction()
                outcome["first"] = True
            except pymongo.errors.PyMongoError:
                outcome["first"] = False

        committer = threading.Thread(target=commit)
        committer.start()
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)
        committer.join()
        try:
            session.commit_transaction()
            again = True
        except pymongo.errors.PyMongoError:
            again = False
        held = crash.count_documents({"round": round_})
        if outcome["first"] or again:
            assert held == 50, (outcome, again, held)
        else:
            assert held == 0, (outcome, again, held)
        session.end_session()
        start_again(argv)
    for p in restarted:
        p.kill()
        p.wait()
    checked += "; kill -9 of the primary between statements and during commits"
print(f"pymongo: with_transaction ({checked})")
