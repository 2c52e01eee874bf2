//! Replies of the memcached text protocol: framed incrementally, decoded on demand.
//!
//! A reply's shape depends on the request ([`ReplyShape`]): retrievals answer with zero or more
//! `VALUE <key> <flags> <bytes> [<cas>]` items and `END`; meta commands with one line, followed
//! by a data block when it starts with `VA <size>`; everything else with one line. Any of them
//! may instead be an error line (`ERROR`, `CLIENT_ERROR ...`, `SERVER_ERROR ...`), which ends
//! the reply.
//!
//! [`ReplyReader`] cuts the front of a buffer into [`Chunk`]s — a whole line, or a whole item
//! with its data — so a proxy forwards a reply without holding more than one item of it.
//! [`Reply::decode`] turns a complete reply into a value a client can use.

use super::Limits;

/// What a reply looks like, by request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyShape {
    /// `get`, `gets`, `gat`, `gats`: items, then `END`
    Retrieval,
    /// one line
    Line,
    /// `mg`, `ms`, `md`, `ma`, `mn`, `me`: one line, with a data block after `VA <size>`
    Meta,
}

/// A malformed reply: the connection cannot be trusted any more.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReplyError(pub String);

/// One unit of a reply at the front of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// bytes of the chunk, terminators included
    pub len: usize,
    /// the reply is complete after this chunk
    pub done: bool,
    /// payload bytes of a `VALUE` or `VA` item (0 for lines without data)
    pub value_bytes: usize,
    /// an `ERROR`, `CLIENT_ERROR` or `SERVER_ERROR` line
    pub error: bool,
    /// the first two bytes of the line (`VA`, `HD`, `EN`, `ST` of `STORED`, ...)
    pub code: [u8; 2],
}

/// Whether a reply line (without terminator) is one of memcached's error strings.
pub fn is_error_line(line: &[u8]) -> bool {
    line == b"ERROR"
        || line.starts_with(b"ERROR ")
        || line.starts_with(b"CLIENT_ERROR")
        || line.starts_with(b"SERVER_ERROR")
}

/// Frames one reply; see the module docs. Reuse it for the next reply with [`Self::reset`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyReader {
    shape: ReplyShape,
    limits: Limits,
    /// items seen so far in this retrieval reply
    items: u32,
}

fn number(s: &[u8]) -> Option<usize> {
    if s.is_empty() || s.len() > 10 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

impl ReplyReader {
    pub fn new(shape: ReplyShape, limits: Limits) -> ReplyReader {
        ReplyReader {
            shape,
            limits,
            items: 0,
        }
    }

    /// The shape it frames.
    pub fn shape(&self) -> ReplyShape {
        self.shape
    }

    /// Items (values) seen so far in the current reply.
    pub fn items(&self) -> u32 {
        self.items
    }

    /// Starts over for a new reply of `shape`.
    pub fn reset(&mut self, shape: ReplyShape) {
        self.shape = shape;
        self.items = 0;
    }

    /// The next chunk at the front of `buf`, or `None` if it is not complete yet.
    ///
    /// # Errors
    /// [`ReplyError`] for a line longer than the limit, a value larger than the limit, or a
    /// line that does not belong in this reply.
    pub fn next_chunk(&mut self, buf: &[u8]) -> Result<Option<Chunk>, ReplyError> {
        let window = &buf[..buf.len().min(self.limits.max_line)];
        let Some(nl) = window.iter().position(|&b| b == b'\n') else {
            if buf.len() >= self.limits.max_line {
                return Err(ReplyError(format!(
                    "reply line longer than {} bytes",
                    self.limits.max_line
                )));
            }
            return Ok(None);
        };
        let line_len = nl + 1;
        let line = &buf[..nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let code = [
            line.first().copied().unwrap_or(0),
            line.get(1).copied().unwrap_or(0),
        ];
        let plain = |done: bool| Chunk {
            len: line_len,
            done,
            value_bytes: 0,
            error: false,
            code,
        };
        if is_error_line(line) {
            self.items = 0;
            return Ok(Some(Chunk {
                error: true,
                ..plain(true)
            }));
        }
        let with_data = |items: &mut u32, size: Option<usize>| match size {
            None => Err(ReplyError(format!(
                "bad item line {:?}",
                String::from_utf8_lossy(line)
            ))),
            Some(n) if n > self.limits.max_value => Err(ReplyError(format!(
                "value of {n} bytes exceeds the limit of {} bytes",
                self.limits.max_value
            ))),
            Some(n) => {
                let total = line_len + n + 2;
                if buf.len() < total {
                    return Ok(None);
                }
                if &buf[total - 2..total] != b"\r\n" {
                    return Err(ReplyError("value not terminated by \\r\\n".into()));
                }
                *items += 1;
                Ok(Some((total, n)))
            }
        };
        match self.shape {
            ReplyShape::Line => Ok(Some(plain(true))),
            ReplyShape::Meta => {
                if line.starts_with(b"VA ") {
                    let size = line[3..].split(|&b| b == b' ').next().and_then(number);
                    let mut items = 0;
                    Ok(with_data(&mut items, size)?.map(|(len, n)| Chunk {
                        len,
                        value_bytes: n,
                        ..plain(true)
                    }))
                } else {
                    Ok(Some(plain(true)))
                }
            }
            ReplyShape::Retrieval => {
                if line == b"END" {
                    self.items = 0;
                    return Ok(Some(plain(true)));
                }
                if !line.starts_with(b"VALUE ") {
                    return Err(ReplyError(format!(
                        "expected VALUE or END in a retrieval reply, got {:?}",
                        String::from_utf8_lossy(line)
                    )));
                }
                // VALUE <key> <flags> <bytes> [<cas>]
                let size = line.split(|&b| b == b' ').nth(3).and_then(number);
                let mut items = self.items;
                let r = with_data(&mut items, size)?;
                self.items = items;
                Ok(r.map(|(len, n)| Chunk {
                    len,
                    value_bytes: n,
                    ..plain(false)
                }))
            }
        }
    }
}

/// A retrieved item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Value {
    pub key: String,
    pub flags: u32,
    pub data: Vec<u8>,
    /// with `gets`/`gats`
    pub cas: Option<u64>,
}

/// A decoded reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// a retrieval's items (misses are absent)
    Values(Vec<Value>),
    /// `STORED`, `NOT_STORED`, `EXISTS`, `NOT_FOUND`, `DELETED`, `TOUCHED`, `OK`, or another
    /// status line of the classic commands
    Status(String),
    /// the new value of `incr`/`decr`
    Number(u64),
    /// `VERSION <v>`
    Version(String),
    /// a meta reply: its code (`HD`, `VA`, `EN`, `NF`, `NS`, `EX`, `MN`, `ME`), flags and value
    Meta {
        code: String,
        flags: Vec<String>,
        value: Option<Vec<u8>>,
    },
    /// `ERROR`
    Error,
    /// `CLIENT_ERROR <message>`
    ClientError(String),
    /// `SERVER_ERROR <message>`
    ServerError(String),
}

