//! Server-side JavaScript as mongod runs it: `$where` in finds, counts
//! and writes, `$function` in expressions, `$accumulator` in `$group`,
//! values crossing as the shell shows them, every script bounded by
//! `maxTimeMS`, `killOp` and a heap limit, and `security.javascript_enabled
//! = false` refusing all three as `--noscripting` does.

use std::time::Duration;

use futures::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Document, doc, oid::ObjectId};
use mongodb::{Collection, Database};

use crate::common::{TestNode, agg, all, eventually, expect_code, ids, str_ids};

async fn people(db: &Database) -> Collection<Document> {
    let c = db.collection::<Document>("people");
    c.insert_many(vec![
        doc! { "_id": 1, "name": "ann", "age": 31, "tags": ["a", "b"] },
        doc! { "_id": 2, "name": "bob", "age": 17 },
        doc! { "_id": 3, "name": "cy", "age": 45, "born": DateTime::from_millis(0) },
    ])
    .await
    .unwrap();
    c
}

#[tokio::test]
async fn where_filters_reads_and_writes() {
    let node = TestNode::start();
    let db = node.db("js").await;
    let c = people(&db).await;
    // An expression, a function, BSON code, statements; `obj` is `this`.
    assert_eq!(
        ids(&c, doc! { "$where": "this.age > 18" }).await,
        vec![1, 3]
    );
    let f = "function () { return obj.name.length == 3 && this.age < 40 }";
    assert_eq!(ids(&c, doc! { "$where": f }).await, vec![1, 2]);
    let code = Bson::JavaScriptCode("this.tags && this.tags.length == 2".into());
    assert_eq!(ids(&c, doc! { "$where": code }).await, vec![1]);
    let statements = "var year = this.born ? this.born.getUTCFullYear() : 0; return year == 1970";
    assert_eq!(ids(&c, doc! { "$where": statements }).await, vec![3]);
    // Beside other predicates, in counts and writes.
    let adults = doc! { "name": { "$ne": "cy" }, "$where": "this.age >= 18" };
    assert_eq!(ids(&c, adults.clone()).await, vec![1]);
    let n = db
        .run_command(doc! { "count": "people", "query": { "$where": "this.age < 40" } })
        .await
        .unwrap();
    assert_eq!(n.get_i32("n").unwrap(), 2);
    let r = c
        .update_many(
            doc! { "$where": "this.age < 18" },
            doc! { "$set": { "minor": true } },
        )
        .await
        .unwrap();
    assert_eq!(r.modified_count, 1);
    assert_eq!(ids(&c, doc! { "minor": true }).await, vec![2]);
    let r = c
        .delete_many(doc! { "$where": "this.name == 'cy'" })
        .await
        .unwrap();
    assert_eq!(r.deleted_count, 1);

    // mongod's refusals and a script's own errors.
    expect_code(c.find(doc! { "$where": "this.a.b.c" }).await, 139);
    expect_code(c.find(doc! { "$where": "syntax error (" }).await, 139);
    expect_code(c.find(doc! { "$where": 5 }).await, 2);
    let nested = doc! { "tags": { "$elemMatch": { "$where": "true" } } };
    expect_code(c.find(nested).await, 2);
    let in_match = vec![doc! { "$match": { "$where": "true" } }];
    let message = expect_code(c.aggregate(in_match).await, 2);
    assert!(message.contains("$where is not allowed"), "{message}");
}

#[tokio::test]
async fn scripts_are_bounded_by_time_kill_op_and_memory() {
    let node = TestNode::start();
    let db = node.db("js").await;
    let c = people(&db).await;
    let forever = doc! { "$where": "while (true) {}" };
    expect_code(
        c.find(forever.clone())
            .max_time(Duration::from_millis(200))
            .await,
        50,
    );
    let hog = doc! { "$where": "var a = []; while (true) { a.push(new Array(100000).fill(1)); }" };
    let message = expect_code(c.find(hog).await, 139);
    assert!(message.contains("out of memory"), "{message}");

    // killOp stops a script that would never end, in a read or a write.
    let admin = node.db("admin").await;
    let running = c.clone();
    let find = tokio::spawn(async move { running.find(forever).await.map(|_| ()) });
    expect_code(kill(&admin, "command.find", find).await, 11601);
    // The node, and the engine on that thread, go on serving.
    assert_eq!(ids(&c, doc! { "$where": "this.age > 40" }).await, vec![3]);
    let writing = c.clone();
    let update = tokio::spawn(async move {
        let spin = doc! { "$where": "while (true) {}" };
        writing
            .update_many(spin, doc! { "$set": { "x": 1 } })
            .await
            .map(|_| ())
    });
    expect_code(kill(&admin, "command.update", update).await, 11601);
    // The collection's writes go on.
    c.insert_one(doc! { "_id": 4, "age": 1 }).await.unwrap();
    assert_eq!(ids(&c, doc! { "x": 1 }).await, Vec::<i32>::new());
}

