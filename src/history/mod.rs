//! The history store: every result kept in one SQLite database (rusqlite, bundled, so no
//! system library is needed), whole, with indexed columns for what people filter on: time,
//! kind, workload and its parameters, host, boot, kernel, a hash of the kernel's config and
//! command line, CPU model, the primary metric's median and interval, and user tags.
//!
//! The same result stored twice is one entry (its SHA-256 is unique). The schema carries a
//! version; a newer one is refused with a message, older ones are migrated. The database runs
//! in WAL mode with a busy timeout, so two syscost processes can record at once, and a process
//! killed mid-write leaves every committed result readable.

pub(crate) mod postgres;
pub(crate) mod sqlite;
pub(crate) mod version;

use crate::core::input::Opt;
use anyhow::{Result, bail};
use serde_json::Value;
use std::path::PathBuf;

pub(crate) use postgres::Pg;
pub(crate) use sqlite::Lite;

/// The schema this build writes and reads. 2 moved each result's JSON into `bodies`, beside
/// its `view` (the parts that comparisons read: metrics, workload, environment summary), so
/// `history list` scans small rows and `history compare` parses no raw samples.
pub(crate) const SCHEMA_VERSION: i64 = 2;
/// What marks a database as syscost's.
pub(crate) const APPLICATION: &str = "syscost-history";

/// A store's schema version, as its meta table holds it (text), checked: one this build can
/// read (older ones are migrated by the store).
pub(crate) fn readable_schema(text: &str) -> Result<i64> {
    let version: i64 = text
        .trim()
        .parse()
        .map_err(|_| anyhow::anyhow!("its schema version is not a number"))?;
    if version > SCHEMA_VERSION {
        bail!(
            "written by a newer syscost (history schema {version}; this one reads up to \
             {SCHEMA_VERSION}): upgrade syscost to use it"
        );
    }
    Ok(version)
}

/// Where a history lives: a SQLite file, or a PostgreSQL database given by its URL. Parsed
/// once, from `--history` or `SYSCOST_HISTORY`: text shaped like a URL (`scheme:/...`) is one,
/// and only `postgres://` and `postgresql://` are supported, so a mistyped URL is refused
/// rather than taken for a file path (which would put its password in a directory's name).
/// Shown, a URL's password is masked.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Location {
    Sqlite(PathBuf),
    Postgres(String),
}

impl std::str::FromStr for Location {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Location, String> {
        if s.is_empty() {
            return Err(
                "the history location is empty: give a file path or a postgres:// URL".into(),
            );
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(Location::Postgres(s.to_string()));
        }
        if let Some(scheme) = url_scheme(s) {
            return Err(format!(
                "'{}' is a URL syscost cannot use ({scheme}:): a history is a SQLite file path, \
                 or a PostgreSQL URL written postgres://USER@HOST/DB or \
                 postgresql:///DB?host=/run/postgresql (the scheme in lower case, with //)",
                crate::core::redact_url(s)
            ));
        }
        Ok(Location::Sqlite(PathBuf::from(s)))
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => write!(f, "{}", crate::core::redact_url(url)),
        }
    }
}

/// The scheme of text shaped like a URL: letters (then letters, digits, `+.-`), a colon and a
/// slash, as in `mysql://`, `POSTGRES://` or `postgres:/`. A path such as `./a:b` is none.
fn url_scheme(s: &str) -> Option<&str> {
    let (scheme, rest) = s.split_once(':')?;
    let mut chars = scheme.chars();
    let shaped = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
        && rest.starts_with('/');
    shaped.then_some(scheme)
}

impl Location {
    /// The default: `SYSCOST_HISTORY`, else `$XDG_DATA_HOME/syscost/history.sqlite`, else
    /// `~/.local/share/syscost/history.sqlite`.
    pub(crate) fn default_location() -> Result<Location> {
        if let Some(p) = std::env::var_os("SYSCOST_HISTORY").filter(|p| !p.is_empty()) {
            return p
                .to_string_lossy()
                .parse()
                .map_err(|e| anyhow::anyhow!("SYSCOST_HISTORY: {e}"));
        }
        use crate::core::places::{Kept, syscost_dir};
        let Some(dir) = syscost_dir(Kept::Data) else {
            return Err(crate::refused!(
                "history: no HOME to keep it under: give ",
                Opt::History,
                " PATH"
            ));
        };
        Ok(Location::Sqlite(dir.join("history.sqlite")))
    }

