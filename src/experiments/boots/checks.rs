//! What is refused before anything boots: arms, their command lines and rules files, the
//! measuring command and the files the guest needs.

use super::plan::{Arm, Backend, BootPlan, Needed};
use super::qemu::kernel_command_line;
use crate::boot::bzimage;
use crate::boot::initramfs;
use crate::core::input::{Opt, spelled};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;

/// The part of an arm a problem is in; the command says which of its options (or which line
/// of a list) gave that part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArmPart {
    Name,
    Kernel,
    CommandLine,
    Initrd,
    Rules,
    /// The aged slab its rules load into.
    AgedSlab,
}

/// What is wrong with one arm, in the arm's own words: it cannot be booted as given.
#[derive(Debug, thiserror::Error)]
#[error("{arm}: {why}")]
pub(crate) struct ArmProblem {
    /// The arm's name, as it can be shown (control characters escaped, a long one cut).
    pub arm: String,
    pub part: ArmPart,
    pub why: String,
}

fn problem(arm: &str, part: ArmPart, why: String) -> ArmProblem {
    ArmProblem {
        arm: arm.to_string(),
        part,
        why,
    }
}

/// Refuse, before anything boots, what cannot work: a file that is not a kernel, an arm name
/// that cannot name files and rows, a command line the kernel would cut, a rules file that is
/// missing or has lines syscost cannot set up, guest files that are not regular files or do
/// not fit the guest, arms named twice. Returns each arm's rules, read here (by auditctl's
/// library, which the guest lacks) and sent to the guest as JSON, by arm name.
pub(crate) fn check(plan: &BootPlan) -> Result<Vec<(String, String)>> {
    if plan.arms.is_empty() {
        return Err(crate::refused!(
            "give ",
            Opt::Arm,
            " NAME=KERNEL: one arm measures a kernel, two or more compare them"
        ));
    }
    check_setup(plan)?;
    let tree = guest_tree(plan)?;
    let mut rules = Vec::new();
    for (i, a) in plan.arms.iter().enumerate() {
        if plan.arms[..i].iter().any(|b| b.name == a.name) {
            let why = "the name is given twice".to_string();
            return Err(problem(&a.name, ArmPart::Name, why).into());
        }
        check_name(&a.name)?;
        if let (Backend::Kexec, Some(u)) = (&plan.backend, &a.url) {
            let why = format!(
                "{}: a kexec boot loads a kernel file of this machine: fetch it first (curl -o) \
                 and give that file",
                u.url
            );
            return Err(problem(&a.name, ArmPart::Kernel, why).into());
        }
        if let Some(text) = check_arm(a, plan.rules_errors, tree.as_ref())? {
            rules.push((a.name.clone(), text));
        }
    }
    check_aged(plan)?;
    check_placement(plan)?;
    Ok(rules)
}

/// Fetch each arm whose kernel is a URL into `dir` (once: a resumed run finds its copy), its
/// SHA-256 checked when one was given; the arm's `kernel` is then that copy. A kexec boot loads
/// files of this machine that outlive the run, so [`check`] refuses a URL there.
pub(crate) fn fetch_kernels(plan: &mut BootPlan, dir: &std::path::Path) -> Result<(), ArmProblem> {
    for a in plan.arms.iter_mut() {
        let Some(url) = &a.url else { continue };
        check_name(&a.name)?;
        let refuse = |why: String| problem(&a.name, ArmPart::Kernel, why);
        let copy = dir.join(format!("{}.bzImage", a.name));
        if !copy.exists() {
            crate::experiments::boots::kept::make_dir(dir).map_err(|e| refuse(format!("{e:#}")))?;
            let got = url.fetch(&copy).map_err(|e| refuse(format!("{e:#}")))?;
            eprintln!(
                "syscost: arm {}: fetched {} (SHA-256 {got})",
                a.name, url.url
            );
        }
        a.kernel = copy;
    }
    Ok(())
}

