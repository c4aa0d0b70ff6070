//! The composite experiments: commands that combine the runner, comparisons and the kernel
//! mechanisms into one measurement design.
//!
//! - [`ab`]: two or more configurations measured interleaved, then compared;
//! - [`campaign`]: kernels booted in QEMU round after round, measured inside each boot and
//!   compared with boots as units (the audit series' 4 kernels x 12 boots);
//! - [`bisect`]: the first build in an ordered list where a figure changed, booted in QEMU
//!   with boots as units (the boots chosen by the search);
//! - [`boots`]: what campaigns and bisections share to boot kernels and measure inside them:
//!   the plan, the checks, the record of a boot, the schedule of rounds and retries, QEMU;
//! - [`audit_sweep`]: audit off, on, and with each number of exit rules (the syscall-latency
//!   post and the audit series);
//! - [`rule_costs`]: what each rule of a rules file costs, from an audit sweep over its rules;
//! - [`grouped`]: stored results grouped by kernel, host, boot or label, for `history compare`
//!   and `history trend`;
//! - [`probe`]: a uprobe on any program's function while a command runs (the uprobe thread's
//!   Redis case);
//! - [`scale`]: a throughput workload over thread counts (the uprobe thread's tables);
//! - [`reproduce`]: a public investigation repeated by a campaign, its tables cell by cell
//!   beside syscost's figures.

pub(crate) mod ab;
pub mod audit_sweep;
pub mod bisect;
pub mod boots;
pub(crate) mod campaign;
pub(crate) mod grouped;
pub(crate) mod probe;
pub(crate) mod reproduce;
pub(crate) mod rule_costs;
pub(crate) mod scale;
