//! Text search as mongod's version 3 text indexes answer it, through the
//! Rust driver: the index's spec in `listIndexes`, `$text` with terms,
//! phrases, negations, languages and sensitivity, scores in projections,
//! sorts and aggregations, the writes and counts that take `$text`, what
//! explain shows, mongod's errors, a compound text index searched within
//! its prefix values, and a text index beside a TTL index.

use std::sync::Arc;

use futures::TryStreamExt;
use mongodb::bson::{Bson, Document, doc};
use mongodb::{Collection, Database};

use crate::common::{TestNode, agg, expect_code, first_batch, ids};

/// The text-search manual's articles, with a text index on `subject`
/// (and `author` when `with_author`).
async fn articles(db: &Database, index: Document) -> Collection<Document> {
    let c = db.collection::<Document>("articles");
    c.insert_many(vec![
        doc! { "_id": 1, "subject": "coffee", "author": "xyz", "views": 50 },
        doc! { "_id": 2, "subject": "Coffee Shopping", "author": "efg", "views": 5 },
        doc! { "_id": 3, "subject": "Baking a cake", "author": "abc", "views": 90 },
        doc! { "_id": 4, "subject": "baking", "author": "xyz", "views": 100 },
        doc! { "_id": 5, "subject": "Café Con Leche", "author": "abc", "views": 200 },
        doc! { "_id": 6, "subject": "Сырники", "author": "jkl", "views": 80 },
        doc! { "_id": 7, "subject": "coffee and cream", "author": "efg", "views": 10 },
        doc! { "_id": 8, "subject": "Cafe con Leche", "author": "xyz", "views": 10 },
    ])
    .await
    .unwrap();
    let mut spec = doc! { "name": "subject_text" };
    spec.extend(index);
    db.run_command(doc! { "createIndexes": "articles", "indexes": [spec] })
        .await
        .unwrap();
    c
}

fn search(s: &str) -> Document {
    doc! { "$text": { "$search": s } }
}

/// `(_id, score)` of a find projecting and sorting by the score.
async fn scored(c: &Collection<Document>, filter: Document) -> Vec<(i32, f64)> {
    let score = doc! { "score": { "$meta": "textScore" } };
    let docs: Vec<Document> = c
        .find(filter)
        .projection(score.clone())
        .sort(score)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.iter()
        .map(|d| (d.get_i32("_id").unwrap(), d.get_f64("score").unwrap()))
        .collect()
}

