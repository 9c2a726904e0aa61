// The Node.js driver against the three-member set rs_check.js initiated:
// it finds the primary from ?replicaSet=rs0, writes with w: "majority"
// (retryable writes on, the driver's default), reads the writes back with
// readPreference secondaryPreferred from a secondary, and a direct write to
// a secondary fails with 10107. Hosts come from EBB_RS_HOSTS.
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
await client.close();
console.log(`node driver: majority writes through ${hello.primary}, read back with secondaryPreferred`);
