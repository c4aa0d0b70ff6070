#!/usr/bin/env bash
# The history store at fleet size. One real run result of this machine is stored, then copied
# by SQL into N rows (distinct digests, times, kernels and boots: what a lab's store holds after
# months), and the commands are timed over it. Targets (the history's own): `history list` over 100,000
# results under 200 ms (it shows the newest 1,000 by default; --newest 0 lists all);
# `history compare` over 10,000 under 1 s.
#
# Usage: bench/history_large.sh [LIST_N] [COMPARE_N]   (defaults 100000 and 10000)
set -euo pipefail
cd "$(dirname "$0")/.."
list_n=${1:-100000}
compare_n=${2:-10000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
export SYSCOST_HISTORY="$work/unused.sqlite"
cargo build --release --quiet
syscost=target/release/syscost
$syscost run syscall --runs 5 --samples 10 --sample-time 5ms --no-history \
	-o "$work/one.json" > /dev/null 2>&1

# fill STORE N KERNELS: N copies of the stored result over KERNELS kernels, 5 boots each.
fill() {
	$syscost history --history "$1" import "$work/one.json" > /dev/null 2>&1
	python3 - "$1" "$2" "$3" <<'PY'
import json, sqlite3, sys
path, n, kernels = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
db = sqlite3.connect(path)
row = db.execute("SELECT * FROM results WHERE id = 1").fetchone()
cols = [d[0] for d in db.execute("SELECT * FROM results LIMIT 0").description]
json_text, view_text = db.execute("SELECT json, view FROM bodies WHERE result_id = 1").fetchone()
view = json.loads(view_text)
results, bodies = [], []
for i in range(2, n + 1):
    k, b = f"6.{i % kernels}.0", f"boot-{i % (5 * kernels)}"
    view["environment"]["kernel_release"], view["environment"]["boot_id"] = k, b
    r = dict(zip(cols, row))
    r.update(id=i, digest=f"copy-{i}", created_unix=r["created_unix"] + i, kernel=k, boot_id=b)
    results.append(tuple(r[c] for c in cols))
    bodies.append((i, json_text, json.dumps(view)))
db.executemany(f"INSERT INTO results VALUES ({','.join('?' * len(cols))})", results)
db.executemany("INSERT INTO bodies VALUES (?, ?, ?)", bodies)
# A label on one result in three, as --tag leaves them.
db.executemany("INSERT INTO tags VALUES (?, 'build', ?)", [(i, f"b{i % 7}") for i in range(2, n + 1, 3)])
db.commit()
PY
}

fill "$work/list.sqlite" "$list_n" 20
ls -l "$work/list.sqlite" | awk '{printf "store of '"$list_n"' results: %.0f MB\n", $5/1e6}'
for newest in 1000 0; do
	for format in json table; do
		/usr/bin/time -o "$work/t" -f "history list --newest $newest --format $format over $list_n results: %e s, %M KB" \
			$syscost history --history "$work/list.sqlite" list --newest $newest --format $format > /dev/null 2>&1
		cat "$work/t"
	done
done
/usr/bin/time -f "history list --newest 0 --kernel 6.3.0 (1 in 20) over $list_n results: %e s, %M KB" \
	$syscost history --history "$work/list.sqlite" list --newest 0 --kernel 6.3.0 > /dev/null

fill "$work/compare.sqlite" "$compare_n" 10
for cmd in "compare --by kernel" trend; do
	# shellcheck disable=SC2086
	/usr/bin/time -o "$work/t" -f "history $cmd over $compare_n results (10 kernels): %e s, %M KB" \
		$syscost history --history "$work/compare.sqlite" $cmd > /dev/null 2>&1
	cat "$work/t"
done
