//! TPU device facts read from the file system: device nodes (`/dev/accel*` for v4 and older,
//! `/dev/vfio/N` for v5e and newer), the processes holding them (from `/proc/*/fd` links, no
//! `lsof`), Google TPU chips on the PCI bus (`/sys/bus/pci/devices`), and libtpu's lock file.
//! Nothing here opens a device: opening one would claim the TPU.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::compat::Compatibility;

/// Roots of the system directories, overridable so tests can simulate a TPU host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPaths {
    pub dev: PathBuf,
    pub proc: PathBuf,
    pub sys: PathBuf,
    /// Where libtpu keeps `libtpu_lockfile` (`/tmp`).
    pub tmp: PathBuf,
    /// For `passwd` (user names of the processes holding a TPU).
    pub etc: PathBuf,
}

impl Default for SystemPaths {
    fn default() -> Self {
        Self {
            dev: PathBuf::from("/dev"),
            proc: PathBuf::from("/proc"),
            sys: PathBuf::from("/sys"),
            tmp: PathBuf::from("/tmp"),
            etc: PathBuf::from("/etc"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    /// `/dev/accelN` (TPU v2–v4).
    Accel,
    /// `/dev/vfio/N` (TPU v5e, v5p, v6e, 7x).
    Vfio,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeviceNode {
    pub path: PathBuf,
    pub kind: NodeKind,
    /// This user may read and write it (checked with `access(2)`, without opening it).
    pub accessible: bool,
}

/// A process with an open file descriptor on a TPU device node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    pub pid: u32,
    pub device: PathBuf,
    /// Empty when it cannot be read.
    pub cmdline: String,
    pub uid: Option<u32>,
    /// The user name of `uid`, from `passwd`.
    pub user: Option<String>,
    /// The process is a Jupyter (IPython) kernel: it keeps the TPU until the kernel shuts down.
    pub jupyter_kernel: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PciChip {
    pub address: String,
    pub device_id: String,
    pub generation: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DeviceFacts {
    pub nodes: Vec<DeviceNode>,
    pub holders: Vec<Holder>,
    /// Processes whose descriptors could not be read (other users' processes when not root).
    pub uninspectable_processes: usize,
    pub pci_chips: Vec<PciChip>,
    /// `libtpu_lockfile`, when present.
    pub libtpu_lockfile: Option<PathBuf>,
    /// The lock file's owner.
    pub libtpu_lockfile_uid: Option<u32>,
}

/// Collects every device fact under `paths`.
pub fn inspect(paths: &SystemPaths, table: &Compatibility) -> DeviceFacts {
    let nodes = device_nodes(&paths.dev, table);
    let (mut holders, uninspectable_processes) = holders(&paths.proc, &nodes);
    let users = passwd_users(&paths.etc);
    for holder in &mut holders {
        holder.user = holder
            .uid
            .and_then(|uid| users.iter().find(|(known, _)| *known == uid))
            .map(|(_, name)| name.clone());
    }
    let lockfile = paths.tmp.join(&table.rules.libtpu.lockfile);
    let lockfile_uid = fs::symlink_metadata(&lockfile).ok().map(|metadata| {
        use std::os::unix::fs::MetadataExt;
        metadata.uid()
    });
    DeviceFacts {
        holders,
        uninspectable_processes,
        pci_chips: pci_chips(&paths.sys, table),
        libtpu_lockfile: lockfile_uid.is_some().then_some(lockfile),
        libtpu_lockfile_uid: lockfile_uid,
        nodes,
    }
}

fn device_nodes(dev: &Path, table: &Compatibility) -> Vec<DeviceNode> {
    let accel_prefix = table.rules.devices.accel_glob.trim_end_matches('*');
    let mut nodes = Vec::new();
    for (path, name) in sorted_entries(dev) {
        if name.starts_with(accel_prefix)
            && name[accel_prefix.len()..]
                .bytes()
                .all(|b| b.is_ascii_digit())
        {
            nodes.push(node(path, NodeKind::Accel));
        }
    }
    let vfio = dev.join(&table.rules.devices.vfio_dir);
    for (path, name) in sorted_entries(&vfio) {
        // `/dev/vfio/vfio` is the VFIO control node, not a device group.
        if name != table.rules.devices.vfio_control_node && name.bytes().all(|b| b.is_ascii_digit())
        {
            nodes.push(node(path, NodeKind::Vfio));
        }
    }
    nodes
}

fn node(path: PathBuf, kind: NodeKind) -> DeviceNode {
    use rustix::fs::Access;
    let accessible = rustix::fs::access(&path, Access::READ_OK | Access::WRITE_OK).is_ok();
    DeviceNode {
        path,
        kind,
        accessible,
    }
}

fn sorted_entries(directory: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = fs::read_dir(directory) else {
        return Vec::new();
    };
    let mut found: Vec<(PathBuf, String)> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            Some((entry.path(), name))
        })
        .collect();
    found.sort_by_key(|entry| natural_key(&entry.1));
    found
}

/// `accel10` after `accel9`.
fn natural_key(name: &str) -> (String, u64) {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    let (stem, number) = name.split_at(name.len() - digits);
    (stem.to_string(), number.parse().unwrap_or(0))
}

fn holders(proc: &Path, nodes: &[DeviceNode]) -> (Vec<Holder>, usize) {
    if nodes.is_empty() {
        return (Vec::new(), 0);
    }
    let targets: Vec<(PathBuf, &Path)> = nodes
        .iter()
        .map(|node| {
            let resolved = fs::canonicalize(&node.path).unwrap_or_else(|_| node.path.clone());
            (resolved, node.path.as_path())
        })
        .collect();
    let Ok(entries) = fs::read_dir(proc) else {
        return (Vec::new(), 0);
    };
    let own_pid = std::process::id();
    let mut holders = Vec::new();
    let mut uninspectable = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == own_pid {
            continue;
        }
        let fd_dir = entry.path().join("fd");
        let fds = match fs::read_dir(&fd_dir) {
            Ok(fds) => fds,
            Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
                uninspectable += 1;
                continue;
            }
            // The process exited while we looked.
            Err(_) => continue,
        };
        let mut held: Vec<&Path> = Vec::new();
        for fd in fds.flatten() {
            let Ok(target) = fs::read_link(fd.path()) else {
                continue;
            };
            for (resolved, shown) in &targets {
                if &target == resolved && !held.contains(shown) {
                    held.push(shown);
                }
            }
        }
        if held.is_empty() {
            continue;
        }
        let cmdline = read_cmdline(&entry.path());
        let uid = read_uid(&entry.path());
        let jupyter_kernel = is_jupyter_kernel(&cmdline);
        for device in held {
            holders.push(Holder {
                pid,
                device: device.to_path_buf(),
                cmdline: cmdline.clone(),
                uid,
                user: None,
                jupyter_kernel,
            });
        }
    }
    holders.sort_by(|left, right| (left.pid, &left.device).cmp(&(right.pid, &right.device)));
    (holders, uninspectable)
}

fn read_cmdline(process: &Path) -> String {
    // Empty (not an error) when it cannot be read; the report says so.
    let raw = fs::read(process.join("cmdline")).unwrap_or_default();
    let mut text: String = raw
        .split(|byte| *byte == 0)
        .filter(|part| !part.is_empty())
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    if text.is_empty() {
        text = fs::read_to_string(process.join("comm"))
            .map(|comm| format!("[{}]", comm.trim()))
            .unwrap_or_default();
    }
    if text.chars().count() > 300 {
        text = text.chars().take(297).collect::<String>() + "...";
    }
    text
}

/// `python -m ipykernel_launcher -f …/jupyter/runtime/kernel-….json` and its variants.
fn is_jupyter_kernel(cmdline: &str) -> bool {
    cmdline.contains("ipykernel") || cmdline.contains("jupyter/runtime/kernel-")
}

/// `(uid, name)` of every `passwd` entry (empty when unreadable).
fn passwd_users(etc: &Path) -> Vec<(u32, String)> {
    let text = fs::read_to_string(etc.join("passwd")).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let uid = fields.nth(1)?.parse().ok()?;
            Some((uid, name.to_string()))
        })
        .collect()
}

fn read_uid(process: &Path) -> Option<u32> {
    let status = fs::read_to_string(process.join("status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn pci_chips(sys: &Path, table: &Compatibility) -> Vec<PciChip> {
    let devices = sys.join("bus").join("pci").join("devices");
    let mut chips = Vec::new();
    for (path, address) in sorted_entries(&devices) {
        let read = |name: &str| {
            fs::read_to_string(path.join(name))
                .map(|text| text.trim().to_ascii_lowercase())
                .unwrap_or_default()
        };
        if read("vendor") != table.rules.devices.google_pci_vendor {
            continue;
        }
        let device_id = read("device");
        if let Some(generation) = table.tpu_generation(&device_id) {
            chips.push(PciChip {
                address,
                device_id,
                generation: generation.to_string(),
            });
        }
    }
    chips
}

/// The effective user id of this process (for "run as root to see other users' processes").
pub fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}
