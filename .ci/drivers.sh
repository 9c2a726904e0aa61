#!/usr/bin/env bash
# Cross-driver checks: real pymongo and mongosh against a real ebbd, and against a
# three-member replica set of them; transactions on that set and on a one-member set.
# Usage: .ci/drivers.sh path/to/ebbd
set -euo pipefail
ebbd=$1
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
cleanup() {
    [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    [ -n "${auth_pid:-}" ] && kill "$auth_pid" 2>/dev/null && wait "$auth_pid" 2>/dev/null || true
    for member in ${rs_pids:-}; do kill "$member" 2>/dev/null && wait "$member" 2>/dev/null || true; done
    # Members the transaction checks started again after killing them.
    # They are not this shell's children: wait until they are gone (SIGKILL
    # after 10 s), since one still shutting down writes into $work.
    pkill -f -- "--db-path $work/" 2>/dev/null || true
    for _ in $(seq 100); do pgrep -f -- "--db-path $work/" >/dev/null || break; sleep 0.1; done
    pkill -KILL -f -- "--db-path $work/" 2>/dev/null || true
    for _ in $(seq 50); do pgrep -f -- "--db-path $work/" >/dev/null || break; sleep 0.1; done
    rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ebbd" --port "$port" --db-path "$work/data" >"$work/ebbd.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),0.2)" 2>/dev/null; then break; fi
    sleep 0.1
done

# A test CA and a server certificate for 127.0.0.1/localhost, made now (nothing secret is kept).
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=ebb test CA" \
    -keyout "$work/ca.key" -out "$work/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout "$work/server.key" -out "$work/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$work/san.ext"
openssl x509 -req -days 2 -in "$work/server.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" \
    -CAcreateserial -extfile "$work/san.ext" -out "$work/server.crt" 2>/dev/null
cat "$work/server.crt" "$work/server.key" >"$work/server.pem"

# A second node with authorization enabled and TLS allowed beside plain connections, for
# tests/drivers/test_auth.py. It also starts with an EBB_ variable that names no setting, which it
# must ignore with a warning (checked below).
auth_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
EBB_NOT_A_SETTING=1 EBB_NET__TLS__MODE=allowTLS EBB_NET__TLS__CERTIFICATE_KEY_FILE="$work/server.pem" \
    "$ebbd" --port "$auth_port" --db-path "$work/auth-data" --auth >"$work/ebbd-auth.log" 2>&1 &
auth_pid=$!
for _ in $(seq 1 100); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$auth_port),0.2)" 2>/dev/null; then break; fi
    sleep 0.1
done
export EBB_URI="mongodb://127.0.0.1:$port/?directConnection=true"
export EBB_AUTH_URI="mongodb://127.0.0.1:$auth_port/?directConnection=true"
export EBB_TLS_CA="$work/ca.pem"

echo "--- pymongo"
venv="$root/.ci/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check 'pymongo>=4.9,<5' 'pytest>=8'
"$venv/bin/python" -m pytest -q "$root/tests/drivers" -p no:cacheprovider

echo "--- mongosh"
node_dir="$root/.ci/.node"
if [ ! -x "$node_dir/node_modules/.bin/mongosh" ] || [ ! -d "$node_dir/node_modules/mongodb" ]; then
    mkdir -p "$node_dir"
    npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error 'mongosh@2' 'mongodb@6' >/dev/null
fi
out=$("$node_dir/node_modules/.bin/mongosh" "$EBB_URI" --quiet --file "$root/tests/drivers/mongosh_check.js" 2>&1) || { echo "$out"; exit 1; }
echo "$out"
if echo "$out" | grep -qi "non-genuine"; then echo "mongosh printed the non-genuine server banner"; exit 1; fi
# mongosh's interactive banner path: a plain connection with --eval.
banner=$("$node_dir/node_modules/.bin/mongosh" "$EBB_URI" --eval 'db.runCommand({ping: 1}).ok' 2>&1)
echo "$banner" | tail -3
if echo "$banner" | grep -qi "non-genuine"; then echo "mongosh printed the non-genuine server banner"; exit 1; fi

echo "--- the Node.js driver"
# The script imports 'mongodb' from the packages installed beside mongosh.
cp "$root/tests/drivers/event_log_report.mjs" "$node_dir/"
node "$node_dir/event_log_report.mjs" "$EBB_URI"
cp "$root/tests/drivers/text_check.mjs" "$node_dir/"
node "$node_dir/text_check.mjs" "$EBB_URI"

echo "--- mongosh with credentials (the Node driver's SCRAM; root/pw made by test_auth.py)"
auth_out=$("$node_dir/node_modules/.bin/mongosh" "mongodb://root:pw@127.0.0.1:$auth_port/admin?directConnection=true" \
    --quiet --eval 'db.runCommand({connectionStatus: 1}).authInfo.authenticatedUsers[0].user' 2>&1) \
    || { echo "$auth_out"; exit 1; }
