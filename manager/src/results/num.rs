//! Numbers as text for the result files, without `core::fmt`.
//!
//! The files print floats with Rust's `Display` (`format!("{x}")`): the
//! shortest text that parses back to the same `f64`, never an exponent.
//! `core::fmt`'s float path (Grisu with a Dragon fallback, padding and sign
//! handling through a `Formatter`) was the largest single cost of writing a
//! run's files, so [`push_f64`] gives the same bytes faster:
//! - integral values with |x| < 2^53 (most times and counts in a trace)
//!   are printed as integers by `itoa` (`-0.0` stays `-0`, as `Display`
//!   prints it);
//! - other finite values go through `ryu`, which finds the same shortest
//!   round-trip digits; its text is used when it is plain decimal, which is
//!   exactly when it is also what `Display` prints (ryu writes `1e-7` and
//!   `1e16` where `Display` writes every digit);
//! - anything else (exponents, infinities, NaN) falls back to `Display`.
//!
//! The tests check the identity with `format!("{}")` on random bit
//! patterns and on values shaped like the files' (trace seconds, shares,
//! prices).

use std::fmt::Write as _;

/// Largest magnitude below which every integer is an exact `f64` (2^53).
const EXACT_INT: f64 = 9_007_199_254_740_992.0;

/// Appends `x` exactly as `format!("{x}")` would print it.
pub fn push_f64(out: &mut String, x: f64) {
    // `as i64` saturates and maps NaN to 0, so the round trip holds only
    // for integral values (one instruction, where `fract` calls libm).
    if (x as i64) as f64 == x {
        // From 2^53 up, ryu adds ".0" or an exponent: leave those to
        // `Display`.
        if x.abs() < EXACT_INT {
            if x == 0.0 && x.is_sign_negative() {
                out.push_str("-0");
            } else {
                out.push_str(itoa::Buffer::new().format(x as i64));
            }
            return;
        }
    } else if x.is_finite() {
        let mut b = ryu::Buffer::new();
        let s = b.format_finite(x);
        if !s.as_bytes().contains(&b'e') && !halfway(x, significant_digits(s)) {
            out.push_str(s);
            return;
        }
    }
    write!(out, "{x}").expect("formatting into a String");
}

/// Significant digits of ryu's plain decimal text (sign, point and leading
/// zeros left out; a non-integral value has no trailing zeros).
fn significant_digits(s: &str) -> usize {
    s.bytes()
        .filter(u8::is_ascii_digit)
        .skip_while(|&b| b == b'0')
        .count()
}

/// Whether non-integral `x` lies exactly halfway between two decimals of
/// `digits` significant digits. There both candidates are shortest and
/// equally close, and the two algorithms break the tie differently (ryu
/// to even, `Display` upwards): e.g. -536870912.81640625 is
/// "-536870912.8164062" in ryu and "-536870912.8164063" in `Display`.
///
/// x = m * 2^-k (m odd, k >= 1) is exactly N / 10^k with N = m * 5^k, whose
/// last digit is 5: x is such a midpoint exactly when N has `digits + 1`
/// digits. Shortest texts have at most 17 digits and 5^27 alone has 19, so
/// k > 26 never is; below that N fits a u128 (m < 2^53, 5^26 < 2^61).
fn halfway(x: f64, digits: usize) -> bool {
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), biased - 1075)
    };
    if m == 0 {
        return false;
    }
    let k = -(e + m.trailing_zeros() as i32);
    if !(1..=26).contains(&k) {
        return false;
    }
    let n = u128::from(m >> m.trailing_zeros()) * 5u128.pow(k as u32);
    n.ilog10() as usize + 1 == digits + 1
}

/// Below this magnitude an integral `f64` is printed by `serde_json` in
/// fixed notation (its formatter switches to an exponent from 10^16 on);
/// one power of ten of margin.
const JSON_FIXED_INT: f64 = 1e15;

/// Appends `x` exactly as `serde_json` writes an `f64` (shortest
/// round-trip text, `.0` on integral values, `null` for NaN and the
/// infinities). Integral values below 10^15 (most times in the files) are
/// printed by `itoa` plus `.0`; the rest go through `serde_json` itself.
/// Tests check the identity.
pub fn push_json_f64(out: &mut Vec<u8>, x: f64) {
    if (x as i64) as f64 == x && x.abs() < JSON_FIXED_INT && !(x == 0.0 && x.is_sign_negative()) {
        out.extend_from_slice(itoa::Buffer::new().format(x as i64).as_bytes());
        out.extend_from_slice(b".0");
        return;
    }
    serde_json::to_writer(out, &x).expect("writing to memory cannot fail");
}

