//! End-to-end: campaigns booted as jobs of a real LAVA lab (Debian's lava-server and
//! lava-dispatcher 2023.01, started by scripts/lava-lab in a scratch directory: its own
//! PostgreSQL, server, scheduler, publisher and a worker with three qemu devices and an x86
//! board, a QEMU that starts from the network by iPXE). The same Debian kernels as the QEMU
//! campaign tests, under TCG with syscost's plugin, and timed on the board.
//! scripts/test.sh installs LAVA; without it (or root, or the kernels) the test says so and
//! skips.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

crate::tests! {
    // exact counts only: beside other guests
    Shared campaigns_boot_as_lava_jobs_and_give_the_figures_of_direct_boots,
    Shared a_lab_in_a_directory_postgres_cannot_enter_is_refused_before_anything_starts,
}

const LAB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/lava-lab");

const MEASURE: &[&str] = &[
    "run",
    "syscall",
    "--runs",
    "2",
    "--samples",
    "3",
    "--sample-time",
    "20ms",
];

/// A lab started in a directory of its own, removed (every process stopped) when dropped.
struct Lab {
    dir: PathBuf,
    url: String,
    token: String,
    /// Its publisher's event stream.
    events: String,
}

impl Lab {
    fn start(dir: &Path) -> Lab {
        let out = Command::new(LAB)
            .arg("start")
            .arg(dir)
            .args(["--devices", "3", "--boards", "1"])
            .output()
            .unwrap();
        let mut lab = Lab {
            dir: dir.to_path_buf(),
            url: String::new(),
            token: String::new(),
            events: String::new(),
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f))
                .unwrap()
                .trim()
                .to_string()
        };
        (lab.url, lab.token, lab.events) = (read("url"), read("token"), read("events-url"));
        lab
    }

    fn lab(&self, args: &[&str]) {
        let out = Command::new(LAB).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// GET of the API's `path` with the lab's token, as JSON.
    fn get(&self, path: &str) -> Value {
        let mut r = ureq::get(format!("{}api/v0.2/{path}", self.url))
            .header("Authorization", format!("Token {}", self.token))
            .call()
            .unwrap();
        serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
    }

    /// Set device `name`'s health, as the lab's admin (the token's user) can.
    fn set_health(&self, name: &str, health: &str) {
        let body = serde_json::json!({"health": health, "reason": "syscost's test"});
        ureq::post(format!("{}api/v0.2/devices/{name}/set_health/", self.url))
            .header("Authorization", format!("Token {}", self.token))
            .content_type("application/json")
            .send(body.to_string())
            .unwrap();
        assert_eq!(self.get(&format!("devices/{name}/"))["health"], health);
    }

    /// The API requests the lab's web server answered, a line each (its access log).
    fn requests(&self) -> Vec<String> {
        let log = std::fs::read_to_string(self.dir.join("log/access.log")).unwrap();
        log.lines()
            .filter(|l| l.contains("/api/v0.2/"))
            .map(str::to_string)
            .collect()
    }

    /// Submit a job of `definition` (YAML) as the lab's admin; its id.
    fn submit(&self, definition: &str) -> u64 {
        let body = serde_json::json!({ "definition": definition });
        let mut r = ureq::post(format!("{}api/v0.2/jobs/", self.url))
            .header("Authorization", format!("Token {}", self.token))
            .content_type("application/json")
            .send(body.to_string())
            .unwrap();
        let v: Value = serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap();
        v["job_ids"][0].as_u64().unwrap()
    }

    /// How many jobs the lab has been given.
    fn jobs(&self) -> u64 {
        self.get("jobs/?limit=1")["count"].as_u64().unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = Command::new(LAB).arg("remove").arg(&self.dir).status();
    }
}

/// Where the tests look for lava-server: `SYSCOST_TEST_LAVA_SERVER`, else Debian's path (a
/// path that does not exist makes the prerequisite missing, as a test of scripts/test.sh can).
fn lava_server() -> PathBuf {
    std::env::var_os("SYSCOST_TEST_LAVA_SERVER")
        .map_or_else(|| PathBuf::from("/usr/bin/lava-server"), PathBuf::from)
}

fn available() -> Option<Vec<PathBuf>> {
    if !is_root() || !lava_server().exists() {
        skip(format!(
            "LAVA's tests need root and lava-server at {} (scripts/test.sh installs it)",
            lava_server().display()
        ));
        return None;
    }
    kernels_in("boot")
}

