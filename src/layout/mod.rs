//! Cache-set layout: which L1 sets objects' cache lines can reach, how crowded they are, the
//! syscall-latency post's "cacheline-spread" (the standard deviation of objects per reachable
//! set), and how likely random placement overflows a set's ways (the post: 408-byte
//! audit_entry objects come from kmalloc-512, so their first line reaches only 8 of
//! Skylake-X's 64 L1 sets).

use crate::core::input::Opt;
use crate::core::{Envelope, Kind};
use crate::stats::pstdev;
use anyhow::{Result, bail};
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

/// A cache's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub sets: u64,
    pub ways: u64,
    pub line: u64,
}

impl Geometry {
    /// `sets=64,ways=8,line=64`; each a power of two (ways may be any positive number).
    pub fn parse(s: &str) -> Result<Geometry> {
        let g = Self::fields(s)
            .map_err(|why| crate::refused!(Opt::Geometry, format!(" '{s}': {why}")))?;
        g.check()?;
        Ok(g)
    }

    /// The three fields of `s`, or what is wrong with it.
    fn fields(s: &str) -> std::result::Result<Geometry, String> {
        let (mut sets, mut ways, mut line) = (None, None, None);
        for part in s.split(',') {
            let Some((k, v)) = part.split_once('=') else {
                return Err("write it as sets=64,ways=8,line=64".into());
            };
            let v: u64 =
                (v.trim().parse()).map_err(|_| format!("'{}' is not a whole number", v.trim()))?;
            let slot = match k.trim() {
                "sets" => &mut sets,
                "ways" => &mut ways,
                "line" => &mut line,
                other => return Err(format!("unknown key '{other}' (sets, ways, line)")),
            };
            if slot.replace(v).is_some() {
                return Err(format!("{} is given twice", k.trim()));
            }
        }
        let missing = |k: &str| format!("{k}= is missing");
        Ok(Geometry {
            sets: sets.ok_or_else(|| missing("sets"))?,
            ways: ways.ok_or_else(|| missing("ways"))?,
            line: line.ok_or_else(|| missing("line"))?,
        })
    }

    pub(crate) fn check(&self) -> Result<()> {
        // Bounds of any real cache (a 64 KiB L1 has 64-512 sets, 4-16 ways, 64-byte lines), wide
        // enough for large L2s and LLC slices, and small enough that every figure fits in
        // memory and in a u64.
        if self.sets > MAX_SETS || self.ways > MAX_WAYS || self.line > MAX_LINE {
            bail!(
                "a cache of {} sets x {} ways x {} B lines is beyond what syscost models: at most \
                 {MAX_SETS} sets, {MAX_WAYS} ways and {MAX_LINE} B lines",
                self.sets,
                self.ways,
                self.line
            );
        }
        if !self.sets.is_power_of_two() {
            bail!("the number of sets ({}) must be a power of two", self.sets);
        }
        if !self.line.is_power_of_two() {
            bail!("the line size ({}) must be a power of two", self.line);
        }
        if self.ways == 0 {
            bail!("a cache needs at least one way");
        }
        Ok(())
    }

    /// The L1 data cache of CPU 0, from sysfs.
    pub fn l1d() -> Result<Geometry> {
        let c = crate::core::caches::l1d().ok_or_else(|| {
            crate::refused!(
                "sysfs describes no L1 data cache here: give ",
                Opt::Geometry,
                " sets=64,ways=8,line=64"
            )
        })?;
        let g = Geometry {
            sets: c.sets.unwrap_or(0) as u64,
            ways: c.ways.unwrap_or(0) as u64,
            line: c.line_size.unwrap_or(0) as u64,
        };
        g.check()?;
        Ok(g)
    }

    pub(crate) fn set_of(&self, addr: u64) -> u64 {
        (addr / self.line) % self.sets
    }
}

/// kmalloc's size classes: the slab an object of `size` bytes comes from.
pub(crate) fn slab_class(size: u64) -> Result<u64> {
    const CLASSES: &[u64] = &[8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096];
    if size == 0 {
        bail!(crate::refused!(Opt::Size, " must be at least 1 byte"));
    }
    CLASSES.iter().copied().find(|&c| c >= size).ok_or_else(|| {
        crate::refused!(
            Opt::Size,
            format!(
                " {size} is larger than a page: such objects come from the page allocator, not \
                 a kmalloc slab; give their alignment with "
            ),
            Opt::Align
        )
    })
}

/// The alignment objects of a slab class get: their size, or the largest power of two
/// dividing it (96 and 192 byte objects sit at multiples of 32 and 64).
pub(crate) fn slab_alignment(class: u64) -> u64 {
    1 << class.trailing_zeros()
}

