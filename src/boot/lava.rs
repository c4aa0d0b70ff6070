//! A LAVA server's REST API (v0.2, as LAVA 2023.01 serves it): what syscost asks a lab for
//! to boot its kernels there. One job per boot: checked by the server's validate endpoint,
//! submitted, polled until it ends, its console's log read back, cancelled when syscost stops.
//!
//! The token goes in one header and nowhere else: [`Token`] prints as `***`, and a URL is kept
//! and shown without any password it carried ([`Lab::url`]).

use crate::core::input::Opt;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// A lab's API token; never shown.
#[derive(Clone)]
pub(crate) struct Token(String);

impl Token {
    pub(crate) fn new(secret: &str) -> Result<Token> {
        let t = secret.trim();
        if t.is_empty() || t.chars().any(|c| c.is_whitespace() || c.is_control()) {
            bail!("the LAVA token is empty or has spaces in it");
        }
        Ok(Token(t.to_string()))
    }
}

/// Where a token is read from when no file is given.
pub(crate) const TOKEN_ENV: &str = "SYSCOST_LAVA_TOKEN";

impl Token {
    /// The token in `file`, else in the environment's SYSCOST_LAVA_TOKEN.
    pub(crate) fn read(file: Option<&std::path::Path>) -> Result<Token> {
        match file {
            Some(f) => {
                let text = std::fs::read_to_string(f).with_context(|| {
                    crate::refused!(Opt::LavaTokenFile, ": cannot read ", f.display())
                })?;
                Token::new(&text)
                    .with_context(|| crate::refused!(Opt::LavaTokenFile, " ", f.display()))
            }
            None => match std::env::var(TOKEN_ENV) {
                Ok(t) => Token::new(&t).context(TOKEN_ENV),
                Err(_) => Err(crate::refused!(
                    format!("no LAVA token: set {TOKEN_ENV} or give "),
                    Opt::LavaTokenFile,
                    " FILE (a token of a user of the lab: its web page's API / Tokens, or \
                     `lava-server manage tokens add`)"
                )),
            },
        }
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

/// A device of a lab: its name, its health and its tags (a job with tags runs only on a
/// device that has them all).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Device {
    pub hostname: String,
    pub health: Health,
    pub tags: Vec<String>,
}

/// A device's health, as LAVA's REST API names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub(crate) enum Health {
    /// Not checked since it was added or put back: the scheduler runs its health check first.
    Unknown,
    Good,
    /// Its health check failed: no job is scheduled on it.
    Bad,
    /// Taken out by an admin: no job is scheduled on it.
    Maintenance,
    /// Running health checks over and over: no other job is scheduled on it.
    Looping,
    /// Gone for good.
    Retired,
}

impl Health {
    /// Whether the scheduler sends jobs to it: a job for a device that does not waits in the
    /// queue until the run's queue limit.
    pub(crate) fn takes_jobs(self) -> bool {
        matches!(self, Health::Good | Health::Unknown)
    }
}

impl std::fmt::Display for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// How a lab boots a job's device: the boot method of its device type.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum BootMethod {
    /// A `qemu` device type: the kernel under TCG on the worker, with syscost's plugin when
    /// it counts.
    #[default]
    Qemu,
    /// An x86 board (LAVA's `x86` device type and its kind) that starts from the network by
    /// iPXE: the kernel and initramfs by TFTP, the initramfs as it is; time and the board's
    /// hardware counters.
    Ipxe,
}

/// Where a job stands in the lab's queue: LAVA's high, medium or low, or a number from 0 to
/// 100 (low is 0, medium 50, high 100). Shared labs rank their own work by it: KernelCI
/// spreads its jobs over 20 to 80 of a lab's range, and LKFT's lab caps submitters at 25.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JobPriority {
    #[default]
    Low,
    Medium,
    High,
    Level(u8),
}

impl JobPriority {
    /// `low`, `medium`, `high` or 0 to 100.
    pub(crate) fn parse(s: &str) -> Result<JobPriority, String> {
        match s {
            "low" => Ok(JobPriority::Low),
            "medium" => Ok(JobPriority::Medium),
            "high" => Ok(JobPriority::High),
            n => match n.parse::<u8>() {
                Ok(v) if v <= 100 => Ok(JobPriority::Level(v)),
                _ => Err(format!(
                    "{n:?}: give low, medium, high or a number from 0 to 100"
                )),
            },
        }
    }

    /// As a job definition says it.
    pub(crate) fn json(self) -> serde_json::Value {
        match self {
            JobPriority::Low => "low".into(),
            JobPriority::Medium => "medium".into(),
            JobPriority::High => "high".into(),
            JobPriority::Level(v) => v.into(),
        }
    }
}

