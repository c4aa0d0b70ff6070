//! What one operation adds to an exact count, from windows of different sizes: the
//! least-squares slope of a window's count on its operations. Every cost a window pays once
//! (its marks, the call into the loop and back, the counter reads around it, a cache state
//! settling at its start) is the line's intercept and cancels, as nanoBench cancels its
//! harness by running the code at N and 2N copies. The sums are kept in integers and the
//! slope is one division, so an exact count's slope is a whole number exactly wherever the
//! code's cost per operation is one (a pooled total over operations is not: 305 instructions
//! a call plus 40 a window read 305.0002 over 262,144 calls).

/// The least-squares line of windows' counts on their sizes, as integer sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Fit {
    /// Windows, and the sums of their sizes and counts.
    k: i128,
    sum_n: i128,
    sum_c: i128,
    /// `k Σn² - (Σn)²` and `k Σnc - Σn Σc`: the slope is their ratio.
    sxx: i128,
    sxy: i128,
}

impl Fit {
    /// The line through `windows` (operations, count), or `None` when they have fewer than
    /// two sizes (no slope: every window's fixed cost is then in its count) or their sums
    /// would not fit in integers (a window of more than about 10^15 operations or counts).
    pub(crate) fn of(windows: impl IntoIterator<Item = (u64, u64)>) -> Option<Fit> {
        let (mut k, mut sn, mut sc, mut snn, mut snc) = (0i128, 0i128, 0i128, 0i128, 0i128);
        for (n, c) in windows {
            let (n, c) = (i128::from(n), i128::from(c));
            k += 1;
            sn = sn.checked_add(n)?;
            sc = sc.checked_add(c)?;
            snn = snn.checked_add(n.checked_mul(n)?)?;
            snc = snc.checked_add(n.checked_mul(c)?)?;
        }
        let sxx = k.checked_mul(snn)?.checked_sub(sn.checked_mul(sn)?)?;
        let sxy = k.checked_mul(snc)?.checked_sub(sn.checked_mul(sc)?)?;
        let fit = Fit {
            k,
            sum_n: sn,
            sum_c: sc,
            sxx,
            sxy,
        };
        // The intercept and the per-window values multiply these once more.
        (sxx > 0
            && fit.fixed_num().is_some()
            && k.checked_mul(sxx)?.checked_mul(sc.max(sn)).is_some())
        .then_some(fit)
    }

    /// The count one operation adds.
    pub(crate) fn slope(&self) -> f64 {
        ratio(self.sxy, self.sxx)
    }

    /// The intercept times `k·sxx`: `Σc·sxx - sxy·Σn`.
    fn fixed_num(&self) -> Option<i128> {
        let a = self.sum_c.checked_mul(self.sxx)?;
        a.checked_sub(self.sxy.checked_mul(self.sum_n)?)
    }

    /// The count a window pays once, whatever its size (the line's intercept).
    #[cfg(test)]
    pub(crate) fn fixed(&self) -> f64 {
        let num = self.fixed_num().expect("checked when fitted");
        ratio(num, self.k * self.sxx)
    }

    /// A window's count per operation with the fixed part taken out: the slope itself for a
    /// window on the line. Over all the windows fitted, these pool (their total over their
    /// operations) to the slope exactly.
    pub(crate) fn per_op(&self, ops: u64, count: u64) -> Option<f64> {
        let (n, c) = (i128::from(ops), i128::from(count));
        // (c - fixed) / n, over the common denominator k·sxx.
        let num = (c.checked_mul(self.k)?.checked_mul(self.sxx)?).checked_sub(self.fixed_num()?)?;
        let den = n.checked_mul(self.k)?.checked_mul(self.sxx)?;
        (den > 0).then(|| ratio(num, den))
    }
}

/// What one operation adds to a count over `windows` (operations, count): the slope when they
/// have two sizes or more, else their total over their operations (a window's fixed cost then
/// spread over its operations); `None` without operations.
pub(crate) fn per_op(windows: &[(u64, u64)]) -> Option<f64> {
    if let Some(f) = Fit::of(windows.iter().copied()) {
        return Some(f.slope());
    }
    let ops: u64 = windows.iter().map(|w| w.0).sum();
    let count: u64 = windows.iter().map(|w| w.1).sum();
    (ops > 0).then(|| count as f64 / ops as f64)
}

