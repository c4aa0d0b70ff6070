//! The rules-file grammar through libaudit (auditctl's rule builder): these load the library,
//! whose libcap-ng registers a fork handler that would break the unit tests of fork workloads
//! that wipe their heap in the child, so they run here, in a process of their own.

use crate::common::skip;
use syscost::audit::libaudit;
use syscost::audit::rules::{self, ACTION_NEVER};
use syscost::audit::rules_file::{OnError, Op, parse};

crate::tests! {
    Shared a_field_the_library_knows_is_encoded_with_its_operator,
    Shared settings_and_rules_are_told_apart,
    Shared lines_auditctl_refuses_are_refused_with_their_number,
    Shared a_rule_written_twice_is_refused_with_both_lines_or_left_out,
    Shared a_line_s_escape_sequence_is_shown_escaped,
    Shared any_line_is_taken_or_refused_never_a_crash,
}

fn a_field_the_library_knows_is_encoded_with_its_operator() {
    if libaudit::available().is_err() {
        skip("libaudit is not on this machine (Debian: libaudit1)");
        return;
    }
    let mut b = libaudit::Builder::new().unwrap();
    b.syscall("getpid").unwrap();
    b.field("auid>=1000", 4).unwrap();
    let e = b.field("nosuchfield=1", 4).unwrap_err().to_string();
    assert!(e.contains("unknown field"), "{e}");
    let bytes = b.finish(4, 2);
    let word = |i: usize| u32::from_ne_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap());
    assert_eq!(word(2), 1, "one field");
    // fields start at word 67, values at 131, fieldflags at 195
    assert_eq!(word(67), 9, "auid is AUDIT_LOGINUID (9)");
    assert_eq!(word(131), 1000);
    assert_eq!(word(195), 0x6000_0000, ">= is AUDIT_GREATER_THAN_OR_EQUAL");
}

fn have_libaudit() -> bool {
    let ok = libaudit::available().is_ok();
    if !ok {
        skip("libaudit is not on this machine (Debian: libaudit1)");
    }
    ok
}

fn settings_and_rules_are_told_apart() {
    if !have_libaudit() {
        return;
    }
    let text = "# production rules\n-D\n-b 8192\n--backlog_wait_time 60000\n-f 1\n\
                -a always,exit -F arch=b64 -S openat,unlinkat -F auid=unset -k files\n\
                -A exit,never -S 39 -F pid=7\n-w /etc/passwd -p wa -k identity\n-e 1\n";
    let set = parse(text, "rules.txt", OnError::Stop).unwrap();
    let ops: Vec<&Op> = set.lines.iter().map(|l| &l.op).collect();
    assert_eq!(ops[0], &Op::DeleteAll);
    assert_eq!(ops[1], &Op::Backlog(8192));
    assert_eq!(ops[2], &Op::BacklogWaitTime(60000));
    assert_eq!(set.rules().count(), 3);
    assert_eq!(set.enable(), Some(1));
    let first = rules::Rule::decode(set.rules().next().unwrap().1).unwrap();
    assert_eq!(first.key.as_deref(), Some("files"));
    let second = rules::Rule::decode(set.rules().nth(1).unwrap().1).unwrap();
    assert_eq!((second.list, second.action), (4, ACTION_NEVER));
    assert_eq!(second.bytes[..4], (4u32 | 0x10).to_ne_bytes());
    assert!(second.names_syscall(39) && !second.names_syscall(40));
}

fn lines_auditctl_refuses_are_refused_with_their_number() {
    if !have_libaudit() {
        return;
    }
    for (text, says) in [
        (
            "-a always,exit -S getpid\n-a always,exit -F nosuch=1",
            "line 2",
        ),
        ("-a always,exit -S no_such_call", "unknown"),
        ("-a always,exclude -S getpid", "exclude"),
        ("-e 3", "0, 1 or 2"),
        ("-a always,exit -S getpid -F arch=b64", "before -S"),
        (
            "-a always,exit -F auid>=1000 -k x",
            "needs a watch or syscall",
        ),
        ("-w etc/passwd", "start with '/'"),
        ("-a sometimes,exit", "bad keyword"),
    ] {
        let e = parse(text, "r", OnError::Stop).unwrap_err().to_string();
        assert!(e.contains(says), "{text}: {e}");
    }
}

