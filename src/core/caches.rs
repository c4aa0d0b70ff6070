//! The CPU's caches as sysfs describes them (CPU 0's, like `lscpu -C`): read by the
//! environment, and by whatever needs this machine's L1d geometry.

use serde::{Deserialize, Serialize};
use std::fs;
use std::path::Path;

/// One level of CPU cache as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cache {
    pub level: u32,
    /// `Data`, `Instruction` or `Unified`.
    #[serde(rename = "type")]
    pub type_: String,
    pub size: Option<String>,
    pub line_size: Option<u32>,
    pub sets: Option<u32>,
    pub ways: Option<u32>,
    /// CPUs sharing this cache.
    pub shared_cpus: Option<String>,
}

fn read(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

fn read_num<T: std::str::FromStr>(path: impl AsRef<Path>) -> Option<T> {
    read(path)?.parse().ok()
}

/// Every cache level of CPU 0, in sysfs order.
pub(crate) fn caches() -> Vec<Cache> {
    let mut out = Vec::new();
    let base = Path::new("/sys/devices/system/cpu/cpu0/cache");
    let Ok(dir) = fs::read_dir(base) else {
        return out;
    };
    let mut entries: Vec<_> = dir
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("index"))
        })
        .collect();
    entries.sort();
    for p in entries {
        let Some(level) = read_num(p.join("level")) else {
            continue;
        };
        out.push(Cache {
            level,
            type_: read(p.join("type")).unwrap_or_default(),
            size: read(p.join("size")),
            line_size: read_num(p.join("coherency_line_size")),
            sets: read_num(p.join("number_of_sets")),
            ways: read_num(p.join("ways_of_associativity")),
            shared_cpus: read(p.join("shared_cpu_list")),
        });
    }
    out
}

/// The L1 data cache of CPU 0, if sysfs describes one.
pub(crate) fn l1d() -> Option<Cache> {
    caches()
        .into_iter()
        .find(|c| c.level == 1 && c.type_ == "Data")
}