/// An aged slab is for an arm with rules, in a guest syscost boots from its own initramfs (a
/// kexec boot's slab is as its own boot made it), with fillers the kernel can hold.
fn check_aged(plan: &BootPlan) -> Result<(), ArmProblem> {
    use crate::audit::age::MAX_OBJECTS;
    for a in &plan.arms {
        let Some(objects) = a.aged_slab else { continue };
        let why = match a {
            _ if !(2..=MAX_OBJECTS).contains(&objects) => {
                format!("{objects} objects: give 2 to {MAX_OBJECTS}")
            }
            a if a.rules.is_none() => {
                "the arm has no audit rules to load into the aged slab".to_string()
            }
            _ if matches!(plan.backend, Backend::Kexec) => {
                "a kexec boot runs this machine's own init, which ages no slab".to_string()
            }
            _ => continue,
        };
        return Err(problem(&a.name, ArmPart::AgedSlab, why));
    }
    Ok(())
}

/// Placing anew each run reloads an arm's rules in a guest syscost booted and throws away.
fn check_placement(plan: &BootPlan) -> Result<()> {
    use super::plan::PlaceEach;
    use crate::core::input::Opt;
    if plan.placement == PlaceEach::Boot {
        return Ok(());
    }
    if matches!(plan.backend, Backend::Kexec) {
        return Err(crate::refused!(
            Opt::Placement,
            " run reloads the arm's rules in a guest that is thrown away; a kexec boot is this \
             machine: give ",
            Opt::Placement,
            " boot"
        ));
    }
    if plan.arms.iter().all(|a| a.rules.is_none()) {
        return Err(crate::refused!(
            Opt::Placement,
            " run places the arms' audit rule entries anew, and no arm has any: give an arm \
             ",
            Opt::AuditRules,
            ", or ",
            Opt::Placement,
            " boot"
        ));
    }
    Ok(())
}

/// What every boot shares: a measuring command, and guest files that are regular files, fit
/// the guest and hold what the command opens.
pub(crate) fn check_setup(plan: &BootPlan) -> Result<()> {
    if plan.measure.is_empty() {
        return Err(crate::refused!(
            "give the measuring command after --, e.g. -- run syscall ",
            Opt::Runs,
            " 3"
        ));
    }
    if let Backend::Qemu(m) = &plan.backend {
        check_guest_files(&plan.guest_files, m.memory_mib)?;
        check_needed(&plan.needs, &plan.guest_files)?;
    }
    Ok(())
}

/// The directories syscost's initramfs gives a guest, when an arm has rules that may name
/// paths and the boots start from that initramfs (not kexec's, which boot this machine's
/// own root file system).
pub(crate) fn guest_tree(plan: &BootPlan) -> Result<Option<initramfs::Tree>> {
    if matches!(plan.backend, Backend::Kexec) || plan.arms.iter().all(|a| a.rules.is_none()) {
        return Ok(None);
    }
    let exe = std::env::current_exe().context("cannot find syscost's own binary")?;
    let contents = initramfs::Contents {
        files: plan.guest_files.clone(),
        named: vec![(crate::boot::guest::PLAN_PATH.into(), Vec::new())],
    };
    Ok(Some(initramfs::Tree::of(&exe, &contents)?))
}

/// One arm: its name, its kernel (a bzImage whose command line holds what syscost adds), its
/// initramfs and its rules file: what the kernel must find for each rule that names a path
/// (in `tree`, the guest's directories, when it boots syscost's initramfs), and audit not
/// turned off for the boot. Returns its rules, read here (by auditctl's library, which the
/// guest lacks) as the JSON the guest is sent; what is wrong is an [`ArmProblem`].
pub(crate) fn check_arm(
    a: &Arm,
    on_error: crate::audit::rules_file::OnError,
    tree: Option<&initramfs::Tree>,
) -> Result<Option<String>, ArmProblem> {
    check_name(&a.name)?;
    check_command_line(a)?;
    if let Some(i) = &a.initrd
        && let Err(e) = std::fs::File::open(i)
    {
        let why = format!("cannot read its initramfs {}: {e}", i.display());
        return Err(problem(&a.name, ArmPart::Initrd, why));
    }
    let Some(r) = &a.rules else {
        return Ok(None);
    };
    // No flag: the command adds the option (or line) that named the file.
    let set = crate::audit::rules_file::read(r, "", on_error)
        .map_err(|e| problem(&a.name, ArmPart::Rules, format!("{e:#}").trim().into()))?;
    check_audit_on(a)?;
    if let Some(t) = tree {
        check_paths(&set, t).map_err(|e| problem(&a.name, ArmPart::Rules, format!("{e:#}")))?;
    }
    Ok(Some(
        serde_json::to_string(&set).expect("a rule set is JSON"),
    ))
}

