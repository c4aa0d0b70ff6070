//! Where each boot put its audit exit rules' entries, and whether the modelled misses follow:
//! the syscall-latency post's cacheline-spread (the standard deviation of the entries' first
//! lines over the L1d sets they can reach) per boot, beside the boot's modelled L1d misses,
//! and their correlation over an arm's boots.

use super::{Measured, per_run, sum_of};
use crate::audit::addresses::Placement;
use crate::experiments::boots::BootRecord;
use crate::experiments::boots::record::Decoded;
use crate::layout::{self, Geometry};
use crate::results::sets::EmulatedSets;
use crate::stats::correlation::{Correlation, correlate};
use serde::{Deserialize, Serialize};

/// One boot's placement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct BootPlacement {
    pub round: u32,
    /// How the entries' slab was aged before they loaded (none: a fresh boot's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aged: Option<crate::audit::age::Aged>,
    pub entries: usize,
    /// The sets an entry's first line can reach (its slab alignment's).
    pub reachable: usize,
    pub spread: f64,
    /// The entries in the most crowded set.
    pub peak: u64,
    /// The most crowded sets, (set, entries), most first.
    pub crowded: Vec<(u64, u64)>,
    /// The boot's modelled L1d load misses per operation: the median of its runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misses: Option<f64>,
    /// Each run's (a fresh worker process each, the boot's entries unchanged: what differs is
    /// where the process's own objects are).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub run_misses: Vec<f64>,
    /// The L1d set that missed most in this boot, its misses per operation, and the entries
    /// in it: whether the misses are where the entries crowd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub most_missed: Option<MostMissed>,
    /// Each run's misses by whose lines they were in (with the emulator's missed lines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<super::owners::RunOwners>,
    /// Each run's own placement, where the boot placed the entries anew before every run
    /// (`campaign --placement run`): then every run is a placement of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placed_runs: Vec<RunPlaced>,
}

/// A run whose rule entries were placed anew before it, and its modelled misses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunPlaced {
    pub run: u32,
    pub spread: f64,
    /// The entries in its most crowded set.
    pub peak: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misses: Option<f64>,
    /// Seconds the guest took to place the entries anew.
    pub seconds: f64,
}

/// One placement's figures, whichever measured it: (spread, entries in the most crowded set,
/// misses per operation).
pub(crate) type Unit = (f64, u64, Option<f64>);

/// The placements of `boots`: each run's where the boots placed the entries anew per run,
/// else each boot's.
pub(crate) fn units<B: std::borrow::Borrow<BootPlacement>>(boots: &[B]) -> Vec<Unit> {
    let boots = || boots.iter().map(B::borrow);
    match boots().any(|b| !b.placed_runs.is_empty()) {
        true => boots()
            .flat_map(|b| b.placed_runs.iter().map(|r| (r.spread, r.peak, r.misses)))
            .collect(),
        false => boots().map(|b| (b.spread, b.peak, b.misses)).collect(),
    }
}

/// An arm's placements as a distribution: how many, over how many boots, their misses and
/// spreads (the median and the middle 80%), how many crowd a set past its ways, and what
/// placing them anew cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Distribution {
    pub placements: usize,
    pub boots: usize,
    /// Each run was a placement of its own (else each boot).
    pub per_run: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misses: Option<Middle>,
    pub spread: Middle,
    /// Placements with as many entries in one set as it has ways.
    pub crowded: usize,
    pub ways: u64,
    /// The mean seconds a guest took to place the entries anew (per run only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// The mechanism: by the entries in the most crowded set, the placements and their
    /// median misses, fewest entries first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_peak: Vec<PeakMisses>,
}

/// The placements whose most crowded set held `entries`, and their median misses.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PeakMisses {
    pub entries: u64,
    pub placements: usize,
    pub misses: f64,
}

/// Misses by the entries in the most crowded set, over the placements with misses.
fn by_peak(units: &[Unit]) -> Vec<PeakMisses> {
    let mut peaks: Vec<u64> = units
        .iter()
        .filter(|u| u.2.is_some())
        .map(|u| u.1)
        .collect();
    peaks.sort_unstable();
    peaks.dedup();
    (peaks.into_iter())
        .map(|entries| {
            let m: Vec<f64> = (units.iter())
                .filter(|u| u.1 == entries)
                .filter_map(|u| u.2)
                .collect();
            PeakMisses {
                entries,
                placements: m.len(),
                misses: crate::stats::median(&m),
            }
        })
        .collect()
}

