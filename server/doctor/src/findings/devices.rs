//! TPU device nodes, their permissions, the processes holding them and libtpu's lock file.

use super::*;

/// Device findings; also used when no interpreter could be probed (`backend` is then `None`).
pub fn device_only_findings(
    devices: &DeviceFacts,
    euid: u32,
    backend: Backend,
    findings: &mut Vec<Finding>,
) {
    if devices.nodes.is_empty() {
        if devices.pci_chips.is_empty() {
            let consequence = match backend {
                Backend::TorchTpu => {
                    " Here TorchTPU has no \"tpu\" device: `torch.device(\"tpu\")` fails."
                }
                Backend::TorchXla => {
                    " Here torch_xla falls back to PJRT_DEVICE=CPU and \"xla\" tensors live on the CPU."
                }
                Backend::Both => " Here neither backend has a TPU to use.",
                Backend::None => "",
            };
            findings.push(
                Draft::new(FindingId::NoTpuDevice)
                    .detail(format!(
                        "No /dev/accel* or /dev/vfio/<N> device nodes and no Google TPU on the PCI bus.{consequence}"
                    ))
                    .fix("tpu-vm")
                    .build(),
            );
        } else {
            let generations: Vec<String> = devices
                .pci_chips
                .iter()
                .map(|chip| format!("{} ({})", chip.generation, chip.address))
                .collect();
            findings.push(
                Draft::new(FindingId::TpuDeviceNodesMissing)
                    .var("count", devices.pci_chips.len().to_string())
                    .detail(format!(
                        "Chips: {}. No /dev/accel* or /dev/vfio/<N> is present.",
                        generations.join(", ")
                    ))
                    .fix("container")
                    .build(),
            );
        }
        return;
    }
    let denied: Vec<String> = devices
        .nodes
        .iter()
        .filter(|node| !node.accessible)
        .map(|node| node.path.display().to_string())
        .collect();
    if !denied.is_empty() {
        findings.push(
            Draft::new(FindingId::TpuDevicePermission)
                .var("nodes", denied.join(" "))
                .detail(format!(
                    "Not readable and writable by this user: {}.",
                    denied.join(", ")
                ))
                .fix("inspect")
                .build(),
        );
    }
    // One finding per process, listing every node it holds.
    let mut pids: Vec<u32> = devices.holders.iter().map(|holder| holder.pid).collect();
    pids.dedup();
    for pid in pids {
        let held: Vec<&Holder> = devices
            .holders
            .iter()
            .filter(|holder| holder.pid == pid)
            .collect();
        findings.push(holder_finding(devices, &held, euid));
    }
    let nodes: Vec<String> = devices
        .nodes
        .iter()
        .map(|node| node.path.display().to_string())
        .collect();
    let unverified = devices.uninspectable_processes > 0 && euid != 0;
    if devices.holders.is_empty() && unverified {
        let lockfile = devices
            .libtpu_lockfile
            .as_ref()
            .map(|path| {
                format!(
                    " {} exists, so one of them may hold the TPU.",
                    path.display()
                )
            })
            .unwrap_or_default();
        findings.push(
            Draft::new(FindingId::DeviceHoldersUnknown)
                .var("nodes", nodes.join(" "))
                .detail(format!(
                    "{} processes belong to other users; only root can see their open files.{lockfile}",
                    devices.uninspectable_processes
                ))
                .fix("lsof")
                .build(),
        );
    }
    if let Some(lockfile) = &devices.libtpu_lockfile
        && devices.holders.is_empty()
        && !unverified
    {
        let others = devices
            .libtpu_lockfile_uid
            .is_some_and(|owner| owner != euid && euid != 0);
        findings.push(
            Draft::new(FindingId::StaleLibtpuLockfile)
                .var("lockfile", shell_quote(&lockfile.display().to_string()))
                .detail(format!(
                    "No process has {} open{}.",
                    nodes.join(", "),
                    match devices.libtpu_lockfile_uid {
                        Some(owner) => format!("; the lock file belongs to uid {owner}"),
                        None => String::new(),
                    }
                ))
                .fix(if others { "remove-as-root" } else { "remove" })
                .build(),
        );
    }
}

