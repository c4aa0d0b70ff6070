#!/bin/sh
# One Redis workload on a Unix socket (no network): start redis-server in a temporary
# directory, run redis-benchmark GET/SET against it, shut it down. For `syscost probe` tests.
set -eu
requests=${1:-20000}
dir=$(mktemp -d)
trap 'redis-cli -s "$dir/redis.sock" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT INT TERM
redis-server --port 0 --unixsocket "$dir/redis.sock" --dir "$dir" --save '' --appendonly no \
	--daemonize no >/dev/null 2>&1 &
i=0
until redis-cli -s "$dir/redis.sock" ping >/dev/null 2>&1; do
	i=$((i + 1)); [ "$i" -lt 200 ] || { echo "redis-server did not start" >&2; exit 1; }
	sleep 0.02
done
redis-benchmark -s "$dir/redis.sock" -n "$requests" -c 4 -t set,get -q
