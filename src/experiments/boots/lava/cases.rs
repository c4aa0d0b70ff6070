//! A boot's figures as LAVA test cases, which the guest's init reports in a lab.

use super::*;

/// What the guest's init is given to report in a lab: its figures as test cases, and when the
/// plugin's windows it has received are all of its batches' (it stops waiting for more then).
pub const LAB_CASES: crate::boot::guest::LabCases = crate::boot::guest::LabCases {
    cases,
    complete: |result, windows| {
        !windows.is_empty()
            && serde_json::from_slice(result)
                .is_ok_and(|v| super::super::emulated::joins(&v, windows))
    },
};

/// A boot's figures as LAVA test cases: each figure of its result, the value a campaign takes
/// of it (the median over its runs or samples), named by the arm, the operation and the
/// figure (`old_syscall_getpid_task_clock`), with the plugin's exact counts joined from
/// `windows` (`old_syscall_getpid_instructions_emulated`: the figure such a campaign compares
/// by). The guest's init sends them ([`LAB_CASES`]).
pub(crate) fn cases(result: &[u8], windows: &[Window]) -> Vec<Case> {
    let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(result) else {
        return Vec::new();
    };
    if !windows.is_empty() {
        super::super::emulated::join(&mut value, windows, None);
    }
    let Ok(decoded) = Decoded::of("this boot", &value) else {
        return Vec::new();
    };
    let cmdline = value["environment"]["cmdline"].as_str().unwrap_or("");
    let arm = crate::boot::guest::param(cmdline, crate::boot::guest::ARM_PARAM).unwrap_or("");
    let what = decoded.view.workload.case_label();
    (decoded.view.metrics.iter())
        .filter(|m| !m.values.is_empty())
        .map(|m| {
            let value = crate::stats::median(&m.values);
            Case::of(arm, &what, &m.name, value, &m.unit)
        })
        .collect()
}
