#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the end-to-end tests use that a fresh
# Debian machine lacks (redis-server and redis-benchmark, for the probe-on-a-real-server test,
# with no daemon started: the test starts its own on a Unix socket; chromium, for the report's
# headless-browser test), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null \
	|| ! command -v chromium >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		# policy-rc.d 101 keeps the package from starting a redis daemon of its own.
		policy=/usr/sbin/policy-rc.d
		had_policy=0; [ -e "$policy" ] && had_policy=1
		[ "$had_policy" = 1 ] || { printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; }
		apt-get install -y -qq redis-server chromium >/dev/null
		[ "$had_policy" = 1 ] || rm -f "$policy"
	else
		echo "note: redis-server or chromium is missing and installing needs root; their tests say so" >&2
	fi
fi
cargo test --release
