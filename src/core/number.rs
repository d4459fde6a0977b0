//! Numbers in messages, printed exactly as JavaScript prints them, in every
//! host: `String(v)` ([`to_string`]) and `v.toFixed(n)` ([`to_fixed`]).
//!
//! # Why
//! A message is formatted once, here in the core, and the same error must
//! read the same from the npm package and from the Rust API: "Infinity", not
//! Rust's `inf`; `1e+300`, not 301 digits. Rust's own float formatting
//! also made the main `.wasm` larger (BENCHMARKS.md, "Size and start-up");
//! [`to_string`] is ryu-js (the shortest
//! digits that round-trip, laid out by ECMAScript's `Number::toString`, as
//! Boa prints numbers) built with its small tables, and [`to_fixed`] is
//! exact integer arithmetic, since a message needs at most a few decimals.

use std::fmt;

/// `String(v)` in JavaScript: `"NaN"`, `"-Infinity"`, `"0"` for `-0`,
/// `"0.1"`, `"1e+21"`, `"1e-7"`.
pub fn to_string(f: &mut fmt::Formatter<'_>, v: f64) -> fmt::Result {
    f.write_str(ryu_js::Buffer::new().format(v))
}

/// `v.toFixed(digits)` in JavaScript, for `digits` ≤ 20: the integer `n`
/// nearest `v × 10^digits` (the exact binary value, not its shortest
/// decimal: `(1.005).toFixed(2)` is `"1.00"`), an exact tie taking the larger
/// magnitude; `String(v)` at 10^21 and beyond, and for NaN and ±Infinity.
pub fn to_fixed(f: &mut fmt::Formatter<'_>, v: f64, digits: u32) -> fmt::Result {
    let digits = digits.min(20);
    if !v.is_finite() || v.abs() >= 1e21 {
        return to_string(f, v);
    }
    // v = mantissa × 2^exp exactly, with mantissa < 2^53.
    let bits = v.abs().to_bits();
    let (biased, fraction) = ((bits >> 52) as i32, bits & ((1 << 52) - 1));
    let (mantissa, exp) = if biased == 0 { (fraction, -1074) } else { (fraction | (1 << 52), biased - 1075) };
    let text = if exp >= 0 {
        // A whole number below 10^21 < 2^70: its digits, then the zeros.
        decimal(u128::from(mantissa) << exp) + &"0".repeat(digits as usize)
    } else if exp <= -128 {
        // mantissa × 10^20 < 2^120, shifted right by 128 or more: below 1/2, so 0.
        "0".into()
    } else {
        let shift = (-exp) as u32;
        let scaled = u128::from(mantissa) * 10u128.pow(digits);
        let (q, r) = (scaled >> shift, scaled & ((1u128 << shift) - 1));
        // A remainder of half or more rounds up: a tie takes the larger magnitude.
        decimal(if r >= 1u128 << (shift - 1) { q + 1 } else { q })
    };
    // As JavaScript does: the sign of a negative v even when it rounds to 0 ("-0.0").
    let sign = if v < 0.0 { "-" } else { "" };
    let width = digits as usize + 1;
    let text = if text.len() < width { format!("{}{text}", "0".repeat(width - text.len())) } else { text };
    // ASCII digits, at least `digits + 1` of them: the split cannot fail.
    let (whole, decimals) = text.split_at_checked(text.len().saturating_sub(digits as usize)).unwrap_or((&text, ""));
    f.write_str(sign)?;
    f.write_str(whole)?;
    if digits > 0 {
        f.write_str(".")?;
        f.write_str(decimals)?;
    }
    Ok(())
}

