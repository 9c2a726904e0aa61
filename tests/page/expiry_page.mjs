// The expiry page in headless Chromium (run by .ci/page.sh): signs in with an ebb user, checks
// the overview's tables and charts and a collection's forecast bars against documents with
// known dates, explains a filter, and previews then applies an expireAfterSeconds change,
// checking through the driver that the preview changed nothing and the change took.
// EBB_URI: the node; EBB_PAGE: its HTTPS listener; EBB_SHOTS: where screenshots go (optional);
// EBB_SHOTS_TRAFFIC: seconds of expiring traffic to run before the overview's screenshot, so its
// charts have lines to show (optional, for the screenshots only).
import assert from "node:assert/strict";
import path from "node:path";
import { MongoClient } from "mongodb";
import { chromium } from "playwright-core";

const uri = process.env.EBB_URI;
const base = process.env.EBB_PAGE;
const shots = process.env.EBB_SHOTS || "";
const traffic = shots ? Number(process.env.EBB_SHOTS_TRAFFIC || 0) : 0;
const MIN = 60_000;
const HOUR = 60 * MIN;

async function until(what, check, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The first user, through the localhost exception, then the page's two users.
const first = new MongoClient(uri);
await first.db("admin").command({ createUser: "root", pwd: "root-pw", roles: ["root"] });
await first.close();
const client = new MongoClient(uri, { auth: { username: "root", password: "root-pw" } });
const admin = client.db("admin");
await admin.command({
  createUser: "ops",
  pwd: "ops-pw",
  roles: [{ role: "readWrite", db: "app" }, { role: "dbAdmin", db: "app" }],
});
await admin.command({ createUser: "viewer", pwd: "viewer-pw", roles: [{ role: "read", db: "app" }] });

// app.sessions: 120 documents due within the next hour (5 to 55 minutes), 48 more in the
// week (every 3 h from +2 h), and 12 that never expire: 3 missing the field, 7 with a string,
// 2 with an array without a date.
const app = client.db("app");
// Dated from when the collection's page is checked, after any traffic.
const now = Date.now() + traffic * 1000;
await app.collection("sessions").createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0 });
const sessions = [];
for (let i = 0; i < 120; i++) sessions.push({ user: `h${i}`, expiresAt: new Date(now + 5 * MIN + i * 25_000) });
for (let j = 0; j < 48; j++) sessions.push({ user: `w${j}`, expiresAt: new Date(now + 2 * HOUR + j * 3 * HOUR) });
for (let i = 0; i < 3; i++) sessions.push({ user: `m${i}` });
for (let i = 0; i < 7; i++) sessions.push({ user: `s${i}`, expiresAt: "2030-01-01" });
for (let i = 0; i < 2; i++) sessions.push({ user: `a${i}`, expiresAt: [1, 2] });
await app.collection("sessions").insertMany(sessions);
// app.carts: a partial TTL index that excludes 4 documents.
await app.collection("carts").createIndex(
  { at: 1 },
  { expireAfterSeconds: 3600, partialFilterExpression: { kind: "cart" } },
);
await app.collection("carts").insertMany([
  ...Array.from({ length: 5 }, (_, i) => ({ kind: "cart", at: new Date(now + i * MIN) })),
  ...Array.from({ length: 4 }, () => ({ kind: "wish", at: new Date(now) })),
]);
// app.events: a day's TTL over 10 events 15, 45, …, 285 minutes old: a change to one hour
// makes the 8 older than an hour due at once.
await app.collection("events").createIndex({ at: 1 }, { expireAfterSeconds: 86400 });
await app
  .collection("events")
  .insertMany(Array.from({ length: 10 }, (_, i) => ({ n: i, at: new Date(now - (i * 30 + 15) * MIN) })));
await app.collection("plain").insertOne({ a: 1 });

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ],
});
const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 900 } });
const page = await context.newPage();
const shot = async (name) => {
  if (shots) await page.screenshot({ path: path.join(shots, `expiry-${name}.png`), fullPage: true });
};
const signIn = async (user, password) => {
  await page.goto(`${base}/expiry`);
  assert.match(page.url(), /\/expiry\/login$/, "an unauthenticated visitor is sent to sign in");
  await page.fill("input[name=user]", user);
  await page.fill("input[name=password]", password);
  await page.click("#sign-in");
};