    /// The location as given, password and all: only for a file only root reads (a kexec
    /// campaign's state), never to print. A relative path is made absolute.
    pub(crate) fn unredacted(&self) -> String {
        match self {
            Location::Sqlite(p) => std::path::absolute(p)
                .unwrap_or_else(|_| p.clone())
                .display()
                .to_string(),
            Location::Postgres(url) => url.clone(),
        }
    }

    /// `given`, else the default.
    pub(crate) fn or_default(given: &Option<Location>) -> Result<Location> {
        match given {
            Some(l) => Ok(l.clone()),
            None => Location::default_location(),
        }
    }
}

/// One stored result, as `history list` shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Entry {
    pub id: i64,
    pub created_unix: i64,
    pub kind: String,
    pub workload: Option<String>,
    pub params: Option<String>,
    pub host: Option<String>,
    pub boot_id: Option<String>,
    pub kernel: Option<String>,
    pub cpu_model: Option<String>,
    pub config_hash: Option<String>,
    pub unit: Option<String>,
    pub median: Option<f64>,
    pub ci_lo: Option<f64>,
    pub ci_hi: Option<f64>,
    pub tags: Vec<(String, String)>,
}

/// What `history list` filters on; every field narrows.
#[derive(Clone, Debug, Default)]
pub(crate) struct Filter {
    pub workload: Option<String>,
    pub kernel: Option<String>,
    pub host: Option<String>,
    pub boot: Option<String>,
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub tags: Vec<(String, String)>,
    /// Workload parameters, KEY=VALUE (`syscall=getpid`).
    pub params: Vec<(String, String)>,
    /// Only the newest this many (still listed oldest first); `None`: all.
    pub newest: Option<usize>,
}

impl Filter {
    /// The ORDER BY (and LIMIT) of a listing: oldest first, or the newest N newest first
    /// (the caller reverses them).
    pub(crate) fn order(&self) -> String {
        match self.newest {
            Some(n) => format!(" ORDER BY created_unix DESC, id DESC LIMIT {n}"),
            None => " ORDER BY created_unix, id".into(),
        }
    }
}

/// The longest tag key and value, in characters: names and labels, not documents.
pub(crate) const TAG_KEY_MAX: usize = 64;
pub(crate) const TAG_VALUE_MAX: usize = 256;

/// `key=value` of `--tag`. Control characters are refused (a newline in a value would forge a
/// row in a listing pasted into a mail), and so are keys and values beyond their bounds.
pub(crate) fn parse_tag(s: &str) -> Result<(String, String)> {
    if s.chars().any(char::is_control) {
        return Err(crate::refused!(
            Opt::Tag,
            format!(" {s:?}: a tag cannot hold control characters (newlines, tabs, escapes)")
        ));
    }
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && !k.contains(char::is_whitespace) => {
            if k.chars().count() > TAG_KEY_MAX || v.chars().count() > TAG_VALUE_MAX {
                let cut: String = s.chars().take(40).collect();
                return Err(crate::refused!(
                    Opt::Tag,
                    format!(
                        " '{cut}...': a key has at most {TAG_KEY_MAX} characters and a value at \
                         most {TAG_VALUE_MAX}"
                    )
                ));
            }
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(crate::refused!(
            Opt::Tag,
            format!(" '{s}': give KEY=VALUE, e.g. "),
            Opt::Tag,
            " build=align-32"
        )),
    }
}

/// `key=value` of `--param`: a workload parameter, as the result's workload object names it.
pub(crate) fn parse_param(s: &str) -> Result<(String, String)> {
    match s.split_once('=') {
        Some((k, v))
            if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
        {
            Ok((k.to_string(), v.to_string()))
        }
        _ => Err(crate::refused!(
            Opt::Param,
            format!(" '{s}': give KEY=VALUE with a parameter's name as result files spell it "),
            "(letters, digits, _), e.g. ",
            Opt::Param,
            " syscall=getpid"
        )),
    }
}

