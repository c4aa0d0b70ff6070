//! The search over builds in order, as `git bisect` searches commits, and as the 0-day robot
//! reports a series: each build measured gets a level (builds of one level count the same), and
//! wherever two measured builds next in order differ, the untried build nearest the middle
//! between them is tried next. A build that counts as one of them moves that bound; one that
//! counts as neither (exact counts only) splits the range in two, each searched on its own, so a
//! figure that moves in several steps gives a finding per step. A build that is skipped (it does
//! not build or boot) or undecided is stepped around; when only such builds are left between
//! two levels, the finding is the range they hold. Steps that cancel between two builds of one
//! level are not seen: a bisection only looks where its measured builds differ.

use serde::{Deserialize, Serialize};

/// What a build tried was found to be.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Outcome {
    /// It counts as build `j` (one of the bounds it was tried between).
    Same(usize),
    /// It counts as neither bound: a level of its own.
    New,
    /// It could not be measured or decided: stepped around.
    Unplaced,
}

/// The next build to try, and the two measured builds it lies between.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Probe {
    pub build: usize,
    pub lo: usize,
    pub hi: usize,
}

/// Where a search stands: the builds tried so far (the ends included), and each measured one's
/// level.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Search {
    tried: Vec<bool>,
    levels: Vec<Option<usize>>,
    good: usize,
    bad: usize,
    next_level: usize,
}

/// Where a figure steps: `first_bad` is the first build at the new level, `last_good` the
/// last at the old one before it, and `between` the builds between them, skipped or
/// undecided (the first bad build is one of them or `first_bad`). A search finds it by index
/// (`Finding<usize>`); a bisection's result names the builds (`Finding`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Finding<B = String> {
    pub last_good: B,
    pub first_bad: B,
    #[serde(default = "Vec::new", skip_serializing_if = "Vec::is_empty")]
    pub between: Vec<B>,
}

impl<B> Finding<B> {
    /// The same finding, its builds named by `name`.
    pub(crate) fn map<C>(self, name: impl Fn(B) -> C) -> Finding<C> {
        Finding {
            last_good: name(self.last_good),
            first_bad: name(self.first_bad),
            between: self.between.into_iter().map(name).collect(),
        }
    }

    /// Whether the first bad build is known: no build between it and the last good one.
    pub(crate) fn exact(&self) -> bool {
        self.between.is_empty()
    }
}

impl Search {
    /// A search of `n` builds between a good end and a bad end (indices, `good < bad`) whose
    /// figures differ.
    pub(crate) fn new(n: usize, good: usize, bad: usize) -> Search {
        let mut s = Search {
            tried: vec![false; n],
            levels: vec![None; n],
            good,
            bad,
            next_level: 2,
        };
        (s.tried[good], s.tried[bad]) = (true, true);
        (s.levels[good], s.levels[bad]) = (Some(0), Some(1));
        s
    }

    /// Two measured builds next in order (builds tried but unplaced aside) whose levels differ.
    fn differing(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let measured: Vec<usize> = (self.good..=self.bad)
            .filter(|&i| self.levels[i].is_some())
            .collect();
        let pairs: Vec<(usize, usize)> = measured
            .windows(2)
            .map(|w| (w[0], w[1]))
            .filter(|&(a, b)| self.levels[a] != self.levels[b])
            .collect();
        pairs.into_iter()
    }

    /// The next build to try: in the first range whose bounds differ and that has an untried
    /// build, the one nearest its middle (the lower of two as near); `None` when there is none.
    pub(crate) fn next(&self) -> Option<Probe> {
        self.differing().find_map(|(lo, hi)| {
            let mid = (lo + hi) as f64 / 2.0;
            (lo + 1..hi)
                .filter(|&i| !self.tried[i])
                .min_by(|&a, &b| {
                    let (da, db) = ((a as f64 - mid).abs(), (b as f64 - mid).abs());
                    da.total_cmp(&db).then(a.cmp(&b))
                })
                .map(|build| Probe { build, lo, hi })
        })
    }

    /// Record what build `i` was found to be.
    pub(crate) fn record(&mut self, i: usize, outcome: Outcome) {
        self.tried[i] = true;
        self.levels[i] = match outcome {
            Outcome::Same(j) => self.levels[j],
            Outcome::New => {
                self.next_level += 1;
                Some(self.next_level - 1)
            }
            Outcome::Unplaced => None,
        };
    }

    /// Whether build `i` counts as the good end, the bad end, or neither (`None`: unplaced).
    pub(crate) fn level_of(&self, i: usize) -> Option<usize> {
        self.levels[i]
    }

    /// Every step found once [`Search::next`] is `None`, in order.
    pub(crate) fn found(&self) -> Vec<Finding<usize>> {
        self.differing()
            .map(|(good, bad)| Finding {
                last_good: good,
                first_bad: bad,
                between: (good + 1..bad).collect(),
            })
            .collect()
    }
}

/// Run a search to its end with `outcome` placing each build it tries (given the probe), in
/// the order tried.
#[cfg(test)]
pub(crate) fn run(
    mut s: Search,
    mut outcome: impl FnMut(Probe) -> Outcome,
) -> (Search, Vec<usize>) {
    let mut tried = Vec::new();
    while let Some(p) = s.next() {
        s.record(p.build, outcome(p));
        tried.push(p.build);
    }
    (s, tried)
}