/// The least count of each size among `windows` (operations, count), by size: the windows an
/// exact count's line is drawn through. What else runs in a window (a tick's retried clock
/// read, a page's fault, the kernel's deferred work) only adds to its count, so the least of a
/// size's windows is the operations' own, and one window disturbed among its size's twins
/// moves nothing.
#[cfg(test)]
pub(crate) fn least_by_size(windows: impl IntoIterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let mut least: Vec<(u64, u64)> = Vec::new();
    for (n, c) in windows {
        match least.iter_mut().find(|w| w.0 == n) {
            Some(w) => w.1 = w.1.min(c),
            None => least.push((n, c)),
        }
    }
    least
}

/// The most windows [`on_the_line`] searches the lines of (the search is cubic in them; a run
/// has a few dozen).
pub(crate) const LINE_WINDOWS: usize = 64;

/// The windows an exact count's line is drawn through: of the lines through two windows of
/// different sizes that no window lies below (what else runs in a window only adds to it:
/// a tick's retried clock read adds 12 instructions to a getpid at audit=1), the one most
/// windows lie on exactly. A size whose every window was lengthened then moves nothing while
/// the windows of two other sizes agree (the least of each size's would: both of a run's
/// 40,000-call windows lengthened put a fresh clone's getpid at 1566.0002 for 1566). Of the
/// lines holding three windows or more, one whose slope is whole comes first: an operation
/// runs whole instructions, and a retry lengthening both windows of one size alike lines them
/// up with the clean twins of another, four windows on a line 12 instructions over 40,000
/// calls off the whole one through the three clean (a fresh clone's getpid at 1566.0003).
/// With a single size, no line holding three windows or more, or more than [`LINE_WINDOWS`]
/// windows, the least of each size.
pub(crate) fn on_the_line(windows: impl IntoIterator<Item = (u64, u64)>) -> Vec<(u64, u64)> {
    let w: Vec<(u64, u64)> = windows.into_iter().collect();
    on_the_line_at(&w).into_iter().map(|i| w[i]).collect()
}

/// Which of `w` [`on_the_line`] draws the line through, by index, in their order (of each
/// size's least windows, the first).
pub(crate) fn on_the_line_at(w: &[(u64, u64)]) -> Vec<usize> {
    let least = || -> Vec<usize> {
        let mut at: Vec<usize> = Vec::new();
        for (i, x) in w.iter().enumerate() {
            match at.iter_mut().find(|j| w[**j].0 == x.0) {
                Some(j) if x.1 < w[*j].1 => *j = i,
                Some(_) => {}
                None => at.push(i),
            }
        }
        at.sort_unstable();
        at
    };
    match best_line(w) {
        Some(((_, n), a, b)) if n >= 3 => {
            (0..w.len()).filter(|&i| on(a, b, w[i]).is_eq()).collect()
        }
        _ => least(),
    }
}

/// Whether an exact count's windows `w` confirm their own line: three windows or more lie on
/// one line with a whole slope that no window lies below ([`on_the_line`]'s first choice). A
/// run whose windows do not (a tick lengthened every window of all sizes but one, and
/// the least of each size made the line) has a slope nothing confirms.
pub(crate) fn held(w: &[(u64, u64)]) -> bool {
    best_line(w).is_some_and(|((whole, _), ..)| whole)
}

/// The sign of `x`'s count against the line through `a` and `b` (with `b.0 > a.0`): `Less`
/// below it, `Equal` on it.
fn on(a: (u64, u64), b: (u64, u64), x: (u64, u64)) -> std::cmp::Ordering {
    // The sign of (x.c - a.c)(b.n - a.n) - (b.c - a.c)(x.n - a.n).
    let (an, ac) = (i128::from(a.0), i128::from(a.1));
    let lhs = (i128::from(x.1) - ac) * (i128::from(b.0) - an);
    let rhs = (i128::from(b.1) - ac) * (i128::from(x.0) - an);
    lhs.cmp(&rhs)
}

/// A line through two of `w` of different sizes: whether it holds three windows or more with
/// a whole slope, how many it holds, and the two it is drawn through.
type Line = ((bool, usize), (u64, u64), (u64, u64));

/// Of the lines through two of `w` that no window lies below, the best ([`on_the_line`]);
/// `None` past [`LINE_WINDOWS`] windows or without two sizes.
fn best_line(w: &[(u64, u64)]) -> Option<Line> {
    if w.len() > LINE_WINDOWS {
        return None;
    }
    let mut best: Option<Line> = None;
    for &a in w {
        for &b in w.iter().filter(|b| b.0 > a.0) {
            if w.iter().any(|&x| on(a, b, x).is_lt()) {
                continue;
            }
            let n = w.iter().filter(|&&x| on(a, b, x).is_eq()).count();
            let rise = i128::from(b.1) - i128::from(a.1);
            let whole = n >= 3 && rise % i128::from(b.0 - a.0) == 0;
            if best.is_none_or(|(m, ..)| (whole, n) > m) {
                best = Some(((whole, n), a, b));
            }
        }
    }
    best
}

