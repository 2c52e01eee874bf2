//! The enforcement benchmark behind `bench/enforce` (run as root): plan + apply of N tenant
//! flows on one host, and the re-apply after one tenant changes, beside the originals' way of
//! running the same commands (one `tc` process per command, nothing read back), in one run on
//! the same namespace. Prints medians and ratios.
//!
//! Usage: enforce_bench [TENANTS] [REPEATS]   (defaults 1000 and 5)

use std::process::Command;
use std::time::{Duration, Instant};
use tailbound_dataplane::netns::{LinkOptions, TwoHosts};
use tailbound_dataplane::tc::{Enforcer, Target};
use tailbound_enforce_plan::{diff, plan, HostMap, Plan, PlanOptions, TcOp, TcState};
use tailbound_model::{Bucket, Decisions, Excess, RateLimit, Stage, TenantDecision};

fn decisions(n: usize, moved: Option<usize>, rate_of_0: f64) -> Decisions {
    Decisions {
        policy: "bench".into(),
        excess: Excess::Wait,
        tenants: (0..n)
            .map(|i| TenantDecision {
                name: format!("t{i}"),
                admitted: true,
                priority: Some(if moved == Some(i) { 3 } else { (i % 3) as u32 }),
                server: None,
                limits: vec![RateLimit {
                    flow: format!("t{i}-req"),
                    stage: Stage::NetIn,
                    bucket: Bucket::new(if i == 0 { rate_of_0 } else { 100e3 }, 10e3),
                }],
            })
            .collect(),
    }
}

