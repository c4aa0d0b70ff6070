//! What a lab fetches for a run's jobs (each arm's kernel, the initramfs, the plugin), put
//! where the lab reaches it and named by its SHA-256, which the job checks.

use super::*;

/// A file the lab fetches: its URL and SHA-256.
#[derive(Clone, Debug)]
pub(super) struct Artifact {
    pub(super) url: String,
    pub(super) sha256: String,
    pub(super) len: u64,
}

impl Artifact {
    /// `file`, as the lab reaches it: a copy named by its content in the served directory at
    /// its URL, or with `keep` (a lab on this machine) a copy in `keep` by a file:// URL
    /// (`keep: None`: the file where it is, for a kernel).
    pub(super) fn of(
        file: &Path,
        served: Option<&Served>,
        keep: Option<&Path>,
    ) -> Result<Artifact> {
        Self::from_file(file, served, keep, false)
    }

    /// [`Artifact::of`] a file this run made (the initramfs, the plugin, a vmlinux), which
    /// may be linked where the lab fetches it instead of copied.
    pub(super) fn made(
        file: &Path,
        served: Option<&Served>,
        keep: Option<&Path>,
    ) -> Result<Artifact> {
        Self::from_file(file, served, keep, true)
    }

    pub(super) fn from_file(
        file: &Path,
        served: Option<&Served>,
        keep: Option<&Path>,
        ours: bool,
    ) -> Result<Artifact> {
        let bytes =
            std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let sha256 = crate::core::sha256_hex(&bytes);
        let name = file
            .file_name()
            .map_or("file".into(), |n| n.to_string_lossy());
        // Named by content: arms and campaigns that share a file share its copy.
        let named = format!("{}-{name}", &sha256[..16]);
        let copy = |dir: &Path| -> Result<()> {
            put(file, &bytes, &dir.join(&named), ours)
                .with_context(|| format!("cannot put {name} in {}", dir.display()))
        };
        let url = match (served, keep) {
            (Some(s), _) => {
                copy(&s.dir)?;
                format!("{}/{named}", s.url.trim_end_matches('/'))
            }
            (None, Some(dir)) => {
                copy(dir)?;
                format!(
                    "file://{}",
                    std::fs::canonicalize(dir.join(&named))?.display()
                )
            }
            (None, None) => format!("file://{}", std::fs::canonicalize(file)?.display()),
        };
        Ok(Artifact {
            url,
            sha256,
            len: bytes.len() as u64,
        })
    }

    /// A file the lab fetches from `url`, where this machine fetched `copy` from: the job
    /// carries the SHA-256 of the bytes checked here.
    pub(super) fn at(url: &str, copy: &Path) -> Result<Artifact> {
        let bytes =
            std::fs::read(copy).with_context(|| format!("cannot read {}", copy.display()))?;
        Ok(Artifact {
            url: url.to_string(),
            sha256: crate::core::sha256_hex(&bytes),
            len: bytes.len() as u64,
        })
    }

    pub(super) fn image(&self, arg: &str) -> serde_json::Value {
        json!({"url": self.url, "sha256sum": self.sha256, "image_arg": arg})
    }
}

/// Put `file` (its `bytes`) at `to`, where the lab fetches it, unless a copy is there: a hard
/// link when it is a file this run made (`ours`) on the same file system (made whole or not at
/// all), else an atomic copy. A 57 MB vmlinux and a 23 MB initramfs were written twice and
/// synced: a one-arm campaign took 1.55 s from its start to its first job's validation here,
/// and 0.87-1.24 s linked.
pub(super) fn put(file: &Path, bytes: &[u8], to: &Path, ours: bool) -> Result<()> {
    if to.metadata().is_ok_and(|m| m.len() == bytes.len() as u64) {
        return Ok(());
    }
    if ours {
        // A copy cut short (its length differs) goes; the name is the content's.
        let _ = std::fs::remove_file(to);
        if std::fs::hard_link(file, to).is_ok() {
            return Ok(());
        }
    }
    crate::core::write_atomic(to, bytes)
}