/// The decimal digits of `n`, divided by 10 a 32-bit piece at a time: the
/// standard library's `u128` formatting is a large routine of its own in the
/// `.wasm`, for this one cold caller.
fn decimal(mut n: u128) -> String {
    // u128::MAX has 39 digits.
    let mut digits = [b'0'; 39];
    let mut at = digits.len();
    while let Some(slot) = at.checked_sub(1).and_then(|i| digits.get_mut(i)) {
        let (mut q, mut rem) = (0u128, 0u64);
        for shift in [96, 64, 32, 0] {
            // rem < 10, so cur / 10 < 2^32.
            let cur = (rem << 32) | u64::from((n >> shift) as u32);
            q |= u128::from(cur / 10) << shift;
            rem = cur % 10;
        }
        *slot = b'0' + rem as u8;
        at -= 1;
        n = q;
        if n == 0 {
            break;
        }
    }
    // ASCII digits: always UTF-8.
    std::str::from_utf8(digits.get(at..).unwrap_or_default()).unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Show(f64, Option<u32>);
    impl fmt::Display for Show {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self.1 {
                None => to_string(f, self.0),
                Some(n) => to_fixed(f, self.0, n),
            }
        }
    }
    fn string(v: f64) -> String {
        Show(v, None).to_string()
    }
    fn fixed(v: f64, n: u32) -> String {
        Show(v, Some(n)).to_string()
    }

    // What JavaScript answers (V8, SpiderMonkey and JavaScriptCore agree:
    // ECMAScript defines both to the digit); the JS suite also compares the
    // `.wasm`'s messages with the runtime's own `String(v)` for random values.
    #[test]
    fn to_string_is_javascripts_string() {
        assert_eq!(string(f64::NAN), "NaN");
        assert_eq!(string(f64::INFINITY), "Infinity");
        assert_eq!(string(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(string(-0.0), "0");
        assert_eq!(string(0.1), "0.1");
        assert_eq!(string(5.0), "5");
        assert_eq!(string(1e21), "1e+21");
        assert_eq!(string(1e300), "1e+300");
        assert_eq!(string(123456789012345680000.0), "123456789012345680000");
        assert_eq!(string(1e-7), "1e-7");
        assert_eq!(string(0.000001), "0.000001");
        assert_eq!(string(-1.5e-10), "-1.5e-10");
        assert_eq!(string(9007199254740991.0), "9007199254740991");
        assert_eq!(string(5e-324), "5e-324");
    }

    #[test]
    fn decimal_is_the_digits() {
        let big = [u128::from(u64::MAX), u128::MAX, 10u128.pow(38), 10u128.pow(38) - 1, (1 << 119) + 12_345];
        for n in [0, 1, 9, 10, 4_294_967_296].into_iter().chain(big) {
            assert_eq!(decimal(n), n.to_string());
        }
    }

    #[test]
    fn to_fixed_is_javascripts_to_fixed() {
        // Exact ties take the larger magnitude; a near-tie follows the
        // binary value (2.35 is 2.35000000000000008882…, 1.005 is 1.00499…).
        assert_eq!(fixed(2.25, 1), "2.3");
        assert_eq!(fixed(0.125, 2), "0.13");
        assert_eq!(fixed(-2.5, 0), "-3");
        assert_eq!(fixed(2.35, 1), "2.4");
        assert_eq!(fixed(1.005, 2), "1.00");
        assert_eq!(fixed(0.1, 1), "0.1");
        assert_eq!(fixed(3.0, 1), "3.0");
        assert_eq!(fixed(0.04, 1), "0.0");
        // The sign of a negative number stays when it rounds to 0; -0 has none.
        assert_eq!(fixed(-0.04, 1), "-0.0");
        assert_eq!(fixed(-0.0, 1), "0.0");
        assert_eq!(fixed(5e-324, 2), "0.00");
        assert_eq!(fixed(123.456, 0), "123");
        assert_eq!(fixed(0.5, 0), "1");
        assert_eq!(fixed(1e20, 2), "100000000000000000000.00");
        assert_eq!(fixed(9007199254740993.0, 1), "9007199254740992.0");
        assert_eq!(fixed(1e21, 1), "1e+21");
        assert_eq!(fixed(f64::INFINITY, 1), "Infinity");
        assert_eq!(fixed(f64::NAN, 3), "NaN");
        assert_eq!(fixed(0.000001, 20), "0.00000100000000000000");
    }
}