/// The environment a result was measured in: its own, or an audit sweep's first step's (a
/// sweep's steps are runs, each with the environment it ran in).
fn environment_of(v: &Value) -> &Value {
    match &v["environment"] {
        e if e.is_object() => e,
        _ => &v["steps"][0]["result"]["environment"],
    }
}

/// The parts of a result that comparisons read (see `results::view`): everything but the raw
/// samples, the counters' descriptions and the full environment.
pub(crate) fn view_of(v: &Value) -> String {
    let env = environment_of(v);
    let mut doc = serde_json::Map::new();
    for k in [
        "schema",
        "version",
        "kind",
        "created_unix",
        "workload",
        "op_name",
        "options",
        "metrics",
        "warnings",
        "groups",
    ] {
        if let Some(x) = v.get(k) {
            doc.insert(k.into(), x.clone());
        }
    }
    if env.is_object() {
        doc.insert(
            "environment".into(),
            serde_json::json!({
                "hostname": env["hostname"], "boot_id": env["boot_id"],
                "kernel_release": env["kernel_release"],
                "hardware_pmu": env["hardware_pmu"].as_bool().unwrap_or(false),
            }),
        );
    }
    if let Some(runs) = v["runs"].as_array() {
        let meta: Vec<Value> = runs
            .iter()
            .map(|r| serde_json::json!({"index": r["index"], "pid": r["pid"]}))
            .collect();
        doc.insert("runs".into(), meta.into());
    }
    Value::Object(doc).to_string()
}

/// A result's identity: the SHA-256 of its JSON text, trimmed (what makes two imports one).
pub(crate) fn digest(json: &str) -> String {
    sha256(json.trim().as_bytes())
}

/// The kernel configuration a result ran under, as 16 hex digits: a hash of its environment's
/// config and command line (`None` for a result with no environment).
pub(crate) fn config_hash(v: &Value) -> Option<String> {
    let env = environment_of(v);
    let config = serde_json::json!([env["config"], env["cmdline"]]);
    (!env.is_null()).then(|| sha256(config.to_string().as_bytes())[..16].into())
}

fn sha256(text: &[u8]) -> String {
    crate::core::sha256_hex(text)
}

impl Entry {
    /// The columns of a result's JSON as stored (id 0 and no tags until it is).
    pub(crate) fn of(v: &Value) -> Entry {
        let s = |x: &Value| x.as_str().map(String::from);
        let env = environment_of(v);
        let primary = v["metrics"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["name"] == "time"));
        let summary = primary.map(|m| &m["summary"]);
        let ci = summary.and_then(|x| Some((x["ci95"][0].as_f64()?, x["ci95"][1].as_f64()?)));
        Entry {
            id: 0,
            // Kinds that carry no time of their own (a comparison) are dated by their storing.
            created_unix: v["created_unix"]
                .as_i64()
                .filter(|t| *t > 0)
                .unwrap_or(crate::core::now_unix() as i64),
            kind: s(&v["kind"]).unwrap_or_default(),
            workload: s(&v["workload"]["workload"]),
            params: v
                .get("workload")
                .filter(|w| w.is_object())
                .map(|w| w.to_string()),
            host: s(&env["hostname"]),
            boot_id: s(&env["boot_id"]),
            kernel: s(&env["kernel_release"]),
            cpu_model: s(&env["cpu"]["model_name"]),
            config_hash: config_hash(v),
            unit: primary.and_then(|m| s(&m["unit"])),
            median: summary.and_then(|x| x["median"].as_f64()),
            ci_lo: ci.map(|c| c.0),
            ci_hi: ci.map(|c| c.1),
            tags: Vec::new(),
        }
    }
}