impl Reply {
    /// Whether the reply is one of the three error strings.
    pub fn is_error(&self) -> bool {
        matches!(
            self,
            Reply::Error | Reply::ClientError(_) | Reply::ServerError(_)
        )
    }

    /// Decodes a complete reply (`bytes` holds exactly one).
    ///
    /// # Errors
    /// [`ReplyError`] when `bytes` is not one complete reply of `shape`.
    pub fn decode(shape: ReplyShape, bytes: &[u8]) -> Result<Reply, ReplyError> {
        let limits = Limits {
            max_line: bytes.len().max(2) + 1,
            max_value: bytes.len(),
            max_keys: 0,
        };
        let mut reader = ReplyReader::new(shape, limits);
        let mut at = 0;
        let mut values = Vec::new();
        loop {
            let rest = &bytes[at..];
            let Some(c) = reader.next_chunk(rest)? else {
                return Err(ReplyError("incomplete reply".into()));
            };
            let line_end = rest.iter().position(|&b| b == b'\n').unwrap_or(0);
            let line = &rest[..line_end];
            let line = String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line));
            let data = || rest[line_end + 1..line_end + 1 + c.value_bytes].to_vec();
            at += c.len;
            if c.error {
                return Ok(error_reply(&line));
            }
            match shape {
                ReplyShape::Retrieval => {
                    if !c.done {
                        let t: Vec<&str> = line.split(' ').collect();
                        values.push(Value {
                            key: t.get(1).copied().unwrap_or_default().to_string(),
                            flags: t.get(2).and_then(|f| f.parse().ok()).unwrap_or(0),
                            data: data(),
                            cas: t.get(4).and_then(|c| c.parse().ok()),
                        });
                        continue;
                    }
                    if at != bytes.len() {
                        return Err(ReplyError("bytes after the end of the reply".into()));
                    }
                    return Ok(Reply::Values(values));
                }
                ReplyShape::Line => {
                    if at != bytes.len() {
                        return Err(ReplyError("bytes after the end of the reply".into()));
                    }
                    if let Some(v) = line.strip_prefix("VERSION ") {
                        return Ok(Reply::Version(v.to_string()));
                    }
                    if let Ok(n) = line.parse::<u64>() {
                        return Ok(Reply::Number(n));
                    }
                    return Ok(Reply::Status(line.into_owned()));
                }
                ReplyShape::Meta => {
                    if at != bytes.len() {
                        return Err(ReplyError("bytes after the end of the reply".into()));
                    }
                    let mut t = line.split(' ').filter(|s| !s.is_empty());
                    let code = t.next().unwrap_or_default().to_string();
                    if code == "VA" {
                        t.next(); // the size
                    }
                    return Ok(Reply::Meta {
                        value: (code == "VA").then(data),
                        code,
                        flags: t.map(str::to_string).collect(),
                    });
                }
            }
        }
    }
}