/// Waits for the operation on `people` whose `currentOp` entry has
/// `field`, kills it, and returns what its client got.
async fn kill(
    admin: &Database,
    field: &str,
    op: tokio::task::JoinHandle<mongodb::error::Result<()>>,
) -> mongodb::error::Result<()> {
    let ops = || async {
        let reply = admin
            .run_command(doc! { "currentOp": 1, field: "people" })
            .await
            .unwrap();
        reply.get_array("inprog").unwrap().clone()
    };
    let seen = eventually(Duration::from_secs(10), || async {
        !ops().await.is_empty()
    })
    .await;
    assert!(seen, "the operation never showed in currentOp");
    let opid = ops().await[0]
        .as_document()
        .unwrap()
        .get_i64("opid")
        .unwrap();
    admin
        .run_command(doc! { "killOp": 1, "op": opid })
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), op)
        .await
        .expect("the killed operation returns promptly")
        .unwrap()
}

#[tokio::test]
async fn function_and_accumulator_run_in_aggregations() {
    let node = TestNode::start();
    let db = node.db("js").await;
    let c = people(&db).await;
    let oid = ObjectId::parse_str("65a1b2c3d4e5f60718293a4b").unwrap();
    let body = format!(
        "function (name, age, born) {{ return {{ up: name.toUpperCase(), next: age + 1, \
         year: born ? born.getUTCFullYear() : null, id: ObjectId('{oid}'), \
         when: new Date(86400000), list: [1, 'two', {{ three: 3 }}], re: /ab+c/i }} }}"
    );
    let pipeline = vec![
        doc! { "$match": { "_id": { "$in": [1, 3] } } },
        doc! { "$project": { "r": { "$function": {
            "body": body, "args": ["$name", "$age", "$born"], "lang": "js",
        } } } },
    ];
    let docs = agg(&c, pipeline).await;
    let regex = Bson::RegularExpression(mongodb::bson::Regex {
        pattern: "ab+c".try_into().unwrap(),
        options: "i".try_into().unwrap(),
    });
    assert_eq!(
        docs[1],
        doc! { "_id": 3, "r": {
            "up": "CY", "next": 46.0, "year": 1970.0, "id": oid,
            "when": DateTime::from_millis(86_400_000), "list": [1.0, "two", { "three": 3.0 }],
            "re": regex.clone(),
        } }
    );
    assert_eq!(
        docs[0].get_document("r").unwrap().get("year"),
        Some(&Bson::Null)
    );
    // `$function` in a find's `$expr`.
    let older = doc! { "$expr": { "$function": {
        "body": "function (age) { return age > 30 }", "args": ["$age"], "lang": "js",
    } } };
    assert_eq!(ids(&c, older).await, vec![1, 3]);

    let grouped = vec![
        doc! { "$group": { "_id": { "$gte": ["$age", 18] }, "mean": { "$accumulator": {
            "init": "function () { return { n: 0, sum: 0 } }",
            "accumulate": "function (s, age) { return { n: s.n + 1, sum: s.sum + age } }",
            "accumulateArgs": ["$age"],
            "merge": "function (a, b) { return { n: a.n + b.n, sum: a.sum + b.sum } }",
            "finalize": "function (s) { return s.sum / s.n }",
            "lang": "js",
        } } } },
        doc! { "$sort": { "_id": 1 } },
    ];
    let docs = agg(&c, grouped).await;
    assert_eq!(
        docs,
        vec![
            doc! { "_id": false, "mean": 17.0 },
            doc! { "_id": true, "mean": 38.0 }
        ]
    );
    let no_merge = vec![doc! { "$group": { "_id": 1, "x": { "$accumulator": {
        "init": "function () { return 0 }", "accumulate": "function (s) { return s }", "lang": "js",
    } } } }];
    expect_code(c.aggregate(no_merge).await, 9);
    let throws = vec![doc! { "$project": { "x": { "$function": {
        "body": "function () { throw new Error('nope') }", "args": [], "lang": "js",
    } } } }];
    let message = expect_code(c.aggregate(throws).await, 139);
    assert!(message.contains("nope"), "{message}");
}

#[tokio::test]
async fn no_scripting_refuses_every_script() {
    let node = TestNode::start_with(|c| c.security.javascript_enabled = false, None);
    let db = node.db("js").await;
    let c = people(&db).await;
    let message = expect_code(c.find(doc! { "$where": "true" }).await, 6108304);
    assert_eq!(message, "no globalScriptEngine in $where parsing");
    let function = vec![doc! { "$project": { "x": { "$function": {
        "body": "function () { return 1 }", "args": [], "lang": "js",
    } } } }];
    expect_code(c.aggregate(function).await, 6108304);
    let accumulator = vec![doc! { "$group": { "_id": 1, "x": { "$accumulator": {
        "init": "function () { return 0 }", "accumulate": "function (s) { return s }",
        "merge": "function (a, b) { return a }", "lang": "js",
    } } } }];
    expect_code(c.aggregate(accumulator).await, 6108304);
}