/// Arm `a`'s kernel as the lab fetches it, and how it starts. On a `qemu` device a kernel of
/// this machine starts at its PVH entry, as a direct boot's does (its vmlinux, taken out into
/// `vmlinux` and put where the lab fetches it: no decompression under TCG, about 2 s of
/// every job); a kernel at a URL, which the lab fetches from there, starts as its bzImage. A
/// board's boot loader starts the bzImage.
pub(super) fn kernel_of(
    a: &super::super::Arm,
    target: &LavaTarget,
    vmlinux: &Path,
    served: Option<&Served>,
    keep: Option<&Path>,
) -> Result<(Artifact, Option<Entry>)> {
    let on_qemu = target.boot == BootMethod::Qemu;
    if let Some(u) = &a.url {
        let why = "fetched by the lab from its URL".to_string();
        return Ok((
            Artifact::at(&u.url, &a.kernel)?,
            on_qemu.then_some(Entry::BzImage(why)),
        ));
    }
    if !on_qemu {
        return Ok((Artifact::of(&a.kernel, served, None)?, None));
    }
    let entry = super::super::qemu::start_entry(target.machine.entry, &a.kernel, vmlinux)?;
    let artifact = match &entry {
        Entry::Pvh(file) => Artifact::made(file, served, keep)?,
        Entry::BzImage(_) => Artifact::of(&a.kernel, served, None)?,
    };
    Ok((artifact, Some(entry)))
}

/// What every job of a run fetches, put where the lab reaches it.
pub(super) struct Files {
    pub(super) initrd: Artifact,
    pub(super) plugin: Option<Artifact>,
    pub(super) kernels: Vec<Artifact>,
    /// How each arm's kernel starts on a `qemu` device (none on a board).
    pub(super) entries: Vec<Option<Entry>>,
}

impl Files {
    /// Build the initramfs, the plugin and each arm's kernel in `dir`, and put them in the
    /// served directory, or (a lab on this machine) in `keep`, made here.
    pub(super) fn make(
        plan: &BootPlan,
        target: &LavaTarget,
        rules: &[(String, String)],
        dir: &Path,
        keep: &Path,
    ) -> Result<Files> {
        let served = target.files.as_ref();
        match served {
            Some(s) => std::fs::create_dir_all(&s.dir).with_context(|| {
                crate::refused!(Opt::LavaFiles, ": cannot create ", s.dir.display())
            })?,
            None => crate::experiments::boots::kept::make_dir(keep)?,
        }
        let keep = Some(keep);
        let initrd = Artifact::made(&build_initramfs(plan, rules, dir)?, served, keep)?;
        let plugin = match target.machine.emulated_counters {
            true => {
                let p = dir.join("tcg_count.so");
                std::fs::write(&p, crate::counters::emulated::PLUGIN)?;
                Some(Artifact::made(&p, served, keep)?)
            }
            false => None,
        };
        let mut made: Vec<(Artifact, Option<Entry>)> = Vec::new();
        for (i, a) in plan.arms.iter().enumerate() {
            // Arms of one kernel (audit0 and audit1 of one build) share its vmlinux.
            let same =
                (plan.arms[..i].iter()).position(|b| (&b.kernel, &b.url) == (&a.kernel, &a.url));
            let one = match same {
                Some(j) => made[j].clone(),
                None => {
                    let vmlinux = dir.join(format!("vmlinux-{i}"));
                    kernel_of(a, target, &vmlinux, served, keep)
                        .with_context(|| format!("arm {}", a.name))?
                }
            };
            made.push(one);
        }
        let (kernels, entries) = made.into_iter().unzip();
        Ok(Files {
            initrd,
            plugin,
            kernels,
            entries,
        })
    }
}
