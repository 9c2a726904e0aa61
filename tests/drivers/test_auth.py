"""pymongo against an ebbd started with --auth (.ci/drivers.sh sets EBB_AUTH_URI).

Expected behaviour from MongoDB's "SCRAM" and "Localhost Exception" manual pages:
the first user is created over loopback without credentials, then clients
authenticate with username/password and either SCRAM mechanism.
"""
import os

import pymongo
import pytest
from pymongo.errors import OperationFailure

URI = os.environ.get("EBB_AUTH_URI")
pytestmark = pytest.mark.skipif(not URI, reason="EBB_AUTH_URI not set")


@pytest.fixture(scope="module")
def admin_user():
    anon = pymongo.MongoClient(URI, serverSelectionTimeoutMS=5000)
    try:
        anon.admin.command("createUser", "root", pwd="pw", roles=["root"])
    except OperationFailure as e:
        # A rerun against the same node: the user exists, the exception is over.
        assert e.code == 13, e
    finally:
        anon.close()
    return ("root", "pw")


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-1"])
def test_username_password_with_each_scram_mechanism(admin_user, mechanism):
    user, pwd = admin_user
    c = pymongo.MongoClient(
        URI, username=user, password=pwd, authSource="admin", authMechanism=mechanism,
        serverSelectionTimeoutMS=5000,
    )
    try:
        coll = c["t_auth"]["c"]
        coll.insert_one({"mechanism": mechanism})
        assert coll.count_documents({"mechanism": mechanism}) >= 1
        status = c.admin.command("connectionStatus")
        assert status["authInfo"]["authenticatedUsers"] == [{"user": "root", "db": "admin"}]
    finally:
        c.close()


def test_unauthenticated_and_wrong_password_are_refused(admin_user):
    anon = pymongo.MongoClient(URI, serverSelectionTimeoutMS=5000)
    try:
        with pytest.raises(OperationFailure) as e:
            anon["t_auth"]["c"].find_one()
        assert e.value.code == 13
    finally:
        anon.close()
    wrong = pymongo.MongoClient(
        URI, username="root", password="nope", authSource="admin", serverSelectionTimeoutMS=5000
    )
    try:
        with pytest.raises(OperationFailure) as e:
            wrong["t_auth"]["c"].find_one()
        assert e.value.code == 18
    finally:
        wrong.close()


TLS_CA = os.environ.get("EBB_TLS_CA")


@pytest.mark.skipif(not TLS_CA, reason="EBB_TLS_CA not set")
def test_username_password_over_tls(admin_user):
    """pymongo with tls=True and the test CA, authenticating as root."""
    user, pwd = admin_user
    c = pymongo.MongoClient(
        URI, tls=True, tlsCAFile=TLS_CA,
        username=user, password=pwd, authSource="admin", serverSelectionTimeoutMS=5000,
    )
    try:
        status = c.admin.command("connectionStatus")
        assert status["authInfo"]["authenticatedUsers"][0]["user"] == user
        c["t_tls"]["c"].insert_one({"over": "tls"})
        assert c["t_tls"]["c"].count_documents({"over": "tls"}) >= 1
    finally:
        c.close()


@pytest.mark.skipif(not TLS_CA, reason="EBB_TLS_CA not set")
def test_a_session_store_url_with_credentials(admin_user):
    """What connect-mongo and its kin do with a URL that carries credentials:
    a sessions collection with a TTL index on `expires`, upserts by session id,
    reads by id."""
    import datetime
    user, pwd = admin_user
    port = URI.split(":")[2].split("/")[0]
    url = (f"mongodb://{user}:{pwd}@127.0.0.1:{port}/sessions"
           f"?authSource=admin&tls=true&tlsCAFile={TLS_CA}&directConnection=true")
    c = pymongo.MongoClient(url, serverSelectionTimeoutMS=5000)
    try:
        sessions = c.get_default_database()["sessions"]
        sessions.create_index("expires", expireAfterSeconds=0)
        expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=1)
        sessions.update_one(
            {"_id": "sid-1"},
            {"$set": {"session": '{"cookie":{}}', "expires": expires}},
            upsert=True,
        )
        found = sessions.find_one({"_id": "sid-1", "expires": {"$gt": datetime.datetime.now(datetime.timezone.utc)}})
        assert found is not None and found["session"] == '{"cookie":{}}'
    finally:
        c.close()
