#!/usr/bin/env bash
# Build function-alignment variants of Debian's linux-source-6.1, as the 2015 function-alignment
# RFC built its 11 kernels (-Os, and -falign-functions=1 to 512 of one tree), for syscost to boot
# as campaign arms (--arm a64=target/alignment/boot/vmlinuz-align-64). syscost never builds
# kernels; builds are too slow for the suite, so this lives here.
#
# Usage: bench/alignment_builds.sh [VARIANT...]   VARIANT: os, or an alignment in bytes
#        (1 2 4 8 16 32 64 128 256 512); default: 16 64 (the vanilla kernel's and the RFC's best)
#
# The configuration is small, so a build takes minutes and a boot seconds under QEMU's TCG:
# tinyconfig and what syscost's guest uses (a serial console, an uncompressed initramfs, proc,
# sysfs, devtmpfs, tmpfs, tracefs, netlink for audit, audit itself, perf events, kallsyms with data
# symbols and /proc/kcore for the rule entries' addresses, ACPI to power off, a PVH entry) and
# what the RFC's loop runs through on a disk (NVMe, as campaign --guest-disk attaches one, and
# ext4). Each variant is built in its own
# output tree, so the source is unpacked once. Prints each build's seconds and size(1) line;
# the lines are also in target/alignment/sizes.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$PWD/target/alignment
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(16 64)
for v in "${variants[@]}"; do
	case $v in
	os | 1 | 2 | 4 | 8 | 16 | 32 | 64 | 128 | 256 | 512) ;;
	*) echo "alignment_builds.sh: $v is not a variant (os, or 1 2 4 ... 512)" >&2; exit 2 ;;
	esac
done

need=(linux-source-6.1 flex bison libelf-dev bc)
missing=()
for p in "${need[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

src=$out/linux-6.1
if [ ! -f "$src/Makefile" ]; then
	rm -rf "$src" "$out/linux-source-6.1"
	mkdir -p "$out"
	tar -xaf /usr/src/linux-source-6.1.tar.xz -C "$out"
	mv "$out/linux-source-6.1" "$src"
fi

# What syscost's guest and the VFS-mix loop need, on top of tinyconfig, in a kernel shaped like
# the distributions' (SMP, so tree RCU; SLUB; voluntary preemption): tinyconfig alone gives a UP
# kernel with tiny RCU, SLOB and no preemption, whose allocator and RCU paths are not those a
# VFS loop runs through on the kernels the RFC or syscost's users measure.
options=(
	64BIT SMP SLUB PREEMPT_VOLUNTARY NO_HZ_IDLE
	EXPERT DEBUG_KERNEL PRINTK TTY SERIAL_8250 SERIAL_8250_CONSOLE BLK_DEV_INITRD
	BINFMT_ELF BINFMT_SCRIPT
	PROC_FS PROC_SYSCTL SYSFS DEVTMPFS DEVTMPFS_MOUNT TMPFS SHMEM MULTIUSER FUTEX EPOLL
	SIGNALFD TIMERFD EVENTFD FILE_LOCKING POSIX_TIMERS HIGH_RES_TIMERS
	NET UNIX AUDIT AUDITSYSCALL PERF_EVENTS KALLSYMS KALLSYMS_ALL PROC_KCORE FTRACE
	ENABLE_DEFAULT_TRACERS
	ACPI HYPERVISOR_GUEST PARAVIRT PVH
	PCI BLK_DEV BLOCK NVME_CORE BLK_DEV_NVME EXT4_FS
)
mkdir -p "$out/boot"
for v in "${variants[@]}"; do
	b=$out/build-$v
	mkdir -p "$b"
	make -s -C "$src" O="$b" ARCH=x86_64 tinyconfig >/dev/null
	args=(--disable SLOB --disable PREEMPT_NONE)
	for o in "${options[@]}"; do args+=(--enable "$o"); done
	if [ "$v" = os ]; then
		args+=(--enable CC_OPTIMIZE_FOR_SIZE --disable CC_OPTIMIZE_FOR_PERFORMANCE)
		flags=
	else
		args+=(--disable CC_OPTIMIZE_FOR_SIZE --enable CC_OPTIMIZE_FOR_PERFORMANCE)
		# Last on gcc's line, so it overrides the kernel's own alignment flags.
		flags=-falign-functions=$v
	fi
	"$src/scripts/config" --file "$b/.config" "${args[@]}"
	make -s -C "$src" O="$b" ARCH=x86_64 olddefconfig >/dev/null
	start=$(date +%s.%N)
	make -s -C "$src" O="$b" ARCH=x86_64 -j"$(nproc)" KCFLAGS="$flags" bzImage >/dev/null
	end=$(date +%s.%N)
	cp "$b/arch/x86/boot/bzImage" "$out/boot/vmlinuz-align-$v"
	line="$(size "$b/vmlinux" | tail -1 | awk '{print $1, $2, $3, $4}') align-$v"
	echo "$line" >>"$out/sizes.txt"
	printf 'align-%s: built in %.0f s; text data bss dec: %s\n' "$v" "$(echo "$end - $start" | bc)" "$line"
done
