//! Environment variables: torch_xla's, each backend's read by the other, and TorchTPU's that act
//! only when the backend initialises.

use super::*;

pub(super) fn check(context: &mut Context<'_>) {
    let table = context.table;
    let env = &context.probe.env;
    let backend = context.backend;
    let names_matching = |patterns: &[String]| -> Vec<String> {
        env.keys()
            .filter(|name| env_matches(patterns, name))
            .cloned()
            .collect()
    };
    if backend.has_torch_xla() {
        let expected = &table.rules.pjrt_device.expected;
        match env.get("PJRT_DEVICE") {
            None => {
                let draft = context
                    .draft(FindingId::PjrtDeviceUnset)
                    .var("expected", expected.clone())
                    .detail("torch_xla chooses its device itself when PJRT_DEVICE is unset.")
                    .fix("export");
                context.push(draft);
            }
            Some(value) if !value.eq_ignore_ascii_case(expected) => {
                let draft = context
                    .draft(FindingId::PjrtDeviceNotTpu)
                    .var("expected", expected.clone())
                    .var("value", value.clone())
                    .detail(format!(
                        "PJRT_DEVICE selects torch_xla's device; it is `{value}`."
                    ))
                    .fix("export");
                context.push(draft);
            }
            Some(_) => {}
        }
        let deprecated: Vec<&str> = ["XLA_USE_BF16", "XLA_DOWNCAST_BF16"]
            .into_iter()
            .filter(|name| env.contains_key(*name))
            .collect();
        if !deprecated.is_empty() {
            let draft = context
                .draft(FindingId::XlaBf16EnvDeprecated)
                .var("names", deprecated.join(" "))
                .detail(
                    deprecated
                        .iter()
                        .map(|name| format!("{name}={}", env[*name]))
                        .collect::<Vec<_>>()
                        .join(" "),
                )
                .fix("unset");
            context.push(draft);
        }
    }
    let other = match backend {
        Backend::TorchTpu => Some((&table.backend_env.torch_xla_only, "torch_xla", "TorchTPU")),
        Backend::TorchXla => Some((&table.backend_env.torch_tpu_only, "TorchTPU", "torch_xla")),
        Backend::Both | Backend::None => None,
    };
    if let Some((patterns, reader, installed)) = other {
        let names = names_matching(patterns);
        if !names.is_empty() {
            let draft = context
                .draft(FindingId::EnvForOtherBackend)
                .var("names", names.join(" "))
                .var("reader", reader)
                .var("backend", installed)
                .detail(
                    names
                        .iter()
                        .map(|name| format!("{name}={}", env[name]))
                        .collect::<Vec<_>>()
                        .join(" "),
                )
                .source(&table.backend_env.source)
                .fix("unset");
            context.push(draft);
        }
    }
    if backend.has_torch_tpu() {
        let names = names_matching(&table.backend_env.torch_tpu_read_at_init);
        if !names.is_empty() {
            let autoload_off = env
                .get("TORCH_DEVICE_BACKEND_AUTOLOAD")
                .is_some_and(|value| value.trim() == "0");
            let draft = context
                .draft(FindingId::EnvReadAtBackendInit)
                .var("names", names.join(", "))
                .detail(format!(
                    "Set here: {}. TorchTPU initialises {}.",
                    names
                        .iter()
                        .map(|name| format!("{name}={}", env[name]))
                        .collect::<Vec<_>>()
                        .join(" "),
                    if autoload_off {
                        "at `import torch_tpu` (autoload is off)"
                    } else {
                        "during `import torch` (autoload)"
                    }
                ))
                .source(&table.backend_env.source)
                .fix("restart");
            context.push(draft);
        }
    }
}