fn host_map(h: &TwoHosts, n: usize) -> HostMap {
    let mut s = format!(
        "[[hosts]]\nname = \"client\"\nnetns = \"{}\"\n[[hosts.interfaces]]\nname = \"tb0\"\naddress = \"10.199.0.2\"\nlink = \"1Gbit\"\n\
         [[hosts]]\nname = \"server\"\nnetns = \"{}\"\n[[hosts.interfaces]]\nname = \"tb0\"\naddress = \"10.199.0.1\"\nlink = \"1Gbit\"\n",
        h.client_ns(),
        h.server_ns()
    );
    for i in 0..n {
        s.push_str(&format!(
            "[[tenants]]\nname = \"t{i}\"\nclient = {{ host = \"client\" }}\nserver = {{ host = \"server\", port = {} }}\n",
            10_000 + i
        ));
    }
    HostMap::parse(&s, "bench.hosts.toml").expect("valid map")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn fastest(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The originals' way: every command its own `tc` process, exit status ignored.
fn one_process_per_command(ns: &str, ops: &[TcOp]) -> Duration {
    let start = Instant::now();
    for op in ops {
        let line = op.line("tb0");
        let _ = Command::new("tc")
            .args(["-n", ns])
            .args(line.split(' '))
            .output();
    }
    start.elapsed()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let reps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(5).max(1);
    let h = TwoHosts::create(LinkOptions::default()).expect("namespaces (run as root)");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let e = Enforcer::new(dir.path());
    let map = host_map(&h, n);
    let client = Target {
        host: "client",
        netns: Some(h.client_ns()),
        interface: "tb0",
    };
    let opts = PlanOptions {
        host: Some("client".into()),
        ..PlanOptions::default()
    };
    let plan_now = |d: &Decisions| -> (Plan, f64) {
        let start = Instant::now();
        let prior = e.prior(&map, Some("client")).expect("records");
        let p = plan(d, &map, &opts, &prior).expect("the bench decisions plan");
        (p, start.elapsed().as_secs_f64())
    };
    let base = decisions(n, None, 100e3);
    let remove = || {
        e.remove(&map, "client").expect("remove");
    };

    eprintln!("{n} tenant flows on one host, {reps} repeats");
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    // ours: plan + read + one batch + read back, from the kernel's default
    let (mut plan_s, mut full_s, mut commands) = (Vec::new(), Vec::new(), 0);
    for _ in 0..reps {
        let start = Instant::now();
        let (p, t) = plan_now(&base);
        let r = e.apply(&p.hosts[0]).expect("apply");
        full_s.push(start.elapsed().as_secs_f64());
        plan_s.push(t);
        commands = r[0].changes;
        remove();
    }
    // theirs: the same commands, one process each
    let (p, _) = plan_now(&base);
    let build = diff(&TcState::default(), &p.hosts[0].interfaces[0].state);
    let mut theirs_full = Vec::new();
    for _ in 0..reps.min(3) {
        theirs_full.push(one_process_per_command(h.client_ns(), &build).as_secs_f64());
        let _ = Command::new("tc")
            .args(["-n", h.client_ns(), "qdisc", "del", "dev", "tb0", "root"])
            .output();
    }
    // one tenant changes: its rate, then its level
    e.apply(&plan_now(&base).0.hosts[0]).expect("apply");
    let (mut rate_s, mut move_s, mut theirs_rate, mut theirs_move) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let changes = 20;
    for k in 0..changes {
        let faster = decisions(n, None, if k % 2 == 0 { 150e3 } else { 100e3 });
        let start = Instant::now();
        let (p, _) = plan_now(&faster);
        let r = e.apply(&p.hosts[0]).expect("apply");
        rate_s.push(start.elapsed().as_secs_f64());
        assert_eq!(r[0].changes, 1, "{:?}", r[0].commands);
    }
    for k in 0..changes {
        let moved = decisions(n, (k % 2 == 0).then_some(7), 100e3);
        let start = Instant::now();
        let (p, _) = plan_now(&moved);
        e.apply(&p.hosts[0]).expect("apply");
        move_s.push(start.elapsed().as_secs_f64());
    }
    // theirs: the change's commands, one process each (state not read, nothing checked)
    for k in 0..changes {
        let before = tailbound_dataplane::tc::read_state(client).expect("read");
        let rate = decisions(n, None, if k % 2 == 0 { 150e3 } else { 100e3 });
        let p = plan(&rate, &map, &opts, &e.prior(&map, Some("client")).unwrap()).unwrap();
        let ops = diff(&before, &p.hosts[0].interfaces[0].state);
        theirs_rate.push(one_process_per_command(h.client_ns(), &ops).as_secs_f64());
        let moved = decisions(n, (k % 2 == 0).then_some(7), 100e3);
        let p = plan(&moved, &map, &opts, &e.prior(&map, Some("client")).unwrap()).unwrap();
        let now = tailbound_dataplane::tc::read_state(client).expect("read");
        let ops = diff(&now, &p.hosts[0].interfaces[0].state);
        theirs_move.push(one_process_per_command(h.client_ns(), &ops).as_secs_f64());
        // back to where the next round starts, through the enforcer (records stay right)
        e.apply(&plan_now(&base).0.hosts[0]).expect("apply");
    }
    remove();

    let ms = |s: f64| s * 1e3;
    let (plan_m, full_m, theirs_full_m) = (median(plan_s), median(full_s), median(theirs_full));
    let (rate_min, move_min) = (fastest(&rate_s), fastest(&move_s));
    let (rate_m, move_m) = (median(rate_s), median(move_s));
    let (theirs_rate_m, theirs_move_m) = (median(theirs_rate), median(theirs_move));
    println!(
        "enforce bench: {n} tenant flows on one host ({commands} tc commands to build), medians"
    );
    println!(
        "  full apply, ours (plan {:.1} ms + read, one tc -batch, read back): {:.1} ms",
        ms(plan_m),
        ms(full_m)
    );
    println!("  full apply, one tc process per command (originals' way):          {:.1} ms   ratio {:.1}x", ms(theirs_full_m), theirs_full_m / full_m);
    println!("  one tenant's rate changes, ours (plan + apply + verify):          {:.1} ms (fastest {:.1} ms)", ms(rate_m), ms(rate_min));
    println!("  the same change, one tc process per command:                      {:.1} ms   ratio {:.2}x", ms(theirs_rate_m), theirs_rate_m / rate_m);
    println!("  one tenant moves to another level, ours:                          {:.1} ms (fastest {:.1} ms)", ms(move_m), ms(move_min));
    println!("  the same move, one tc process per command:                        {:.1} ms   ratio {:.2}x", ms(theirs_move_m), theirs_move_m / move_m);
    println!(
        "  load average during the run: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "  goals (medians): full apply < 1 s: {}; one-tenant change < 50 ms: {}",
        if full_m < 1.0 { "met" } else { "NOT met" },
        if rate_m.max(move_m) < 0.05 {
            "met"
        } else {
            "NOT met"
        }
    );
}
