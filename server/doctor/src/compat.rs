//! The compatibility table (`data/compatibility.toml`), embedded in the binary and parsed once.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

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
    pub torch_xla_status: TorchXlaStatus,
    pub torch_tpu: TorchTpuRequirements,
    pub libtpu_problem: Vec<LibtpuProblem>,
    pub vllm_torchtpu: VllmTorchTpu,
    pub transformers_gate: TransformersGate,
    pub torch_tpu_distributed: TorchTpuDistributed,
    pub backend_env: BackendEnv,
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
    /// The libtpu its `tpu` extra pins, when known.
    #[serde(default)]
    pub libtpu: Option<String>,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TorchXlaStatus {
    pub last_release: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TorchTpuRequirements {
    pub python: Vec<String>,
    pub torch_min: String,
    pub libtpu_min: String,
    /// The requirement string `pip install` takes.
    pub install: String,
    /// The package index TorchTPU's wheels come from (with the access-token substitution).
    pub index_url: String,
    pub nightly_marker: String,
    pub release_branch_marker: String,
    pub stub_version: String,
    pub torch_mismatch_symbol: String,
    pub source: String,
    pub nightly_torch: Vec<NightlyTorch>,
    /// Validated combinations, newest first.
    pub pairing: Vec<TorchTpuPairing>,
}

/// The torch `major.minor` the nightlies stamped `from..=until` (`YYYYMMDD`) were built against.
#[derive(Debug, Clone, Deserialize)]
pub struct NightlyTorch {
    pub from: String,
    pub until: String,
    pub torch: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TorchTpuPairing {
    pub torch_tpu: String,
    pub torch: String,
    pub libtpu: String,
    /// The tpu-sync-torch built against this torch_tpu, when recorded.
    #[serde(default)]
    pub tpu_sync_torch: Option<String>,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LibtpuProblem {
    pub version: String,
    /// Only on these `major.minor` Pythons (every Python when empty).
    #[serde(default)]
    pub python: Vec<String>,
    pub problem: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct VllmTorchTpu {
    pub distributions: Vec<String>,
    pub python: Vec<String>,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TransformersGate {
    pub distribution: String,
    pub source: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct TorchTpuDistributed {
    pub world_size: String,
    pub slicebuilder_addresses: String,
    pub topology: String,
    pub torchrun: Vec<String>,
    pub wrapper: String,
    pub source: String,
}

/// Variable names (a trailing `_` makes a prefix) by the backend that reads them.
#[derive(Debug, Clone, Deserialize)]
pub struct BackendEnv {
    pub torch_xla_only: Vec<String>,
    pub torch_tpu_only: Vec<String>,
    pub torch_tpu_read_at_init: Vec<String>,
    pub source: String,
}

/// Whether `name` matches one of `patterns` (exact, or a prefix for a pattern ending in `_`).
pub fn env_matches(patterns: &[String], name: &str) -> bool {
    patterns.iter().any(|pattern| {
        if pattern.ends_with('_') {
            name.starts_with(pattern.as_str())
        } else {
            name == pattern
        }
    })
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

/// A combination pip accepts but that breaks a TPU environment; `id` is the finding declared for
/// it in `data/findings.toml` (which holds its title, why and fix).
#[derive(Debug, Clone, Deserialize)]
pub struct KnownBad {
    pub id: String,
    /// Every listed distribution must be installed for the entry to apply.
    pub installed: Vec<String>,
    pub source: String,
}

/// What kind of build an installed torch_tpu version is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum TorchTpuBuild {
    /// `0.1.2.dev20261006000518`: a nightly, stamped `YYYYMMDD`.
    Nightly { date: String },
    /// `0.1.1+release.2026.9.22.20260927223741`: a release-branch build.
    ReleaseBranch { branch: String },
    /// `0.0.0`: the placeholder an unpinned download resolves to; not a real install.
    Stub,
    /// Anything else (a source build, a future release).
    Other,
}

impl TorchTpuBuild {
    pub fn describe(&self) -> String {
        match self {
            Self::Nightly { date } => format!("nightly of {date}"),
            Self::ReleaseBranch { branch } => format!("release branch {branch}"),
            Self::Stub => "placeholder stub".to_string(),
            Self::Other => "build".to_string(),
        }
    }
}

impl TorchTpuRequirements {
    /// Classifies an installed torch_tpu version.
    pub fn build(&self, version: &str) -> TorchTpuBuild {
        let version = version.trim();
        if version == self.stub_version {
            return TorchTpuBuild::Stub;
        }
        let (public, local) = version.split_once('+').unwrap_or((version, ""));
        if let Some(branch) = local.strip_prefix(&self.release_branch_marker) {
            // `2026.9.22.20260927223741`: the branch date, then the build stamp.
            let parts: Vec<&str> = branch.split('.').collect();
            let branch = if parts.len() > 3 {
                parts[..3].join(".")
            } else {
                branch.to_string()
            };
            return TorchTpuBuild::ReleaseBranch { branch };
        }
        if let Some(index) = public.find(&self.nightly_marker) {
            let stamp = &public[index + self.nightly_marker.len()..];
            let date: String = stamp
                .chars()
                .take_while(char::is_ascii_digit)
                .take(8)
                .collect();
            if date.len() == 8 {
                return TorchTpuBuild::Nightly { date };
            }
        }
        TorchTpuBuild::Other
    }

    /// The torch a nightly was built against, when the table knows its date.
    pub fn nightly_torch(&self, version: &str) -> Option<&NightlyTorch> {
        let TorchTpuBuild::Nightly { date } = self.build(version) else {
            return None;
        };
        self.nightly_torch.iter().find(|range| {
            range.from.as_str() <= date.as_str() && date.as_str() <= range.until.as_str()
        })
    }

    /// The validated pairing for this torch's `major.minor` (newest first), else the newest one.
    pub fn pairing_for_torch(&self, torch: Option<&str>) -> Option<&TorchTpuPairing> {
        let wanted = torch.and_then(major_minor);
        self.pairing
            .iter()
            .find(|pairing| wanted.is_some() && major_minor(&pairing.torch) == wanted)
            .or_else(|| self.pairing.first())
    }
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
            (
                "torch_xla_status".to_string(),
                self.torch_xla_status.source.as_str(),
            ),
            (
                "vllm_torchtpu".to_string(),
                self.vllm_torchtpu.source.as_str(),
            ),
            (
                "transformers_gate".to_string(),
                self.transformers_gate.source.as_str(),
            ),
            (
                "torch_tpu_distributed".to_string(),
                self.torch_tpu_distributed.source.as_str(),
            ),
            ("backend_env".to_string(), self.backend_env.source.as_str()),
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
        for range in &self.torch_tpu.nightly_torch {
            sources.push((
                format!("torch_tpu.nightly_torch {}", range.from),
                &range.source,
            ));
        }
        for pairing in &self.torch_tpu.pairing {
            sources.push((
                format!("torch_tpu.pairing {}", pairing.torch_tpu),
                &pairing.source,
            ));
        }
        for problem in &self.libtpu_problem {
            sources.push((
                format!("libtpu_problem {}", problem.version),
                &problem.source,
            ));
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
                crate::catalog::FindingId::from_id(&entry.id).is_some(),
                "known_bad {} has no declared finding",
                entry.id
            );
        }
        for pairing in &table.torch_tpu.pairing {
            assert!(
                Version::parse(&pairing.torch).is_some()
                    && Version::parse(&pairing.libtpu).is_some(),
                "{pairing:?}"
            );
        }
        for range in &table.torch_tpu.nightly_torch {
            assert!(range.from.len() == 8 && range.until.len() == 8 && range.from <= range.until);
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

    #[test]
    fn torch_tpu_builds() {
        let torch_tpu = &compatibility().torch_tpu;
        assert_eq!(
            torch_tpu.build("0.1.2.dev20261006000518"),
            TorchTpuBuild::Nightly {
                date: "20261006".to_string()
            }
        );
        assert_eq!(
            torch_tpu.build("0.1.1+release.2026.9.22.20260927223741"),
            TorchTpuBuild::ReleaseBranch {
                branch: "2026.9.22".to_string()
            }
        );
        assert_eq!(torch_tpu.build("0.0.0"), TorchTpuBuild::Stub);
        assert_eq!(torch_tpu.build("0.1.1"), TorchTpuBuild::Other);
        assert_eq!(
            torch_tpu
                .nightly_torch("0.1.1.dev20260715093000")
                .map(|r| r.torch.as_str()),
            Some("2.11")
        );
        assert!(torch_tpu.nightly_torch("0.1.2.dev20261006000518").is_none());
        assert_eq!(
            torch_tpu
                .pairing_for_torch(Some("2.13.0+cpu"))
                .unwrap()
                .torch_tpu,
            "0.1.2.dev20261006000518"
        );
        assert_eq!(
            torch_tpu
                .pairing_for_torch(Some("2.11.0"))
                .unwrap()
                .torch_tpu,
            "0.1.2.dev20261006000518"
        );
    }
}
