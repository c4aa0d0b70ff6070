//! The command line a user would type for a typed request: a campaign's words rendered from
//! its [`CampaignAsk`], so that a command that runs a campaign of its own making (a
//! reproduction) can print it to run again or change. Each flag is named by its [`Opt`], as
//! refusals name it. It is made from the request, never
//! parsed back by syscost: a unit test checks that parsing it gives the same request.

use crate::boot::qemu::KernelEntry;
use crate::core::input::{Opt, spelled};
use crate::experiments::boots::ask::{Guest, Via};
use crate::experiments::boots::{Arm, LavaTarget};
use crate::experiments::campaign::ask::{ALPHA, CampaignAsk};

/// `campaign` and its words for `ask` (only what differs from the defaults).
pub(super) fn campaign(ask: &CampaignAsk) -> Vec<String> {
    let mut w = Words(vec!["campaign".into()]);
    let b = &ask.boots;
    if b.via != Via::Qemu {
        w.flag(Opt::Via, value(b.via));
    }
    guest(&mut w, &b.guest);
    if let Some(t) = b.lava.as_deref() {
        lava(&mut w, t);
    }
    w.some(Opt::Metric, b.metric.as_ref());
    w.some(Opt::Seed, b.seed);
    if b.noise_threshold != crate::experiments::boots::ask::NOISE_THRESHOLD_PCT {
        w.flag(Opt::NoiseThreshold, b.noise_threshold);
    }
    if b.exact_resolution != crate::compare::EXACT_FLOOR_PCT {
        w.flag(Opt::ExactResolution, b.exact_resolution);
    }
    if b.rules_errors != Default::default() {
        w.flag(Opt::AuditRulesErrors, value(b.rules_errors));
    }
    w.some(Opt::Boots, ask.rounds);
    w.on(Opt::NoVerdict, ask.no_verdict);
    w.on(Opt::Steps, ask.steps);
    if ask.alpha != ALPHA {
        w.flag(Opt::Alpha, ask.alpha);
    }
    w.some(Opt::Placement, ask.placement.map(value));
    for a in &ask.arms {
        arm(&mut w, a);
    }
    w.0.push("--".into());
    w.0.extend(b.measure.iter().cloned());
    w.0
}

/// The words being rendered.
struct Words(Vec<String>);

impl Words {
    fn flag(&mut self, flag: Opt, v: impl std::fmt::Display) {
        self.0.extend([spelled(flag), v.to_string()]);
    }
    fn some(&mut self, flag: Opt, v: Option<impl std::fmt::Display>) {
        if let Some(v) = v {
            self.flag(flag, v);
        }
    }
    fn on(&mut self, flag: Opt, on: bool) {
        if on {
            self.0.push(spelled(flag));
        }
    }
    /// `flag NAME=VALUE`, for an arm's own setting.
    fn named(&mut self, flag: Opt, name: &str, v: Option<impl std::fmt::Display>) {
        if let Some(v) = v {
            self.flag(flag, format!("{name}={v}"));
        }
    }
}

/// A value as the command line names it.
fn value(v: impl clap::ValueEnum) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

fn duration(d: std::time::Duration) -> String {
    humantime::format_duration(d).to_string()
}

fn guest(w: &mut Words, g: &Guest) {
    let d = Guest::default();
    w.some(Opt::Accel, g.accel.map(value));
    w.some(Opt::GuestCpus, g.cpus);
    w.some(Opt::HostCpus, g.host_cpus.as_ref());
    if g.entry != KernelEntry::default() {
        w.flag(Opt::Entry, value(g.entry));
    }
    w.on(Opt::EmulatedCounters, g.emulated_counters);
    w.some(Opt::CacheModel, g.cache_model.as_ref().map(|m| m.spec()));
    w.on(Opt::EmulatedProfile, g.emulated_profile);
    w.some(Opt::Icount, g.icount);
    w.some(
        Opt::Settle,
        (g.settle).map(|s| if s.is_zero() { "0".into() } else { duration(s) }),
    );
    if g.memory_mib != d.memory_mib {
        w.flag(Opt::GuestMemory, g.memory_mib);
    }
    w.some(Opt::BootTimeout, g.boot_timeout.map(duration));
    if g.retries != d.retries {
        w.flag(Opt::Retries, g.retries);
    }
    for f in &g.files {
        w.flag(Opt::GuestFile, f.display());
    }
    w.some(Opt::GuestDisk, g.disk.map(value));
}