[ "$(echo "$auth_out" | tail -1)" = "root" ] || { echo "mongosh did not authenticate: $auth_out"; exit 1; }
echo "mongosh authenticated"
tls_out=$("$node_dir/node_modules/.bin/mongosh" "mongodb://root:pw@127.0.0.1:$auth_port/admin?directConnection=true&tls=true&tlsCAFile=$work/ca.pem" \
    --quiet --eval 'db.runCommand({connectionStatus: 1}).authInfo.authenticatedUsers[0].user' 2>&1) \
    || { echo "$tls_out"; exit 1; }
[ "$(echo "$tls_out" | tail -1)" = "root" ] || { echo "mongosh did not authenticate over TLS: $tls_out"; exit 1; }
echo "mongosh authenticated over TLS"
grep -q "ignoring environment variable.*EBB_NOT_A_SETTING" "$work/ebbd-auth.log" \
    || { echo "no warning for EBB_NOT_A_SETTING"; cat "$work/ebbd-auth.log"; exit 1; }
echo "an unknown EBB_ variable was ignored with a warning"

echo "--- a three-member replica set: mongosh's rs helpers (rs.add, rs.remove of a fourth), then pymongo and the Node.js driver with ?replicaSet="
rs_pids=
rs_hosts=
for i in 0 1 2; do
    rs_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "$ebbd" --port "$rs_port" --db-path "$work/rs$i" --replSet rs0 >"$work/rs$i.log" 2>&1 &
    rs_pids="$rs_pids $!"
    rs_hosts="${rs_hosts:+$rs_hosts,}127.0.0.1:$rs_port"
    for _ in $(seq 1 100); do
        if python3 -c "import socket; socket.create_connection(('127.0.0.1',$rs_port),0.2)" 2>/dev/null; then break; fi
        sleep 0.1
    done
done
export EBB_RS_HOSTS="$rs_hosts"
# A fourth member, outside the set until rs.add() adds it.
spare_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ebbd" --port "$spare_port" --db-path "$work/rs3" --replSet rs0 >"$work/rs3.log" 2>&1 &
rs_pids="$rs_pids $!"
export EBB_RS_SPARE="127.0.0.1:$spare_port"
first=${rs_hosts%%,*}
rs_out=$("$node_dir/node_modules/.bin/mongosh" "mongodb://$first/?directConnection=true" --quiet \
    --file "$root/tests/drivers/rs_check.js" 2>&1) || { echo "$rs_out"; cat "$work"/rs*.log; exit 1; }
echo "$rs_out"
"$venv/bin/python" "$root/tests/drivers/rs_check.py" || { cat "$work"/rs*.log; exit 1; }
cp "$root/tests/drivers/rs_check_node.mjs" "$node_dir/"
node "$node_dir/rs_check_node.mjs" || { cat "$work"/rs*.log; exit 1; }

echo "--- transactions: pymongo and the Node.js driver on the three-member set and on a one-member set"
cp "$root/tests/drivers/txn_check.mjs" "$node_dir/"
node "$node_dir/txn_check.mjs" "mongodb://$rs_hosts/?replicaSet=rs0" --crash || { cat "$work"/rs*.log; exit 1; }
# Last on this set: it kills its primary three times.
"$venv/bin/python" "$root/tests/drivers/txn_check.py" "mongodb://$rs_hosts/?replicaSet=rs0" --crash \
    || { cat "$work"/rs*.log; exit 1; }
solo_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ebbd" --port "$solo_port" --db-path "$work/solo" --replSet solo >"$work/rs-solo.log" 2>&1 &
rs_pids="$rs_pids $!"
for _ in $(seq 1 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1',$solo_port),0.2)" 2>/dev/null; then break; fi
    sleep 0.1
done
"$node_dir/node_modules/.bin/mongosh" "mongodb://127.0.0.1:$solo_port/?directConnection=true" --quiet \
    --eval 'rs.initiate().ok' || { cat "$work/rs-solo.log"; exit 1; }
"$venv/bin/python" "$root/tests/drivers/txn_check.py" "mongodb://127.0.0.1:$solo_port/?replicaSet=solo" \
    || { cat "$work/rs-solo.log"; exit 1; }
node "$node_dir/txn_check.mjs" "mongodb://127.0.0.1:$solo_port/?replicaSet=solo" || { cat "$work/rs-solo.log"; exit 1; }

echo "--- ebbd stops cleanly on SIGTERM"
kill -TERM "$pid"
wait "$pid"
status=$?
pid=
[ "$status" = 0 ] || { echo "ebbd exited with $status"; cat "$work/ebbd.log"; exit 1; }
echo "driver checks passed"
