//! What to tell the user when an operation fails because a resource limit was reached: the
//! limit's name, its `ulimit` flag and its current value, so the message says what to raise.

use std::io;

/// ` (…: raise it …)` when `err` means a limit was hit, else an empty string. `creating` says
/// the failed call creates a process or thread, where EAGAIN means RLIMIT_NPROC.
pub(crate) fn hint(err: &io::Error, creating: bool) -> String {
    match err.raw_os_error() {
        Some(libc::EMFILE) => format!(
            ": the limit on open files, RLIMIT_NOFILE (ulimit -n), is {}: raise it",
            soft(libc::RLIMIT_NOFILE)
        ),
        Some(libc::ENFILE) => {
            ": the system's open-file table is full (sysctl fs.file-max): close files or raise it"
                .into()
        }
        Some(libc::EAGAIN) if creating => format!(
            ": the limit on processes and threads of this user, RLIMIT_NPROC (ulimit -u), is {}: \
             raise it or end other processes of the user",
            soft(libc::RLIMIT_NPROC)
        ),
        _ => String::new(),
    }
}

/// The soft limit, as `ulimit` prints it.
fn soft(resource: libc::__rlimit_resource_t) -> String {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    if unsafe { libc::getrlimit(resource, &mut r) } != 0 {
        return "unknown".into();
    }
    if r.rlim_cur == libc::RLIM_INFINITY {
        "unlimited".into()
    } else {
        r.rlim_cur.to_string()
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn limits_are_named_with_their_values() {
        let emfile = hint(&io::Error::from_raw_os_error(libc::EMFILE), false);
        assert!(
            emfile.contains("RLIMIT_NOFILE (ulimit -n), is "),
            "{emfile}"
        );
        let eagain = hint(&io::Error::from_raw_os_error(libc::EAGAIN), true);
        assert!(eagain.contains("RLIMIT_NPROC (ulimit -u)"), "{eagain}");
        // EAGAIN from anything but process creation is not a limit.
        assert_eq!(hint(&io::Error::from_raw_os_error(libc::EAGAIN), false), "");
        assert_eq!(hint(&io::Error::from_raw_os_error(libc::ENOENT), true), "");
    }
}
