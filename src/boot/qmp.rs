//! QEMU's machine protocol (QMP) on a unix socket: JSON objects one per line, a greeting,
//! `qmp_capabilities` before any command, and asynchronous events between the replies.
//! Written here with serde_json because syscost sends three commands (`qmp_capabilities`,
//! `query-cpus-fast`, `cont`); the QAPI crates generate bindings for every command QEMU has.

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

/// A QMP session, in command mode.
pub(crate) struct Qmp {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

/// One vCPU of the guest and the host thread that runs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Vcpu {
    pub index: u32,
    pub thread: i32,
}

impl Qmp {
    /// Connect to the socket QEMU (`child`) listens on once it has started, within `wait`.
    pub(crate) fn connect(path: &Path, child: &mut Child, wait: Duration) -> Result<Qmp> {
        let started = Instant::now();
        let stream = loop {
            match UnixStream::connect(path) {
                Ok(s) => break s,
                Err(e) if started.elapsed() > wait => {
                    bail!("QEMU's QMP socket {} did not open: {e}", path.display())
                }
                Err(_) => {}
            }
            if let Some(status) = child.try_wait()? {
                bail!("QEMU ended before its QMP socket opened ({status})");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let mut q = Qmp {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        };
        let greeting = q.read()?;
        if greeting.get("QMP").is_none() {
            bail!("QEMU's QMP socket greeted with {greeting}");
        }
        q.execute("qmp_capabilities")?;
        Ok(q)
    }

    fn read(&mut self) -> Result<Value> {
        let mut line = String::new();
        if self
            .reader
            .read_line(&mut line)
            .context("reading QEMU's QMP socket")?
            == 0
        {
            bail!("QEMU closed its QMP socket");
        }
        serde_json::from_str(&line).with_context(|| format!("QEMU's QMP sent {line:?}"))
    }

    /// Run `command` and return what it returned; events that come first are skipped.
    pub(crate) fn execute(&mut self, command: &str) -> Result<Value> {
        let mut line = serde_json::to_vec(&json!({ "execute": command }))?;
        line.push(b'\n');
        self.writer.write_all(&line)?;
        loop {
            let mut reply = self.read()?;
            if let Some(r) = reply.get_mut("return") {
                return Ok(r.take());
            }
            if let Some(e) = reply.get("error") {
                bail!("QEMU refused {command}: {e}");
            }
        }
    }

    /// The guest's vCPUs and their host threads.
    pub(crate) fn vcpus(&mut self) -> Result<Vec<Vcpu>> {
        let cpus = self.execute("query-cpus-fast")?;
        vcpus_of(&cpus)
    }
}

fn vcpus_of(reply: &Value) -> Result<Vec<Vcpu>> {
    let list = reply
        .as_array()
        .context("query-cpus-fast did not return a list")?;
    list.iter()
        .map(|c| {
            let index = c.get("cpu-index").and_then(Value::as_u64);
            let thread = c.get("thread-id").and_then(Value::as_i64);
            match (index, thread) {
                (Some(i), Some(t)) => Ok(Vcpu {
                    index: i as u32,
                    thread: t as i32,
                }),
                _ => bail!("query-cpus-fast returned a vCPU without index or thread: {c}"),
            }
        })
        .collect()
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn vcpus_are_read_from_query_cpus_fast() {
        let reply = json!([
            {"cpu-index": 0, "qom-path": "/machine/unattached/device[0]", "thread-id": 4711,
             "props": {"core-id": 0}, "target": "x86_64"},
            {"cpu-index": 1, "thread-id": 4712, "target": "x86_64"}
        ]);
        assert_eq!(
            vcpus_of(&reply).unwrap(),
            [
                Vcpu {
                    index: 0,
                    thread: 4711
                },
                Vcpu {
                    index: 1,
                    thread: 4712
                }
            ]
        );
        assert!(vcpus_of(&json!([{"cpu-index": 0}])).is_err());
    }
}