/// The tables of a store, the same in SQLite and PostgreSQL but for the types of the row id
/// (`serial`: an auto-incremented primary key), of references to it (`int`) and of floats.
pub(crate) fn tables(serial: &str, int: &str, real: &str) -> String {
    format!(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE results (
             id {serial},
             digest TEXT NOT NULL UNIQUE,
             created_unix {int} NOT NULL,
             kind TEXT NOT NULL,
             workload TEXT, params TEXT, host TEXT, boot_id TEXT, kernel TEXT,
             cpu_model TEXT, config_hash TEXT, unit TEXT,
             median {real}, ci_lo {real}, ci_hi {real});
         CREATE TABLE bodies (
             result_id {int} PRIMARY KEY REFERENCES results(id) ON DELETE CASCADE,
             json TEXT NOT NULL, view TEXT NOT NULL);
         CREATE INDEX results_time ON results(created_unix);
         CREATE INDEX results_workload ON results(workload);
         CREATE INDEX results_kernel ON results(kernel);
         CREATE INDEX results_host ON results(host);
         CREATE INDEX results_boot ON results(boot_id);
         CREATE TABLE tags (
             result_id {int} NOT NULL REFERENCES results(id) ON DELETE CASCADE,
             key TEXT NOT NULL, value TEXT NOT NULL,
             PRIMARY KEY (result_id, key));
         CREATE INDEX tags_kv ON tags(key, value);"
    )
}

/// A value bound to a query.
pub(crate) enum Arg {
    Text(String),
    Int(i64),
}

/// The conditions of `f`, each starting with ` AND `, and their arguments in order. `ph(n)` is
/// the n-th placeholder (`?n` or `$n`); `param(p)` the text of the workload parameter whose key
/// is bound at placeholder `p`, and `key(k)` how the key is bound.
pub(crate) fn conditions(
    f: &Filter,
    ph: &dyn Fn(usize) -> String,
    param: &dyn Fn(&str) -> String,
    key: &dyn Fn(&str) -> String,
) -> (String, Vec<Arg>) {
    let mut sql = String::new();
    let mut args = Vec::new();
    let columns = [
        ("workload", &f.workload),
        ("kernel", &f.kernel),
        ("host", &f.host),
        ("boot_id", &f.boot),
    ];
    for (col, v) in columns {
        if let Some(v) = v {
            args.push(Arg::Text(v.clone()));
            sql.push_str(&format!(" AND {col} = {}", ph(args.len())));
        }
    }
    if let Some(t) = f.since {
        args.push(Arg::Int(t));
        sql.push_str(&format!(" AND created_unix >= {}", ph(args.len())));
    }
    if let Some(t) = f.until {
        args.push(Arg::Int(t));
        sql.push_str(&format!(" AND created_unix <= {}", ph(args.len())));
    }
    for (k, v) in &f.tags {
        args.push(Arg::Text(k.clone()));
        args.push(Arg::Text(v.clone()));
        sql.push_str(&format!(
            " AND EXISTS (SELECT 1 FROM tags t WHERE t.result_id = r.id AND t.key = {} \
             AND t.value = {})",
            ph(args.len() - 1),
            ph(args.len())
        ));
    }
    for (k, v) in &f.params {
        args.push(Arg::Text(key(k)));
        args.push(Arg::Text(v.clone()));
        sql.push_str(&format!(
            " AND {} = {}",
            param(&ph(args.len() - 1)),
            ph(args.len())
        ));
    }
    (sql, args)
}

/// The columns `history list` reads, in the order of [`Entry`].
pub(crate) const ENTRY_COLUMNS: &str = "id, created_unix, kind, workload, params, host, boot_id, \
    kernel, cpu_model, config_hash, unit, median, ci_lo, ci_hi";

/// Where results are kept: a SQLite file, or a PostgreSQL database shared by many machines.
pub(crate) enum Store {
    Sqlite(Lite),
    Postgres(Pg),
}

impl Store {
    /// Open (creating if need be) the store at `location`, to record in it. A store that is
    /// not syscost's, or of a newer schema, is refused with the reason.
    pub(crate) fn open(location: &Location) -> Result<Store> {
        match location {
            Location::Postgres(url) => Ok(Store::Postgres(Pg::open(url)?)),
            Location::Sqlite(path) => Ok(Store::Sqlite(Lite::open(path)?)),
        }
    }

    /// Open the store at `location` to read it or delete from it: a SQLite file that does not
    /// exist is said to be missing, not created (with its directories) at a mistyped path.
    pub(crate) fn open_existing(location: &Location) -> Result<Store> {
        if let Location::Sqlite(path) = location
            && std::fs::symlink_metadata(path).is_err()
        {
            return Err(crate::refused!(
                format!(
                    "history {}: no such store (nothing has been recorded there); ",
                    path.display()
                ),
                "measuring commands and `history import` create it, or give the ",
                Opt::History,
                " of an existing one"
            ));
        }
        Store::open(location)
    }

