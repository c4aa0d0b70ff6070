//! A LAVA job's definition: on a `qemu` device (QEMU's options the job adds, the counts'
//! port) or on a board started by iPXE, and the kernel's words its monitors watch for.

use super::*;

/// The kernel's words as it panics, and as it reboots after the panic (a board's boots run
/// with panic=1: with -1 the kernel reboots at once, saying nothing more).
pub(super) const PANIC: &str = "Kernel panic - not syncing";
pub(super) const REBOOTING: &str = "Rebooting in [0-9]+ seconds";

/// What differs between a `qemu` device's job and a board's: the context, the deploy and
/// boot actions, and the monitor's start and end.
pub(super) type JobParts = (serde_json::Value, [serde_json::Value; 2], (String, String));

impl LavaBooter<'_> {
    /// The job of one try at arm `a`, as the text submitted (JSON, which YAML reads).
    pub(super) fn definition(&self, a: usize, round: u32, attempt: u32) -> Result<String> {
        let (plan, m) = (self.plan, &self.target.machine);
        let arm = &plan.arms[a];
        let boot_s = m.timeout.as_secs().max(60);
        let (context, deploy_boot, (start, end)) = match self.target.boot {
            BootMethod::Qemu => self.on_qemu(a, boot_s),
            BootMethod::Ipxe => self.on_board(a, boot_s),
        };
        let mut job = json!({
            "device_type": self.target.device_type,
            "job_name": format!("syscost {}: {} round {round} try {}", self.tag, arm.name, attempt + 1),
            "visibility": self.target.visibility.name(),
            "priority": self.target.priority.json(),
            "timeouts": {
                "job": {"seconds": boot_s + 600},
                "action": {"seconds": boot_s + 300},
                "queue": {"seconds": self.target.queue_limit.as_secs().max(1)},
                // The console may be silent for the whole boot and measurement (a quiet
                // kernel, the settle): LAVA's default would end the job.
                "connection": {"seconds": boot_s},
            },
            "metadata": {
                "syscost.run": self.tag,
                "syscost.arm": arm.name,
                "syscost.round": round.to_string(),
                "syscost.try": (attempt + 1).to_string(),
            },
            "context": context,
            "actions": [
                deploy_boot[0],
                deploy_boot[1],
                {"test": {"timeout": {"seconds": boot_s}, "monitors": [{
                    "name": "syscost",
                    "start": start,
                    "end": end,
                    "pattern": CASE_PATTERN,
                    "fixupdict": {"pass": "pass", "fail": "fail"},
                }]}},
            ],
        });
        // What a lab's readers (KernelCI's and LKFT's dashboards) look up a job by.
        if let Some(release) = &self.releases[a] {
            job["metadata"]["kernel.version"] = json!(release);
        }
        match &self.target.pin {
            Some(pin) if self.device_key => job["device"] = json!(pin.device),
            Some(Pin { tag: Some(tag), .. }) => job["tags"] = json!([tag]),
            _ => {}
        }
        Ok(serde_json::to_string_pretty(&job)?)
    }

    /// A job's context, its deploy and boot actions and its monitor's start and end on a
    /// `qemu` device: the kernel, the initramfs and the plugin as QEMU's own options.
    pub(super) fn on_qemu(&self, a: usize, boot_s: u64) -> JobParts {
        let m = &self.target.machine;
        let mut images = serde_json::Map::new();
        let append = kernel_command_line(
            &self.plan.arms[a],
            m.emulated_profile && self.symbols[a].is_none(),
            m.emulated_profile,
        );
        images.insert(
            "kernel".into(),
            self.kernels[a].image(&format!("-kernel {{kernel}} -append \"{append}\"")),
        );
        images.insert("initrd".into(), self.initrd.image("-initrd {initrd}"));
        let mut options = extra_options(m);
        if let Some(p) = &self.plugin {
            // The plugin's counts to the guest's second serial port, through a socket of
            // this job's own on the worker (QEMU removes it when it ends).
            let socket = format!("/tmp/syscost-{:016x}.sock", rand::random::<u64>());
            let arg = qemu::plugin_arg(m, Path::new("{plugin}"));
            images.insert(
                "plugin".into(),
                p.image(&format!("-plugin {arg},counts={socket} -d plugin")),
            );
            options.extend(counts_port_options(&socket));
        }
        let context = json!({
            "arch": "x86_64",
            "no_kvm": true,
            "memory": m.memory_mib,
            "model": NIC,
            "extra_options": options,
        });
        let actions = [
            json!({"deploy": {"to": "tmpfs", "timeout": {"minutes": 10}, "images": images}}),
            json!({"boot": {"method": "qemu", "media": "tmpfs", "timeout": {"seconds": boot_s}}}),
        ];
        // A panic ends QEMU (-no-reboot), and the job with it.
        let marks = (console::BEGIN.to_string(), console::END.to_string());
        (context, actions, marks)
    }

    /// A job's parts on an x86 board: the kernel and the initramfs by TFTP (the initramfs as
    /// it is: LAVA adds nothing to it), booted by iPXE with the board's own console and
    /// network arguments, and the guest's after them.
    pub(super) fn on_board(&self, a: usize, boot_s: u64) -> JobParts {
        let file = |x: &Artifact| json!({"url": x.url, "sha256sum": x.sha256});
        let mut ramdisk = file(&self.initrd);
        ramdisk["install_overlay"] = json!(false);
        ramdisk["install_modules"] = json!(false);
        let kernel = file(&self.kernels[a]);
        // panic=1: the kernel says it reboots, which ends the job's monitor (see PANIC).
        let args = guest_args(&self.plan.arms[a], false, 1);
        let context = json!({ "extra_kernel_args": args });
        let actions = [
            json!({"deploy": {"to": "tftp", "timeout": {"minutes": 10},
                "kernel": kernel, "ramdisk": ramdisk}}),
            json!({"boot": {"method": "ipxe", "commands": "ramdisk",
                "timeout": {"seconds": boot_s}}}),
        ];
        // A board whose kernel panics starts its boot loader again and never powers off: the
        // panic's own lines end the monitor, not its timeout.
        let marks = (
            format!("{}|{PANIC}", console::BEGIN),
            format!("{}|{REBOOTING}", console::END),
        );
        (context, actions, marks)
    }
}

