//! Authentication (SCRAM-SHA-1/256), users in `admin.system.users`, and
//! authorization by built-in roles, end to end through the Rust driver
//! (which authenticates with SCRAM itself, speculatively in its handshake).

use crate::common::{self, TestNode, expect_code, message};
use mongodb::Client;
use mongodb::bson::spec::BinarySubtype;
use mongodb::bson::{Binary, Bson, Document, doc};
use mongodb::options::AuthMechanism;

const SHA256: AuthMechanism = AuthMechanism::ScramSha256;
const SHA1: AuthMechanism = AuthMechanism::ScramSha1;

/// Creates the first user, `root`/`pw` with role root, through the
/// localhost exception, and returns a client authenticated as it.
async fn bootstrap(node: &TestNode) -> Client {
    node.client()
        .await
        .database("admin")
        .run_command(doc! { "createUser": "root", "pwd": "pw", "roles": ["root"] })
        .await
        .expect("the localhost exception admits the first user");
    node.client_as("root", "pw", "admin", SHA256).await
}

async fn create_user(admin: &Client, user: &str, roles: Bson) {
    admin
        .database("admin")
        .run_command(doc! { "createUser": user, "pwd": "pw", "roles": roles })
        .await
        .unwrap();
}

fn sasl_payload(text: &str) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes: text.as_bytes().to_vec(),
    }
}

// https://www.mongodb.com/docs/manual/core/localhost-exception/ and
// jstests/auth/localhostAuthBypass.js: without users, a loopback client may
// create the first user on admin, and nothing else.
#[tokio::test]
async fn localhost_exception_admits_only_the_first_user_on_admin() {
    let node = TestNode::start_with_auth();
    let anon = node.client().await;
    let msg = expect_code(
        anon.database("test")
            .collection::<Document>("c")
            .find_one(doc! {})
            .await,
        13,
    );
    assert_eq!(msg, "command find requires authentication");
    expect_code(
        anon.database("test")
            .run_command(doc! { "createUser": "u", "pwd": "pw", "roles": ["read"] })
            .await,
        13,
    );
    anon.database("admin")
        .run_command(doc! { "createUser": "root", "pwd": "pw", "roles": ["root"] })
        .await
        .unwrap();
    expect_code(
        anon.database("admin")
            .run_command(doc! { "createUser": "second", "pwd": "pw", "roles": ["root"] })
            .await,
        13,
    );
    // Handshake and authentication commands stay open (mongod's requiresAuth: false).
    for cmd in ["ping", "hello", "buildInfo", "connectionStatus"] {
        anon.database("admin")
            .run_command(doc! { cmd: 1 })
            .await
            .unwrap_or_else(|e| panic!("{cmd} must need no authentication: {e}"));
    }
}

// https://www.mongodb.com/docs/manual/core/security-scram/: both SCRAM
// variants authenticate a user created with default mechanisms; a user
// created with SCRAM-SHA-1 only cannot use SCRAM-SHA-256
// (jstests/auth/scram-credentials-invalid.js, auth_mechanism_discovery.js).
#[tokio::test]
async fn both_scram_mechanisms_authenticate() {
    let node = TestNode::start_with_auth();
    let root = bootstrap(&node).await;
    root.database("admin")
        .run_command(doc! {
            "createUser": "old", "pwd": "pw", "roles": ["root"], "mechanisms": ["SCRAM-SHA-1"],
        })
        .await
        .unwrap();
    for mech in [SHA256, SHA1] {
        let c = node.client_as("root", "pw", "admin", mech.clone()).await;
        c.database("test")
            .collection::<Document>("c")
            .insert_one(doc! { "x": 1 })
            .await
            .unwrap_or_else(|e| panic!("{mech:?}: {e}"));
    }
    let old = node.client_as("old", "pw", "admin", SHA1).await;
    old.database("test")
        .collection::<Document>("c")
        .find_one(doc! {})
        .await
        .unwrap();
    let wrong = node.client_as("old", "pw", "admin", SHA256).await;
    assert!(
        wrong
            .database("test")
            .collection::<Document>("c")
            .find_one(doc! {})
            .await
            .is_err(),
        "no SCRAM-SHA-256 credentials"
    );
}

