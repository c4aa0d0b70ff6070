#!/usr/bin/env python3
"""Write a synthetic syscost run result holding RUNS x SAMPLES raw samples (for
bench/compare_large.sh): the file shape of `syscost run -o` with three events (task-clock,
context-switches, an unsupported cycles), per-run metrics consistent with the samples."""
import json, random, statistics, sys

path, runs, samples, shift, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
rng = random.Random(seed)
ops = 1000


def summary(v):
    n = len(v)
    m = statistics.fmean(v)
    p = statistics.pstdev(v)
    return {"n": n, "median": statistics.median(v), "mean": m, "min": min(v), "max": max(v),
            "pstdev": p, "stdev": statistics.stdev(v) if n > 1 else 0.0,
            "pstdev_pct": 100 * p / m, "ci95": None}


with open(path, "w") as f:
    f.write('{"schema":"syscost-result","version":1,"kind":"run",'
            '"tool":{"name":"syscost","version":"bench"},"created_unix":1700000000,'
            '"workload":{"workload":"syscall","syscall":"getpid"},"op_name":"call",'
            '"options":{"runs":%d,"samples":%d,"warmup":0,"ops_per_sample":%d,"calibrated":false,'
            '"sample_time_ns":100000,"cpus":"1","fifo":null,"subtract_overhead":false},'
            '"clock":"CLOCK_MONOTONIC","events":[],"environment":{"kernel_release":"bench"},"runs":['
            % (runs, samples, ops))
    times, tasks = [], []
    for r in range(runs):
        base = 100.0 * shift * (1 + rng.gauss(0, 0.01))
        f.write(('' if r == 0 else ',') + '{"index":%d,"pid":%d,"cpu_first":1,"cpu_last":1,'
                '"sched":"SCHED_OTHER","warmup":[],"overhead":[],"samples":[' % (r, 1000 + r))
        tw = 0
        for s in range(samples):
            wall = int(ops * base * (1 + rng.gauss(0, 0.02)))
            tw += wall
            f.write(('' if s == 0 else ',') +
                    '{"ops":%d,"wall_ns":%d,"counts":[{"value":%d,"enabled":%d,"running":%d},'
                    '{"value":0,"enabled":%d,"running":%d},null]}' % (ops, wall, wall - 50, wall, wall, wall, wall))
        f.write(']}')
        times.append(tw / (ops * samples))
        tasks.append((tw - 50 * samples) / (ops * samples))
    units = list(range(runs))
    metrics = [
        {"name": "time", "unit": "ns/call", "kind": "time", "replication": "run", "values": times,
         "units": units, "summary": summary(times), "status": None, "reason": None, "running_pct": None},
        {"name": "task-clock", "unit": "ns/call", "kind": "counter", "replication": "run", "values": tasks,
         "units": units, "summary": summary(tasks), "status": None, "reason": None, "running_pct": 100.0},
    ]
    f.write('],"metrics":%s,"overhead":[],"warnings":[]}' % json.dumps(metrics))
