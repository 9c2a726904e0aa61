// The Node.js driver against the three-member set rs_check.js initiated:
// it finds the primary from ?replicaSet=rs0, writes with w: "majority"
// (retryable writes on, the driver's default), reads the writes back with
// readPreference secondaryPreferred from a secondary, and a direct write to
// a secondary fails with 10107; watch() sees every change and resumes from
// a token. Hosts come from EBB_RS_HOSTS. Transactions: txn_check.mjs.
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
await client.close();
console.log(
  `node driver: majority writes through ${hello.primary}, read back with secondaryPreferred; watch() resumed from a token`,
);
