//! One arm's or build's setting on the command line, `NAME=VALUE` (`--append b=audit=1`): parsed
//! by the parser itself into the value's type, so a bad one is refused there, with its flag,
//! before anything runs; then given to the arm of that name.

use crate::core::input::{Opt, spelled};
use crate::experiments::boots::Arm;
use anyhow::Result;
use std::fmt::Display;
use std::str::FromStr;

/// `NAME=VALUE`, the value a `T`.
#[derive(Clone, Debug, PartialEq)]
pub struct Named<T> {
    pub name: String,
    pub value: T,
}

impl<T: FromStr<Err: Display>> FromStr for Named<T> {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once('=') {
            Some((name, v)) if !name.is_empty() && !v.is_empty() => Ok(Named {
                name: name.into(),
                value: v.parse().map_err(|e| format!("{name}'s value: {e:#}"))?,
            }),
            _ => Err("give NAME=VALUE".into()),
        }
    }
}

/// A command's words, split from one argument as a shell would (`'run uprobe --insn ret'`).
#[derive(Clone, Debug, PartialEq)]
pub struct ShellWords(pub Vec<String>);

impl FromStr for ShellWords {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match shlex::split(s).filter(|w| !w.is_empty()) {
            Some(words) => Ok(ShellWords(words)),
            None => Err(format!(
                "cannot split {s:?} into words as a shell would (an unclosed quote?)"
            )),
        }
    }
}

/// The arm (or build: `noun`) a setting given with `flag` names.
pub(super) fn named<'a>(
    arms: &'a mut [Arm],
    flag: Opt,
    noun: &str,
    name: &str,
) -> Result<&'a mut Arm> {
    let names: Vec<String> = arms.iter().map(|a| a.name.clone()).collect();
    arms.iter_mut().find(|a| a.name == name).ok_or_else(|| {
        anyhow::anyhow!(
            "{} {name}=...: no {noun} is named {name} ({noun}s: {})",
            spelled(flag),
            names.join(" ")
        )
    })
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn a_setting_is_a_name_and_a_typed_value() {
        let n: Named<usize> = "b=256".parse().unwrap();
        assert_eq!((n.name.as_str(), n.value), ("b", 256));
        let append: Named<String> = "a=audit=1 nosmt".parse().unwrap();
        assert_eq!(append.value, "audit=1 nosmt", "split at the first =");
        for bad in ["b", "=1", "b="] {
            let e = bad.parse::<Named<String>>().unwrap_err();
            assert_eq!(e, "give NAME=VALUE", "{bad}");
        }
        let e = "b=x".parse::<Named<usize>>().unwrap_err();
        assert!(e.starts_with("b's value: invalid digit"), "{e}");
        let w: ShellWords = "run uprobe --insn 'a b'".parse().unwrap();
        assert_eq!(w.0, ["run", "uprobe", "--insn", "a b"]);
        assert!("run 'unclosed".parse::<ShellWords>().is_err());
        let mut arms = vec![Arm {
            name: "a".into(),
            ..Arm::default()
        }];
        assert!(named(&mut arms, Opt::Initrd, "arm", "a").is_ok());
        let e = named(&mut arms, Opt::Initrd, "arm", "z").unwrap_err();
        assert_eq!(e.to_string(), "--initrd z=...: no arm is named z (arms: a)");
    }
}
