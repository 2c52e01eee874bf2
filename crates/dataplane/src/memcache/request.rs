//! Requests of the memcached text protocol: parsed incrementally on the server side, encoded
//! on the client side.
//!
//! [`parse_request`] looks at the front of a byte buffer and answers with one of: `None` (the
//! request is not complete yet: read more), [`Parse::Request`] (a complete, valid request of
//! `len` bytes: its command, keys, payload size and where its `noreply`/`q` token is), or
//! [`Parse::Reject`] (bytes to discard and the error reply memcached itself would give). It
//! never buffers more than a line of [`Limits::max_line`] plus a data block of
//! [`Limits::max_value`]: a larger value is rejected from its command line, before its data
//! arrives, and the caller skips the data as it comes ([`Parse::Reject::len`] may exceed the
//! buffer).

use super::{Limits, MemcacheError, ReplyShape, MAX_KEY_BYTES};
use std::borrow::Cow;

/// The commands this codec understands; see the module docs of [`crate::memcache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    Get,
    Gets,
    Gat,
    Gats,
    Set,
    Add,
    Replace,
    Append,
    Prepend,
    Cas,
    Delete,
    Incr,
    Decr,
    Touch,
    Version,
    Quit,
    /// `mg`
    MetaGet,
    /// `ms`
    MetaSet,
    /// `md`
    MetaDelete,
    /// `ma`
    MetaArithmetic,
    /// `mn`
    MetaNoop,
    /// `me`
    MetaDebug,
}

/// Administrative commands: valid memcached, refused in front of a shared server.
const ADMIN: &[&str] = &[
    "stats",
    "flush_all",
    "verbosity",
    "shutdown",
    "cache_memlimit",
    "slabs",
    "lru",
    "lru_crawler",
    "watch",
    "misbehave",
    "debugtime",
    "extstore",
    "mcp",
];

impl Command {
    /// The command's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Command::Get => "get",
            Command::Gets => "gets",
            Command::Gat => "gat",
            Command::Gats => "gats",
            Command::Set => "set",
            Command::Add => "add",
            Command::Replace => "replace",
            Command::Append => "append",
            Command::Prepend => "prepend",
            Command::Cas => "cas",
            Command::Delete => "delete",
            Command::Incr => "incr",
            Command::Decr => "decr",
            Command::Touch => "touch",
            Command::Version => "version",
            Command::Quit => "quit",
            Command::MetaGet => "mg",
            Command::MetaSet => "ms",
            Command::MetaDelete => "md",
            Command::MetaArithmetic => "ma",
            Command::MetaNoop => "mn",
            Command::MetaDebug => "me",
        }
    }

    fn from_name(name: &[u8]) -> Option<Command> {
        Some(match name {
            b"get" => Command::Get,
            b"gets" => Command::Gets,
            b"gat" => Command::Gat,
            b"gats" => Command::Gats,
            b"set" => Command::Set,
            b"add" => Command::Add,
            b"replace" => Command::Replace,
            b"append" => Command::Append,
            b"prepend" => Command::Prepend,
            b"cas" => Command::Cas,
            b"delete" => Command::Delete,
            b"incr" => Command::Incr,
            b"decr" => Command::Decr,
            b"touch" => Command::Touch,
            b"version" => Command::Version,
            b"quit" => Command::Quit,
            b"mg" => Command::MetaGet,
            b"ms" => Command::MetaSet,
            b"md" => Command::MetaDelete,
            b"ma" => Command::MetaArithmetic,
            b"mn" => Command::MetaNoop,
            b"me" => Command::MetaDebug,
            _ => return None,
        })
    }

    /// What the reply looks like.
    pub fn reply_shape(self) -> ReplyShape {
        match self {
            Command::Get | Command::Gets | Command::Gat | Command::Gats => ReplyShape::Retrieval,
            Command::MetaGet
            | Command::MetaSet
            | Command::MetaDelete
            | Command::MetaArithmetic
            | Command::MetaNoop
            | Command::MetaDebug => ReplyShape::Meta,
            _ => ReplyShape::Line,
        }
    }

    /// Whether the reply carries values (the request reads): `get`, `gets`, `gat`, `gats`,
    /// `mg`. Everything else writes or changes state (or is a no-op).
    pub fn is_read(self) -> bool {
        matches!(
            self,
            Command::Get | Command::Gets | Command::Gat | Command::Gats | Command::MetaGet
        )
    }

    /// The reply status a quiet request (`noreply`, meta `q`) suppresses: every reply but
    /// errors for classic commands; for meta commands `EN` (a miss) of `mg` and `HD` (success)
    /// of `ms`, `md`, `ma`, as memcached does. `None`: the command cannot be quiet.
    pub fn quiet_suppresses(self) -> Option<Suppressed> {
        match self {
            Command::MetaGet => Some(Suppressed::Code(*b"EN")),
            Command::MetaSet | Command::MetaDelete | Command::MetaArithmetic => {
                Some(Suppressed::Code(*b"HD"))
            }
            Command::Set
            | Command::Add
            | Command::Replace
            | Command::Append
            | Command::Prepend
            | Command::Cas
            | Command::Delete
            | Command::Incr
            | Command::Decr
            | Command::Touch => Some(Suppressed::AllButErrors),
            _ => None,
        }
    }
}

