//! One seeded pseudo-random generator for every part of the core that draws
//! numbers: retry jitter, simulations, fuzz and property inputs.
//!
//! # Why one, and why SplitMix64
//! A schedule drawn from a seed must be the same on every runtime and in
//! every layer, so that a test, an incident replay or a simulation gives the
//! same numbers in Rust, Node, Deno, workerd and a browser. One generator,
//! written once, makes that a property of the code rather than of three
//! copies that must agree. SplitMix64 needs 64 bits of state and no
//! allocation, passes BigCrush, and its reference outputs are published (the
//! test below pins them). It is not cryptographic: it decorrelates retries
//! and drives simulations; production callers seed it from
//! `crypto.getRandomValues`.

/// SplitMix64 (Steele, Lea and Flood 2014): 64 bits of state, one add and
/// three xor-shift-multiply rounds per output. Not cryptographic; enough to
/// decorrelate retries, and identical on every platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator that starts from `seed`. The same seed gives the same
    /// sequence on every platform.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 pseudo-random bits, advancing the state by one step.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN_GAMMA);
        mix64(self.state)
    }

    /// A uniform number in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        // The top 53 bits fit an f64 mantissa exactly.
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// A uniform number in `(0, 1]` with 53 random bits: never 0, so its
    /// logarithm is finite (the normal deviates of simulations need that).
    pub fn next_f64_nonzero(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) * (1.0 / 9_007_199_254_740_992.0)
    }
}

/// The increment of the SplitMix64 state (2^64 divided by the golden ratio).
pub const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// The SplitMix64 output function on its own: a bijective 64-bit mixer, also
/// used to derive independent seeds from counters (see `simulate`).
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    #[test]
    fn splitmix64_reference_values() {
        // Outputs of the reference splitmix64.c for seed 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(r.next_u64(), 0x06C4_5D18_8009_454F);
        let mut r = SplitMix64::new(42);
        for _ in 0..10_000 {
            let u = r.next_f64();
            assert!((0.0..1.0).contains(&u));
        }
        // The (0, 1] form is the [0, 1) form shifted by one ulp-step, draw for draw.
        let (mut a, mut b) = (SplitMix64::new(7), SplitMix64::new(7));
        for _ in 0..1000 {
            let (x, y) = (a.next_f64(), b.next_f64_nonzero());
            assert!(y > 0.0 && y <= 1.0);
            assert_eq!(y, x + 1.0 / 9_007_199_254_740_992.0);
        }
    }
}
