"""Failover as a pymongo application sees it: three `ebbd` members with
their default settings, a client with `?replicaSet=rs0` and pymongo's
defaults, inserting with `w: "majority"` one document after another. Each
round kills the primary with `kill -9` and times how long until the next
insert is acknowledged (the driver's retryable write finds the new primary);
the killed member is then restarted and catches up before the next round.

    python3 benches/failover/failover.py --ebbd target/release/ebbd --rounds 5
"""

import argparse
import os
import signal
import socket
import statistics
import subprocess
import tempfile
import time

import pymongo


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Member:
    def __init__(self, ebbd, root):
        self.ebbd = ebbd
        self.port = free_port()
        self.dir = os.path.join(root, str(self.port))
        self.log = open(os.path.join(root, f"{self.port}.log"), "ab")
        self.proc = None

    @property
    def host(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        self.proc = subprocess.Popen(
            [self.ebbd, "--port", str(self.port), "--replSet", "rs0", "--db-path", self.dir],
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            env={**os.environ, "EBB_LOG__LEVEL": "warn"},
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"member {self.port} did not start")
                time.sleep(0.02)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def hello(self):
        c = pymongo.MongoClient(self.host, directConnection=True, serverSelectionTimeoutMS=2000)
        try:
            return c.admin.command("hello")
        finally:
            c.close()


def wait_for(what, check, seconds=60):
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


def main():
    args = argparse.ArgumentParser()
    args.add_argument("--ebbd", required=True)
    args.add_argument("--rounds", type=int, default=5)
    args = args.parse_args()
    with tempfile.TemporaryDirectory() as root:
        members = [Member(args.ebbd, root) for _ in range(3)]
        for m in members:
            m.start()
        config = {"_id": "rs0", "members": [{"_id": i, "host": m.host} for i, m in enumerate(members)]}
        first = pymongo.MongoClient(members[0].host, directConnection=True)
        first.admin.command("replSetInitiate", config)
        client = pymongo.MongoClient(",".join(m.host for m in members), replicaSet="rs0", w="majority")
        coll = client.failover.c
        n = 0

        def insert():
            nonlocal n
            n += 1
            coll.insert_one({"_id": n})

        insert()
        times = []
        try:
            for _ in range(args.rounds):
                primary = next(m for m in members if m.proc and m.hello().get("isWritablePrimary"))
                insert()
                killed = time.monotonic()
                primary.kill()
                while True:
                    try:
                        insert()
                        break
                    except pymongo.errors.PyMongoError:
                        # A write the driver could not retry: the
                        # application's next one.
                        pass
                times.append(time.monotonic() - killed)
                primary.start()
                wait_for(
                    "the restarted member to catch up",
                    lambda: primary.hello().get("secondary")
                    and pymongo.MongoClient(primary.host, directConnection=True, readPreference="secondaryPreferred")
                    .failover.c.count_documents({}) == n,
                )
        finally:
            for m in members:
                if m.proc:
                    m.kill()
        times.sort()
        print("failover rounds (kill -9 of the primary -> next w:majority insert acknowledged), s:",
              " ".join(f"{t:.2f}" for t in times))
        print(f"p50 {statistics.median(times):.2f} s, max {max(times):.2f} s")


if __name__ == "__main__":
    main()
