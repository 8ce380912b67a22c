//! The timing helper the benchmarks in `host/examples/` share.

use std::time::{Duration, Instant};

/// Median and minimum of `n` runs of `f` (`n` ≥ 1).
pub fn time<T>(n: usize, mut f: impl FnMut() -> T) -> (Duration, Duration) {
    let mut v: Vec<Duration> = (0..n.max(1))
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .collect();
    v.sort();
    (v[v.len() / 2], v[0])
}