/// Which replies a quiet request does not get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suppressed {
    /// every reply except `ERROR`, `CLIENT_ERROR`, `SERVER_ERROR`
    AllButErrors,
    /// replies whose status code is these two bytes
    Code([u8; 2]),
}

/// A complete, valid request at the front of the buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub command: Command,
    /// bytes of the whole request: command line and data block with their terminators
    pub len: usize,
    /// bytes of the command line, terminator included
    pub line_len: usize,
    /// keys named (retrievals may name several; `mn` and `version` none)
    pub keys: u32,
    /// payload bytes of a storage command (0 otherwise)
    pub data_len: usize,
    /// where the `noreply` (classic) or `q` (meta) token sits in the line, with the space
    /// before it: a proxy that wants a reply for every request cuts this range out
    pub quiet: Option<(usize, usize)>,
}

impl Parsed {
    /// Whether the client asked for no (or fewer) replies.
    pub fn is_quiet(&self) -> bool {
        self.quiet.is_some()
    }
}

/// Why a request is refused, with memcached's reply for it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejection {
    /// no such command (memcached: `ERROR`)
    UnknownCommand,
    /// wrong arguments, bad numbers, bad or too long keys
    BadFormat,
    /// more keys than [`Limits::max_keys`]
    TooManyKeys { keys: usize, max: usize },
    /// a data block larger than [`Limits::max_value`]
    TooLarge,
    /// a data block not followed by `\r\n`
    BadDataChunk,
    /// no line end within [`Limits::max_line`] bytes
    LineTooLong,
    /// an administrative command, refused in front of a shared server
    NotAllowed(&'static str),
}

impl Rejection {
    /// The reply line, `\r\n` included.
    pub fn reply(&self) -> Cow<'static, [u8]> {
        match self {
            Rejection::UnknownCommand => Cow::Borrowed(b"ERROR\r\n"),
            Rejection::BadFormat => Cow::Borrowed(b"CLIENT_ERROR bad command line format\r\n"),
            Rejection::TooManyKeys { keys, max } => Cow::Owned(
                format!("CLIENT_ERROR too many keys ({keys}); at most {max} per request\r\n")
                    .into_bytes(),
            ),
            Rejection::TooLarge => Cow::Borrowed(b"SERVER_ERROR object too large for cache\r\n"),
            Rejection::BadDataChunk => Cow::Borrowed(b"CLIENT_ERROR bad data chunk\r\n"),
            Rejection::LineTooLong => Cow::Borrowed(b"CLIENT_ERROR line too long\r\n"),
            Rejection::NotAllowed(cmd) => Cow::Owned(
                format!("CLIENT_ERROR {cmd} is not allowed through this proxy\r\n").into_bytes(),
            ),
        }
    }
}

/// The outcome of [`parse_request`] on a buffer that holds a whole request or a rejection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parse {
    Request(Parsed),
    Reject {
        /// bytes to discard from the front of the stream (may exceed what is buffered: the
        /// data block of a value too large is skipped as it arrives)
        len: usize,
        reason: Rejection,
        /// the stream cannot be resynchronised: reply, then close the connection
        close: bool,
    },
}