// jstests/auth/auth1.js (a wrong password fails) and the saslStart tests
// (jstests/auth/sasl_mechanism_discovery.js, the invalid-mechanism test):
// failures are AuthenticationFailed (18) whatever the cause; an unknown
// mechanism is MechanismUnavailable (334); out-of-order steps ProtocolError (17).
#[tokio::test]
async fn wrong_password_and_bad_conversations_fail() {
    let node = TestNode::start_with_auth();
    let _root = bootstrap(&node).await;
    let wrong = node.client_as("root", "nope", "admin", SHA256).await;
    let e = wrong
        .database("test")
        .collection::<Document>("c")
        .find_one(doc! {})
        .await
        .unwrap_err();
    assert!(
        matches!(*e.kind, mongodb::error::ErrorKind::Authentication { .. }),
        "{e}"
    );

    let admin = node.client().await.database("admin");
    let start = |mech: &str, payload: &str| {
        doc! { "saslStart": 1, "mechanism": mech, "payload": sasl_payload(payload) }
    };
    let msg = expect_code(
        admin
            .run_command(start("SCRAM-SHA-256", "n,,n=nobody,r=abc"))
            .await,
        18,
    );
    assert_eq!(msg, "Authentication failed.");
    expect_code(
        admin.run_command(start("SCRAM-SHA-256", "garbage")).await,
        18,
    );
    expect_code(
        admin
            .run_command(start("scram-sha-1", "n,,n=root,r=abc"))
            .await,
        334,
    );
    expect_code(
        admin
            .run_command(start("MONGODB-CR", "n,,n=root,r=abc"))
            .await,
        334,
    );
    expect_code(admin.run_command(doc! { "saslStart": 1 }).await, 40414);
    let continue_ = doc! { "saslContinue": 1, "conversationId": 1, "payload": sasl_payload("") };
    expect_code(admin.run_command(continue_.clone()).await, 17);
    let started = admin
        .run_command(start("SCRAM-SHA-256", "n,,n=root,r=abc"))
        .await
        .unwrap();
    assert_eq!(started.get_i32("conversationId").unwrap(), 1);
    assert!(!started.get_bool("done").unwrap());
    let msg = expect_code(
        admin
            .run_command(
                doc! { "saslContinue": 1, "conversationId": 2, "payload": sasl_payload("") },
            )
            .await,
        17,
    );
    assert_eq!(msg, "sasl: Mismatched conversation id");
    // A bad proof ends the conversation with 18.
    let server_first = match started.get("payload") {
        Some(Bson::Binary(b)) => String::from_utf8(b.bytes.clone()).unwrap(),
        other => panic!("payload must be BinData: {other:?}"),
    };
    let nonce = server_first.split(',').next().unwrap();
    let bad_final = format!("c=biws,{nonce},p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
    let _ = admin
        .run_command(start("SCRAM-SHA-256", "n,,n=root,r=abc"))
        .await;
    expect_code(
        admin
            .run_command(doc! { "saslContinue": 1, "conversationId": 1, "payload": sasl_payload(&bad_final) })
            .await,
        18,
    );
}

/// Whether the command ran, or failed with Unauthorized (any other error fails the test).
async fn allowed(c: &Client, db: &str, cmd: Document) -> bool {
    match c.database(db).run_command(cmd.clone()).await {
        Ok(_) => true,
        Err(e) if common::code(&e) == Some(13) => {
            let msg = message(&e);
            assert!(
                msg.starts_with(&format!("not authorized on {db} to execute command {{")),
                "{msg}"
            );
            false
        }
        Err(e) => panic!("{cmd}: {e}"),
    }
}

// https://www.mongodb.com/docs/manual/reference/built-in-roles/ and
// jstests/auth/basic_role_auth.js: each role allows its actions and no others.
#[tokio::test]
async fn built_in_roles_allow_and_refuse_representative_commands() {
    let node = TestNode::start_with_auth();
    let root = bootstrap(&node).await;
    // (user, roles, [find, insert, createIndexes, dropDatabase, createUser, serverStatus])
    let cases: Vec<(&str, Bson, [bool; 6])> = vec![
        (
            "r",
            bson_roles(&[("read", "test")]),
            [true, false, false, false, false, false],
        ),
        (
            "rw",
            bson_roles(&[("readWrite", "test")]),
            [true, true, true, false, false, false],
        ),
        (
            "dba",
            bson_roles(&[("dbAdmin", "test")]),
            [false, false, true, true, false, false],
        ),
        (
            "ua",
            bson_roles(&[("userAdmin", "test")]),
            [false, false, false, false, true, false],
        ),
        (
            "own",
            bson_roles(&[("dbOwner", "test")]),
            [true, true, true, true, true, false],
        ),
        (
            "mon",
            bson_roles(&[("clusterMonitor", "admin")]),
            [false, false, false, false, false, true],
        ),
        (
            "rany",
            bson_roles(&[("readAnyDatabase", "admin")]),
            [true, false, false, false, false, false],
        ),
        (
            "rwany",
            bson_roles(&[("readWriteAnyDatabase", "admin")]),
            [true, true, true, false, false, false],
        ),
        (
            "other",
            bson_roles(&[("readWrite", "elsewhere")]),
            [false, false, false, false, false, false],
        ),
        (
            "root2",
            bson_roles(&[("root", "admin")]),
            [true, true, true, true, true, true],
        ),
    ];
    for (user, roles, _) in &cases {
        create_user(&root, user, roles.clone()).await;
    }
    for (user, _, expected) in cases {
        let c = node.client_as(user, "pw", "admin", SHA256).await;
        let got = [
            allowed(&c, "test", doc! { "find": "c", "filter": {} }).await,
            allowed(
                &c,
                "test",
                doc! { "insert": "c", "documents": [{ "by": user }] },
            )
            .await,
            allowed(
                &c,
                "test",
                doc! { "createIndexes": "c", "indexes": [{ "key": { "by": 1 }, "name": "by_1" }] },
            )
            .await,
            allowed(&c, "test", doc! { "dropDatabase": 1 }).await,
            allowed(
                &c,
                "test",
                doc! { "createUser": format!("made_by_{user}"), "pwd": "pw", "roles": [] },
            )
            .await,
            allowed(&c, "admin", doc! { "serverStatus": 1 }).await,
        ];
        assert_eq!(got, expected, "user {user}");
    }
}

fn bson_roles(roles: &[(&str, &str)]) -> Bson {
    Bson::Array(
        roles
            .iter()
            .map(|(role, db)| Bson::Document(doc! { "role": *role, "db": *db }))
            .collect(),
    )
}

// jstests/auth/speculative-sasl-start.js and auth_mechanism_discovery.js:
// hello answers saslSupportedMechs for a known user (nothing for an unknown
// one) and runs a speculative saslStart.
#[tokio::test]
async fn hello_discovers_mechanisms_and_starts_speculatively() {
    let node = TestNode::start_with_auth();
    let root = bootstrap(&node).await;
    root.database("admin")
        .run_command(doc! {
            "createUser": "old", "pwd": "pw", "roles": [], "mechanisms": ["SCRAM-SHA-1"],
        })
        .await
        .unwrap();
    let anon = node.client().await.database("admin");
    let hello = |extra: Document| {
        let mut cmd = doc! { "hello": 1 };
        cmd.extend(extra);
        cmd
    };
    let r = anon
        .run_command(hello(doc! { "saslSupportedMechs": "admin.root" }))
        .await
        .unwrap();
    assert_eq!(
        r.get_array("saslSupportedMechs").unwrap(),
        &vec![Bson::from("SCRAM-SHA-1"), Bson::from("SCRAM-SHA-256")]
    );
    let r = anon
        .run_command(hello(doc! { "saslSupportedMechs": "admin.old" }))
        .await
        .unwrap();
    assert_eq!(
        r.get_array("saslSupportedMechs").unwrap(),
        &vec![Bson::from("SCRAM-SHA-1")]
    );
    let r = anon
        .run_command(hello(doc! { "saslSupportedMechs": "admin.bogus" }))
        .await
        .unwrap();
    assert!(r.get("saslSupportedMechs").is_none());

    let speculative = |user: &str| {
        hello(doc! { "speculativeAuthenticate": {
            "saslStart": 1, "mechanism": "SCRAM-SHA-256",
            "payload": sasl_payload(&format!("n,,n={user},r=clientnonce")), "db": "admin",
        } })
    };
    let r = anon.run_command(speculative("root")).await.unwrap();
    let spec = r.get_document("speculativeAuthenticate").unwrap();
    assert_eq!(spec.get_i32("conversationId").unwrap(), 1);
    assert!(!spec.get_bool("done").unwrap());
    match spec.get("payload") {
        Some(Bson::Binary(b)) => assert!(b.bytes.starts_with(b"r=clientnonce")),
        other => panic!("{other:?}"),
    }
    let r = anon.run_command(speculative("bogus")).await.unwrap();
    assert!(r.get("speculativeAuthenticate").is_none());
}

// https://www.mongodb.com/docs/manual/reference/system-users-collection/:
// users are documents of admin.system.users and survive a restart.
#[tokio::test]
async fn users_survive_a_restart() {
    let mut node = TestNode::start_with_auth();
    let root = bootstrap(&node).await;
    create_user(&root, "keeper", bson_roles(&[("readWrite", "test")])).await;
    drop(root);
    node.restart();
    let c = node.client_as("keeper", "pw", "admin", SHA1).await;
    c.database("test")
        .collection::<Document>("c")
        .insert_one(doc! { "x": 1 })
        .await
        .unwrap();
    // The localhost exception is over for good.
    expect_code(
        node.client()
            .await
            .database("admin")
            .run_command(doc! { "createUser": "late", "pwd": "pw", "roles": [] })
            .await,
        13,
    );
}

// https://www.mongodb.com/docs/manual/reference/command/usersInfo/ and
// jstests/core/administrative/auth1.js / user_management_helpers.js.
#[tokio::test]
async fn users_info_answers_every_form() {
    let node = TestNode::start_with_auth();
    let root = bootstrap(&node).await;
    let test = root.database("test");
    test.run_command(doc! {
        "createUser": "ann", "pwd": "pw", "roles": ["read"], "customData": { "team": "a" },
    })
    .await
    .unwrap();
    test.run_command(
        doc! { "createUser": "bob", "pwd": "pw", "roles": [{ "role": "readWrite", "db": "test" }] },
    )
    .await
    .unwrap();
    let names = |r: &Document| -> Vec<String> {
        r.get_array("users")
            .unwrap()
            .iter()
            .map(|u| u.as_document().unwrap().get_str("_id").unwrap().to_owned())
            .collect()
    };
    let all = test.run_command(doc! { "usersInfo": 1 }).await.unwrap();
    assert_eq!(names(&all), ["test.ann", "test.bob"]);
    let ann = all.get_array("users").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(ann.get_str("user").unwrap(), "ann");
    assert_eq!(ann.get_str("db").unwrap(), "test");
    assert_eq!(
        ann.get_array("roles").unwrap(),
        &vec![Bson::Document(doc! { "role": "read", "db": "test" })]
    );
    assert_eq!(
        ann.get_document("customData").unwrap(),
        &doc! { "team": "a" }
    );
    assert_eq!(
        ann.get_array("mechanisms").unwrap(),
        &vec![Bson::from("SCRAM-SHA-1"), Bson::from("SCRAM-SHA-256")]
    );
    assert!(
        ann.get("credentials").is_none(),
        "credentials only when asked"
    );
    assert!(matches!(ann.get("userId"), Some(Bson::Binary(b)) if b.subtype == BinarySubtype::Uuid));

    let one = test.run_command(doc! { "usersInfo": "bob" }).await.unwrap();
    assert_eq!(names(&one), ["test.bob"]);
    let one = root
        .database("admin")
        .run_command(doc! { "usersInfo": { "user": "ann", "db": "test" } })
        .await
        .unwrap();
    assert_eq!(names(&one), ["test.ann"]);
    let list = test
        .run_command(doc! { "usersInfo": ["bob", { "user": "root", "db": "admin" }, "nobody"] })
        .await
        .unwrap();
    assert_eq!(names(&list), ["test.bob", "admin.root"]);
    let every = root
        .database("admin")
        .run_command(doc! { "usersInfo": 1, "forAllDBs": true })
        .await
        .unwrap();
    assert_eq!(names(&every), ["admin.root", "test.ann", "test.bob"]);

    let creds = test
        .run_command(doc! { "usersInfo": "ann", "showCredentials": true })
        .await
        .unwrap();
    let user = creds.get_array("users").unwrap()[0].as_document().unwrap();
    let c = user.get_document("credentials").unwrap();
    for (mech, iterations) in [("SCRAM-SHA-1", 10000), ("SCRAM-SHA-256", 15000)] {
        let m = c.get_document(mech).unwrap();
        assert_eq!(m.get_i32("iterationCount").unwrap(), iterations);
        for k in ["salt", "storedKey", "serverKey"] {
            assert!(!m.get_str(k).unwrap().is_empty());
        }
    }
    // The stored document has mongod's shape, _id "db.user".
    let stored = root
        .database("admin")
        .collection::<Document>("system.users")
        .find_one(doc! { "_id": "test.ann" })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.get_str("user").unwrap(), "ann");
    assert!(stored.get_document("credentials").is_ok());
}