fn lava(w: &mut Words, t: &LavaTarget) {
    use crate::boot::lava::JobPriority;
    use crate::boot::lava_events::EventsAt;
    w.flag(Opt::LavaUrl, &t.lab);
    w.flag(Opt::LavaDeviceType, &t.device_type);
    w.flag(Opt::LavaBoot, value(t.boot));
    w.some(Opt::LavaDevice, t.device.as_ref());
    w.some(
        Opt::LavaTokenFile,
        t.token_file.as_ref().map(|p| p.display()),
    );
    w.some(
        Opt::LavaFiles,
        (t.files.as_ref()).map(|f| format!("{}={}", f.dir.display(), f.url)),
    );
    w.flag(Opt::LavaQueueLimit, duration(t.queue_limit));
    w.flag(Opt::LavaQueueDepth, t.queue_depth);
    w.flag(Opt::LavaJobs, t.jobs);
    let priority = match t.priority {
        JobPriority::Level(v) => v.to_string(),
        p => p.json().as_str().unwrap_or_default().to_string(),
    };
    w.flag(Opt::LavaPriority, priority);
    w.flag(Opt::LavaVisibility, value(t.visibility));
    match &t.events {
        EventsAt::Server => {}
        EventsAt::Url(u) => w.flag(Opt::LavaEvents, u),
        EventsAt::Off => w.flag(Opt::LavaEvents, "off"),
    }
}

