//! The one device a LAVA run's jobs stay on: timed boots compared across devices would
//! measure the devices. LAVA 2023.01 sends a job to one device only by a tag that device alone
//! has; from 2026.07 on a job may name its device (`device:`), and any device can be pinned.

use super::plan::{LavaTarget, Pin};
use crate::boot::lava::{Device, Health, Lab};
use crate::core::input::{Opt, spelled};
use anyhow::{Context, Result, bail};

/// Choose, before the first job, the one device a run's jobs stay on: the one asked for, or
/// for timed boots (whose arms compared across devices would measure the devices) the first
/// of the type, by name, that is in good health and has a tag of its own. Exact counts do not
/// depend on the device: without a device asked for, they go to any. A pin chosen before (a
/// resumed run) is kept; its device must still be there with its tag.
pub(crate) fn place(target: &mut LavaTarget, lab: &Lab) -> Result<()> {
    let timed = !target.machine.emulated_counters;
    if target.pin.is_none() && target.device.is_none() && !timed {
        return Ok(());
    }
    let by_name = lab.check()?.takes_device_key();
    let devices = lab.devices(&target.device_type)?;
    let ty = &target.device_type;
    if let Some(pin) = &target.pin {
        let there = devices.iter().find(|d| d.hostname == pin.device);
        let tagged = |d: &&Device| pin.tag.as_ref().is_none_or(|t| d.tags.contains(t));
        let Some(d) = there.filter(tagged) else {
            bail!(
                "this run's jobs stay on LAVA device {}{}, which the lab no longer has as a {ty} \
                 device with that tag: its boots cannot go on elsewhere (abort it, and start \
                 again)",
                pin.device,
                pin.tag
                    .as_ref()
                    .map_or(String::new(), |t| format!(" (tag {t})"))
            );
        };
        let e = unhealthy(&d.hostname, d.health, "this run's jobs stay on it");
        return e.map_or(Ok(()), Err);
    }
    let pin = pin_of(&devices, target.device.as_deref(), ty, by_name)?;
    eprintln!(
        "syscost: every job on LAVA device {}{}",
        pin.device,
        match (&pin.tag, by_name) {
            (_, true) => " (named in each job)".to_string(),
            (Some(t), false) => format!(" (its tag {t})"),
            (None, false) => format!(", the only {ty} device"),
        }
    );
    target.pin = Some(pin);
    Ok(())
}

/// The device `wanted` (else the first in good health, by name) with a tag no other device of
/// the type has; a type of one device needs none, nor does any device when jobs name their
/// device (`by_name`).
fn pin_of(devices: &[Device], wanted: Option<&str>, ty: &str, by_name: bool) -> Result<Pin> {
    let own = |d: &Device| {
        (d.tags.iter())
            .find(|t| {
                devices
                    .iter()
                    .all(|o| o.hostname == d.hostname || !o.tags.contains(t))
            })
            .cloned()
    };
    // A device needs no tag of its own when it is the type's only one or jobs name it.
    let untagged = devices.len() == 1 || by_name;
    let pin = |d: &Device| match (own(d), untagged) {
        (Some(t), _) => Some(Pin {
            device: d.hostname.clone(),
            tag: Some(t),
        }),
        (None, true) => Some(Pin {
            device: d.hostname.clone(),
            tag: None,
        }),
        (None, false) => None,
    };
    let names = || {
        let n: Vec<&str> = devices.iter().map(|d| d.hostname.as_str()).collect();
        n.join(", ")
    };
    if let Some(name) = wanted {
        let d = (devices.iter().find(|d| d.hostname == name)).with_context(|| {
            let has = names();
            crate::refused!(
                Opt::LavaDevice,
                format!(" {name}: the lab has no such {ty} device (it has {has})")
            )
        })?;
        let what = crate::said!(Opt::LavaDevice, " ", name).spell(spelled);
        if let Some(e) = unhealthy(name, d.health, &what) {
            return Err(e);
        }
        return pin(d).with_context(|| {
            crate::refused!(
                Opt::LavaDevice,
                format!(
                    " {name}: LAVA sends a job to one device only by a tag that device alone \
                     has, and every tag of {name} is on another {ty} device too: give it a tag \
                     of its own (its page in the lab's Django admin site, /admin/)"
                )
            )
        });
    }
    let mut sorted: Vec<&Device> = devices.iter().collect();
    sorted.sort_by(|a, b| a.hostname.cmp(&b.hostname));
    // Good devices first, then those not checked yet: the others take no job.
    [Health::Good, Health::Unknown]
        .iter()
        .flat_map(|h| sorted.iter().filter(move |d| d.health == *h))
        .find_map(|d| pin(d))
        .with_context(|| {
            crate::refused!(
                format!(
                    "timed boots must stay on one device (an arm compared across devices would \
                     measure the devices), and LAVA sends a job to one device only by a tag that \
                     device alone has: none of the {ty} devices ({}) both takes jobs and has \
                     one. Give one a tag of its own and name it with ",
                    names()
                ),
                Opt::LavaDevice,
                ", or count exactly (",
                Opt::EmulatedCounters,
                "), which any device may do"
            )
        })
}

