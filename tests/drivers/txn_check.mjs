// The Node.js driver's transactions against the set whose URI is the first
// argument (a three-member set and a one-member set in CI): withTransaction
// moves money between two documents and writes a ledger entry, two racing
// sessions are run again by the driver until each transfer commits once, and
// an aborted transaction leaves nothing.
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
await client.close();
console.log("node driver: withTransaction (commit, conflicts retried, abort)");
