//! The search over builds in order, as `git bisect` searches commits: the last build known
//! good and the first known bad close in on each other; the next build tried is the untried
//! one nearest the middle between them, so a build that is skipped (it does not build or boot)
//! or undecided is stepped around, and when only such builds are left between the two, the
//! answer is the range they hold.

use super::decide::Class;

/// Where a search stands: the builds' classes so far (the ends included) and the two bounds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Search {
    pub classes: Vec<Option<Class>>,
    /// The last build known good, and the first known bad after it.
    pub good: usize,
    pub bad: usize,
}

/// What a finished search found.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Found {
    /// Next to each other: `bad` is the first bad build.
    Exact { good: usize, bad: usize },
    /// The first bad build is one of `good + 1 ..= bad`: the builds between were skipped or
    /// undecided.
    Range { good: usize, bad: usize },
}

impl Search {
    /// A search of `n` builds between a good end and a bad end (indices, `good < bad`).
    pub(crate) fn new(n: usize, good: usize, bad: usize) -> Search {
        let mut classes = vec![None; n];
        classes[good] = Some(Class::Good);
        classes[bad] = Some(Class::Bad);
        Search { classes, good, bad }
    }

    /// The next build to try: the untried one nearest the middle of the bounds (the lower of
    /// two as near), `None` when every build between them is tried.
    pub(crate) fn next(&self) -> Option<usize> {
        let mid = (self.good + self.bad) as f64 / 2.0;
        (self.good + 1..self.bad)
            .filter(|&i| self.classes[i].is_none())
            .min_by(|&a, &b| {
                let (da, db) = ((a as f64 - mid).abs(), (b as f64 - mid).abs());
                da.total_cmp(&db).then(a.cmp(&b))
            })
    }

    /// Record build `i`'s class, moving a bound when it is good or bad.
    pub(crate) fn record(&mut self, i: usize, class: Class) {
        match class {
            Class::Good if i > self.good && i < self.bad => self.good = i,
            Class::Bad if i > self.good && i < self.bad => self.bad = i,
            _ => {}
        }
        self.classes[i] = Some(class);
    }

    /// What the search found once [`Search::next`] is `None`.
    pub(crate) fn found(&self) -> Found {
        if self.bad == self.good + 1 {
            Found::Exact {
                good: self.good,
                bad: self.bad,
            }
        } else {
            Found::Range {
                good: self.good,
                bad: self.bad,
            }
        }
    }
}

/// Run a search to its end with `classify` deciding each build it tries, in the order tried.
#[cfg(test)]
pub(crate) fn run(mut s: Search, mut classify: impl FnMut(usize) -> Class) -> (Search, Vec<usize>) {
    let mut tried = Vec::new();
    while let Some(i) = s.next() {
        s.record(i, classify(i));
        tried.push(i);
    }
    (s, tried)
}

#[cfg(test)]
mod unit {
    use super::*;

    /// Builds from `k` on are bad; those in `skip` cannot be measured.
    fn step_at(k: usize, skip: &[usize]) -> impl Fn(usize) -> Class + '_ {
        move |i| match i {
            i if skip.contains(&i) => Class::Skipped("does not boot".into()),
            i if i >= k => Class::Bad,
            _ => Class::Good,
        }
    }

    #[test]
    fn seven_builds_take_at_most_three_tries_for_any_first_bad_build() {
        for k in 1..7 {
            let (s, tried) = run(Search::new(7, 0, 6), step_at(k, &[]));
            assert_eq!(
                s.found(),
                Found::Exact {
                    good: k - 1,
                    bad: k
                },
                "k={k}"
            );
            assert!(tried.len() <= 3, "k={k}: tried {tried:?}");
        }
    }

    #[test]
    fn a_skipped_build_is_stepped_around_or_bounds_the_answer() {
        // The middle build (3) does not boot; the first bad is 5: found exactly around it.
        let (s, tried) = run(Search::new(7, 0, 6), step_at(5, &[3]));
        assert_eq!(s.found(), Found::Exact { good: 4, bad: 5 }, "{tried:?}");
        assert_eq!(tried[0], 3, "the middle is tried first");
        // The first bad is 4, next to the skipped 3: it could be either, and the search says so.
        let (s, _) = run(Search::new(7, 0, 6), step_at(4, &[3]));
        assert_eq!(s.found(), Found::Range { good: 2, bad: 4 });
        // The first bad is 3 itself: it could be 3 or 4, and the search says so.
        let (s, _) = run(Search::new(7, 0, 6), step_at(3, &[3]));
        assert_eq!(s.found(), Found::Range { good: 2, bad: 4 });
        // Every build between the ends skipped: the answer is the whole range.
        let (s, tried) = run(Search::new(4, 0, 3), step_at(2, &[1, 2]));
        assert_eq!(
            (s.found(), tried.len()),
            (Found::Range { good: 0, bad: 3 }, 2)
        );
    }

    #[test]
    fn an_undecided_build_is_a_range_not_a_guess() {
        let classify = |i: usize| match i {
            3 => Class::Undecided,
            i if i > 3 => Class::Bad,
            _ => Class::Good,
        };
        let (s, _) = run(Search::new(7, 0, 6), classify);
        assert_eq!(s.found(), Found::Range { good: 2, bad: 4 });
    }

    #[test]
    fn the_ends_next_to_each_other_need_no_step() {
        let s = Search::new(2, 0, 1);
        assert_eq!(s.next(), None);
        assert_eq!(s.found(), Found::Exact { good: 0, bad: 1 });
    }
}