/// A median and the 10% and 90% points (numpy's default quantiles).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Middle {
    pub median: f64,
    pub low: f64,
    pub high: f64,
}

impl Middle {
    pub(crate) fn of(v: &[f64]) -> Option<Middle> {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        let q = |p| crate::stats::quantile(&v, p);
        (!v.is_empty()).then(|| Middle {
            median: q(0.5),
            low: q(0.1),
            high: q(0.9),
        })
    }
}

impl Distribution {
    fn of(boots: &[BootPlacement], ways: u64) -> Option<Distribution> {
        let u = units(boots);
        let misses: Vec<f64> = u.iter().filter_map(|x| x.2).collect();
        let spreads: Vec<f64> = u.iter().map(|x| x.0).collect();
        let anew: Vec<f64> = (boots.iter())
            .flat_map(|b| b.placed_runs.iter().map(|r| r.seconds))
            .collect();
        Some(Distribution {
            placements: u.len(),
            boots: boots.len(),
            per_run: !anew.is_empty(),
            misses: Middle::of(&misses),
            spread: Middle::of(&spreads)?,
            crowded: u.iter().filter(|x| x.1 >= ways).count(),
            ways,
            seconds: (!anew.is_empty()).then(|| anew.iter().sum::<f64>() / anew.len() as f64),
            by_peak: by_peak(&u),
        })
    }
}

/// A boot's most missed L1d set.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct MostMissed {
    pub set: u64,
    pub misses: f64,
    pub entries: u64,
}

/// An arm's boots' placements.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct ArmPlacement {
    pub arm: String,
    pub boots: Vec<BootPlacement>,
    /// Misses against spread over the boots (3 or more, spread not constant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation: Option<Correlation>,
    /// Misses against the most crowded set's entries over the boots: a set overflows its
    /// ways whatever the others hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_correlation: Option<Correlation>,
    /// Why a boot's entries could not be read, if one's could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// The spread as many entries placed uniformly at random over as many sets give (set by
    /// the reproduction, which knows the paper's spread for the arm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uniform: Option<UniformSpread>,
    /// The placements whose entries filled a set's ways, against the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crowding: Option<Crowding>,
    /// Every placement measured, as a distribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<Distribution>,
}

impl ArmPlacement {
    /// Whether its boots placed the entries anew before every run.
    pub(crate) fn per_run(&self) -> bool {
        self.boots.iter().any(|b| !b.placed_runs.is_empty())
    }
}

/// How many of an arm's boots put as many entries into one L1d set as it has ways (a set the
/// task's own lines then overflow), and the misses of those boots and of the others: the
/// post's mechanism, placement by placement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Crowding {
    pub ways: u64,
    /// Placements with misses measured (boots, or runs placed anew; a record before this
    /// existed: boots).
    #[serde(alias = "boots")]
    pub placements: usize,
    pub crowded: usize,
    /// The median misses per operation of the crowded boots and of the others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crowded_misses: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_misses: Option<f64>,
}

impl Crowding {
    fn of(units: &[Unit], ways: u64) -> Option<Crowding> {
        let measured: Vec<(bool, f64)> = units
            .iter()
            .filter_map(|u| Some((u.1 >= ways, u.2?)))
            .collect();
        let median = |crowded: bool| {
            let v: Vec<f64> = measured
                .iter()
                .filter(|m| m.0 == crowded)
                .map(|m| m.1)
                .collect();
            (!v.is_empty()).then(|| crate::stats::median(&v))
        };
        (!measured.is_empty()).then(|| Crowding {
            ways,
            placements: measured.len(),
            crowded: measured.iter().filter(|m| m.0).count(),
            crowded_misses: median(true),
            other_misses: median(false),
        })
    }
}

/// Draws of a uniform placement: enough that its 5% and 95% points move by under 0.03.
pub(crate) const UNIFORM_DRAWS: u64 = 10_000;