/// Who may see a job and its results in the lab.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum JobVisibility {
    /// Anyone who can read the lab, as KernelCI's and LKFT's jobs are.
    #[default]
    Public,
    /// The user the token belongs to alone.
    Personal,
}

impl JobVisibility {
    pub(crate) fn name(self) -> &'static str {
        match self {
            JobVisibility::Public => "public",
            JobVisibility::Personal => "personal",
        }
    }
}

/// A LAVA server, and the token syscost's requests carry.
#[derive(Debug)]
pub(crate) struct Lab {
    /// The server's URL, ending in `/`, without any user or password.
    url: String,
    token: Token,
    agent: ureq::Agent,
    /// How long a server that does not answer is waited for (restarted, say) before the
    /// request fails.
    patience: Duration,
}

/// A job as the server shows it.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct Job {
    pub id: u64,
    pub state: JobState,
    pub health: JobHealth,
    #[serde(default)]
    pub actual_device: Option<String>,
    #[serde(default)]
    pub failure_comment: Option<String>,
}

impl Job {
    pub(crate) fn finished(&self) -> bool {
        self.state == JobState::Finished
    }

    /// Still waiting for a device.
    pub(crate) fn queued(&self) -> bool {
        matches!(self.state, JobState::Submitted | JobState::Scheduling)
    }
}

/// Where a job is, as LAVA's API names it (lava_scheduler_app's TestJob.STATE_CHOICES); a
/// state a later LAVA adds reads as `Other`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub(crate) enum JobState {
    Submitted,
    Scheduling,
    Scheduled,
    Running,
    Canceling,
    Finished,
    #[serde(other)]
    Other,
}

/// How a job ended, as LAVA's API names it (TestJob.HEALTH_CHOICES).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub(crate) enum JobHealth {
    Unknown,
    Complete,
    Incomplete,
    Canceled,
    #[serde(other)]
    Other,
}

impl std::fmt::Display for JobHealth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            JobHealth::Unknown => "Unknown",
            JobHealth::Complete => "Complete",
            JobHealth::Incomplete => "Incomplete",
            JobHealth::Canceled => "Canceled",
            JobHealth::Other => "in a health this syscost does not know",
        })
    }
}

/// Whose fault LAVA says a failed job was: its `job` case's `error_type` (lava_common's
/// exceptions: InfrastructureError, JobError, TestError, LAVABug, ConfigurationError), or
/// another it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ErrorType {
    Infrastructure,
    Job,
    Test,
    Bug,
    Configuration,
    Other(String),
}

impl ErrorType {
    fn of(name: &str) -> ErrorType {
        match name {
            "Infrastructure" => ErrorType::Infrastructure,
            "Job" => ErrorType::Job,
            "Test" => ErrorType::Test,
            "Bug" => ErrorType::Bug,
            "Configuration" => ErrorType::Configuration,
            other => ErrorType::Other(other.to_string()),
        }
    }

    fn name(&self) -> &str {
        match self {
            ErrorType::Infrastructure => "Infrastructure",
            ErrorType::Job => "Job",
            ErrorType::Test => "Test",
            ErrorType::Bug => "Bug",
            ErrorType::Configuration => "Configuration",
            ErrorType::Other(s) => s,
        }
    }
}

/// Why LAVA says a job failed: its error type when its `job` case gives one, and its words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JobFailure {
    pub error_type: Option<ErrorType>,
    pub words: String,
}

/// One test case of a job's results.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct TestCase {
    pub name: String,
    pub result: String,
    /// YAML text in 2023.01: for LAVA's own `job` case, its error's type and message.
    #[serde(default)]
    pub metadata: Option<String>,
}

/// Where a boot ran in a lab: kept with the boot, tagged in the history, linked in the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct LabJob {
    /// The server's URL (no password).
    pub lab: String,
    pub id: u64,
    /// The job's page.
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
}

impl LabJob {
    /// The job's log as plain text (LAVA's `log_file/plain` beside the job's page).
    pub(crate) fn log_url(&self) -> String {
        format!("{}/log_file/plain", self.url.trim_end_matches('/'))
    }
}

