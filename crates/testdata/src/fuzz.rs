//! Inputs for the readers' property-based fuzz harnesses (issue 27): a valid seed file with a
//! few byte-level edits, so most cases get past the syntax into the fields and their checks.
//! Each reader's harness lives in its own crate's integration tests and states the same
//! invariants: no panic, an error names its source (the file, and a line or field), and what
//! is accepted round-trips.

use proptest::prelude::*;

/// Characters the edits insert: digits, signs, exponents, separators, quotes, brackets, the
/// words of units and numbers, whitespace, a NUL and a non-ASCII letter.
const ALPHABET: &[&str] = &[
    "0",
    "1",
    "9",
    "-",
    "+",
    ".",
    "e",
    "E",
    "x",
    ",",
    ";",
    ":",
    "=",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    "#",
    " ",
    "\t",
    "\n",
    "\r\n",
    "\0",
    "é",
    "NaN",
    "inf",
    "1e308",
    "-0",
    "99999999999999999999",
    "Gbit",
    "ms",
    "true",
    "null",
];

/// One edit at a relative position of the text: insert a token, delete a few bytes, or
/// replace a byte with a token.
#[derive(Debug, Clone)]
pub enum Edit {
    Insert(prop::sample::Index, &'static str),
    Delete(prop::sample::Index, usize),
    Replace(prop::sample::Index, &'static str),
}

fn edit() -> impl Strategy<Value = Edit> {
    let token = prop::sample::select(ALPHABET);
    prop_oneof![
        (any::<prop::sample::Index>(), token.clone()).prop_map(|(i, t)| Edit::Insert(i, t)),
        (any::<prop::sample::Index>(), 1usize..8).prop_map(|(i, n)| Edit::Delete(i, n)),
        (any::<prop::sample::Index>(), token).prop_map(|(i, t)| Edit::Replace(i, t)),
    ]
}

/// Applies `edits` to `seed` (positions snap to character boundaries).
pub fn apply(seed: &str, edits: &[Edit]) -> String {
    let mut s = seed.to_string();
    let at = |s: &str, i: &prop::sample::Index| {
        let mut k = if s.is_empty() {
            0
        } else {
            i.index(s.len() + 1)
        };
        while !s.is_char_boundary(k) {
            k -= 1;
        }
        k
    };
    for e in edits {
        match e {
            Edit::Insert(i, t) => {
                let k = at(&s, i);
                s.insert_str(k, t);
            }
            Edit::Delete(i, n) => {
                let k = at(&s, i);
                let mut end = (k + n).min(s.len());
                while !s.is_char_boundary(end) {
                    end += 1;
                }
                s.replace_range(k..end, "");
            }
            Edit::Replace(i, t) => {
                let k = at(&s, i);
                let mut end = (k + 1).min(s.len());
                while !s.is_char_boundary(end) {
                    end += 1;
                }
                s.replace_range(k..end, t);
            }
        }
    }
    s
}

/// `seed` with one edit (most often, so that many cases are accepted and round-trip), 2 to 6
/// edits, or cut short (a truncated file).
pub fn mutated(seed: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![
        4 => edit().prop_map(move |e| apply(seed, &[e])),
        3 => prop::collection::vec(edit(), 2..7).prop_map(move |e| apply(seed, &e)),
        1 => any::<prop::sample::Index>().prop_map(move |i| {
            let mut k = i.index(seed.len() + 1);
            while !seed.is_char_boundary(k) {
                k -= 1;
            }
            seed[..k].to_string()
        }),
    ]
}