/// Space-separated tokens of a line as `(start, end)` offsets (runs of spaces are one
/// separator, as memcached's tokenizer has it).
fn tokens(line: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < line.len() && line[i] == b' ' {
            i += 1;
        }
        if i >= line.len() {
            return None;
        }
        let start = i;
        while i < line.len() && line[i] != b' ' {
            i += 1;
        }
        Some((start, i))
    })
}

fn valid_key(key: &[u8]) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_BYTES && key.iter().all(|&b| b > b' ' && b != 0x7f)
}

fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

fn parse_i64(s: &[u8]) -> Option<i64> {
    match s.split_first() {
        Some((b'-', rest)) => parse_u64(rest)
            .filter(|&v| v <= i64::MAX as u64 + 1)
            .map(|v| (v as i128).wrapping_neg() as i64),
        _ => parse_u64(s).and_then(|v| i64::try_from(v).ok()),
    }
}

/// A data length token: a non-negative 32-bit count of bytes (memcached's `int`).
fn parse_len(s: &[u8]) -> Option<usize> {
    parse_u64(s)
        .filter(|&v| v <= i32::MAX as u64)
        .and_then(|v| usize::try_from(v).ok())
}

/// Parses the request at the front of `buf`; see the module docs.
pub fn parse_request(buf: &[u8], limits: &Limits) -> Option<Parse> {
    let window = &buf[..buf.len().min(limits.max_line)];
    let Some(nl) = window.iter().position(|&b| b == b'\n') else {
        if buf.len() >= limits.max_line {
            return Some(Parse::Reject {
                len: buf.len(),
                reason: Rejection::LineTooLong,
                close: true,
            });
        }
        return None;
    };
    let line_len = nl + 1;
    let line = &buf[..nl];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let reject = |reason: Rejection| {
        Some(Parse::Reject {
            len: line_len,
            reason,
            close: false,
        })
    };
    let mut toks = tokens(line);
    let Some((s, e)) = toks.next() else {
        return reject(Rejection::UnknownCommand);
    };
    let name = &line[s..e];
    let Some(command) = Command::from_name(name) else {
        if let Some(admin) = ADMIN.iter().find(|a| a.as_bytes() == name) {
            return reject(Rejection::NotAllowed(admin));
        }
        return reject(Rejection::UnknownCommand);
    };
    let args: Vec<(usize, usize)> = match command {
        // retrievals are counted without collecting their (possibly many) keys
        Command::Get | Command::Gets | Command::Gat | Command::Gats => Vec::new(),
        _ => toks.by_ref().take(32).collect(),
    };
    let tok = |i: usize| args.get(i).map(|&(s, e)| &line[s..e]);
    let request = |keys: u32, data_len: usize, quiet: Option<(usize, usize)>| Parsed {
        command,
        len: line_len,
        line_len,
        keys,
        data_len,
        quiet,
    };
    // a trailing `noreply` token at argument index `i`
    let noreply_at = |i: usize| -> Option<Option<(usize, usize)>> {
        match args.get(i) {
            None => Some(None),
            Some(&(s, e)) if &line[s..e] == b"noreply" && args.len() == i + 1 => {
                Some(Some((s - 1, e)))
            }
            Some(_) => None,
        }
    };
    let parsed = match command {
        Command::Get | Command::Gets | Command::Gat | Command::Gats => {
            if matches!(command, Command::Gat | Command::Gats) {
                match toks.next() {
                    Some((s, e)) if parse_i64(&line[s..e]).is_some() => {}
                    _ => return reject(Rejection::BadFormat),
                }
            }
            let mut keys = 0usize;
            for (s, e) in toks {
                if !valid_key(&line[s..e]) {
                    return reject(Rejection::BadFormat);
                }
                keys += 1;
            }
            if keys == 0 {
                return reject(Rejection::UnknownCommand);
            }
            if keys > limits.max_keys {
                return reject(Rejection::TooManyKeys {
                    keys,
                    max: limits.max_keys,
                });
            }
            request(keys as u32, 0, None)
        }
        Command::Set
        | Command::Add
        | Command::Replace
        | Command::Append
        | Command::Prepend
        | Command::Cas => {
            let fixed = if command == Command::Cas { 5 } else { 4 };
            let ok = tok(0).is_some_and(valid_key)
                && tok(1)
                    .and_then(parse_u64)
                    .is_some_and(|f| f <= u64::from(u32::MAX))
                && tok(2).and_then(parse_i64).is_some()
                && (command != Command::Cas || tok(4).and_then(parse_u64).is_some());
            let (Some(data_len), Some(quiet), true) =
                (tok(3).and_then(parse_len), noreply_at(fixed), ok)
            else {
                return reject(Rejection::BadFormat);
            };
            request(1, data_len, quiet)
        }
        Command::Delete => {
            // `delete <key> [0] [noreply]` (the legacy time argument must be 0)
            let mut next = 1;
            if tok(1) == Some(b"0") {
                next = 2;
            }
            match (tok(0).is_some_and(valid_key), noreply_at(next)) {
                (true, Some(quiet)) => request(1, 0, quiet),
                _ => return reject(Rejection::BadFormat),
            }
        }
        Command::Incr | Command::Decr => {
            match (
                tok(0).is_some_and(valid_key) && tok(1).and_then(parse_u64).is_some(),
                noreply_at(2),
            ) {
                (true, Some(quiet)) => request(1, 0, quiet),
                _ => return reject(Rejection::BadFormat),
            }
        }
        Command::Touch => {
            match (
                tok(0).is_some_and(valid_key) && tok(1).and_then(parse_i64).is_some(),
                noreply_at(2),
            ) {
                (true, Some(quiet)) => request(1, 0, quiet),
                _ => return reject(Rejection::BadFormat),
            }
        }
        Command::Version | Command::Quit | Command::MetaNoop => request(0, 0, None),
        Command::MetaGet
        | Command::MetaSet
        | Command::MetaDelete
        | Command::MetaArithmetic
        | Command::MetaDebug => {
            if !tok(0).is_some_and(valid_key) {
                return reject(Rejection::BadFormat);
            }
            let (data_len, first_flag) = if command == Command::MetaSet {
                match tok(1).and_then(parse_len) {
                    Some(n) => (n, 2),
                    None => return reject(Rejection::BadFormat),
                }
            } else {
                (0, 1)
            };
            if args.len() >= 32 {
                // more flags than memcached's tokenizer takes
                return reject(Rejection::BadFormat);
            }
            let quiet = if command == Command::MetaDebug {
                None
            } else {
                args[first_flag.min(args.len())..]
                    .iter()
                    .find(|&&(s, e)| &line[s..e] == b"q")
                    .map(|&(s, e)| (s - 1, e))
            };
            request(1, data_len, quiet)
        }
    };
    if parsed.data_len == 0 && !matches!(command, Command::MetaSet) && !is_storage(command) {
        return Some(Parse::Request(parsed));
    }
    // a data block follows
    if parsed.data_len > limits.max_value {
        return Some(Parse::Reject {
            len: line_len + parsed.data_len + 2,
            reason: Rejection::TooLarge,
            close: false,
        });
    }
    let total = line_len + parsed.data_len + 2;
    if buf.len() < total {
        return None;
    }
    if &buf[total - 2..total] != b"\r\n" {
        return Some(Parse::Reject {
            len: total,
            reason: Rejection::BadDataChunk,
            close: false,
        });
    }
    Some(Parse::Request(Parsed {
        len: total,
        ..parsed
    }))
}

