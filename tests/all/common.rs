//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

use assert_cmd::Command;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// Set by scripts/test.sh (and so in CI): a test whose prerequisite is missing fails, naming
/// what to install, instead of skipping. A contributor's plain `cargo test` still skips.
pub const REQUIRE_ENV: &str = "SYSCOST_TEST_REQUIRE_ALL";

/// A test cannot run here for `reason` (a package, a privilege or a kernel feature missing):
/// it says so and the caller returns; under scripts/test.sh ([`REQUIRE_ENV`]) the test fails.
pub fn skip(reason: impl std::fmt::Display) {
    if std::env::var_os(REQUIRE_ENV).is_some() {
        panic!(
            "a prerequisite is missing ({REQUIRE_ENV} is set, as scripts/test.sh sets it): \
             {reason}"
        );
    }
    println!("skipped: {reason}");
}

/// How a test shares this machine: [`Lock::Serial`] for one that times this machine or changes
/// its kernel state, which runs alone; [`Lock::Shared`] for every other (guests whose exact
/// counts the host's load does not move, analyses, refusals), which run beside each other.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Lock {
    Serial,
    Shared,
}

/// One end-to-end test: its name (`area::function`), how it shares the machine, its body.
pub struct Test {
    pub name: String,
    pub lock: Lock,
    pub body: fn(),
}

/// A module's tests, each with its [`Lock`] (`Serial name` or `Shared name`), in the order
/// the shared phase should start them (longest first: see [`run`]).
#[macro_export]
macro_rules! tests {
    ($($lock:ident $name:ident),* $(,)?) => {
        pub fn tests() -> Vec<$crate::common::Test> {
            let area = module_path!().rsplit("::").next().unwrap_or("?");
            vec![$($crate::common::Test {
                name: format!("{area}::{}", stringify!($name)),
                lock: $crate::common::Lock::$lock,
                body: $name,
            }),*]
        }
    };
}

