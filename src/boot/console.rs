//! What a guest sends back as text lines on its console, for a lab that keeps nothing of a boot
//! but its console's log (LAVA: it has no way to fetch a file from a guest, and its logger
//! rewrites what it logs: 2023.01 turns every `"` into `\"`, drops carriage returns, and
//! replaces a line of 10^6 characters, 10^5 in later versions).
//!
//! The bytes the second serial port carries in a QEMU boot (`guest::frame`) go as numbered
//! base64 lines between a start and an end mark, then their length and SHA-256: nothing in
//! them is a character the logger rewrites, each line is short, and a lost or damaged line is
//! found and named. After them, the boot's figures go as `SYSCOST-CASE` lines, which a LAVA
//! `test: monitors:` block matches into test cases (its own pages show them).
//!
//! ```text
//! SYSCOST-BEGIN
//! SYSCOST-CHUNK 1/3 eyJ...
//! SYSCOST-SHA256 9f86... 6123
//! SYSCOST-CASE pass k_syscall_getpid_time 1234.5 ns/call;
//! SYSCOST-END
//! ```

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

/// The mark before the lines (a monitor's `start`): in no kernel's own output, nor in the
/// command line the kernel echoes.
pub(crate) const BEGIN: &str = "SYSCOST-BEGIN";
/// The mark after them (a monitor's `end`).
pub(crate) const END: &str = "SYSCOST-END";
const CASE: &str = "SYSCOST-CASE";
const CHUNK: &str = "SYSCOST-CHUNK";
const SUM: &str = "SYSCOST-SHA256";
/// Base64 characters per line: 3,072 bytes of frames, a line well under any logger's limit.
const PER_LINE: usize = 4096;

/// A LAVA `test: monitors:` pattern matching a [`Case`] line: the result as its own group, so
/// the measurement is kept as the text it is (without one, LAVA reads it as a float and a
/// count over 2^53 loses digits), and a fixed end (`;`), so a line still arriving is not
/// matched short.
pub(crate) const CASE_PATTERN: &str = r"SYSCOST-CASE (?P<result>pass|fail) (?P<test_case_id>[a-z0-9_]+) (?P<measurement>-?[0-9.]+(e[-+]?[0-9]+)?) (?P<units>[A-Za-z0-9/%()_-]*);";

/// One of a boot's figures, as a lab's test case.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// As LAVA keeps it (see [`lava_name`]).
    pub name: String,
    pub value: f64,
    /// As LAVA keeps it (see [`lava_unit`]).
    pub unit: String,
}

impl Case {
    /// The case of `metric` of arm `arm` measuring `what` (e.g. `syscall getpid`), named and
    /// with its unit as a lab keeps them.
    pub(crate) fn of(arm: &str, what: &str, metric: &str, value: f64, unit: &str) -> Case {
        Case {
            name: lava_name(&format!("{arm} {what} {metric}")),
            value,
            unit: lava_unit(unit),
        }
    }

    fn line(&self) -> String {
        format!("{CASE} pass {} {} {};", self.name, self.value, self.unit)
    }
}

/// The longest test-case name LAVA's pages take (its model's help: 100 characters).
const NAME_MAX: usize = 100;

