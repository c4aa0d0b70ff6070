//! An investigation's kernels: each arm's Debian image found (the newest of its series) or
//! syscost's own build of it made or found in the store, or what to do to get it.

use super::*;

impl Investigation {
    /// Its paper, checked.
    pub(crate) fn paper(&self) -> Result<Paper, String> {
        Paper::parse(self.tables)
    }

    /// The L1d of its cache model, as the placement tables count sets.
    pub(crate) fn l1d(&self) -> Result<crate::layout::Geometry, String> {
        let g = self.cache_model()?.l1d;
        Ok(crate::layout::Geometry {
            sets: g.sets.into(),
            ways: g.ways.into(),
            line: g.line.into(),
        })
    }

    /// The arms that boot and each one's kernel: the newest image of its series in `dir`, or
    /// its build, made now with `build` or found made, unless `given` names one; only the arms
    /// `only` names when it names any. A build not made leaves its arm out; a needed one, or a
    /// series without an image, refuses, saying how to get it.
    pub(crate) fn kernels(
        &self,
        dir: &Path,
        given: &[(String, PathBuf)],
        only: &[String],
        mut build: Option<&mut dyn FnMut(kbuild::Progress)>,
    ) -> anyhow::Result<Vec<(&'static ArmSpec, PathBuf)>> {
        let mut image_of = |spec: &crate::kbuild::Recipe| -> anyhow::Result<Option<PathBuf>> {
            Ok(match build.as_deref_mut() {
                Some(progress) => Some(kbuild::build(spec, progress)?.image),
                None => kbuild::find(spec)?.map(|b| b.image),
            })
        };
        self.kernels_with(dir, given, only, &mut image_of)
    }

    /// [`Investigation::kernels`], a build's image from `image_of` (`None`: not made).
    pub(super) fn kernels_with(
        &self,
        dir: &Path,
        given: &[(String, PathBuf)],
        only: &[String],
        image_of: &mut dyn FnMut(&crate::kbuild::Recipe) -> anyhow::Result<Option<PathBuf>>,
    ) -> anyhow::Result<Vec<(&'static ArmSpec, PathBuf)>> {
        let mut chosen = Vec::new();
        let mut made: Vec<(&str, Option<PathBuf>)> = Vec::new();
        for a in self.arms {
            if !only.is_empty() && !only.iter().any(|n| n == a.name) {
                continue;
            }
            if let Some((_, k)) = given.iter().find(|(n, _)| n == a.name) {
                chosen.push((a, k.clone()));
                continue;
            }
            match a.image {
                Image::Newest(series) => {
                    let k = newest(dir, series)
                        .ok_or_else(|| anyhow::anyhow!(self.no_image(a, series, dir)))?;
                    chosen.push((a, k));
                }
                Image::Build { spec, needed } => {
                    let k = match made.iter().find(|(n, _)| *n == spec.name) {
                        Some((_, k)) => k.clone(),
                        None => {
                            let k = image_of(&spec)?;
                            made.push((spec.name, k.clone()));
                            k
                        }
                    };
                    match k {
                        Some(k) => chosen.push((a, k)),
                        None if needed => anyhow::bail!(self.no_build(a, spec)),
                        None => {}
                    }
                }
            }
        }
        if chosen.len() < 2 {
            let arms: Vec<&str> = self.arms.iter().map(|a| a.name).collect();
            let which = match only.is_empty() {
                true => format!("its arms ({})", arms.join(", ")),
                false => format!("the arms given ({})", only.join(", ")),
            };
            anyhow::bail!(
                "{} compares kernels, and only {} of {which} has one: {}",
                self.name,
                chosen.len(),
                self.how_to_build()
            );
        }
        Ok(chosen)
    }

    pub(super) fn no_image(&self, a: &ArmSpec, series: Series, dir: &Path) -> String {
        format!(
            "{}'s arm {} boots a {} image, and {} has none: {}",
            self.name,
            a.name,
            series
                .prefix()
                .trim_end_matches('.')
                .trim_start_matches("vmlinuz-"),
            dir.display(),
            series.how_to_get()
        )
    }

    pub(super) fn no_build(&self, a: &ArmSpec, spec: crate::kbuild::Recipe) -> String {
        format!(
            "{}'s arm {} boots syscost's build {} of {}, which the other arms are compared \
             with, and it is not built yet: {}",
            self.name,
            a.name,
            spec.name,
            kbuild::LINUX_SOURCE_61.package,
            self.how_to_build()
        )
    }

    /// How to make its builds.
    pub(super) fn how_to_build(&self) -> String {
        crate::said!(
            format!("syscost reproduce {} ", self.name),
            Opt::Build,
            format!(
                " builds them from Debian's {} ",
                kbuild::LINUX_SOURCE_61.package
            ),
            format!(
                "(apt-get install {} {}) ",
                kbuild::LINUX_SOURCE_61.package,
                kbuild::TOOLS.join(" ")
            ),
            "and keeps them, once per machine (",
            Opt::List,
            " says what each costs)"
        )
        .spell(spelled)
    }
}

/// The newest `vmlinuz-` image of `series` in `dir`, by version (6.1.0-56 after 6.1.0-9).
pub(super) fn newest(dir: &Path, series: Series) -> Option<PathBuf> {
    let mut found: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(series.prefix()))
        .collect();
    found.sort_by(|a, b| crate::experiments::bisect::builds::version_order(a, b));
    found.pop().map(|n| dir.join(n))
}