// https://www.mongodb.com/docs/manual/reference/command/nav-user-management/
// (createUser 51003, dropUser 11 UserNotFound, RoleNotFound 31), and
// jstests/auth/user_management_commands_lib.js: changes apply to
// connections already authenticated as the user.
#[tokio::test]
async fn user_management_changes_apply_at_once() {
    let node = TestNode::start_with_auth();
    let root = bootstrap(&node).await;
    let admin = root.database("admin");
    create_user(&root, "u", bson_roles(&[("read", "test")])).await;
    let msg = expect_code(
        admin
            .run_command(doc! { "createUser": "u", "pwd": "pw", "roles": [] })
            .await,
        51003,
    );
    assert_eq!(msg, "User \"u@admin\" already exists");
    expect_code(
        admin
            .run_command(doc! { "createUser": "v", "pwd": "pw", "roles": ["nosuchrole"] })
            .await,
        31,
    );
    expect_code(
        admin
            .run_command(doc! { "createUser": "v", "pwd": "pw", "roles": [{ "role": "readAnyDatabase", "db": "test" }] })
            .await,
        31,
    );
    expect_code(
        admin
            .run_command(doc! { "createUser": "v", "roles": [] })
            .await,
        2,
    );
    expect_code(
        admin
            .run_command(doc! { "createUser": "v", "pwd": "pw" })
            .await,
        40414,
    );
    expect_code(admin.run_command(doc! { "dropUser": "nobody" }).await, 11);
    expect_code(
        admin
            .run_command(doc! { "grantRolesToUser": "nobody", "roles": ["read"] })
            .await,
        11,
    );

    let u = node.client_as("u", "pw", "admin", SHA256).await;
    let c = u.database("test").collection::<Document>("c");
    c.find_one(doc! {}).await.unwrap();
    expect_code(c.insert_one(doc! { "x": 1 }).await, 13);
    admin
        .run_command(
            doc! { "grantRolesToUser": "u", "roles": [{ "role": "readWrite", "db": "test" }] },
        )
        .await
        .unwrap();
    c.insert_one(doc! { "x": 1 }).await.unwrap();
    admin
        .run_command(doc! { "revokeRolesFromUser": "u", "roles": [{ "role": "readWrite", "db": "test" }, { "role": "read", "db": "test" }] })
        .await
        .unwrap();
    expect_code(c.find_one(doc! {}).await, 13);

    admin
        .run_command(
            doc! { "updateUser": "u", "pwd": "new", "roles": [{ "role": "read", "db": "test" }] },
        )
        .await
        .unwrap();
    let old = node.client_as("u", "pw", "admin", SHA256).await;
    assert!(
        old.database("test")
            .collection::<Document>("c")
            .find_one(doc! {})
            .await
            .is_err()
    );
    let new = node.client_as("u", "new", "admin", SHA1).await;
    new.database("test")
        .collection::<Document>("c")
        .find_one(doc! {})
        .await
        .unwrap();
    expect_code(admin.run_command(doc! { "updateUser": "u" }).await, 2);

    // A dropped user's connections lose its privileges.
    admin.run_command(doc! { "dropUser": "u" }).await.unwrap();
    expect_code(
        new.database("test")
            .collection::<Document>("c")
            .find_one(doc! {})
            .await,
        13,
    );
    create_user(&root, "t1", Bson::Array(vec![])).await;
    root.database("test")
        .run_command(doc! { "createUser": "t2", "pwd": "pw", "roles": [] })
        .await
        .unwrap();
    let r = root
        .database("test")
        .run_command(doc! { "dropAllUsersFromDatabase": 1 })
        .await
        .unwrap();
    assert_eq!(r.get_i32("n").unwrap(), 1);
}