fn holder_finding(devices: &DeviceFacts, held: &[&Holder], euid: u32) -> Finding {
    let first = held[0];
    let pid = first.pid;
    let paths: Vec<String> = held
        .iter()
        .map(|holder| holder.device.display().to_string())
        .collect();
    let vfio = held.iter().any(|holder| {
        devices
            .nodes
            .iter()
            .any(|node| node.path == holder.device && node.kind == NodeKind::Vfio)
    });
    let devices_text = if paths.len() == 1 {
        format!("{} is", paths[0])
    } else {
        format!("{} are", paths.join(", "))
    };
    let user = first
        .user
        .clone()
        .or_else(|| first.uid.map(|uid| format!("uid {uid}")))
        .unwrap_or_else(|| "an unknown user".to_string());
    let holder_text = if first.jupyter_kernel {
        format!("Jupyter kernel process {pid}")
    } else {
        format!("process {pid}")
    };
    let mut facts = vec![format!("user {user}")];
    if first.jupyter_kernel {
        facts.push("a Jupyter kernel".to_string());
    }
    let command = if first.cmdline.is_empty() {
        "command line not readable".to_string()
    } else {
        first.cmdline.clone()
    };
    let detail = format!(
        "pid {pid} ({}): {command}\nA new program fails with \"{}\".",
        facts.join(", "),
        if vfio {
            "Device or resource busy"
        } else {
            "The TPU is already in use by process with pid ..."
        }
    );
    let other_user = first.uid.is_some_and(|uid| uid != euid) && euid != 0;
    let fix = if first.jupyter_kernel {
        "kernel"
    } else if other_user {
        "kill-other-user"
    } else {
        "kill"
    };
    let mut draft = Draft::new(FindingId::TpuDeviceBusy)
        .var("devices", devices_text)
        .var("holder", holder_text)
        .var("pid", pid.to_string())
        .var("user", user)
        .detail(detail)
        .fix(fix);
    if first.jupyter_kernel && other_user {
        draft = draft.fix("kill-other-user");
    }
    draft.build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts_with_one_node() -> DeviceFacts {
        DeviceFacts {
            nodes: vec![crate::devices::DeviceNode {
                path: "/dev/accel0".into(),
                kind: NodeKind::Accel,
                accessible: true,
            }],
            ..DeviceFacts::default()
        }
    }

    fn device_ids(devices: &DeviceFacts, euid: u32) -> Vec<Finding> {
        let mut findings = Vec::new();
        device_only_findings(devices, euid, Backend::TorchTpu, &mut findings);
        findings
    }

    /// As a normal user, other users' processes cannot be inspected: a lock file is then not
    /// known to be stale, and the report says how to check.
    #[test]
    fn lock_file_is_stale_only_when_every_process_was_inspected() {
        let mut devices = facts_with_one_node();
        devices.libtpu_lockfile = Some("/tmp/libtpu_lockfile".into());
        devices.libtpu_lockfile_uid = Some(1001);
        devices.uninspectable_processes = 3;
        let findings = device_ids(&devices, 1000);
        assert_eq!(findings.len(), 1, "{findings:#?}");
        assert_eq!(findings[0].id, "device-holders-unknown");
        assert!(findings[0].detail.contains("/tmp/libtpu_lockfile exists"));
        assert_eq!(
            findings[0].fixes[0].commands,
            vec!["sudo lsof -w /dev/accel0"]
        );

        // Every process inspected: stale, and owned by another user, so removed as root.
        devices.uninspectable_processes = 0;
        let findings = device_ids(&devices, 1000);
        assert_eq!(findings[0].id, "stale-libtpu-lockfile");
        assert_eq!(
            findings[0].fixes[0].commands,
            vec!["sudo rm -f /tmp/libtpu_lockfile"]
        );
        // Root sees everything and removes it directly.
        devices.uninspectable_processes = 3;
        let findings = device_ids(&devices, 0);
        assert_eq!(
            findings[0].fixes[0].commands,
            vec!["rm -f /tmp/libtpu_lockfile"]
        );
    }

    #[test]
    fn another_users_process_is_stopped_as_root() {
        let mut devices = facts_with_one_node();
        devices.libtpu_lockfile = Some("/tmp/libtpu_lockfile".into());
        devices.holders.push(Holder {
            pid: 4242,
            device: "/dev/accel0".into(),
            cmdline: String::new(),
            uid: Some(1001),
            user: Some("alice".to_string()),
            jupyter_kernel: false,
        });
        let findings = device_ids(&devices, 1000);
        assert_eq!(findings.len(), 1, "{findings:#?}");
        let busy = &findings[0];
        assert_eq!(busy.title, "/dev/accel0 is held by process 4242");
        assert!(
            busy.detail
                .starts_with("pid 4242 (user alice): command line not readable")
        );
        assert_eq!(
            busy.fixes[0].description,
            "Process 4242 belongs to alice: ask them, or stop it as root"
        );
        assert_eq!(busy.fixes[0].commands, vec!["sudo kill 4242"]);
    }
}