/// What a placement without skew gives: the spread of an arm's entries placed uniformly at
/// random over the sets they can reach ([`layout::uniform_spreads`], seeded, so a saved
/// reproduction scores the same again).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct UniformSpread {
    pub entries: usize,
    pub sets: usize,
    pub draws: u64,
    pub median: f64,
    /// Its 5% and 95% points.
    pub low: f64,
    pub high: f64,
    /// The paper's spread for the arm and the share of uniform draws at or below it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paper: Option<(f64, f64)>,
}

impl UniformSpread {
    /// For `entries` over `sets`, with `paper`'s place among the draws when the paper gives
    /// the arm's spread.
    pub(crate) fn of(entries: usize, sets: usize, paper: Option<f64>) -> UniformSpread {
        let d = layout::uniform_spreads(entries as u64, sets as u64, UNIFORM_DRAWS, 1);
        let q = |p| crate::stats::quantile(&d, p);
        let share = |v: f64| d.partition_point(|&x| x <= v) as f64 / d.len().max(1) as f64;
        UniformSpread {
            entries,
            sets,
            draws: UNIFORM_DRAWS,
            median: q(0.5),
            low: q(0.05),
            high: q(0.95),
            paper: paper.map(|v| (v, share(v))),
        }
    }
}

/// Each arm's placements, from its boots' results (`audit_entries`, which a boot with rules
/// records), with `misses` (metrics added together) per boot, in an L1d of `geometry`.
pub(crate) fn placements(
    boots: &[Measured],
    arms: &[&str],
    geometry: Geometry,
    misses: &[String],
) -> Vec<ArmPlacement> {
    arms.iter()
        .filter_map(|arm| {
            let read: Vec<(&Measured, Placement)> = boots
                .iter()
                .filter(|(b, _)| b.arm == *arm)
                .filter_map(|m| Some((m, placement_of(m.0)?)))
                .collect();
            if read.is_empty() {
                return None;
            }
            let unreadable = read.iter().find_map(|(_, p)| p.unreadable.clone());
            let boots: Vec<BootPlacement> = read
                .iter()
                .filter(|(_, p)| !p.addresses.is_empty())
                .map(|(m, p)| of_boot(m, p, geometry, misses))
                .collect();
            let (correlation, peak_correlation) = misses_against_placement(&units(&boots));
            let crowding = Crowding::of(&units(&boots), geometry.ways);
            Some(ArmPlacement {
                arm: arm.to_string(),
                correlation,
                peak_correlation,
                distribution: Distribution::of(&boots, geometry.ways),
                boots,
                unreadable,
                uniform: None,
                crowding,
            })
        })
        .collect()
}

/// The boots of the arms that boot one kernel (a fresh and an aged slab's), pooled: whether
/// misses follow the entries' placement across both.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct KernelPlacement {
    pub kernel: String,
    pub arms: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correlation: Option<Correlation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_correlation: Option<Correlation>,
}

/// `placed` pooled by kernel (`kernel_of` an arm's), for kernels booted by two or more arms.
pub(crate) fn by_kernel(
    placed: &[ArmPlacement],
    kernel_of: impl Fn(&str) -> Option<String>,
) -> Vec<KernelPlacement> {
    let mut out: Vec<KernelPlacement> = Vec::new();
    for a in placed {
        let Some(k) = kernel_of(&a.arm) else { continue };
        match out.iter_mut().find(|p| p.kernel == k) {
            Some(p) => p.arms.push(a.arm.clone()),
            None => out.push(KernelPlacement {
                kernel: k,
                arms: vec![a.arm.clone()],
                correlation: None,
                peak_correlation: None,
            }),
        }
    }
    out.retain(|p| p.arms.len() > 1);
    for p in &mut out {
        let boots: Vec<&BootPlacement> = placed
            .iter()
            .filter(|a| p.arms.contains(&a.arm))
            .flat_map(|a| &a.boots)
            .collect();
        (p.correlation, p.peak_correlation) = misses_against_placement(&units(&boots));
    }
    out
}

/// The placements' misses against their entries' spread, and against the most crowded set's
/// entries (3 or more placements with misses, placement not constant).
fn misses_against_placement(units: &[Unit]) -> (Option<Correlation>, Option<Correlation>) {
    let against = |x: fn(&Unit) -> f64| {
        let (x, y): (Vec<f64>, Vec<f64>) = units.iter().filter_map(|u| Some((x(u), u.2?))).unzip();
        correlate(&x, &y)
    };
    (against(|u| u.0), against(|u| u.1 as f64))
}