/// Runs `tests` as libtest would, with its arguments from the command line (filters, --skip,
/// --list, --exact, --test-threads), in two phases: every serial test alone, one after
/// another, then the shared ones beside each other on --test-threads threads (default: one per
/// CPU), started in the order given. libtest's own harness starts tests in name order on a
/// fixed number of threads, so a serial test picked up beside a long guest test held a thread
/// idle for the whole of it (549 s of a 957 s run here); libtest-mimic lets the order and the
/// phases be chosen.
pub fn run(tests: Vec<Test>) -> std::process::ExitCode {
    let (args, filters) = arguments(std::env::args().skip(1));
    let chosen = |t: &Test| {
        filters.is_empty()
            || filters.iter().any(|f| match args.exact {
                true => t.name == *f,
                false => t.name.contains(f.as_str()),
            })
    };
    let (serial, shared): (Vec<Test>, Vec<Test>) =
        (tests.into_iter().filter(chosen)).partition(|t| t.lock == Lock::Serial);
    let alone = libtest_mimic::Arguments {
        test_threads: Some(1),
        ..args.clone()
    };
    let first = libtest_mimic::run(&alone, trials(serial));
    let second = libtest_mimic::run(&args, trials(shared));
    if first.has_failed() || second.has_failed() {
        std::process::ExitCode::from(101)
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// libtest's arguments, and its filters apart: libtest takes any number of them (a test runs
/// when its name holds one), libtest-mimic one.
fn arguments(mut words: impl Iterator<Item = String>) -> (libtest_mimic::Arguments, Vec<String>) {
    const TAKE_A_VALUE: &[&str] = &[
        "--test-threads",
        "--logfile",
        "--skip",
        "--color",
        "--format",
        "-Z",
    ];
    let (mut options, mut filters) = (vec!["all".to_string()], Vec::new());
    while let Some(w) = words.next() {
        if !w.starts_with('-') {
            filters.push(w);
            continue;
        }
        let valued = TAKE_A_VALUE.contains(&w.as_str());
        options.push(w);
        if valued && let Some(v) = words.next() {
            options.push(v);
        }
    }
    (libtest_mimic::Arguments::from_iter(options), filters)
}

fn trials(tests: Vec<Test>) -> Vec<libtest_mimic::Trial> {
    let trial = |t: Test| {
        let name = t.name.clone();
        libtest_mimic::Trial::test(t.name, move || {
            let _held = hold(t.lock, &name);
            (t.body)();
            Ok(())
        })
    };
    tests.into_iter().map(trial).collect()
}

/// A flock on one file in the build's own temporary directory (nothing in /tmp), exclusive
/// for a serial test, shared for the others: so two test processes at once (two terminals)
/// still keep a serial test alone. Held until the guard drops, which appends the test's lock
/// wait and held time to [`TIMES`] (bench/slowest_tests.sh reads them).
struct Held {
    _file: File,
    test: String,
    lock: Lock,
    waited: Duration,
    since: Instant,
}

/// Where each test's lock wait and held time is appended:
/// `test<TAB>lock<TAB>waited<TAB>held<TAB>started`, seconds (started: since the Unix epoch).
pub const TIMES: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/syscost-e2e-times.tsv");

fn hold(lock: Lock, test: &str) -> Held {
    let f = File::create(Path::new(env!("CARGO_TARGET_TMPDIR")).join("syscost-e2e-tests.lock"))
        .unwrap();
    let how = match lock {
        Lock::Serial => libc::LOCK_EX,
        Lock::Shared => libc::LOCK_SH,
    };
    let asked = Instant::now();
    // SAFETY: flock on a file we own.
    let rc = unsafe { libc::flock(f.as_raw_fd(), how) };
    assert_eq!(rc, 0, "flock: {}", std::io::Error::last_os_error());
    Held {
        _file: f,
        test: test.to_string(),
        lock,
        waited: asked.elapsed(),
        since: Instant::now(),
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        use std::io::Write as _;
        let kind = match self.lock {
            Lock::Serial => "serial",
            Lock::Shared => "shared",
        };
        let started = std::time::SystemTime::now() - self.since.elapsed();
        let line = format!(
            "{}\t{kind}\t{:.1}\t{:.1}\t{:.1}\n",
            self.test,
            self.waited.as_secs_f64(),
            self.since.elapsed().as_secs_f64(),
            started
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64()
        );
        // One short write to a file opened for appending: lines of tests ending together
        // do not interleave.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(TIMES)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// The history store measuring commands record to in tests: the build's own temporary
/// directory, never the user's ~/.local/share.
pub const TEST_HISTORY: &str =
    concat!(env!("CARGO_TARGET_TMPDIR"), "/syscost-tests-history.sqlite");

/// The syscost binary built for this test run, recording into [`TEST_HISTORY`].
pub fn syscost() -> Command {
    let mut c = Command::cargo_bin("syscost").unwrap();
    c.env("SYSCOST_HISTORY", TEST_HISTORY);
    c
}

/// Short, fast measurement options for tests (the statistics still have several runs).
pub const QUICK: &[&str] = &["--samples", "3", "--warmup", "1", "--sample-time", "20ms"];

/// Run syscost with `args`, which it must refuse with a message containing `says`; the
/// message is returned.
pub fn refused(args: &[&str], says: &str) -> String {
    let out = syscost().args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success() && err.contains(says),
        "{args:?} should be refused with '{says}': {err}"
    );
    err
}

pub fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// Find a metric by name in a result's JSON.
pub fn metric<'a>(result: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    result["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no metric {name}"))
}

pub fn median(m: &serde_json::Value) -> f64 {
    m["summary"]["median"].as_f64().unwrap()
}

/// The highest CPU this process may use (CPU 1 on the 2-CPU test machine).
pub fn a_cpu() -> String {
    syscost::core::cpus::allowed_cpus()
        .unwrap()
        .iter()
        .last()
        .unwrap()
        .to_string()
}

/// Run syscost with `args`, require success, and parse its stdout as JSON.
pub fn json_of(args: &[&str]) -> serde_json::Value {
    let out = syscost().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON document")
}

/// The `time` row of a comparison's deltas (compare, ab or probe JSON).
pub fn time_delta(comparison: &serde_json::Value) -> &serde_json::Value {
    comparison["deltas"]
        .as_array()
        .expect("a comparison has deltas")
        .iter()
        .find(|d| d["metric"] == "time")
        .expect("a time delta")
}

/// One quick real run of getpid on this machine (3 runs, task-clock), as JSON, recorded
/// nowhere: the material the history tests relabel.
pub fn quick_run() -> serde_json::Value {
    json_of(&[
        "run",
        "syscall",
        "--runs",
        "3",
        "--samples",
        "2",
        "--sample-time",
        "5ms",
        "-e",
        "task-clock",
        "--no-history",
        "--json",
    ])
}

/// `base` as if measured elsewhere: the environment fields `env` set, and every metric value
/// multiplied by `factor` (a known truth for comparisons to recover).
pub fn relabelled(
    base: &serde_json::Value,
    env: &[(&str, &str)],
    factor: f64,
) -> serde_json::Value {
    let mut r = base.clone();
    for (k, v) in env {
        r["environment"][*k] = (*v).into();
    }
    for m in r["metrics"].as_array_mut().unwrap() {
        if let Some(vs) = m["values"].as_array_mut() {
            for v in vs.iter_mut() {
                *v = (v.as_f64().unwrap() * factor).into();
            }
        }
    }
    r
}

/// Whether audit can be changed here (root, an audit subsystem); prints why not.
pub fn audit_available() -> bool {
    if !is_root() {
        skip("audit control needs root (CAP_AUDIT_CONTROL)");
        return false;
    }
    let status = syscost::audit::AuditSocket::open().and_then(|mut s| s.status());
    if let Err(e) = status {
        skip(format!("no usable audit subsystem: {e:#}"));
        return false;
    }
    true
}

/// Whether QEMU for x86-64 is installed (scripts/test.sh installs qemu-system-x86).
pub fn qemu_available() -> bool {
    std::process::Command::new("qemu-system-x86_64")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A temporary directory for one test, in the build's own temporary directory: TMPDIR of the
/// QEMU boots it runs (their work files go there) and where its outputs are written.
pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// The Debian kernel images tests/kernels.list pins for `group` (`boot`, `bisect`), in its
/// order, as scripts/test.sh unpacked them into target/kernels; when one is missing, or QEMU is,
/// the test says why it skips (a failure under scripts/test.sh).
pub fn kernels_in(group: &str) -> Option<Vec<std::path::PathBuf>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = match group {
        "boot" => root.join("target/kernels/boot"),
        _ => root.join("target/kernels").join(group).join("boot"),
    };
    let k: Vec<std::path::PathBuf> = pinned_kernels(group)
        .iter()
        .map(|pkg| {
            dir.join(format!(
                "vmlinuz-{}",
                pkg.trim_start_matches("linux-image-")
            ))
        })
        .collect();
    if let Some(missing) = k.iter().find(|p| !p.is_file()) {
        skip(format!(
            "needs {} (tests/kernels.list pins it; scripts/test.sh fetches it)",
            missing.display()
        ));
        return None;
    }
    if !qemu_available() {
        skip("needs qemu-system-x86_64 (scripts/test.sh installs it)");
        return None;
    }
    Some(k)
}

/// The packages tests/kernels.list pins for `group`, in its order.
pub fn pinned_kernels(group: &str) -> Vec<String> {
    include_str!("../kernels.list")
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (g, pkg) = (w.next()?, w.next()?);
            (g == group).then(|| pkg.to_string())
        })
        .collect()
}

