//! What `git bisect run` found, read from its words: git searched the commits (`syscost bisect
//! git` only measured each step), so its answer is the bisection's finding.

use super::decide::Class;
use super::{Arm, Bisection, Finding, Found, Step};
use std::path::Path;

/// A commit's name in the bisection: the build of the step that tried it, else its hash's
/// first 12 digits.
fn named(hash: &str, steps: &[Step]) -> String {
    let tried = steps.iter().find(|s| hash.starts_with(&s.build));
    tried.map_or_else(
        || hash[..hash.len().min(12)].to_string(),
        |s| s.build.clone(),
    )
}

impl Bisection {
    /// The bisection `git bisect run` made, from a step's result (`self`) and every step: its
    /// builds are the commits of `order` (`git rev-list --reverse GOOD..BAD`), each named as
    /// the step that tried it, between "good" and "bad" (`image` the candidates' kernel), its
    /// steps placed on them, and git's answer (`said`) its finding.
    pub(crate) fn of_git(
        mut self,
        steps: Vec<Step>,
        order: &str,
        image: &Path,
        said: &str,
    ) -> Self {
        let mut builds = vec![Arm {
            name: "good".into(),
            ..self.builds[0].clone()
        }];
        builds.extend(order.lines().map(|hash| Arm {
            name: named(hash, &steps),
            kernel: image.to_path_buf(),
            ..self.builds[1].clone()
        }));
        if let [_, .., last] = &mut builds[..] {
            last.name = "bad".into();
        }
        let index = |name: &str| builds.iter().position(|a| a.name == name).unwrap_or(0);
        self.steps = (steps.into_iter())
            .map(|s| Step {
                index: index(&s.build),
                ..s
            })
            .collect();
        self.steps.sort_by_key(|s| s.number);
        self.found = Found::of_git(said, &self.steps);
        if let Found::Step(f) = &self.found
            && !f.exact()
        {
            let last = said.lines().rev().find(|l| !l.trim().is_empty());
            (self.warnings).push(format!("git bisect run: {}", last.unwrap_or("").trim()));
        }
        (self.good, self.bad, self.builds) = (0, builds.len() - 1, builds);
        self.shape = None;
        self
    }
}

impl Found {
    /// What `git bisect run` said it found (its output, `said`): the first bad commit, named
    /// as the step that tried it, or the commits it could be when skipped ones are left.
    pub(crate) fn of_git(said: &str, steps: &[Step]) -> Found {
        let short = |hash: &str| named(hash, steps);
        let first = said
            .lines()
            .find_map(|l| l.split_once(" is the first bad commit").map(|x| x.0.trim()));
        let last_good = steps
            .iter()
            .filter(|s| s.decision.class == Class::Good)
            .max_by_key(|s| s.index)
            .map_or("good".into(), |s| s.build.clone());
        match first {
            Some(hash) => Found::Step(Finding {
                last_good,
                first_bad: short(hash),
                between: Vec::new(),
            }),
            None => Found::Step(Finding {
                last_good,
                first_bad: "bad".into(),
                between: said
                    .lines()
                    .filter(|l| l.len() >= 40 && l.chars().take(40).all(|c| c.is_ascii_hexdigit()))
                    .map(|l| short(&l[..40]))
                    .collect(),
            }),
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::experiments::bisect::decide::Decision;

    fn step(build: &str, index: usize, class: Class) -> Step {
        Step {
            number: index,
            build: build.into(),
            index,
            boots: 1,
            values: vec![1.0],
            rounds: 0,
            decision: Decision {
                class,
                position: None,
                p: None,
                bar: 0.0,
            },
            same_as: None,
        }
    }

    #[test]
    fn git_s_answer_is_read_as_the_steps_name_it() {
        let steps = [
            step("22b265c", 3, Class::Good),
            step("7339b75", 4, Class::Bad),
        ];
        let said = "running ...\n7339b75a35905c0c2e1c7e5f0a5e0e2a1b2c3d4e is the first bad commit\n\
                    commit 7339b75a35905c0c2e1c7e5f0a5e0e2a1b2c3d4e\n";
        match Found::of_git(said, &steps) {
            Found::Step(f) if f.exact() => assert_eq!(
                (f.last_good.as_str(), f.first_bad.as_str()),
                ("22b265c", "7339b75")
            ),
            f => panic!("{f:?}"),
        }
        // git's words when skipped commits are left next to the answer.
        let said = "There are only 'skip'ped commits left to test.\nThe first bad commit could be \
                    any of:\n22b265c0c2e1c7e5f0a5e0e2a1b2c3d4e5f6a7b8\n\
                    7339b75a35905c0c2e1c7e5f0a5e0e2a1b2c3d4e\nWe cannot bisect more!\n";
        match Found::of_git(said, &steps) {
            Found::Step(f) => assert_eq!(f.between, ["22b265c", "7339b75"]),
            f => panic!("{f:?}"),
        }
    }
}