/// syscost with its history, work files and state in `tmp`, and `token` for the lab.
fn syscost_in(tmp: &Path, token: &str) -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("syscost"));
    c.env("SYSCOST_HISTORY", tmp.join("history.sqlite"))
        .env("TMPDIR", tmp)
        .env("XDG_STATE_HOME", tmp)
        .env("SYSCOST_LAVA_TOKEN", token);
    c
}

/// `syscost campaign ARGS -- MEASURE` through `lab` with `token`, state and work files in `tmp`,
/// following the lab's event stream unless ARGS say where.
fn campaign(tmp: &Path, lab: &Lab, token: &str, args: &[String]) -> Command {
    let mut c = syscost_in(tmp, token);
    c.args(["campaign", "--via", "lava", "--lava-url", &lab.url]);
    if !args.iter().any(|a| a == "--lava-events") {
        c.args(["--lava-events", &lab.events]);
    }
    c.args(args).arg("--").args(MEASURE);
    c
}

fn arms(k: &Path) -> Vec<String> {
    let k = k.display();
    [
        "--arm",
        &format!("off={k}"),
        "--arm",
        &format!("on={k}"),
        "--append",
        "on=audit=1",
        "--emulated-counters",
        "--icount",
        "0",
        "--boots",
        "2",
        "--seed",
        "3",
    ]
    .map(String::from)
    .to_vec()
}

/// The state file of the one campaign kept in `tmp`, once it exists.
fn state(tmp: &Path) -> Option<(PathBuf, Value)> {
    let dir = tmp.join("syscost/campaigns");
    let f = (std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "json"))?;
    Some((
        f.clone(),
        serde_json::from_str(&std::fs::read_to_string(f).ok()?).ok()?,
    ))
}

fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let t = Instant::now();
    while !ready() {
        assert!(t.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn finish(child: Child) -> (bool, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Each boot's instructions per call (its runs' median), by arm.
fn counts(c: &Value) -> Vec<(String, f64)> {
    c["boots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            assert_eq!(b["outcome"], "measured", "{b}");
            (
                b["arm"].as_str().unwrap().to_string(),
                median(metric(&b["result"], "instructions (emulated)")),
            )
        })
        .collect()
}

fn campaigns_boot_as_lava_jobs_and_give_the_figures_of_direct_boots() {
    let Some(k) = available() else { return };
    let tmp = scratch();
    let lab = Lab::start(&tmp.path().join("lab"));
    // Debian's 6.1 for every job: it boots in about half the time 6.12 takes under TCG.
    let (k_old, k) = (&k[0], &k[0]);

    // Refused before any job, the token never shown.
    let bad = "wrong-secret-4711";
    let out = campaign(tmp.path(), &lab, bad, &arms(k)).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("refused the token"),
        "{err}"
    );
    assert!(!err.contains(bad) && !String::from_utf8_lossy(&out.stdout).contains(bad));
    // The exact-count campaign with `more`, refused in words that say `why`.
    let refused = |more: &[&str], why: &str| {
        let mut args = arms(k);
        args.extend(more.iter().map(|m| m.to_string()));
        let out = campaign(tmp.path(), &lab, &lab.token, &args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(why), "{err}");
    };
    refused(&["--lava-device-type", "nope"], "has no device type nope");
    let out = syscost()
        .args([
            "campaign",
            "--lava-url",
            &lab.url,
            "--arm",
            &format!("a={}", k.display()),
        ])
        .args(["--", "run", "syscall"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("give --via lava too"),
        "{err}"
    );
    // Exact counts on a board.
    refused(
        &["--lava-device-type", "x86", "--lava-boot", "ipxe"],
        "--lava-boot ipxe boots a board",
    );
    refused(
        &["--lava-device", "qemu-09"],
        "--lava-device qemu-09: the lab has no such qemu device",
    );
    // A device the lab schedules nothing on is refused, not waited for.
    lab.set_health("qemu-03", "Maintenance");
    refused(
        &["--lava-device", "qemu-03"],
        "LAVA device qemu-03 is in Maintenance health",
    );
    lab.set_health("qemu-03", "Good");
    let files = format!(
        "{}=http://127.0.0.1:9/syscost",
        tmp.path().join("www").display()
    );
    refused(
        &["--lava-files", &files],
        "--lava-files: the lab would not get the files",
    );
    assert_eq!(lab.jobs(), 0, "no job submitted");
    assert!(
        state(tmp.path()).is_none(),
        "a refused campaign keeps no state"
    );
    full_queues_are_waited_for(&lab, k);

    // Timed boots on the board: every job on it, by its tag; arm off's kernel where labs keep
    // theirs, at a URL with its SHA-256, which the lab's worker fetches and checks.
    let board_tmp = scratch();
    let board_out = board_tmp.path().join("board.json");
    let www = board_tmp.path().join("www");
    std::fs::create_dir(&www).unwrap();
    std::fs::copy(k, www.join("bzImage")).unwrap();
    let web = WebServer::serving(&www);
    let (kernel_url, sha) = (format!("{}/bzImage", web.url), sha256_of(k));
    let timed = [
        "--arm",
        &format!("off={kernel_url}"),
        "--kernel-sha256",
        &format!("off={sha}"),
        "--arm",
        &format!("on={}", k.display()),
        "--append",
        "on=audit=1",
        "--boots",
        "1",
        "--no-verdict",
        "--boot-timeout",
        "300s",
        "--lava-device-type",
        "x86",
        "--lava-boot",
        "ipxe",
        "-o",
        board_out.to_str().unwrap(),
    ]
    .map(String::from);
    let timed = campaign(board_tmp.path(), &lab, &lab.token, &timed)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // A bisection through the lab (beside the campaigns: the lab has three devices) names
    // the build that turned audit on.
    let builds = tmp.path().join("builds.list");
    let old = k_old.display();
    std::fs::write(
        &builds,
        format!("b0={old} audit=0\nb1={old} audit=1\nb2={old} audit=1\n"),
    )
    .unwrap();
    let bisect_tmp = scratch();
    let bisection = syscost_in(bisect_tmp.path(), &lab.token)
        .args([
            "bisect",
            "--via",
            "lava",
            "--lava-url",
            &lab.url,
            "--lava-events",
            &lab.events,
            "--builds",
        ])
        .arg(&builds)
        .args([
            "--emulated-counters",
            "--retries",
            "0",
            "--seed",
            "3",
            "--no-history",
            "-o",
        ])
        .arg(tmp.path().join("bisect.json"))
        .arg("--")
        .args(MEASURE)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once its first job is submitted; resumed, it waits for that job.
    let bisect_state = bisect_tmp.path().join("syscost/bisect.json");
    let jobs_in = |f: &Path| -> usize {
        std::fs::read_to_string(f)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .and_then(|s| s["jobs"].as_array().map(Vec::len))
            .unwrap_or(0)
    };
    wait_for(
        "the bisection's first job",
        Duration::from_secs(120),
        || jobs_in(&bisect_state) > 0,
    );
    let mut bisection = bisection;
    bisection.kill().unwrap();
    bisection.wait().unwrap();
    let bisection = syscost_in(bisect_tmp.path(), &lab.token)
        .args(["bisect", "resume"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A kernel that cannot boot: a failed boot, in the kernel's and LAVA's words.
    let panics = [
        "--arm",
        &format!("x={}", k.display()),
        "--append",
        "x=rdinit=/nope",
        "--boots",
        "1",
        "--no-verdict",
        "--retries",
        "0",
        "--emulated-counters",
        // Where nothing answers (the discard port): the jobs are polled instead.
        "--lava-events",
        "ws://127.0.0.1:9/ws/",
    ]
    .map(String::from);
    let panic_tmp = scratch();
    let panicking = campaign(panic_tmp.path(), &lab, &lab.token, &panics)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // The same campaign booted directly in QEMU, beside the LAVA one.
    let direct_tmp = scratch();
    let direct_out = direct_tmp.path().join("direct.json");
    let mut direct = syscost_in(direct_tmp.path(), "");
    direct
        .args(["campaign", "--accel", "tcg", "-o"])
        .arg(&direct_out)
        .args(arms(k))
        .arg("--")
        .args(MEASURE);
    let direct = direct
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // Killed once both first jobs are submitted; resumed, it waits for those two, and the
    // server stopped and started again meanwhile is waited for.
    let out_file = tmp.path().join("lava.json");
    let mut args = arms(k);
    args.extend(["--lava-jobs", "2", "-o"].map(String::from));
    args.push(out_file.display().to_string());
    let mut first = campaign(tmp.path(), &lab, &lab.token, &args)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let jobs_of = |s: &Value| s["jobs"].as_array().map_or(0, Vec::len);
    wait_for("two submitted jobs", Duration::from_secs(120), || {
        state(tmp.path()).is_some_and(|(_, s)| jobs_of(&s) == 2)
    });
    first.kill().unwrap();
    first.wait().unwrap();
    let (file, saved) = state(tmp.path()).unwrap();
    let id = saved["id"].as_str().unwrap().to_string();
    let mut resume = syscost_in(tmp.path(), &lab.token);
    resume.args(["campaign", "resume", &id]);
    let resume = resume
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    lab.lab(&["stop", lab.dir.to_str().unwrap(), "web"]);
    std::thread::sleep(Duration::from_secs(5));
    lab.lab(&["start", lab.dir.to_str().unwrap()]);
    let (ok, err) = finish(resume);
    assert!(ok, "{err}");
    // The resume followed the stream the campaign was told of, kept with its plan.
    assert!(!err.contains("event stream"), "{err}");
    // The token's user, as the lab's system/whoami/ names it (scripts/lava-lab's admin).
    assert!(err.contains(", submitting as admin:"), "{err}");
    assert_eq!(
        err.matches("was submitted before: waiting for it").count(),
        2,
        "{err}"
    );
    assert!(!file.exists(), "the state is removed at the end");
    assert!(
        !file.with_extension("files").exists(),
        "and the files the lab fetched"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    let boots = c["boots"].as_array().unwrap();
    assert_eq!(boots.len(), 4, "{err}");
    let mine = (lab.get("jobs/?limit=500")["results"]
        .as_array()
        .unwrap()
        .iter())
    .filter(|j| {
        j["description"]
            .as_str()
            .unwrap_or("")
            .contains(&format!("campaign {id}:"))
    })
    .count();
    assert_eq!(mine, 4, "no job submitted twice: {err}");
    let mut ids: Vec<u64> = boots
        .iter()
        .map(|b| b["job"]["id"].as_u64().unwrap())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4);
    for b in boots {
        let j = &b["job"];
        assert!(j["url"].as_str().unwrap().starts_with(&lab.url), "{j}");
        assert!(j["device"].as_str().unwrap().starts_with("qemu-"), "{j}");
        assert_eq!(j["worker"], "lab");
        // Under -icount the guest's clock runs on instructions: no split in seconds.
        assert!(b["split"].is_null(), "{}", b["split"]);
        // Its figures are LAVA test cases too, named by arm, call and figure as sent.
        let tests = lab.get(&format!("jobs/{}/tests/?limit=100", j["id"]));
        let tests = tests["results"].as_array().unwrap();
        let case = |figure: &str| {
            let name = format!("{}_syscall_getpid_{figure}", b["arm"].as_str().unwrap());
            let t = tests.iter().find(|t| t["name"] == name.as_str());
            t.unwrap_or_else(|| panic!("no case {name}: {tests:?}"))
                .clone()
        };
        let time = case("time");
        let shown: f64 = time["measurement"].as_str().unwrap().parse().unwrap();
        let mine = median(metric(&b["result"], "time"));
        assert!((shown - mine).abs() <= 1e-6 * mine, "{shown} vs {mine}");
        assert_eq!(time["unit"], "ns/call", "{time}");
        let ratio = case("cpus_utilized");
        assert_eq!(ratio["unit"], "CPUs_utilized", "{ratio}");
        // The headline too: the plugin's counts reached the guest on its second serial port,
        // and the figure it reported is the one the campaign joined from the log.
        let exact = case("instructions_emulated");
        let shown: f64 = exact["measurement"].as_str().unwrap().parse().unwrap();
        let mine = median(metric(&b["result"], "instructions (emulated)"));
        assert!((shown - mine).abs() <= 1e-6 * mine, "{shown} vs {mine}");
        assert_eq!(exact["unit"], "/call", "{exact}");
        // The job says which kernel it booted, as the lab's readers look jobs up (LAVA
        // 2023.01 keeps a job's metadata in its definition: its metadata/ lists none).
        // (Through the list: the access log must show no single-job request.)
        let listed = lab.get(&format!("jobs/?id={}", j["id"]));
        let definition = listed["results"][0]["definition"].as_str().unwrap();
        let release = b["result"]["environment"]["kernel_release"]
            .as_str()
            .unwrap();
        assert!(
            (definition.lines()).any(|l| l.contains("kernel.version") && l.contains(release)),
            "{definition}"
        );
        // The lab's template took the job's card: none on the PCI bus, as a direct boot has
        // none (the job's plain log, not a request the pattern below counts).
        let log = format!("{}/log_file/plain", j["url"].as_str().unwrap());
        let log = ureq::get(&log).call().unwrap().into_body().read_to_string();
        let log = log.unwrap();
        assert!(
            (log.lines())
                .any(|l| l.contains("Boot command:") && l.contains("-net nic,model=ne2k_isa,")),
            "{log}"
        );
    }
    assert!(!String::from_utf8_lossy(&std::fs::read(&out_file).unwrap()).contains(&lab.token));
    boots_export_to_kcidb_with_their_job_logs(&out_file, boots);

    // Per boot, the counts of the direct campaign within 0.1%.
    let (ok, err) = finish(direct);
    assert!(ok, "{err}");
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&direct_out).unwrap()).unwrap();
    let direct = counts(&d);
    for (arm, n) in counts(&c) {
        for (_, m) in direct.iter().filter(|(a, _)| *a == arm) {
            assert!((n - m).abs() <= 1e-3 * m, "{arm}: {n} via LAVA, {m} direct");
        }
    }
    let of = |arm: &str| {
        counts(&c)
            .iter()
            .filter(|(a, _)| a == arm)
            .map(|x| x.1)
            .fold(0.0, f64::max)
    };
    assert!(
        of("on") > of("off") * 1.1,
        "audit on costs instructions: {:?}",
        counts(&c)
    );

    // The report links each boot to its job.
    let page = tmp.path().join("report.html");
    let out = syscost()
        .arg("report")
        .arg("-o")
        .arg(&page)
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches(&format!("<a href=\"{}scheduler/job/", lab.url))
            .count(),
        4
    );

    let (ok, err) = finish(bisection);
    assert!(ok, "{err}");
    assert_eq!(
        err.matches("was submitted before: waiting for it").count(),
        1,
        "the resumed bisection waits for the job its killed run submitted: {err}"
    );
    let bisect_state = bisect_tmp.path().join("syscost/bisect.json");
    assert!(!bisect_state.exists() && !bisect_state.with_extension("files").exists());
    let b: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("bisect.json")).unwrap())
            .unwrap();
    assert_eq!(b["found"]["first_bad"], "b1", "{}", b["found"]);
    assert!(
        b["boots"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["job"]["id"].is_u64())
    );

    let (ok, err) = finish(panicking);
    assert!(!ok, "{err}");
    assert!(
        err.contains("LAVA's event stream did not answer (ws://127.0.0.1:9/ws/: ")
            && err.contains("asking the lab about its jobs every 0.5 s (--lava-events"),
        "{err}"
    );
    assert!(
        err.contains("the kernel panicked: VFS: Unable to mount root fs"),
        "{err}"
    );
    assert!(err.contains(" ended Incomplete: "), "{err}");

    let (ok, err) = finish(timed);
    assert!(ok, "{err}");
    // Every open job is polled in one request a tick, never one by one.
    let requests = lab.requests();
    let single = regex_lite::Regex::new(r"GET /api/v0\.2/jobs/\d+/ ").unwrap();
    assert!(
        requests
            .iter()
            .any(|r| r.contains("/api/v0.2/jobs/?id__in="))
    );
    let one_by_one: Vec<&String> = requests.iter().filter(|r| single.is_match(r)).collect();
    assert!(one_by_one.is_empty(), "{one_by_one:?}");
    assert!(
        err.contains("every job on LAVA device board-01 (its tag board-01)"),
        "{err}"
    );
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&board_out).unwrap()).unwrap();
    let pin = &c["lava"]["pin"];
    assert_eq!(pin["device"], "board-01", "{pin}");
    assert_eq!(c["lava"]["boot"], "ipxe");
    assert!(c["machine"].is_null(), "a board is no QEMU of syscost's");
    let boots = c["boots"].as_array().unwrap();
    let measured = boots.iter().filter(|b| b["outcome"] == "measured");
    assert_eq!(measured.count(), 2, "one per arm: {err}");
    for b in boots {
        assert_eq!(b["job"]["device"], "board-01", "{b}");
    }
    // Shown again, the time per boot says what lies outside the guest's clock in a lab.
    let shown = syscost().arg("show").arg(&board_out).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    // The line wraps at 100 columns: its continuation lines hang under it.
    let whole = crate::common::unwrapped(&shown);
    let line = (whole.lines()).find(|l| l.contains("Time per measured boot"));
    assert!(
        line.is_some_and(|l| l.contains("the lab's queue")),
        "{shown}"
    );
    for b in boots.iter().filter(|b| b["outcome"] == "measured") {
        assert!(median(metric(&b["result"], "time")) > 0.0);
        // The guest's clock splits the job: its kernel's boot, and the lab's part outside it.
        let part = |p: &str| b["split"][p].as_f64().unwrap_or(-1.0);
        assert!(
            part("kernel") > 0.0 && part("outside") > 0.0,
            "{}",
            b["split"]
        );
        let job = lab.get(&format!("jobs/{}/", b["job"]["id"]));
        assert_eq!(job["tags"].as_array().map(Vec::len), Some(1), "{job}");
        let definition = job["definition"].as_str().unwrap();
        assert!(
            definition.contains("ipxe") && definition.contains("tftp"),
            "{definition}"
        );
        if b["arm"] == "off" {
            assert!(
                definition.contains(&kernel_url) && definition.contains(&sha),
                "{definition}"
            );
        }
    }
    drop(web);
    // The pattern above sees this test's own requests for one job: it could have failed.
    assert!(lab.requests().iter().any(|r| single.is_match(r)));
}