/// An arm with rules must not boot with `audit=0` (or `off`): the kernel then has no audit
/// for the whole boot, takes no rule, and the arm would measure nothing of them.
fn check_audit_on(a: &Arm) -> Result<(), ArmProblem> {
    let last = a
        .append
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("audit="))
        .next_back();
    match last {
        Some(v) if v == "0" || v.eq_ignore_ascii_case("off") => {
            let why = format!(
                "audit={v} on its command line turns audit off for the whole boot, so its audit \
                 rules could not be loaded and would measure nothing: drop audit={v} (syscost \
                 turns audit on for the measurement when the boot has it off), or drop the \
                 arm's rules"
            );
            Err(problem(&a.name, ArmPart::CommandLine, why))
        }
        _ => Ok(()),
    }
}

/// Each rule that names a path finds it in the guest: a watch its parent directory, a `dir=`
/// the directory itself (the kernel refuses either, ENOENT, and the boot would be lost). With
/// `-i` or --audit-rules-errors continue, the guest's kernel leaves the rule out and the
/// boot's result says so.
fn check_paths(set: &crate::audit::rules_file::RuleSet, tree: &initramfs::Tree) -> Result<()> {
    use crate::audit::rules::{FIELD_WATCH, paths};
    for (line, bytes) in set.rules() {
        for (field, path) in paths(bytes) {
            let p = std::path::Path::new(&path);
            let (dir, what) = match field {
                FIELD_WATCH => (p.parent().unwrap_or(p), "a watch's parent directory"),
                _ => (p, "a dir= directory"),
            };
            if !tree.has_dir(dir) {
                let reason = crate::said!(
                    format!("the guest has no {} ({what}): ", dir.display()),
                    "a guest holds syscost's initramfs (/init, its libraries, ",
                    Opt::GuestFile,
                    " files), the kernel's /proc, /sys and /dev, and an empty /tmp and /run; \
                     watch a path there, or give a file in ",
                    dir.display(),
                    " with ",
                    Opt::GuestFile
                )
                .spell(spelled);
                set.clone().refuse(line, reason)?;
            }
        }
    }
    Ok(())
}

/// Each file the measuring command opens must be in the guest's initramfs: syscost itself
/// (`/init`), its shared libraries, a `--guest-file` or one of their libraries.
fn check_needed(needs: &[Needed], guest_files: &[PathBuf]) -> Result<()> {
    if needs.is_empty() {
        return Ok(());
    }
    let exe = std::env::current_exe().context("cannot find syscost's own binary")?;
    let mut inside: Vec<PathBuf> = initramfs::shared_libraries(&exe)?;
    inside.push("/init".into());
    for f in guest_files {
        inside.push(initramfs::guest_path(f)?);
        inside.extend(initramfs::shared_libraries(f)?);
    }
    for n in needs {
        if !n.path.is_absolute() {
            return Err(crate::refused!(
                format!(
                    "{}: the guest has no PATH to look it up in; give its path and ",
                    n.what
                ),
                Opt::GuestFile,
                " PATH"
            ));
        }
        if !inside.contains(&n.path) {
            return Err(crate::refused!(
                format!("{}: the guest has no {}; add ", n.what, n.path.display()),
                Opt::GuestFile,
                format!(
                    " {} (the guest holds syscost as /init, its shared libraries and the ",
                    n.path.display()
                ),
                Opt::GuestFile,
                " files)"
            ));
        }
    }
    Ok(())
}

/// The longest arm name: it names files, a kernel parameter, history tags and table rows.
pub(crate) const NAME_MAX: usize = 64;

