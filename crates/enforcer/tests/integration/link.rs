//! The enforcer and the real controller service: an enforcer that restarts gets its
//! allocation back; one that cannot reach the controller keeps enforcing the last one.

use crate::common::*;
use std::sync::Arc;
use std::time::Duration;
use tailbound_control::server::serve;
use tailbound_control::{ControlClient, ControlConfig, ControlState, Service};
use tailbound_dataplane::clock::ManualClock;
use tailbound_enforcer::link::{fetch_datacenter, Link};

const S: u64 = 1_000_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enforcer_restart_recovers_its_allocation_from_the_controller() {
    let Some(mc) = memcached() else { return };
    let dc = datacenter();
    // the controller, on its own manual clock
    let ctl_clock = Arc::new(ManualClock::new(0));
    let cfg = ControlConfig {
        min_rate: 10.0,
        ..ControlConfig::default()
    };
    let state = ControlState::new((*dc).clone(), cfg, 0).unwrap();
    let service = Service::new(state, ctl_clock.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve(listener, service.clone(), async {
        let _ = stopped.await;
    }));
    let client = ControlClient::new(&url, Duration::from_secs(5)).unwrap();
    let info = fetch_datacenter(&client).await.unwrap();
    assert_eq!(&info.datacenter, &*dc);

    // enforcer 1: registers, carries traffic for tenant A, reports
    let clock = Arc::new(ManualClock::new(0));
    let mut pcfg = config(mc.addr(), 2);
    pcfg.core.min_rate = info.min_rate;
    pcfg.core.initial_rate = Some(info.min_rate);
    let p1 = start(pcfg.clone(), clock.clone()).await;
    let (mut link, first) = Link::register(client.clone(), "kv-enforcer", &info, &p1)
        .await
        .unwrap();
    assert_eq!(first.epoch, 1);
    // the first allocation is the minimum (no demand yet)
    assert_eq!(p1.status()[0].rates, vec![10.0; 3]);
    // 20 sets of 69 bytes on A's link (5 at the store) wait behind 10 tokens/s: backlog
    let mut c = connect(p1.local_addrs()[0]).await;
    let mut req = Vec::new();
    for k in 0..20 {
        req.extend_from_slice(format!("set k{k} 0 0 5\r\nhello\r\n").as_bytes());
    }
    send(&mut c, &req).await;
    until(|| p1.status()[0].queued == 20).await;
    clock.advance(S);
    link.report_once(&p1).await.unwrap();
    ctl_clock.set(S);
    assert!(service.step().unwrap());
    let update = link.report_once(&p1).await.unwrap();
    assert_eq!(update.epoch, 2);
    // the backlog became demand (pulsar eq. 4) and the demand an allocation: 20 × 69 tokens/s
    // on the link, 20 × 5 at the store, and the queue drains
    let rates = p1.status()[0].rates.clone();
    assert!(
        (rates[0] - 1380.0).abs() < 1e-6 && (rates[1] - 100.0).abs() < 1e-6,
        "{rates:?}"
    );
    clock.advance(2 * S);
    p1.tick();
    assert_eq!(read_n(&mut c, 20 * 8).await.len(), 160);

    // the controller goes away: the enforcer keeps its allocation and says so
    drop(c);
    p1.shutdown().await;
    drop(p1);

    // enforcer 2, a restart of the same one: its allocation comes back on registration
    let p2 = start(pcfg, clock.clone()).await;
    assert_eq!(
        p2.status()[0].rates,
        vec![10.0; 3],
        "a fresh proxy starts at the minimum"
    );
    let (mut link2, again) = Link::register(client.clone(), "kv-enforcer", &info, &p2)
        .await
        .unwrap();
    assert_eq!(again.epoch, 2);
    assert_eq!(p2.status()[0].rates, rates);
    let st = client.status().await.unwrap();
    assert_eq!(st.enforcers.len(), 1);
    assert_eq!(st.flows[0].enforcer.as_deref(), Some("kv-enforcer"));

    let _ = stop.send(());
    server.await.unwrap().unwrap();
    clock.advance(S);
    assert!(link2.report_once(&p2).await.is_err());
    assert!(!link2.reachable());
    assert_eq!(
        p2.status()[0].rates,
        rates,
        "the last allocation stays in force"
    );
    assert!(link.reachable());
    p2.shutdown().await;
}
