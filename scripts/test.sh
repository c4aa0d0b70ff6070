#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what the end-to-end tests use that a fresh
# Debian machine lacks (redis-server and redis-benchmark, for the probe-on-a-real-server test,
# with no daemon started: the test starts its own on a Unix socket; chromium, for the report's
# headless-browser test; postgresql, whose server the shared-history test starts in a
# temporary directory of its own (the package's own cluster is not started); auditd, whose
# auditctl the rules-file tests compare syscost's loading with (its daemon not started: syscost
# itself never calls auditctl); python3-venv and
# KernelCI's kcidb-io schema package in target/kcidb-venv, which validates `syscost export
# kcidb`; qemu-system-x86 and the Debian kernel images tests/kernels.list pins, for the
# campaign, LAVA and bisection tests, and git for the bisection's git mode; Debian's
# linux-source-6.1 and its build tools for the reproductions that build kernels; Debian's LAVA
# for the LAVA tests; mdBook for the book's test), then runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
# mdBook builds the book (docs/) in its test. It is not in Debian 12: crates.io's, without its
# default features (the server and the file watcher, which a build does not need), into
# target/tools. It compiles in the background (about 2 minutes here) while the packages below
# install.
mdbook=target/tools/bin/mdbook
mdbook_version=0.5.4
mdbook_pid=
if [ "$("$mdbook" --version 2>/dev/null)" != "mdbook v$mdbook_version" ]; then
	mkdir -p target
	cargo install --quiet --locked --no-default-features --version "$mdbook_version" \
		--root target/tools mdbook > target/mdbook-install.log 2>&1 &
	mdbook_pid=$!
	# A script stopped before it waits does not leave the build running.
	trap '[ -z "$mdbook_pid" ] || kill "$mdbook_pid" 2>/dev/null || true' EXIT
fi
if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null \
	|| ! command -v chromium >/dev/null || ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null \
	|| ! command -v auditctl >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		# policy-rc.d 101 keeps the packages from starting daemons of their own (redis,
		# the postgresql cluster, auditd, which would load its rules).
		policy=/usr/sbin/policy-rc.d
		had_policy=0; [ -e "$policy" ] && had_policy=1
		[ "$had_policy" = 1 ] || { printf '#!/bin/sh\nexit 101\n' > "$policy"; chmod +x "$policy"; }
		apt-get install -y -qq redis-server chromium postgresql auditd >/dev/null
		[ "$had_policy" = 1 ] || rm -f "$policy"
	else
		echo "note: redis-server, chromium, postgresql or auditd is missing and installing needs root: their tests will fail" >&2
	fi
fi
# QEMU, and the Debian kernel images the campaign, bisection and LAVA tests boot under TCG: the
# versions tests/kernels.list pins, unpacked into target/kernels/GROUP/boot (kept, so a rerun
# downloads nothing). A pinned version the archive no longer has stops the suite here, naming
# it: tests/kernels.list says how to choose another.
if ! command -v qemu-system-x86_64 >/dev/null && [ "$(id -u)" = 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq qemu-system-x86 >/dev/null
fi
while read -r group pkg _; do
	case "$group" in ''|'#'*) continue ;; esac
	dir=target/kernels/$group
	[ "$group" = boot ] && dir=target/kernels
	release=${pkg#linux-image-}
	[ -e "$dir/boot/vmlinuz-$release" ] && continue
	mkdir -p "$dir"
	if ! (cd "$dir" && apt-get download -qq "$pkg" 2>/dev/null); then
		# Package lists older than the pin (a fresh machine's) are read again once.
		apt-get update -qq 2>/dev/null || true
		if ! (cd "$dir" && apt-get download -qq "$pkg" 2>/dev/null); then
			echo "error: $pkg, which tests/kernels.list pins, cannot be fetched: Debian's archive no longer has it, or this machine cannot reach it; tests/kernels.list says how to choose another version" >&2
			exit 1
		fi
	fi
	dpkg-deb --fsys-tarfile "$dir/${pkg}"_*.deb | tar -x -C "$dir" --wildcards './boot/vmlinuz-*'
	rm -f "$dir/${pkg}"_*.deb
done < tests/kernels.list
# Debian's LAVA 2023.01 (lava-server, lava-dispatcher: nothing is started at install) for the
# LAVA tests, which start a lab of their own with scripts/lava-lab in a scratch directory, and
# what its x86 board needs (tftpd-hpa's directory, telnet, QEMU's iPXE).
if [ ! -x /usr/bin/lava-server ] || ! command -v lava-worker >/dev/null \
	|| [ ! -e /usr/sbin/in.tftpd ] || ! command -v telnet >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq
		scripts/lava-lab install || echo "note: LAVA could not be installed: the LAVA tests will fail" >&2
	fi
fi
# Debian's linux-source-6.1 and the tools to build it, for the reproduction that builds the
# 2022 audit syscall-exit series' kernels (kept in ~/.cache/syscost/kernels: a machine builds
# them once).
if ! dpkg -s linux-source-6.1 flex bison libelf-dev bc patch make >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq linux-source-6.1 flex bison libelf-dev bc patch make >/dev/null
fi
# git, for the bisection's git mode test.
if ! command -v git >/dev/null && [ "$(id -u)" = 0 ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq git >/dev/null
fi
venv=target/kcidb-venv
if ! "$venv/bin/python" -c 'import kcidb_io' 2>/dev/null; then
	if ! python3 -c 'import ensurepip' 2>/dev/null && [ "$(id -u)" = 0 ]; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq python3-venv >/dev/null
	fi
	rm -rf "$venv"
	python3 -m venv "$venv" && "$venv/bin/pip" install -q 'kcidb-io==141' \
		|| echo "note: kcidb-io could not be installed: the KCIDB test will fail" >&2
fi
if [ -n "$mdbook_pid" ]; then
	wait "$mdbook_pid" \
		|| echo "note: mdbook could not be installed (target/mdbook-install.log): the book's test will fail" >&2
	mdbook_pid=
fi
# Here a test whose prerequisite is missing fails, naming it, instead of skipping: a package
# this script failed to install cannot leave CI green with its tests never run.
export SYSCOST_TEST_REQUIRE_ALL=1
# Arguments are cargo test's: `scripts/test.sh lava::` runs the LAVA tests alone.
cargo test --release "$@"
