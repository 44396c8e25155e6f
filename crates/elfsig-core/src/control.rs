//! The words the kernel module's control files and parameters take: what was written, trimmed
//! of whitespace; settings shown and set as one of two words; descriptor numbers.

/// `input` without leading and trailing ASCII whitespace (`echo` adds a newline).
pub fn trim(mut input: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = input {
        if !first.is_ascii_whitespace() {
            break;
        }
        input = rest;
    }
    while let [rest @ .., last] = input {
        if !last.is_ascii_whitespace() {
            break;
        }
        input = rest;
    }
    input
}

/// A setting shown and written as one of two words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Toggle {
    /// The word for `true`.
    pub on: &'static str,
    /// The word for `false`.
    pub off: &'static str,
}

impl Toggle {
    /// The word for `on`.
    pub fn word(&self, on: bool) -> &'static str {
        if on {
            self.on
        } else {
            self.off
        }
    }

    /// Which of the two words `word` is: `Some(true)` for the first, `None` for neither.
    pub fn parse(&self, word: &[u8]) -> Option<bool> {
        if word == self.on.as_bytes() {
            Some(true)
        } else if word == self.off.as_bytes() {
            Some(false)
        } else {
            None
        }
    }
}

/// `mode`: whether refusals are enforced.
pub const MODE: Toggle = Toggle { on: "enforce", off: "permissive" };

/// `untrusted`: whether files on mounts the kernel does not trust are refused (or verified).
pub const UNTRUSTED: Toggle = Toggle { on: "refuse", off: "verify" };

/// `loader`: whether running the dynamic loader directly is refused.
pub const LOADER: Toggle = Toggle { on: "deny", off: "allow" };

/// `runtime`: whether the run-time rules (no executable memory that is no signed file's
/// without the `jit` entitlement) are applied.
pub const RUNTIME: Toggle = Toggle { on: "enforce", off: "off" };

/// The words of `input`, split at ASCII whitespace.
pub fn words(input: &[u8]) -> impl Iterator<Item = &[u8]> {
    input.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty())
}

/// A descriptor number in decimal, at most nine digits; `None` for anything else.
pub fn parse_fd(word: &[u8]) -> Option<i32> {
    if word.is_empty() || word.len() > 9 {
        return None;
    }
    let mut fd: i32 = 0;
    for digit in word {
        if !digit.is_ascii_digit() {
            return None;
        }
        fd = fd.checked_mul(10)?.checked_add(i32::from(digit.checked_sub(b'0')?))?;
    }
    Some(fd)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn trim_takes_whitespace_off_both_ends_only() {
        assert_eq!(trim(b"enforce\n"), b"enforce");
        assert_eq!(trim(b" \t attach 3 4\r\n"), b"attach 3 4");
        assert_eq!(trim(b"\n\n"), b"");
        assert_eq!(trim(b""), b"");
        assert_eq!(trim(b"x"), b"x");
    }

    #[test]
    fn a_toggle_takes_its_two_words_exactly() {
        assert_eq!(MODE.parse(b"enforce"), Some(true));
        assert_eq!(MODE.parse(b"permissive"), Some(false));
        assert_eq!(MODE.parse(b"Enforce"), None);
        assert_eq!(MODE.parse(b"enforce\n"), None);
        assert_eq!(UNTRUSTED.parse(b"verify"), Some(false));
        assert_eq!(LOADER.word(true), "deny");
        assert_eq!(LOADER.word(false), "allow");
    }

    #[test]
    fn words_skip_runs_of_whitespace() {
        let split: Vec<&[u8]> = words(b"  attach 3\t\t4 \n").collect();
        assert_eq!(split, [&b"attach"[..], b"3", b"4"]);
        assert_eq!(words(b" \n").count(), 0);
    }

    #[test]
    fn descriptors_are_decimal_and_bounded() {
        assert_eq!(parse_fd(b"0"), Some(0));
        assert_eq!(parse_fd(b"17"), Some(17));
        assert_eq!(parse_fd(b"007"), Some(7));
        assert_eq!(parse_fd(b"999999999"), Some(999_999_999));
        assert_eq!(parse_fd(b"1000000000"), None);
        assert_eq!(parse_fd(b""), None);
        assert_eq!(parse_fd(b"-1"), None);
        assert_eq!(parse_fd(b"+1"), None);
        assert_eq!(parse_fd(b"0x10"), None);
        assert_eq!(parse_fd(b"1 "), None);
    }
}
