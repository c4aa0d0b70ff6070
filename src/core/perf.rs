//! Two facts about perf_event_open on this machine, read by the counters, the profiler, the
//! probes and the environment alike.

/// The current `kernel.perf_event_paranoid`, if readable.
pub fn perf_event_paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// True when the kernel exposes a hardware PMU for the CPU (`cpu`, or `cpu_core`/`cpu_atom` on
/// hybrid parts) under /sys/bus/event_source/devices.
pub fn hardware_pmu_present() -> bool {
    [
        "cpu",
        "cpu_core",
        "cpu_atom",
        "armv8_pmuv3",
        "armv8_pmuv3_0",
    ]
    .iter()
    .any(|d| {
        std::path::Path::new("/sys/bus/event_source/devices")
            .join(d)
            .exists()
    })
}
