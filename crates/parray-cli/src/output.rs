//! Fast decimal and JSON output, for commands that print millions of numbers.

/// Decimal digits of `v` appended to `out`, two at a time.
#[inline]
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";
    let mut buf = [0u8; 20];
    let mut pos = buf.len();
    while v >= 100 {
        let r = (v % 100) as usize * 2;
        v /= 100;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&PAIRS[r..r + 2]);
    }
    if v >= 10 {
        let r = v as usize * 2;
        pos -= 2;
        buf[pos..pos + 2].copy_from_slice(&PAIRS[r..r + 2]);
    } else {
        pos -= 1;
        buf[pos] = b'0' + v as u8;
    }
    out.extend_from_slice(&buf[pos..]);
}

/// `s` as the body of a JSON string (without the quotes).
pub fn push_json_str(out: &mut Vec<u8>, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal() {
        for v in [
            0,
            1,
            9,
            10,
            99,
            100,
            101,
            12345,
            1048575,
            u64::MAX,
            u64::MAX / 7,
        ] {
            let mut out = Vec::new();
            push_u64(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), v.to_string());
        }
    }

    #[test]
    fn json_strings() {
        let mut out = Vec::new();
        push_json_str(&mut out, "a\"b\\c\nd\u{1}é");
        assert_eq!(String::from_utf8(out).unwrap(), "a\\\"b\\\\c\\nd\\u0001é");
    }
}