fn is_storage(c: Command) -> bool {
    matches!(
        c,
        Command::Set
            | Command::Add
            | Command::Replace
            | Command::Append
            | Command::Prepend
            | Command::Cas
            | Command::MetaSet
    )
}

/// A request a client sends; [`Request::encode`] writes it in the text protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// `get` (or `gets` with `cas`) of one or more keys
    Get {
        keys: Vec<String>,
        cas: bool,
    },
    /// `set`, `add`, `replace`, `append`, `prepend`, or `cas` when `cas` is given
    Store {
        command: Command,
        key: String,
        flags: u32,
        exptime: i64,
        value: Vec<u8>,
        cas: Option<u64>,
        noreply: bool,
    },
    Delete {
        key: String,
        noreply: bool,
    },
    /// `incr` (or `decr` when `up` is false)
    Arith {
        key: String,
        delta: u64,
        up: bool,
        noreply: bool,
    },
    Touch {
        key: String,
        exptime: i64,
        noreply: bool,
    },
    Version,
    /// a meta command line without its terminator (e.g. `mg foo v t`), and the data block of
    /// an `ms`
    Meta {
        line: String,
        data: Option<Vec<u8>>,
    },
}

impl Request {
    /// `set key 0 0 <len>` with `value`.
    pub fn set(key: impl Into<String>, value: impl Into<Vec<u8>>) -> Request {
        Request::Store {
            command: Command::Set,
            key: key.into(),
            flags: 0,
            exptime: 0,
            value: value.into(),
            cas: None,
            noreply: false,
        }
    }