/// The network card LAVA's `qemu` template always adds (`-net nic,{{ model }},macaddr=...`,
/// `model` a context variable of LAVA's job schema): an ISA NE2000 rather than its virtio one.
/// The guest needs no network, and its kernel probes no ISA card it has no driver loaded for,
/// where it probed the virtio card on the PCI bus on every boot: by the guest's own clock the
/// kernel's boot took a median 0.30 s longer with the virtio card than with the ISA one, in 10
/// of 12 interleaved runs of a job's QEMU command line here (exact Wilcoxon p = 0.012). A
/// direct boot has no card at all.
pub(super) const NIC: &str = "model=ne2k_isa";

/// QEMU's options the job adds to the device type's own (`-nographic`, a network card and
/// `-m` from its template): the CPU, the vCPUs, -icount, and no reboot (a panic ends QEMU);
/// none of QEMU's default devices (a VGA card whose BIOS SeaBIOS runs emulated, a floppy, a
/// CD-ROM), the console on the first serial port (where `-nographic` put it before
/// `-nodefaults`) and no option ROM on the template's network card (iPXE, also run emulated).
/// A direct boot has none of them either: they made a job's guest about 0.4 s slower here
/// (median of 5 interleaved QEMU runs from start to power-off, 10.34 s against 9.93 s).
pub(super) fn extra_options(m: &qemu::Machine) -> Vec<String> {
    let mut o = vec![
        "-nodefaults".to_string(),
        "-serial mon:stdio".into(),
        "-global virtio-net-pci.romfile=".into(),
        "-accel tcg".into(),
        "-cpu max".into(),
        format!("-smp {}", m.cpus),
        "-no-reboot".into(),
    ];
    if let Some(shift) = m.icount {
        o.push(format!("-icount shift={shift},sleep=off"));
    }
    o
}

/// QEMU's options that make the socket at `path` the guest's second serial port, after the
/// console's (see [`extra_options`]).
pub(super) fn counts_port_options(path: &str) -> [String; 2] {
    [
        format!("-chardev socket,id=syscost,path={path},server=on,wait=off"),
        "-serial chardev:syscost".into(),
    ]
}
