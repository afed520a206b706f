//! Backend-aware building blocks for the device, idiom and distributed rules: the TPU device
//! expression of the file's backend (named through the importer), and guards such as "this line
//! only runs when CUDA is available".

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
pub use crate::fix::edits::insert_argument;
use crate::fix::importer::{ImportedName, Importer};
use crate::semantic::Backend;
use crate::syntax;
use crate::syntax::NodeExt;

/// Source text that names the TPU device of the file's backend at `site`, with the import it
/// needs there ([`Importer`]). `None` when the backend is unknown: the rule then cannot write a
/// fix.
pub fn device_expression<'t>(context: &Context<'t, '_>, site: Node<'t>) -> Option<ImportedName> {
    match context.backend() {
        Backend::TorchXla => {
            let mut device = torch_xla_expression(context, site, "device");
            device.expression.push_str("()");
            Some(device)
        }
        Backend::TorchTpu => {
            let mut torch = Importer::new(context, site).module("torch", None);
            torch.expression = format!("{}.device(\"tpu\")", torch.expression);
            Some(torch)
        }
        Backend::Unknown => None,
    }
}

/// For a file whose backend is unknown: TorchTPU's device, `torch.device("tpu")`, for a
/// display-only suggestion whose title also names PyTorch/XLA's ([`OTHER_BACKEND_DEVICE`]).
/// Never `torch.accelerator.current_accelerator()`: it returns `None` under PyTorch/XLA, and
/// `torch.device(torch.accelerator.current_accelerator(), i)` is a `TypeError`.
pub fn suggested_device_expression<'t>(context: &Context<'t, '_>, site: Node<'t>) -> ImportedName {
    let mut torch = Importer::new(context, site).module("torch", None);
    torch.expression = format!("{}.device(\"tpu\")", torch.expression);
    torch
}

/// How the title of a display-only device suggestion names PyTorch/XLA's spelling.
pub const OTHER_BACKEND_DEVICE: &str = "TorchTPU; `torch_xla.device()` with PyTorch/XLA";

/// `torch_xla.<member>` written with the file's own name for the `torch_xla` package at `site`,
/// adding `import torch_xla` where it will run when no name refers to it.
pub fn torch_xla_expression<'t>(
    context: &Context<'t, '_>,
    site: Node<'t>,
    member: &str,
) -> ImportedName {
    Importer::new(context, site).member("torch_xla", member, None)
}

/// `xm.<member>` with the file's name for `torch_xla.core.xla_model` at `site`, adding
/// `import torch_xla.core.xla_model as xm` where it will run when no name refers to it.
pub fn xla_model_expression<'t>(
    context: &Context<'t, '_>,
    site: Node<'t>,
    member: &str,
) -> ImportedName {
    Importer::new(context, site).member("torch_xla.core.xla_model", member, Some("xm"))
}

/// Whether a top-level, unconditional import brings in `package` (`import torch_xla...`,
/// `from torch_xla... import ...`). Files that import a backend only under
/// `if is_torch_xla_available():` serve several devices, and backend-specific advice about
/// their generic code is usually wrong.
pub fn imports_unconditionally(context: &Context<'_, '_>, package: &str) -> bool {
    context
        .semantic()
        .imports()
        .imports_unconditionally(package)
}

/// Whether `node` runs only where the author already chose per device, as the index's hardware
/// scope says ([`crate::semantic::HardwareScope`]): under a device test in either branch
/// (`if torch.cuda.is_available():`, `device.type == "cuda"`, an NCCL backend), after an early
/// `if not torch.cuda.is_available(): return`, in a branch after one that handles a TPU, in a test
/// skipped without CUDA (`@skipIf(not torch.cuda.is_available())`, `@RunIf(min_cuda_gpus=1)`,
/// `@require_torch_gpu`) or a function named for CUDA; or, within its statement, in a branch of
/// `… if <device test> else …` or on the right of `<device test> and …`.
pub fn guarded_by_cuda_check<'t>(context: &Context<'t, '_>, node: Node<'t>) -> bool {
    let scope = context.semantic().hardware_scope();
    if scope.never_on_tpu || scope.device_branch || scope.type_checking {
        return true;
    }
    let source = context.source();
    let mut child = node;
    let mut current = context.parent(node);
    while let Some(parent) = current {
        let condition = match parent.kind_key() {
            kind::CONDITIONAL_EXPRESSION => parent.named_child(1),
            kind::BOOLEAN_OPERATOR => parent.field("left"),
            kind::BLOCK
            | kind::MODULE
            | kind::FUNCTION_DEFINITION
            | kind::CLASS_DEFINITION
            | kind::LAMBDA => {
                return false;
            }
            _ => None,
        };
        if let Some(condition) = condition
            && condition.id() != child.id()
            && crate::semantic::device_test(condition, source).is_some()
        {
            return true;
        }
        child = parent;
        current = context.parent(parent);
    }
    false
}

/// The value of a call's argument at `position` or keyword `name`, if it is a plain string.
pub fn string_argument<'t>(
    source: &str,
    arguments: Node<'t>,
    position: usize,
    name: &str,
) -> Option<(Node<'t>, String)> {
    let node = syntax::argument(arguments, position, name, source)?;
    let value = syntax::string_value(node, source)?.into_owned();
    Some((node, value))
}