/// What a campaign asks of a lab once it has checked it: LAVA's REST calls behind a trait, so
/// the booter's logic (submit, poll, resubmit, cancel, read back) is tested against a
/// scripted lab as well as the real one (tests/all/lava.rs).
pub(crate) trait LabApi {
    fn url(&self) -> &str;
    fn job_url(&self, id: u64) -> String;
    fn check_served(&self, url: &str, len: u64) -> Result<()>;
    fn health(&self, hostname: &str) -> Result<Health>;
    fn validate(&self, definition: &str) -> Result<()>;
    fn submit(&self, definition: &str) -> Result<u64>;
    fn queued(&self, device_type: &str) -> Result<u64>;
    fn job(&self, id: u64) -> Result<Job>;
    fn jobs(&self, ids: &[u64]) -> Result<Vec<Job>>;
    fn worker_of(&self, device: &str) -> Result<String>;
    fn log(&self, id: u64) -> Result<String>;
    fn tests(&self, id: u64) -> Result<Vec<TestCase>>;
    fn cancel(&self, id: u64) -> Result<()>;
}

impl LabApi for Lab {
    fn url(&self) -> &str {
        Lab::url(self)
    }
    fn job_url(&self, id: u64) -> String {
        Lab::job_url(self, id)
    }
    fn check_served(&self, url: &str, len: u64) -> Result<()> {
        Lab::check_served(self, url, len)
    }
    fn health(&self, hostname: &str) -> Result<Health> {
        Lab::health(self, hostname)
    }
    fn validate(&self, definition: &str) -> Result<()> {
        Lab::validate(self, definition)
    }
    fn submit(&self, definition: &str) -> Result<u64> {
        Lab::submit(self, definition)
    }
    fn queued(&self, device_type: &str) -> Result<u64> {
        Lab::queued(self, device_type)
    }
    fn job(&self, id: u64) -> Result<Job> {
        Lab::job(self, id)
    }
    fn jobs(&self, ids: &[u64]) -> Result<Vec<Job>> {
        Lab::jobs(self, ids)
    }
    fn worker_of(&self, device: &str) -> Result<String> {
        Lab::worker_of(self, device)
    }
    fn log(&self, id: u64) -> Result<String> {
        Lab::log(self, id)
    }
    fn tests(&self, id: u64) -> Result<Vec<TestCase>> {
        Lab::tests(self, id)
    }
    fn cancel(&self, id: u64) -> Result<()> {
        Lab::cancel(self, id)
    }
}

/// A URL's scheme, host (without any `user:password@`) and path (after the host's `/`), as a
/// URL of the lab's is kept: the token, not a password, authenticates.
pub(crate) fn url_parts(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Some((scheme, host, path))
}

/// The server's URL as shown and kept: `user:password@` taken out, a `/` at the end.
pub(crate) fn shown_url(url: &str) -> Result<String> {
    let (scheme, host, path) = url_parts(url)
        .filter(|(s, ..)| *s == "http" || *s == "https")
        .with_context(|| {
            let url = crate::core::redact_url(url);
            crate::refused!(Opt::LavaUrl, " ", url, ": give an http:// or https:// URL")
        })?;
    if host.is_empty() {
        let url = crate::core::redact_url(url);
        return Err(crate::refused!(
            Opt::LavaUrl,
            " ",
            url,
            ": the URL names no server"
        ));
    }
    let path = path.trim_end_matches('/');
    let sep = if path.is_empty() { "" } else { "/" };
    Ok(format!("{scheme}://{host}/{path}{sep}"))
}

impl Lab {
    /// The lab at `url` (its password, if any, is dropped: the token authenticates).
    pub(crate) fn new(url: &str, token: Token) -> Result<Lab> {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .user_agent(concat!("syscost/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(Lab {
            url: shown_url(url)?,
            token,
            agent: config.into(),
            patience: Duration::from_secs(600),
        })
    }

