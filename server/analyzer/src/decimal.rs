//! Decimal text to `f64`, correctly rounded (round half to even), without the standard
//! library's `f64::from_str`: that parser links about 5 KB of code and 11 KB of power-of-five
//! tables into the WebAssembly module (about 14 KB gzipped, see docs/benchmarks.md), for the
//! few float literals the rules read. This one does exact arithmetic on small big integers:
//! slower, but it only ever sees float literals of the file being checked.
//!
//! Accepts what `str::parse::<f64>` accepts except the words `inf`, `infinity` and `nan` (never
//! a float literal in Python), and gives the same value bit for bit (tested against it).

/// Significant digits kept; any further digits only matter as "something non-zero follows"
/// (a halfway point between two doubles needs at most 767 significant digits).
const MAX_DIGITS: usize = 800;

/// `text` (`[+-]digits[.digits][(e|E)[+-]digits]`, at least one digit before the exponent) as
/// the nearest `f64`; `None` when it is not of that form.
pub fn parse_f64(text: &str) -> Option<f64> {
    let bytes = text.as_bytes();
    let (negative, rest) = match bytes.first() {
        Some(b'-') => (true, &bytes[1..]),
        Some(b'+') => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    // The value is `digits` (as an integer) times 10^exponent.
    let mut digits: Vec<u8> = Vec::new();
    let mut exponent: i64 = 0;
    let mut seen_digit = false;
    let mut after_point = false;
    let mut dropped_nonzero = false;
    let mut i = 0;
    while let Some(&c) = rest.get(i) {
        if c.is_ascii_digit() {
            seen_digit = true;
            let digit = c - b'0';
            if digits.is_empty() && digit == 0 {
                exponent -= i64::from(after_point);
            } else if digits.len() < MAX_DIGITS {
                digits.push(digit);
                exponent -= i64::from(after_point);
            } else {
                dropped_nonzero |= digit != 0;
                exponent += i64::from(!after_point);
            }
        } else if c == b'.' && !after_point {
            after_point = true;
        } else {
            break;
        }
        i += 1;
    }
    if !seen_digit {
        return None;
    }
    if i < rest.len() {
        if rest[i] | 0x20 != b'e' {
            return None;
        }
        let (exponent_negative, start) = match rest.get(i + 1) {
            Some(b'-') => (true, i + 2),
            Some(b'+') => (false, i + 2),
            _ => (false, i + 1),
        };
        let written = &rest[start.min(rest.len())..];
        if written.is_empty() || !written.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let mut value: i64 = 0;
        for &c in written {
            value = (value * 10 + i64::from(c - b'0')).min(1 << 40);
        }
        exponent += if exponent_negative { -value } else { value };
    }
    if dropped_nonzero {
        // Stands for the dropped digits: strictly between the kept prefix and the next one.
        digits.push(1);
        exponent -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
        exponent += 1;
    }
    let magnitude = magnitude(&digits, exponent);
    Some(if negative { -magnitude } else { magnitude })
}

/// `digits` × 10^`exponent`, rounded to the nearest `f64`.
fn magnitude(digits: &[u8], exponent: i64) -> f64 {
    let length = digits.len() as i64;
    if digits.is_empty() || length + exponent < -325 {
        return 0.0; // below 10^-325, under half the smallest subnormal
    }
    if length + exponent > 310 {
        return f64::INFINITY; // at least 10^309
    }
    let mut numerator = vec![0u32];
    for &digit in digits {
        mul_add(&mut numerator, 10, u32::from(digit));
    }
    let mut denominator = vec![1u32];
    for _ in 0..exponent.unsigned_abs() {
        mul_add(
            if exponent > 0 {
                &mut numerator
            } else {
                &mut denominator
            },
            10,
            0,
        );
    }
    // Scale so that the quotient has 66 or 67 bits: 53 to keep, one to round by, and spares.
    let shift = bit_length(&denominator) as i64 - bit_length(&numerator) as i64 + 66;
    if shift > 0 {
        shift_left(&mut numerator, shift as usize);
    } else {
        shift_left(&mut denominator, (-shift) as usize);
    }
    let (quotient, inexact) = divide(numerator, denominator);
    round(quotient, -shift, inexact)
}

/// `quotient` × 2^`binary_exponent` (plus a little when `inexact`) rounded half to even.
fn round(quotient: u128, binary_exponent: i64, inexact: bool) -> f64 {
    let bits = 128 - i64::from(quotient.leading_zeros());
    // The weight of the lowest bit kept: 53 bits, or fewer below the normal range.
    let lowest = (bits - 1 + binary_exponent - 52).max(-1074);
    let dropped = (lowest - binary_exponent) as u32; // at least 13: the quotient has 66 bits
    let mut kept = quotient >> dropped;
    let remainder = quotient & ((1u128 << dropped) - 1);
    let half = 1u128 << (dropped - 1);
    if remainder > half || (remainder == half && (inexact || kept & 1 == 1)) {
        kept += 1;
    }
    // Both factors are exact and so is their product unless it overflows (to infinity).
    (kept as f64) * power_of_two(lowest)
}

/// 2^`exponent` for `exponent` in -1074..: exact, infinite above 1023.
fn power_of_two(exponent: i64) -> f64 {
    if exponent > 1023 {
        f64::INFINITY
    } else if exponent >= -1022 {
        f64::from_bits(((exponent + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (exponent + 1074))
    }
}

// Little-endian base-2^32 integers without leading zero limbs (zero is `[0]`).

fn mul_add(number: &mut Vec<u32>, factor: u32, addend: u32) {
    let mut carry = u64::from(addend);
    for limb in number.iter_mut() {
        let product = u64::from(*limb) * u64::from(factor) + carry;
        *limb = product as u32;
        carry = product >> 32;
    }
    if carry != 0 {
        number.push(carry as u32);
    }
}

fn bit_length(number: &[u32]) -> usize {
    let top = number.last().copied().unwrap_or(0);
    (number.len() - 1) * 32 + (32 - top.leading_zeros() as usize)
}

fn trim(number: &mut Vec<u32>) {
    while number.len() > 1 && number.last() == Some(&0) {
        number.pop();
    }
}

fn shift_left(number: &mut Vec<u32>, bits: usize) {
    let (limbs, bits) = (bits / 32, bits % 32);
    if bits != 0 {
        let mut carry = 0;
        for limb in number.iter_mut() {
            let wide = (u64::from(*limb) << bits) | carry;
            *limb = wide as u32;
            carry = wide >> 32;
        }
        number.push(carry as u32);
    }
    number.splice(0..0, std::iter::repeat_n(0, limbs));
    trim(number);
}

fn shift_right_one(number: &mut Vec<u32>) {
    let mut carry = 0;
    for limb in number.iter_mut().rev() {
        let next = *limb & 1;
        *limb = (*limb >> 1) | (carry << 31);
        carry = next;
    }
    trim(number);
}

/// `a >= b`.
fn at_least(a: &[u32], b: &[u32]) -> bool {
    if a.len() != b.len() {
        return a.len() > b.len();
    }
    for (x, y) in a.iter().rev().zip(b.iter().rev()) {
        if x != y {
            return x > y;
        }
    }
    true
}

/// `a -= b` for `a >= b`.
fn subtract(a: &mut Vec<u32>, b: &[u32]) {
    let mut borrow = 0i64;
    for (index, limb) in a.iter_mut().enumerate() {
        let difference = i64::from(*limb) - i64::from(b.get(index).copied().unwrap_or(0)) - borrow;
        *limb = difference as u32;
        borrow = i64::from(difference < 0);
    }
    trim(a);
}

/// `numerator / denominator` for a quotient below 2^68, and whether a remainder is left.
fn divide(mut numerator: Vec<u32>, mut denominator: Vec<u32>) -> (u128, bool) {
    let steps = bit_length(&numerator).saturating_sub(bit_length(&denominator));
    shift_left(&mut denominator, steps);
    let mut quotient = 0u128;
    for _ in 0..=steps {
        quotient <<= 1;
        if at_least(&numerator, &denominator) {
            subtract(&mut numerator, &denominator);
            quotient |= 1;
        }
        shift_right_one(&mut denominator);
    }
    (quotient, numerator != [0])
}

#[cfg(test)]
mod tests {
    use super::parse_f64;

    fn same_as_std(text: &str) {
        let expected = text.parse::<f64>().ok().map(f64::to_bits);
        assert_eq!(parse_f64(text).map(f64::to_bits), expected, "{text}");
    }

    #[test]
    fn hard_cases_round_like_the_standard_parser() {
        let long_half = format!("9007199254740993{}", "0".repeat(900));
        let long_above = format!("9007199254740993{}1", "0".repeat(900));
        let tiny_half = "2.4703282292062327208828439643411068618252990130716238221279284125033775363510437593264991818081799618989828234772285886546332835517796989819938739800539093906315035659515570226392290858392449105184435931802849936536152500319370457678249219365623669863658480757001585769269903706311928279558551332927834338409351978015531246597263579574622766465272827220056374006485499977096599470454020828166226237857393450736339007967761930577506740176324673600968951340535537458516661134223766678604162159680461914467291840300530057530849048765391711386591646239524912623653881879636239373280423891018672348497668235089863388587925628302755995657524455507255189313690836254779186948667994968324049705821028513185451396213837722826145437693412532098591327667236328125e-324";
        for text in [
            "0.5",
            "1.0",
            "0.1",
            "1e-3",
            "3.141592653589793",
            "1.",
            ".5",
            "+2.5",
            "-0.0",
            "0e999999",
            "1e308",
            "1.7976931348623157e308",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "1e309",
            "2.2250738585072011e-308",
            "2.2250738585072014e-308",
            "4.9406564584124654e-324",
            "2.4703282292062327e-324",
            "2.4703282292062328e-324",
            "1e-400",
            "9007199254740993",
            "9007199254740995",
            "123456789012345678901234567890e-10",
            "0000.000123E+0004",
            "1E5",
            "1e+5",
            &long_half,
            &long_above,
            tiny_half,
            // rejected by both
            "",
            ".",
            "e5",
            "1e",
            "1e+",
            "1.5j",
            "1..2",
            "1_0",
            "--1",
            "1e5.0",
            " 1",
        ] {
            same_as_std(text);
        }
    }

    #[test]
    fn random_literals_round_like_the_standard_parser() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        for _ in 0..20_000 {
            let mut text = String::new();
            for _ in 0..next(25) {
                text.push(char::from(b'0' + next(10) as u8));
            }
            if next(2) == 0 {
                text.push('.');
                for _ in 0..next(25) {
                    text.push(char::from(b'0' + next(10) as u8));
                }
            }
            if next(2) == 0 {
                text.push(['e', 'E'][next(2) as usize]);
                text.push_str(["", "-", "+"][next(3) as usize]);
                text.push_str(&next(400).to_string());
            }
            same_as_std(&text);
        }
    }
}
