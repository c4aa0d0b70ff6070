//! The history in a PostgreSQL database, so a lab's machines record into one store and any of
//! them queries it: the same tables as the SQLite store (`postgres` crate, no TLS: a lab
//! network or a Unix socket). The password of a URL is never printed.

use super::{
    APPLICATION, Arg, ENTRY_COLUMNS, Entry, Filter, SCHEMA_VERSION, conditions, digest,
    readable_schema, view_of,
};
use anyhow::{Context, Result, bail};
use postgres::types::ToSql;
use postgres::{Client, NoTls};
use serde_json::Value;

/// The conditions of `f` in PostgreSQL's dialect, and their arguments.
fn filtered(f: &Filter) -> (String, Vec<Box<dyn ToSql + Sync>>) {
    let (sql, args) = conditions(
        f,
        &|n| format!("${n}"),
        &|p| format!("(params::jsonb ->> {p})"),
        &|k| k.to_string(),
    );
    let args = args
        .into_iter()
        .map(|a| -> Box<dyn ToSql + Sync> {
            match a {
                Arg::Text(t) => Box::new(t),
                Arg::Int(i) => Box::new(i),
            }
        })
        .collect();
    (sql, args)
}

pub(crate) struct Pg {
    client: Client,
    /// The URL with its password masked.
    shown: String,
}

/// The advisory lock under which a store is created (two first users at once create it once).
const CREATE_LOCK: i64 = 0x0073_7973_636f_7374; // "syscost" in ASCII

