//! The composite experiments: commands that combine the runner, comparisons and the kernel
//! mechanisms into one measurement design.
//!
//! - [`ab`]: two or more configurations measured interleaved, then compared;
//! - [`audit_sweep`]: audit off, on, and with each number of exit rules (seeds 000/003/004);
//! - [`probe`]: a uprobe on any program's function while a command runs (seed 002's Redis case);
//! - [`scale`]: a throughput workload over thread counts (seed 002's tables).

pub mod ab;
pub mod audit_sweep;
pub mod probe;
pub mod scale;