// https://www.mongodb.com/docs/manual/reference/command/connectionStatus/
// and .../logout/: who the connection is, then nobody.
#[tokio::test]
async fn connection_status_and_logout() {
    let node = TestNode::start_with_auth();
    let root = bootstrap(&node).await;
    let admin = root.database("admin");
    let status = admin
        .run_command(doc! { "connectionStatus": 1, "showPrivileges": true })
        .await
        .unwrap();
    let info = status.get_document("authInfo").unwrap();
    assert_eq!(
        info.get_array("authenticatedUsers").unwrap(),
        &vec![Bson::Document(doc! { "user": "root", "db": "admin" })]
    );
    assert_eq!(
        info.get_array("authenticatedUserRoles").unwrap(),
        &vec![Bson::Document(doc! { "role": "root", "db": "admin" })]
    );
    assert!(
        !info
            .get_array("authenticatedUserPrivileges")
            .unwrap()
            .is_empty()
    );
    admin.run_command(doc! { "logout": 1 }).await.unwrap();
    let status = admin
        .run_command(doc! { "connectionStatus": 1 })
        .await
        .unwrap();
    assert!(
        status
            .get_document("authInfo")
            .unwrap()
            .get_array("authenticatedUsers")
            .unwrap()
            .is_empty()
    );
    let msg = expect_code(
        root.database("test")
            .collection::<Document>("c")
            .find_one(doc! {})
            .await,
        13,
    );
    assert_eq!(msg, "command find requires authentication");
}

