//! `syscost cachesets`: which L1 sets objects can reach and how likely one overflows.

use super::*;

pub(super) const CACHESETS_HELP: &str = "Examples:
  syscost cachesets --objects 37 --size 408 --geometry sets=64,ways=8,line=64
      the analysis of the 2023 'Syscall latency' post: 408-byte audit entries (kmalloc-512) on Skylake-X's L1d
  syscost cachesets --objects 37 --size 408
      the same on this machine's L1d
  drgn ... | syscost cachesets --addresses - --size 408
      the real placement of a running kernel's entries";

/// The options of `syscost cachesets`.
#[derive(clap::Args, Debug)]
pub struct CachesetsArgs {
    /// Cache geometry, e.g. sets=64,ways=8,line=64 (Skylake-X L1d) [default: this CPU's L1d]
    #[arg(long, value_name = "GEOMETRY")]
    pub geometry: Option<String>,
    /// File of object addresses (hex, one per line; - for stdin).
    #[arg(long, value_name = "FILE")]
    pub addresses: Option<PathBuf>,
    /// Number of objects (the model; with --addresses: defaults to their count).
    #[arg(long, value_name = "N")]
    pub objects: Option<u64>,
    /// Object size: the kmalloc slab class and its alignment follow from it.
    #[arg(long, value_name = "BYTES")]
    pub size: Option<u64>,
    /// Object alignment in bytes, instead of the slab class's.
    #[arg(long, value_name = "BYTES")]
    pub align: Option<u64>,
    /// Cache lines counted per object, from its start (the audit walk touches 1).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub lines: u64,
    /// Monte Carlo trials of random placement.
    #[arg(long, default_value_t = 100_000, value_name = "N")]
    pub trials: u64,
    /// Monte Carlo seed (the output is reproducible for a given seed).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn cachesets(args: CachesetsArgs) -> Result<()> {
    let CachesetsArgs {
        geometry,
        addresses,
        objects,
        size,
        align,
        lines,
        trials,
        seed,
        json,
    } = args;
    use crate::layout::{self, Geometry};
    let (g, source) = match geometry {
        Some(s) => (Geometry::parse(&s)?, "--geometry".to_string()),
        None => (Geometry::l1d()?, "this CPU's L1d, from sysfs".to_string()),
    };
    let addrs = match &addresses {
        None => None,
        Some(p) => {
            let (text, name) = if p.as_os_str() == "-" {
                let mut t = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)?;
                (t, "stdin".to_string())
            } else {
                (
                    std::fs::read_to_string(p)
                        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?,
                    p.display().to_string(),
                )
            };
            Some(layout::parse_addresses(&text, &name)?)
        }
    };
    let n = match (objects, &addrs) {
        (Some(n), _) => n,
        (None, Some(a)) => a.len() as u64,
        (None, None) => {
            anyhow::bail!("give --objects N (with --size or --align) or --addresses FILE")
        }
    };
    if addrs.is_none() && size.is_none() && align.is_none() {
        anyhow::bail!("the model needs --size BYTES (or --align BYTES) for its {n} objects");
    }
    if trials == 0 {
        anyhow::bail!("--trials must be at least 1");
    }
    let a = layout::analyse(&layout::Request {
        geometry: g,
        geometry_source: &source,
        addrs: addrs.as_deref(),
        objects: n,
        size,
        align,
        lines,
        trials,
        seed,
    })?;
    show(&a, if json { Format::Json } else { Format::Table }, &None)
}
