#!/usr/bin/env bash
# The expiry page in a real browser: Debian's Chromium, driven by playwright-core, against an
# ebbd with authorization on and its HTTP listener over TLS (tests/page/expiry_page.mjs).
# Usage: .ci/page.sh path/to/ebbd [directory for the screenshots]
set -euo pipefail
ebbd=$1
shots=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
cleanup() {
    [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null
    else sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null; fi
fi
node_dir="$root/.ci/.node"
if [ ! -d "$node_dir/node_modules/playwright-core" ] || [ ! -d "$node_dir/node_modules/mongodb" ]; then
    mkdir -p "$node_dir"
    npm install --prefix "$node_dir" --no-audit --no-fund --loglevel=error 'mongodb@6' 'playwright-core@1' >/dev/null
fi

# A certificate for 127.0.0.1 that the listener presents (the browser is told to accept it).
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$work/server.key" -out "$work/server.crt" 2>/dev/null
cat "$work/server.crt" "$work/server.key" >"$work/server.pem"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
http_port=$(free_port)
EBB_NET__HTTP__ENABLED=true EBB_NET__HTTP__PORT="$http_port" EBB_NET__HTTP__TLS=true \
    EBB_NET__TLS__CERTIFICATE_KEY_FILE="$work/server.pem" \
    "$ebbd" --port "$port" --db-path "$work/data" --auth >"$work/ebbd.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1',$http_port),0.2)" 2>/dev/null; then break; fi
    sleep 0.1
done

cp "$root/tests/page/expiry_page.mjs" "$node_dir/"
EBB_URI="mongodb://127.0.0.1:$port/?directConnection=true" \
    EBB_PAGE="https://127.0.0.1:$http_port" EBB_SHOTS="$shots" \
    node "$node_dir/expiry_page.mjs" || { tail -50 "$work/ebbd.log"; exit 1; }
