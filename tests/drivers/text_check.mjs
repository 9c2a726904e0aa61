// The Node.js driver against ebbd: a model with a 2dsphere, a text and a
// TTL index on one collection, searched with $near, $geoWithin and $text
// sorted by score, whose documents then expire; a model of legacy pairs
// with a 2d index, searched on the plane; and events of any shape under
// one wildcard index.
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 5000 });
await client.connect();
const db = client.db('text_check_' + Date.now());
const places = db.collection('places');
const point = (lng, lat) => ({ type: 'Point', coordinates: [lng, lat] });
try {
  await places.createIndex({ loc: '2dsphere' });
  await places.createIndex({ name: 'text', about: 'text' }, { weights: { name: 3 }, name: 'words' });
  await places.createIndex({ seen: 1 }, { expireAfterSeconds: 2 });
  const now = new Date();
  await places.insertMany([
    { _id: 1, name: 'Coffee corner', about: 'espresso and cakes', loc: point(2.35, 48.85), seen: now },
    { _id: 2, name: 'Tea house', about: 'tea, coffee on request', loc: point(2.34, 48.86), seen: now },
    { _id: 3, name: 'Bakery', about: 'bread', loc: point(2.29, 48.86), seen: now },
    { _id: 4, name: 'Closed coffee bar', about: 'coffee', loc: point(2.35, 48.85), seen: new Date(now - 3600e3) },
  ]);
  const near = { loc: { $near: { $geometry: point(2.351, 48.851), $maxDistance: 2000 } } };
  assert.deepEqual((await places.find(near).toArray()).map((d) => d._id), [1, 2]);
  const box = { type: 'Polygon', coordinates: [[[2.3, 48.8], [2.4, 48.8], [2.4, 48.9], [2.3, 48.9], [2.3, 48.8]]] };
  const within = (await places.find({ loc: { $geoWithin: { $geometry: box } } }).toArray()).map((d) => d._id);
  assert.deepEqual(within.sort(), [1, 2]);
  const score = { score: { $meta: 'textScore' } };
  const found = await places.find({ $text: { $search: 'coffee cake' } }).project(score).sort(score).toArray();
  assert.deepEqual(found.map((d) => d._id), [1, 2]);
  assert.ok(found[0].score > found[1].score);
  const idx = (await places.indexes()).find((i) => i.name === 'words');
  assert.deepEqual(idx.key, { _fts: 'text', _ftsx: 1 });
  const deadline = Date.now() + 30000;
  while ((await db.command({ validate: 'places' })).nrecords > 0) {
    assert.ok(Date.now() < deadline, 'places did not expire');
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(await places.find({ $text: { $search: 'coffee' } }).toArray(), []);
  const shops = db.collection('shops');
  await shops.createIndex({ loc: '2d' });
  await shops.insertMany([
    { _id: 'a', loc: [1, 1] },
    { _id: 'b', loc: [2, 2] },
    { _id: 'c', loc: [40, 40] },
  ]);
  const nearest = await shops.find({ loc: { $near: [0, 0], $maxDistance: 5 } }).toArray();
  assert.deepEqual(nearest.map((d) => d._id), ['a', 'b']);
  const boxed = await shops.find({ loc: { $geoWithin: { $box: [[30, 30], [50, 50]] } } }).toArray();
  assert.deepEqual(boxed.map((d) => d._id), ['c']);
  await assert.rejects(shops.insertOne({ loc: [0, 200] }), (e) => e.code === 13027);
  // A wildcard index: any one path it holds is searched through it.
  const events = db.collection('events');
  await events.createIndex({ '$**': 1 });
  await events.insertMany([
    { _id: 1, user: { name: 'ann', langs: ['en', 'fr'] } },
    { _id: 2, user: { name: 'bob' }, score: 7 },
  ]);
  const fr = await events.find({ 'user.langs': 'fr' }).toArray();
  assert.deepEqual(fr.map((d) => d._id), [1]);
  const plan = (await events.find({ score: { $gt: 5 } }).explain()).queryPlanner.winningPlan;
  assert.deepEqual(plan.inputStage.keyPattern, { $_path: 1, score: 1 });
  console.log('text check: ok');
} finally {
  await db.dropDatabase();
  await client.close();
}
