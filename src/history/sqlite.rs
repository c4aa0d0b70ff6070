//! The history in a SQLite file (rusqlite, SQLite bundled: no system library): WAL mode and
//! writes that take the lock up front let several processes record at once; a new store is
//! built whole under a temporary name, then linked into place.

use super::{
    APPLICATION, Arg, ENTRY_COLUMNS, Entry, Filter, SCHEMA_VERSION, conditions, digest,
    readable_schema, view_of,
};
use crate::core::input::{Opt, spelled};
use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The conditions of `f` in SQLite's dialect, and their arguments.
fn filtered(f: &Filter) -> (String, Vec<rusqlite::types::Value>) {
    let (sql, args) = conditions(
        f,
        &|n| format!("?{n}"),
        &|p| format!("CAST(json_extract(params, {p}) AS TEXT)"),
        &|k| format!("$.{k}"),
    );
    let args = args
        .into_iter()
        .map(|a| match a {
            Arg::Text(t) => t.into(),
            Arg::Int(i) => i.into(),
        })
        .collect();
    (sql, args)
}

pub(crate) struct Lite {
    conn: Connection,
    path: PathBuf,
}

impl Lite {
    /// Open (creating if need be) the store at `path`: a file that is not a syscost history, or
    /// one written by a newer syscost, is refused with the reason.
    pub(crate) fn open(path: &Path) -> Result<Lite> {
        // SQLite would make a database of an empty file or write through a device: a path
        // that exists must already be a store.
        if let Ok(meta) = std::fs::metadata(path)
            && (!meta.is_file() || meta.len() == 0)
        {
            let another = crate::said!("give another ", Opt::History).spell(spelled);
            bail!(
                "history {}: exists and is not a syscost history ({}); {another}",
                path.display(),
                if meta.is_file() {
                    "an empty file"
                } else {
                    "not a regular file"
                }
            );
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("history: cannot create {}", dir.display()))?;
        }
        if std::fs::symlink_metadata(path).is_err() {
            Self::create(path)?;
        }
        let conn = Connection::open(path)
            .with_context(|| format!("history: cannot open {}", path.display()))?;
        let store = Lite {
            conn,
            path: path.to_path_buf(),
        };
        store
            .init()
            .map_err(|e| anyhow::anyhow!("history {}: {e:#}", path.display()))?;
        Ok(store)
    }

    /// Make a new store at `path` whole or not at all: built under a temporary name beside it,
    /// then linked into place. A process that opens `path` meanwhile sees no file or a complete
    /// store, never the empty file SQLite starts from (which is refused as not a store); when
    /// two create it at once, the first link wins and the other opens it.
    fn create(path: &Path) -> Result<()> {
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_else(|| "history".into());
        let prefix = format!(".{name}.");
        // Leftovers of a creator killed before its link: `.NAME.PID.new` of a dead PID.
        if let Ok(entries) = std::fs::read_dir(dir.unwrap_or(Path::new("."))) {
            for e in entries.flatten() {
                let f = e.file_name().to_string_lossy().into_owned();
                let pid = f
                    .strip_prefix(&prefix)
                    .and_then(|r| r.split('.').next())
                    .and_then(|p| p.parse::<u32>().ok());
                if let Some(pid) = pid
                    && !Path::new(&format!("/proc/{pid}")).exists()
                {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let tmp = path.with_file_name(format!("{prefix}{}.new", std::process::id()));
        let built = (|| -> Result<()> {
            let conn = Connection::open(&tmp)
                .with_context(|| format!("history: cannot create {}", path.display()))?;
            Lite {
                conn,
                path: tmp.clone(),
            }
            .init()
        })();
        let linked = built.and_then(|()| match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
            // A file system without hard links: a rename (which a racing creator could
            // replace, losing nothing but its empty store).
            Err(_) => std::fs::rename(&tmp, path)
                .with_context(|| format!("history: cannot create {}", path.display())),
        });
        for suffix in ["", "-wal", "-shm"] {
            let mut f = tmp.clone().into_os_string();
            f.push(suffix);
            let _ = std::fs::remove_file(f);
        }
        linked
    }

    fn init(&self) -> Result<()> {
        let c = &self.conn;
        c.busy_timeout(std::time::Duration::from_secs(10))?;
        let tables: i64 = c
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| match e {
                rusqlite::Error::SqliteFailure(f, _)
                    if f.code == rusqlite::ErrorCode::NotADatabase =>
                {
                    crate::refused!(
                        "not a database (a SQLite file is needed; give another ",
                        Opt::History,
                        ")"
                    )
                }
                other => other.into(),
            })?;
        if tables == 0 {
            c.pragma_update(None, "journal_mode", "WAL")?;
            // Two processes may create the store at once: the first to take the write lock
            // creates it, the other finds it made.
            c.execute_batch("BEGIN IMMEDIATE")?;
            let tables: i64 =
                c.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
            if tables == 0 {
                c.execute_batch(&super::tables("INTEGER PRIMARY KEY", "INTEGER", "REAL"))?;
                c.execute(
                    "INSERT INTO meta VALUES ('application', ?1), ('schema_version', ?2)",
                    params![APPLICATION, SCHEMA_VERSION.to_string()],
                )?;
            }
            c.execute_batch("COMMIT")?;
        }
        let app: Option<String> = c
            .query_row(
                "SELECT value FROM meta WHERE key = 'application'",
                [],
                |r| r.get(0),
            )
            .optional()
            .unwrap_or(None);
        if app.as_deref() != Some(APPLICATION) {
            return Err(crate::refused!(
                "a SQLite database, but not a syscost history; give another ",
                Opt::History
            ));
        }
        let version = readable_schema(&c.query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get::<_, String>(0),
        )?)?;
        if version < 2 {
            self.migrate_to_2()?;
        }
        c.pragma_update(None, "foreign_keys", "ON")?;
        Ok(())
    }

    /// Schema 1 to 2: each result's JSON moves to `bodies`, with its view.
    fn migrate_to_2(&self) -> Result<()> {
        let tx = rusqlite::Transaction::new_unchecked(
            &self.conn,
            rusqlite::TransactionBehavior::Immediate,
        )?;
        // Another process may have migrated it while this one waited for the lock.
        let version: String = tx.query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )?;
        if version != "1" {
            return Ok(());
        }
        tx.execute_batch(
            "CREATE TABLE bodies (
                 result_id INTEGER PRIMARY KEY REFERENCES results(id) ON DELETE CASCADE,
                 json TEXT NOT NULL, view TEXT NOT NULL);",
        )?;
        {
            let mut read = tx.prepare("SELECT id, json FROM results")?;
            let mut write =
                tx.prepare("INSERT INTO bodies (result_id, json, view) VALUES (?1, ?2, ?3)")?;
            let mut rows = read.query([])?;
            while let Some(r) = rows.next()? {
                let (id, json): (i64, String) = (r.get(0)?, r.get(1)?);
                let v: Value = serde_json::from_str(&json).unwrap_or(Value::Null);
                write.execute(params![id, json, view_of(&v)])?;
            }
        }
        tx.execute_batch(
            "ALTER TABLE results DROP COLUMN json;
             UPDATE meta SET value = '2' WHERE key = 'schema_version';",
        )?;
        tx.commit()
            .context("migrating the history to schema 2 (a read-only store cannot be)")
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Store a result (its JSON text, as written to files) with `tags`. Returns its id and
    /// whether it was new (the same text stored again is the same entry; new tags are added).
    pub(crate) fn insert(&mut self, json: &str, tags: &[(String, String)]) -> Result<(i64, bool)> {
        let v: Value = serde_json::from_str(json).context("the result is not valid JSON")?;
        let digest = digest(json);
        let col = Entry::of(&v);
        // IMMEDIATE: a deferred transaction that reads then writes fails at once (SQLITE_BUSY,
        // no wait) when another process wrote in between.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let existing: Option<i64> = tx
            .query_row("SELECT id FROM results WHERE digest = ?1", [&digest], |r| {
                r.get(0)
            })
            .optional()?;
        let (id, new) = match existing {
            Some(id) => (id, false),
            None => {
                tx.execute(
                    "INSERT INTO results (digest, created_unix, kind, workload, params, host,
                         boot_id, kernel, cpu_model, config_hash, unit, median, ci_lo, ci_hi)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                    params![
                        digest,
                        col.created_unix,
                        col.kind,
                        col.workload,
                        col.params,
                        col.host,
                        col.boot_id,
                        col.kernel,
                        col.cpu_model,
                        col.config_hash,
                        col.unit,
                        col.median,
                        col.ci_lo,
                        col.ci_hi,
                    ],
                )?;
                let id = tx.last_insert_rowid();
                tx.execute(
                    "INSERT INTO bodies (result_id, json, view) VALUES (?1, ?2, ?3)",
                    params![id, json.trim(), view_of(&v)],
                )?;
                (id, true)
            }
        };
        for (k, v) in tags {
            tx.execute(
                "INSERT OR REPLACE INTO tags (result_id, key, value) VALUES (?1, ?2, ?3)",
                params![id, k, v],
            )?;
        }
        tx.commit()?;
        Ok((id, new))
    }

    /// The entries matching `f`, oldest first.
    pub(crate) fn list(&self, f: &Filter) -> Result<Vec<Entry>> {
        let (conditions, args) = filtered(f);
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM results r WHERE 1=1{conditions}{}",
            f.order()
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt.query_map(rusqlite::params_from_iter(args), |r| {
            Ok(Entry {
                id: r.get(0)?,
                created_unix: r.get(1)?,
                kind: r.get(2)?,
                workload: r.get(3)?,
                params: r.get(4)?,
                host: r.get(5)?,
                boot_id: r.get(6)?,
                kernel: r.get(7)?,
                cpu_model: r.get(8)?,
                config_hash: r.get(9)?,
                unit: r.get(10)?,
                median: r.get(11)?,
                ci_lo: r.get(12)?,
                ci_hi: r.get(13)?,
                tags: Vec::new(),
            })
        })?;
        let mut out: Vec<Entry> = rows.collect::<rusqlite::Result<_>>()?;
        self.fill_tags(&mut out)?;
        Ok(out)
    }

    pub(crate) fn count(&self, f: &Filter) -> Result<i64> {
        let (conditions, args) = filtered(f);
        Ok(self.conn.query_row(
            &format!("SELECT count(*) FROM results r WHERE 1=1{conditions}"),
            rusqlite::params_from_iter(args),
            |r| r.get(0),
        )?)
    }

    /// The tags of `entries`: looked up one by one for a few, read in one pass for many (a
    /// lookup per entry was a third of listing 100,000).
    fn fill_tags(&self, entries: &mut [Entry]) -> Result<()> {
        if entries.len() < 1000 {
            let mut tags = self
                .conn
                .prepare("SELECT key, value FROM tags WHERE result_id = ?1 ORDER BY key")?;
            for e in entries.iter_mut() {
                e.tags = tags
                    .query_map([e.id], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?;
            }
            return Ok(());
        }
        let mut all: std::collections::HashMap<i64, Vec<(String, String)>> = Default::default();
        let mut stmt = self
            .conn
            .prepare("SELECT result_id, key, value FROM tags ORDER BY result_id, key")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            all.entry(r.get(0)?)
                .or_default()
                .push((r.get(1)?, r.get(2)?));
        }
        for e in entries.iter_mut() {
            if let Some(t) = all.remove(&e.id) {
                e.tags = t;
            }
        }
        Ok(())
    }

    /// A stored result's JSON text.
    pub(crate) fn json(&self, id: i64) -> Result<String> {
        self.conn
            .query_row("SELECT json FROM bodies WHERE result_id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "history {}: no result with id {id} (syscost history list shows them)",
                    self.path.display()
                )
            })
    }

    /// The parts of stored results that comparisons read, as a result's JSON text (see
    /// `view_of`), in the order of `ids`.
    pub(crate) fn views(&self, ids: &[i64]) -> Result<Vec<String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT view FROM bodies WHERE result_id = ?1")?;
        ids.iter()
            .map(|id| {
                stmt.query_row([id], |r| r.get(0))
                    .optional()?
                    .ok_or_else(|| anyhow::anyhow!("history: no result with id {id}"))
            })
            .collect()
    }

    /// Remove results; the ids not stored are named.
    pub(crate) fn delete(&mut self, ids: &[i64]) -> Result<usize> {
        // IMMEDIATE: a deferred transaction that reads then writes fails at once (SQLITE_BUSY,
        // no wait) when another process wrote in between.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let mut n = 0;
        for id in ids {
            let gone = tx.execute("DELETE FROM results WHERE id = ?1", [id])?;
            if gone == 0 {
                bail!("history: no result with id {id}; nothing was deleted");
            }
            n += gone;
        }
        tx.commit()?;
        Ok(n)
    }
}

