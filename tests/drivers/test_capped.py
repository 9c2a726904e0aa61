"""pymongo against ebbd: capped collections and the queue pattern.

The manual's "Tailable Cursors" page: a tailable awaitData cursor on a
capped collection stays open and returns documents inserted after it
opened; pymongo's CursorType.TAILABLE_AWAIT waits in getMore for them.
"""
import threading
import time

import pytest
from pymongo import CursorType
from pymongo.errors import OperationFailure


def test_capped_collection_keeps_the_newest_in_insertion_order(db):
    db.create_collection("log", capped=True, size=100_000, max=3)
    opts = db.log.options()
    assert opts["capped"] is True and opts["size"] == 100_000 and opts["max"] == 3
    for i in [5, 1, 4, 2, 3]:
        db.log.insert_one({"_id": i})
    assert [d["_id"] for d in db.log.find()] == [4, 2, 3]
    assert [d["_id"] for d in db.log.find().sort("$natural", -1)] == [3, 2, 4]


def test_capped_requires_size(db):
    with pytest.raises(OperationFailure) as e:
        db.command({"create": "nosize", "capped": True})
    assert e.value.code == 72


def test_tailable_await_cursor_gets_a_document_inserted_after_opening(db):
    db.create_collection("queue", capped=True, size=100_000)
    db.queue.insert_one({"_id": 0, "job": "first"})
    cursor = db.queue.find(cursor_type=CursorType.TAILABLE_AWAIT).max_await_time_ms(5000)
    assert next(cursor)["_id"] == 0

    got = {}

    def consume():
        got["doc"] = next(cursor)
        got["at"] = time.monotonic()

    reader = threading.Thread(target=consume)
    reader.start()
    # Poll (with a deadline) until the reader's getMore is waiting.
    deadline = time.monotonic() + 10
    while not any("getMore" in op.get("command", {}) for op in db.client.admin.command("currentOp")["inprog"]):
        assert time.monotonic() < deadline, "the getMore never started waiting"
    inserted = time.monotonic()
    db.queue.insert_one({"_id": 1, "job": "second"})
    reader.join(timeout=10)
    assert got["doc"] == {"_id": 1, "job": "second"}
    # Woken by the insert, not by the 5 s await timeout.
    assert got["at"] - inserted < 1.0
    assert cursor.alive
    cursor.close()
