//! TPU611: torch_xla APIs that no longer exist (`xm.xrt_world_size`, `xm.get_ordinal`,
//! `xr.xla_device`, `torch_xla.amp.GradScaler`, ...).

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::{Applicability, Edit, Fix, Severity};
use crate::fix::importer::Importer;
use crate::rules::helpers;
use crate::settings::TorchXlaVersion;
use crate::syntax::{self, NodeExt, node_text};

declare_rule! {
    /// ## What it does
    /// Checks for uses of PyTorch/XLA APIs that were removed: `xm.xrt_world_size()`,
    /// `xm.get_ordinal()`, `xm.parse_xla_device()` and `torch_xla.experimental.compile` (gone in
    /// 2.7), `torch_xla.runtime.xla_device()` (2.8), `torch_xla.amp.GradScaler` (2.9), and
    /// `xm.get_xla_supported_devices("TPU")` / `devkind=` (the parameter became `max_devices`
    /// in 2.8).
    ///
    /// ## Why is this bad?
    /// On a current torch_xla (2.9, the last release) these raise `AttributeError`,
    /// `ImportError` or `TypeError`; a positional `"TPU"` now lands in `max_devices`. Code
    /// written for torch_xla ≤ 2.6, and tutorials of that era, still use them.
    ///
    /// ## Example
    /// ```python
    /// import torch_xla.core.xla_model as xm
    ///
    /// world = xm.xrt_world_size()
    /// rank = xm.get_ordinal()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// import torch_xla.runtime as xr
    ///
    /// world = xr.world_size()
    /// rank = xr.global_ordinal()
    /// ```
    ///
    /// ## Fix safety
    /// `xm.xrt_world_size()` → `xr.world_size()` and `xm.get_ordinal()` → `xr.global_ordinal()`
    /// (calls without arguments) are safe: the replacements return the same values. The
    /// importer names `torch_xla.runtime` through an existing binding or imports it next to the
    /// file's own torch_xla import; where that is not possible the fix is display-only.
    /// `torch_xla.experimental.compile` → `torch_xla.compile` and `xr.xla_device()` →
    /// `torch_xla.device()` are unsafe (the old signatures took other arguments). The other APIs
    /// have no replacement to write.
    ///
    /// ## Options
    /// `torch-xla-version` (`[tool.tpulint]`): a project that targets a release before the
    /// removal (`torch-xla-version = "2.5"`) gets a warning that upgrading will break the line
    /// instead of an error; unset, the current release (2.9) is assumed.
    ///
    /// ## Known problems
    /// Uses in a branch that tests the torch_xla version or `hasattr`, or inside a `try:` that
    /// catches `AttributeError`/`ImportError`, are compatibility code and are not reported.
    ///
    /// ## References
    /// - pytorch/xla commit f1fe8bc "Clean up deprecated APIs (#8927)" and
    ///   https://github.com/pytorch/xla/pull/9608 (GradScaler removal); https://github.com/pytorch/xla/issues/8915
    /// - https://github.com/huggingface/transformers/pull/37741 (`xr.world_size()`,
    ///   `xr.global_ordinal()` replace the removed calls)
    pub(crate) static REMOVED_TORCH_XLA_API = {
        code: "TPU611",
        name: "removed-torch-xla-api",
        severity: Error,
        fix: Sometimes,
        kinds: ["attribute", "import_from_statement"],
        tokens: ["torch_xla"],
        check: check,
    }
}

/// A removed API and what replaces it.
struct Removed {
    qualified: &'static str,
    since: &'static str,
    replacement: Replacement,
}

/// How a removal applies to the project: `None` when it targets a current torch_xla (the API is
/// gone: an error); `Some(target)` when its `torch-xla-version` predates the removal (the API
/// still works there: a warning that the upgrade will break it).
fn older_target(context: &Context<'_, '_>, since: &str) -> Option<TorchXlaVersion> {
    let target = context.settings().torch_xla_version?;
    let removed_in = TorchXlaVersion::parse(since)?;
    (target < removed_in).then_some(target)
}

