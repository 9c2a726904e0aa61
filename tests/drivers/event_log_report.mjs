// The Node.js driver's event-log report against ebbd: $match on a
// date range, $group by $dateToString day, $lookup into users, $out into a
// report collection, then the report read back. Usage: node event_log_report.mjs URI
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';

const client = new MongoClient(process.argv[2]);
await client.connect();
const db = client.db('eventlog_' + Math.floor(Math.random() * 1e9));
try {
  await db.collection('users').insertMany([
    { _id: 'u1', name: 'Ada', plan: 'pro' },
    { _id: 'u2', name: 'Grace', plan: 'free' },
  ]);
  const day = (d, h) => new Date(Date.UTC(2026, 10, d, h));
  await db.collection('events').insertMany([
    { user: 'u1', kind: 'login', at: day(20, 9) },
    { user: 'u1', kind: 'view', at: day(20, 10) },
    { user: 'u2', kind: 'login', at: day(20, 23) },
    { user: 'u2', kind: 'view', at: day(21, 1) },
    { user: 'u1', kind: 'login', at: day(22, 8) },
    // Outside the range.
    { user: 'u2', kind: 'login', at: day(19, 12) },
  ]);
  const cursor = db.collection('events').aggregate([
    { $match: { at: { $gte: day(20, 0), $lt: day(23, 0) } } },
    { $group: {
        _id: { day: { $dateToString: { format: '%Y-%m-%d', date: '$at' } }, user: '$user' },
        events: { $sum: 1 },
    } },
    { $lookup: { from: 'users', localField: '_id.user', foreignField: '_id', as: 'who' } },
    { $project: { _id: 0, day: '$_id.day', user: { $first: '$who.name' }, events: 1 } },
    { $sort: { day: 1, user: 1 } },
    { $out: 'daily_report' },
  ]);
  assert.deepEqual(await cursor.toArray(), []);
  const report = await db.collection('daily_report')
    .find({}, { projection: { _id: 0 } }).sort({ day: 1, user: 1 }).toArray();
  assert.deepEqual(report, [
    { events: 2, day: '2026-11-20', user: 'Ada' },
    { events: 1, day: '2026-11-20', user: 'Grace' },
    { events: 1, day: '2026-11-21', user: 'Grace' },
    { events: 1, day: '2026-11-22', user: 'Ada' },
  ]);
  console.log('node driver event-log report passed');
} finally {
  await db.dropDatabase();
  await client.close();
}
