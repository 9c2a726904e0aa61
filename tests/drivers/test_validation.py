"""pymongo against ebbd: the TTL manual page's schema-validation example
("TTL and Schema validation"), verbatim, with the errInfo mongod 5.0+
reports; a TTL index works on the validated collection as on any other."""
import datetime

import pytest
from pymongo.errors import OperationFailure, WriteError

SEED_VALIDATOR = {
    "$jsonSchema": {
        "bsonType": "object",
        "required": ["lastModifiedDate"],
        "properties": {
            "lastModifiedDate": {
                "bsonType": "date",
                "description": "Must be a valid date."
            }
        }
    }
}


def test_seed_example_accepts_a_date_and_refuses_a_string_with_details(db):
    db.create_collection("eventlog", validator=SEED_VALIDATOR)
    info = db.command("listCollections", filter={"name": "eventlog"})["cursor"]["firstBatch"][0]
    assert info["options"]["validator"] == SEED_VALIDATOR

    db.eventlog.insert_one({"_id": 1, "lastModifiedDate": datetime.datetime.now(datetime.timezone.utc)})
    # TTL indexes work on such collections normally.
    assert db.eventlog.create_index("lastModifiedDate", expireAfterSeconds=3600) == "lastModifiedDate_1"

    with pytest.raises(WriteError) as caught:
        db.eventlog.insert_one({"_id": 2, "lastModifiedDate": "2024-01-01"})
    assert caught.value.code == 121
    assert caught.value.details["errmsg"] == "Document failed validation"
    assert caught.value.details["errInfo"] == {
        "failingDocumentId": 2,
        "details": {
            "operatorName": "$jsonSchema",
            "schemaRulesNotSatisfied": [{
                "operatorName": "properties",
                "propertiesNotSatisfied": [{
                    "propertyName": "lastModifiedDate",
                    "description": "Must be a valid date.",
                    "details": [{
                        "operatorName": "bsonType",
                        "specifiedAs": {"bsonType": "date"},
                        "reason": "type did not match",
                        "consideredValue": "2024-01-01",
                        "consideredType": "string",
                    }],
                }],
            }],
        },
    }

    with pytest.raises(WriteError) as caught:
        db.eventlog.insert_one({"_id": 3})
    assert caught.value.code == 121
    assert caught.value.details["errInfo"]["details"]["schemaRulesNotSatisfied"] == [{
        "operatorName": "required",
        "specifiedAs": {"required": ["lastModifiedDate"]},
        "missingProperties": ["lastModifiedDate"],
    }]
    assert [d["_id"] for d in db.eventlog.find()] == [1]

    # bypass_document_validation stores it anyway; $jsonSchema finds it.
    db.eventlog.insert_one({"_id": 4}, bypass_document_validation=True)
    assert [d["_id"] for d in db.eventlog.find({"$nor": [SEED_VALIDATOR]})] == [4]


def test_invalid_schema_is_refused_and_creates_nothing(db):
    with pytest.raises(OperationFailure) as caught:
        db.create_collection("bad", validator={"$jsonSchema": {"bsonType": "object", "format": "date"}})
    assert caught.value.code == 9
    assert "bad" not in db.list_collection_names()


def test_coll_mod_warn_and_moderate(db):
    db.create_collection("eventlog", validator=SEED_VALIDATOR)
    db.command("collMod", "eventlog", validationAction="warn")
    db.eventlog.insert_one({"_id": 1, "lastModifiedDate": "not a date"})
    db.command("collMod", "eventlog", validationAction="error", validationLevel="moderate")
    db.eventlog.update_one({"_id": 1}, {"$set": {"note": "still invalid"}})
    with pytest.raises(WriteError) as caught:
        db.eventlog.insert_one({"_id": 2})
    assert caught.value.code == 121
    options = db.command("listCollections", filter={"name": "eventlog"})["cursor"]["firstBatch"][0]["options"]
    assert (options["validationLevel"], options["validationAction"]) == ("moderate", "error")