/// The sets the first line of an object aligned to `align` can land in.
pub(crate) fn reachable_sets(g: &Geometry, align: u64) -> Vec<u64> {
    let span = g.sets * g.line;
    let step = align.max(1);
    let mut sets: Vec<u64> = (0..span.div_ceil(step).max(1))
        .map(|k| g.set_of(k * step))
        .collect();
    sets.sort();
    sets.dedup();
    sets
}

/// Population per set of the first `lines` lines of each object at `addrs`.
pub(crate) fn populations(g: &Geometry, addrs: &[u64], lines: u64) -> Vec<u64> {
    let mut pop = vec![0u64; g.sets as usize];
    for a in addrs {
        for k in 0..lines.max(1) {
            pop[g.set_of(a + k * g.line) as usize] += 1;
        }
    }
    pop
}

/// The syscall-latency post's cacheline-spread: the (population) standard deviation of the
/// populations of the reachable sets; 0 for a perfectly even layout.
pub(crate) fn spread(pop: &[u64], reachable: &[u64]) -> f64 {
    let v: Vec<f64> = reachable.iter().map(|&s| pop[s as usize] as f64).collect();
    if v.is_empty() { 0.0 } else { pstdev(&v) }
}

/// `draws` placements of `objects` first lines, each uniformly at random over `sets` sets
/// (seeded): each draw's population per set, handed to `each`.
fn uniform_draws(objects: u64, sets: usize, draws: u64, seed: u64, mut each: impl FnMut(&[u64])) {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    let mut pop = vec![0u64; sets.max(1)];
    for _ in 0..draws {
        pop.iter_mut().for_each(|p| *p = 0);
        for _ in 0..objects {
            let set = rng.random_range(0..pop.len());
            pop[set] += 1;
        }
        each(&pop);
    }
}

/// Monte Carlo: the spread ([`spread`]) of `objects` first lines placed uniformly at random
/// over `sets` sets, `draws` times, sorted: the spread a placement with no skew gives, against
/// which a measured spread says whether the allocator crowds. (A closed form would need the
/// multinomial's standard deviation's distribution; drawing it is exact enough at 10^4.)
pub(crate) fn uniform_spreads(objects: u64, sets: u64, draws: u64, seed: u64) -> Vec<f64> {
    let mut out = Vec::with_capacity(draws as usize);
    uniform_draws(objects, sets as usize, draws, seed, |pop| {
        let v: Vec<f64> = pop.iter().map(|&p| p as f64).collect();
        out.push(pstdev(&v));
    });
    out.sort_by(f64::total_cmp);
    out
}

