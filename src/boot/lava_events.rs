//! LAVA's event stream: the server's publisher (lava-publisher) sends each change of a job's
//! state over a websocket, where LAVA's own Apache configuration serves it at `/ws/` beside
//! the API; lava-worker hears of its jobs the same way. A run that follows it hears that a
//! job ended when the server does, where a poll every 0.5 s heard it 0.25 s later on average
//! at the cost of a request to the lab each time.

use anyhow::{Context, Result};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use tungstenite::Message;

/// How long the stream's server may take to answer before syscost polls instead.
const CONNECT: Duration = Duration::from_secs(5);

/// Where a run hears of its jobs.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) enum EventsAt {
    /// The server's `/ws/`, as LAVA serves it.
    #[default]
    Server,
    /// A stream elsewhere (a publisher on its own port).
    Url(String),
    /// Nowhere: the API is polled.
    Off,
}

impl EventsAt {
    /// `off`, or an http(s):// or ws(s):// URL, kept without any `user:password@` (the
    /// stream asks for none, and the plan is written to disk).
    pub(crate) fn parse(s: &str) -> Result<EventsAt, String> {
        if s == "off" {
            return Ok(EventsAt::Off);
        }
        ws_url(s)?;
        let (scheme, host, path) = super::lava::url_parts(s).unwrap_or(("", s, ""));
        Ok(EventsAt::Url(format!("{scheme}://{host}/{path}")))
    }

    /// The stream's ws:// or wss:// URL, for the lab at `lab` (its API's shown URL).
    pub(crate) fn url(&self, lab: &str) -> Option<String> {
        match self {
            EventsAt::Server => ws_url(&format!("{lab}ws/")).ok(),
            EventsAt::Url(u) => ws_url(u).ok(),
            EventsAt::Off => None,
        }
    }
}

fn ws_url(url: &str) -> Result<String, String> {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let ws = match scheme {
        "http" | "ws" => "ws",
        "https" | "wss" => "wss",
        _ => return Err("give off, or an http(s):// or ws(s):// URL".into()),
    };
    Ok(format!("{ws}://{rest}"))
}

/// The ids of the jobs the stream names, as they change, read by a thread of its own that
/// ends when this is dropped.
pub(crate) struct Events {
    ids: Receiver<u64>,
    socket: TcpStream,
}

impl Events {
    /// Follow the stream at `url` (ws:// or wss://).
    pub(crate) fn connect(url: &str) -> Result<Events> {
        Self::open(url).with_context(|| crate::core::redact_url(url))
    }

    fn open(url: &str) -> Result<Events> {
        let (host, port) = host_port(url).context("no host")?;
        let addr = (host.as_str(), port)
            .to_socket_addrs()?
            .next()
            .with_context(|| format!("{host} has no address"))?;
        let socket = TcpStream::connect_timeout(&addr, CONNECT)?;
        socket.set_read_timeout(Some(CONNECT))?;
        let (mut ws, _) = tungstenite::client_tls(url, socket.try_clone()?)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        socket.set_read_timeout(None)?;
        let (tx, ids) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            while let Ok(m) = ws.read() {
                // A close is answered by the next read, which then ends the loop.
                let id = match m {
                    Message::Text(t) => job_of(&t),
                    _ => None,
                };
                if id.is_some_and(|id| tx.send(id).is_err()) {
                    break;
                }
            }
        });
        Ok(Events { ids, socket })
    }

    /// Wait until the stream names one of `ids`, or `limit` passes: whether it did. A
    /// stream that ended returns at once: the caller polls instead.
    pub(crate) fn wait(&self, ids: &[u64], limit: Duration) -> Result<bool, Ended> {
        let until = Instant::now() + limit;
        loop {
            match self
                .ids
                .recv_timeout(until.saturating_duration_since(Instant::now()))
            {
                Ok(id) if ids.contains(&id) => return Ok(true),
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => return Ok(false),
                Err(RecvTimeoutError::Disconnected) => return Err(Ended),
            }
        }
    }
}

/// The stream ended: its server closed it, or went away.
#[derive(Debug)]
pub(crate) struct Ended;

impl Drop for Events {
    fn drop(&mut self) {
        // The reader's blocked read fails, and its thread ends.
        let _ = self.socket.shutdown(Shutdown::Both);
    }
}

