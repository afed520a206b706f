//! The `--allocate` check: the 2×2 matmul must run, and land on a TPU.

use super::*;

pub(super) fn check(context: &mut Context<'_>) {
    let results = context.probe.allocation.clone();
    for result in results {
        let backend = result.backend.clone().unwrap_or_default();
        let device = if backend == "torch_xla" { "xla" } else { "tpu" };
        let snippet = allocation_snippet(&backend);
        let gist = result.error.clone().unwrap_or_default();
        let detail = match &result.stderr_tail {
            Some(tail) if !tail.is_empty() => format!("{gist}\n{tail}"),
            _ => gist,
        };
        let id = match result.status.as_str() {
            "ok" => match landed_off_tpu(&backend, &result) {
                Some(landed) => {
                    let draft = context
                        .draft(FindingId::TpuAllocationNotOnTpu)
                        .var("device", device)
                        .var("landed", landed.clone())
                        .var("snippet", shell_quote(snippet))
                        .detail(format!(
                            "The product of two 2×2 tensors created on \"{device}\" is on {landed}{}.",
                            if backend == "torch_xla" && !context.probe.env.contains_key("PJRT_DEVICE") {
                                " (PJRT_DEVICE is unset)"
                            } else {
                                ""
                            }
                        ))
                        .fix("reproduce");
                    context.push(draft);
                    continue;
                }
                None => continue,
            },
            "timed_out" => FindingId::TpuAllocationTimedOut,
            _ => FindingId::TpuAllocationFailed,
        };
        let draft = context
            .draft(id)
            .var("device", device)
            .var("snippet", shell_quote(snippet))
            .detail(detail)
            .fix("reproduce");
        context.push(draft);
    }
}

/// The snippet that reproduces the allocation check, printing where the product landed.
pub fn allocation_snippet(backend: &str) -> &'static str {
    if backend == "torch_xla" {
        "import torch, torch_xla, torch_xla.runtime as xr; p = torch.ones(2, 2, device=\"xla\") @ torch.ones(2, 2, device=\"xla\"); print(p.device, xr.device_type(), p.cpu())"
    } else {
        "import torch; p = torch.ones(2, 2, device=\"tpu\") @ torch.ones(2, 2, device=\"tpu\"); print(p.device, p.cpu())"
    }
}

/// Where a successful allocation landed when that is not a TPU (`None` when it is one).
pub fn landed_off_tpu(backend: &str, result: &ChildResult) -> Option<String> {
    let device = result
        .device
        .clone()
        .unwrap_or_else(|| "an unknown device".to_string());
    let kind = result.device_kind.as_deref().unwrap_or("");
    if backend == "torch_xla" {
        let hardware = result.hardware.as_deref();
        match (kind, hardware) {
            ("xla", Some(hardware)) if hardware.eq_ignore_ascii_case("TPU") => None,
            ("xla", Some(hardware)) => Some(format!("{device} backed by {hardware}")),
            ("xla", None) => Some(format!("{device} whose device type is unknown")),
            _ => Some(device),
        }
    } else if kind == "tpu" {
        None
    } else {
        Some(device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocation_must_land_on_a_tpu() {
        let result = |device: &str, kind: &str, hardware: Option<&str>| ChildResult {
            device: Some(device.to_string()),
            device_kind: Some(kind.to_string()),
            hardware: hardware.map(str::to_string),
            ..ChildResult::default()
        };
        assert_eq!(
            landed_off_tpu("torch_xla", &result("xla:0", "xla", Some("TPU"))),
            None
        );
        assert_eq!(
            landed_off_tpu("torch_xla", &result("xla:0", "xla", Some("CPU"))).as_deref(),
            Some("xla:0 backed by CPU")
        );
        assert_eq!(
            landed_off_tpu("torch_xla", &result("cpu", "cpu", None)).as_deref(),
            Some("cpu")
        );
        assert_eq!(
            landed_off_tpu("torch_tpu", &result("tpu:0", "tpu", None)),
            None
        );
        assert_eq!(
            landed_off_tpu("torch_tpu", &result("cpu", "cpu", None)).as_deref(),
            Some("cpu")
        );
    }
}