    /// How long requests wait for a server that does not answer.
    #[cfg(test)]
    pub(crate) fn with_patience(mut self, patience: Duration) -> Lab {
        self.patience = patience;
        self
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// A job's page.
    pub(crate) fn job_url(&self, id: u64) -> String {
        format!("{}scheduler/job/{id}", self.url)
    }

    /// One request to `path` (under the API), the JSON `body` posted if any: the status and
    /// the body. A server that does not answer is asked again every 2 s within the lab's
    /// patience (a restarted server is waited for), with `waiting` told once. A server that
    /// answers 429 (too many requests) is asked again after its Retry-After, within the same
    /// patience.
    fn request(&self, path: &str, body: Option<&str>) -> Result<(u16, String)> {
        let url = format!("{}api/v0.2/{path}", self.url);
        let started = Instant::now();
        let mut told = false;
        loop {
            match self.once(&url, body) {
                Ok(Answer::Later(after)) => self.wait_to_retry(&url, started, after)?,
                Ok(Answer::Now(r)) if r.0 != 502 && r.0 != 503 && r.0 != 504 => return Ok(r),
                Ok(Answer::Now((status, _))) if started.elapsed() > self.patience => {
                    bail!(
                        "{url}: the server answered {status} for {}",
                        self.waited(started)
                    )
                }
                Err(e) if started.elapsed() > self.patience => {
                    return Err(e).with_context(|| {
                        format!(
                            "the LAVA server {} did not answer for {}",
                            self.url,
                            self.waited(started)
                        )
                    });
                }
                _ => {
                    if !told {
                        eprintln!(
                            "note: the LAVA server {} does not answer; waiting for it",
                            self.url
                        );
                        told = true;
                    }
                    crate::signals::check()?;
                    std::thread::sleep(Duration::from_secs(2));
                }
            }
        }
    }

    /// Sleep the `after` a 429 asked for (1 s when it named none), or refuse when that
    /// would pass the lab's patience.
    fn wait_to_retry(&self, url: &str, started: Instant, after: Option<Duration>) -> Result<()> {
        let after = after.unwrap_or(Duration::from_secs(1));
        if started.elapsed() + after > self.patience {
            bail!(
                "{url}: the server answered 429 (too many requests) for {}, and asks to wait \
                 {} more",
                self.waited(started),
                humantime::format_duration(after)
            );
        }
        eprintln!(
            "note: the LAVA server {} asks for fewer requests (429): waiting {}",
            self.url,
            humantime::format_duration(after)
        );
        crate::signals::check()?;
        std::thread::sleep(after);
        Ok(())
    }

    fn waited(&self, started: Instant) -> String {
        humantime::format_duration(Duration::from_secs(started.elapsed().as_secs())).to_string()
    }

    fn once(&self, url: &str, body: Option<&str>) -> Result<Answer> {
        let auth = format!("Token {}", self.token.0);
        let mut resp = match body {
            None => self.agent.get(url).header("Authorization", &auth).call(),
            Some(b) => (self.agent.post(url))
                .header("Authorization", &auth)
                .content_type("application/json")
                .send(b),
        }?;
        let status = resp.status().as_u16();
        if status == 429 {
            // Seconds, as labs' proxies send it (an HTTP date is taken as none given).
            let after = (resp.headers().get("retry-after"))
                .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            return Ok(Answer::Later(after));
        }
        let text = resp
            .body_mut()
            .with_config()
            .limit(1 << 30)
            .read_to_string()?;
        Ok(Answer::Now((status, text)))
    }

    /// Check, from this machine, that `url` serves a file of `len` bytes (a HEAD request,
    /// without the token: the lab's workers fetch it so).
    pub(crate) fn check_served(&self, url: &str, len: u64) -> Result<()> {
        let shown = crate::core::redact_url(url);
        let resp =
            (self.agent.head(url).call()).with_context(|| format!("{shown} does not answer"))?;
        let status = resp.status().as_u16();
        if status != 200 {
            bail!("{shown} answered {status}");
        }
        let served = (resp.headers().get("content-length"))
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        match served {
            Some(n) if n != len => bail!("{shown} serves {n} bytes, not the file's {len}"),
            _ => Ok(()),
        }
    }

    /// A GET of `path` that must answer 200, as JSON.
    fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T> {
        let (status, text) = self.request(path, None)?;
        self.ok(path, status, &text)?;
        serde_json::from_str(&text)
            .with_context(|| format!("{}: not the JSON LAVA answers", self.path_url(path)))
    }

    fn path_url(&self, path: &str) -> String {
        format!("{}api/v0.2/{path}", self.url)
    }

    fn ok(&self, path: &str, status: u16, text: &str) -> Result<()> {
        match status {
            200..=299 => Ok(()),
            401 | 403 => Err(crate::refused!(
                format!(
                    "the LAVA server {} refused the token ({status}: {}): ",
                    self.url,
                    detail(text)
                ),
                "give a token of a user of this server (SYSCOST_LAVA_TOKEN or ",
                Opt::LavaTokenFile,
                ")"
            )),
            _ => bail!(
                "{}: the server answered {status}: {}",
                self.path_url(path),
                detail(text)
            ),
        }
    }

    /// Check the server answers, is a LAVA server, and takes the token: its version, and the
    /// user the token is (`system/whoami/`, which any user may ask; a lab may refuse a user
    /// the list of jobs, so that is no test of the token). A server older than whoami is
    /// asked for a job instead, and its user is not known.
    pub(crate) fn check(&self) -> Result<Server> {
        #[derive(Deserialize)]
        struct Version {
            version: String,
        }
        #[derive(Deserialize)]
        struct Whoami {
            user: String,
        }
        let v: Version = self
            .get("system/version/")
            .with_context(|| format!("{} is not a LAVA server that answers", self.url))?;
        // A token the server does not know is refused (401) on any request.
        let (status, text) = self.request("system/whoami/", None)?;
        let user = if status == 404 {
            let _: serde_json::Value = self.get("jobs/?limit=1")?;
            None
        } else {
            self.ok("system/whoami/", status, &text)?;
            let w: Whoami = serde_json::from_str(&text)
                .with_context(|| format!("{}: not the JSON LAVA answers", self.url))?;
            Some(w.user).filter(|u| !u.is_empty())
        };
        Ok(Server {
            version: v.version,
            user,
        })
    }

    /// The devices of `device_type` that can take jobs (not retired), with their tags' names;
    /// refused when the server has no such type or no such device.
    pub(crate) fn devices(&self, device_type: &str) -> Result<Vec<Device>> {
        #[derive(Deserialize)]
        struct Page<T> {
            results: Vec<T>,
        }
        #[derive(Deserialize)]
        struct Listed {
            hostname: String,
            health: Health,
            #[serde(default)]
            tags: Vec<u64>,
        }
        #[derive(Deserialize)]
        struct Tag {
            id: u64,
            name: String,
        }
        let (status, text) = self.request(&format!("devicetypes/{device_type}/"), None)?;
        if status == 404 {
            bail!(
                "the LAVA server {} has no device type {device_type}",
                self.url
            );
        }
        self.ok("devicetypes/", status, &text)?;
        let page: Page<Listed> =
            self.get(&format!("devices/?device_type={device_type}&limit=500"))?;
        let tags: Page<Tag> = self.get("tags/?limit=10000")?;
        let name = |id: &u64| {
            tags.results
                .iter()
                .find(|t| t.id == *id)
                .map(|t| t.name.clone())
        };
        let devices: Vec<Device> = (page.results.into_iter())
            .filter(|d| d.health != Health::Retired)
            .map(|d| Device {
                tags: d.tags.iter().filter_map(name).collect(),
                hostname: d.hostname,
                health: d.health,
            })
            .collect();
        if devices.is_empty() {
            bail!(
                "the LAVA server {} has no device of type {device_type} that takes jobs",
                self.url
            );
        }
        Ok(devices)
    }

    /// The health of device `hostname` now.
    pub(crate) fn health(&self, hostname: &str) -> Result<Health> {
        #[derive(Deserialize)]
        struct One {
            health: Health,
        }
        let d: One = self.get(&format!("devices/{hostname}/"))?;
        Ok(d.health)
    }

    /// Refuse a job definition the server's validate endpoint refuses (it answers 200 with
    /// "Job invalid: ..."), in its words.
    pub(crate) fn validate(&self, definition: &str) -> Result<()> {
        let body = serde_json::json!({"definition": definition, "strict": true}).to_string();
        let (status, text) = self.request("jobs/validate/", Some(&body))?;
        self.ok("jobs/validate/", status, &text)?;
        let message = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("message")?.as_str().map(str::to_string))
            .unwrap_or_else(|| text.clone());
        if message.trim() != "Job valid." {
            bail!("the LAVA server refuses syscost's job: {message}");
        }
        Ok(())
    }

