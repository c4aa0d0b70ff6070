//! JSON: the result itself, serialised as it is written to files (every kind of result is
//! Serialize), so what `--format json` prints and what `-o` writes are the same document.

use serde::Serialize;

/// A result as pretty JSON, without a trailing newline.
pub(crate) fn to_json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string_pretty(value).expect("result types serialise")
}
