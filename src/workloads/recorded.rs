//! The workload of a result read back from a file or the history: a [`WorkloadSpec`] this
//! version knows, or the JSON a file of another version wrote, kept as it was so it can still
//! be named, compared for equality and written back unchanged.

use super::WorkloadSpec;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RecordedWorkload {
    Known(WorkloadSpec),
    Foreign(serde_json::Value),
}

impl RecordedWorkload {
    /// A one-line description: a known workload's, else the JSON as written.
    pub(crate) fn describe(&self) -> String {
        match self {
            RecordedWorkload::Known(w) => w.describe(),
            RecordedWorkload::Foreign(v) => v.to_string(),
        }
    }

    /// What one operation is, in a few words: a known workload's (see `Spec::case_label`),
    /// else its registry name.
    pub(crate) fn case_label(&self) -> String {
        match self {
            RecordedWorkload::Known(w) => w.case_label(),
            RecordedWorkload::Foreign(_) => self.name().unwrap_or("workload").to_string(),
        }
    }

    /// The workload's registry name (`syscall`, `exec`), when the file gives one.
    pub(crate) fn name(&self) -> Option<&str> {
        match self {
            RecordedWorkload::Known(w) => Some(w.name()),
            RecordedWorkload::Foreign(v) => v.get("workload").and_then(|w| w.as_str()),
        }
    }

    /// The workload this version knows, if it is one.
    pub(crate) fn known(&self) -> Option<&WorkloadSpec> {
        match self {
            RecordedWorkload::Known(w) => Some(w),
            RecordedWorkload::Foreign(_) => None,
        }
    }

    /// Its parameters as JSON (to say which differ between two results).
    pub(crate) fn json(&self) -> serde_json::Value {
        match self {
            RecordedWorkload::Known(w) => serde_json::to_value(w).unwrap_or_default(),
            RecordedWorkload::Foreign(v) => v.clone(),
        }
    }
}

impl From<WorkloadSpec> for RecordedWorkload {
    fn from(w: WorkloadSpec) -> RecordedWorkload {
        RecordedWorkload::Known(w)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn known_workloads_are_typed_and_others_kept_as_written() {
        let known: RecordedWorkload =
            serde_json::from_str(r#"{"workload": "syscall", "syscall": "getppid"}"#).unwrap();
        assert!(known.known().is_some());
        assert_eq!(known.name(), Some("syscall"));
        let text = r#"{"factor":9,"workload":"warp-drive"}"#;
        let foreign: RecordedWorkload = serde_json::from_str(text).unwrap();
        assert_eq!(foreign.known(), None);
        assert_eq!(foreign.name(), Some("warp-drive"));
        assert_eq!(foreign.describe(), text);
        assert_eq!(serde_json::to_string(&foreign).unwrap(), text);
        assert_ne!(known, foreign);
    }
}
