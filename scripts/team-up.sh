#!/usr/bin/env bash
# A team Warden on one machine, to try it: Debian's PostgreSQL, three
# `warden serve` instances sharing it as their store, and Debian's haproxy in
# front of them in round robin, without sticky sessions. Clients use
# http://127.0.0.1:$WARDEN_TEAM_PORT/mcp (default 8080); the instances listen
# on the next three ports. Ctrl-C stops everything; the data stays in DIR for
# the next run.
#
#   scripts/team-up.sh [DIR]          # DIR defaults to ./warden-team
#
# Needs: apt-get install postgresql haproxy. Servers go in DIR/config.json
# (made on the first run), or add them with any instance's CLI:
#   DIR/warden --config DIR/config.json --state-dir DIR/i1 servers add ...
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mkdir -p "${1:-warden-team}" && cd "${1:-warden-team}" && pwd)
port=${WARDEN_TEAM_PORT:-8080}

pgbin=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1 | grep . || command -v initdb || echo /nonexistent/initdb)")
if [ ! -x "$pgbin/initdb" ] || ! command -v haproxy >/dev/null && [ ! -x /usr/sbin/haproxy ]; then
	echo "team-up: PostgreSQL and haproxy are needed: apt-get install postgresql haproxy" >&2
	exit 1
fi
haproxy=$(command -v haproxy || echo /usr/sbin/haproxy)

# PostgreSQL will not run as root: as root, it runs as Debian's postgres user,
# which must be able to reach DIR.
as_pg=()
if [ "$(id -u)" = 0 ]; then
	as_pg=(runuser -u postgres --)
	if ! runuser -u postgres -- test -x "$dir"; then
		echo "team-up: PostgreSQL runs as the user postgres, who cannot reach $dir; give a DIR it can reach, e.g. scripts/team-up.sh /var/tmp/warden-team" >&2
		exit 1
	fi
fi

echo "== building warden into $dir"
go build -o "$dir/warden" ./cmd/warden

if [ ! -d "$dir/pg" ]; then
	echo "== initdb $dir/pg"
	mkdir -p "$dir/pg" "$dir/sock"
	chmod 0700 "$dir/pg"
	[ ${#as_pg[@]} -eq 0 ] || chown postgres "$dir/pg" "$dir/sock"
	"${as_pg[@]}" "$pgbin/initdb" -D "$dir/pg" -U warden -A trust >"$dir/initdb.log"
fi
echo "== starting PostgreSQL (socket in $dir/sock, log $dir/pg.log)"
if [ ${#as_pg[@]} -ne 0 ]; then
	touch "$dir/pg.log" && chown postgres "$dir/pg.log"
fi
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w -o "-k $dir/sock -c listen_addresses=''" start >/dev/null

pids=()
stop() {
	trap - INT TERM EXIT
	echo "== stopping"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait "${pids[@]}" 2>/dev/null || true
	"${as_pg[@]}" "$pgbin/pg_ctl" -D "$dir/pg" -m fast stop >/dev/null || true
}
trap stop INT TERM EXIT

"$pgbin/psql" -h "$dir/sock" -U warden -d postgres -tAc "select 1 from pg_database where datname='warden'" | grep -q 1 ||
	"$pgbin/createdb" -h "$dir/sock" -U warden warden

# Every instance gets the same storeKey: it seals tokens and secrets in the store.
if [ ! -f "$dir/store.key" ]; then
	(umask 077 && head -c 32 /dev/urandom | base64 >"$dir/store.key")
fi
WARDEN_STORE_KEY=$(cat "$dir/store.key")
export WARDEN_STORE_KEY
if [ ! -f "$dir/config.json" ]; then
	cat >"$dir/config.json" <<JSON
{
  "store": "postgres:///warden?host=$dir/sock&user=warden",
  "storeKey": "\${env:WARDEN_STORE_KEY}",
  "mcpServers": {}
}
JSON
fi

backends=""
for n in 1 2 3; do
	"$dir/warden" serve --config "$dir/config.json" --state-dir "$dir/i$n" --listen "127.0.0.1:$((port + n))" >"$dir/i$n.log" 2>&1 &
	pids+=($!)
	backends+="  server i$n 127.0.0.1:$((port + n)) check inter 500ms fall 1 rise 1 observe layer4 error-limit 1 on-error mark-down"$'\n'
done
cat >"$dir/haproxy.cfg" <<CFG
global
  maxconn 2000
defaults
  mode http
  timeout connect 1s
  timeout client 120s
  timeout server 120s
  timeout tunnel 1h
  retries 3
  option redispatch 1
  option httpchk
  http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host 127.0.0.1
frontend warden
  bind 127.0.0.1:$port
  default_backend instances
backend instances
  balance roundrobin
$backends
CFG
"$haproxy" -db -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 &
pids+=($!)

for n in 1 2 3; do
	for _ in $(seq 100); do
		curl -fsS "http://127.0.0.1:$((port + n))/healthz" >/dev/null 2>&1 && break
		sleep 0.1
	done
done
cat <<MSG
== Warden for a team is up
clients:    http://127.0.0.1:$port/mcp  (and /mcp/{server})
instances:  127.0.0.1:$((port + 1)), $((port + 2)), $((port + 3)); logs in $dir/i*.log
operator:   $dir/warden --config $dir/config.json --state-dir $dir/i1 status
Ctrl-C stops everything.
MSG
wait "${pids[@]}"