/// Appends an integer as `format!("{n}")` would print it.
pub fn push_int(out: &mut String, n: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// Appends `Some(x)` as [`push_f64`], `None` as nothing.
pub fn push_opt_f64(out: &mut String, x: Option<f64>) {
    if let Some(x) = x {
        push_f64(out, x);
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ours(x: f64) -> String {
        let mut s = String::new();
        push_f64(&mut s, x);
        s
    }

    #[test]
    fn edge_values_print_as_display_prints_them() {
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.1 + 0.2,
            1.0 / 3.0,
            1e-5,
            1e-7,
            1.5e-7,
            1e15,
            1e16,
            1e16 + 2.0,
            123_456_789.012_345_6,
            EXACT_INT - 1.0,
            EXACT_INT,
            EXACT_INT + 2.0,
            // Exactly halfway between two shortest texts (...444.2, ...444.3).
            1_346_081_978_803_444.0 + 0.25,
            -EXACT_INT,
            1e23,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            5e-324,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        for k in -30..=30 {
            values.push(10f64.powi(k));
            values.push(-1.25 * 10f64.powi(k));
        }
        for x in values {
            assert_eq!(ours(x), format!("{x}"), "bits {:#x}", x.to_bits());
        }
        assert_eq!(ours(-0.0), "-0");
        assert_eq!(ours(86_400.0), "86400");
        assert_eq!(ours(0.1 + 0.2), "0.30000000000000004");
        // Exact ties between two shortest texts round up, as in `Display`.
        assert_eq!(ours(-(536_870_912.0 + 0.816_406_25)), "-536870912.8164063");
        assert_eq!(ours(0.125), "0.125");
        assert_eq!(ours(2.5), "2.5");
    }

    fn json(x: f64) -> String {
        let mut v = Vec::new();
        push_json_f64(&mut v, x);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn json_numbers_are_serde_jsons() {
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            86_400.0,
            1e15 - 1.0,
            1e15,
            -(1e15 - 1.0),
            1e16,
            EXACT_INT,
            0.5,
            f64::INFINITY,
            f64::NAN,
        ];
        for k in -30..=30 {
            values.push(10f64.powi(k));
            values.push(-3.0 * 10f64.powi(k));
        }
        for n in -100_000..100_000 {
            values.push(n as f64);
        }
        for x in values {
            assert_eq!(
                json(x),
                serde_json::to_string(&x).unwrap(),
                "bits {:#x}",
                x.to_bits()
            );
        }
        assert_eq!(json(3600.0), "3600.0");
        assert_eq!(json(-0.0), "-0.0");
        assert_eq!(json(f64::NAN), "null");
    }

    #[test]
    fn integers_print_as_display_prints_them() {
        for n in [0i64, -1, 7, i64::MIN, i64::MAX] {
            let mut s = String::new();
            push_int(&mut s, n);
            assert_eq!(s, n.to_string());
        }
        let mut s = String::new();
        push_int(&mut s, usize::MAX);
        assert_eq!(s, usize::MAX.to_string());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// Any f64 at all, NaNs and subnormals included.
        #[test]
        fn any_bit_pattern(bits in any::<u64>()) {
            let x = f64::from_bits(bits);
            prop_assert_eq!(ours(x), format!("{x}"));
            prop_assert_eq!(json(x), serde_json::to_string(&x).unwrap());
        }

        /// Integral values of every magnitude up to 2^53, where the fast
        /// path and its edge are.
        #[test]
        fn integral_json_numbers(n in -(1i64 << 53)..(1i64 << 53), shift in 0u32..53) {
            for x in [n as f64, (n >> shift) as f64] {
                prop_assert_eq!(json(x), serde_json::to_string(&x).unwrap());
            }
        }

        /// Values shaped like the files': trace seconds (whole, or with a
        /// fraction after arithmetic), shares in [0, 1], ratios, prices.
        #[test]
        fn values_like_the_files(
            whole in -1_000_000_000i64..1_000_000_000,
            num in 0.0f64..1e7,
            den in 1e-3f64..1e6,
            share in 0.0f64..=1.0,
        ) {
            for x in [whole as f64, num / den, whole as f64 + num / den, share, num * share, -share] {
                prop_assert_eq!(ours(x), format!("{x}"));
            }
        }
    }
}
