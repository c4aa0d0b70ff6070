//! mount(2) and umount2(2) for a guest's init, which mounts what a measurement needs itself
//! (no mount binary in the initramfs).

use anyhow::Result;

/// Mount `what` of type `fs` on `dir`, with no mount data.
pub(crate) fn mount(what: &str, dir: &str, fs: &str, flags: libc::c_ulong) -> Result<()> {
    let c = |s: &str| std::ffi::CString::new(s).expect("no NUL in a mount argument");
    let (what, dir_c, fs) = (c(what), c(dir), c(fs));
    // SAFETY: the strings live across the call; no mount data is passed.
    let rc = unsafe {
        libc::mount(
            what.as_ptr(),
            dir_c.as_ptr(),
            fs.as_ptr(),
            flags,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(())
}

/// Detach what is mounted on `dir`, if anything (lazily: nothing of this process uses it).
pub(crate) fn unmount(dir: &str) {
    let dir = std::ffi::CString::new(dir).expect("no NUL in a mount point");
    // SAFETY: a path that lives across the call.
    unsafe { libc::umount2(dir.as_ptr(), libc::MNT_DETACH) };
}