try {
  // A wrong password is refused with the server's error.
  await signIn("ops", "wrong");
  assert.match(await page.textContent("#error"), /Authentication failed/);
  await shot("sign-in");

  await signIn("ops", "ops-pw");
  assert.equal(new URL(page.url()).pathname, "/expiry");
  assert.equal(await page.textContent("#user"), "ops@admin");

  // The overview: each TTL index with its expireAfterSeconds and never-expiring counts.
  const row = (ns) => page.locator(`tr[data-ns="${ns}"]`).first();
  assert.equal(await row("app.sessions").locator("td[data-eas]").getAttribute("data-eas"), "0");
  const reasons = async (ns) =>
    Object.fromEntries(
      await row(ns)
        .locator("[data-reason]")
        .evaluateAll((spans) => spans.map((s) => [s.dataset.reason, s.textContent.split(": ")[1]])),
    );
  assert.deepEqual(await reasons("app.sessions"), { missing: "3", notADate: "7", arrayWithoutDate: "2" });
  assert.deepEqual(await reasons("app.carts"), { excludedByPartialFilter: "4" });
  assert.equal(await row("app.events").locator("td[data-eas]").getAttribute("data-eas"), "86400");
  assert.equal(await row("app.sessions").locator("td.backlog").textContent(), "0");
  assert.equal(await page.locator('tr[data-ns="app.plain"]').count(), 0, "collections without expiry are not rows");
  assert.match(await page.textContent("main"), /1 collections without expiry/);
  // The last hour's charts are drawn, with the interval running now as a point.
  assert.ok((await page.locator("#deletions circle.point").count()) >= 1);
  if (traffic) {
    // app.stream: documents each due a second after it is written, at a rate that rises and
    // falls over the run.
    const stream = app.collection("stream");
    await stream.createIndex({ at: 1 }, { expireAfterSeconds: 1 });
    for (let t = 0; t < traffic; t++) {
      const rate = Math.round(300 + 250 * Math.sin((t / traffic) * 2 * Math.PI));
      const started = Date.now();
      await stream.insertMany(Array.from({ length: rate }, (_, i) => ({ i, at: new Date() })));
      await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - started))));
    }
    await page.reload();
  }
  await shot("overview");

  // A collection: the forecast's bars hold the documents falling due.
  await page.click('a:text-is("sessions")');
  assert.equal(await page.textContent("#ns"), "app.sessions");
  const bars = async (id) => page.locator(`#${id} rect.bar`).evaluateAll((r) => r.map((b) => Number(b.dataset.value)));
  const minutes = await bars("minutes-0");
  const hours = await bars("hours-0");
  assert.equal(minutes.length, 60);
  assert.equal(hours.length, 168);
  const sum = (a) => a.reduce((x, y) => x + y, 0);
  assert.equal(sum(minutes), 120, "documents falling due in the next hour");
  assert.equal(sum(minutes.slice(0, 4)), 0, "none falls due in the first four minutes");
  assert.equal(sum(hours), 168, "documents falling due in the next week");
  assert.equal(hours[0], 120);
  await shot("collection");

  // Explain a filter: why a document never expires.
  await page.fill("#explain textarea", '{"user": "s3"}');
  await page.click("#explain button");
  assert.equal(await page.locator("#explained [data-never]").getAttribute("data-never"), "notADate");
  assert.match(await page.textContent("#explained"), /string/);
  await shot("explain");

  // Preview a change on app.events: 8 of 10 documents due at once, nothing changed yet.
  await page.goto(`${base}/expiry/collection?db=app&coll=events`);
  await page.selectOption("#change select", "at_1");
  await page.fill("#change input[name=seconds]", "3600");
  await page.click("#preview");
  assert.equal(await page.locator("#due-at-once").getAttribute("data-value"), "8");
  const eas = async () =>
    (await app.collection("events").listIndexes().toArray()).find((i) => i.name === "at_1").expireAfterSeconds;
  assert.equal(await eas(), 86400, "the preview changed nothing");
  assert.equal(await app.collection("events").countDocuments(), 10);
  await shot("preview");

  // Apply it: the index changes and the 8 are deleted.
  await page.click("#apply");
  assert.match(await page.textContent("#applied"), /3600 seconds/);
  assert.equal(await eas(), 3600);
  await until("the 8 documents made due to be deleted", async () => (await app.collection("events").countDocuments()) === 2);
  await shot("applied");

  // A reader sees everything but is offered no change, and a forged form is refused.
  await page.click("header button");
  await signIn("viewer", "viewer-pw");
  await page.goto(`${base}/expiry/collection?db=app&coll=events`);
  assert.equal(await page.locator("#change").count(), 0, "no change form without collMod");
  const forged = await page.request.post(`${base}/expiry/apply`, {
    form: { db: "app", coll: "events", index: "at_1", seconds: "1", csrf: "forged" },
  });
  assert.equal(forged.status(), 403);
  assert.equal(await eas(), 3600);
  console.log("expiry page: sign-in, overview, forecast, explain, preview and apply checked");
} finally {
  await browser.close();
  await client.close();
}