/// A LAVA campaign's boots as KCIDB tests that kcidb-io accepts, each with its arm and its
/// job's plain-text log, which the lab serves.
fn boots_export_to_kcidb_with_their_job_logs(campaign: &Path, boots: &[Value]) {
    let report = campaign.with_extension("kcidb.json");
    let out = syscost()
        .args(["export", "kcidb", "--origin", "syscost_lab", "-o"])
        .args([&report, campaign])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    crate::kcidb::kcidb_io_accepts(&report);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let tests = doc["tests"].as_array().unwrap();
    for b in boots {
        let log = format!("{}/log_file/plain", b["job"]["url"].as_str().unwrap());
        let of_boot: Vec<&Value> = tests
            .iter()
            .filter(|t| t["log_url"] == log.as_str())
            .collect();
        assert!(!of_boot.is_empty(), "no test with {log}: {tests:?}");
        assert!(
            of_boot.iter().all(|t| t["misc"]["arm"] == b["arm"]),
            "{of_boot:?}"
        );
        assert_eq!(
            of_boot[0]["environment"]["misc"]["device"],
            b["job"]["device"]
        );
        let text = ureq::get(&log)
            .call()
            .unwrap()
            .into_body()
            .read_to_string()
            .unwrap();
        assert!(text.contains("SYSCOST-BEGIN"), "{log}: {text}");
    }
}