fn placement_of(b: &BootRecord) -> Option<Placement> {
    let v = b.result()?.get(crate::boot::ENTRIES_FIELD)?;
    serde_json::from_value(v.clone()).ok()
}

fn of_boot((b, d): &Measured, p: &Placement, g: Geometry, misses: &[String]) -> BootPlacement {
    let addrs = p.addresses();
    let sets = Sets::of(&addrs, g);
    let run_misses = per_run(d, misses);
    BootPlacement {
        round: b.round,
        aged: p.aged.clone(),
        entries: addrs.len(),
        reachable: sets.reachable,
        spread: sets.spread,
        peak: sets.peak(),
        misses: sum_of(d, misses),
        most_missed: most_missed(d, &sets.pop),
        runs: (b.result())
            .map(|r| super::owners::runs_of(r, &addrs, g))
            .unwrap_or_default(),
        placed_runs: placed_runs(b.result(), &run_misses, g),
        run_misses,
        crowded: sets.crowded,
    }
}

/// Where entries at some addresses land in an L1d: how many sets they can reach (their slab
/// alignment's), each set's entries, the spread over the reachable sets, and the three most
/// crowded of those, (set, entries), most first.
struct Sets {
    reachable: usize,
    pop: Vec<u64>,
    spread: f64,
    crowded: Vec<(u64, u64)>,
}

impl Sets {
    fn of(addrs: &[u64], g: Geometry) -> Sets {
        let reachable = layout::reachable_sets(&g, alignment(addrs));
        let pop = layout::populations(&g, addrs, 1);
        let mut crowded: Vec<(u64, u64)> =
            reachable.iter().map(|&s| (s, pop[s as usize])).collect();
        crowded.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        crowded.truncate(3);
        Sets {
            reachable: reachable.len(),
            spread: layout::spread(&pop, &reachable),
            pop,
            crowded,
        }
    }

    /// The entries in the most crowded set.
    fn peak(&self) -> u64 {
        self.crowded.first().map_or(0, |c| c.1)
    }
}

/// Each run's own placement in a boot's `result`, where it placed the entries anew before
/// every run, with the run's misses (`misses`, in run order).
fn placed_runs(result: Option<&serde_json::Value>, misses: &[f64], g: Geometry) -> Vec<RunPlaced> {
    let runs = result.and_then(|r| r.get("runs")?.as_array());
    let placed = runs.into_iter().flatten().enumerate().filter_map(|(i, r)| {
        let p = Placement::deserialize(r.get("placement")?).ok()?;
        let anew = p.anew.as_ref()?;
        let sets = Sets::of(&p.addresses(), g);
        Some(RunPlaced {
            run: anew.run,
            spread: sets.spread,
            peak: sets.peak(),
            misses: misses.get(i).copied(),
            seconds: anew.seconds,
        })
    });
    placed.collect()
}

/// The set of a boot's modelled L1d that missed most, with the entries `pop` puts there.
fn most_missed(d: &Decoded, pop: &[u64]) -> Option<MostMissed> {
    let sets = d.sets.as_ref()?;
    let (set, misses) = *EmulatedSets::crowded(&sets.l1d, 1).first()?;
    Some(MostMissed {
        set: set as u64,
        misses,
        entries: pop.get(set).copied().unwrap_or(0),
    })
}