fn arm(w: &mut Words, a: &Arm) {
    let kernel = match &a.url {
        Some(u) => u.url.clone(),
        None => a.kernel.display().to_string(),
    };
    w.flag(Opt::Arm, format!("{}={kernel}", a.name));
    let sha = a.url.as_ref().and_then(|u| u.sha256.as_ref());
    w.named(Opt::KernelSha256, &a.name, sha);
    w.named(Opt::Initrd, &a.name, a.initrd.as_ref().map(|p| p.display()));
    let append = Some(&a.append).filter(|s| !s.is_empty());
    w.named(Opt::Append, &a.name, append);
    w.named(
        Opt::AuditRules,
        &a.name,
        a.rules.as_ref().map(|p| p.display()),
    );
    w.named(Opt::AgedSlab, &a.name, a.aged_slab);
    let own = a
        .measure
        .as_ref()
        .map(|m| shlex::try_join(m.iter().map(String::as_str)).unwrap_or_default());
    w.named(Opt::ArmCommand, &a.name, own);
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    /// The campaign `words` ask for, parsed as the command line parses them.
    fn parsed(words: &[String]) -> CampaignAsk {
        let argv = std::iter::once("syscost").chain(words.iter().map(String::as_str));
        let Command::Campaign(c) = Cli::try_parse_from(argv).unwrap().command else {
            panic!("{words:?}")
        };
        c.ask().unwrap()
    }

    /// A campaign's command line with every setting a request keeps.
    const EVERY_SETTING: &str = "campaign --accel tcg --cache-model 64x8x64,64x8x64,1024x16x64 --guest-cpus 1 \
                    --host-cpus 1 --entry bzimage --emulated-profile --icount 3 --settle 0 \
                    --guest-memory 2048 --boot-timeout 10min --retries 2 --guest-file /etc/hosts \
                    --guest-disk ext4 --metric task-clock --seed 9 --noise-threshold 1.5 \
                    --exact-resolution 0.5 --audit-rules-errors continue --boots 4 --no-verdict \
                    --steps --alpha 0.01 --placement run \
                    --arm a=/k1 --arm b=https://x.org/bz --kernel-sha256 \
                    b=0000000000000000000000000000000000000000000000000000000000000000 \
                    --initrd a=/i --append a=audit=1 --audit-rules b=/r --aged-slab b=256 \
                    --append-all nosmt --arm-command 'b=run uprobe --insn ret' -- run syscall \
                    --runs 3";

    /// And a lab's.
    const EVERY_LAB_SETTING: &str = "campaign --via lava --lava-url https://lab.example/ --lava-device qemu01 \
                    --lava-token-file /t --lava-files /srv=https://files.example/ \
                    --lava-queue-limit 10m --lava-queue-depth 7 --lava-jobs 2 --lava-priority 40 \
                    --lava-visibility personal --lava-events off --emulated-counters \
                    --arm a=/k -- run syscall";

    /// Every flag `campaign` takes is rendered back by the two lines above, or is one a
    /// request does not keep: a new flag cannot be left out of the rerun command unnoticed.
    #[test]
    fn every_flag_of_campaign_is_rendered_or_not_kept() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let cmd = cli.find_subcommand("campaign").unwrap();
        let mut rendered = Vec::new();
        for line in [EVERY_SETTING, EVERY_LAB_SETTING] {
            rendered.extend(campaign(&parsed(&shlex::split(line).unwrap())));
        }
        // How the result is shown, written and recorded, where runs are kept, the consent
        // to reboot, and the settings of every arm (folded into each arm's own).
        let not_kept = [
            "format",
            "output",
            "history",
            "no-history",
            "tag",
            "state",
            "yes",
            "append-all",
            "audit-rules-all",
            "help",
        ];
        for a in cmd.get_arguments() {
            let Some(long) = a.get_long() else { continue };
            let flag = format!("--{long}");
            assert!(
                rendered.contains(&flag) || not_kept.contains(&long),
                "{flag}: a flag campaign takes that its rerun command never renders"
            );
        }
    }

    /// Every setting a campaign's command line gives is rendered, and the rendered command
    /// parses to the same request.
    #[test]
    fn a_rendered_campaign_parses_to_the_request_it_was_rendered_from() {
        let line = EVERY_SETTING;
        let words = shlex::split(line).unwrap();
        let ask = parsed(&words);
        assert_eq!(ask.arms[0].append, "nosmt audit=1");
        assert_eq!(ask.arms[1].aged_slab, Some(256));
        let again = campaign(&ask);
        assert_eq!(parsed(&again), ask, "{again:?}");
        assert!(
            !again.contains(&"--append-all".to_string()),
            "folded into each arm"
        );
        let plain = parsed(&shlex::split("campaign --arm a=/k -- run syscall").unwrap());
        assert_eq!(
            campaign(&plain),
            ["campaign", "--arm", "a=/k", "--", "run", "syscall"]
        );
    }

    /// A reproduction's campaign, rendered to run again, parses to the request it ran and
    /// so to the same plan.
    #[test]
    fn a_reproduction_s_rerun_command_gives_its_plan_back() {
        use crate::cli::boots::Checker;
        use crate::experiments::reproduce::{ALL, campaign::Settings};
        let settings = Settings {
            boots: Some(3),
            runs: Some(2),
            seed: Some(11),
            ..Settings::default()
        };
        for inv in ALL {
            let kernels: Vec<_> = (inv.arms.iter())
                .map(|a| (a, std::path::PathBuf::from(format!("/k/{}", a.name))))
                .collect();
            let ask = inv
                .campaign(&kernels, "/rules".as_ref(), &settings)
                .unwrap();
            let words = campaign(&ask);
            let again = parsed(&words);
            assert_eq!(again, ask, "{}: {words:?}", inv.name);
            let plan = |a: &CampaignAsk| {
                let p = a.plan(a.boots.seed(), &Checker("campaign")).unwrap();
                serde_json::to_value(&p).unwrap()
            };
            assert_eq!(plan(&again), plan(&ask), "{}", inv.name);
            let modelled = inv.counts == crate::experiments::reproduce::Counts::Modelled;
            assert_eq!(
                words.contains(&"--cache-model".to_string()),
                modelled,
                "{words:?}"
            );
            assert!(words.contains(&"--emulated-counters".to_string()) || modelled);
        }
    }

    #[test]
    fn a_lab_s_settings_are_rendered_too() {
        let line = EVERY_LAB_SETTING;
        let ask = parsed(&shlex::split(line).unwrap());
        assert_eq!(parsed(&campaign(&ask)), ask);
    }
}