fn error_reply(line: &str) -> Reply {
    if let Some(m) = line.strip_prefix("CLIENT_ERROR") {
        Reply::ClientError(m.trim_start().to_string())
    } else if let Some(m) = line.strip_prefix("SERVER_ERROR") {
        Reply::ServerError(m.trim_start().to_string())
    } else {
        Reply::Error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(shape: ReplyShape, buf: &[u8]) -> Vec<Chunk> {
        let mut r = ReplyReader::new(shape, Limits::default());
        let mut at = 0;
        let mut out = Vec::new();
        while let Some(c) = r.next_chunk(&buf[at..]).unwrap() {
            at += c.len;
            out.push(c);
            if c.done {
                break;
            }
        }
        out
    }

    #[test]
    fn retrieval_items_then_end() {
        let buf = b"VALUE a 0 3\r\nabc\r\nVALUE b 5 2 77\r\nxy\r\nEND\r\nSTORED\r\n";
        let c = chunks(ReplyShape::Retrieval, buf);
        assert_eq!(c.len(), 3);
        assert_eq!((c[0].len, c[0].value_bytes, c[0].done), (18, 3, false));
        assert_eq!((c[1].value_bytes, c[2].done), (2, true));
        let total: usize = c.iter().map(|c| c.len).sum();
        let r = Reply::decode(ReplyShape::Retrieval, &buf[..total]).unwrap();
        let Reply::Values(v) = r else { panic!() };
        assert_eq!(v[1].key, "b");
        assert_eq!(
            (v[1].flags, v[1].cas, v[1].data.as_slice()),
            (5, Some(77), &b"xy"[..])
        );
    }

    #[test]
    fn incomplete_items_wait() {
        let mut r = ReplyReader::new(ReplyShape::Retrieval, Limits::default());
        assert_eq!(r.next_chunk(b"VALUE a 0 3\r\nab").unwrap(), None);
        assert_eq!(r.next_chunk(b"VALUE a 0 3\r\nabc\r").unwrap(), None);
        assert_eq!(r.next_chunk(b"EN").unwrap(), None);
    }

    #[test]
    fn meta_values_and_lines() {
        let c = chunks(ReplyShape::Meta, b"VA 3 t-1 Oop\r\nabc\r\n");
        assert_eq!((c[0].len, c[0].value_bytes, &c[0].code), (19, 3, b"VA"));
        let r = Reply::decode(ReplyShape::Meta, b"VA 3 t-1 Oop\r\nabc\r\n").unwrap();
        assert_eq!(
            r,
            Reply::Meta {
                code: "VA".into(),
                flags: vec!["t-1".into(), "Oop".into()],
                value: Some(b"abc".to_vec())
            }
        );
        assert_eq!(&chunks(ReplyShape::Meta, b"EN\r\n")[0].code, b"EN");
    }

    #[test]
    fn errors_end_any_reply() {
        for shape in [ReplyShape::Retrieval, ReplyShape::Line, ReplyShape::Meta] {
            let c = chunks(shape, b"SERVER_ERROR out of memory\r\n");
            assert!(c[0].error && c[0].done);
            assert_eq!(
                Reply::decode(shape, b"CLIENT_ERROR bad data chunk\r\n").unwrap(),
                Reply::ClientError("bad data chunk".into())
            );
        }
        assert_eq!(
            Reply::decode(ReplyShape::Line, b"ERROR\r\n").unwrap(),
            Reply::Error
        );
    }

    #[test]
    fn line_replies_decode() {
        let d = |s: &[u8]| Reply::decode(ReplyShape::Line, s).unwrap();
        assert_eq!(d(b"STORED\r\n"), Reply::Status("STORED".into()));
        assert_eq!(d(b"42\r\n"), Reply::Number(42));
        assert_eq!(d(b"VERSION 1.6.18\r\n"), Reply::Version("1.6.18".into()));
    }

    #[test]
    fn malformed_replies_are_errors() {
        let mut r = ReplyReader::new(ReplyShape::Retrieval, Limits::default());
        assert!(r.next_chunk(b"STORED\r\n").is_err());
        assert!(r.next_chunk(b"VALUE a 0 x\r\n").is_err());
        assert!(r.next_chunk(b"VALUE a 0 3\r\nabcXX").is_err());
        let small = Limits {
            max_value: 2,
            ..Limits::default()
        };
        let mut r = ReplyReader::new(ReplyShape::Meta, small);
        assert!(r.next_chunk(b"VA 3\r\n").is_err());
        assert!(Reply::decode(ReplyShape::Line, b"STORED\r\nX").is_err());
    }
}