/// Monte Carlo: place `objects` first lines uniformly at random among the reachable sets,
/// `trials` times; the share of trials in which some set holds more than `ways` lines, with a
/// 95% Wilson interval.
pub(crate) fn overflow_probability(
    g: &Geometry,
    reachable: &[u64],
    objects: u64,
    trials: u64,
    seed: u64,
) -> (f64, (f64, f64)) {
    let mut hits = 0u64;
    uniform_draws(objects, reachable.len(), trials, seed, |pop| {
        if pop.iter().any(|&p| p > g.ways) {
            hits += 1;
        }
    });
    let n = trials as f64;
    let p = hits as f64 / n;
    let z = 1.959963984540054;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / (1.0 + z * z / n);
    (p, ((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// Parse addresses: hex, one per line, `0x` optional; blank lines and `#` comments ignored.
pub fn parse_addresses(text: &str, source: &str) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.split('#').next().unwrap_or("").trim();
        if t.is_empty() {
            continue;
        }
        let hex = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        match u64::from_str_radix(hex, 16) {
            Ok(a) => out.push(a),
            Err(_) => bail!(
                "{source} line {}: '{t}' is not a hexadecimal address (one per line, like \
                 ffff8881003c4a00 or 0xffff8881003c4a00)",
                i + 1
            ),
        }
    }
    if out.is_empty() {
        bail!("{source}: no addresses in it");
    }
    Ok(out)
}

/// The largest cache syscost models: sets, ways and line size.
pub(crate) const MAX_SETS: u64 = 1 << 16;
pub(crate) const MAX_WAYS: u64 = 256;
pub(crate) const MAX_LINE: u64 = 4096;
/// The most objects, lines per object and Monte Carlo trials one analysis takes.
pub(crate) const MAX_OBJECTS: u64 = 1 << 20;
pub(crate) const MAX_LINES: u64 = 64;
pub(crate) const MAX_TRIALS: u64 = 10_000_000;

/// What `syscost cachesets` reports.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Analysis {
    /// Schema, version, kind and tool.
    #[serde(flatten)]
    pub envelope: Envelope,
    pub geometry: Geometry,
    /// Where the geometry came from.
    pub geometry_source: String,
    pub objects: u64,
    pub object_size: Option<u64>,
    pub slab_class: Option<u64>,
    pub alignment: u64,
    /// Lines counted per object (from its start).
    pub lines_per_object: u64,
    /// Sets the first line of an object can land in.
    pub reachable_sets: Vec<u64>,
    /// `sets x ways` slots available to the first lines.
    pub reachable_slots: u64,
    /// Population per set (from the addresses; for a model, of an even placement).
    pub populations: Vec<u64>,
    pub cacheline_spread: f64,
    /// The most crowded sets: (set, population), most first.
    pub crowded: Vec<(u64, u64)>,
    /// Sets holding more lines than the cache has ways.
    pub overflowing: Vec<u64>,
    pub monte_carlo: MonteCarlo,
    pub addresses_given: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct MonteCarlo {
    pub trials: u64,
    pub seed: u64,
    /// P(some reachable set gets more lines than ways) under uniform random placement.
    pub overflow_probability: f64,
    pub ci95: (f64, f64),
}

/// What to analyse.
#[derive(Clone, Debug)]
pub(crate) struct Request<'a> {
    pub geometry: Geometry,
    pub geometry_source: &'a str,
    /// Real addresses; `None` analyses `objects` placed as evenly as possible.
    pub addrs: Option<&'a [u64]>,
    pub objects: u64,
    pub size: Option<u64>,
    pub align: Option<u64>,
    /// Lines counted per object.
    pub lines: u64,
    pub trials: u64,
    pub seed: u64,
}

/// Analyse a placement.
pub(crate) fn analyse(req: &Request) -> Result<Analysis> {
    let Request {
        geometry: g,
        geometry_source,
        addrs,
        objects,
        size,
        align,
        lines,
        trials,
        seed,
    } = req.clone();
    if objects == 0 {
        bail!(crate::refused!(Opt::Objects, " must be at least 1"));
    }
    g.check()?;
    if objects > MAX_OBJECTS {
        bail!(crate::refused!(
            Opt::Objects,
            format!(" {objects}: at most {MAX_OBJECTS} objects per analysis")
        ));
    }
    if lines == 0 || lines > MAX_LINES {
        bail!(crate::refused!(
            Opt::Lines,
            format!(" {lines}: count 1 to {MAX_LINES} lines per object")
        ));
    }
    if trials > MAX_TRIALS {
        bail!(crate::refused!(
            Opt::Trials,
            format!(" {trials}: at most {MAX_TRIALS} Monte Carlo trials")
        ));
    }
    if let Some(a) = align
        && a > g.sets * g.line
    {
        bail!(crate::refused!(
            Opt::Align,
            format!(
                " {a} is larger than the cache's way ({} B): every object would land in set 0",
                g.sets * g.line
            )
        ));
    }
    let class = match (size, align) {
        (Some(s), None) => Some(slab_class(s)?),
        (Some(s), Some(_)) => {
            if s == 0 {
                bail!(crate::refused!(Opt::Size, " must be at least 1 byte"));
            }
            None
        }
        _ => None,
    };
    let alignment = match (align, class) {
        (Some(a), _) => {
            if !a.is_power_of_two() {
                bail!(crate::refused!(
                    Opt::Align,
                    format!(" {a} must be a power of two")
                ));
            }
            a
        }
        (None, Some(c)) => slab_alignment(c),
        (None, None) => g.line,
    };
    let reachable = reachable_sets(&g, alignment);
    let (pop, given) = match addrs {
        Some(a) => (populations(&g, a, lines), true),
        None => {
            // The even placement: objects dealt round-robin over the reachable slots.
            let step = alignment.max(g.line);
            let even: Vec<u64> = (0..objects).map(|i| i * step).collect();
            (populations(&g, &even, lines), false)
        }
    };
    let mut crowded: Vec<(u64, u64)> = pop
        .iter()
        .enumerate()
        .filter(|(_, p)| **p > 0)
        .map(|(s, p)| (s as u64, *p))
        .collect();
    crowded.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    crowded.truncate(8);
    let overflowing = pop
        .iter()
        .enumerate()
        .filter(|(_, p)| **p > g.ways)
        .map(|(s, _)| s as u64)
        .collect();
    let (p, ci) = overflow_probability(&g, &reachable, objects, trials, seed);
    Ok(Analysis {
        envelope: Envelope::new(Kind::Cachesets),
        geometry: g,
        geometry_source: geometry_source.into(),
        objects,
        object_size: size,
        slab_class: class,
        alignment,
        lines_per_object: lines,
        reachable_slots: reachable.len() as u64 * g.ways,
        cacheline_spread: spread(&pop, &reachable),
        reachable_sets: reachable,
        populations: pop,
        crowded,
        overflowing,
        monte_carlo: MonteCarlo {
            trials,
            seed,
            overflow_probability: p,
            ci95: ci,
        },
        addresses_given: given,
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    const SKX: Geometry = Geometry {
        sets: 64,
        ways: 8,
        line: 64,
    };

    #[test]
    fn uniform_spreads_are_the_multinomial_s() {
        // 37 entries over 8 sets: each set's count is Binomial(37, 1/8), so the mean squared
        // spread is 37 * 1/8 * 7/8 = 4.046875 exactly.
        let s = uniform_spreads(37, 8, 20_000, 1);
        let mean_sq = s.iter().map(|v| v * v).sum::<f64>() / s.len() as f64;
        assert!((mean_sq - 4.046875).abs() < 0.06, "{mean_sq}");
        // A Python draw of 10^5 (random.randrange, statistics.pstdev): median 1.932, 5% 1.111,
        // 95% 2.826.
        let q = |p: f64| crate::stats::quantile(&s, p);
        assert!((q(0.5) - 1.932).abs() < 0.03, "{}", q(0.5));
        assert!((q(0.05) - 1.111).abs() < 0.03 && (q(0.95) - 2.826).abs() < 0.03);
        assert!(s.windows(2).all(|w| w[0] <= w[1]), "sorted");
    }

    #[test]
    fn kmalloc_512_reaches_every_eighth_set() {
        assert_eq!(slab_class(408).unwrap(), 512);
        assert_eq!(
            reachable_sets(&SKX, 512),
            vec![0, 8, 16, 24, 32, 40, 48, 56],
            "512-byte alignment on 64 sets of 64-byte lines"
        );
        // audit_context: 920 bytes from kmalloc-1k, sets {0, 16, 32, 48}
        assert_eq!(
            reachable_sets(&SKX, slab_alignment(slab_class(920).unwrap())),
            vec![0, 16, 32, 48]
        );
        assert_eq!(reachable_sets(&SKX, 64).len(), 64);
        assert_eq!(reachable_sets(&SKX, 8192), vec![0]);
    }

    #[test]
    fn uniform_layout_has_zero_spread() {
        let addrs: Vec<u64> = (0..64).map(|i| i * 512).collect();
        let pop = populations(&SKX, &addrs, 1);
        let r = reachable_sets(&SKX, 512);
        assert_eq!(spread(&pop, &r), 0.0);
        assert!(r.iter().all(|&s| pop[s as usize] == 8));
        let skewed: Vec<u64> = (0..10).map(|i| i * 4096).collect();
        assert!(spread(&populations(&SKX, &skewed, 1), &r) > 3.0);
    }

    #[test]
    fn monte_carlo_is_reproducible_and_sensible() {
        let r = reachable_sets(&SKX, 512);
        let a = overflow_probability(&SKX, &r, 37, 2000, 7);
        let b = overflow_probability(&SKX, &r, 37, 2000, 7);
        assert_eq!(a, b);
        assert!(
            a.0 > 0.0 && a.0 < 1.0,
            "37 lines into 8 sets of 8 ways: {}",
            a.0
        );
        assert_eq!(
            overflow_probability(&SKX, &r, 8, 500, 1).0,
            0.0,
            "8 lines cannot overflow"
        );
        assert_eq!(
            overflow_probability(&SKX, &r, 65, 100, 1).0,
            1.0,
            "65 > 64 slots"
        );
        let (lo, hi) = a.1;
        assert!(lo <= a.0 && a.0 <= hi);
    }

    #[test]
    fn bad_inputs() {
        assert!(
            Geometry::parse("sets=60,ways=8,line=64")
                .unwrap_err()
                .to_string()
                .contains("power of two")
        );
        assert!(Geometry::parse("sets=64,ways=8").is_err());
        assert!(Geometry::parse("sets=64,ways=0,line=64").is_err());
        assert!(
            slab_class(5000)
                .unwrap_err()
                .to_string()
                .contains("--align")
        );
        assert!(
            parse_addresses("ffff0000\nnothex\n", "stdin")
                .unwrap_err()
                .to_string()
                .contains("line 2")
        );
        assert_eq!(
            parse_addresses("0x40\n# c\n\n80\n", "f").unwrap(),
            vec![0x40, 0x80]
        );
        let req = |objects, align| Request {
            geometry: SKX,
            geometry_source: "t",
            addrs: None,
            objects,
            size: Some(408),
            align,
            lines: 1,
            trials: 10,
            seed: 1,
        };
        assert!(analyse(&req(0, None)).is_err());
        assert!(analyse(&req(3, Some(100))).is_err());
        assert!(analyse(&req(3, None)).is_ok());
    }
}