/// A web server (Python's http.server) serving `dir` on this machine, stopped when dropped:
/// kernels where labs keep them, at http:// URLs.
pub struct WebServer {
    child: std::process::Child,
    pub url: String,
}

impl WebServer {
    pub fn serving(dir: &std::path::Path) -> WebServer {
        use std::io::BufRead;
        let mut child = std::process::Command::new("python3")
            .args(["-u", "-m", "http.server", "--bind", "127.0.0.1", "0"])
            .current_dir(dir)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3 serves the kernels (scripts/test.sh installs it)");
        // "Serving HTTP on 127.0.0.1 port 41235 (http://127.0.0.1:41235/) ..."
        let mut line = String::new();
        let out = child.stdout.take().unwrap();
        std::io::BufReader::new(out).read_line(&mut line).unwrap();
        let url = line
            .split(['(', ')'])
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("http.server said {line:?}"))
            .trim_end_matches('/')
            .to_string();
        WebServer { child, url }
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The SHA-256 of `file`, as sha256sum prints it.
pub fn sha256_of(file: &std::path::Path) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(file)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace().next().unwrap().to_string()
}

/// The table format's prose with its wrapped lines joined again: a line that syscost wrapped
/// at 100 columns goes on in lines indented two more than it (` Campaign ...` then
/// `   its x86 devices ...`).
pub fn unwrapped(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        match out.last_mut() {
            Some(prev)
                if indent >= 3
                    && prev.chars().count() > 80
                    && indent == prev.len() - prev.trim_start().len() + 2 =>
            {
                prev.push(' ');
                prev.push_str(line.trim_start());
            }
            _ => out.push(line.to_string()),
        }
    }
    out.join("\n")
}
