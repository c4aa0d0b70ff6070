#!/usr/bin/env bash
# Counting without a PMU, the prototype: kernel and user instructions per getpid() counted by a
# QEMU TCG plugin (csrc/tcg_count.c) in windows of 100,000 raw getpid calls that the guest's
# init (bench/tcg_count_init.c) marks, 5 windows per boot, for audit=0 and audit=1 (no rules),
# and each boot's wall time with the plugin against a plain TCG boot. The kernel is started at
# its PVH entry from a vmlinux taken out of the bzImage here (python3's lzma: the generic
# image is xz; bench/generic_kernel.sh fetches it). Needs gcc with a static libc, QEMU.
# Usage: bench/tcg_count.sh [BZIMAGE]
set -euo pipefail
cd "$(dirname "$0")/.."
kernel=${1:-$(bench/generic_kernel.sh)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
gcc -shared -fPIC -O2 -Wall -fvisibility=hidden -o "$work/tcg_count.so" csrc/tcg_count.c
gcc -static -O2 -Wall -o "$work/init" bench/tcg_count_init.c
python3 - "$kernel" "$work" <<'PY'
import lzma, struct, sys
image, work = open(sys.argv[1], "rb").read(), sys.argv[2]
at = (image[0x1f1] + 1) * 512 + struct.unpack_from("<I", image, 0x248)[0]
size = struct.unpack_from("<I", image, 0x24c)[0]
payload = image[at:at + size - 4]
if not payload.startswith(b"\xfd7zXZ\x00"):
    sys.exit("this script reads xz-compressed images only (a generic Debian kernel)")
open(f"{work}/vmlinux", "wb").write(lzma.decompress(payload))
def entry(name, mode, data, ino):
    name = name.encode() + b"\0"
    head = b"070701" + b"".join(b"%08X" % v for v in [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name), 0])
    out = head + name
    out += b"\0" * (-len(out) % 4) + data
    return out + b"\0" * (-len(out) % 4)
cpio = entry("init", 0o100755, open(f"{work}/init", "rb").read(), 1) + entry("TRAILER!!!", 0, b"", 2)
open(f"{work}/initrd", "wb").write(cpio + b"\0" * (-len(cpio) % 512))
PY
boot() { # AUDIT [PLUGIN ARGS...]
	local audit=$1
	shift
	local start end
	start=$(date +%s.%N)
	timeout 300 qemu-system-x86_64 -nodefaults -no-user-config -display none -no-reboot \
		-accel tcg -cpu max -smp 1 -m 1024M -serial "file:$work/console" \
		-kernel "$work/vmlinux" -initrd "$work/initrd" \
		-append "console=ttyS0 panic=-1 quiet audit=$audit" "$@"
	end=$(date +%s.%N)
	echo "$end - $start" | bc
}
echo "kernel: $kernel"
for audit in 0 1; do
	plain=$(boot "$audit")
	counted=$(boot "$audit" -plugin "$work/tcg_count.so" -d plugin -D "$work/log")
	echo "audit=$audit: boot ${plain} s plain, ${counted} s counted (x$(echo "scale=2; $counted / $plain" | bc))"
	awk '/^W / { printf "  window %s: user %.3f, kernel %.3f instructions per getpid\n", $2, $3 / 100000, $4 / 100000 }' "$work/log"
done