    /// Submit a job; its id.
    pub(crate) fn submit(&self, definition: &str) -> Result<u64> {
        #[derive(Deserialize)]
        struct Submitted {
            job_ids: Vec<u64>,
        }
        let body = serde_json::json!({ "definition": definition }).to_string();
        let (status, text) = self.request("jobs/", Some(&body))?;
        self.ok("jobs/", status, &text)?;
        let s: Submitted = serde_json::from_str(&text)
            .with_context(|| format!("the server's answer to a submission: {}", detail(&text)))?;
        s.job_ids
            .first()
            .copied()
            .context("the server gave the job no id")
    }

    /// How many jobs (everyone's) wait in the queue for a device of type `device_type`: the
    /// depth KernelCI gates its submissions on.
    pub(crate) fn queued(&self, device_type: &str) -> Result<u64> {
        #[derive(Deserialize)]
        struct Count {
            count: u64,
        }
        let c: Count = self.get(&format!(
            "jobs/?requested_device_type={device_type}&state__in=Submitted,Scheduling&limit=1"
        ))?;
        Ok(c.count)
    }

    pub(crate) fn job(&self, id: u64) -> Result<Job> {
        self.get(&format!("jobs/{id}/"))
    }

    /// Jobs `ids`, in one request (`id__in`), whatever their number: a poll of every open
    /// job costs the lab one query a tick. A job the server does not list is left out.
    pub(crate) fn jobs(&self, ids: &[u64]) -> Result<Vec<Job>> {
        #[derive(Deserialize)]
        struct Page {
            results: Vec<Job>,
        }
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list: Vec<String> = ids.iter().map(u64::to_string).collect();
        let page: Page = self.get(&format!(
            "jobs/?id__in={}&limit={}",
            list.join(","),
            ids.len()
        ))?;
        Ok(page.results)
    }

