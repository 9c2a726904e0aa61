// mongosh's replica-set helpers against three ebbd members: rs.initiate
// with a config, then rs.status() and rs.conf() once a primary is elected,
// rs.freeze() on a secondary, rs.stepDown() on the primary, then rs.add()
// and rs.remove() of a fourth member (EBB_RS_SPARE) on the new primary, and
// watch() there.
// The config's hosts come from EBB_RS_HOSTS ("h1,h2,h3").
const hosts = process.env.EBB_RS_HOSTS.split(",");
const config = { _id: "rs0", members: hosts.map((host, i) => ({ _id: i, host })) };
const initiated = rs.initiate(config);
if (initiated.ok !== 1) throw new Error("rs.initiate: " + tojson(initiated));
const deadline = Date.now() + 30000;
let status;
for (;;) {
  try {
    status = rs.status();
    if (status.members.some((m) => m.stateStr === "PRIMARY")) break;
  } catch (e) {
    if (Date.now() > deadline) throw e;
  }
  if (Date.now() > deadline) throw new Error("no primary: " + tojson(status));
  sleep(100);
}
if (status.set !== "rs0" || status.members.length !== 3) throw new Error(tojson(status));
const conf = rs.conf();
if (conf._id !== "rs0" || conf.members.map((m) => m.host).join(",") !== hosts.join(",")) {
  throw new Error("rs.conf: " + tojson(conf));
}
let again = null;
try {
  db.adminCommand({ replSetInitiate: config });
} catch (e) {
  again = e;
}
if (!again || again.code !== 23) throw new Error("a second initiate did not fail with 23: " + again);
const first = status.members.find((m) => m.stateStr === "PRIMARY").name;

// A member reached directly, as mongosh's `connect` does.
const on = (host) => connect("mongodb://" + host + "/admin?directConnection=true");
const secondary = status.members.find((m) => m.stateStr === "SECONDARY").name;
db = on(secondary);
const unfrozen = rs.freeze(0);
if (unfrozen.ok !== 1) throw new Error("rs.freeze(0): " + tojson(unfrozen));
db = on(first);
const down = rs.stepDown(30);
if (down.ok !== 1) throw new Error("rs.stepDown: " + tojson(down));
let next = null;
const elected = Date.now() + 30000;
while (!next) {
  if (Date.now() > elected) throw new Error("no primary after rs.stepDown");
  try {
    const s = rs.status();
    const p = s.members.find((m) => m.stateStr === "PRIMARY");
    if (p && p.name !== first) next = p.name;
  } catch (e) {
    // A member between states answers nothing useful yet.
  }
  sleep(100);
}

// The first command on a member just elected may still see it catching up.
const retrying = (what, f) => {
  const until = Date.now() + 30000;
  for (;;) {
    try {
      return f();
    } catch (e) {
      if (Date.now() > until) throw new Error(what + ": " + e);
      sleep(200);
    }
  }
};
const spare = process.env.EBB_RS_SPARE;
db = on(next);
const added = retrying("rs.add", () => rs.add(spare));
if (added.ok !== 1) throw new Error("rs.add: " + tojson(added));
const joined = Date.now() + 30000;
for (;;) {
  const s = rs.status();
  const m = s.members.find((x) => x.name === spare);
  if (m && m.stateStr === "SECONDARY" && s.members.length === 4) break;
  if (Date.now() > joined) throw new Error("the added member did not become a secondary: " + tojson(s));
  sleep(100);
}
if (rs.conf().members.length !== 4) throw new Error("rs.conf after rs.add: " + tojson(rs.conf()));
const removed = retrying("rs.remove", () => rs.remove(spare));
if (removed.ok !== 1) throw new Error("rs.remove: " + tojson(removed));
const after = rs.conf();
if (after.members.length !== 3 || after.members.some((m) => m.host === spare)) {
  throw new Error("rs.conf after rs.remove: " + tojson(after));
}

// watch() on the primary: the change events of an insert and a delete.
const watched = db.getSiblingDB("rs").shell_watched;
const stream = watched.watch();
stream.tryNext();
watched.insertOne({ _id: 1 });
watched.deleteOne({ _id: 1 });
const changes = [];
const watching = Date.now() + 30000;
while (changes.length < 2) {
  if (Date.now() > watching) throw new Error("watch(): only " + tojson(changes));
  const change = stream.tryNext();
  if (change) changes.push(change.operationType);
}
stream.close();
if (changes.join(",") !== "insert,delete") throw new Error("watch(): " + tojson(changes));
print("mongosh: rs.initiate, rs.status, rs.conf, rs.freeze, rs.stepDown, rs.add, rs.remove, watch ok; " +
  "primary " + first + ", then " + next);