fn a_rule_written_twice_is_refused_with_both_lines_or_left_out() {
    if !have_libaudit() {
        return;
    }
    let text = "-a always,exit -S unlinkat -k a\n# merged\n-a always,exit -S unlinkat -k a\n";
    let e = parse(text, "merged.rules", OnError::Stop)
        .unwrap_err()
        .to_string();
    assert!(e.contains("line 3: the same rule as line 1"), "{e}");
    let set = parse(text, "merged.rules", OnError::Continue).unwrap();
    assert_eq!(set.rules().count(), 1);
    assert_eq!(set.refused[0].number, 3);
    // After a -i line the file itself asks to go on.
    let set = parse(&format!("-i\n{text}"), "r", OnError::Stop).unwrap();
    assert_eq!(set.refused.len(), 1);
    // Another key makes another rule for the kernel: both are kept.
    let two = "-a always,exit -S unlinkat -k a\n-a always,exit -S unlinkat -k b";
    assert_eq!(parse(two, "r", OnError::Stop).unwrap().rules().count(), 2);
}

fn a_line_s_escape_sequence_is_shown_escaped() {
    if !have_libaudit() {
        return;
    }
    let e = parse("-a always,exit -S getpid \u{1b}[31m", "r", OnError::Stop)
        .unwrap_err()
        .to_string();
    assert!(!e.contains('\u{1b}'), "{e:?}");
    assert!(e.contains("\\u{1b}[31m"), "{e}");
}

/// Lines of auditctl's words in any order, some absurdly long, read with errors gone past:
/// libaudit is fed them in this process, and every line is either taken or refused with a
/// reason, never a crash.
fn any_line_is_taken_or_refused_never_a_crash() {
    if libaudit::available().is_err() {
        skip("libaudit is not on this machine (Debian: libaudit1)");
        return;
    }
    let long_key = format!("key={}", "k".repeat(300));
    let long_path = format!("/{}", "p".repeat(5000));
    let words = [
        "-a",
        "-A",
        "-d",
        "-S",
        "-F",
        "-C",
        "-w",
        "-W",
        "-p",
        "-k",
        "-D",
        "-e",
        "-b",
        "-f",
        "-r",
        "-i",
        "always,exit",
        "exit,never",
        "task,always",
        "user,always",
        "exclude,never",
        "filesystem,never",
        "all",
        "getpid",
        "stime",
        "39",
        "99999",
        "arch=b32",
        "arch=b64",
        "arch=x",
        "auid>=1000",
        "auid!=unset",
        "uid<=",
        "=5",
        "exit=-EACCES",
        "exit=-EBOGUS",
        "a0&0x4",
        "a1&=3",
        "path=/etc/passwd",
        "dir=/etc",
        "perm=wa",
        "perm=z",
        "key=x",
        "msgtype=CWD",
        "fstype=tracefs",
        "uid!=euid",
        "auid=root",
        "uid=nosuchuser",
        "filetype=file",
        "exe=/bin/true",
        "subj_type=x",
        "rwxa",
        "/etc/hostname",
        "/",
        "//",
        "0",
        "2",
        "-1",
        "x=y=z",
        "==",
        "!=",
        "&",
        "\\ ",
        "sessionid=unset",
        "obj_uid=0",
        "--backlog_wait_time",
        "--loginuid-immutable",
        "--x",
        &long_key,
        &long_path,
    ];
    // A fixed linear congruential sequence: the same lines on every run.
    let mut state: u64 = 0x5eed;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize % n
    };
    let mut text = String::new();
    for _ in 0..3000 {
        let n = 1 + next(8);
        let line: Vec<&str> = (0..n).map(|_| words[next(words.len())]).collect();
        // Half the lines start as a rule does, so that some are taken.
        if next(2) == 0 {
            text.push_str("-a always,exit -F arch=b64 -S getpid ");
        }
        text.push_str(&line.join(" "));
        text.push('\n');
    }
    let set = parse(&text, "fuzz", OnError::Continue).unwrap();
    assert_eq!(set.lines.len() + set.refused.len(), 3000);
    assert!(set.refused.iter().all(|r| !r.reason.is_empty()));
    assert!(set.rules().count() > 0, "some lines are rules");
}