    /// The worker a device is attached to.
    pub(crate) fn worker_of(&self, device: &str) -> Result<String> {
        #[derive(Deserialize)]
        struct Device {
            worker_host: String,
        }
        Ok(self
            .get::<Device>(&format!("devices/{device}/"))?
            .worker_host)
    }

    /// The job's log, as the server gives it (YAML, a `{dt, lvl, msg}` mapping per line).
    pub(crate) fn log(&self, id: u64) -> Result<String> {
        let path = format!("jobs/{id}/logs/");
        let (status, text) = self.request(&path, None)?;
        self.ok(&path, status, &text)?;
        Ok(text)
    }

    /// Every test case of the job's results.
    pub(crate) fn tests(&self, id: u64) -> Result<Vec<TestCase>> {
        #[derive(Deserialize)]
        struct Page {
            results: Vec<TestCase>,
            next: Option<String>,
        }
        let mut out = Vec::new();
        loop {
            let page: Page =
                self.get(&format!("jobs/{id}/tests/?limit=500&offset={}", out.len()))?;
            let more = page.next.is_some() && !page.results.is_empty();
            out.extend(page.results);
            if !more {
                return Ok(out);
            }
        }
    }

    /// Ask the server to cancel a job (a finished one stays as it ended). A job the server
    /// does not know has nothing to cancel: LAVA before 2025.10 answers that with 500 (its
    /// view lets the missing job's exception through), so a 500 is accepted when the job
    /// itself is then not found, or has finished.
    pub(crate) fn cancel(&self, id: u64) -> Result<()> {
        let path = format!("jobs/{id}/cancel/");
        let (status, text) = self.request(&path, None)?;
        match status {
            200..=299 | 404 => Ok(()),
            500 if self.gone_or_finished(id)? => Ok(()),
            _ => self.ok(&path, status, &text),
        }
    }

    /// Whether job `id` is unknown to the server, or finished.
    fn gone_or_finished(&self, id: u64) -> Result<bool> {
        let (status, text) = self.request(&format!("jobs/{id}/"), None)?;
        Ok(match status {
            404 => true,
            200 => serde_json::from_str::<Job>(&text).is_ok_and(|j| j.finished()),
            _ => false,
        })
    }
}

/// A server's answer to one request: its status and body, or 429's "later" (after its
/// Retry-After, if it gave one).
enum Answer {
    Now((u16, String)),
    Later(Option<Duration>),
}

/// What a LAVA server says of itself and of the token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Server {
    pub version: String,
    /// The user the token is, when the server has `system/whoami/`.
    pub user: Option<String>,
}

impl Server {
    /// Whether a job may name its device (`device:`), which LAVA takes from 2026.07 on;
    /// before, only device tags keep a job on one device. A version that does not read as
    /// YEAR.MONTH takes none.
    pub(crate) fn takes_device_key(&self) -> bool {
        let mut parts = self.version.split(['.', '+', '-']);
        let number = |p: Option<&str>| p.and_then(|p| p.parse::<u32>().ok());
        match (number(parts.next()), number(parts.next())) {
            (Some(year), Some(month)) => (year, month) >= (2026, 7),
            _ => false,
        }
    }

    /// `, submitting as USER`, or nothing when the server did not say.
    pub(crate) fn as_whom(&self) -> String {
        self.user
            .as_ref()
            .map_or(String::new(), |u| format!(", submitting as {u}"))
    }
}

/// A server's error body in a line: DRF's `detail`, or the text cut short.
fn detail(text: &str) -> String {
    let v: Option<serde_json::Value> = serde_json::from_str(text).ok();
    if let Some(d) = v
        .as_ref()
        .and_then(|v| v.get("detail")?.as_str().map(str::to_string))
    {
        return d;
    }
    let t: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match t.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &t[..at]),
        None => t,
    }
}

/// The console's lines in a job's log (`lvl: target`), in order. The log is YAML; each line is
/// one flow mapping whose strings LAVA writes double-quoted, which JSON reads as long as no
/// YAML-only escape is in it: a line that does not read is not one of syscost's (whose lines
/// are ASCII letters, digits and punctuation) and is skipped. No YAML parser is needed.
pub(crate) fn console_lines(log: &str) -> Vec<String> {
    #[derive(Deserialize)]
    struct Entry {
        lvl: String,
        msg: serde_json::Value,
    }
    log.lines()
        .filter_map(|l| {
            let e: Entry = serde_json::from_str(l.trim_start().strip_prefix("- ")?).ok()?;
            (e.lvl == "target").then_some(e.msg)
        })
        .filter_map(|m| m.as_str().map(|s| s.replace("\\\"", "\"")))
        .collect()
}

