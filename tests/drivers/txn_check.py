"""pymongo's transactions against the set whose URI is the first argument (a
three-member set and a one-member set in CI): with_transaction moves money
between two documents and writes a ledger entry in another collection, all at
once and seen by nobody before the commit; two threads racing on one account
are run again by the driver until each transfer commits once; an aborted
transaction leaves nothing; a conflicting commit is WriteConflict with
TransientTransactionError."""
import sys
import threading

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

print("pymongo: with_transaction (commit, conflicts retried, abort, WriteConflict)")
