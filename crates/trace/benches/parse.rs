//! Trace parsing throughput on ~10 MB in-memory buffers, generated deterministically here (no
//! dependency on shared/). Criterion prints MB/s via `Throughput::Bytes`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use tailbound_trace::{
    generate, parse_trace, write_trace, ArrivalModel, Format, GenSpec, SizeDist, Vocabulary,
};

/// About 10 MB of trace text in `format` (~330 k requests of MSR-like sizes).
fn buffer(format: Format) -> Vec<u8> {
    let spec = GenSpec {
        arrival: ArrivalModel::Poisson { rate_per_s: 550.0 },
        sizes: SizeDist::Choice {
            sizes: vec![512, 4096, 8192, 65536, 1 << 20],
        },
        read_fraction: 0.6,
        duration_s: 600.0,
        vocabulary: Vocabulary::Disk,
    };
    let trace = generate(&spec, 42).expect("valid spec");
    let mut buf = Vec::new();
    write_trace(&mut buf, &trace.requests, format).expect("writing to memory");
    buf
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("parse");
    for (name, format) in [
        ("parse_native_10mb", Format::Native),
        ("parse_csv_10mb", Format::Csv),
    ] {
        let buf = buffer(format);
        group.throughput(Throughput::Bytes(buf.len() as u64));
        group.sample_size(20);
        group.bench_function(name, |b| {
            b.iter(|| {
                let t = parse_trace("bench", black_box(&buf[..])).expect("valid trace");
                black_box(t.requests.len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