/// Why jobs cannot go to device `name` (`what` says who sends them), when its health keeps
/// the scheduler from it: they would wait in the queue until the queue limit.
pub(crate) fn unhealthy(name: &str, health: Health, what: &str) -> Option<anyhow::Error> {
    (!health.takes_jobs()).then(|| {
        anyhow::anyhow!(
            "{what}: LAVA device {name} is in {health} health, and the lab schedules no job on \
             it (each would wait out the queue limit): ask the lab's admins to put it back, or \
             name another device"
        )
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    fn device(name: &str, health: &str, tags: &[&str]) -> Device {
        Device {
            hostname: name.into(),
            health: serde_json::from_value(serde_json::json!(health)).unwrap(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
        }
    }

    fn pin(device: &str, tag: Option<&str>) -> Pin {
        Pin {
            device: device.into(),
            tag: tag.map(String::from),
        }
    }

    #[test]
    fn timed_boots_stay_on_the_first_healthy_device_with_a_tag_of_its_own() {
        let lab = [
            device("pc-3", "Good", &["rack", "pc-3"]),
            device("pc-1", "Bad", &["rack", "pc-1"]),
            device("pc-2", "Good", &["rack", "skylake"]),
            device("pc-4", "Good", &["rack", "skylake"]),
        ];
        // pc-1 is first by name but in bad health; pc-2's tags are shared.
        assert_eq!(
            pin_of(&lab, None, "x86", false).unwrap(),
            pin("pc-3", Some("pc-3"))
        );
        let e = pin_of(&lab, Some("pc-1"), "x86", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--lava-device pc-1: LAVA device pc-1 is in Bad health"),
            "a device asked for is refused when the lab schedules nothing on it: {e}"
        );
        let e = pin_of(&lab, Some("pc-2"), "x86", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("every tag of pc-2 is on another x86 device"),
            "{e}"
        );
        // LAVA 2026.07 takes the device by name: a device without a tag of its own will do.
        let p = pin_of(&lab, Some("pc-2"), "x86", true).unwrap();
        assert_eq!(p.device, "pc-2");
        let e = pin_of(&lab, Some("pc-9"), "x86", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no such x86 device (it has pc-3, pc-1, pc-2, pc-4)"),
            "{e}"
        );
    }

    #[test]
    fn a_type_of_one_device_needs_no_tag_and_untagged_devices_are_refused() {
        let one = [device("only", "Good", &[])];
        assert_eq!(
            pin_of(&one, None, "qemu", false).unwrap(),
            pin("only", None)
        );
        let two = [device("a", "Good", &["lab"]), device("b", "Good", &["lab"])];
        let e = pin_of(&two, None, "qemu", false).unwrap_err().to_string();
        assert!(
            e.contains("none of the qemu devices (a, b) both takes jobs and has one"),
            "{e}"
        );
        assert!(e.contains("--lava-device"), "{e}");
        // Only unhealthy devices with tags of their own: the first of them, by name.
        let bad = [device("y", "Bad", &["y"]), device("x", "Unknown", &["x"])];
        assert_eq!(
            pin_of(&bad, None, "x86", false).unwrap(),
            pin("x", Some("x"))
        );
        // None that takes jobs: refused, not waited for.
        let out = [
            device("y", "Bad", &["y"]),
            device("x", "Maintenance", &["x"]),
        ];
        assert!(pin_of(&out, None, "x86", false).is_err());
        let e = unhealthy("x", out[1].health, "w").unwrap().to_string();
        assert!(e.contains("LAVA device x is in Maintenance health"), "{e}");
        assert!(unhealthy("x", bad[1].health, "w").is_none());
    }
}
