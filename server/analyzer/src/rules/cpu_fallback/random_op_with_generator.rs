//! TPU207: random ops given an explicit `generator=`, which PyTorch/XLA runs on the CPU.

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;
use crate::semantic::Device;
use crate::syntax::NodeExt;

declare_rule! {
    /// ## What it does
    /// Checks for random-number ops on a device tensor that receive an explicit
    /// `generator=`: `torch.bernoulli`, `torch.normal`, `torch.poisson`, `torch.multinomial`,
    /// the in-place samplers (`x.normal_()`, `x.uniform_()`, `x.bernoulli_()`, `x.random_()`,
    /// `x.exponential_()`, ...), and the factories `torch.rand` / `randn` / `randint` /
    /// `randperm` when they create the tensor on a non-CPU `device=`.
    ///
    /// ## Why is this bad?
    /// PyTorch/XLA implements random sampling with its own per-device seed. Every sampler in its
    /// op table checks `generator.has_value() && generator->defined()` and, when a generator is
    /// given, calls the CPU fallback: the tensor goes to the host, is filled there and comes
    /// back, on every call. A `torch.Generator` is a CPU (or CUDA) object; it does not drive the
    /// TPU's random stream. Measured on torch_xla 2.9.0 with a CPU generator: `randn`, `rand`,
    /// `randint`, `randperm`, `bernoulli`, `normal`, `poisson`, `multinomial` and the in-place
    /// `bernoulli_`, `normal_`, `uniform_`, `random_` ran their `aten::` op on the CPU, and
    /// `cauchy_`, `exponential_`, `geometric_` and `log_normal_` raised.
    ///
    /// TorchTPU: not measured (it has no public CPU build). Its sources, as read by a third
    /// party, say that it has no silent CPU fallback: an op it does not implement raises unless
    /// `execution_mode.enable_cpu_fallback = True`; which of these ops it implements is not
    /// documented.
    ///
    /// ## Example
    /// ```python
    /// noise = torch.randn(shape, generator=g, device=device)
    /// mask = torch.bernoulli(probs, generator=g)
    /// ```
    ///
    /// Use instead: seed the device stream and drop the generator.
    /// ```python
    /// torch.manual_seed(seed)            # or xm.set_rng_state(seed) with PyTorch/XLA
    /// noise = torch.randn(shape, device=device)
    /// mask = torch.bernoulli(probs)
    /// ```
    /// When bit-exact reproducibility against a CPU generator is required, sample on the CPU
    /// on purpose (`device="cpu"`) and move the result once.
    ///
    /// ## Known problems
    /// Factories are reported only with a `device=` that is not `"cpu"` (nor
    /// `generator.device`); a tensor created on the CPU and moved afterwards is the documented
    /// workaround and stays quiet. A device held in
    /// a variable is assumed to be the accelerator.
    ///
    /// ## References
    /// - tpulint's measured record `server/analyzer/data/torch_xla-2.9-fallbacks.json` (cases
    ///   `*.generator`; torch 2.9.0, torch_xla 2.9.0), produced by `scripts/measure-fallbacks.py`
    /// - PyTorch/XLA `torch_xla/csrc/aten_xla_type.cpp` (`bernoulli`, `normal`, `uniform_`,
    ///   `random_`, `exponential_`, `multinomial`: fallback whenever a generator is defined)
    pub(crate) static RANDOM_OP_WITH_GENERATOR = {
        code: "TPU207",
        name: "random-op-with-generator",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        tokens: ["generator"],
        calls: ["rand", "randn", "randint", "randperm", "bernoulli", "normal", "poisson", "multinomial", "bernoulli_", "normal_", "uniform_", "random_", "exponential_", "geometric_", "log_normal_", "cauchy_"],
        check: check,
    }
}

/// Samplers whose first argument (or receiver) is the tensor the result lives with.
const SAMPLERS: WordList = word_list![
    "torch.bernoulli",
    "torch.normal",
    "torch.poisson",
    "torch.multinomial",
    "torch.bernoulli_",
    "torch.normal_",
    "torch.uniform_",
    "torch.random_",
    "torch.exponential_",
    "torch.geometric_",
    "torch.log_normal_",
    "torch.cauchy_",
];

/// Factories: the device comes from `device=` (the CPU when absent).
/// Samplers that raised (instead of falling back) with a CPU generator on torch_xla 2.9.
const RAISE_WITH_GENERATOR: WordList = word_list![
    "torch.cauchy_",
    "torch.exponential_",
    "torch.geometric_",
    "torch.log_normal_",
];

const FACTORIES: WordList = word_list![
    "torch.rand",
    "torch.randn",
    "torch.randint",
    "torch.randperm",
];

/// TPU207
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    let source = context.source();
    let Some(arguments) = helpers::arguments(call) else {
        return;
    };
    let Some(generator) = context.keyword_arg_node(arguments, "generator") else {
        return;
    };
    let Some(generator_value) = generator
        .field("value")
        .filter(|value| value.is_not(kind::NONE))
    else {
        return;
    };
    let Some(target) = helpers::torch_call(context, call) else {
        return;
    };
    let name = target.name.as_str();
    if FACTORIES.contains(&name) && target.receiver.is_none() {
        // `device=generator.device` samples wherever the generator lives (the host for a CPU
        // generator): the documented workaround, usually followed by `.to(device)`.
        let generator_device = format!("{}.device", context.text(generator_value));
        let on_device = context
            .keyword_arg(arguments, "device")
            .is_some_and(|device| {
                context.semantic().device_of_expr(device, 0) != Device::Cpu
                    && context.text(device) != generator_device
            });
        if !on_device {
            return;
        }
    } else if SAMPLERS.contains(&name) {
        let on_cpu = target
            .input(source)
            .is_some_and(|input| helpers::is_on_host(context, input));
        if on_cpu {
            return;
        }
    } else {
        return;
    }
    let Some((function, _)) = context.call_parts(call) else {
        return;
    };
    // Measured on torch_xla 2.9: these four raise with a CPU generator instead of falling back.
    let outcome = if RAISE_WITH_GENERATOR.contains(&name) {
        "raises on torch_xla"
    } else {
        "falls back to the CPU"
    };
    let message = format!(
        "`{}` with an explicit `generator=`{} {outcome}; seed the device instead",
        context.text(function),
        helpers::hot_path_suffix(context)
    );
    let severity = context.hot_path_severity();
    context.report(generator.byte_range(), message).severity = severity;
}
