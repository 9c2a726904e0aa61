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
