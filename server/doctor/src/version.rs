//! Just enough of PEP 440 to compare the versions the doctor cares about (`2.8.0+cpu`,
//! `2.9.0.dev20250423`, `0.0.46`): the numeric release segments, and whether it is a pre-release.

use std::cmp::Ordering;

/// A parsed distribution version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// The numeric release segments (`2.8.0` → `[2, 8, 0]`).
    pub release: Vec<u64>,
    /// `dev`, `a`, `b` or `rc` follows the release (nightlies and release candidates).
    pub prerelease: bool,
    /// The local label after `+` (`cpu`, `cxx11`, `libtpu`), if any.
    pub local: Option<String>,
}

impl Version {
    /// Parses the leading release of a version string; `None` when it does not start with a number.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text.strip_prefix(['v', 'V']).unwrap_or(text);
        let (public, local) = match text.split_once('+') {
            Some((public, local)) => (public, Some(local.to_string())),
            None => (text, None),
        };
        let mut release = Vec::new();
        let mut rest = public;
        loop {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                break;
            }
            release.push(rest[..digits].parse().ok()?);
            rest = &rest[digits..];
            match rest.strip_prefix('.') {
                Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => rest = after,
                _ => break,
            }
        }
        if release.is_empty() {
            return None;
        }
        let suffix = rest
            .trim_start_matches(['.', '-', '_'])
            .to_ascii_lowercase();
        let prerelease = ["dev", "a", "b", "rc", "alpha", "beta", "pre", "c"]
            .iter()
            .any(|tag| suffix.starts_with(tag));
        Some(Self {
            release,
            prerelease,
            local,
        })
    }

    /// `(major, minor)`, with a missing minor read as 0.
    pub fn major_minor(&self) -> (u64, u64) {
        (
            self.release.first().copied().unwrap_or(0),
            self.release.get(1).copied().unwrap_or(0),
        )
    }

    /// `"2.8"` for `2.8.0+cpu`.
    pub fn major_minor_string(&self) -> String {
        let (major, minor) = self.major_minor();
        format!("{major}.{minor}")
    }

    /// Compares release segments only (missing segments are zero); pre-releases sort first.
    pub fn cmp_release(&self, other: &Self) -> Ordering {
        let length = self.release.len().max(other.release.len());
        for index in 0..length {
            let left = self.release.get(index).copied().unwrap_or(0);
            let right = other.release.get(index).copied().unwrap_or(0);
            match left.cmp(&right) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        other.prerelease.cmp(&self.prerelease)
    }

    /// Whether this version is at least `minimum` (a pre-release of `minimum` is not).
    pub fn at_least(&self, minimum: &Self) -> bool {
        self.cmp_release(minimum) != Ordering::Less
    }
}

/// `major.minor` of a version string, or `None` when it cannot be parsed.
pub fn major_minor(text: &str) -> Option<(u64, u64)> {
    Version::parse(text).map(|version| version.major_minor())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_local_and_dev_versions() {
        let version = Version::parse("2.8.0+cpu").unwrap();
        assert_eq!(version.release, vec![2, 8, 0]);
        assert_eq!(version.local.as_deref(), Some("cpu"));
        assert!(!version.prerelease);
        let nightly = Version::parse("2.9.0.dev20250423").unwrap();
        assert_eq!(nightly.release, vec![2, 9, 0]);
        assert!(nightly.prerelease);
        assert_eq!(Version::parse("2.1.0rc5").unwrap().release, vec![2, 1, 0]);
        assert!(Version::parse("2.1.0rc5").unwrap().prerelease);
        assert_eq!(major_minor("2.0"), Some((2, 0)));
        assert_eq!(major_minor("garbage"), None);
    }

    #[test]
    fn compares_releases() {
        let ten = Version::parse("2.10.0").unwrap();
        let nine = Version::parse("2.9.1").unwrap();
        assert!(ten.at_least(&nine));
        assert!(!nine.at_least(&ten));
        assert!(!Version::parse("2.10.0.dev1").unwrap().at_least(&ten));
        assert!(Version::parse("2.13.0+cpu").unwrap().at_least(&ten));
        assert!(
            Version::parse("0.0.46")
                .unwrap()
                .at_least(&Version::parse("0.0.38").unwrap())
        );
    }
}
