//! End-to-end: the history in a real PostgreSQL server (Debian's postgresql package, installed
//! by scripts/test.sh): initdb into a temporary directory, the server listening on a Unix
//! socket there only, stopped at the end. Two writers record as two hosts at once, then
//! `history compare --by host` reads what both wrote; a password is never printed.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

crate::tests! {
    Shared two_hosts_record_into_one_postgresql_store_and_are_compared,
}

/// Debian's PostgreSQL programs, the newest version installed.
fn pg_bin() -> Option<PathBuf> {
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("bin")))
        .filter(|b| b.join("initdb").exists())
        .collect();
    versions.sort();
    versions.pop()
}

/// The uid and gid of a user, from /etc/passwd.
fn user(name: &str) -> Option<(u32, u32)> {
    std::fs::read_to_string("/etc/passwd")
        .ok()?
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&name) && f.len() > 3)
        .and_then(|f| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
}

/// A PostgreSQL server of its own, stopped (fast shutdown) when dropped.
struct Server {
    child: Child,
    _dir: tempfile::TempDir,
    socket_dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: SIGINT (fast shutdown) to our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let _ = self.child.wait();
    }
}

fn start_server(bin: &Path, (uid, gid): (u32, u32)) -> Server {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
    let data = dir.path().join("data");
    let out = Command::new(bin.join("initdb"))
        .args(["--auth=trust", "-U", "syscost", "-D"])
        .arg(&data)
        .current_dir(dir.path())
        .uid(uid)
        .gid(gid)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "initdb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let child = Command::new(bin.join("postgres"))
        .arg("-D")
        .arg(&data)
        .arg("-k")
        .arg(dir.path())
        .args(["-c", "listen_addresses="])
        .current_dir(dir.path())
        .uid(uid)
        .gid(gid)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let socket_dir = dir.path().to_path_buf();
    let server = Server {
        child,
        _dir: dir,
        socket_dir,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while !server.socket_dir.join(".s.PGSQL.5432").exists() {
        assert!(
            Instant::now() < deadline,
            "the PostgreSQL server did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The socket appears a moment before connections are accepted.
    std::thread::sleep(Duration::from_millis(300));
    server
}

fn two_hosts_record_into_one_postgresql_store_and_are_compared() {
    let (Some(bin), Some(pg_user)) = (pg_bin(), user("postgres")) else {
        skip("PostgreSQL is not installed (scripts/test.sh installs postgresql)");
        return;
    };
    if !is_root() {
        skip("starting a PostgreSQL server as its own user needs root");
        return;
    }
    let server = start_server(&bin, pg_user);
    let url = format!(
        "postgresql:///postgres?host={}&user=syscost",
        server.socket_dir.display()
    );

    // Results of two hosts: one real run, relabelled; lab-b 10% slower, 5 boots each.
    let dir = tempfile::tempdir().unwrap();
    let base = quick_run();
    let mut writers = Vec::new();
    for (host, factor) in [("lab-a", 1.0), ("lab-b", 1.1)] {
        let mut files = Vec::new();
        for b in 0..5 {
            let boot_id = format!("{host}-{b}");
            let boot = 1.0 + 0.002 * b as f64;
            let r = relabelled(
                &base,
                &[("hostname", host), ("boot_id", &boot_id)],
                factor * boot,
            );
            let f = dir.path().join(format!("{host}-{b}.json"));
            std::fs::write(&f, r.to_string()).unwrap();
            files.push(f);
        }
        writers.push(
            Command::new(assert_cmd::cargo::cargo_bin!("syscost"))
                .args(["history", "--history", &url, "import", "--tag", "lab=t"])
                .args(&files)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
    }
    for w in writers {
        let out = w.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = syscost()
        .args([
            "history",
            "--history",
            &url,
            "compare",
            "--by",
            "host",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let labels: Vec<&str> = c["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
    assert!(labels.contains(&"lab-a") && labels.contains(&"lab-b"));
    let time = c["deltas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["metric"] == "time")
        .unwrap();
    let slower = if labels[0] == "lab-a" {
        "slower"
    } else {
        "faster"
    };
    assert_eq!(time["decision"], slower, "{time}");
    // Every result is there, with its tag, and comes back whole.
    let out = syscost()
        .args([
            "history",
            "--history",
            &url,
            "list",
            "--tag",
            "lab=t",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let all: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 10);
    let id = all[0]["id"].as_i64().unwrap().to_string();
    let out = syscost()
        .args([
            "history",
            "--history",
            &url,
            "show",
            &id,
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());

    // A refused connection names the problem and never the password.
    let secret = format!(
        "postgresql:///nosuchdb?host={}&user=syscost&password=hunter2",
        server.socket_dir.display()
    );
    let err = refused(&["history", "--history", &secret, "list"], "cannot connect");
    assert!(
        !err.contains("hunter2") && err.contains("password=***"),
        "{err}"
    );
    assert!(err.contains("nosuchdb"), "{err}");
    // A measurement whose store refuses still prints its result, with a warning.
    let out = syscost()
        .args([
            "run",
            "syscall",
            "--runs",
            "2",
            "--samples",
            "2",
            "--sample-time",
            "5ms",
        ])
        .args(["--json", "--history", "postgres://u:hunter2@127.0.0.1:1/x"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("was not recorded") && !err.contains("hunter2"),
        "{err}"
    );
    assert!(serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok());
    refused(
        &["history", "--history", "postgres://[", "list"],
        "not a PostgreSQL URL",
    );
}