/// mktemp(1) makes 0700 directories: a lab inside one would fail at PostgreSQL's initdb (run as
/// the user postgres). The script says so before it creates or starts anything.
fn a_lab_in_a_directory_postgres_cannot_enter_is_refused_before_anything_starts() {
    if available().is_none() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let tmp = scratch();
    let closed = tmp.path().join("closed");
    std::fs::create_dir(&closed).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = Command::new(LAB)
        .arg("start")
        .arg(closed.join("lab"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("the user postgres, who cannot enter")
            && err.contains(&closed.display().to_string()),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&closed).unwrap().count(),
        0,
        "nothing made"
    );
}

/// With every qemu device in Maintenance, someone else's job waits in the queue; a campaign
/// allowed a queue of one job (--lava-queue-depth 1) says it waits and submits nothing, until
/// stopped. The lab is as it was after.
fn full_queues_are_waited_for(lab: &Lab, k: &Path) {
    let tmp = scratch();
    let devices = ["qemu-01", "qemu-02", "qemu-03"];
    for d in devices {
        lab.set_health(d, "Maintenance");
    }
    let blocker = lab.submit(
        "device_type: qemu\njob_name: someone else's\nvisibility: public\npriority: low\n\
         timeouts:\n  job: {minutes: 5}\n  action: {minutes: 1}\ncontext:\n  arch: x86_64\n\
         actions:\n- boot:\n    method: qemu\n    media: tmpfs\n    timeout: {minutes: 1}\n",
    );
    let log = tmp.path().join("stderr");
    let args = [arms(k), vec!["--lava-queue-depth".into(), "1".into()]].concat();
    let child = campaign(tmp.path(), lab, &lab.token, &args)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    wait_for(
        "the wait for a shorter queue",
        Duration::from_secs(60),
        || said().contains("the lab's queue for qemu devices holds 1 job (--lava-queue-depth 1)"),
    );
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (ok, _) = finish(child);
    assert!(!ok, "stopped: {}", said());
    assert_eq!(lab.jobs(), 1, "only the other job: {}", said());
    let gone = lab.get(&format!("jobs/{blocker}/cancel/"));
    assert!(gone["message"].is_string(), "{gone}");
    for d in devices {
        lab.set_health(d, "Good");
    }
}