    /// The store, for messages (a URL without its password).
    pub(crate) fn location(&self) -> String {
        match self {
            Store::Sqlite(s) => s.path().display().to_string(),
            Store::Postgres(p) => p.location().to_string(),
        }
    }

    /// Store a result (its JSON text, as written to files) with `tags`. Returns its id and
    /// whether it was new (the same text stored again is the same entry; new tags are added).
    pub(crate) fn insert(&mut self, json: &str, tags: &[(String, String)]) -> Result<(i64, bool)> {
        match self {
            Store::Sqlite(s) => s.insert(json, tags),
            Store::Postgres(p) => p.insert(json, tags),
        }
    }

    /// The entries matching `f`, oldest first.
    pub(crate) fn list(&mut self, f: &Filter) -> Result<Vec<Entry>> {
        let mut out = match self {
            Store::Sqlite(s) => s.list(f)?,
            Store::Postgres(p) => p.list(f)?,
        };
        if f.newest.is_some() {
            out.reverse();
        }
        Ok(out)
    }

    /// How many results match `f` (its `newest` aside).
    pub(crate) fn count(&mut self, f: &Filter) -> Result<i64> {
        match self {
            Store::Sqlite(s) => s.count(f),
            Store::Postgres(p) => p.count(f),
        }
    }

    /// A stored result's JSON text.
    pub(crate) fn json(&mut self, id: i64) -> Result<String> {
        match self {
            Store::Sqlite(s) => s.json(id),
            Store::Postgres(p) => p.json(id),
        }
    }

    /// The parts of stored results that comparisons read, in the order of `ids`.
    pub(crate) fn views(&mut self, ids: &[i64]) -> Result<Vec<String>> {
        match self {
            Store::Sqlite(s) => s.views(ids),
            Store::Postgres(p) => p.views(ids),
        }
    }

    /// Remove results; an id not stored fails the whole deletion. An id given twice is one.
    pub(crate) fn delete(&mut self, ids: &[i64]) -> Result<usize> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let ids = &ids[..];
        match self {
            Store::Sqlite(s) => s.delete(ids),
            Store::Postgres(p) => p.delete(ids),
        }
    }
}

#[cfg(test)]
mod location {
    use super::Location;

    #[test]
    fn urls_are_postgres_or_refused_and_paths_are_files() {
        let pg = "postgres://lab:pw@db/syscost".parse::<Location>().unwrap();
        assert_eq!(
            pg,
            Location::Postgres("postgres://lab:pw@db/syscost".into())
        );
        assert_eq!(pg.to_string(), "postgres://lab:***@db/syscost");
        for path in ["h.sqlite", "./a:b/h.sqlite", "/var/lib/x/h.sqlite", "c:h"] {
            assert!(matches!(path.parse(), Ok(Location::Sqlite(_))), "{path}");
        }
        for bad in [
            "POSTGRES://u:pw@h/d",
            "postgres:/u:pw@h/d",
            "mysql://u:pw@h/d",
            "sqlite:///x",
        ] {
            let e = bad.parse::<Location>().unwrap_err();
            assert!(
                !e.contains("pw@") || e.contains(":***@") || !bad.contains('@'),
                "{e}"
            );
        }
        assert!("".parse::<Location>().is_err());
    }
}

#[cfg(test)]
mod entries {
    use super::Entry;

    /// An audit sweep keeps its environment in its steps' results: its entry still names the
    /// host and the kernel it ran on (a guest's boot included).
    #[test]
    fn a_sweep_s_entry_names_its_host_and_kernel() {
        let env =
            serde_json::json!({"hostname": "guest", "kernel_release": "6.1.0-56-cloud-amd64"});
        let sweep = serde_json::json!({
            "kind": "audit-sweep",
            "steps": [{"result": {"environment": env}}],
        });
        let e = Entry::of(&sweep);
        assert_eq!(e.host.as_deref(), Some("guest"));
        assert_eq!(e.kernel.as_deref(), Some("6.1.0-56-cloud-amd64"));
        let run = serde_json::json!({"kind": "run", "environment": {"hostname": "h"}});
        assert_eq!(Entry::of(&run).host.as_deref(), Some("h"));
    }
}
