//! An aged slab under a guest's audit rule entries.
//!
//! A freshly booted kernel's SLUB hands a burst of `struct audit_entry` allocations whole
//! kmalloc-512 slabs, so 42 entries spread evenly over the 8 L1d sets an object's first line
//! can reach, and nothing crowds. The syscall-latency post found its entries crowded after
//! uptime: a long-running machine's slabs are full of holes left by objects freed in whatever
//! order its work freed them, and new entries fill those holes. [`age`] makes such holes
//! before the rules load, with the entries' own cache and allocation path: it adds `objects`
//! filler exit rules (never matching: a syscall nothing benchmarks, an impossible pid), then
//! deletes a random half of them in a seeded random order and waits for RCU to free them.
//! The rules then load into the holes; the other fillers are deleted after
//! ([`Fillers::delete`]), so only the rules are walked while measuring. What was done is
//! kept in the boot's result ([`Aged`]), with how many entries took a freed filler's slot.

use super::AuditSocket;
pub(crate) use super::addresses::Aged;
use super::rules::{self, ACTION_ALWAYS, FIELD_ARCH, FIELD_PID, FILTER_EXIT};
use anyhow::{Context, Result};
use rand::SeedableRng;
use rand::seq::SliceRandom;

/// The system call filler rules name: nothing syscost measures calls it.
const FILLER_SYSCALL: u32 = libc::SYS_acct as u32;
/// The fillers' key (the kernel refuses an empty one).
const FILLER_KEY: &str = "syscost-aged-slab";
/// How long the deleted fillers are given to be freed: audit deletes an entry with call_rcu,
/// so it is freed after a grace period, which an idle guest passes in milliseconds.
const RCU_WAIT: std::time::Duration = std::time::Duration::from_millis(500);
/// The most fillers asked for (each is a rule the kernel walks while the rest are added).
pub(crate) const MAX_OBJECTS: usize = 65_536;

/// The fillers still in the kernel while the rules load.
#[derive(Debug, Default)]
pub(crate) struct Fillers {
    kept: Vec<Vec<u8>>,
    /// The freed fillers' entry addresses, when kernel memory can be read.
    freed_at: Option<Vec<u64>>,
    pub aged: Aged,
}

/// Age the slab audit's entries come from: `objects` fillers added, a random half (drawn
/// from `seed`) deleted, and a pause for them to be freed. The kernel must have no exit
/// rules of its own yet (a guest after its rules file's `-D`).
pub(crate) fn age(sock: &mut AuditSocket, objects: usize, seed: u64) -> Result<Fillers> {
    let mut all = Vec::with_capacity(objects);
    for i in 0..objects {
        let r = filler(i);
        sock.add_rule(&r)
            .with_context(|| format!("ageing the slab: filler rule {} of {objects}", i + 1))?;
        all.push(r);
    }
    let addresses = super::addresses::exit_rule_addresses().ok();
    let mut order: Vec<usize> = (0..objects).collect();
    order.shuffle(&mut rand_pcg::Pcg64::seed_from_u64(seed));
    let (freed, kept) = order.split_at(objects / 2);
    for &i in freed {
        sock.del_rule(&all[i])
            .context("ageing the slab: deleting a filler rule")?;
    }
    std::thread::sleep(RCU_WAIT);
    Ok(Fillers {
        kept: kept.iter().map(|&i| all[i].clone()).collect(),
        // The list holds the fillers in the order they were added.
        freed_at: addresses
            .filter(|a| a.len() == objects)
            .map(|a| freed.iter().map(|&i| a[i]).collect()),
        aged: Aged {
            objects,
            freed: freed.len(),
            seed,
            reused: None,
        },
    })
}

impl Fillers {
    /// Delete the fillers left.
    pub(crate) fn delete(&mut self, sock: &mut AuditSocket) -> Result<()> {
        while let Some(r) = self.kept.pop() {
            sock.del_rule(&r)
                .context("ageing the slab: deleting a filler rule")?;
        }
        Ok(())
    }

    /// What was done, with how many of `entries` (the rules' addresses) took a freed filler's
    /// slot.
    pub(crate) fn aged(&self, entries: &[u64]) -> Aged {
        Aged {
            reused: self
                .freed_at
                .as_ref()
                .map(|f| entries.iter().filter(|e| f.contains(e)).count()),
            ..self.aged.clone()
        }
    }

    /// Delete what is left, errors ignored (on an error path).
    pub(crate) fn forget(&mut self, sock: &mut AuditSocket) {
        while let Some(r) = self.kept.pop() {
            let _ = sock.del_rule(&r);
        }
    }
}

/// Filler `i`: an exit rule on a syscall nothing measures, failing on a pid no task has (a
/// distinct one each, or the kernel refuses a duplicate).
fn filler(i: usize) -> Vec<u8> {
    let mut fields = Vec::new();
    if let Some(a) = rules::native_arch() {
        fields.push((FIELD_ARCH, a));
    }
    fields.push((FIELD_PID, super::session::IMPOSSIBLE_PID - i as u32));
    rules::encode(
        FILTER_EXIT,
        ACTION_ALWAYS,
        &[FILLER_SYSCALL],
        &fields,
        FILLER_KEY,
    )
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn fillers_are_distinct_and_never_match_a_task() {
        let a = filler(0);
        assert_ne!(a, filler(1));
        for i in [0, MAX_OBJECTS - 1] {
            let r = rules::Rule::decode(&filler(i)).unwrap();
            assert!(r.names_syscall(FILLER_SYSCALL));
            let pid = r.fields().iter().find(|f| f.0 == FIELD_PID).unwrap().2;
            assert!(pid > 1 << 22, "above PID_MAX_LIMIT: {pid}");
        }
    }
}
