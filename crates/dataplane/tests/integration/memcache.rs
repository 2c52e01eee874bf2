//! The memcached codec and client against a real memcached (Debian's package), started on a
//! free loopback port by PID and stopped at the end of each test.

use std::time::Duration;
use tailbound_dataplane::memcache::load::{run_load, LoadMode, LoadSpec};
use tailbound_dataplane::memcache::reply::Value;
use tailbound_dataplane::memcache::server::available;
use tailbound_dataplane::memcache::{Client, Command, Memcached, MemcachedOptions, Reply, Request};

/// A fresh memcached, or `None` (test skipped) when it is not installed outside CI.
fn memcached() -> Option<Memcached> {
    if !available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "memcached is not installed (apt-get install -y memcached); CI must run this test"
        );
        eprintln!("skipped: memcached is not installed");
        return None;
    }
    Some(Memcached::start(&MemcachedOptions::default()).expect("memcached starts"))
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

const T: Duration = Duration::from_secs(5);

#[test]
fn classic_commands_round_trip() {
    let Some(mc) = memcached() else { return };
    rt().block_on(async {
        let mut c = Client::connect(mc.addr(), T).await.unwrap();
        assert!(c.version().await.unwrap().starts_with("1."));
        c.set("k", b"hello").await.unwrap();
        let v = c.get("k").await.unwrap().unwrap();
        assert_eq!(v.data, b"hello");
        assert_eq!(c.get("missing").await.unwrap(), None);
        // gets returns a cas value that cas accepts once
        let r = c
            .call(&Request::Get {
                keys: vec!["k".into()],
                cas: true,
            })
            .await
            .unwrap();
        let Some(Reply::Values(v)) = r else {
            panic!("{r:?}")
        };
        let cas = v[0].cas.unwrap();
        let store = |command, cas| Request::Store {
            command,
            key: "k".into(),
            flags: 9,
            exptime: 0,
            value: b"!".to_vec(),
            cas,
            noreply: false,
        };
        let status = |r: Option<Reply>| match r {
            Some(Reply::Status(s)) => s,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            status(c.call(&store(Command::Set, Some(cas))).await.unwrap()),
            "STORED"
        );
        assert_eq!(
            status(c.call(&store(Command::Set, Some(cas))).await.unwrap()),
            "EXISTS"
        );
        assert_eq!(
            status(c.call(&store(Command::Append, None)).await.unwrap()),
            "STORED"
        );
        assert_eq!(
            status(c.call(&store(Command::Add, None)).await.unwrap()),
            "NOT_STORED"
        );
        let v = c.get("k").await.unwrap().unwrap();
        assert_eq!((v.data.as_slice(), v.flags), (&b"!!"[..], 9));
        c.set("n", b"41").await.unwrap();
        let incr = Request::Arith {
            key: "n".into(),
            delta: 1,
            up: true,
            noreply: false,
        };
        assert_eq!(c.call(&incr).await.unwrap(), Some(Reply::Number(42)));
        let touch = Request::Touch {
            key: "n".into(),
            exptime: 100,
            noreply: false,
        };
        assert_eq!(status(c.call(&touch).await.unwrap()), "TOUCHED");
        let del = Request::Delete {
            key: "n".into(),
            noreply: false,
        };
        assert_eq!(status(c.call(&del).await.unwrap()), "DELETED");
        assert_eq!(status(c.call(&del).await.unwrap()), "NOT_FOUND");
        // a quiet request gets no reply; the next one's reply is still in order
        let quiet = Request::Delete {
            key: "k".into(),
            noreply: true,
        };
        assert_eq!(c.call(&quiet).await.unwrap(), None);
        assert_eq!(c.get("k").await.unwrap(), None);
    });
}

#[test]
fn meta_commands_and_pipelining_round_trip() {
    let Some(mc) = memcached() else { return };
    rt().block_on(async {
        let mut c = Client::connect(mc.addr(), T).await.unwrap();
        let meta = |line: &str, data: Option<&[u8]>| Request::Meta {
            line: line.into(),
            data: data.map(<[u8]>::to_vec),
        };
        // pipelined: all requests first, then every reply in order
        let value = vec![7u8; 70_000];
        for r in [
            meta("ms a 3 T0", Some(b"xyz")),
            meta("ms big 70000", Some(&value)),
            meta("mg a v t", None),
            meta("mg nope v", None),
            meta("mg big v s", None),
            meta("md a", None),
            meta("mn", None),
        ] {
            c.send(&r).await.unwrap();
        }
        assert_eq!(c.pending(), 7);
        let code = |r: Reply| match r {
            Reply::Meta { code, value, .. } => (code, value.map(|v| v.len())),
            other => panic!("{other:?}"),
        };
        assert_eq!(code(c.recv().await.unwrap()), ("HD".into(), None));
        assert_eq!(code(c.recv().await.unwrap()), ("HD".into(), None));
        assert_eq!(code(c.recv().await.unwrap()), ("VA".into(), Some(3)));
        assert_eq!(code(c.recv().await.unwrap()), ("EN".into(), None));
        assert_eq!(code(c.recv().await.unwrap()), ("VA".into(), Some(70_000)));
        assert_eq!(code(c.recv().await.unwrap()), ("HD".into(), None));
        assert_eq!(code(c.recv().await.unwrap()), ("MN".into(), None));
        // multi-key get over values of several sizes
        c.send(&Request::Get {
            keys: vec!["big".into(), "nope".into(), "big".into()],
            cas: false,
        })
        .await
        .unwrap();
        let Reply::Values(v) = c.recv().await.unwrap() else {
            panic!()
        };
        assert_eq!(
            v.iter().map(|v: &Value| v.data.len()).collect::<Vec<_>>(),
            [70_000, 70_000]
        );
        // memcached's own error replies decode
        c.send_raw(
            b"bogus\r\n",
            Some(tailbound_dataplane::memcache::ReplyShape::Line),
        )
        .await
        .unwrap();
        assert_eq!(c.recv().await.unwrap(), Reply::Error);
    });
}

#[test]
fn a_stopped_server_is_an_error_not_a_hang() {
    let Some(mc) = memcached() else { return };
    let addr = mc.addr();
    rt().block_on(async {
        let mut c = Client::connect(addr, T).await.unwrap();
        c.set("k", b"v").await.unwrap();
        mc.stop();
        assert!(c.get("k").await.is_err());
        assert!(Client::connect(addr, T).await.is_err());
    });
}

#[test]
fn load_runs_are_bounded_and_hit_preloaded_keys() {
    let Some(mc) = memcached() else { return };
    for mode in [
        LoadMode::Closed { depth: 2 },
        LoadMode::Open { rate_per_s: 2000.0 },
    ] {
        let spec = LoadSpec {
            connections: 2,
            mode,
            max_requests: 400,
            duration_s: 10.0,
            warmup_s: 0.0,
            ..LoadSpec::closed(mc.addr(), 1024)
        };
        let r = run_load(&spec).unwrap();
        assert!(r.requests > 0 && r.requests <= 400, "{r:?}");
        assert_eq!((r.errors, r.misses), (0, 0), "{r:?}");
        assert_eq!(r.latency.unwrap().count, r.requests);
    }
    let bad = LoadSpec {
        get_fraction: 2.0,
        ..LoadSpec::closed(mc.addr(), 1024)
    };
    assert!(run_load(&bad)
        .unwrap_err()
        .to_string()
        .contains("GET fraction 2"));
}