// The authenticate command takes MONGODB-X509 only, which needs TLS:
// mongod answers ProtocolError without it (authentication_commands.cpp's
// "SSL support is required"), and AuthenticationFailed for other mechanisms.
#[tokio::test]
async fn authenticate_command_refuses_what_it_cannot_do() {
    let node = TestNode::start_with_auth();
    let ext = node.client().await.database("$external");
    let msg = expect_code(
        ext.run_command(doc! { "authenticate": 1, "mechanism": "MONGODB-X509" })
            .await,
        17,
    );
    assert_eq!(
        msg,
        "SSL support is required for the MONGODB-X509 mechanism."
    );
    expect_code(
        ext.run_command(doc! { "authenticate": 1, "mechanism": "PLAIN", "user": "x" })
            .await,
        18,
    );
}

// security.authorization defaults to disabled (MongoDB's default): every
// client runs everything, and clients that send credentials still
// authenticate (connect-mongo's mongodb://user:pw@host/db).
#[tokio::test]
async fn without_authorization_credentials_still_work() {
    let node = TestNode::start();
    let anon = node.client().await;
    anon.database("test")
        .run_command(doc! { "createUser": "app", "pwd": "pw", "roles": ["readWrite"] })
        .await
        .unwrap();
    anon.database("test")
        .collection::<Document>("c")
        .insert_one(doc! { "x": 1 })
        .await
        .unwrap();
    let uri = node
        .uri()
        .replace("mongodb://", "mongodb://app:pw@")
        .replace("/?", "/test?");
    let app = Client::with_uri_str(uri).await.unwrap();
    let found = app
        .database("test")
        .collection::<Document>("c")
        .find_one(doc! {})
        .await
        .unwrap();
    assert!(found.is_some());
    let bad = node
        .uri()
        .replace("mongodb://", "mongodb://app:wrong@")
        .replace("/?", "/test?");
    let e = Client::with_uri_str(bad)
        .await
        .unwrap()
        .database("test")
        .collection::<Document>("c")
        .find_one(doc! {})
        .await
        .unwrap_err();
    assert!(
        matches!(*e.kind, mongodb::error::ErrorKind::Authentication { .. }),
        "{e}"
    );
}