/// An arm's name: 1 to 64 letters, digits, `.`, `_`, `-` or `+`. Anything else could break
/// the kernel command line it is passed on (a space), a file name (`/`) or a table (a newline
/// forges a row).
fn check_name(name: &str) -> Result<(), ArmProblem> {
    let shown = crate::core::printable(&name.chars().take(40).collect::<String>());
    let more = if name.chars().count() > 40 { "..." } else { "" };
    let refuse = |why: String| Err(problem(&format!("{shown}{more}"), ArmPart::Name, why));
    if name.chars().count() > NAME_MAX {
        return refuse(format!("an arm's name has at most {NAME_MAX} characters"));
    }
    let ok = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '+');
    if let Some(c) = name.chars().find(|&c| !ok(c)) {
        return refuse(format!(
            "{} is not allowed in an arm's name (letters, digits, '.', '_', '-' and '+': the \
             name becomes file names, a kernel parameter and table rows)",
            crate::core::printable(&format!("{c:?}"))
        ));
    }
    if name.chars().all(|c| c == '.') {
        return refuse("give the arm a name, e.g. base or fix".into());
    }
    Ok(())
}

/// The kernel keeps at most its header's `cmdline_size` bytes of the command line, and what
/// syscost adds comes last: a line the kernel would cut loses the arm's name, and the boot
/// never measures. Control characters are refused too.
fn check_command_line(arm: &Arm) -> Result<(), ArmProblem> {
    if let Some(c) = arm.append.chars().find(|c| c.is_control()) {
        let why = format!(
            "{} is not allowed on a kernel command line (give parameters separated by spaces)",
            c.escape_default()
        );
        return Err(problem(&arm.name, ArmPart::CommandLine, why));
    }
    let header = bzimage::Header::read(&arm.kernel)
        .map_err(|e| problem(&arm.name, ArmPart::Kernel, format!("{e:#}")))?;
    // The longest line a boot gets: the first, which asks for the kernel's symbols.
    let line = kernel_command_line(arm, true, true);
    if line.len() > header.cmdline_size as usize {
        let why = format!(
            "the kernel command line would be {} bytes with what syscost adds ({}); {} keeps at \
             most {} (its header's cmdline_size): shorten what the arm adds to it",
            line.len(),
            kernel_command_line(
                &Arm {
                    append: String::new(),
                    ..arm.clone()
                },
                true,
                true
            ),
            arm.kernel.display(),
            header.cmdline_size
        );
        return Err(problem(&arm.name, ArmPart::CommandLine, why));
    }
    Ok(())
}

/// Guest files are regular files (a device such as /dev/zero would be read forever), and the
/// initramfs they make must leave the guest room: at most half its memory (the kernel holds
/// the archive while it unpacks it).
fn check_guest_files(files: &[PathBuf], memory_mib: u32) -> Result<()> {
    let mut total = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map_or(0, |m| m.len());
    for f in files {
        let m = std::fs::metadata(f).with_context(|| {
            crate::refused!(Opt::GuestFile, " ", f.display(), ": cannot read it")
        })?;
        if !m.is_file() {
            return Err(crate::refused!(
                Opt::GuestFile,
                format!(" {}: not a regular file; ", f.display()),
                "give files (each is copied to the same path in the guest, its directories created)"
            ));
        }
        let at = crate::boot::initramfs::guest_path(f)?;
        // A tmpfs's (/tmp, /run) is copied into it when the guest mounts it.
        if let Some((_, dir, _)) = crate::boot::guest::MOUNTS
            .iter()
            .find(|(_, d, fs)| at.starts_with(d) && *fs != "tmpfs")
        {
            bail!(
                "{}: the guest mounts a file system of its own on {dir}, which would hide it: \
                 copy it to another directory and name that copy",
                f.display()
            );
        }
        total += m.len();
    }
    let room = u64::from(memory_mib) << 19;
    if total > room {
        return Err(crate::refused!(
            Opt::GuestFile,
            format!(
                ": the initramfs would hold {} MiB, more than half of the guest's {} MiB (",
                total >> 20,
                memory_mib
            ),
            Opt::GuestMemory,
            "): send fewer files or raise ",
            Opt::GuestMemory
        ));
    }
    Ok(())
}

