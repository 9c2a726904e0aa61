// The Node.js driver against the three-member set rs_check.js initiated:
// it finds the primary from ?replicaSet=rs0, writes with w: "majority"
// (retryable writes on, the driver's default), reads the writes back with
// readPreference secondaryPreferred from a secondary, and a direct write to
// a secondary fails with 10107; watch() sees every change and resumes from
// a token; session.withTransaction commits two collections at once, and
// racing transactions are run again by the driver until each commits.
// Hosts come from EBB_RS_HOSTS.
import { MongoClient } from "mongodb";

const hosts = process.env.EBB_RS_HOSTS;
const client = new MongoClient(`mongodb://${hosts}/?replicaSet=rs0`, {
  serverSelectionTimeoutMS: 30000,
});
await client.connect();
const coll = client.db("rs").collection("node", { writeConcern: { w: "majority" } });
await coll.insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i, n: 0 })));
await coll.updateOne({ _id: 3 }, { $inc: { n: 1 } });
const hello = await client.db("admin").command({ hello: 1 });
if (!hello.isWritablePrimary || hello.setName !== "rs0") throw new Error(JSON.stringify(hello));
const secondary = hello.hosts.find((h) => h !== hello.primary);

const reader = client.db("rs").collection("node", { readPreference: "secondaryPreferred" });
const deadline = Date.now() + 30000;
for (;;) {
  const docs = await reader.find().sort({ _id: 1 }).toArray();
  if (docs.length === 10 && docs[3].n === 1) break;
  if (Date.now() > deadline) throw new Error("the writes were not read back: " + JSON.stringify(docs));
  await new Promise((r) => setTimeout(r, 50));
}

const direct = new MongoClient(`mongodb://${secondary}/?directConnection=true`);
let refused = null;
try {
  await direct.db("rs").collection("node").insertOne({ x: 1 });
} catch (e) {
  refused = e;
}
await direct.close();
if (!refused || refused.code !== 10107) throw new Error("a secondary took a write: " + refused);
async function next(stream, n) {
  const out = [];
  const until = Date.now() + 30000;
  while (out.length < n) {
    if (Date.now() > until) throw new Error(`only ${out.length} of ${n} events`);
    const change = await stream.tryNext();
    if (change) out.push(change);
  }
  return out;
}
const watched = client.db("rs").collection("watched_node", { writeConcern: { w: "majority" } });
const stream = watched.watch([], { fullDocument: "updateLookup" });
await stream.tryNext();
await watched.insertOne({ _id: 1, n: 1 });
await watched.updateOne({ _id: 1 }, { $inc: { n: 1 } });
// updateLookup reads the document as it is when the event is read.
const seen = await next(stream, 2);
await watched.deleteOne({ _id: 1 });
seen.push(...(await next(stream, 1)));
await stream.close();
const kinds = seen.map((e) => e.operationType).join(",");
if (kinds !== "insert,update,delete") throw new Error("events: " + kinds);
if (seen[1].fullDocument.n !== 2 || seen[1].updateDescription.updatedFields.n !== 2)
  throw new Error("update event: " + JSON.stringify(seen[1]));
const resumed = watched.watch([], { resumeAfter: seen[0]._id });
const again = await next(resumed, 2);
await resumed.close();
if (JSON.stringify(again.map((e) => e._id)) !== JSON.stringify(seen.slice(1).map((e) => e._id)))
  throw new Error("resumed at the wrong place: " + JSON.stringify(again));
const bank = client.db("rs_txn_node", { writeConcern: { w: "majority" } });
await bank.collection("accounts").insertMany([
  { _id: "a", balance: 100 },
  { _id: "b", balance: 0 },
]);
await bank.createCollection("ledger");
async function transfer(session, amount) {
  const accounts = bank.collection("accounts");
  const a = await accounts.findOne({ _id: "a" }, { session });
  await accounts.updateOne({ _id: "a" }, { $set: { balance: a.balance - amount } }, { session });
  await accounts.updateOne({ _id: "b" }, { $inc: { balance: amount } }, { session });
  await bank.collection("ledger").insertOne({ amount }, { session });
}
async function worker() {
  const session = client.startSession();
  try {
    for (let i = 0; i < 10; i++) await session.withTransaction((s) => transfer(s, 1));
  } finally {
    await session.endSession();
  }
}
await Promise.all([worker(), worker()]);
const balances = Object.fromEntries(
  (await bank.collection("accounts").find().toArray()).map((d) => [d._id, d.balance]),
);
if (balances.a !== 80 || balances.b !== 20) throw new Error("balances: " + JSON.stringify(balances));
if ((await bank.collection("ledger").countDocuments()) !== 20) throw new Error("ledger");
const aborted = client.startSession();
aborted.startTransaction();
await bank.collection("ledger").insertOne({ amount: -1 }, { session: aborted });
await aborted.abortTransaction();
await aborted.endSession();
if ((await bank.collection("ledger").countDocuments({ amount: -1 })) !== 0) throw new Error("abort");
await client.close();
console.log(
  `node driver: majority writes through ${hello.primary}, read back with secondaryPreferred; watch() resumed from a token; withTransaction with conflicts retried`,
);