// https://www.mongodb.com/docs/manual/reference/command/listDatabases/
// (authorizedDatabases): a user without the listDatabases action sees the
// databases it has privileges on; `authorizedDatabases: false` needs the action.
#[tokio::test]
async fn list_databases_shows_what_the_user_may_use() {
    let node = TestNode::start_with_auth();
    let root = bootstrap(&node).await;
    for db in ["app", "other"] {
        root.database(db)
            .collection::<Document>("c")
            .insert_one(doc! { "x": 1 })
            .await
            .unwrap();
    }
    create_user(&root, "reader", bson_roles(&[("read", "app")])).await;
    create_user(&root, "any", bson_roles(&[("readAnyDatabase", "admin")])).await;
    let reader = node.client_as("reader", "pw", "admin", SHA256).await;
    assert_eq!(reader.list_database_names().await.unwrap(), ["app"]);
    expect_code(
        reader
            .database("admin")
            .run_command(doc! { "listDatabases": 1, "authorizedDatabases": false })
            .await,
        13,
    );
    let mut all = node
        .client_as("any", "pw", "admin", SHA256)
        .await
        .list_database_names()
        .await
        .unwrap();
    all.sort();
    assert_eq!(all, ["admin", "app", "config", "local", "other"]);
}

// https://www.mongodb.com/docs/manual/reference/command/usersInfo/ ("users
// can always view their own information"), and jstests/auth/
// authz_cache_on_system_modification.js: a direct write to
// admin.system.users takes effect on live connections.
#[tokio::test]
async fn users_see_themselves_and_direct_user_writes_apply() {
    let node = TestNode::start_with_auth();
    let root = bootstrap(&node).await;
    create_user(&root, "me", bson_roles(&[("read", "app")])).await;
    let me = node.client_as("me", "pw", "admin", SHA256).await;
    let r = me
        .database("admin")
        .run_command(doc! { "usersInfo": "me" })
        .await
        .unwrap();
    assert_eq!(r.get_array("users").unwrap().len(), 1);
    expect_code(
        me.database("admin")
            .run_command(doc! { "usersInfo": "root" })
            .await,
        13,
    );
    let c = me.database("app").collection::<Document>("c");
    c.find_one(doc! {}).await.unwrap();
    root.database("admin")
        .collection::<Document>("system.users")
        .delete_one(doc! { "_id": "admin.me" })
        .await
        .unwrap();
    expect_code(c.find_one(doc! {}).await, 13);
}

