//! Numbers as the tables print them.

/// An address as results keep it (`0xffff...`, hexadecimal: beyond a double's exact
/// integers), read back.
pub(crate) fn parse_hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// Format a number the way the tables do: thousands grouped for large values, two decimals in
/// the usual range, three significant digits below one.
pub(crate) fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 1e4 {
        group_thousands(&format!("{v:.0}"))
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else if a >= 1e-3 {
        let decimals = (2 - a.log10().floor() as i32).clamp(0, 12) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.2e}")
    }
}

/// A change with its sign, as the figures are shown (`+2.00`, `-11.00`).
pub(crate) fn fmt_signed(x: f64) -> String {
    match x >= 0.0 {
        true => format!("+{}", fmt_num(x)),
        false => fmt_num(x),
    }
}

/// A p-value as the tables print it: four decimals, scientific below 0.0001, and a p that
/// underflowed to zero (a huge sample and a clear shift) as "<1e-300", not "0.0e0".
pub(crate) fn fmt_p(p: f64) -> String {
    if p == 0.0 {
        "<1e-300".into()
    } else if p < 0.0001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

/// `1234567` -> `1,234,567` (keeps a leading sign).
pub(crate) fn group_thousands(digits: &str) -> String {
    let (sign, body) = match digits.strip_prefix('-') {
        Some(b) => ("-", b),
        None => ("", digits),
    };
    let mut out = String::new();
    for (i, c) in body.chars().enumerate() {
        if i > 0 && (body.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

/// The plural of an operation's name: "calls", "processes", "round-trips".
pub(crate) fn plural(noun: &str) -> String {
    if ["s", "x", "ch", "sh"].iter().any(|e| noun.ends_with(e)) {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn plurals_of_operation_names() {
        assert_eq!(plural("process"), "processes");
        assert_eq!(plural("call"), "calls");
        assert_eq!(plural("round-trip"), "round-trips");
    }

    #[test]
    fn p_values() {
        assert_eq!(fmt_p(0.0), "<1e-300");
        assert_eq!(fmt_p(3.2e-7), "3.2e-7");
        assert_eq!(fmt_p(0.04321), "0.0432");
        assert_eq!(fmt_p(1.0), "1.0000");
    }

    #[test]
    fn number_formats() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(98.2149), "98.21");
        assert_eq!(fmt_num(1635.0), "1635.00");
        assert_eq!(fmt_num(2838869156.0), "2,838,869,156");
        assert_eq!(fmt_num(-12345.0), "-12,345");
        assert_eq!(fmt_num(0.5), "0.500");
        assert_eq!(fmt_num(0.00123456), "0.00123");
        assert_eq!(fmt_num(0.000000381), "3.81e-7");
        assert_eq!(fmt_num(f64::NAN), "-");
    }
}