/// Reports a removed API at `range`: an error, or a warning when the target predates `since`.
fn report_removed<'c, 't>(
    context: &'c mut Context<'t, '_>,
    range: std::ops::Range<usize>,
    since: &str,
    gone: String,
    advice: &str,
) -> &'c mut crate::diagnostic::Diagnostic {
    match older_target(context, since) {
        Some(target) => {
            let message = format!(
                "{gone} will be removed in torch_xla {since} (this project targets {target}){advice}"
            );
            let diagnostic = context.report(range, message);
            diagnostic.severity = Severity::Warning;
            diagnostic
        }
        None => context.report(
            range,
            format!("{gone} was removed in torch_xla {since}{advice}"),
        ),
    }
}

enum Replacement {
    /// A call without arguments becomes `module.member()`; `safe` says whether it keeps meaning.
    Call {
        module: &'static str,
        member: &'static str,
        alias: Option<&'static str>,
        safe: bool,
    },
    /// Advice only.
    Advice(&'static str),
}

const REMOVED: &[Removed] = &[
    Removed {
        qualified: "torch_xla.core.xla_model.xrt_world_size",
        since: "2.7",
        replacement: Replacement::Call {
            module: "torch_xla.runtime",
            member: "world_size",
            alias: Some("xr"),
            safe: true,
        },
    },
    Removed {
        qualified: "torch_xla.core.xla_model.get_ordinal",
        since: "2.7",
        replacement: Replacement::Call {
            module: "torch_xla.runtime",
            member: "global_ordinal",
            alias: Some("xr"),
            safe: true,
        },
    },
    Removed {
        qualified: "torch_xla.core.xla_model.parse_xla_device",
        since: "2.7",
        replacement: Replacement::Advice("read `device.index` of a `torch.device` instead"),
    },
    Removed {
        qualified: "torch_xla.experimental.compile",
        since: "2.7",
        replacement: Replacement::Call {
            module: "torch_xla",
            member: "compile",
            alias: None,
            safe: false,
        },
    },
    Removed {
        qualified: "torch_xla.runtime.xla_device",
        since: "2.8",
        replacement: Replacement::Call {
            module: "torch_xla",
            member: "device",
            alias: None,
            safe: false,
        },
    },
    Removed {
        qualified: "torch_xla.amp.GradScaler",
        since: "2.9",
        replacement: Replacement::Advice("bfloat16 training on a TPU needs no gradient scaler"),
    },
];

/// TPU611
fn check<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    if node.is(kind::IMPORT_FROM_STATEMENT) {
        check_import(context, node);
        return;
    }
    // Only the whole attribute chain (`xm.get_ordinal`, not `xm` inside it).
    if context
        .parent(node)
        .is_some_and(|parent| parent.is(kind::ATTRIBUTE))
    {
        return;
    }
    // Cheap test before resolving the name: the attribute's last part.
    let Some(attribute) = node.field("attribute") else {
        return;
    };
    let last = context.text(attribute);
    if last == "get_xla_supported_devices" {
        check_supported_devices(context, node);
        return;
    }
    if !REMOVED
        .iter()
        .any(|removed| removed.qualified.ends_with(last))
    {
        return;
    }
    let Some(qualified) = context.qualified_name(node) else {
        return;
    };
    let Some(removed) = REMOVED
        .iter()
        .find(|removed| removed.qualified == qualified)
    else {
        return;
    };
    if is_compatibility_code(context, node) {
        return;
    }
    let call = context
        .parent(node)
        .filter(|parent| parent.is(kind::CALL))
        .filter(|call| call.field("function").is_some_and(|f| f.id() == node.id()));
    let written = context.text(node).to_string();
    match &removed.replacement {
        Replacement::Advice(advice) => {
            report_removed(
                context,
                node.byte_range(),
                removed.since,
                format!("`{written}`"),
                &format!("; {advice}"),
            );
        }
        Replacement::Call {
            module,
            member,
            alias,
            safe,
        } => {
            let name = Importer::new(context, node).member(module, member, *alias);

            let no_arguments = call
                .and_then(|call| call.field("arguments"))
                .is_some_and(|arguments| arguments.named_child_count() == 0);
            let fix = no_arguments.then(|| {
                let mut edits = name.edits();
                edits.push(Edit::replace(node.byte_range(), name.expression.clone()));
                let applicability = if *safe {
                    Applicability::Safe
                } else {
                    Applicability::Unsafe
                };
                Fix::new(
                    applicability.min(name.applicability),
                    format!("Replace with `{}()`", name.expression),
                    edits,
                )
            });
            let advice = format!("; use `{}()`", name.expression);
            report_removed(
                context,
                node.byte_range(),
                removed.since,
                format!("`{written}`"),
                &advice,
            )
            .fix = fix;
        }
    }
}

