//! TPU502: tensors made from NumPy arrays that are float64 by NumPy's default.

use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;
use crate::syntax::NodeExt;
use crate::syntax::{self, node_text};

declare_rule! {
    /// ## What it does
    /// Checks for `torch.from_numpy(a)`, `torch.tensor(a)` and `torch.as_tensor(a)` without a
    /// `dtype=`, where `a` is a NumPy array that is float64 because NumPy defaults to it:
    /// created by `np.zeros`, `np.ones`, `np.empty`, `np.full` with a float, `np.eye`,
    /// `np.linspace`, `np.random.rand` / `randn` / `random` / `uniform` / `normal`, `np.array` of
    /// float literals, or `.astype(np.float64)`. The array may be passed directly or through a
    /// variable assigned in the same function.
    ///
    /// ## Why is this bad?
    /// The tensor inherits the array's float64 dtype. Once it reaches the TPU it brings float64
    /// into the graph, which TPUs do not support natively (slow emulation, or "mixed precision
    /// is disallowed" errors when it meets float32/bfloat16 values). The dtype is easy to miss
    /// because nothing in the line says float64.
    ///
    /// ## Example
    /// ```python
    /// positions = np.linspace(0, 1, n)
    /// pos = torch.from_numpy(positions).to(device)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// positions = np.linspace(0, 1, n, dtype=np.float32)
    /// pos = torch.from_numpy(positions).to(device)
    /// ```
    /// or `torch.as_tensor(positions, dtype=torch.float32, device=device)`.
    ///
    /// ## Known problems
    /// Conversions immediately cast (`.float()`, `.to(torch.float32)`, `.half()`, `.long()`,
    /// ...) are not reported. Arrays whose dtype the rule cannot see (loaded from files,
    /// returned by functions) are not reported.
    ///
    /// ## References
    /// - pytorch/xla issues #2918 and #9014 (float64 on TPU)
    pub(crate) static FLOAT64_NUMPY_CONVERSION = {
        code: "TPU502",
        name: "float64-numpy-conversion",
        severity: Warning,
        fix: None,
        kinds: ["call"],
        calls: ["from_numpy", "tensor", "as_tensor"],
        check: check,
    }
}

/// NumPy constructors that return float64 unless given a dtype.
const FLOAT64_BY_DEFAULT: &[&str] = &[
    "numpy.zeros",
    "numpy.ones",
    "numpy.empty",
    "numpy.eye",
    "numpy.identity",
    "numpy.linspace",
    "numpy.logspace",
    "numpy.random.rand",
    "numpy.random.randn",
    "numpy.random.random",
    "numpy.random.random_sample",
    "numpy.random.uniform",
    "numpy.random.normal",
    "numpy.random.standard_normal",
];

/// Methods that cast right after the conversion.
const CASTS: &[&str] = &[
    "float", "half", "bfloat16", "long", "int", "bool", "short", "byte", "char", "double",
];

/// TPU502
fn check<'t>(context: &mut Context<'t, '_>, call: Node<'t>) {
    if !context
        .callee_name(call)
        .is_some_and(|name| matches!(name, "from_numpy" | "tensor" | "as_tensor"))
    {
        return;
    }
    let Some((function, arguments)) = context.call_parts(call) else {
        return;
    };
    if !matches!(
        context.qualified_name(function).as_deref(),
        Some("torch.from_numpy" | "torch.tensor" | "torch.as_tensor")
    ) {
        return;
    }
    if context.keyword_arg(arguments, "dtype").is_some() || syntax::has_splat(arguments) {
        return;
    }
    let Some(array) = syntax::positional_args(arguments).first().copied() else {
        return;
    };
    if is_cast_immediately(context, call) {
        return;
    }
    let Some(creator) = float64_origin(context, array) else {
        return;
    };
    let message = if creator.explicit {
        format!(
            "`{}` is a float64 array, so this tensor is float64",
            helpers::short_code(context.text(array))
        )
    } else {
        format!(
            "`{}` is float64 (NumPy's default{}), so this tensor is float64",
            helpers::short_code(context.text(array)),
            match &creator.callee {
                Some(callee) => format!(" for `{callee}`"),
                None => String::new(),
            }
        )
    };
    let severity = context.hot_path_severity();
    context.report(call.byte_range(), message).severity = severity;
}

