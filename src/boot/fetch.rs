//! Kernels where labs keep them: an arm's kernel at an http(s) URL, fetched once into a file
//! of the run's own and checked against the SHA-256 it was given. A lab is handed the same URL
//! and SHA-256, so its worker checks the bytes this machine checked.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// The largest kernel fetched: Debian's bzImages are about 8 MB, a debug build's 100 MB.
const MAX_BYTES: u64 = 1 << 30;

/// A SHA-256, kept in lowercase hexadecimal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub(crate) struct Sha256(String);

impl Sha256 {
    pub(crate) fn of(bytes: &[u8]) -> Sha256 {
        Sha256(crate::core::sha256_hex(bytes))
    }

    #[cfg(test)]
    pub(crate) fn hex(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for Sha256 {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Sha256> {
        if s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!(
                "{:?} is not a SHA-256: give its 64 hexadecimal digits, as sha256sum prints them",
                crate::core::printable(&s.chars().take(70).collect::<String>())
            );
        }
        Ok(Sha256(s.to_ascii_lowercase()))
    }
}

impl TryFrom<String> for Sha256 {
    type Error = anyhow::Error;
    fn try_from(s: String) -> Result<Sha256> {
        s.parse()
    }
}

impl From<Sha256> for String {
    fn from(s: Sha256) -> String {
        s.0
    }
}

impl std::fmt::Display for Sha256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A kernel at a URL, and the SHA-256 it must have when one was given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct KernelUrl {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<Sha256>,
}

/// `s` is a URL rather than a file: it starts with a scheme and `://`.
pub(crate) fn is_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+')
    })
}

impl KernelUrl {
    /// An http or https URL that names a server and carries no password: a lab shows its
    /// jobs' definitions, URLs included, to whoever can read the job.
    pub(crate) fn new(url: &str, sha256: Option<Sha256>) -> Result<KernelUrl> {
        let shown = crate::core::redact_url(url);
        let Some(rest) = (url.strip_prefix("http://")).or_else(|| url.strip_prefix("https://"))
        else {
            bail!("{shown}: give an http:// or https:// URL, or a file");
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if authority.contains('@') {
            bail!(
                "{shown}: a kernel's URL may carry no user or password (a lab shows every job's \
                 URLs to whoever reads the job): serve the kernel where it can be read without"
            );
        }
        if authority.is_empty() {
            bail!("{shown}: the URL names no server");
        }
        if url.chars().any(char::is_control) || url.contains(' ') {
            bail!("{shown}: a URL has no spaces or control characters");
        }
        Ok(KernelUrl {
            url: url.to_string(),
            sha256,
        })
    }

    /// Fetch the kernel into `to` (written whole or not at all), checking its SHA-256 when one
    /// was given; returns the file's SHA-256.
    pub(crate) fn fetch(&self, to: &Path) -> Result<Sha256> {
        let (bytes, got) = self.download()?;
        if let Some(want) = &self.sha256
            && *want != got
        {
            bail!(
                "{}: its SHA-256 is {got}, not the {want} it was given: the file at that URL is \
                 another kernel (or was cut short)",
                self.url
            );
        }
        crate::core::write_atomic(to, &bytes)?;
        Ok(got)
    }

    fn download(&self) -> Result<(Vec<u8>, Sha256)> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(600)))
            .user_agent(concat!("syscost/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let mut answer = (agent.get(&self.url).call())
            .with_context(|| format!("{}: cannot fetch the kernel", self.url))?;
        let status = answer.status();
        if !status.is_success() {
            bail!("{}: the server answered {status}", self.url);
        }
        let mut bytes = Vec::new();
        let mut reader = answer.body_mut().with_config().limit(MAX_BYTES).reader();
        (reader.read_to_end(&mut bytes)).with_context(|| {
            format!(
                "{}: the kernel could not be read whole (at most {} MiB are fetched)",
                self.url,
                MAX_BYTES >> 20
            )
        })?;
        let got = Sha256::of(&bytes);
        Ok((bytes, got))
    }
}

#[cfg(test)]
mod unit {
    use super::*;
    use std::io::Write;

    /// Answer one request with `status` and `body`.
    fn serve_once(listener: std::net::TcpListener, status: &str, body: Vec<u8>) {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 4096];
        let _ = s.read(&mut buf);
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(&body).unwrap();
    }

    fn server(status: &'static str, body: &[u8]) -> String {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/k/bzImage", l.local_addr().unwrap());
        let body = body.to_vec();
        std::thread::spawn(move || serve_once(l, status, body));
        url
    }

    #[test]
    fn urls_are_told_from_files_and_refused_with_a_password() {
        assert!(is_url("https://example.org/bzImage"));
        assert!(!is_url("/boot/vmlinuz-6.1.0-50-amd64"));
        assert!(!is_url("a=b"));
        let e = KernelUrl::new("https://me:s3cret@x.org/bzImage", None).unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("no user or password") && !e.contains("s3cret"),
            "{e}"
        );
        let e = KernelUrl::new("ftp://x.org/bzImage", None).unwrap_err();
        assert!(e.to_string().contains("http:// or https://"), "{e}");
        assert!(KernelUrl::new("http:///bzImage", None).is_err());
    }

    #[test]
    fn a_sha256_is_64_hex_digits_kept_in_lower_case() {
        let s: Sha256 = "AB".repeat(32).parse().unwrap();
        assert_eq!(s.hex(), "ab".repeat(32));
        assert!("ab".repeat(31).parse::<Sha256>().is_err());
        assert!("zz".repeat(32).parse::<Sha256>().is_err());
        let back: Sha256 = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn a_kernel_is_fetched_whole_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("k");
        let body = b"a kernel".to_vec();
        let want = Sha256::of(&body);
        let k = KernelUrl::new(&server("200 OK", &body), Some(want.clone())).unwrap();
        assert_eq!(k.fetch(&to).unwrap(), want);
        assert_eq!(std::fs::read(&to).unwrap(), body);
    }

    #[test]
    fn another_sha256_or_a_failed_answer_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("k");
        let other = Sha256::of(b"another kernel");
        let k = KernelUrl::new(&server("200 OK", b"a kernel"), Some(other.clone())).unwrap();
        let e = format!("{:#}", k.fetch(&to).unwrap_err());
        assert!(e.contains(&format!("not the {other} it was given")), "{e}");
        let k = KernelUrl::new(&server("404 Not Found", b""), None).unwrap();
        let e = format!("{:#}", k.fetch(&to).unwrap_err());
        assert!(e.contains("answered 404"), "{e}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
