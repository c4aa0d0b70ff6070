//! Where syscost keeps what outlives a process, one resolver for all: the XDG base
//! directories (`$XDG_CACHE_HOME`, `$XDG_STATE_HOME`, `$XDG_DATA_HOME`, a relative one
//! ignored as the specification says, else their defaults under the home directory), read by
//! the `dirs` crate, each with `syscost/` under it. The end-to-end tests keep their campaigns'
//! and bisections' state under an `XDG_STATE_HOME` of their own through it.

use std::path::PathBuf;

/// What is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kept {
    /// What can be made again (kernel builds): `~/.cache/syscost`.
    Cache,
    /// What a run in progress needs to go on (campaigns, bisections): `~/.local/state/syscost`.
    State,
    /// What the user keeps (the history): `~/.local/share/syscost`.
    Data,
}

/// syscost's directory of `kept`, or `None` when there is no home directory to keep it under.
pub(crate) fn syscost_dir(kept: Kept) -> Option<PathBuf> {
    let base = match kept {
        Kept::Cache => dirs::cache_dir(),
        Kept::State => dirs::state_dir(),
        Kept::Data => dirs::data_dir(),
    };
    base.map(|b| b.join("syscost"))
}
