//! An async memcached client (tokio) with pipelining: [`Client::send`] queues requests on the
//! wire in order, [`Client::recv`] returns their replies in the same order; [`Client::call`]
//! does both. Every socket operation has a timeout, so a dead or stalled server is an error,
//! never a hang. Quiet requests (`noreply`, meta `q`) expect no reply and are not waited for.

use super::reply::{Reply, ReplyReader, ReplyShape, Value};
use super::request::Request;
use super::{Limits, MemcacheError};
use bytes::{Buf, BytesMut};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One reply framed but not decoded (what a load generator needs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// bytes of the whole reply
    pub len: usize,
    /// items with a value (hits of a retrieval, `VA` of a meta command)
    pub values: u32,
    /// payload bytes of those values
    pub value_bytes: usize,
    /// the reply is an error string
    pub error: bool,
}

/// A connection to one memcached; see the module docs.
#[derive(Debug)]
pub struct Client {
    addr: SocketAddr,
    stream: TcpStream,
    buf: BytesMut,
    out: Vec<u8>,
    pending: VecDeque<ReplyShape>,
    timeout: Duration,
    limits: Limits,
}

impl Client {
    /// Connects with `timeout` for the connection and for every later read and write.
    ///
    /// # Errors
    /// [`MemcacheError::Connect`] or [`MemcacheError::Timeout`].
    pub async fn connect(addr: SocketAddr, timeout: Duration) -> Result<Client, MemcacheError> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| MemcacheError::Timeout {
                addr,
                what: "connecting",
                timeout_s: timeout.as_secs_f64(),
            })?
            .map_err(|source| MemcacheError::Connect { addr, source })?;
        stream
            .set_nodelay(true)
            .map_err(|source| MemcacheError::Io { addr, source })?;
        Ok(Client {
            addr,
            stream,
            buf: BytesMut::with_capacity(16 * 1024),
            out: Vec::with_capacity(4096),
            pending: VecDeque::new(),
            timeout,
            limits: Limits::default(),
        })
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Replies still to be received.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    fn timed_out(&self, what: &'static str) -> MemcacheError {
        MemcacheError::Timeout {
            addr: self.addr,
            what,
            timeout_s: self.timeout.as_secs_f64(),
        }
    }

    /// Writes `req`; its reply (if it gets one) is returned by a later [`Self::recv`].
    ///
    /// # Errors
    /// An invalid request, or an I/O error or timeout writing it.
    pub async fn send(&mut self, req: &Request) -> Result<(), MemcacheError> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let r = match req.encode(&mut out) {
            Ok(()) => self.send_raw(&out, req.reply_shape()).await,
            Err(e) => Err(e),
        };
        self.out = out;
        r
    }

    /// Writes already encoded request bytes whose reply has `shape` (`None`: no reply).
    ///
    /// # Errors
    /// An I/O error or timeout.
    pub async fn send_raw(
        &mut self,
        bytes: &[u8],
        shape: Option<ReplyShape>,
    ) -> Result<(), MemcacheError> {
        let addr = self.addr;
        tokio::time::timeout(self.timeout, self.stream.write_all(bytes))
            .await
            .map_err(|_| self.timed_out("writing a request"))?
            .map_err(|source| MemcacheError::Io { addr, source })?;
        if let Some(s) = shape {
            self.pending.push_back(s);
        }
        Ok(())
    }

    /// Reads until the next reply is complete in the buffer; returns its length and frame.
    async fn next_reply(&mut self) -> Result<(ReplyShape, Frame), MemcacheError> {
        let Some(&shape) = self.pending.front() else {
            return Err(MemcacheError::Request(
                "no reply is outstanding; send a request first".into(),
            ));
        };
        let mut reader = ReplyReader::new(shape, self.limits);
        let mut frame = Frame {
            len: 0,
            values: 0,
            value_bytes: 0,
            error: false,
        };
        loop {
            match reader.next_chunk(&self.buf[frame.len..]) {
                Err(e) => {
                    return Err(MemcacheError::Protocol {
                        addr: self.addr,
                        message: e.0,
                    })
                }
                Ok(Some(c)) => {
                    frame.len += c.len;
                    frame.value_bytes += c.value_bytes;
                    let item = shape == ReplyShape::Retrieval && !c.done && !c.error;
                    frame.values += u32::from(item || c.code == *b"VA");
                    frame.error |= c.error;
                    if c.done {
                        self.pending.pop_front();
                        return Ok((shape, frame));
                    }
                    continue;
                }
                Ok(None) => {}
            }
            let addr = self.addr;
            let n = tokio::time::timeout(self.timeout, self.stream.read_buf(&mut self.buf))
                .await
                .map_err(|_| self.timed_out("waiting for a reply"))?
                .map_err(|source| MemcacheError::Io { addr, source })?;
            if n == 0 {
                return Err(MemcacheError::Closed {
                    addr,
                    pending: self.pending.len(),
                });
            }
        }
    }

    /// The next reply, framed and discarded (for load generators: no decoding, no copies).
    ///
    /// # Errors
    /// As [`Self::recv`].
    pub async fn recv_frame(&mut self) -> Result<Frame, MemcacheError> {
        let (_, frame) = self.next_reply().await?;
        self.buf.advance(frame.len);
        Ok(frame)
    }

    /// The next reply, decoded.
    ///
    /// # Errors
    /// No reply outstanding, an I/O error, a timeout, the server closing the connection, or a
    /// malformed reply.
    pub async fn recv(&mut self) -> Result<Reply, MemcacheError> {
        let (shape, frame) = self.next_reply().await?;
        let r = Reply::decode(shape, &self.buf[..frame.len]).map_err(|e| MemcacheError::Protocol {
            addr: self.addr,
            message: e.0,
        });
        self.buf.advance(frame.len);
        r
    }

    /// Sends `req` and waits for its reply (after any replies still outstanding, which are
    /// discarded). A quiet request returns `None`.
    ///
    /// # Errors
    /// As [`Self::send`] and [`Self::recv`].
    pub async fn call(&mut self, req: &Request) -> Result<Option<Reply>, MemcacheError> {
        while !self.pending.is_empty() {
            self.recv_frame().await?;
        }
        self.send(req).await?;
        if self.pending.is_empty() {
            return Ok(None);
        }
        self.recv().await.map(Some)
    }

    /// `get key`: the value, or `None` on a miss.
    ///
    /// # Errors
    /// As [`Self::call`]; an error reply is [`MemcacheError::Protocol`].
    pub async fn get(&mut self, key: &str) -> Result<Option<Value>, MemcacheError> {
        match self.call(&Request::get(key)).await? {
            Some(Reply::Values(mut v)) => Ok(v.pop()),
            other => Err(self.unexpected("get", other)),
        }
    }

    /// `set key 0 0 <len>`; anything but `STORED` is an error.
    ///
    /// # Errors
    /// As [`Self::call`].
    pub async fn set(&mut self, key: &str, value: &[u8]) -> Result<(), MemcacheError> {
        match self.call(&Request::set(key, value.to_vec())).await? {
            Some(Reply::Status(s)) if s == "STORED" => Ok(()),
            other => Err(self.unexpected("set", other)),
        }
    }

    /// The server's version.
    ///
    /// # Errors
    /// As [`Self::call`].
    pub async fn version(&mut self) -> Result<String, MemcacheError> {
        match self.call(&Request::Version).await? {
            Some(Reply::Version(v)) => Ok(v),
            other => Err(self.unexpected("version", other)),
        }
    }

    fn unexpected(&self, what: &str, reply: Option<Reply>) -> MemcacheError {
        MemcacheError::Protocol {
            addr: self.addr,
            message: format!("unexpected reply to {what}: {reply:?}"),
        }
    }
}