#[cfg(test)]
mod unit {
    use super::*;

    /// An arm of kernel /k, with rules /r or none.
    fn arm(name: &str, rules: bool) -> Arm {
        Arm {
            name: name.into(),
            kernel: "/k".into(),
            append: String::new(),
            rules: rules.then(|| "/r".into()),
            ..Arm::default()
        }
    }

    #[test]
    fn an_aged_slab_needs_an_arm_with_rules_in_a_guest() {
        let plan = |aged: &[(&str, usize)]| {
            let mut arms = vec![arm("a", false), arm("b", true)];
            for a in &mut arms {
                a.aged_slab = aged.iter().find(|(n, _)| *n == a.name).map(|(_, o)| *o);
            }
            BootPlan {
                arms,
                ..BootPlan::bare(Backend::Kexec)
            }
        };
        let why = |aged: &[(&str, usize)]| check_aged(&plan(aged)).unwrap_err().why;
        assert!(why(&[("b", 1)]).contains("give 2 to"));
        assert!(why(&[("a", 256)]).contains("no audit rules"));
        assert!(why(&[("b", 256)]).contains("kexec"));
        assert_eq!(check_aged(&plan(&[])).err().map(|e| e.why), None);
        let mut by_url = plan(&[]);
        let url = crate::boot::fetch::KernelUrl::new("https://x.org/bzImage", None).unwrap();
        by_url.arms[0].url = Some(url);
        let e = check(&by_url).unwrap_err();
        let e = e.downcast_ref::<ArmProblem>().unwrap();
        assert_eq!((e.arm.as_str(), e.part), ("a", ArmPart::Kernel));
        assert!(
            e.why.contains("a kexec boot loads a kernel file"),
            "{}",
            e.why
        );
    }

    #[test]
    fn placing_anew_each_run_needs_rules_in_a_guest_and_is_the_cache_model_s_default() {
        use crate::experiments::boots::PlaceEach;
        let machine = |cache: bool| crate::boot::qemu::Machine {
            accel: crate::boot::qemu::Accel::Tcg,
            cpus: 1,
            memory_mib: 1024,
            timeout: std::time::Duration::from_secs(60),
            host_cpus: None,
            entry: crate::boot::qemu::KernelEntry::Pvh,
            emulated_counters: cache,
            cache_model: cache
                .then(|| crate::counters::emulated::CacheModel::parse("skylake-x").unwrap()),
            emulated_profile: false,
            icount: None,
            guest_disk: None,
        };
        let plan = |backend: Backend, rules: bool| BootPlan {
            arms: vec![arm("a", false), arm("b", rules)],
            placement: PlaceEach::Run,
            ..BootPlan::bare(backend)
        };
        let said = |p: &BootPlan| check_placement(p).map_err(|e| e.to_string());
        assert!(said(&plan(Backend::Qemu(machine(true)), true)).is_ok());
        let e = said(&plan(Backend::Qemu(machine(true)), false)).unwrap_err();
        assert!(e.contains("no arm has any"), "{e}");
        let e = said(&plan(Backend::Kexec, true)).unwrap_err();
        assert!(e.contains("kexec"), "{e}");
        let once = BootPlan {
            placement: PlaceEach::Boot,
            ..plan(Backend::Kexec, false)
        };
        assert!(said(&once).is_ok());
        // The default: anew each run where a cache model counts misses and rules are there.
        let default = |backend, rules| PlaceEach::default_for(&plan(backend, rules));
        assert_eq!(default(Backend::Qemu(machine(true)), true), PlaceEach::Run);
        assert_eq!(
            default(Backend::Qemu(machine(true)), false),
            PlaceEach::Boot
        );
        assert_eq!(
            default(Backend::Qemu(machine(false)), true),
            PlaceEach::Boot
        );
        assert_eq!(default(Backend::Kexec, true), PlaceEach::Boot);
    }
}
