//! Booting kernels to measure inside them, as campaigns and bisections both do: the plan of
//! what every boot shares ([`plan`]), what is refused before anything boots ([`checks`]), the
//! record of one boot ([`record`]), the schedule of rounds and retries every way to boot
//! shares ([`schedule`]), one way from a plan to its booter ([`start`]), and the ways to boot:
//! QEMU ([`qemu`]), LAVA jobs ([`lava`], on the
//! one device [`pin`] chooses when they must stay on one; kexec's is the campaign's own, one
//! boot per process, over the same schedule). A campaign boots the schedule's rounds; a
//! bisection boots the slots its search chooses.

pub mod checks;
pub mod emulated;
pub mod kept;
pub mod lava;
pub mod pin;
pub mod plan;
pub mod qemu;
pub mod record;
pub mod schedule;
pub mod start;

pub use lava::{JobEvent, LavaBooter, LavaRun, PendingJob};
pub use plan::{Arm, Backend, BootPlan, LavaTarget, Needed, Served};
pub use qemu::{ArmEntry, Booter};
pub use record::{BootRecord, BootSplit, Outcome};