/// Plays the client side of SCRAM-SHA-256 by hand over `run_command`, with
/// base64 string payloads and without `skipEmptyExchange` (the three-round
/// form older drivers use); returns the final reply or the first error.
async fn scram_sha256_by_hand(
    db: &mongodb::Database,
    user: &str,
    pwd: &str,
) -> mongodb::error::Result<Document> {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD as B64;
    use hmac::{Hmac, KeyInit, Mac};
    use sha2::{Digest, Sha256};
    let hmac = |key: &[u8], data: &[u8]| {
        let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap();
        m.update(data);
        m.finalize().into_bytes().to_vec()
    };
    let bare = format!("n={user},r=handmadenonce");
    let r = db
        .run_command(doc! {
            "saslStart": 1, "mechanism": "SCRAM-SHA-256",
            "payload": B64.encode(format!("n,,{bare}")),
        })
        .await?;
    let server_first =
        String::from_utf8(B64.decode(r.get_str("payload").unwrap()).unwrap()).unwrap();
    let field = |k: &str| {
        server_first
            .split(',')
            .find_map(|a| a.strip_prefix(k))
            .unwrap()
            .to_owned()
    };
    let (nonce, salt, iterations) = (field("r="), B64.decode(field("s=")).unwrap(), field("i="));
    let mut salted = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<Sha256>(
        pwd.as_bytes(),
        &salt,
        iterations.parse().unwrap(),
        &mut salted,
    );
    let client_key = hmac(&salted, b"Client Key");
    let stored_key = Sha256::digest(&client_key);
    let without_proof = format!("c=biws,r={nonce}");
    let auth_message = format!("{bare},{server_first},{without_proof}");
    let signature = hmac(&stored_key, auth_message.as_bytes());
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&signature)
        .map(|(k, s)| k ^ s)
        .collect();
    let r = db
        .run_command(doc! {
            "saslContinue": 1, "conversationId": 1,
            "payload": B64.encode(format!("{without_proof},p={}", B64.encode(proof))),
        })
        .await?;
    assert!(
        !r.get_bool("done").unwrap(),
        "without skipEmptyExchange one more round follows"
    );
    let server_final =
        String::from_utf8(B64.decode(r.get_str("payload").unwrap()).unwrap()).unwrap();
    let expected = hmac(&hmac(&salted, b"Server Key"), auth_message.as_bytes());
    assert_eq!(server_final, format!("v={}", B64.encode(expected)));
    let r = db
        .run_command(doc! { "saslContinue": 1, "conversationId": 1, "payload": "" })
        .await?;
    assert!(r.get_bool("done").unwrap());
    Ok(r)
}