/// `num / den` in floating point, exact when the quotient is whole (the integer part is
/// divided apart from the remainder, so a large numerator loses nothing to rounding).
pub(crate) fn ratio(num: i128, den: i128) -> f64 {
    let (q, r) = (num / den, num % den);
    q as f64 + r as f64 / den as f64
}

/// A count whose cost per operation depends on the window's size: the slope between the
/// smaller sizes against the slope between the larger ones (a cache still filling when a
/// window ends, a cost paid once every few thousand operations), beyond what the windows of
/// one size differ among themselves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Bend {
    /// The slope between the two smallest sizes, and between the two largest.
    pub small: f64,
    pub large: f64,
    /// The sizes of the windows: smallest and largest.
    pub sizes: (u64, u64),
}

/// Whether `windows` (operations, count) bend: with three sizes or more, the slopes between
/// the two smallest and the two largest sizes (of each size's mean count) differ by more than
/// 1% of the larger and `floor` per operation, and by more than twice what the windows of a
/// size differ among themselves would explain. `None` when they do not, or cannot tell.
pub(crate) fn bend(windows: &[(u64, u64)], floor: f64) -> Option<Bend> {
    let mut sizes: Vec<u64> = windows.iter().map(|w| w.0).collect();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.len() < 3 {
        return None;
    }
    let of = |n: u64| -> (f64, f64) {
        let c: Vec<f64> = (windows.iter())
            .filter(|w| w.0 == n)
            .map(|w| w.1 as f64)
            .collect();
        let lo = c.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = c.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (c.iter().sum::<f64>() / c.len() as f64, hi - lo)
    };
    let scatter = sizes.iter().map(|&n| of(n).1).fold(0.0, f64::max);
    let slope = |a: u64, b: u64| (of(b).0 - of(a).0) / (b - a) as f64;
    let s = sizes.len();
    let (small, large) = (slope(sizes[0], sizes[1]), slope(sizes[s - 2], sizes[s - 1]));
    let gap = (sizes[1] - sizes[0]).min(sizes[s - 1] - sizes[s - 2]) as f64;
    let d = (large - small).abs();
    let bent = d > 0.01 * small.abs().max(large.abs()) && d > floor && d * gap > 2.0 * scatter;
    bent.then_some(Bend {
        small,
        large,
        sizes: (sizes[0], sizes[s - 1]),
    })
}