/// `from torch_xla.core.xla_model import get_ordinal`, `from torch_xla.amp import GradScaler`:
/// an `ImportError` at import time.
fn check_import<'t>(context: &mut Context<'t, '_>, statement: Node<'t>) {
    let source = context.source();
    let Some(module) = statement.field("module_name") else {
        return;
    };
    let module: String = node_text(module, source)
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    if !module.starts_with("torch_xla") || is_compatibility_code(context, statement) {
        return;
    }
    let mut cursor = statement.walk();
    let names: Vec<Node<'t>> = statement
        .children_by_field_name("name", &mut cursor)
        .collect();
    for name in names {
        let imported = match name.kind_key() {
            kind::ALIASED_IMPORT => name.field("name"),
            _ => Some(name),
        };
        let Some(imported) = imported else { continue };
        let qualified = format!("{module}.{}", node_text(imported, source));
        if let Some(removed) = REMOVED.iter().find(|r| r.qualified == qualified) {
            let advice = match older_target(context, removed.since) {
                Some(_) => ": the import will raise `ImportError`",
                None => ": this import raises `ImportError`",
            };
            report_removed(
                context,
                imported.byte_range(),
                removed.since,
                format!("`{qualified}`"),
                advice,
            );
        }
    }
}

/// `xm.get_xla_supported_devices("TPU")` / `devkind=...`: the parameter is `max_devices` since
/// torch_xla 2.8.
fn check_supported_devices<'t>(context: &mut Context<'t, '_>, node: Node<'t>) {
    if context.qualified_name(node).as_deref()
        != Some("torch_xla.core.xla_model.get_xla_supported_devices")
    {
        return;
    }
    let Some(arguments) = context
        .parent(node)
        .filter(|parent| parent.is(kind::CALL))
        .and_then(|call| call.field("arguments"))
    else {
        return;
    };
    let source = context.source();
    let devkind = context.keyword_arg(arguments, "devkind").is_some();
    let string_first = syntax::positional_args(arguments)
        .first()
        .is_some_and(|first| syntax::string_value(*first, source).is_some());
    if !(devkind || string_first) || is_compatibility_code(context, node) {
        return;
    }
    let written = context.text(node).to_string();
    match older_target(context, "2.8") {
        Some(target) => {
            let message = format!(
                "`{written}` takes `max_devices` from torch_xla 2.8 on, not a device kind (this project targets {target}); use `torch_xla.devices()`"
            );
            context.report(arguments.byte_range(), message).severity = Severity::Warning;
        }
        None => {
            context.report(
                arguments.byte_range(),
                format!(
                    "`{written}` takes `max_devices` since torch_xla 2.8, not a device kind; use `torch_xla.devices()`"
                ),
            );
        }
    }
}

/// In a branch testing the version or `hasattr`, or in a `try:` catching the error the removal
/// raises: code that supports several torch_xla releases on purpose.
fn is_compatibility_code<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    if helpers::in_branch_testing(context, node, &["version", "hasattr", "getattr"]) {
        return true;
    }
    let mut current = context.parent(node);
    while let Some(ancestor) = current {
        match ancestor.kind_key() {
            kind::FUNCTION_DEFINITION | kind::CLASS_DEFINITION | kind::MODULE => return false,
            kind::TRY_STATEMENT => {
                let catches = ancestor
                    .named_nodes()
                    .filter(|clause| clause.is(kind::EXCEPT_CLAUSE))
                    .any(|clause| {
                        let text = context.text(clause);
                        let header = text.split(':').next().unwrap_or(text);
                        header.trim() == "except"
                            || ["AttributeError", "ImportError", "Exception", "TypeError"]
                                .iter()
                                .any(|error| header.contains(error))
                    });
                if catches {
                    return true;
                }
            }
            _ => {}
        }
        current = context.parent(ancestor);
    }
    false
}