impl Pg {
    pub(crate) fn open(url: &str) -> Result<Pg> {
        let shown = crate::core::redact_url(url);
        let mut config: postgres::Config = url.parse().map_err(|e| {
            anyhow::anyhow!(
                "history {shown}: not a PostgreSQL URL ({e}); e.g. \
                 postgres://USER@HOST/DB or postgresql:///DB?host=/run/postgresql"
            )
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(std::time::Duration::from_secs(10));
        }
        let client = config.connect(NoTls).map_err(|e| {
            // postgres::Error's text is generic ("error connecting to server"); the cause is
            // in its source (refused, no such socket, authentication failed). Neither holds
            // the URL, so no password can leak from them.
            let cause = std::error::Error::source(&e)
                .map(|c| format!(" ({c})"))
                .unwrap_or_default();
            anyhow::anyhow!("history {shown}: cannot connect: {e}{cause}")
        })?;
        let mut pg = Pg { client, shown };
        pg.init()
            .map_err(|e| anyhow::anyhow!("history {}: {e:#}", pg.shown))?;
        Ok(pg)
    }

    pub(crate) fn location(&self) -> &str {
        &self.shown
    }

    fn init(&mut self) -> Result<()> {
        let mut tx = self.client.transaction()?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CREATE_LOCK])?;
        let has_meta: bool = tx
            .query_one("SELECT to_regclass('meta') IS NOT NULL", &[])?
            .get(0);
        if !has_meta {
            let tables: i64 = tx
                .query_one(
                    "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()",
                    &[],
                )?
                .get(0);
            if tables > 0 {
                bail!("a database with tables of its own, not a syscost history; give another");
            }
            tx.batch_execute(&super::tables(
                "BIGSERIAL PRIMARY KEY",
                "BIGINT",
                "DOUBLE PRECISION",
            ))?;
            tx.execute(
                "INSERT INTO meta VALUES ('application', $1), ('schema_version', $2)",
                &[&APPLICATION, &SCHEMA_VERSION.to_string()],
            )?;
        }
        let app: Option<String> = tx
            .query_opt("SELECT value FROM meta WHERE key = 'application'", &[])?
            .map(|r| r.get(0));
        if app.as_deref() != Some(APPLICATION) {
            bail!("a database with a meta table, but not a syscost history; give another");
        }
        readable_schema(
            &tx.query_one("SELECT value FROM meta WHERE key = 'schema_version'", &[])?
                .get::<_, String>(0),
        )?;
        tx.commit()?;
        Ok(())
    }

    pub(crate) fn insert(&mut self, json: &str, tags: &[(String, String)]) -> Result<(i64, bool)> {
        let v: Value = serde_json::from_str(json).context("the result is not valid JSON")?;
        let digest = digest(json);
        let col = Entry::of(&v);
        let mut tx = self.client.transaction()?;
        let inserted = tx.query_opt(
            "INSERT INTO results (digest, created_unix, kind, workload, params, host, boot_id,
                 kernel, cpu_model, config_hash, unit, median, ci_lo, ci_hi)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
             ON CONFLICT (digest) DO NOTHING RETURNING id",
            &[
                &digest,
                &col.created_unix,
                &col.kind,
                &col.workload,
                &col.params,
                &col.host,
                &col.boot_id,
                &col.kernel,
                &col.cpu_model,
                &col.config_hash,
                &col.unit,
                &col.median,
                &col.ci_lo,
                &col.ci_hi,
            ],
        )?;
        let (id, new) = match inserted {
            Some(row) => {
                let id: i64 = row.get(0);
                tx.execute(
                    "INSERT INTO bodies (result_id, json, view) VALUES ($1, $2, $3)",
                    &[&id, &json.trim(), &view_of(&v)],
                )?;
                (id, true)
            }
            None => (
                tx.query_one("SELECT id FROM results WHERE digest = $1", &[&digest])?
                    .get(0),
                false,
            ),
        };
        for (k, v) in tags {
            tx.execute(
                "INSERT INTO tags (result_id, key, value) VALUES ($1, $2, $3)
                 ON CONFLICT (result_id, key) DO UPDATE SET value = EXCLUDED.value",
                &[&id, k, v],
            )?;
        }
        tx.commit()?;
        Ok((id, new))
    }

    pub(crate) fn list(&mut self, f: &Filter) -> Result<Vec<Entry>> {
        let (conditions, args) = filtered(f);
        let sql = format!(
            "SELECT {ENTRY_COLUMNS} FROM results r WHERE 1=1{conditions}{}",
            f.order()
        );
        let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a.as_ref()).collect();
        let mut out: Vec<Entry> = self
            .client
            .query(&sql, &refs)?
            .iter()
            .map(|r| Entry {
                id: r.get(0),
                created_unix: r.get(1),
                kind: r.get(2),
                workload: r.get(3),
                params: r.get(4),
                host: r.get(5),
                boot_id: r.get(6),
                kernel: r.get(7),
                cpu_model: r.get(8),
                config_hash: r.get(9),
                unit: r.get(10),
                median: r.get(11),
                ci_lo: r.get(12),
                ci_hi: r.get(13),
                tags: Vec::new(),
            })
            .collect();
        let ids: Vec<i64> = out.iter().map(|e| e.id).collect();
        let mut tags: std::collections::HashMap<i64, Vec<(String, String)>> = Default::default();
        for r in self.client.query(
            "SELECT result_id, key, value FROM tags WHERE result_id = ANY($1) \
             ORDER BY result_id, key",
            &[&ids],
        )? {
            tags.entry(r.get(0)).or_default().push((r.get(1), r.get(2)));
        }
        for e in &mut out {
            e.tags = tags.remove(&e.id).unwrap_or_default();
        }
        Ok(out)
    }

    pub(crate) fn count(&mut self, f: &Filter) -> Result<i64> {
        let (conditions, args) = filtered(f);
        let refs: Vec<&(dyn ToSql + Sync)> = args.iter().map(|a| a.as_ref()).collect();
        let sql = format!("SELECT count(*) FROM results r WHERE 1=1{conditions}");
        Ok(self.client.query_one(&sql, &refs)?.get(0))
    }

    pub(crate) fn json(&mut self, id: i64) -> Result<String> {
        match self
            .client
            .query_opt("SELECT json FROM bodies WHERE result_id = $1", &[&id])?
        {
            Some(r) => Ok(r.get(0)),
            None => bail!(
                "history {}: no result with id {id} (syscost history list shows them)",
                self.shown
            ),
        }
    }

    pub(crate) fn views(&mut self, ids: &[i64]) -> Result<Vec<String>> {
        let mut by_id: std::collections::HashMap<i64, String> = self
            .client
            .query(
                "SELECT result_id, view FROM bodies WHERE result_id = ANY($1)",
                &[&ids],
            )?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        ids.iter()
            .map(|id| {
                by_id
                    .remove(id)
                    .ok_or_else(|| anyhow::anyhow!("history: no result with id {id}"))
            })
            .collect()
    }

    pub(crate) fn delete(&mut self, ids: &[i64]) -> Result<usize> {
        let mut tx = self.client.transaction()?;
        let mut n = 0;
        for id in ids {
            let gone = tx.execute("DELETE FROM results WHERE id = $1", &[id])?;
            if gone == 0 {
                bail!("history: no result with id {id}; nothing was deleted");
            }
            n += gone as usize;
        }
        tx.commit()?;
        Ok(n)
    }
}