#[tokio::test]
async fn terms_phrases_negations_and_scores_as_mongod_gives_them() {
    let node = TestNode::start();
    let db = node.db("text").await;
    let c = articles(&db, doc! { "key": { "subject": "text" } }).await;
    let listed = first_batch(&db, doc! { "listIndexes": "articles" }).await;
    let index = listed
        .iter()
        .find(|i| i.get_str("name").ok() == Some("subject_text"));
    let index = index.expect("the text index is listed");
    assert_eq!(
        index.get_document("key").unwrap(),
        &doc! { "_fts": "text", "_ftsx": 1 }
    );
    assert_eq!(
        index.get_document("weights").unwrap(),
        &doc! { "subject": 1 }
    );
    assert_eq!(index.get_str("default_language").unwrap(), "english");
    assert_eq!(index.get_str("language_override").unwrap(), "language");
    assert_eq!(index.get_i32("textIndexVersion").unwrap(), 3);

    // Any term matches; a term is a stem ("bake" finds "Baking").
    assert_eq!(ids(&c, search("coffee")).await, vec![1, 2, 7]);
    assert_eq!(
        ids(&c, search("bake coffee cake")).await,
        vec![1, 2, 3, 4, 7]
    );
    // A phrase must be there whole; a negated term or phrase must not.
    assert_eq!(ids(&c, search("\"coffee shop\"")).await, vec![2]);
    assert_eq!(ids(&c, search("coffee -shop")).await, vec![1, 7]);
    assert_eq!(ids(&c, search("coffee -\"and cream\"")).await, vec![1, 2]);
    // Diacritics fold unless asked; case folds unless asked.
    assert_eq!(ids(&c, search("café")).await, vec![5, 8]);
    let sensitive = |s: &str, flag: &str| doc! { "$text": { "$search": s, flag: true } };
    assert_eq!(
        ids(&c, sensitive("café", "$diacriticSensitive")).await,
        vec![5]
    );
    assert_eq!(
        ids(&c, sensitive("Coffee", "$caseSensitive")).await,
        vec![2]
    );
    // Nothing positive, or only stop words: nothing, and no error.
    assert!(ids(&c, search("-coffee")).await.is_empty());
    assert!(ids(&c, search("the and")).await.is_empty());
    // The other predicates apply too, beside it or around it in `$and`.
    let busy = doc! { "$text": { "$search": "coffee cake" }, "views": { "$gte": 50 } };
    assert_eq!(ids(&c, busy).await, vec![1, 3]);
    let and =
        doc! { "$and": [{ "$text": { "$search": "coffee cake" } }, { "views": { "$lt": 50 } }] };
    assert_eq!(ids(&c, and).await, vec![2, 7]);

    // The score: weight × frequency × the share of the string the term
    // is, a tenth more when the string is the term, summed over terms.
    assert_eq!(
        scored(&c, search("coffee")).await,
        vec![(1, 1.0), (2, 0.75), (7, 0.75)]
    );
    assert_eq!(
        scored(&c, search("cake bake")).await,
        vec![(3, 1.5), (4, 1.0)]
    );
    let c2 = db.collection::<Document>("scores");
    c2.insert_many(vec![
        doc! { "_id": 1, "t": "test" },
        doc! { "_id": 2, "t": "test test" },
        doc! { "_id": 3, "t": "textual content" },
    ])
    .await
    .unwrap();
    db.run_command(
        doc! { "createIndexes": "scores", "indexes": [{ "key": { "t": "text" }, "name": "t" }] },
    )
    .await
    .unwrap();
    assert_eq!(scored(&c2, search("test")).await, vec![(2, 1.5), (1, 1.1)]);
    assert_eq!(
        scored(&c2, search("textual content test")).await,
        vec![(2, 1.5), (3, 1.5), (1, 1.1)]
    );
    // A sort may put the score after other keys.
    let docs: Vec<Document> = c
        .find(search("coffee cake"))
        .sort(doc! { "author": 1, "s": { "$meta": "textScore" } })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let order: Vec<i32> = docs.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(order, vec![3, 2, 7, 1]);
    assert!(docs.iter().all(|d| !d.contains_key("s")));

    // Writes and counts take `$text` too.
    assert_eq!(c.count_documents(search("coffee")).await.unwrap(), 3);
    let r = c
        .update_many(search("leche"), doc! { "$set": { "drink": true } })
        .await
        .unwrap();
    assert_eq!(r.modified_count, 2);
    assert_eq!(ids(&c, doc! { "drink": true }).await, vec![5, 8]);
    let r = c.delete_many(search("coffee -cream")).await.unwrap();
    assert_eq!(r.deleted_count, 2);
    assert_eq!(ids(&c, search("coffee")).await, vec![7]);
}

