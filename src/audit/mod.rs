//! The kernel's audit subsystem, through its netlink socket (what auditctl does), without
//! needing auditctl installed.
//!
//! Status requests use netlink-packet-audit's message types; rules are encoded and decoded by
//! [`rules`] (see there why).

pub(crate) mod addresses;
pub(crate) mod age;
pub(crate) mod anew;
pub(crate) mod btf;
pub mod libaudit;
pub(crate) mod load;
pub(crate) mod own;
pub mod rules;
pub mod rules_file;
pub mod session;
pub(crate) mod walk;

use anyhow::{Context, Result, bail};
use netlink_packet_audit::{AuditMessage, StatusMessage};
use netlink_packet_core::{
    NLM_F_ACK, NLM_F_REQUEST, NetlinkBuffer, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_AUDIT};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const AUDIT_LIST_RULES: u16 = 1013;
const AUDIT_ADD_RULE: u16 = 1011;
const AUDIT_DEL_RULE: u16 = 1012;
/// AUDIT_STATUS_ENABLED: the `mask` bit of AUDIT_SET that changes `enabled`.
const STATUS_ENABLED: u32 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;

/// The audit filter lists (include/uapi/linux/audit.h, AUDIT_FILTER_*).
pub(crate) fn list_name(list: u32) -> &'static str {
    match list {
        0 => "user",
        1 => "task",
        2 => "entry",
        3 => "watch",
        4 => "exit",
        5 => "exclude",
        6 => "fs",
        7 => "uring",
        _ => "unknown",
    }
}

/// What `auditctl -s` shows, plus the rule count per filter list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditStatus {
    /// 0 disabled, 1 enabled, 2 enabled and locked until reboot.
    pub enabled: u32,
    pub failure: u32,
    /// Pid of the audit daemon (0: none).
    pub pid: u32,
    pub rate_limit: u32,
    pub backlog_limit: u32,
    pub lost: u32,
    pub backlog: u32,
    /// Rules per filter list, by name (`exit`, `task`, ...).
    pub rules: BTreeMap<String, u32>,
}

impl AuditStatus {
    pub(crate) fn rule_count(&self) -> u32 {
        self.rules.values().sum()
    }

    pub(crate) fn locked(&self) -> bool {
        self.enabled == 2
    }
}

/// A netlink audit socket.
pub struct AuditSocket {
    socket: Socket,
    seq: u32,
}