// RFC 7677 as mongod frames it (jstests/auth/speculative-sasl-start.js,
// sasl_commands.cpp's conversationId 1 and base64 string payloads), and
// mongod 6's one user per connection ("Each client connection may only be
// authenticated once", 5626701).
#[tokio::test]
async fn hand_played_scram_authenticates_one_user_per_connection() {
    let node = TestNode::start_with_auth();
    let root = bootstrap(&node).await;
    create_user(&root, "other", bson_roles(&[("read", "app")])).await;
    let mut opts = mongodb::options::ClientOptions::parse(node.uri())
        .await
        .unwrap();
    opts.max_pool_size = Some(1);
    let single = Client::with_options(opts).unwrap();
    let admin = single.database("admin");
    scram_sha256_by_hand(&admin, "other", "pw").await.unwrap();
    single
        .database("app")
        .collection::<Document>("c")
        .find_one(doc! {})
        .await
        .unwrap();
    // The same user again is fine; another user is refused.
    scram_sha256_by_hand(&admin, "other", "pw").await.unwrap();
    let e = scram_sha256_by_hand(&admin, "root", "pw")
        .await
        .unwrap_err();
    assert_eq!(common::code(&e), Some(5626701), "{e}");
    assert!(message(&e).ends_with("Previously authenticated as: other@admin"));
    let wrong = scram_sha256_by_hand(&admin, "root", "nope")
        .await
        .unwrap_err();
    assert_eq!(common::code(&wrong), Some(18));
}

/// Manual, "Privilege Actions" and `$out`/`$merge` "Access Control":
/// a writing stage needs `insert` and `remove` (`$out`) or `insert` and
/// `update` (`$merge`) on its target, which `read` does not grant.
#[tokio::test]
async fn writing_stages_need_write_privileges_on_their_target() {
    let node = TestNode::start_with_auth();
    let admin = bootstrap(&node).await;
    admin
        .database("w")
        .collection::<Document>("source")
        .insert_one(doc! { "_id": 1 })
        .await
        .unwrap();
    create_user(
        &admin,
        "reader",
        mongodb::bson::bson!([{ "role": "read", "db": "w" }]),
    )
    .await;
    create_user(
        &admin,
        "writer",
        mongodb::bson::bson!([{ "role": "readWrite", "db": "w" }]),
    )
    .await;
    let aggregate = |client: Client, stage: Document| async move {
        client
            .database("w")
            .run_command(doc! { "aggregate": "source", "pipeline": [stage], "cursor": {} })
            .await
    };
    let reader = node.client_as("reader", "pw", "admin", SHA256).await;
    expect_code(aggregate(reader.clone(), doc! { "$out": "copy" }).await, 13);
    expect_code(aggregate(reader, doc! { "$merge": "copy" }).await, 13);
    let writer = node.client_as("writer", "pw", "admin", SHA256).await;
    aggregate(writer.clone(), doc! { "$out": "copy" })
        .await
        .unwrap();
    aggregate(writer.clone(), doc! { "$merge": "copy" })
        .await
        .unwrap();
    // Another database's target needs privileges there.
    expect_code(
        aggregate(writer, doc! { "$out": { "db": "other", "coll": "copy" } }).await,
        13,
    );
}
