//! TPU406: `torch.load(...)` without `map_location`.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::diagnostic::Fix;
use crate::rules::{helpers, tpu_api};
use crate::syntax;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.load(...)` calls without a `map_location` argument.
    ///
    /// ## Why is this bad?
    /// `torch.load` restores every tensor to the device it was saved from. A checkpoint written
    /// on a GPU fails to load on a TPU VM (`Attempting to deserialize object on a CUDA device but
    /// torch.cuda.is_available() is False`), and PyTorch/XLA's troubleshooting guide warns that
    /// tensors saved from XLA devices are loaded back onto those devices, which fails when they
    /// are not there. Loading onto the CPU first and moving the model afterwards works everywhere.
    ///
    /// ## Example
    /// ```python
    /// state = torch.load("checkpoint.pt")
    /// model.load_state_dict(state)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// state = torch.load("checkpoint.pt", map_location="cpu")
    /// model.load_state_dict(state)
    /// model.to(device)
    /// ```
    ///
    /// ## Fix safety
    /// The fix adds `map_location="cpu"`. It is unsafe: code that relied on tensors coming back
    /// on their original device now gets CPU tensors and must move them.
    ///
    /// ## Known problems
    /// Checkpoints saved from the CPU load fine without `map_location`; the rule cannot see
    /// where a file was written. Calls passing `**kwargs` are not reported, nor loads that read
    /// back what the same function (or module-level code) saved earlier with `torch.save` /
    /// `xm.save` or what another function of the module saves (a save/load pair; not when the
    /// load names a file by a string literal that no save of the file writes), loads of a
    /// path expression the file also saves to (a cache built on the first run), loads of an
    /// in-memory `BytesIO`, an LR scheduler's state (Python numbers), and
    /// loads in host data-pipeline code (datasets, tokenizers), which read the files they wrote.
    /// A module with a saving function and a loading one is taken to read back its own files,
    /// even when the loading one reads a foreign checkpoint through a variable or an f-string.
    ///
    /// ## References
    /// - PyTorch/XLA, *Troubleshooting — quirks* (https://github.com/pytorch/xla/blob/master/docs/source/learn/troubleshoot.md): saving and loading
    ///   XLA tensors; *PyTorch on XLA devices — Saving and Loading* (https://github.com/pytorch/xla/blob/master/docs/source/learn/pytorch-on-xla-devices.md)
    /// - https://pytorch.org/docs/stable/generated/torch.load.html (`map_location`)
    pub(crate) static TORCH_LOAD_WITHOUT_MAP_LOCATION = {
        code: "TPU406",
        name: "torch-load-without-map-location",
        severity: Warning,
        fix: Always,
        kinds: ["call"],
        tokens: ["load"],
        calls: ["torch.load"],
        check: check,
    }
}

/// TPU406
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if helpers::call_matches(context, call, &["torch.load"]).is_none() {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    if syntax::has_splat(arguments)
        || context.keyword_arg(arguments, "map_location").is_some()
        || syntax::positional_args(arguments).len() >= 2
        || syntax::positional_args(arguments).is_empty()
    {
        return;
    }
    if round_trip_in_same_scope(context, call) {
        return;
    }
    let edit = tpu_api::insert_argument(arguments, "map_location=\"cpu\"");
    context
        .report(
            function.start_byte()..call.end_byte(),
            "`torch.load` without `map_location` restores tensors to the device they were saved on",
        )
        .fix = Some(Fix::unsafe_edit("Add `map_location=\"cpu\"`", vec![edit]));
}

/// Whether the load reads back what this process wrote, or state that holds no tensors:
/// the enclosing function called `torch.save` / `xm.save` before, or another function of the
/// module writes with them (a save/load pair; both from the summaries), the file is an
/// in-memory buffer (`torch.load(io.BytesIO(data))`), or the state goes to an LR scheduler
/// (`scheduler.load_state_dict(torch.load(p))`: Python numbers).
fn round_trip_in_same_scope<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let file = context.semantic().file_facts();
    let first = context
        .call_parts(call)
        .and_then(|(_, arguments)| syntax::positional_args(arguments).first().copied());
    // A plain string literal names one file: a save elsewhere that writes none by that name
    // (`torch.save(int8_state, "model_int8.pt")` after `torch.load("model_fp32.pth")`) is no
    // save/load pair with it.
    let names_unsaved_file = first.is_some_and(|first| {
        syntax::string_value(first, context.source()).is_some()
            && !file
                .saved_paths
                .iter()
                .any(|path| path.as_str() == context.text(first))
    });
    let (first_save, saves_elsewhere) = match context.enclosing(call, &["function_definition"]) {
        Some(function) => {
            let own = context
                .semantic()
                .function_summary(function)
                .and_then(|summary| summary.first_save);
            // Another function of this module writes what this one reads (a save/load pair).
            (
                own,
                !names_unsaved_file && file.saving_functions > usize::from(own.is_some()),
            )
        }
        None => (file.first_module_save, false),
    };
    if saves_elsewhere || first_save.is_some_and(|save| save < call.start_byte()) {
        return true;
    }
    // The file writes this very path itself (a cache: load it if present, else build and save).
    if first.is_some_and(|first| {
        file.saved_paths
            .iter()
            .any(|path| path.as_str() == context.text(first))
    }) {
        return true;
    }
    let in_memory = first.is_some_and(|first| {
        context
            .call_parts(first)
            .is_some_and(|(function, _)| context.text(function).ends_with("BytesIO"))
            || annotated_bytes_io(context, call, first)
    });
    if in_memory {
        return true;
    }
    // `self.lr_scheduler.load_state_dict(torch.load(...))`.
    context
        .parent(call)
        .filter(|arguments| arguments.is(kind::ARGUMENT_LIST))
        .and_then(|arguments| context.parent(arguments))
        .and_then(|outer| context.method_call(outer))
        .is_some_and(|(receiver, method)| {
            context.text_is(method, "load_state_dict")
                && context
                    .text(receiver)
                    .to_ascii_lowercase()
                    .contains("sched")
        })
}

/// Whether `name` is a parameter of the enclosing function annotated `io.BytesIO`.
fn annotated_bytes_io<'t>(context: &Context<'t, '_>, call: Node<'t>, name: Node<'t>) -> bool {
    if name.is_not(kind::IDENTIFIER) {
        return false;
    }
    let Some(parameters) = context
        .enclosing(call, &["function_definition"])
        .and_then(|function| function.field("parameters"))
    else {
        return false;
    };
    for parameter in parameters.named_nodes() {
        let (named, annotation) = match parameter.kind_key() {
            kind::TYPED_PARAMETER => (parameter.named_child(0), parameter.field("type")),
            kind::TYPED_DEFAULT_PARAMETER => (parameter.field("name"), parameter.field("type")),
            _ => continue,
        };
        if named.is_some_and(|n| context.text(n) == context.text(name))
            && annotation.is_some_and(|a| context.text(a).ends_with("BytesIO"))
        {
            return true;
        }
    }
    false
}