/// Whether the windows of every run (each run's (operations, count)) bend alike: two runs or
/// more, each bent ([`bend`]) the same way, and the runs' bends (the large slope less the
/// small) all further from zero than they are spread: so a count that varies from call to
/// call at random (a cache model's misses under the kernel's randomised stack offset) is not
/// taken for one whose cost grows or shrinks with the window. The runs' median slopes.
pub(crate) fn bends(runs: &[Vec<(u64, u64)>], floor: f64) -> Option<Bend> {
    let each: Vec<Bend> = runs.iter().map(|w| bend(w, floor)).collect::<Option<_>>()?;
    if each.len() < 2 {
        return None;
    }
    let d: Vec<f64> = each.iter().map(|b| b.large - b.small).collect();
    let (lo, hi) = d
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
    let apart = (lo > 0.0 || hi < 0.0) && lo.abs().min(hi.abs()) > hi - lo;
    let median = |f: fn(&Bend) -> f64| super::median(&each.iter().map(f).collect::<Vec<_>>());
    apart.then(|| Bend {
        small: median(|b| b.small),
        large: median(|b| b.large),
        sizes: each[0].sizes,
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_fixed_cost_cancels_and_the_slope_is_whole() {
        // 305 a call and 40 a window, at 1, 2 and 4 times 1,024 calls.
        let w: Vec<(u64, u64)> = [1024u64, 2048, 4096, 1024, 2048, 4096]
            .iter()
            .map(|&n| (n, 305 * n + 40))
            .collect();
        let f = Fit::of(w.iter().copied()).unwrap();
        assert_eq!(f.slope(), 305.0);
        assert_eq!(f.fixed(), 40.0);
        for &(n, c) in &w {
            assert_eq!(f.per_op(n, c), Some(305.0));
        }
        // Pooled, the fixed cost is spread over the calls and the figure is not whole.
        let pooled =
            w.iter().map(|w| w.1).sum::<u64>() as f64 / w.iter().map(|w| w.0).sum::<u64>() as f64;
        assert!(pooled > 305.01 && pooled < 305.02, "{pooled}");
        assert_eq!(bend(&w, 0.005), None);
    }

    #[test]
    fn a_large_count_keeps_its_whole_slope() {
        // Counts beyond 2^53 in their sums: the integer part is divided exactly.
        let w = [(1u64 << 20, 2534u64 << 20), (2 << 20, 2534 * (2 << 20) + 7)];
        let f = Fit::of(w).unwrap();
        assert_eq!(f.slope(), 2534.0 + 7.0 / (1u64 << 20) as f64);
        let w = [
            (1u64 << 30, (1u64 << 30) * 1_000_003),
            (3 << 30, (3 << 30) * 1_000_003),
        ];
        assert_eq!(Fit::of(w).unwrap().slope(), 1_000_003.0);
    }

    #[test]
    fn one_size_has_no_slope() {
        assert_eq!(Fit::of([(100, 3000), (100, 3001)]), None);
        assert_eq!(Fit::of([]), None);
        assert_eq!(
            Fit::of([(u64::MAX, u64::MAX), (1, 1)]),
            None,
            "too large to sum"
        );
        // A figure is still had, with the windows' fixed cost in it.
        assert_eq!(per_op(&[(100, 3000), (100, 3001)]), Some(30.005));
        assert_eq!(per_op(&[(100, 3000), (200, 6000)]), Some(30.0));
        assert_eq!(per_op(&[]), None);
    }

    #[test]
    fn the_slope_is_least_squares() {
        // Against scipy.stats.linregress([1,2,4,1,2,4], [10,21,39,12,20,41]): slope
        // 9.678571428571427, intercept 1.25.
        let w = [(1, 10), (2, 21), (4, 39), (1, 12), (2, 20), (4, 41)];
        let f = Fit::of(w).unwrap();
        assert!((f.slope() - 9.678_571_428_571_427).abs() < 1e-12);
        assert!((f.fixed() - 1.25).abs() < 1e-12);
        // The windows' per-op values pool to the slope.
        let total: f64 = w
            .iter()
            .map(|&(n, c)| f.per_op(n, c).unwrap() * n as f64)
            .sum();
        assert!((total / 14.0 - f.slope()).abs() < 1e-12);
    }

    #[test]
    fn a_disturbed_window_is_outweighed_by_its_twin() {
        // 299 a call and 40 a window; once, 450 instructions of other work in a 256-call window.
        let w = [
            (256, 299 * 256 + 40 + 450),
            (512, 299 * 512 + 40),
            (1024, 299 * 1024 + 40),
        ];
        let all = Fit::of(w).unwrap().slope();
        assert!(
            all < 298.6,
            "one disturbed window of three moves the line: {all}"
        );
        let twins = [
            w[0],
            w[1],
            w[2],
            (256, 299 * 256 + 40),
            (512, 299 * 512 + 52),
            w[2],
        ];
        assert_eq!(least_by_size(twins), [(256, 299 * 256 + 40), w[1], w[2]]);
        assert_eq!(Fit::of(least_by_size(twins)).unwrap().slope(), 299.0);
    }

    /// A fresh clone's failure: both of a run's windows of one size lengthened by a tick's
    /// retried clock read (12 instructions each), the least of each size off the line.
    #[test]
    fn a_size_whose_every_window_was_lengthened_moves_nothing() {
        let w: Vec<(u64, u64)> = [20_000u64, 40_000, 80_000, 20_000, 40_000, 80_000]
            .iter()
            .map(|&n| (n, 1566 * n + u64::from(n == 80_000) * 12))
            .collect();
        let least = Fit::of(least_by_size(w.iter().copied())).unwrap().slope();
        assert!(least != 1566.0, "{least}");
        let line = on_the_line(w.iter().copied());
        assert_eq!(line.len(), 4, "{line:?}");
        assert_eq!(Fit::of(line).unwrap().slope(), 1566.0);
        // A retry in a window of each of two sizes: the clean ones still make the line.
        let mut two = w.clone();
        two[3].1 += 12;
        two[5].1 -= 12;
        assert_eq!(Fit::of(on_the_line(two)).unwrap().slope(), 1566.0);
        // A fresh clone's next failure: a retry in one window of 20,000 calls and in both of
        // 80,000, which line up with the two clean windows of 40,000 (four windows on a slope
        // of 1566.0003) against the three clean ones: the whole slope is the line.
        let mut aligned = w.clone();
        aligned[0].1 += 12;
        let four = [aligned[1], aligned[2], aligned[4], aligned[5]];
        assert!(Fit::of(four).unwrap().slope() > 1566.0);
        let line = on_the_line(aligned.iter().copied());
        assert_eq!(line, [aligned[1], aligned[3], aligned[4]], "{line:?}");
        assert_eq!(Fit::of(line).unwrap().slope(), 1566.0);
        // Counts that really vary by a fraction an operation keep the line most windows lie on.
        let half = [(2, 3), (4, 6), (8, 12), (2, 4), (4, 7), (8, 13)];
        let line = on_the_line(half);
        assert_eq!(line, [(2, 3), (4, 6), (8, 12)], "{line:?}");
        // A window below every line (counts that really vary): the least of each size.
        let noisy = [(1, 10), (2, 19), (4, 41), (1, 11), (2, 20), (4, 40)];
        assert_eq!(on_the_line(noisy), least_by_size(noisy));
    }

    /// A loaded host's uprobe run (1,380 kernel instructions a hit): a tick costs the task
    /// 639 to 673 instructions of its own on its return, so five of its six windows were
    /// lengthened by different amounts and only one window (of 64 hits) is clean. The least
    /// of each size made a line of 1,386.40 a hit; no three windows confirm any line.
    #[test]
    fn a_line_no_three_windows_confirm_is_not_held() {
        let at = |n: u64, extra: u64| (n, 5_000 + 1380 * n + extra);
        let ticked = [
            at(64, 673),
            at(128, 673),
            at(256, 1274),
            at(64, 0),
            at(128, 639),
            at(256, 1310),
        ];
        let slope = Fit::of(on_the_line(ticked)).unwrap().slope();
        assert!((slope - 1380.0).abs() > 1.0, "{slope}");
        assert!(!held(&ticked));
        // The same run untouched, or with one size's windows both lengthened alike: held.
        let clean = [64, 128, 256, 64, 128, 256].map(|n| at(n, 0));
        assert!(held(&clean));
        let one_size = [
            at(64, 0),
            at(128, 0),
            at(256, 12),
            at(64, 0),
            at(128, 0),
            at(256, 12),
        ];
        assert!(held(&one_size));
        assert_eq!(Fit::of(on_the_line(one_size)).unwrap().slope(), 1380.0);
        // Counts that vary by nature (two producers contending) hold no whole line either.
        assert!(!held(&[
            (1, 10),
            (2, 19),
            (4, 41),
            (1, 11),
            (2, 20),
            (4, 40)
        ]));
    }

    #[test]
    fn a_cache_still_filling_bends_the_line() {
        // 4 misses a call once warm, but the first 3,000 calls of a window miss 2 more each:
        // windows of 1,024 and 2,048 calls are still filling, 4,096 is past it.
        let misses = |n: u64| 4 * n + 2 * n.min(3000);
        let w: Vec<(u64, u64)> = [1024u64, 2048, 4096]
            .iter()
            .map(|&n| (n, misses(n)))
            .collect();
        let b = bend(&w, 0.005).expect("bent");
        assert_eq!((b.small, b.sizes), (6.0, (1024, 4096)));
        assert!(b.large < 5.0, "{b:?}");
        // The same line with scatter between repeated windows as large as the bend: not told.
        let noisy = [
            (10, 100),
            (10, 140),
            (20, 200),
            (20, 240),
            (40, 380),
            (40, 420),
        ];
        assert_eq!(bend(&noisy, 0.005), None);
        // Two sizes cannot show a bend.
        assert_eq!(bend(&w[..2], 0.005), None);
        // Every run bends alike: flagged; one run alone, or runs bent at random, are not.
        let runs = vec![w.clone(), w.clone(), w.clone()];
        assert_eq!(bends(&runs, 0.005).map(|b| b.small), Some(6.0));
        assert_eq!(bends(&runs[..1], 0.005), None);
        let up = vec![(256, 2928), (512, 5459), (1024, 11475)];
        let down = vec![(256, 1190), (512, 2129), (1024, 3906)];
        assert!(bend(&up, 0.005).is_some() && bend(&down, 0.005).is_some());
        assert_eq!(bends(&[up, down.clone()], 0.005), None, "opposite ways");
        let less = vec![(256, 1190), (512, 2300), (1024, 4300)];
        assert_eq!(
            bends(&[down, less], 0.005),
            None,
            "spread wider than the bends"
        );
    }
}