/// The alignment every address shares, up to a page: a slab's objects sit at multiples of it.
fn alignment(addrs: &[u64]) -> u64 {
    let zeros = addrs.iter().map(|a| a.trailing_zeros()).min().unwrap_or(0);
    1 << zeros.min(12)
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn entries_of_a_512_byte_slab_reach_8_sets_and_their_spread_is_the_post_s() {
        let g = Geometry {
            sets: 64,
            ways: 8,
            line: 64,
        };
        // 16 entries: 4 in set 0, 2 in each of sets 8 ... 56 but one (set 56 gets none).
        let base = 0xffff_8880_0a00_0000u64;
        let mut addrs: Vec<u64> = (0..4).map(|k| base + k * 4096).collect();
        for s in 1..7u64 {
            addrs.extend((0..2).map(|k| base + s * 512 + k * 4096));
        }
        assert_eq!(alignment(&addrs), 512);
        let reachable = layout::reachable_sets(&g, alignment(&addrs));
        assert_eq!(reachable, [0, 8, 16, 24, 32, 40, 48, 56]);
        let pop = layout::populations(&g, &addrs, 1);
        let want = crate::stats::pstdev(&[4.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 0.0]);
        assert_eq!(layout::spread(&pop, &reachable), want);
        let p = Placement {
            addresses: addrs.iter().map(|a| format!("{a:#x}")).collect(),
            unreadable: None,
            aged: None,
            anew: None,
        };
        assert_eq!(p.addresses(), addrs, "hexadecimal round trip");
    }

    fn boot(peak: u64, misses: Option<f64>) -> BootPlacement {
        BootPlacement {
            round: 1,
            aged: None,
            entries: 37,
            reachable: 8,
            spread: 1.5,
            peak,
            crowded: vec![(0, peak)],
            misses,
            run_misses: Vec::new(),
            most_missed: None,
            runs: Vec::new(),
            placed_runs: Vec::new(),
        }
    }

    #[test]
    fn boots_that_fill_a_set_s_ways_are_set_against_the_others() {
        let boots = [
            boot(8, Some(8.0)),
            boot(9, Some(9.0)),
            boot(8, Some(0.0)),
            boot(6, Some(0.0)),
            boot(7, Some(0.5)),
            boot(5, None),
        ];
        let c = Crowding::of(&units(&boots), 8).unwrap();
        assert_eq!(
            (c.placements, c.crowded),
            (5, 3),
            "a boot without misses is not counted"
        );
        assert_eq!((c.crowded_misses, c.other_misses), (Some(8.0), Some(0.25)));
        assert!(Crowding::of(&units(&boots[5..]), 8).is_none());
        let none = Crowding::of(&units(&boots[3..5]), 8).unwrap();
        assert_eq!((none.crowded, none.crowded_misses), (0, None));
    }

    #[test]
    fn runs_placed_anew_are_the_units_of_an_arm_s_distribution() {
        let run = |run: u32, peak: u64, misses: f64| RunPlaced {
            run,
            spread: peak as f64 / 4.0,
            peak,
            misses: Some(misses),
            seconds: 0.5,
        };
        let mut a = boot(5, Some(0.0));
        a.placed_runs = vec![run(0, 9, 12.0), run(1, 6, 0.0), run(2, 7, 0.0)];
        let mut b = boot(6, Some(1.0));
        b.placed_runs = vec![run(0, 8, 9.0), run(1, 5, 0.0)];
        let boots = [a, b];
        let u = units(&boots);
        assert_eq!(u.len(), 5, "each run a placement, not each boot");
        assert_eq!(u[0], (2.25, 9, Some(12.0)));
        let d = Distribution::of(&boots, 8).unwrap();
        assert_eq!(
            (d.placements, d.boots, d.per_run, d.crowded),
            (5, 2, true, 2)
        );
        assert_eq!(d.seconds, Some(0.5));
        let peaks: Vec<(u64, usize, f64)> = (d.by_peak.iter())
            .map(|p| (p.entries, p.placements, p.misses))
            .collect();
        assert_eq!(
            peaks,
            [
                (5, 1, 0.0),
                (6, 1, 0.0),
                (7, 1, 0.0),
                (8, 1, 9.0),
                (9, 1, 12.0)
            ]
        );
        // numpy.quantile([0, 0, 0, 9, 12], [0.1, 0.5, 0.9]) = [0, 0, 10.8]
        let m = d.misses.unwrap();
        assert_eq!((m.low, m.median), (0.0, 0.0));
        assert!((m.high - 10.8).abs() < 1e-12, "{m:?}");
        let c = Crowding::of(&u, 8).unwrap();
        assert_eq!((c.placements, c.crowded), (5, 2));
        assert_eq!((c.crowded_misses, c.other_misses), (Some(10.5), Some(0.0)));
        // Boots placed once are each one placement.
        let once = [boot(9, Some(3.0)), boot(4, Some(0.0))];
        let d = Distribution::of(&once, 8).unwrap();
        assert_eq!(
            (d.placements, d.per_run, d.crowded, d.seconds),
            (2, false, 1, None)
        );
    }
}