#[tokio::test]
async fn weights_languages_and_wildcards() {
    let node = TestNode::start();
    let db = node.db("text").await;
    let c = db.collection::<Document>("recipes");
    c.insert_many(vec![
        doc! { "_id": 1, "title": "tortilla", "body": "huevos y patatas" },
        doc! { "_id": 2, "title": "patatas bravas", "body": "tortilla no" },
        doc! { "_id": 3, "title": "running shoes", "body": "for runners", "idioma": "english" },
        doc! { "_id": 4, "title": "corriendo", "body": "x", "idioma": "none" },
    ])
    .await
    .unwrap();
    db.run_command(doc! { "createIndexes": "recipes", "indexes": [{
        "key": { "title": "text", "body": "text" }, "name": "words",
        "weights": { "title": 10 }, "default_language": "spanish", "language_override": "idioma",
    }] })
    .await
    .unwrap();
    // Title matches weigh ten times body matches.
    let order = scored(&c, search("tortilla")).await;
    assert_eq!(
        order.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert!(order[0].1 > 5.0 * order[1].1, "{order:?}");
    // Spanish stems ("patata" finds "patatas"); a document's own language
    // field decides how it is indexed ("run" finds English "running").
    assert_eq!(ids(&c, search("patata")).await, vec![1, 2]);
    let english = doc! { "$text": { "$search": "run", "$language": "en" } };
    assert_eq!(ids(&c, english).await, vec![3]);
    // Language "none": words as written, no stop words.
    let none = doc! { "$text": { "$search": "corriendo", "$language": "none" } };
    assert_eq!(ids(&c, none).await, vec![4]);
    expect_code(
        c.insert_one(doc! { "title": "x", "idioma": "klingon" })
            .await,
        17262,
    );
    expect_code(
        c.insert_one(doc! { "title": "x", "idioma": 5 }).await,
        17261,
    );

    // A wildcard text index reads every string, nested ones too.
    let w = db.collection::<Document>("notes");
    w.insert_many(vec![
        doc! { "_id": 1, "a": "apples", "n": { "deep": ["pears"] } },
        doc! { "_id": 2, "b": 7, "c": "plums" },
    ])
    .await
    .unwrap();
    db.run_command(
        doc! { "createIndexes": "notes", "indexes": [{ "key": { "$**": "text" }, "name": "all" }] },
    )
    .await
    .unwrap();
    assert_eq!(ids(&w, search("pear")).await, vec![1]);
    assert_eq!(ids(&w, search("plum apple")).await, vec![1, 2]);
    let listed = first_batch(&db, doc! { "listIndexes": "notes" }).await;
    let all = listed
        .iter()
        .find(|i| i.get_str("name").ok() == Some("all"))
        .unwrap();
    assert_eq!(all.get_document("weights").unwrap(), &doc! { "$**": 1 });
}

#[tokio::test]
async fn aggregations_read_the_score_and_only_a_first_match_searches() {
    let node = TestNode::start();
    let db = node.db("text").await;
    let c = articles(&db, doc! { "key": { "subject": "text" } }).await;
    let pipeline = vec![
        doc! { "$match": { "$text": { "$search": "coffee cake" } } },
        doc! { "$sort": { "score": { "$meta": "textScore" } } },
        doc! { "$project": { "subject": 1, "score": { "$meta": "textScore" } } },
    ];
    let docs = agg(&c, pipeline).await;
    assert_eq!(
        docs,
        vec![
            doc! { "_id": 1, "subject": "coffee", "score": 1.0 },
            doc! { "_id": 2, "subject": "Coffee Shopping", "score": 0.75 },
            doc! { "_id": 3, "subject": "Baking a cake", "score": 0.75 },
            doc! { "_id": 7, "subject": "coffee and cream", "score": 0.75 },
        ]
    );
    // Whatever carries the score between stages never reaches the client.
    let grouped = vec![
        doc! { "$match": { "$text": { "$search": "coffee" } } },
        doc! { "$addFields": { "s": { "$meta": "textScore" } } },
        doc! { "$group": { "_id": null, "all": { "$push": "$$ROOT" } } },
    ];
    let docs = agg(&c, grouped).await;
    let all = docs[0].get_array("all").unwrap();
    assert_eq!(all.len(), 3);
    for d in all {
        let d = d.as_document().unwrap();
        assert_eq!(d.keys().last().map(String::as_str), Some("s"), "{d}");
    }
    // The score outlives a `$project` that keeps named fields only.
    let projected = vec![
        doc! { "$match": { "$text": { "$search": "coffee" } } },
        doc! { "$project": { "views": 1 } },
        doc! { "$sort": { "s": { "$meta": "textScore" }, "_id": -1 } },
        doc! { "$addFields": { "s": { "$meta": "textScore" } } },
    ];
    let docs = agg(&c, projected).await;
    assert_eq!(
        docs,
        vec![
            doc! { "_id": 1, "views": 50, "s": 1.0 },
            doc! { "_id": 7, "views": 10, "s": 0.75 },
            doc! { "_id": 2, "views": 5, "s": 0.75 },
        ]
    );
    let later = vec![
        doc! { "$match": { "views": 1 } },
        doc! { "$match": search("coffee") },
    ];
    expect_code(c.aggregate(later).await, 17313);
    let no_text = vec![doc! { "$project": { "s": { "$meta": "textScore" } } }];
    expect_code(c.aggregate(no_text).await, 40218);
}

#[tokio::test]
async fn mongods_errors() {
    let node = TestNode::start();
    let db = node.db("text").await;
    let c = articles(&db, doc! { "key": { "subject": "text" } }).await;
    let find = |filter: Document| {
        let c = c.clone();
        async move { c.find(filter).await.map(|_| ()) }
    };
    let plain = db.collection::<Document>("plain");
    plain.insert_one(doc! { "a": "x" }).await.unwrap();
    expect_code(plain.find(search("x")).await, 27);
    expect_code(
        db.collection::<Document>("none").find(search("x")).await,
        27,
    );
    expect_code(find(doc! { "$text": { "$search": 1 } }).await, 14);
    expect_code(find(doc! { "$text": {} }).await, 4);
    expect_code(
        find(doc! { "$text": { "$search": "a", "$foo": 1 } }).await,
        2,
    );
    expect_code(
        find(doc! { "$text": { "$search": "a", "$language": "xx" } }).await,
        2,
    );
    expect_code(
        find(doc! { "$text": { "$search": "a", "$caseSensitive": 1 } }).await,
        14,
    );
    let elem = doc! { "a": { "$elemMatch": { "$text": { "$search": "a" } } } };
    expect_code(find(elem).await, 2);
    let nor = doc! { "$nor": [{ "$text": { "$search": "a" } }] };
    expect_code(find(nor).await, 2);
    let twice = doc! { "$text": { "$search": "a" }, "$and": [{ "$text": { "$search": "b" } }] };
    expect_code(find(twice).await, 2);
    expect_code(
        c.find(doc! {})
            .projection(doc! { "s": { "$meta": "textScore" } })
            .await,
        40218,
    );
    expect_code(
        c.find(doc! {})
            .sort(doc! { "s": { "$meta": "textScore" } })
            .await,
        40218,
    );
    expect_code(
        c.find(search("coffee"))
            .hint(mongodb::options::Hint::Name("_id_".into()))
            .await,
        2,
    );

    let create = |spec: Document| {
        let db = db.clone();
        async move {
            db.run_command(doc! { "createIndexes": "articles", "indexes": [spec] })
                .await
        }
    };
    // One text index per collection.
    expect_code(
        create(doc! { "key": { "author": "text" }, "name": "author_text" }).await,
        85,
    );
    let fresh = |extra: Document| {
        let mut spec = doc! { "key": { "body": "text" }, "name": "b" };
        spec.extend(extra);
        spec
    };
    let other = db.collection::<Document>("other");
    other.insert_one(doc! { "body": "x" }).await.unwrap();
    let create_other = |spec: Document| {
        let db = db.clone();
        async move {
            db.run_command(doc! { "createIndexes": "other", "indexes": [spec] })
                .await
        }
    };
    expect_code(
        create_other(fresh(doc! { "weights": { "body": 0 } })).await,
        67,
    );
    expect_code(
        create_other(fresh(doc! { "weights": { "body": "x" } })).await,
        67,
    );
    expect_code(
        create_other(fresh(doc! { "default_language": "klingon" })).await,
        67,
    );
    expect_code(
        create_other(fresh(doc! { "language_override": "$x" })).await,
        67,
    );
    expect_code(
        create_other(fresh(doc! { "textIndexVersion": 9 })).await,
        67,
    );
    expect_code(create_other(fresh(doc! { "unique": true })).await, 67);
    expect_code(
        create_other(fresh(doc! { "expireAfterSeconds": 5 })).await,
        67,
    );
    // Text fields in one run, beside ordinary fields only.
    expect_code(
        create_other(doc! { "key": { "a": "text", "b": 1, "body": "text" }, "name": "c" }).await,
        67,
    );
    expect_code(
        create_other(doc! { "key": { "a": "hashed", "body": "text" }, "name": "c" }).await,
        67,
    );
    expect_code(
        create_other(doc! { "key": { "a": 1 }, "name": "w", "weights": { "a": 2 } }).await,
        67,
    );
    let listed = first_batch(&db, doc! { "listIndexes": "other" }).await;
    assert_eq!(listed.len(), 1, "nothing was built: {listed:?}");
    // A hidden text index serves no search.
    db.run_command(
        doc! { "collMod": "articles", "index": { "name": "subject_text", "hidden": true } },
    )
    .await
    .unwrap();
    expect_code(c.find(search("coffee")).await, 27);
}

#[tokio::test]
async fn explain_shows_the_text_stages() {
    let node = TestNode::start();
    let db = node.db("text").await;
    articles(&db, doc! { "key": { "subject": "text" } }).await;
    let e = db
        .run_command(doc! { "explain": { "find": "articles", "filter": {
            "$text": { "$search": "coffee -shop \"and cream\"" },
        } } })
        .await
        .unwrap();
    let plan = e
        .get_document("queryPlanner")
        .unwrap()
        .get_document("winningPlan")
        .unwrap();
    assert_eq!(plan.get_str("stage").unwrap(), "TEXT_MATCH");
    assert_eq!(plan.get_str("indexName").unwrap(), "subject_text");
    let parsed = plan.get_document("parsedTextQuery").unwrap();
    let strings = |k: &str| -> Vec<Bson> { parsed.get_array(k).unwrap().clone() };
    assert_eq!(strings("terms"), vec![Bson::from("coffe"), "cream".into()]);
    assert_eq!(strings("negatedTerms"), vec![Bson::from("shop")]);
    assert_eq!(strings("phrases"), vec![Bson::from("and cream")]);
    let stats = e.get_document("executionStats").unwrap();
    assert_eq!(stats.get_i64("nReturned").unwrap(), 1);
}

#[tokio::test]
async fn documents_that_expire_leave_the_text_index() {
    let t0 = 1_767_225_600_000i64;
    let node = TestNode::start_with_clock(Arc::new(ebb_actors::clock::ManualClock::new(t0)));
    let db = node.db("text").await;
    let c = db.collection::<Document>("posts");
    crate::common::ttl_index(&c, doc! { "at": 1 }, 60, None).await;
    db.run_command(doc! { "createIndexes": "posts", "indexes": [{ "key": { "body": "text" }, "name": "body_text" }] })
        .await
        .unwrap();
    let at = mongodb::bson::DateTime::from_millis;
    c.insert_many((0..100).map(|i| {
        let seen = if i % 2 == 0 { t0 - 120_000 } else { t0 };
        doc! { "_id": i, "body": format!("post number {i} about coffee"), "at": at(seen) }
    }))
    .await
    .unwrap();
    // Due documents are hidden from a search at once, then deleted with
    // their entries.
    let live: Vec<i32> = (0..100).filter(|i| i % 2 == 1).collect();
    assert_eq!(ids(&c, search("coffee")).await, live);
    node.ttl_pass().await;
    assert_eq!(ids(&c, search("coffee")).await, live);
    let r = db
        .run_command(doc! { "validate": "posts", "full": true })
        .await
        .unwrap();
    assert!(r.get_bool("valid").unwrap(), "{r}");
    let keys = r.get_document("keysPerIndex").unwrap();
    // "post", "number", the number and "coffe" for each live document.
    assert_eq!(keys.get_i64("body_text").unwrap(), 50 * 4, "{keys}");
}

#[tokio::test]
async fn a_compound_text_index_searches_within_its_prefix_values() {
    let node = TestNode::start();
    let db = node.db("text").await;
    let c = db.collection::<Document>("notes");
    db.run_command(doc! { "createIndexes": "notes", "indexes": [
        { "key": { "tenant": 1, "body": "text", "at": -1 }, "name": "tenant_body_at" },
    ] })
    .await
    .unwrap();
    let listed = first_batch(&db, doc! { "listIndexes": "notes" }).await;
    assert_eq!(
        listed[1].get_document("key").unwrap(),
        &doc! { "tenant": 1, "_fts": "text", "_ftsx": 1, "at": -1 }
    );
    assert_eq!(
        listed[1].get_document("weights").unwrap(),
        &doc! { "body": 1 }
    );
    c.insert_many(vec![
        doc! { "_id": 1, "tenant": "acme", "body": "coffee beans", "at": 1 },
        doc! { "_id": 2, "tenant": "acme", "body": "coffee coffee cake", "at": 2 },
        doc! { "_id": 3, "tenant": "globex", "body": "coffee", "at": 3 },
        doc! { "_id": 4, "body": "coffee without a tenant" },
        doc! { "_id": 5, "tenant": "acme", "body": "tea" },
    ])
    .await
    .unwrap();
    let within = |tenant: Bson| {
        let mut f = search("coffee");
        f.insert("tenant", tenant);
        f
    };
    let found = scored(&c, within(Bson::String("acme".into()))).await;
    assert_eq!(found.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [2, 1]);
    assert!(found[0].1 > found[1].1, "{found:?}");
    assert_eq!(ids(&c, within(Bson::String("globex".into()))).await, [3]);
    assert_eq!(ids(&c, within(Bson::Null)).await, [4]);
    // Without an equality on every prefix field: mongod's 291.
    for filter in [
        search("coffee"),
        within(Bson::Document(doc! { "$in": ["acme", "globex"] })),
    ] {
        let e = c.find(filter).await.map(|_| ());
        expect_code(e, 291);
    }
    // An array at an ordinary field of a text index: mongod's 133.
    for bad in [
        doc! { "_id": 9, "tenant": ["acme"], "body": "x" },
        doc! { "_id": 9, "tenant": "acme", "body": "x", "at": [1, 2] },
    ] {
        let msg = expect_code(c.insert_one(bad).await, 133);
        assert!(msg.contains("of text index contains an array"), "{msg}");
    }
    // A document that moves to another tenant moves its entries.
    c.update_one(doc! { "_id": 1 }, doc! { "$set": { "tenant": "globex" } })
        .await
        .unwrap();
    assert_eq!(ids(&c, within(Bson::String("acme".into()))).await, [2]);
    assert_eq!(ids(&c, within(Bson::String("globex".into()))).await, [1, 3]);
    let v = db
        .run_command(doc! { "validate": "notes", "full": true })
        .await
        .unwrap();
    assert!(v.get_bool("valid").unwrap(), "{v}");
}
