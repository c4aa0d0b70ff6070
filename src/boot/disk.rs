//! A fresh disk for each QEMU boot to measure on (`campaign --guest-disk`): the 2015
//! function-alignment RFC ran its VFS-mix loop on ext4, where every iteration goes through the
//! journal, the block layer and a disk driver, which tmpfs (the guest's own file systems)
//! never reaches.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file system of the disk each guest gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum GuestDisk {
    /// ext4 as mkfs.ext4 makes it by default (journal, extents), with its inode tables and
    /// journal written on this machine, so no lazy initialisation runs in the guest.
    Ext4,
}

/// The disk's size: room for any scratch file the workloads make, and a default journal.
pub(crate) const SIZE: u64 = 256 << 20;

impl GuestDisk {
    /// Make the disk as a sparse raw image at `image`.
    pub(crate) fn make(self, image: &Path) -> Result<()> {
        let file = std::fs::File::create(image)
            .with_context(|| format!("cannot create {}", image.display()))?;
        file.set_len(SIZE)?;
        let out = std::process::Command::new("mkfs.ext4")
            .args(["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"])
            .arg(image)
            .output()
            .context("cannot run mkfs.ext4 (e2fsprogs)")?;
        if !out.status.success() {
            bail!(
                "mkfs.ext4 {} failed: {}",
                image.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    /// The image is ext4, whole (e2fsck finds nothing to fix) and sparse.
    #[test]
    fn the_disk_is_a_clean_sparse_ext4_image() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("disk.img");
        GuestDisk::Ext4.make(&image).unwrap();
        let check = std::process::Command::new("e2fsck")
            .args(["-f", "-n"])
            .arg(&image)
            .output()
            .unwrap();
        assert!(check.status.success(), "{check:?}");
        let meta = std::fs::metadata(&image).unwrap();
        assert_eq!(meta.len(), SIZE);
        use std::os::unix::fs::MetadataExt;
        assert!(
            meta.blocks() * 512 < SIZE / 4,
            "sparse: {} blocks",
            meta.blocks()
        );
    }
}
