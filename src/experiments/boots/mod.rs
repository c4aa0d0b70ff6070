//! Booting kernels to measure inside them, as campaigns and bisections both do: the plan of
//! what every boot shares ([`plan`]), what is refused before anything boots ([`checks`]), the
//! record of one boot ([`record`]), the schedule of rounds and retries every way to boot
//! shares ([`schedule`]), one way from a plan to its booter ([`start`]), and the ways to boot:
//! QEMU ([`qemu`]), LAVA jobs ([`lava`], on the one device [`pin`] chooses when they must
//! stay on one) and this machine by kexec ([`kexec`]: one boot per process, over the same
//! schedule). A campaign boots the schedule's rounds; a
//! bisection boots the slots its search chooses.

pub(crate) mod ask;
pub(crate) mod checks;
pub(crate) mod emulated;
pub(crate) mod kept;
pub(crate) mod kexec;
pub mod lava;
pub(crate) mod life;
pub(crate) mod pin;
pub(crate) mod plan;
pub(crate) mod profile;
pub(crate) mod qemu;
pub(crate) mod record;
pub(crate) mod saved;
pub(crate) mod schedule;
pub(crate) mod start;
mod ticked;

pub(crate) use lava::{JobEvent, LavaBooter, LavaRun, PendingJob};
pub(crate) use plan::{Arm, Backend, BootPlan, LavaTarget, Needed, PlaceEach, Served};
pub(crate) use qemu::{ArmEntry, Booter};
pub(crate) use record::{BootRecord, BootSplit, Outcome};