    /// `get key`.
    pub fn get(key: impl Into<String>) -> Request {
        Request::Get {
            keys: vec![key.into()],
            cas: false,
        }
    }

    /// The reply's shape, or `None` when a quiet request may get no reply at all.
    pub fn reply_shape(&self) -> Option<ReplyShape> {
        match self {
            Request::Get { .. } => Some(ReplyShape::Retrieval),
            Request::Store { noreply, .. }
            | Request::Delete { noreply, .. }
            | Request::Arith { noreply, .. }
            | Request::Touch { noreply, .. } => (!noreply).then_some(ReplyShape::Line),
            Request::Version => Some(ReplyShape::Line),
            Request::Meta { line, .. } => {
                let quiet = line.split(' ').skip(1).any(|t| t == "q");
                (!quiet).then_some(ReplyShape::Meta)
            }
        }
    }

    /// Appends the request's bytes to `out` (nothing on error).
    ///
    /// # Errors
    /// [`MemcacheError::Request`] for an invalid key, an empty key list, a storage command
    /// that is not one, or a meta line that does not parse.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), MemcacheError> {
        let start = out.len();
        let r = self.encode_unchecked(out);
        if r.is_err() {
            out.truncate(start);
        }
        r
    }

    fn encode_unchecked(&self, out: &mut Vec<u8>) -> Result<(), MemcacheError> {
        let key_ok = |k: &str| {
            if valid_key(k.as_bytes()) {
                Ok(())
            } else {
                Err(MemcacheError::Request(format!(
                    "invalid key {k:?}: keys are 1 to {MAX_KEY_BYTES} bytes without spaces or \
                     control characters"
                )))
            }
        };
        let nr = |noreply: bool| if noreply { " noreply" } else { "" };
        match self {
            Request::Get { keys, cas } => {
                if keys.is_empty() {
                    return Err(MemcacheError::Request(
                        "a get needs at least one key".into(),
                    ));
                }
                out.extend_from_slice(if *cas { b"gets" } else { b"get" });
                for k in keys {
                    key_ok(k)?;
                    out.push(b' ');
                    out.extend_from_slice(k.as_bytes());
                }
                out.extend_from_slice(b"\r\n");
            }
            Request::Store {
                command,
                key,
                flags,
                exptime,
                value,
                cas,
                noreply,
            } => {
                key_ok(key)?;
                let name = match (command, cas) {
                    (_, Some(_)) => "cas",
                    (
                        Command::Set
                        | Command::Add
                        | Command::Replace
                        | Command::Append
                        | Command::Prepend,
                        None,
                    ) => command.name(),
                    (other, None) => {
                        return Err(MemcacheError::Request(format!(
                            "{} is not a storage command; use set, add, replace, append or \
                             prepend",
                            other.name()
                        )))
                    }
                };
                let cas = cas.map(|c| format!(" {c}")).unwrap_or_default();
                out.extend_from_slice(
                    format!(
                        "{name} {key} {flags} {exptime} {}{cas}{}\r\n",
                        value.len(),
                        nr(*noreply)
                    )
                    .as_bytes(),
                );
                out.extend_from_slice(value);
                out.extend_from_slice(b"\r\n");
            }
            Request::Delete { key, noreply } => {
                key_ok(key)?;
                out.extend_from_slice(format!("delete {key}{}\r\n", nr(*noreply)).as_bytes());
            }
            Request::Arith {
                key,
                delta,
                up,
                noreply,
            } => {
                key_ok(key)?;
                let name = if *up { "incr" } else { "decr" };
                out.extend_from_slice(
                    format!("{name} {key} {delta}{}\r\n", nr(*noreply)).as_bytes(),
                );
            }
            Request::Touch {
                key,
                exptime,
                noreply,
            } => {
                key_ok(key)?;
                out.extend_from_slice(
                    format!("touch {key} {exptime}{}\r\n", nr(*noreply)).as_bytes(),
                );
            }
            Request::Version => out.extend_from_slice(b"version\r\n"),
            Request::Meta { line, data } => {
                let start = out.len();
                out.extend_from_slice(line.as_bytes());
                out.extend_from_slice(b"\r\n");
                if let Some(d) = data {
                    out.extend_from_slice(d);
                    out.extend_from_slice(b"\r\n");
                }
                match parse_request(&out[start..], &Limits::default()) {
                    Some(Parse::Request(p))
                        if p.len == out.len() - start
                            && p.command.reply_shape() == ReplyShape::Meta => {}
                    _ => {
                        return Err(MemcacheError::Request(format!(
                            "invalid meta command {line:?} (data: {} bytes); expected e.g. \
                             \"mg <key> v\" or \"ms <key> <datalen>\" with its data",
                            data.as_ref().map_or(0, Vec::len)
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &[u8]) -> Option<Parse> {
        parse_request(s, &Limits::default())
    }

    fn req(s: &[u8]) -> Parsed {
        match parse(s) {
            Some(Parse::Request(p)) => p,
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(s)),
        }
    }

    fn rejected(s: &[u8]) -> (usize, Rejection, bool) {
        match parse(s) {
            Some(Parse::Reject { len, reason, close }) => (len, reason, close),
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(s)),
        }
    }

    #[test]
    fn incomplete_requests_need_more() {
        for s in [
            &b"get k"[..],
            b"set k 0 0 3\r\nab",
            b"set k 0 0 3\r\nabc\r",
            b"",
        ] {
            assert_eq!(parse(s), None, "{:?}", String::from_utf8_lossy(s));
        }
    }

    #[test]
    fn retrievals_count_keys() {
        let p = req(b"get a b c\r\nget d\r\n");
        assert_eq!(
            (p.command, p.keys, p.len, p.data_len),
            (Command::Get, 3, 11, 0)
        );
        let p = req(b"gats 100 a b\n");
        assert_eq!((p.command, p.keys, p.len), (Command::Gats, 2, 13));
        assert_eq!(rejected(b"get\r\n").1, Rejection::UnknownCommand);
        assert_eq!(rejected(b"gat x a\r\n").1, Rejection::BadFormat);
        let long = format!("get {}\r\n", "k".repeat(251));
        assert_eq!(rejected(long.as_bytes()).1, Rejection::BadFormat);
        let many = format!("get{}\r\n", " k".repeat(300));
        assert!(matches!(
            rejected(many.as_bytes()).1,
            Rejection::TooManyKeys {
                keys: 300,
                max: 256
            }
        ));
    }

    #[test]
    fn storage_takes_its_data_block() {
        let p = req(b"set k 5 0 3\r\nabc\r\nget k\r\n");
        assert_eq!(
            (p.command, p.len, p.line_len, p.data_len),
            (Command::Set, 18, 13, 3)
        );
        assert_eq!(p.quiet, None);
        let s = b"cas k 0 0 1 99 noreply\r\nz\r\n";
        let p = req(s);
        assert_eq!(p.command, Command::Cas);
        let (a, b) = p.quiet.unwrap();
        assert_eq!(&s[a..b], b" noreply");
        // bad numbers, missing or extra tokens
        for bad in [
            &b"set k 0 0 x\r\n"[..],
            b"set k 0 0\r\n",
            b"set k 0 0 3 4\r\n",
            b"set k -1 0 3\r\n",
            b"set k 0 0 -3\r\n",
            b"set k 4294967296 0 3\r\n",
            b"cas k 0 0 1\r\n",
        ] {
            let (len, reason, close) = rejected(bad);
            assert_eq!(
                (len, reason, close),
                (bad.len(), Rejection::BadFormat, false)
            );
        }
        assert_eq!(
            rejected(b"set k 0 0 3\r\nabcd\r\n"),
            (18, Rejection::BadDataChunk, false)
        );
    }

    #[test]
    fn too_large_values_are_skipped_before_they_arrive() {
        let limits = Limits {
            max_value: 100,
            ..Limits::default()
        };
        let p = parse_request(b"set k 0 0 101\r\n", &limits);
        assert_eq!(
            p,
            Some(Parse::Reject {
                len: 15 + 101 + 2,
                reason: Rejection::TooLarge,
                close: false
            })
        );
    }

    #[test]
    fn long_lines_close_the_connection() {
        let limits = Limits {
            max_line: 16,
            ..Limits::default()
        };
        let (len, reason, close) = match parse_request(b"get aaaaaaaaaaaaaaaaaaaa", &limits) {
            Some(Parse::Reject { len, reason, close }) => (len, reason, close),
            other => panic!("{other:?}"),
        };
        assert_eq!((len, reason, close), (24, Rejection::LineTooLong, true));
        assert_eq!(parse_request(b"get aaaa", &limits), None);
    }

    #[test]
    fn other_commands() {
        let s = b"delete k 0 noreply\r\n";
        let p = req(s);
        assert_eq!(
            (p.command, p.quiet.map(|(a, b)| &s[a..b])),
            (Command::Delete, Some(&b" noreply"[..]))
        );
        assert_eq!(req(b"incr k 5\r\n").command, Command::Incr);
        assert_eq!(req(b"touch k 10 noreply\r\n").command, Command::Touch);
        assert_eq!(req(b"version\r\n").keys, 0);
        assert_eq!(req(b"quit\r\n").command, Command::Quit);
        assert_eq!(rejected(b"incr k x\r\n").1, Rejection::BadFormat);
        assert_eq!(rejected(b"delete k 5\r\n").1, Rejection::BadFormat);
        assert_eq!(rejected(b"bogus\r\n").1, Rejection::UnknownCommand);
        assert_eq!(rejected(b"\r\n").1, Rejection::UnknownCommand);
        assert_eq!(
            rejected(b"flush_all\r\n").1,
            Rejection::NotAllowed("flush_all")
        );
        assert_eq!(
            &*Rejection::NotAllowed("stats").reply(),
            b"CLIENT_ERROR stats is not allowed through this proxy\r\n"
        );
    }

    #[test]
    fn meta_commands() {
        let s = b"mg k v q t\r\n";
        let p = req(s);
        assert_eq!(p.command, Command::MetaGet);
        let (a, b) = p.quiet.unwrap();
        assert_eq!(&s[a..b], b" q");
        let p = req(b"ms k 3 T0 F5\r\nabc\r\n");
        assert_eq!((p.command, p.data_len, p.len), (Command::MetaSet, 3, 19));
        assert_eq!(rejected(b"ms k S3\r\n").1, Rejection::BadFormat);
        assert_eq!(req(b"mn\r\n").command, Command::MetaNoop);
        // `me` cannot be quiet: a `q` there is a key or a flag memcached rejects
        assert_eq!(req(b"me k q\r\n").quiet, None);
        assert_eq!(rejected(b"mg\r\n").1, Rejection::BadFormat);
    }

    #[test]
    fn encoded_requests_parse_back() {
        let all = [
            Request::get("a"),
            Request::Get {
                keys: vec!["a".into(), "b".into()],
                cas: true,
            },
            Request::set("k", b"hello".to_vec()),
            Request::Store {
                command: Command::Append,
                key: "k".into(),
                flags: 7,
                exptime: -1,
                value: vec![0, 13, 10, 255],
                cas: Some(42),
                noreply: true,
            },
            Request::Delete {
                key: "k".into(),
                noreply: false,
            },
            Request::Arith {
                key: "n".into(),
                delta: 3,
                up: false,
                noreply: true,
            },
            Request::Touch {
                key: "k".into(),
                exptime: 60,
                noreply: false,
            },
            Request::Version,
            Request::Meta {
                line: "ms k 2 q".into(),
                data: Some(b"hi".to_vec()),
            },
        ];
        for r in &all {
            let mut out = Vec::new();
            r.encode(&mut out).unwrap();
            let p = req(&out);
            assert_eq!(p.len, out.len(), "{r:?}");
            assert_eq!(p.is_quiet(), r.reply_shape().is_none(), "{r:?}");
        }
        let mut out = Vec::new();
        assert!(Request::get("bad key").encode(&mut out).is_err());
        assert!(Request::Meta {
            line: "ms k 3".into(),
            data: None
        }
        .encode(&mut out)
        .is_err());
        assert!(out.is_empty());
    }
}