#[cfg(test)]
mod unit {
    use super::*;

    /// Builds whose figures are `fig` (`None`: it cannot be measured), each tried one placed by
    /// whether its figure is one of its bounds'.
    fn by_figure(fig: &[Option<u32>]) -> impl Fn(Probe) -> Outcome + '_ {
        move |p| match fig[p.build] {
            None => Outcome::Unplaced,
            x if x == fig[p.lo] => Outcome::Same(p.lo),
            x if x == fig[p.hi] => Outcome::Same(p.hi),
            Some(_) => Outcome::New,
        }
    }

    /// `n` builds: 0 before `k`, 1 from it on; those in `skip` cannot be measured.
    fn step_at(n: usize, k: usize, skip: &[usize]) -> Vec<Option<u32>> {
        (0..n)
            .map(|i| (!skip.contains(&i)).then_some(u32::from(i >= k)))
            .collect()
    }

    /// The first bad build found, `bad`, right after the last good one.
    fn exact(good: usize, bad: usize) -> Finding<usize> {
        Finding {
            last_good: good,
            first_bad: bad,
            between: Vec::new(),
        }
    }

    /// The first bad build found to be one of `good + 1 ..= bad`.
    fn range(good: usize, bad: usize) -> Finding<usize> {
        Finding {
            last_good: good,
            first_bad: bad,
            between: (good + 1..bad).collect(),
        }
    }

    fn search(fig: &[Option<u32>]) -> (Vec<Finding<usize>>, Vec<usize>) {
        let (s, tried) = run(Search::new(fig.len(), 0, fig.len() - 1), by_figure(fig));
        (s.found(), tried)
    }

    #[test]
    fn seven_builds_take_at_most_three_tries_for_any_first_bad_build() {
        for k in 1..7 {
            let (found, tried) = search(&step_at(7, k, &[]));
            assert_eq!(found, [exact(k - 1, k)], "k={k}");
            assert!(tried.len() <= 3, "k={k}: tried {tried:?}");
        }
    }

    #[test]
    fn a_skipped_build_is_stepped_around_or_bounds_the_answer() {
        // The middle build (3) does not boot; the first bad is 5: found exactly around it.
        let (found, tried) = search(&step_at(7, 5, &[3]));
        assert_eq!(found, [exact(4, 5)], "{tried:?}");
        assert_eq!(tried[0], 3, "the middle is tried first");
        // The first bad is 4, next to the skipped 3: it could be either, and the search says so.
        let (found, _) = search(&step_at(7, 4, &[3]));
        assert_eq!(found, [range(2, 4)]);
        // The first bad is 3 itself: it could be 3 or 4, and the search says so.
        let (found, _) = search(&step_at(7, 3, &[3]));
        assert_eq!(found, [range(2, 4)]);
        // Every build between the ends skipped: the answer is the whole range.
        let (found, tried) = search(&step_at(4, 2, &[1, 2]));
        assert_eq!((found, tried.len()), (vec![range(0, 3)], 2));
    }

    #[test]
    fn an_undecided_build_is_a_range_not_a_guess() {
        let undecided = |p: Probe| match p.build {
            3 => Outcome::Unplaced,
            i if i > 3 => Outcome::Same(p.hi),
            _ => Outcome::Same(p.lo),
        };
        let (s, _) = run(Search::new(7, 0, 6), undecided);
        assert_eq!(s.found(), [range(2, 4)]);
    }

    #[test]
    fn the_ends_next_to_each_other_need_no_step() {
        let s = Search::new(2, 0, 1);
        assert_eq!(s.next(), None);
        assert_eq!(s.found(), [exact(0, 1)]);
    }

    #[test]
    fn a_figure_that_moves_twice_gives_a_finding_per_step() {
        // 0, 0, 0, 1, 1, 1, 2: the middle build counts as neither end and splits the search.
        let fig = [0, 0, 0, 1, 1, 1, 2].map(Some);
        let (found, tried) = search(&fig);
        assert_eq!(found, [exact(2, 3), exact(5, 6)], "{tried:?}");
        assert_eq!(tried, [3, 1, 2, 4, 5]);
        // A step past the bad end's figure and back: two findings too.
        let (found, _) = search(&[0, 0, 5, 5, 1].map(Some));
        assert_eq!(found, [exact(1, 2), exact(3, 4)]);
        // Three levels with a skipped build at the second step: an exact step and a range.
        let fig = [Some(0), Some(1), None, Some(2), Some(2)];
        let (found, _) = search(&fig);
        assert_eq!(found, [exact(0, 1), range(1, 3)]);
    }

    #[test]
    fn steps_that_cancel_between_builds_of_one_level_are_not_seen() {
        // 1 then back to 0 before the middle build, which counts as the good end.
        let (found, tried) = search(&[0, 1, 0, 0, 2].map(Some));
        assert_eq!(found, [exact(3, 4)]);
        assert_eq!(tried, [2, 3]);
    }
}
