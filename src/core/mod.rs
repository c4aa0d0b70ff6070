//! The ground floor: small things every other module may use, importing nothing of the crate.
//!
//! - [`cpus`]: CPU lists in taskset syntax, and affinity; [`caches`]: the CPU's caches;
//! - [`num`]: numbers as the tables print them;
//! - [`files`]: atomic file writing;
//! - [`envelope`]: the header every result file carries (schema, version, kind, tool);
//! - [`perf`]: two facts about perf_event_open on this machine.

pub mod caches;
pub mod cpus;
pub mod envelope;
pub mod files;
pub mod limits;
pub mod num;
pub mod perf;

pub use cpus::CpuList;
pub use envelope::{Envelope, Kind, SCHEMA, ToolInfo, VERSION, now_unix};
pub use files::{check_writable, write_atomic};
pub use num::{fmt_num, fmt_p, plural};