/// LAVA's own words on why a job failed: its `job` case's error type and message, else the
/// job's failure comment.
pub(crate) fn failure_words(job: &Job, tests: &[TestCase]) -> String {
    failure(job, tests).words
}

/// Why a job failed, as LAVA says it: the error type and message of its `job` case, else its
/// failure comment (no type).
pub(crate) fn failure(job: &Job, tests: &[TestCase]) -> JobFailure {
    // LAVA's own suite ends with a `job` case (the suite is an id in 2023.01's API).
    let case = tests
        .iter()
        .rfind(|t| t.name == "job" && t.result != "pass");
    let meta = case.and_then(|c| c.metadata.as_deref()).unwrap_or("");
    let field = |name: &str| {
        meta.lines().find_map(|l| {
            let v = l.trim().strip_prefix(name)?.strip_prefix(':')?.trim();
            Some(v.trim_matches(|c| c == '\'' || c == '"').to_string())
        })
    };
    let error_type = field("error_type").map(|t| ErrorType::of(&t));
    let words = match (&error_type, field("error_msg")) {
        (Some(t), Some(m)) => format!("{} error: {m}", t.name()),
        (None, Some(m)) => m,
        _ => job
            .failure_comment
            .clone()
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| format!("the job ended {}", job.health)),
    };
    JobFailure { error_type, words }
}

/// Whether the job's boot never ran: LAVA calls its failure the infrastructure's (by its
/// error type) and the console printed nothing (2023.01 calls a guest that ended early
/// "Infrastructure error: Connection closed" too; its console shows it ran).
pub(crate) fn never_ran(job: &Job, tests: &[TestCase], console: &[String]) -> bool {
    job.health == JobHealth::Incomplete
        && failure(job, tests).error_type == Some(ErrorType::Infrastructure)
        && console.iter().all(|l| l.trim().is_empty())
}

#[cfg(test)]
mod unit {
    use super::*;