#[tokio::test]
async fn map_reduce_inline_and_into_collections() {
    let node = TestNode::start();
    let db = node.db("js").await;
    let orders = db.collection::<Document>("orders");
    orders
        .insert_many((1..10).map(|i| {
            let cust = ["ann", "bob", "cy"][i as usize % 3];
            let status = if i % 2 == 1 { "A" } else { "B" };
            doc! { "_id": i, "cust": cust, "amount": i * 10, "status": status }
        }))
        .await
        .unwrap();
    let map = Bson::JavaScriptCode("function () { emit(this.cust, this.amount); }".into());
    let sum =
        "function (key, values) { return values.reduce(function (a, b) { return a + b }, 0) }";
    let r = db
        .run_command(doc! { "mapReduce": "orders", "map": map, "reduce": sum,
        "query": { "status": "A" }, "out": { "inline": 1 } })
        .await
        .unwrap();
    assert_eq!(
        r.get_array("results").unwrap(),
        &vec![
            Bson::from(doc! { "_id": "ann", "value": 120.0 }),
            doc! { "_id": "bob", "value": 80.0 }.into(),
            // One value: reduce is not called; the value is the emitted
            // number (a JS number, so a double).
            doc! { "_id": "cy", "value": 50.0 }.into(),
        ]
    );
    // Scope, sort and limit, finalize, into a collection; then merged.
    let r = db
        .run_command(doc! { "mapReduce": "orders",
            "map": "function () { emit(this.status, { n: 1, total: this.amount * factor }); }",
            "reduce": "function (k, vs) { var o = { n: 0, total: 0 }; vs.forEach(function (v) { o.n += v.n; o.total += v.total; }); return o; }",
            "finalize": "function (k, v) { v.avg = v.total / v.n; return v; }",
            "scope": { "factor": 2 }, "sort": { "_id": -1 }, "limit": 5, "out": "totals" })
        .await
        .unwrap();
    assert_eq!(r.get_str("result").unwrap(), "totals");
    let totals = db.collection::<Document>("totals");
    let all = all(&totals).await;
    assert_eq!(
        all,
        vec![
            doc! { "_id": "A", "value": { "n": 3.0, "total": 420.0, "avg": 140.0 } },
            doc! { "_id": "B", "value": { "n": 2.0, "total": 280.0, "avg": 140.0 } },
        ]
    );
    db.run_command(
        doc! { "mapReduce": "orders", "map": "function () { emit(this.cust, 1); }",
        "reduce": "function (k, vs) { return vs.length; }", "out": { "merge": "totals" } },
    )
    .await
    .unwrap();
    assert_eq!(
        str_ids(&totals, doc! {}).await,
        vec!["A", "B", "ann", "bob", "cy"]
    );
    // `reduce`: a key already there is reduced with the new values; the
    // others are left as they are.
    db.run_command(
        doc! { "mapReduce": "orders", "map": "function () { emit(this.cust, 1); }",
        "reduce": "function (k, vs) { return vs.reduce(function (a, b) { return a + b }, 0); }",
        "query": { "cust": { "$ne": "cy" } }, "out": { "reduce": "totals" } },
    )
    .await
    .unwrap();
    let counts: Vec<Document> = totals
        .find(doc! { "_id": { "$in": ["ann", "bob", "cy"] } })
        .sort(doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        counts,
        vec![
            doc! { "_id": "ann", "value": 6.0 },
            doc! { "_id": "bob", "value": 6.0 },
            doc! { "_id": "cy", "value": 3.0 },
        ]
    );
    expect_code(
        db.run_command(
            doc! { "mapReduce": "orders", "map": "function () {}", "reduce": "function () {}" },
        )
        .await,
        9,
    );
}

/// One script cannot leave anything for the next: no new global, no
/// patched built-in.
#[tokio::test]
async fn scripts_leave_nothing_behind() {
    let node = TestNode::start();
    let db = node.db("js").await;
    let c = people(&db).await;
    let leak =
        doc! { "$where": "Array.prototype.stolen = this.name; leaked = this.age; return true" };
    expect_code(c.find(leak).await, 139);
    let patch = doc! { "$where": "Array.prototype.stolen = this.name; return true" };
    let message = expect_code(c.find(patch).await, 139);
    assert!(message.starts_with("TypeError"), "{message}");
    let look = doc! { "$where": "return [].stolen === undefined && typeof leaked === 'undefined'" };
    assert_eq!(ids(&c, look).await, vec![1, 2, 3]);
    // A document's own field named like a built-in property is its own.
    c.insert_one(doc! { "_id": 9, "toString": "mine", "constructor": 1 })
        .await
        .unwrap();
    let own = doc! { "$where": "this.toString === 'mine' && this.constructor === 1" };
    assert_eq!(ids(&c, own).await, vec![9]);
}
