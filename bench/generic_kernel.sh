#!/usr/bin/env bash
# Print the path of Debian's newest generic 6.1 kernel image (what a Debian machine's /boot
# holds; xz-compressed, unlike the cloud images scripts/test.sh unpacks), fetching it from the
# archive into target/kernels-generic the first time.
set -euo pipefail
cd "$(dirname "$0")/.."
generic=target/kernels-generic
if ! ls "$generic"/boot/vmlinuz-* >/dev/null 2>&1; then
	pkg=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' | cut -d' ' -f1 | sort -V | tail -1)
	mkdir -p "$generic"
	(cd "$generic" && apt-get download -qq "$pkg" 2>/dev/null)
	dpkg-deb --fsys-tarfile "$generic/${pkg}"_*.deb | tar -x -C "$generic" --wildcards './boot/vmlinuz-*'
	rm -f "$generic/${pkg}"_*.deb
fi
ls "$generic"/boot/vmlinuz-* | sort -V | tail -1