/// The host and port to connect to, as the websocket handshake reads the URL (`http::Uri`,
/// which tungstenite parses it with).
fn host_port(url: &str) -> Option<(String, u16)> {
    let uri: tungstenite::http::Uri = url.parse().ok()?;
    let host = uri.host().filter(|h| !h.is_empty())?;
    let default = if uri.scheme_str() == Some("wss") {
        443
    } else {
        80
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Some((host.to_string(), uri.port_u16().unwrap_or(default)))
}

/// The job a publisher's message is about: `[topic, uuid, time, user, data]`, the data a JSON
/// text of its own with the job's id, for a topic ending in `.testjob`.
fn job_of(message: &str) -> Option<u64> {
    let (topic, _, _, _, data): (String, String, String, String, String) =
        serde_json::from_str(message).ok()?;
    if !topic.ends_with(".testjob") {
        return None;
    }
    let data: serde_json::Value = serde_json::from_str(&data).ok()?;
    data.get("job")?.as_u64()
}

/// A publisher on a local port for tests: it sends an event for each (job, state), then
/// closes its stream once told (or once the returned sender is dropped).
#[cfg(test)]
pub(crate) fn publisher(
    events: &[(u64, &str)],
) -> (
    String,
    std::sync::mpsc::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/ws/", server.local_addr().unwrap());
    let texts: Vec<String> = (events.iter())
        .map(|(id, state)| {
            let data = format!("{{\"state\": \"{state}\", \"job\": {id}}}");
            serde_json::json!(["org.lavasoftware.testjob", "u", "t", "admin", data]).to_string()
        })
        .collect();
    let (close, closing) = std::sync::mpsc::channel();
    let peer = std::thread::spawn(move || {
        let mut ws = tungstenite::accept(server.accept().unwrap().0).unwrap();
        for t in texts {
            ws.send(Message::text(t)).unwrap();
        }
        let _ = closing.recv();
        ws.close(None).unwrap();
        while ws.read().is_ok() {}
    });
    (url, close, peer)
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_job_s_event_names_it_and_a_device_s_does_not() {
        let job = r#"["org.lavasoftware.testjob", "afde89f4", "2026-11-28T06:41:05.864814", "admin", "{\"health\": \"Complete\", \"state\": \"Finished\", \"job\": 14}"]"#;
        assert_eq!(job_of(job), Some(14));
        let device = r#"["org.lavasoftware.device", "b679fa78", "2026-11-28T06:41:16.949844", "lavaserver", "{\"state\": \"Idle\", \"device\": \"qemu-01\", \"job\": 14}"]"#;
        assert_eq!(job_of(device), None);
        assert_eq!(job_of("not json"), None);
    }

    #[test]
    fn the_stream_is_the_server_s_ws_unless_told() {
        let lab = "https://lava.example.org/";
        assert_eq!(
            EventsAt::Server.url(lab).as_deref(),
            Some("wss://lava.example.org/ws/")
        );
        let own = EventsAt::parse("http://127.0.0.1:5501/ws/").unwrap();
        assert_eq!(own.url(lab).as_deref(), Some("ws://127.0.0.1:5501/ws/"));
        assert_eq!(EventsAt::parse("off").unwrap().url(lab), None);
        let secret = EventsAt::parse("https://me:s3cret@lab.example/ws/").unwrap();
        assert_eq!(secret, EventsAt::Url("https://lab.example/ws/".into()));
        assert!(EventsAt::parse("ftp://x/").is_err());
    }

    #[test]
    fn hosts_and_ports_are_read_as_urls_write_them() {
        let hp = |u: &str| host_port(u);
        assert_eq!(
            hp("ws://127.0.0.1:5501/ws/"),
            Some(("127.0.0.1".into(), 5501))
        );
        assert_eq!(
            hp("wss://lava.example.org/ws/"),
            Some(("lava.example.org".into(), 443))
        );
        assert_eq!(hp("ws://u:p@h/ws/"), Some(("h".into(), 80)));
        assert_eq!(hp("ws://[::1]:8001/"), Some(("::1".into(), 8001)));
        assert_eq!(hp("ws:///ws/"), None);
    }

    #[test]
    fn a_stream_that_does_not_answer_is_named_without_its_password() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let e = Events::connect(&format!("ws://lab:s3cret@127.0.0.1:{port}/ws/")).err();
        let e = format!("{:#}", e.expect("nothing listens"));
        assert!(
            e.starts_with("ws://") && e.contains(&format!("127.0.0.1:{port}/ws/: ")),
            "{e}"
        );
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn a_stream_that_ends_says_so_and_one_that_is_quiet_times_out() {
        let (url, close, peer) = publisher(&[(7, "Finished"), (8, "Finished")]);
        let events = Events::connect(&url).unwrap();
        assert!(events.wait(&[8], Duration::from_secs(10)).unwrap());
        assert!(!events.wait(&[9], Duration::from_millis(50)).unwrap());
        close.send(()).unwrap();
        peer.join().unwrap();
        assert!(events.wait(&[9], Duration::from_secs(10)).is_err());
    }
}
