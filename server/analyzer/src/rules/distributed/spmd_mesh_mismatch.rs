//! TPU705: an SPMD `Mesh(...)` whose literal shape, device ids and axis names disagree.

use crate::kind;
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;
use crate::syntax::{self, NodeExt};

declare_rule! {
    /// ## What it does
    /// Checks `torch_xla.distributed.spmd.Mesh(device_ids, mesh_shape, axis_names)` calls whose
    /// arguments are literals (`np.arange(8)`, `range(8)`, a list of ids; a tuple of ints; a
    /// tuple of strings) for
    /// - a `mesh_shape` whose product differs from the number of device ids;
    /// - a number of `axis_names` different from the number of mesh dimensions (the number of
    ///   elements of a written `mesh_shape` tuple, also when the sizes are computed:
    ///   `(num_devices, 1)` with `("data",)`);
    /// - repeated axis names.
    ///
    /// ## Why is this bad?
    /// `Mesh.__init__` asserts all three ("Number of device IDs (8) must match mesh size (16)",
    /// "Number of axis names (1) must match mesh dimensions (2)", "Axis names must be unique"),
    /// so the program fails when the mesh is built — typically after a slow start-up on a TPU
    /// VM. The docs ask for `mesh_shape` whose product is the number of devices.
    ///
    /// ## Example
    /// ```python
    /// mesh = xs.Mesh(np.arange(8), (2, 8), ("data",))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// num_devices = xr.global_runtime_device_count()
    /// mesh = xs.Mesh(np.arange(num_devices), (2, num_devices // 2), ("data", "model"))
    /// ```
    ///
    /// ## Fix safety
    /// No fix: which of the literals is wrong is not known.
    ///
    /// ## Known problems
    /// Only literal arguments are checked (for the dimension count, a written tuple whose sizes
    /// may be computed, without a starred part); `mark_sharding` partition specs are not compared
    /// with tensor ranks.
    ///
    /// ## References
    /// - https://github.com/pytorch/xla/blob/v2.9.0/torch_xla/distributed/spmd/xla_sharding.py
    ///   (`Mesh.__init__` assertions)
    /// - https://github.com/pytorch/xla/blob/master/docs/source/perf/spmd_basic.md (mesh shape
    ///   and device count)
    pub(crate) static SPMD_MESH_MISMATCH = {
        code: "TPU705",
        name: "spmd-mesh-mismatch",
        severity: Error,
        fix: None,
        kinds: ["call"],
        tokens: ["Mesh"],
        calls: ["Mesh"],
        check: check,
    }
}

/// TPU705
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if helpers::call_matches(
        context,
        call,
        &[
            "torch_xla.distributed.spmd.Mesh",
            "torch_xla.distributed.spmd.xla_sharding.Mesh",
            "torch_xla.experimental.xla_sharding.Mesh",
        ],
    )
    .is_none()
    {
        return;
    }
    let Some((_, arguments)) = context.call_parts(call) else {
        return;
    };
    let source = context.source();
    let device_ids = syntax::argument(arguments, 0, "device_ids", source);
    let shape = syntax::argument(arguments, 1, "mesh_shape", source);
    let names = syntax::argument(arguments, 2, "axis_names", source);
    let dimensions = shape.and_then(|shape| {
        let shape = syntax::unparenthesize(shape);
        shape
            .is_any(&[kind::TUPLE, kind::LIST])
            .then(|| helpers::literal_numbers(shape, source))
            .flatten()
    });
    if let (Some(ids), Some(dims), Some(shape)) = (
        device_ids.and_then(|ids| device_count(context, ids)),
        dimensions.as_ref(),
        shape,
    ) {
        let size: f64 = dims.iter().product();
        if size != ids as f64 {
            // Printed as an integer: formatting an `f64` would link float printing into the
            // WebAssembly module (about 6 KB gzipped) for this one message.
            let shown = if size.fract() == 0.0 && size.abs() < 1e15 {
                (size as i64).to_string()
            } else {
                "a fractional number of".to_string()
            };
            context.report(
                shape.byte_range(),
                format!(
                    "Mesh shape of {shown} devices for {ids} device ids: `Mesh` asserts they match"
                ),
            );
        }
    }
    let Some(names) = names.map(syntax::unparenthesize) else {
        return;
    };
    if !names.is_any(&[kind::TUPLE, kind::LIST]) {
        return;
    }
    let mut literal: Vec<String> = Vec::new();
    for child in names.named_nodes() {
        if child.is_not(kind::COMMENT) {
            let Some(value) = syntax::string_value(child, source) else {
                return;
            };
            literal.push(value.into_owned());
        }
    }
    // The number of dimensions needs only the shape's elements, not their values:
    // `(num_devices, 1)` is two-dimensional whatever `num_devices` is.
    let rank = shape.map(syntax::unparenthesize).and_then(|shape| {
        let elements: Vec<Node<'t>> = shape.is_any(&[kind::TUPLE, kind::LIST]).then(|| {
            shape
                .named_nodes()
                .filter(|child| child.is_not(kind::COMMENT))
                .collect()
        })?;
        // `(*outer, 2)`: the starred part's length is unknown.
        (!elements.iter().any(|e| e.is(kind::LIST_SPLAT))).then_some(elements.len())
    });
    if let Some(rank) = rank
        && rank != literal.len()
    {
        context.report(
            names.byte_range(),
            format!(
                "{} axis names for a {rank}-dimensional mesh: `Mesh` asserts they match",
                literal.len(),
            ),
        );
        return;
    }
    let mut seen = crate::semantic::summaries::NameSet::default();
    if let Some(repeated) = literal.iter().find(|name| !seen.insert(name.as_str())) {
        context.report(
            names.byte_range(),
            format!("Axis name `{repeated}` is repeated: `Mesh` asserts unique names"),
        );
    }
}

/// The number of device ids of a literal: `np.arange(8)`, `range(8)`, `list(range(8))`,
/// `[0, 1, 2, 3]`.
fn device_count<'t>(context: &Context<'t, '_>, ids: Node<'t>) -> Option<usize> {
    let source = context.source();
    let ids = syntax::unparenthesize(ids);
    match ids.kind_key() {
        kind::LIST | kind::TUPLE => {
            helpers::literal_numbers(ids, source).map(|values| values.len())
        }
        kind::CALL => {
            let (function, arguments) = context.call_parts(ids)?;
            let name = context
                .qualified_name(function)
                .unwrap_or_else(|| context.text(function).to_string());
            let positional = syntax::positional_args(arguments);
            match name.as_str() {
                "numpy.arange" | "range" if positional.len() == 1 => {
                    let count = helpers::literal_number(positional[0], source)?;
                    (count >= 0.0 && count.fract() == 0.0).then_some(count as usize)
                }
                "list" if positional.len() == 1 => device_count(context, positional[0]),
                _ => None,
            }
        }
        _ => None,
    }
}
