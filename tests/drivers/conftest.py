"""Shared fixtures: a pymongo client for the ebbd that .ci/drivers.sh started."""
import os
import uuid

import pymongo
import pytest


@pytest.fixture(scope="session")
def client():
    c = pymongo.MongoClient(os.environ["EBB_URI"], serverSelectionTimeoutMS=5000)
    yield c
    c.close()


@pytest.fixture
def db(client):
    name = "t_" + uuid.uuid4().hex[:10]
    yield client[name]
    client.drop_database(name)
