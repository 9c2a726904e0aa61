// mongosh against ebbd: connect, insertOne, find, createIndex, getIndexes;
// a collation; the TTL page's schema-validation example; the shell's admin
// helpers; the profiler.
const name = 'mongosh_' + Math.floor(Math.random() * 1e9);
const d = db.getSiblingDB(name);
const check = (cond, what) => { if (!cond) { throw new Error('check failed: ' + what); } };

const r = d.things.insertOne({ kind: 'widget', n: 1 });
check(r.acknowledged && r.insertedId, 'insertOne acknowledged');
d.things.insertMany([{ kind: 'gadget', n: 2 }, { kind: 'widget', n: 3 }]);

const widgets = d.things.find({ kind: 'widget' }).sort({ n: 1 }).toArray();
check(widgets.length === 2 && widgets[0].n === 1 && widgets[1].n === 3, 'find with filter and sort');

check(d.things.createIndex({ kind: 1 }) === 'kind_1', 'createIndex returns the name');
const idx = d.things.getIndexes();
check(idx.length === 2 && idx[1].name === 'kind_1' && idx[1].key.kind === 1, 'getIndexes lists the index');

check(d.things.countDocuments({ kind: 'widget' }) === 2, 'countDocuments');
// A case-insensitive session lookup with a collation.
const ci = { locale: 'en_US', strength: 2 };
d.sessions.createIndex({ user: 1 }, { unique: true, collation: ci });
d.sessions.insertOne({ user: 'Alice', sid: 's1' });
check(d.sessions.findOne({ user: 'ALICE' }, null, { collation: ci }) !== null, 'find with collation');
check(d.sessions.find({ user: 'ALICE' }).collation(ci).toArray().length === 1, 'cursor collation');
check(d.sessions.findOne({ user: 'ALICE' }) === null, 'binary comparison without a collation');
let dup = false;
try { d.sessions.insertOne({ user: 'alice', sid: 's2' }); } catch (e) { dup = e.code === 11000; }
check(dup, 'case-insensitive unique index');


// The TTL manual page's schema-validation example ("TTL and Schema
// validation"), verbatim.
d.createCollection(
"eventlog",
{
validator: {
$jsonSchema: {
bsonType: "object",
required: [ "lastModifiedDate" ],
properties: {
lastModifiedDate: {
bsonType: "date",
description: "Must be a valid date."
}
}
}
}
}
)
d.eventlog.insertOne({ lastModifiedDate: new Date() });
let refused = null;
try { d.eventlog.insertOne({ lastModifiedDate: 'yesterday' }); } catch (e) { refused = e; }
check(refused !== null && refused.code === 121, 'an invalid insert fails with 121');
const rule = refused.errInfo.details.schemaRulesNotSatisfied[0];
const property = rule.propertiesNotSatisfied[0];
check(rule.operatorName === 'properties' && property.propertyName === 'lastModifiedDate' &&
      property.description === 'Must be a valid date.' &&
      property.details[0].operatorName === 'bsonType' &&
      property.details[0].consideredType === 'string', 'errInfo explains the failure');
check(d.eventlog.countDocuments({}) === 1, 'only the valid document is stored');
check(d.getCollectionInfos({ name: 'eventlog' })[0].options.validator.$jsonSchema.required[0] === 'lastModifiedDate',
      'listCollections shows the validator');

// The shell's admin helpers. db.coll.stats() reads $collStats.
const stats = d.eventlog.stats();
check(stats.count === 1 && stats.nindexes === 1 && stats.ns === d.getName() + '.eventlog',
      'db.coll.stats() reports the collection: ' + JSON.stringify(stats));
check(d.eventlog.stats({ scale: 1024 }).scaleFactor === 1024, 'stats() honours scale');

// db.currentOp() shows the TTL monitor's delete while a large expiry runs.
const big = d.getSiblingDB('ebb_expiry');
big.dropDatabase();
// The documents are stored not yet due, then made due at once by one
// update, so the monitor's pass starts after the update returns and
// deletes 200,000 documents while the loop below polls.
big.events.createIndex({ expireAt: 1 }, { expireAfterSeconds: 0 });
const tomorrow = new Date(Date.now() + 86400000);
for (let batch = 0; batch < 40; batch++) {
  const docs = [];
  for (let i = 0; i < 5000; i++) docs.push({ batch, i, expireAt: tomorrow });
  big.events.insertMany(docs, { ordered: false });
}
big.events.updateMany({}, { $set: { expireAt: new Date(0) } });
let sawTtl = null;
const deadline = Date.now() + 60000;
while (sawTtl === null && Date.now() < deadline) {
  const ops = db.currentOp().inprog.filter(op => op.desc === 'TTLMonitor');
  if (ops.length > 0) sawTtl = ops[0];
}
check(sawTtl !== null && sawTtl.op === 'remove' && sawTtl.ns === 'ebb_expiry.events',
      'db.currentOp() shows a running TTL delete: ' + JSON.stringify(sawTtl));
big.dropDatabase();

// $out and $merge from the shell.
d.orders.insertMany([{ _id: 1, day: 'mon', n: 2 }, { _id: 2, day: 'mon', n: 3 }, { _id: 3, day: 'tue', n: 4 }]);
d.orders.aggregate([{ $group: { _id: '$day', n: { $sum: '$n' } } }, { $out: 'daily' }]);
check(d.daily.findOne({ _id: 'mon' }).n === 5, '$out wrote the report');
d.orders.aggregate([{ $group: { _id: '$day', n: { $sum: 1 } } }, { $project: { orders: '$n' } },
                    { $merge: { into: 'daily', whenMatched: 'merge' } }]);
check(d.daily.findOne({ _id: 'tue' }).orders === 1 && d.daily.findOne({ _id: 'tue' }).n === 4,
      '$merge folded counts into the report');

// The profiler: db.setProfilingLevel(2), then db.system.profile.find().
const was = d.setProfilingLevel(2);
check(was.was === 0 && was.ok === 1, 'setProfilingLevel answers the previous level');
check(d.getProfilingStatus().was === 2, 'getProfilingStatus shows level 2');
d.things.find({ kind: 'gadget' }).toArray();
const profiled = d.system.profile.find({ op: 'query', ns: name + '.things' }).toArray();
check(profiled.length === 1 && profiled[0].nreturned === 1 && profiled[0].planSummary === 'IXSCAN { kind: 1 }',
      'system.profile shows the find');
// The manual's TTL page: TTL deletes show in the profiler's data.
d.expiring.createIndex({ at: 1 }, { expireAfterSeconds: 0 });
d.expiring.insertOne({ at: new Date(Date.now() - 60000) });
const profileDeadline = Date.now() + 30000;
let ttlDeletes = [];
while (ttlDeletes.length === 0 && Date.now() < profileDeadline) {
  ttlDeletes = d.system.profile.find({ op: 'remove', ns: name + '.expiring' }).toArray();
}
check(ttlDeletes.length === 1 && ttlDeletes[0].ndeleted === 1, 'system.profile shows the TTL delete');
d.setProfilingLevel(0);
d.dropDatabase();
print('mongosh checks passed');
