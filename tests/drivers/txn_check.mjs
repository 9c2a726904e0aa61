// The Node.js driver's transactions against the set whose URI is the first
// argument (a three-member set and a one-member set in CI): withTransaction
// moves money between two documents and writes a ledger entry, two racing
// sessions are run again by the driver until each transfer commits once, an
// aborted transaction leaves nothing, a due document a transaction writes is
// hidden at once and expired after the commit; with --crash, kill -9 of the
// primary during a commit.
import { MongoClient } from "mongodb";

const client = new MongoClient(process.argv[2], { serverSelectionTimeoutMS: 30000 });
await client.connect();
const bank = client.db("txn_check_node", { writeConcern: { w: "majority" } });
await bank.dropDatabase();
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
  const { insertedId } = await bank.collection("ledger").insertOne({ amount }, { session });
  if (await bank.collection("ledger").findOne({ _id: insertedId }))
    throw new Error("a transaction's write was seen outside it");
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

// TTL and transactions: a due document is hidden from the transaction that
// writes it and from everyone after the commit, and the monitor deletes it.
const admin = client.db("admin");
const ttl = async () => (await admin.command({ serverStatus: 1 })).metrics.ttl.deletedDocuments;
const sessionsColl = bank.collection("sessions");
await sessionsColl.createIndex({ at: 1 }, { expireAfterSeconds: 0 });
const deletedBefore = await ttl();
const now = Date.now();
const ttlSession = client.startSession();
await ttlSession.withTransaction(async (s) => {
  await sessionsColl.insertMany(
    [
      { _id: "due", at: new Date(now - 3600_000) },
      { _id: "live", at: new Date(now + 3600_000) },
    ],
    { session: s },
  );
  const seen = await sessionsColl.find({}, { session: s }).toArray();
  if (seen.length !== 1 || seen[0]._id !== "live") throw new Error("due seen: " + JSON.stringify(seen));
});
await ttlSession.endSession();
for (const until = Date.now() + 30000; (await ttl()) === deletedBefore; ) {
  if (Date.now() > until) throw new Error("the committed due document was not expired");
  await new Promise((r) => setTimeout(r, 50));
}

// With --crash (a three-member set on this machine): kill -9 of the primary
// during a commit, the member started again from its own command line; the
// set keeps all of the transaction or none, and a commit sent again says which.
let crashed = "";
if (process.argv.includes("--crash")) {
  const { spawn } = await import("node:child_process");
  const crash = bank.collection("crash_node");
  await bank.createCollection("crash_node");
  const session = client.startSession();
  session.startTransaction({ writeConcern: { w: "majority" } });
  await crash.insertMany(
    Array.from({ length: 50 }, (_, i) => ({ i })),
    { session },
  );
  const { argv } = await admin.command({ getCmdLineOpts: 1 });
  const { pid } = await admin.command({ serverStatus: 1 });
  const { me } = await admin.command({ hello: 1 });
  const first = session.commitTransaction().then(
    () => true,
    () => false,
  );
  process.kill(pid, "SIGKILL");
  const firstOk = await first;
  const again = await session.commitTransaction().then(
    () => true,
    () => false,
  );
  await session.endSession();
  const held = await crash.countDocuments();
  if ((firstOk || again) !== (held === 50) || (held !== 0 && held !== 50))
    throw new Error(`commit ${firstOk}/${again} but ${held} of 50 documents held`);
  // Started again, it rejoins the set; the checks after this one use it.
  spawn(argv[0], argv.slice(1), { stdio: "ignore", detached: true }).unref();
  const direct = new MongoClient(`mongodb://${me}/?directConnection=true`, {
    serverSelectionTimeoutMS: 1000,
  });
  for (const until = Date.now() + 60000; ; ) {
    const hello = await direct.db("admin").command({ hello: 1 }).catch(() => ({}));
    if (hello.secondary || hello.isWritablePrimary) break;
    if (Date.now() > until) throw new Error("the killed member did not rejoin");
    await new Promise((r) => setTimeout(r, 100));
  }
  await direct.close();
  crashed = "; kill -9 of the primary during a commit";
}
await client.close();
console.log(`node driver: withTransaction (commit, conflicts retried, abort, TTL${crashed})`);
