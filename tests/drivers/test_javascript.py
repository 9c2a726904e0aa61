"""pymongo against ebbd: server-side JavaScript as an application sends it
($where through find and Cursor.where, $function in an aggregation,
$accumulator in $group), and a runaway script stopped by max_time_ms."""
import pytest
from bson.code import Code
from pymongo.errors import ExecutionTimeout, OperationFailure


def test_scripts_filter_compute_and_accumulate(db):
    db.orders.insert_many([
        {"_id": 1, "item": "pen", "qty": 3, "price": 2.5},
        {"_id": 2, "item": "ink", "qty": 10, "price": 1.0},
        {"_id": 3, "item": "pad", "qty": 1, "price": 8.0},
    ])
    big = db.orders.find({"$where": "this.qty * this.price > 7"}).sort("_id")
    assert [d["_id"] for d in big] == [1, 2, 3]
    assert [d["_id"] for d in db.orders.find().where(Code("this.item[0] == 'p'")).sort("_id")] == [1, 3]
    totals = list(db.orders.aggregate([
        {"$project": {"total": {"$function": {
            "body": "function (q, p) { return q * p }", "args": ["$qty", "$price"], "lang": "js"}}}},
        {"$sort": {"_id": 1}},
    ]))
    assert [d["total"] for d in totals] == [7.5, 10.0, 8.0]
    grouped = list(db.orders.aggregate([{"$group": {"_id": None, "items": {"$accumulator": {
        "init": "function () { return [] }",
        "accumulate": "function (s, item) { return s.concat([item]) }",
        "accumulateArgs": ["$item"],
        "merge": "function (a, b) { return a.concat(b) }",
        "finalize": "function (s) { return s.sort().join(',') }",
        "lang": "js"}}}}]))
    assert grouped == [{"_id": None, "items": "ink,pad,pen"}]
    with pytest.raises(ExecutionTimeout):
        list(db.orders.find({"$where": "while (true) {}"}).max_time_ms(200))
    with pytest.raises(OperationFailure) as thrown:
        list(db.orders.find({"$where": "throw new Error('no')"}))
    assert thrown.value.code == 139
