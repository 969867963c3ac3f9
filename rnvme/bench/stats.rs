// SPDX-License-Identifier: GPL-2.0

//! Median and spread of a set of samples, and the Rust/C ratio as printed.

/// Median, extremes and 10th/90th percentiles of some samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Spread {
    /// Median (mean of the two middle samples for an even count).
    pub(crate) median: u64,
    /// Smallest sample.
    pub(crate) min: u64,
    /// 10th percentile (nearest rank, rounding down).
    pub(crate) p10: u64,
    /// 90th percentile (nearest rank, rounding up).
    pub(crate) p90: u64,
    /// Largest sample.
    pub(crate) max: u64,
}

/// Sorts `samples` in place (insertion sort: at most 64 samples, and core's sorts carry panic
/// paths that 6.12's objtool flags in a module).
fn sort(samples: &mut [u64]) {
    for i in 1..samples.len() {
        let mut j = i;
        while j > 0 {
            match (samples.get(j - 1).copied(), samples.get(j).copied()) {
                (Some(a), Some(b)) if a > b => samples.swap(j - 1, j),
                _ => break,
            }
            j -= 1;
        }
    }
}

/// Sorts `samples` and summarises them; all zero for no samples.
pub(crate) fn spread(samples: &mut [u64]) -> Spread {
    sort(samples);
    let n = samples.len();
    if n == 0 {
        return Spread::default();
    }
    let at = |i: usize| samples.get(i).copied().unwrap_or(0);
    let median = if n % 2 == 1 {
        at(n / 2)
    } else {
        // Mean of the two middle samples without overflow.
        let (a, b) = (at(n / 2 - 1), at(n / 2));
        a / 2 + b / 2 + (a % 2 + b % 2) / 2
    };
    Spread {
        median,
        min: at(0),
        p10: at((n - 1) / 10),
        p90: at((n - 1) - (n - 1) / 10),
        max: at(n - 1),
    }
}

/// `rust / c` in millionths, rounded to nearest; `None` when `c == 0` or on overflow (64-bit
/// arithmetic: a 128-bit division would need `__udivti3`, which the kernel does not export).
pub(crate) fn ratio_micro(rust: u64, c: u64) -> Option<u64> {
    let num = rust.checked_mul(1_000_000)?.checked_add(c / 2)?;
    num.checked_div(c)
}

/// A ratio in millionths, formatted with three decimals (`1.037`), or six below 0.01
/// (`0.000007`) so a large win does not print as zero.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ratio(pub(crate) u64);

impl core::fmt::Display for Ratio {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if self.0 < 10_000 {
            write!(f, "0.{:06}", self.0)
        } else {
            let milli = (self.0 + 500) / 1000;
            write!(f, "{}.{:03}", milli / 1000, milli % 1000)
        }
    }
}