#[cfg(test)]
mod unit {
    use super::*;
    use crate::history::{parse_param, parse_tag};
    use rusqlite::Connection;

    const RUN: &str = r#"{"schema":"syscost-result","version":2,"kind":"run","created_unix":100,
        "workload":{"workload":"syscall","syscall":"getpid"},
        "environment":{"hostname":"a","boot_id":"b1","kernel_release":"6.18","cpu":{"model_name":"X"},
                       "config":{"CONFIG_AUDIT":"y"},"cmdline":"quiet"},
        "metrics":[{"name":"time","unit":"ns/call","summary":{"median":101.5,"ci95":[100.0,103.0]}}]}"#;

    #[test]
    fn results_are_stored_once_and_found_by_their_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/h.sqlite");
        let mut s = Lite::open(&path).unwrap();
        let (id, new) = s.insert(RUN, &[("build".into(), "a".into())]).unwrap();
        assert!(new);
        let (again, new) = s.insert(RUN, &[]).unwrap();
        assert_eq!((again, new), (id, false), "the same result is one entry");
        let other = RUN.replace("\"hostname\":\"a\"", "\"hostname\":\"c\"");
        s.insert(&other, &[]).unwrap();
        let all = s.list(&Filter::default()).unwrap();
        assert_eq!(all.len(), 2);
        let e = &all[0];
        assert_eq!(
            (e.kind.as_str(), e.workload.as_deref(), e.kernel.as_deref()),
            ("run", Some("syscall"), Some("6.18"))
        );
        assert_eq!(
            (e.median, e.ci_lo, e.ci_hi),
            (Some(101.5), Some(100.0), Some(103.0))
        );
        assert_eq!(e.tags, vec![("build".into(), "a".into())]);
        let by_host = Filter {
            host: Some("c".into()),
            ..Filter::default()
        };
        assert_eq!(s.list(&by_host).unwrap().len(), 1);
        let by_tag = Filter {
            tags: vec![("build".into(), "a".into())],
            ..Filter::default()
        };
        assert_eq!(s.list(&by_tag).unwrap()[0].id, id);
        let later = Filter {
            since: Some(101),
            ..Filter::default()
        };
        assert!(s.list(&later).unwrap().is_empty());
        assert_eq!(s.json(id).unwrap(), RUN.trim());
        assert_eq!(s.delete(&[id]).unwrap(), 1);
        assert!(s.json(id).is_err());
        assert!(s.delete(&[id]).is_err());
        drop(s);
        // Reopened: still there, and a second connection sees it (WAL).
        let s = Lite::open(&path).unwrap();
        assert_eq!(s.list(&Filter::default()).unwrap().len(), 1);
    }

    #[test]
    fn a_schema_1_store_is_migrated_and_its_views_filled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        let with_samples = RUN.replace(
            "\"metrics\"",
            "\"runs\":[{\"index\":0,\"pid\":7,\"samples\":[{\"ops\":1}]}],\"metrics\"",
        );
        let mut s = Lite::open(&path).unwrap();
        let (id, _) = s.insert(&with_samples, &[]).unwrap();
        drop(s);
        // What schema 1 looked like: the JSON in the results table, no views.
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "ALTER TABLE results ADD COLUMN json TEXT;
             UPDATE results SET json = (SELECT json FROM bodies WHERE result_id = results.id);
             DROP TABLE bodies;
             UPDATE meta SET value = '1' WHERE key = 'schema_version';",
        )
        .unwrap();
        drop(c);
        let s = Lite::open(&path).unwrap();
        let view: Value = serde_json::from_str(&s.views(&[id]).unwrap()[0]).unwrap();
        assert_eq!(view["runs"], serde_json::json!([{"index": 0, "pid": 7}]));
        assert_eq!(view["environment"]["kernel_release"], "6.18");
        assert!(view["environment"].get("config").is_none());
        assert_eq!(view["metrics"][0]["summary"]["median"], 101.5);
        let version: String = s
            .conn
            .query_row(
                "SELECT value FROM meta WHERE key = 'schema_version'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION.to_string());
        assert_eq!(s.json(id).unwrap(), with_samples.trim());
        assert!(s.views(&[id + 1]).is_err());
        assert!(parse_param("syscall=getpid").is_ok());
        assert!(parse_param("a b=c").is_err() && parse_param("=x").is_err());
    }

    #[test]
    fn foreign_and_newer_stores_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("notes.txt");
        std::fs::write(
            &text,
            "not a database at all, just some text that is long enough",
        )
        .unwrap();
        let e = format!("{:#}", Lite::open(&text).err().unwrap());
        assert!(e.contains("not a database"), "{e}");
        let other = dir.path().join("other.sqlite");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE x (y INTEGER);")
            .unwrap();
        let e = format!("{:#}", Lite::open(&other).err().unwrap());
        assert!(e.contains("not a syscost history"), "{e}");
        let newer = dir.path().join("newer.sqlite");
        drop(Lite::open(&newer).unwrap());
        Connection::open(&newer)
            .unwrap()
            .execute(
                "UPDATE meta SET value = '99' WHERE key = 'schema_version'",
                [],
            )
            .unwrap();
        let e = format!("{:#}", Lite::open(&newer).err().unwrap());
        assert!(e.contains("newer syscost") && e.contains("99"), "{e}");
        assert!(parse_tag("k=v").is_ok());
        assert!(parse_tag("kv").is_err() && parse_tag("=v").is_err());
    }
}
