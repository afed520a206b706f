//! The compatibility table (`data/compatibility.toml`), embedded in the binary and parsed once.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::version::{Version, major_minor};

/// The table's text, as shipped.
pub const COMPATIBILITY_TOML: &str = include_str!("../data/compatibility.toml");

/// Parsed compatibility knowledge. Every entry has a `source`.
#[derive(Debug, Clone, Deserialize)]
pub struct Compatibility {
    /// Date-like revision shown in reports.
    pub revision: String,
    pub rules: Rules,
    pub tpu_pci_devices: Vec<PciDevice>,
    /// torch_xla releases, newest first.
    pub torch_xla: Vec<TorchXlaRelease>,
    pub torch_tpu: TorchTpuRequirements,
    pub sophgo: SophgoMarkers,
    pub torchvision: Vec<TorchvisionPair>,
    pub torchaudio: TorchaudioRule,
    pub known_bad: Vec<KnownBad>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Rules {
    pub torch_xla_pairing: SourcedRule,
    pub pjrt_device: PjrtRule,
    pub libtpu: LibtpuRule,
    pub devices: DeviceRule,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SourcedRule {
    #[serde(rename = "match")]
    pub matching: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PjrtRule {
    pub expected: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LibtpuRule {
    pub package: String,
    pub legacy_package: String,
    pub torch_xla_extra: String,
    /// File name of libtpu's lock file inside the temporary directory.
    pub lockfile: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DeviceRule {
    pub accel_glob: String,
    pub vfio_dir: String,
    pub vfio_control_node: String,
    pub google_pci_vendor: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PciDevice {
    pub id: String,
    pub generation: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TorchXlaRelease {
    pub version: String,
    /// The torch version a fix installs with this release.
    pub torch: String,
    /// `major.minor` Python versions with TPU wheels.
    pub python: Vec<String>,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TorchTpuRequirements {
    pub python: Vec<String>,
    pub torch_min: String,
    pub libtpu_min: String,
    /// The requirement string `pip install` takes.
    pub install: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SophgoMarkers {
    /// Case-insensitive words that identify Sophgo in a distribution's metadata.
    pub markers: Vec<String>,
    /// Files only Sophgo's distribution installs.
    pub files: Vec<String>,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TorchvisionPair {
    pub torch: String,
    pub torchvision: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TorchaudioRule {
    pub same_minor_as_torch_since: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct KnownBad {
    pub id: String,
    /// Every listed distribution must be installed for the entry to apply.
    pub installed: Vec<String>,
    pub severity: String,
    pub title: String,
    pub why: String,
    /// Commands; `{python}` becomes the checked interpreter.
    pub fix: Vec<String>,
    pub source: String,
}

impl Compatibility {
    /// Parses a table (the shipped one is [`compatibility`]).
    pub fn parse(text: &str) -> Result<Self, toml::de::Error> {
        toml::from_str(text)
    }

    /// The release entry for an installed torch_xla version (matched on the release numbers).
    pub fn torch_xla_release(&self, installed: &str) -> Option<&TorchXlaRelease> {
        let installed = Version::parse(installed)?;
        if installed.prerelease {
            return None;
        }
        self.torch_xla.iter().find(|release| {
            Version::parse(&release.version)
                .is_some_and(|known| known.cmp_release(&installed).is_eq())
        })
    }

    /// The newest torch_xla release with TPU wheels for `python` (`"3.11"`).
    pub fn newest_torch_xla_for_python(&self, python: &str) -> Option<&TorchXlaRelease> {
        self.torch_xla
            .iter()
            .find(|release| release.python.iter().any(|supported| supported == python))
    }

    /// The newest torch_xla release built for torch's `major.minor`.
    pub fn torch_xla_for_torch(&self, torch: &str) -> Option<&TorchXlaRelease> {
        let wanted = major_minor(torch)?;
        self.torch_xla
            .iter()
            .find(|release| major_minor(&release.torch) == Some(wanted))
    }

    /// The torchvision `major.minor` that belongs to a torch version, when the table knows it.
    pub fn torchvision_for_torch(&self, torch: &str) -> Option<&TorchvisionPair> {
        let wanted = major_minor(torch)?;
        self.torchvision
            .iter()
            .find(|pair| major_minor(&pair.torch) == Some(wanted))
    }

    /// The TPU generation of a Google PCI device id (`0x005e` → `v4`).
    pub fn tpu_generation(&self, device_id: &str) -> Option<&str> {
        self.tpu_pci_devices
            .iter()
            .find(|device| device.id.eq_ignore_ascii_case(device_id.trim()))
            .map(|device| device.generation.as_str())
    }

    /// Every `source` in the table with the entry it belongs to, for the completeness test.
    pub fn sources(&self) -> Vec<(String, &str)> {
        let mut sources = vec![
            (
                "rules.torch_xla_pairing".to_string(),
                self.rules.torch_xla_pairing.source.as_str(),
            ),
            (
                "rules.pjrt_device".to_string(),
                self.rules.pjrt_device.source.as_str(),
            ),
            (
                "rules.libtpu".to_string(),
                self.rules.libtpu.source.as_str(),
            ),
            (
                "rules.devices".to_string(),
                self.rules.devices.source.as_str(),
            ),
            ("torch_tpu".to_string(), self.torch_tpu.source.as_str()),
            ("sophgo".to_string(), self.sophgo.source.as_str()),
            ("torchaudio".to_string(), self.torchaudio.source.as_str()),
        ];
        for device in &self.tpu_pci_devices {
            sources.push((format!("tpu_pci_devices {}", device.id), &device.source));
        }
        for release in &self.torch_xla {
            sources.push((format!("torch_xla {}", release.version), &release.source));
        }
        for pair in &self.torchvision {
            sources.push((format!("torchvision {}", pair.torchvision), &pair.source));
        }
        for entry in &self.known_bad {
            sources.push((format!("known_bad {}", entry.id), &entry.source));
        }
        sources
    }
}

/// The shipped table, parsed on first use.
///
/// # Panics
/// Never in a released build: the table is embedded and a test parses it.
pub fn compatibility() -> &'static Compatibility {
    static TABLE: OnceLock<Compatibility> = OnceLock::new();
    TABLE.get_or_init(|| {
        Compatibility::parse(COMPATIBILITY_TOML)
            .expect("data/compatibility.toml is embedded and checked by tests")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_table_parses_and_every_entry_has_a_source() {
        let table = Compatibility::parse(COMPATIBILITY_TOML).expect("table parses");
        assert!(!table.torch_xla.is_empty());
        for (entry, source) in table.sources() {
            assert!(
                source.trim().len() > 10,
                "{entry} has no meaningful source: {source:?}"
            );
        }
    }

    #[test]
    fn torch_xla_releases_are_newest_first_and_well_formed() {
        let table = compatibility();
        let versions: Vec<Version> = table
            .torch_xla
            .iter()
            .map(|release| Version::parse(&release.version).expect("version parses"))
            .collect();
        for pair in versions.windows(2) {
            assert!(pair[0].at_least(&pair[1]), "{pair:?} out of order");
        }
        for release in &table.torch_xla {
            assert_eq!(
                major_minor(&release.version),
                major_minor(&release.torch),
                "{} pairs torch {}",
                release.version,
                release.torch
            );
            assert!(!release.python.is_empty());
            for python in &release.python {
                assert!(
                    major_minor(python).is_some(),
                    "{} lists python {python}",
                    release.version
                );
            }
        }
        for entry in &table.known_bad {
            assert!(
                matches!(entry.severity.as_str(), "error" | "warning" | "info"),
                "{}",
                entry.id
            );
        }
    }

    #[test]
    fn lookups() {
        let table = compatibility();
        assert_eq!(
            table.newest_torch_xla_for_python("3.11").unwrap().version,
            "2.9.0"
        );
        assert_eq!(
            table.newest_torch_xla_for_python("3.8").unwrap().version,
            "2.3.0"
        );
        assert!(table.newest_torch_xla_for_python("3.14").is_none());
        assert_eq!(table.torch_xla_release("2.8.0").unwrap().torch, "2.8.0");
        assert_eq!(
            table.torch_xla_release("2.6.0+cxx11").unwrap().torch,
            "2.6.0"
        );
        assert!(table.torch_xla_release("2.10.0.dev20260101").is_none());
        assert_eq!(
            table.torch_xla_for_torch("2.7.1+cpu").unwrap().version,
            "2.7.0"
        );
        assert_eq!(
            table.torchvision_for_torch("2.8.0").unwrap().torchvision,
            "0.23"
        );
        assert_eq!(table.tpu_generation("0x005E"), Some("v4"));
    }
}