    /// An HTTP server on a port of its own that gives each connection the next of `answers`.
    fn server(answers: Vec<String>) -> String {
        use std::io::{BufRead, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for answer in answers {
                let (mut conn, _) = listener.accept().unwrap();
                let mut reader = std::io::BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                while reader.read_line(&mut line).unwrap() > 2 {
                    line.clear();
                }
                conn.write_all(answer.as_bytes()).unwrap();
            }
        });
        url
    }

    fn answer(status: &str, headers: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    }

    #[test]
    fn too_many_requests_waits_its_retry_after_within_the_patience() {
        let version = r#"{"version": "2023.01"}"#;
        let url = server(vec![
            answer("429 Too Many Requests", "Retry-After: 1\r\n", ""),
            answer("200 OK", "Content-Type: application/json\r\n", version),
        ]);
        let lab = Lab::new(&url, Token::new("t").unwrap()).unwrap();
        let started = Instant::now();
        let (status, text) = lab.request("system/version/", None).unwrap();
        assert_eq!((status, text.as_str()), (200, version));
        assert!(
            started.elapsed() >= Duration::from_secs(1),
            "Retry-After kept"
        );

        let url = server(vec![answer(
            "429 Too Many Requests",
            "Retry-After: 3600\r\n",
            "",
        )]);
        let lab = Lab::new(&url, Token::new("t").unwrap()).unwrap();
        let lab = lab.with_patience(Duration::from_secs(60));
        let e = lab
            .request("system/version/", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("answered 429 (too many requests)") && e.contains("1h more"),
            "{e}"
        );
    }

    #[test]
    fn only_lava_2026_07_and_later_take_a_device_in_a_job() {
        let takes = |v: &str| {
            Server {
                version: v.into(),
                user: None,
            }
            .takes_device_key()
        };
        assert!(!takes("2023.01") && !takes("2025.10") && !takes("2026.06"));
        assert!(takes("2026.07") && takes("2026.08.1") && takes("2027.01+dev"));
        assert!(!takes("git-abcdef") && !takes(""));
    }

    /// LAVA before 2025.10 answers a cancel of a job it does not know with 500: the job is
    /// looked up, and only a job that is still there and open keeps the error.
    #[test]
    fn a_cancel_answered_500_is_accepted_for_a_job_the_server_does_not_have() {
        let json = "Content-Type: application/json\r\n";
        let url = server(vec![
            answer(
                "500 Internal Server Error",
                "",
                "<h1>Server Error (500)</h1>",
            ),
            answer("404 Not Found", json, r#"{"detail": "Not found."}"#),
        ]);
        let lab = Lab::new(&url, Token::new("t").unwrap()).unwrap();
        lab.cancel(7).unwrap();

        let running = r#"{"id": 8, "state": "Running", "health": "Unknown"}"#;
        let url = server(vec![
            answer(
                "500 Internal Server Error",
                "",
                "<h1>Server Error (500)</h1>",
            ),
            answer("200 OK", json, running),
        ]);
        let lab = Lab::new(&url, Token::new("t").unwrap()).unwrap();
        let e = lab.cancel(8).unwrap_err().to_string();
        assert!(e.contains("500"), "a running job's cancel failed: {e}");
    }

    #[test]
    fn a_url_is_kept_without_its_password_and_the_token_never_shows() {
        let u = shown_url("https://me:s3cret@lava.example.org/lab/").unwrap();
        assert_eq!(u, "https://lava.example.org/lab/");
        assert_eq!(
            shown_url("http://127.0.0.1:8000").unwrap(),
            "http://127.0.0.1:8000/"
        );
        let e = shown_url("ftp://me:s3cret@x/").unwrap_err().to_string();
        assert!(!e.contains("s3cret") && e.contains("me:***@x"), "{e}");
        let t = Token::new(" abc123\n").unwrap();
        assert_eq!(format!("{t:?}"), "***");
        let lab = Lab::new("http://u:pw@127.0.0.1:1/", t).unwrap();
        let shown = format!("{lab:?}");
        assert!(
            !shown.contains("abc123") && !shown.contains("pw"),
            "{shown}"
        );
        assert!(Token::new("a b").is_err() && Token::new("").is_err());
    }

    #[test]
    fn console_lines_are_read_from_the_log_and_quotes_restored() {
        let log = concat!(
            "- {\"dt\": \"2026-11-25T17:00:00.1\", \"lvl\": \"info\", \"msg\": \"start\"}\n",
            "- {\"dt\": \"2026-11-25T17:00:00.2\", \"lvl\": \"target\", \"msg\": \"SYSCOST-BEGIN\"}\n",
            "- {\"dt\": \"2026-11-25T17:00:00.3\", \"lvl\": \"target\", \"msg\": \"say \\\\\\\"hi\\\\\\\"\"}\n",
            "- {\"dt\": \"2026-11-25T17:00:00.4\", \"lvl\": \"target\", \"msg\": \"odd \\x07 escape\"}\n",
            "- {\"dt\": \"2026-11-25T17:00:00.5\", \"lvl\": \"results\", \"msg\": {\"case\": \"x\"}}\n",
        );
        assert_eq!(console_lines(log), ["SYSCOST-BEGIN", "say \"hi\""]);
    }

    #[test]
    fn lava_own_words_say_why_a_job_failed() {
        let job = Job {
            id: 3,
            state: JobState::Finished,
            health: JobHealth::Incomplete,
            actual_device: None,
            failure_comment: None,
        };
        let case = |meta: &str| TestCase {
            name: "job".into(),
            result: "fail".into(),
            metadata: Some(meta.into()),
        };
        let t = [case(
            "case: job\nerror_msg: lava test monitoring reached end of file\nerror_type: Test\nresult: fail\n",
        )];
        assert_eq!(
            failure_words(&job, &t),
            "Test error: lava test monitoring reached end of file"
        );
        assert!(!never_ran(&job, &t, &[]));
        let i = [case(
            "error_msg: 'Unable to fetch file:///x'\nerror_type: Infrastructure\n",
        )];
        assert!(never_ran(&job, &i, &[]));
        assert!(
            !never_ran(&job, &i, &["Linux version 6.12".into()]),
            "the guest ran"
        );
        assert_eq!(failure_words(&job, &[]), "the job ended Incomplete");
        // The type decides, not the words: a message that says "Infrastructure" in a test
        // error is not the lab's fault, and the type alone is.
        let worded = [case(
            "error_msg: Infrastructure is fine\nerror_type: Test\n",
        )];
        assert!(!never_ran(&job, &worded, &[]));
        let typed = [case(
            "error_msg: 'Connection closed'\nerror_type: Infrastructure\n",
        )];
        assert_eq!(
            failure(&job, &typed).error_type,
            Some(ErrorType::Infrastructure)
        );
        assert!(never_ran(&job, &typed, &[]));
        let state: Vec<JobState> =
            serde_json::from_str(r#"["Scheduling", "Finished", "Paused"]"#).unwrap();
        assert_eq!(
            state,
            [JobState::Scheduling, JobState::Finished, JobState::Other]
        );
        let health: JobHealth = serde_json::from_str(r#""Canceled""#).unwrap();
        assert_eq!(health.to_string(), "Canceled");
    }
}