/// `words` as LAVA stores a monitor's test-case id (lava_dispatcher's monitor lower-cases it
/// and turns every run of non-word characters into `_`), without `_` at either end and cut to
/// 100 characters: sent so, the name LAVA shows is the one syscost sent.
pub(crate) fn lava_name(words: &str) -> String {
    let mut out = String::new();
    for c in words.chars().map(|c| c.to_ascii_lowercase()) {
        if c.is_ascii_alphanumeric() || c == '_' {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.truncate(NAME_MAX);
    out.trim_end_matches('_').to_string()
}

/// A unit as a monitor's pattern takes it whole: spaces become `_` (`CPUs utilized` had
/// become `CPUsutilized`), other characters outside letters, digits and `/%()_-` go.
pub(crate) fn lava_unit(unit: &str) -> String {
    (unit.chars())
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .filter(|c| c.is_ascii_alphanumeric() || "/%()_-".contains(*c))
        .collect()
}

/// The lines a guest writes: the marks, its figures as `cases`, and `bytes` framed.
pub(crate) fn lines(bytes: &[u8], cases: &[Case]) -> Vec<String> {
    let text = STANDARD.encode(bytes);
    let chunks: Vec<&str> = text
        .as_bytes()
        .chunks(PER_LINE)
        .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
        .collect();
    let n = chunks.len();
    let mut out = vec![BEGIN.to_string()];
    out.extend((chunks.iter().enumerate()).map(|(i, c)| format!("{CHUNK} {}/{n} {c}", i + 1)));
    out.push(format!(
        "{SUM} {} {}",
        crate::core::sha256_hex(bytes),
        bytes.len()
    ));
    out.extend(cases.iter().map(Case::line));
    out.push(END.to_string());
    out
}

/// The most characters written at once while a lab must still see a line in them.
///
/// LAVA 2023.01 reads a console up to 4,092 characters at a time and searches only the last
/// 4,000 characters of each read for the monitor's marks (pexpect's `searchwindowsize`): a
/// mark followed by more than 4,000 characters in the same read is never seen. Written all at
/// once, the start mark came first in a read of 4,092 whenever the lab's reader woke after the
/// whole result had arrived (a busy worker): the job then waited for it until its timeout and
/// LAVA kept no test case. So the start mark goes alone, with a pause unless it went long
/// before; the chunks, which no mark is sought in, go at once after it; then the cases, in
/// writes of at most this many characters, each followed by a pause in which the reader takes
/// it, but the last, which only the end mark follows: whatever a read holds before them, they
/// are the end of it. (The cases went before the chunks until November 2026, and the pause
/// after their last write, half a second, was in every job.)
const BURST: usize = 2048;

/// What a guest writes before it measures, when it reports on a console: the end of the
/// firmware's last line ("Booting from ROM..." has no newline), then the start mark. The
/// monitor then starts while the guest measures, and the mark needs no pause of its own after
/// the measurement (a second saved on every job).
pub(crate) const BEGIN_EARLY: &str = "\nSYSCOST-BEGIN\n";

/// How long the lab's reader is given to take a write before the next (see [`BURST`]).
const READ_PAUSE: std::time::Duration = std::time::Duration::from_millis(500);

/// `lines` as the writes that send them, each with the pause after it (see [`BURST`]). `begun`:
/// the start mark went out before the measurement ([`BEGIN_EARLY`]), and the reader took it
/// long ago; it goes again without a pause (it still opens the framed lines).
pub(crate) fn writes(lines: &[String], begun: bool) -> Vec<(String, std::time::Duration)> {
    use std::time::Duration;
    #[derive(Clone, Copy, PartialEq)]
    enum Part {
        Begin,
        Framed,
        Cases,
    }
    let mut out: Vec<(Part, String, Duration)> = Vec::new();
    for l in lines {
        let part = match l {
            l if l == BEGIN => Part::Begin,
            l if l.starts_with(CASE) => Part::Cases,
            _ => Part::Framed,
        };
        match out.last_mut() {
            // The end mark ends the last write, which then needs no pause.
            Some((_, w, pause)) if l == END => {
                w.push_str(&format!("{l}\n"));
                *pause = Duration::ZERO;
            }
            Some((p, w, _))
                if *p == part
                    && (part == Part::Framed
                        || part == Part::Cases && w.len() + l.len() < BURST) =>
            {
                w.push_str(&format!("{l}\n"));
            }
            _ => {
                let (text, pause) = match part {
                    Part::Begin if begun => (format!("\n{l}\n"), Duration::ZERO),
                    Part::Begin => (format!("\n{l}\n"), 2 * READ_PAUSE),
                    Part::Cases => (format!("{l}\n"), READ_PAUSE),
                    Part::Framed => (format!("{l}\n"), Duration::ZERO),
                };
                out.push((part, text, pause));
            }
        }
    }
    out.into_iter().map(|(_, w, pause)| (w, pause)).collect()
}

/// Why the bytes could not be rebuilt from a console's lines.
#[derive(Debug, PartialEq, thiserror::Error)]
pub(crate) enum Damaged {
    #[error("the console's log has no line of syscost's result (no {SUM} line)")]
    Nothing,
    #[error("line {0} of the result's {1} is missing from the console's log")]
    Missing(usize, usize),
    #[error("the result's lines in the console's log are damaged ({0})")]
    Bad(String),
}

/// The bytes framed in a console's `lines` (each a line as the lab logged it), checked against
/// their length and SHA-256; a line the logger split, or any other text between them, is
/// ignored. The last complete set of lines wins (a console may hold an earlier try's).
pub(crate) fn rebuild<'a>(lines: impl IntoIterator<Item = &'a str>) -> Result<Vec<u8>, Damaged> {
    let (mut chunks, mut sum): (Vec<Option<String>>, Option<(String, usize)>) = (Vec::new(), None);
    for l in lines {
        let l = l.trim_end();
        if l == BEGIN {
            (chunks, sum) = (Vec::new(), None);
        } else if let Some(rest) = l.strip_prefix(CHUNK).and_then(|r| r.strip_prefix(' ')) {
            let (at, text) = rest.split_once(' ').unwrap_or((rest, ""));
            let Some((i, n)) = at.split_once('/') else {
                continue;
            };
            let (Ok(i), Ok(n)) = (i.parse::<usize>(), n.parse::<usize>()) else {
                continue;
            };
            if i == 1 || chunks.len() != n {
                chunks = vec![None; n];
                sum = None;
            }
            if (1..=n).contains(&i) {
                chunks[i - 1] = Some(text.to_string());
            }
        } else if let Some(rest) = l.strip_prefix(SUM).and_then(|r| r.strip_prefix(' ')) {
            let mut w = rest.split_whitespace();
            if let (Some(hex), Some(Ok(len))) = (w.next(), w.next().map(str::parse)) {
                sum = Some((hex.to_string(), len));
            }
        }
    }
    let (hex, len) = sum.ok_or(Damaged::Nothing)?;
    let n = chunks.len();
    let mut text = String::new();
    for (i, c) in chunks.iter().enumerate() {
        text.push_str(c.as_deref().ok_or(Damaged::Missing(i + 1, n))?);
    }
    let bytes = STANDARD
        .decode(text.as_bytes())
        .map_err(|e| Damaged::Bad(format!("not base64: {e}")))?;
    if bytes.len() != len || crate::core::sha256_hex(&bytes) != hex {
        return Err(Damaged::Bad(format!(
            "{} bytes whose SHA-256 is not the one sent with them ({len} bytes)",
            bytes.len()
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod unit {
    use super::*;

    /// The marks and cases LAVA's monitor finds in `writes` when its reader wakes only at their
    /// pauses and then reads all there is, in reads of 4,092 characters, searching the last
    /// 4,000 characters of what it holds after each read (pexpect's `searchwindowsize`) and
    /// dropping what comes before each match. `begun`: the monitor started long before.
    fn seen_by_a_slow_reader(writes: &[(String, std::time::Duration)], begun: bool) -> Vec<String> {
        let mut at_once = vec![String::new()];
        for (w, pause) in writes {
            at_once.last_mut().unwrap().push_str(w);
            if !pause.is_zero() {
                at_once.push(String::new());
            }
        }
        let (mut held, mut seen, mut monitoring) = (String::new(), Vec::new(), begun);
        let reads = at_once.iter().flat_map(|t| t.as_bytes().chunks(4092));
        for read in reads {
            held.push_str(std::str::from_utf8(read).unwrap());
            loop {
                let window = &held[held.len().saturating_sub(4000)..];
                let found = if monitoring {
                    let case =
                        (window.find(CASE)).and_then(|i| Some((i, i + window[i..].find(';')? + 1)));
                    let end = window.find(END).map(|i| (i, i + END.len()));
                    [case, end].into_iter().flatten().min()
                } else {
                    window.find(BEGIN).map(|i| (i, i + BEGIN.len()))
                };
                let Some((from, to)) = found else { break };
                seen.push(window[from..to].to_string());
                monitoring = true;
                held = window[to..].to_string();
            }
        }
        seen
    }

    #[test]
    fn marks_and_cases_go_in_writes_that_a_slow_lab_reader_searches_whole() {
        let cases: Vec<Case> = (0..60)
            .map(|i| {
                Case::of(
                    "a",
                    "syscall getpid",
                    &format!("figure-{i}"),
                    1234.5678 * f64::from(i),
                    "ns/call",
                )
            })
            .collect();
        let lines = lines(&sample(), &cases);
        let expected: Vec<String> = (cases.iter().map(|c| c.line()))
            .chain([END.to_string()])
            .collect();
        for begun in [false, true] {
            let writes = super::writes(&lines, begun);
            let sent: String = writes.iter().map(|w| w.0.as_str()).collect();
            assert_eq!(
                sent,
                format!("\n{}\n", lines.join("\n")),
                "every line, in order"
            );
            assert_eq!(writes[0].0, format!("\n{BEGIN}\n"), "the start mark alone");
            assert_eq!(
                writes[0].1.is_zero(),
                begun,
                "a pause after it unless begun"
            );
            let mut seen = seen_by_a_slow_reader(&writes, begun);
            if !begun {
                assert_eq!(seen.remove(0), BEGIN);
            }
            assert_eq!(seen, expected, "begun: {begun}");
            let with_cases = writes.iter().filter(|w| w.0.contains(CASE)).count();
            assert!(with_cases > 1, "60 cases take more than one write");
            let (last, pause) = writes.last().unwrap();
            assert!(last.starts_with(CASE) && last.ends_with(&format!("{END}\n")));
            assert!(pause.is_zero(), "no pause after the last write");
        }
        // The reader is one that can miss cases: written at once before the chunks, as they
        // were until November 2026, the first of them fall out of its window.
        let mut cases_first = lines.clone();
        let framed: Vec<String> = cases_first.drain(1..lines.len() - 61).collect();
        cases_first.splice(61..61, framed);
        assert!(cases_first[1].starts_with(CASE) && cases_first[61].starts_with(CHUNK));
        let at_once = [(
            format!("\n{}\n", cases_first.join("\n")),
            std::time::Duration::ZERO,
        )];
        let seen = seen_by_a_slow_reader(&at_once, true);
        assert!(!seen.contains(&expected[0]) && seen.len() < expected.len());
        assert!(BEGIN_EARLY.contains(&format!("\n{BEGIN}\n")));
    }

    fn sample() -> Vec<u8> {
        // Every byte value, quotes and newlines among them, over several lines.
        (0..20_000u32).map(|i| (i * 7 % 256) as u8).collect()
    }

    #[test]
    fn bytes_come_back_whole_through_a_logger_that_rewrites_quotes() {
        let bytes = sample();
        let lines = lines(&bytes, &[]);
        assert!(lines.len() > 4, "several chunk lines");
        assert!(lines.iter().all(|l| l.len() < 5000 && !l.contains('"')));
        // 2023.01's logger: every `"` becomes `\"`, and kernel lines come in between.
        let logged: Vec<String> = lines
            .iter()
            .flat_map(|l| {
                [
                    l.replace('"', "\\\""),
                    "[ 1.2] random: crng init done".into(),
                ]
            })
            .collect();
        assert_eq!(rebuild(logged.iter().map(String::as_str)), Ok(bytes));
    }

    #[test]
    fn a_lost_or_damaged_line_is_named() {
        let bytes = sample();
        let mut l = lines(&bytes, &[]);
        let n = l.iter().filter(|x| x.starts_with(CHUNK)).count();
        let two = l.remove(2);
        assert_eq!(
            rebuild(l.iter().map(String::as_str)),
            Err(Damaged::Missing(2, n))
        );
        l.insert(2, two.replacen('A', "B", 1));
        let err = rebuild(l.iter().map(String::as_str)).unwrap_err();
        assert!(matches!(err, Damaged::Bad(_)), "{err}");
        assert_eq!(rebuild(["nothing here"]), Err(Damaged::Nothing));
    }

    #[test]
    fn the_last_whole_set_wins_and_an_empty_result_frames() {
        let first = lines(b"first", &[]);
        let second = lines(b"", &[]);
        let all: Vec<&str> = first.iter().chain(&second).map(String::as_str).collect();
        assert_eq!(rebuild(all), Ok(Vec::new()));
    }

    /// What LAVA 2023.01's monitor does to a test-case id before storing it.
    fn as_lava_stores(id: &str) -> String {
        let re = regex_lite::Regex::new(r"[^A-Za-z0-9_]+").unwrap();
        re.replace_all(&id.trim().to_lowercase(), "_").into_owned()
    }

    #[test]
    fn cases_match_the_monitor_pattern_with_exact_digits_and_names_lava_keeps() {
        let re = regex_lite::Regex::new(CASE_PATTERN).unwrap();
        let c = Case::of(
            "new-fresh",
            "syscall getpid",
            "instructions (emulated)",
            123456789012345678.0,
            "instr/call",
        );
        let line = c.line();
        let m = re.captures(&line).expect(&line);
        let id = &m["test_case_id"];
        assert_eq!(id, "new_fresh_syscall_getpid_instructions_emulated");
        assert_eq!(as_lava_stores(id), id, "LAVA keeps the name as sent");
        assert_eq!(&m["measurement"], "123456789012345680");
        assert_eq!(&m["units"], "instr/call");
        let ratio = Case::of("a", "vfs-mix", "CPUs-utilized", 0.99, "CPUs utilized");
        let line = ratio.line();
        let m = re.captures(&line).expect(&line);
        assert_eq!(&m["test_case_id"], "a_vfs_mix_cpus_utilized");
        assert_eq!(&m["units"], "CPUs_utilized", "a unit keeps its words");
        let small = Case::of("a", "syscall getpid", "time", 1.5e-7, "s");
        assert!(re.is_match(&small.line()), "{}", small.line());
        let long = Case::of(&"x".repeat(90), "syscall getpid", "time", 1.0, "s");
        assert!(
            long.name.len() <= 100 && !long.name.ends_with('_'),
            "{}",
            long.name
        );
    }
}