/// A socket call retried when a signal interrupted it (EINTR, where a handler was installed
/// without SA_RESTART). A request half done must finish: the command notices the signal at its
/// next check and unwinds, restoring audit, with the signal's exit status.
fn again<T>(mut call: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    loop {
        match call() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

impl AuditSocket {
    pub fn open() -> Result<AuditSocket> {
        let mut socket = Socket::new(NETLINK_AUDIT).context(
            "cannot open the audit netlink socket (is the kernel built with CONFIG_AUDIT?)",
        )?;
        socket
            .bind_auto()
            .context("cannot bind the audit netlink socket")?;
        socket
            .connect(&SocketAddr::new(0, 0))
            .context("cannot connect the audit netlink socket")?;
        Ok(AuditSocket { socket, seq: 0 })
    }

    fn send(&mut self, msg: AuditMessage, flags: u16) -> Result<u32> {
        self.seq += 1;
        let mut header = NetlinkHeader::default();
        header.flags = flags;
        header.sequence_number = self.seq;
        let mut packet = NetlinkMessage::new(header, NetlinkPayload::from(msg));
        packet.finalize();
        let mut buf = vec![0u8; packet.buffer_len()];
        packet.serialize(&mut buf);
        again(|| self.socket.send(&buf, 0))
            .map_err(|e| permission(e, "send to the audit socket"))?;
        Ok(self.seq)
    }

    /// Send a message whose payload syscost encodes itself (rules).
    fn send_raw(&mut self, ty: u16, payload: &[u8]) -> Result<u32> {
        self.seq += 1;
        let len = 16 + payload.len();
        let mut buf = Vec::with_capacity(len.next_multiple_of(4));
        buf.extend_from_slice(&(len as u32).to_ne_bytes());
        buf.extend_from_slice(&ty.to_ne_bytes());
        buf.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
        buf.extend_from_slice(&self.seq.to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes());
        buf.extend_from_slice(payload);
        buf.resize(len.next_multiple_of(4), 0);
        again(|| self.socket.send(&buf, 0))
            .map_err(|e| permission(e, "send to the audit socket"))?;
        Ok(self.seq)
    }

    /// Wait for the kernel's acknowledgement of request `seq`.
    fn ack(&mut self, seq: u32, what: &str) -> Result<()> {
        self.receive_until(seq, true, |_, _| Ok(true))
            .with_context(|| what.to_string())
    }

    /// Receive datagrams until `each` says stop (or NLMSG_DONE), handing each netlink message
    /// (type, payload).
    fn receive(&mut self, seq: u32, each: impl FnMut(u16, &[u8]) -> Result<bool>) -> Result<()> {
        self.receive_until(seq, false, each)
    }

    fn receive_until(
        &mut self,
        seq: u32,
        stop_at_ack: bool,
        mut each: impl FnMut(u16, &[u8]) -> Result<bool>,
    ) -> Result<()> {
        loop {
            let (buf, _) = again(|| self.socket.recv_from_full())
                .map_err(|e| permission(e, "read from the audit socket"))?;
            let mut off = 0;
            while off < buf.len() {
                let nl = NetlinkBuffer::new_checked(&buf[off..])
                    .map_err(|e| anyhow::anyhow!("malformed netlink reply from audit: {e}"))?;
                let len = nl.length() as usize;
                let ty = nl.message_type();
                let same = nl.sequence_number() == seq;
                let payload = nl.payload();
                if same {
                    if ty == NLMSG_ERROR {
                        let code = payload
                            .get(..4)
                            .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                            .unwrap_or(0);
                        if code != 0 {
                            return Err(permission(
                                std::io::Error::from_raw_os_error(-code),
                                "audit request",
                            ));
                        }
                        if stop_at_ack {
                            return Ok(());
                        }
                    } else if ty == NLMSG_DONE || !each(ty, payload)? {
                        return Ok(());
                    }
                }
                off += len.max(16).next_multiple_of(4);
            }
        }
    }

    /// AUDIT_GET: the status block.
    pub fn status_message(&mut self) -> Result<StatusMessage> {
        let seq = self.send(AuditMessage::GetStatus(None), NLM_F_REQUEST | NLM_F_ACK)?;
        let mut out = None;
        self.receive(seq, |ty, payload| {
            if ty == netlink_packet_audit::constants::AUDIT_GET {
                let buf = netlink_packet_audit::StatusMessageBuffer::new_checked(payload)
                    .map_err(|e| anyhow::anyhow!("malformed audit status: {e}"))?;
                use netlink_packet_core::Parseable;
                out = Some(
                    StatusMessage::parse(&buf)
                        .map_err(|e| anyhow::anyhow!("malformed audit status: {e}"))?,
                );
            }
            // The status comes before the ACK; keep reading until the ACK (code 0) ends it.
            Ok(out.is_none())
        })?;
        out.ok_or_else(|| anyhow::anyhow!("the kernel sent no audit status"))
    }

    /// AUDIT_LIST_RULES: every rule, in kernel order.
    pub fn list_rules(&mut self) -> Result<Vec<rules::Rule>> {
        let seq = self.send(AuditMessage::ListRules(None), NLM_F_REQUEST | NLM_F_ACK)?;
        let mut out = Vec::new();
        self.receive(seq, |ty, payload| {
            if ty == AUDIT_LIST_RULES {
                match rules::Rule::decode(payload) {
                    Some(r) => out.push(r),
                    None => bail!("the kernel listed an audit rule syscost cannot read"),
                }
            }
            Ok(true)
        })?;
        Ok(out)
    }

    /// AUDIT_ADD_RULE with a rule encoded by [`rules::encode`].
    pub fn add_rule(&mut self, rule: &[u8]) -> Result<()> {
        let seq = self.send_raw(AUDIT_ADD_RULE, rule)?;
        self.ack(seq, "adding an audit rule")
    }

    /// AUDIT_DEL_RULE with the exact bytes of a rule.
    pub fn del_rule(&mut self, rule: &[u8]) -> Result<()> {
        let seq = self.send_raw(AUDIT_DEL_RULE, rule)?;
        self.ack(seq, "deleting an audit rule")
    }

    /// AUDIT_SET of the enabled flag (0 or 1; 2 would lock audit until reboot and is refused).
    pub(crate) fn set_enabled(&mut self, enabled: u32) -> Result<()> {
        if enabled > 1 {
            bail!("syscost never locks audit (enabled=2 holds until reboot)");
        }
        let mut msg = StatusMessage::new();
        msg.mask = STATUS_ENABLED;
        msg.enabled = enabled;
        let seq = self.send(AuditMessage::SetStatus(msg), NLM_F_REQUEST | NLM_F_ACK)?;
        self.ack(seq, "setting audit's enabled flag")
    }

    /// AUDIT_SET of one other setting: `mask` is its AUDIT_STATUS_* bit (2 failure, 8 rate
    /// limit, 16 backlog limit, 32 backlog wait time).
    pub(crate) fn set_status(&mut self, mask: u32, value: u32) -> Result<()> {
        let mut msg = StatusMessage::new();
        msg.mask = mask;
        match mask {
            2 => msg.failure = value,
            8 => msg.rate_limiting = value,
            16 => msg.backlog_limit = value,
            32 => msg.backlog_wait_time = value,
            _ => bail!("syscost sets no audit status bit {mask:#x}"),
        }
        let seq = self.send(AuditMessage::SetStatus(msg), NLM_F_REQUEST | NLM_F_ACK)?;
        self.ack(seq, "setting audit's status")
    }

    /// Status and rule counts.
    pub fn status(&mut self) -> Result<AuditStatus> {
        let s = self.status_message()?;
        let mut rules = BTreeMap::new();
        for r in self.list_rules()? {
            *rules.entry(list_name(r.list).to_string()).or_insert(0) += 1;
        }
        Ok(AuditStatus {
            enabled: s.enabled,
            failure: s.failure,
            pid: s.pid,
            rate_limit: s.rate_limiting,
            backlog_limit: s.backlog_limit,
            lost: s.lost,
            backlog: s.backlog,
            rules,
        })
    }
}

fn permission(e: std::io::Error, what: &str) -> anyhow::Error {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => anyhow::anyhow!(
            "{what}: permission denied: audit control needs CAP_AUDIT_CONTROL (run as root)"
        ),
        Some(libc::ECONNREFUSED) | Some(libc::EPROTONOSUPPORT) => {
            anyhow::anyhow!("{what}: the kernel has no audit support (CONFIG_AUDIT): {e}")
        }
        _ => KernelRefused {
            what: what.to_string(),
            error: e,
        }
        .into(),
    }
}

/// What the kernel answered an audit request with, its errno kept for whoever explains it.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {error}")]
pub(crate) struct KernelRefused {
    pub what: String,
    /// Not a `source`: the message already says it.
    pub error: std::io::Error,
}

/// Read the audit status; errors are explained (privilege, kernel support).
pub(crate) fn status() -> Result<AuditStatus> {
    let mut s = AuditSocket::open()?;
    s.status()
}

/// Set in the environment, makes syscost treat audit as locked. Locking is irreversible until
/// reboot, so tests use this to check the refusal on a machine they must not lock.
pub const PRETEND_LOCKED_ENV: &str = "SYSCOST_TEST_PRETEND_AUDIT_LOCKED";

/// Fail unless `s` can be changed: audit locked (enabled=2) holds until reboot.
pub(crate) fn ensure_unlocked(s: &AuditStatus) -> Result<()> {
    if s.locked() || std::env::var_os(PRETEND_LOCKED_ENV).is_some() {
        bail!(
            "audit is locked (enabled=2, auditctl -e 2): no rule can be added or removed until \
             reboot; nothing was changed"
        );
    }
    Ok(())
}