/// `torch.from_numpy(a).float()` / `.to(torch.float32)`: the float64 never survives.
/// (`.to(device)` keeps the dtype.)
fn is_cast_immediately<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let source = context.source();
    let Some(attribute) = context.parent(call).filter(|p| p.is_kind("attribute")) else {
        return false;
    };
    let is_receiver = attribute
        .field("object")
        .is_some_and(|object| object.id() == call.id());
    let method = attribute
        .field("attribute")
        .map(|a| node_text(a, source))
        .unwrap_or("");
    let Some(cast_call) = context.parent(attribute).filter(|p| p.is_kind("call")) else {
        return false;
    };
    if !is_receiver {
        return false;
    }
    if matches!(method, "to" | "type") {
        let Some((_, arguments)) = context.call_parts(cast_call) else {
            return false;
        };
        return context.keyword_arg(arguments, "dtype").is_some()
            || syntax::positional_args(arguments)
                .iter()
                .any(|argument| helpers::torch_dtype(context, *argument).is_some());
    }
    CASTS.contains(&method)
}

/// How a float64 array was made.
struct Float64Origin {
    /// The creating callee when the array comes through a variable.
    callee: Option<String>,
    /// `dtype=np.float64` / `.astype("float64")` rather than NumPy's default.
    explicit: bool,
}

/// When `array` is a float64 NumPy array, how it was made.
fn float64_origin<'t>(context: &Context<'t, '_>, array: Node<'t>) -> Option<Float64Origin> {
    let array = syntax::unparenthesize(array);
    let expression = match array.kind_name() {
        "call" => array,
        "identifier" => {
            let (start, end) = context.fact(array).origin?;
            // The origin is the right-hand side of the assignment that bound the name.
            let node = context.semantic().origin_node((start, end))?;
            if node.is_not_kind("call") {
                return None;
            }
            node
        }
        _ => return None,
    };
    let explicit = creates_float64(context, expression)?;
    let callee = (expression.id() != array.id())
        .then(|| expression.field("function"))
        .flatten()
        .map(|f| helpers::short_code(context.text(f)));
    Some(Float64Origin { callee, explicit })
}

/// `Some(explicit)` when a NumPy call yields float64 (`explicit`: by a dtype written in the
/// code rather than NumPy's default).
fn creates_float64<'t>(context: &Context<'t, '_>, call: Node<'t>) -> Option<bool> {
    let source = context.source();
    let (function, arguments) = context.call_parts(call)?;
    // `.astype(np.float64)` / `.astype(float)` / `.astype("float64")`.
    if let Some((_, method)) = context.method_call(call)
        && syntax::text_is(method, source, "astype")
    {
        return syntax::argument(arguments, 0, "dtype", source)
            .is_some_and(|dtype| names_float64(context, dtype))
            .then_some(true);
    }
    let qualified = context.qualified_name(function)?;
    if let Some(dtype) = context.keyword_arg(arguments, "dtype") {
        return (qualified.starts_with("numpy.") && names_float64(context, dtype)).then_some(true);
    }
    if FLOAT64_BY_DEFAULT.contains(&qualified.as_str()) {
        return Some(false);
    }
    let by_default = match qualified.as_str() {
        "numpy.full" => syntax::argument(arguments, 1, "fill_value", source)
            .is_some_and(|value| syntax::unparenthesize(value).is_kind("float")),
        "numpy.array" | "numpy.asarray" => syntax::positional_args(arguments)
            .first()
            .is_some_and(|value| is_float_literal_sequence(*value)),
        _ => false,
    };
    by_default.then_some(false)
}

/// `np.float64`, `np.double`, `float`, `"float64"`.
fn names_float64<'t>(context: &Context<'t, '_>, dtype: Node<'t>) -> bool {
    let source = context.source();
    if let Some(text) = syntax::string_value(dtype, source) {
        return matches!(text.as_ref(), "float64" | "f8" | "double" | "float");
    }
    if dtype.is_kind("identifier") && syntax::text_is(dtype, source, "float") {
        return true;
    }
    context.qualified_name(dtype).is_some_and(|q| {
        matches!(
            q.as_str(),
            "numpy.float64" | "numpy.double" | "numpy.float_"
        )
    })
}

/// `[0.5, 1.0]`, `[[1.0, 2], [3, 4]]`: a list/tuple of numbers with at least one float literal.
fn is_float_literal_sequence(node: Node<'_>) -> bool {
    fn walk(node: Node<'_>, depth: usize, any_float: &mut bool) -> bool {
        if depth > 8 {
            return false;
        }
        let node = syntax::unparenthesize(node);
        match node.kind_name() {
            "float" => {
                *any_float = true;
                true
            }
            "integer" => true,
            "unary_operator" => node
                .field("argument")
                .is_some_and(|a| walk(a, depth + 1, any_float)),
            "list" | "tuple" => {
                let children: Vec<Node<'_>> = node
                    .named_nodes()
                    .filter(|c| c.is_not_kind("comment"))
                    .collect();
                !children.is_empty() && children.into_iter().all(|c| walk(c, depth + 1, any_float))
            }
            _ => false,
        }
    }
    let mut any_float = false;
    walk(node, 0, &mut any_float) && any_float
}
