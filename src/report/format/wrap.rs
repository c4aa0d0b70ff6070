//! Word wrap for the prose around tables (a result's preamble, titles and notes): the mail
//! format keeps to 80 columns, the terminal's to 100. Written here rather than taken from a
//! crate: the rules are three (keep the indent, hang a list item or footnote under its text,
//! cut a word wider than a line) and textwrap would add a dependency for them.

use unicode_width::UnicodeWidthStr;

/// Word-wrap one line of prose to `width` columns: continuation lines keep the line's indent
/// and `hang` more columns, and a list item ("- ") or footnote ("[3] ") hangs under its text. A
/// word longer than a line (a long path) is cut, so no line is wider.
pub(crate) fn prose(line: &str, width: usize, hang: usize) -> String {
    if line.width() <= width {
        return line.to_string();
    }
    let indent = line.len() - line.trim_start().len();
    let body = &line[indent..];
    let hang = if body.starts_with("- ") {
        2
    } else if body.starts_with('[') {
        body.find("] ").map_or(hang, |i| i + 2)
    } else {
        hang
    };
    let first = " ".repeat(indent);
    let next = " ".repeat((indent + hang).min(width / 2));
    words(body, width - indent, width - next.len())
        .into_iter()
        .enumerate()
        .map(|(i, l)| format!("{}{l}", if i == 0 { &first } else { &next }))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Greedy word wrap by display width: the first line to `first` columns, the others to `rest`.
pub(crate) fn words(text: &str, first: usize, rest: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word = word.to_string();
        loop {
            let width = if lines.len() == 1 { first } else { rest }.max(1);
            let cur = lines.last_mut().expect("one line at least");
            let need = if cur.is_empty() { 0 } else { cur.width() + 1 };
            if need + word.width() <= width {
                if !cur.is_empty() {
                    cur.push(' ');
                }
                cur.push_str(&word);
                break;
            }
            if cur.is_empty() {
                // A word wider than a whole line: cut it at the last character that fits.
                let cut = cut_at(&word, width);
                let tail = word.split_off(cut);
                cur.push_str(&word);
                word = tail;
            }
            lines.push(String::new());
        }
    }
    lines
}

/// The byte index where `word`'s first `width` columns end (at least one character).
fn cut_at(word: &str, width: usize) -> usize {
    let mut used = 0;
    for (i, c) in word.char_indices() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w > width && i > 0 {
            return i;
        }
        used += w;
    }
    word.len()
}

#[cfg(test)]
mod unit {
    use super::*;

    fn widest(text: &str) -> usize {
        text.lines().map(UnicodeWidthStr::width).max().unwrap_or(0)
    }

    #[test]
    fn a_line_that_fits_is_kept_and_a_longer_one_wraps_under_its_indent() {
        assert_eq!(prose(" short ±0.5%", 100, 2), " short ±0.5%");
        let long = format!(" {}", "σ-word ".repeat(30));
        let w = prose(&long, 100, 2);
        assert!(widest(&w) <= 100, "{w}");
        assert!(w.lines().skip(1).all(|l| l.starts_with("   σ-word")), "{w}");
        // A path wider than a line, with characters of two bytes, is cut between characters.
        let path = format!(" /{}", "µ".repeat(250));
        let w = prose(&path, 100, 2);
        assert!(widest(&w) <= 100, "{w}");
        assert_eq!(w.chars().filter(|&c| c == 'µ').count(), 250);
    }
}
