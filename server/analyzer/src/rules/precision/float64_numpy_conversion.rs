//! TPU502: tensors made from NumPy arrays that are float64 by NumPy's default.

use crate::kind;
use crate::word_list::{WordList, word_list};
use tree_sitter::Node;

use crate::checker::Context;
use crate::declare_rule;
use crate::rules::helpers;
use crate::syntax::NodeExt;
use crate::syntax::{self, node_text};
use crate::torch_api;

declare_rule! {
    /// ## What it does
    /// Checks for `torch.from_numpy(a)`, `torch.tensor(a)` and `torch.as_tensor(a)` without a
    /// `dtype=`, where `a` is a NumPy array that is float64 because NumPy defaults to it or
    /// promotes to it: made by `np.zeros`, `np.ones`, `np.empty`, `np.full` with a float,
    /// `np.eye`, `np.linspace`, `np.random.rand` / `randn` / `random` / `uniform` / `normal`, a
    /// random generator's samples (`np.random.default_rng(0).normal(...)`,
    /// `rng.standard_normal(...)`), `np.interp`, `np.array` of float literals or
    /// `.astype(np.float64)`; or computed from such arrays or from int64 ones by NumPy functions
    /// and operators whose result follows their inputs (`np.concatenate([sigmas, [0.0]])`,
    /// `np.cos(np.outer(np.arange(n), inv_freq))`, `1.0 / base ** (np.arange(0, d, 2) / d)`,
    /// slices, `.copy()`). The array may be passed directly or through variables assigned in the
    /// same function.
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
    /// returned by functions, parameters) are not reported, and a Python float next to such an
    /// array keeps it unknown (NumPy keeps a float32 array float32 under `* 0.5`). A Python
    /// list given to `torch.tensor` directly (`torch.tensor([0.0])`) is torch's default
    /// float32, not a NumPy array, and is not reported.
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

/// Methods that cast right after the conversion.
const CASTS: WordList = word_list![
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
        let why = match (&creator.callee, creator.by_default) {
            (Some(callee), true) => format!("NumPy's default for `{callee}`"),
            (None, true) => "NumPy's default".to_string(),
            (Some(callee), false) => format!("NumPy's result dtype for `{callee}`"),
            (None, false) => "NumPy's result dtype for float64 or integer inputs".to_string(),
        };
        format!(
            "`{}` is float64 ({why}), so this tensor is float64",
            helpers::short_code(context.text(array)),
        )
    };
    let severity = context.hot_path_severity();
    context.report(call.byte_range(), message).severity = severity;
}

/// `torch.from_numpy(a).float()` / `.to(torch.float32)`: the float64 never survives.
/// (`.to(device)` keeps the dtype.)
fn is_cast_immediately<'t>(context: &Context<'t, '_>, call: Node<'t>) -> bool {
    let source = context.source();
    let Some(attribute) = context.parent(call).filter(|p| p.is(kind::ATTRIBUTE)) else {
        return false;
    };
    let is_receiver = attribute
        .field("object")
        .is_some_and(|object| object.id() == call.id());
    let method = attribute
        .field("attribute")
        .map(|a| node_text(a, source))
        .unwrap_or("");
    let Some(cast_call) = context.parent(attribute).filter(|p| p.is(kind::CALL)) else {
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
    /// The creating callee when the array comes through a variable or a NumPy function.
    callee: Option<String>,
    /// `dtype=np.float64` / `.astype("float64")` rather than NumPy's defaults and promotion.
    explicit: bool,
    /// Made by a NumPy creator whose default dtype is float64 (`np.linspace`), rather than
    /// promoted from float64 or integer inputs (`np.concatenate`, `np.cos`, `1.0 / np.arange(n)`).
    by_default: bool,
}

/// What the rule knows of a NumPy value's dtype, following NumPy's promotion (NEP 50).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NumpyDtype {
    Float64,
    /// float32, float16 or bfloat16: a float narrower than float64.
    NarrowFloat,
    /// An int64 array (`np.arange(n)`: int64, or float64 when `n` is a float); narrower integers
    /// are `Unknown`.
    Integer,
    /// A Python float: weak, it takes an array's dtype (`x32 * 0.5` is float32).
    PythonFloat,
    /// A Python int: weak likewise.
    PythonInt,
    Unknown,
}

impl NumpyDtype {
    /// The dtype of an operation on `self` and `other`.
    fn promote(self, other: NumpyDtype) -> NumpyDtype {
        use NumpyDtype::*;
        match (self, other) {
            (Float64, _) | (_, Float64) => Float64,
            (Unknown, _) | (_, Unknown) => Unknown,
            // int64 with a Python float or a float32 array is float64.
            (Integer, PythonFloat | NarrowFloat) | (PythonFloat | NarrowFloat, Integer) => Float64,
            (NarrowFloat, _) | (_, NarrowFloat) => NarrowFloat,
            (Integer, _) | (_, Integer) => Integer,
            (PythonFloat, _) | (_, PythonFloat) => PythonFloat,
            (PythonInt, PythonInt) => PythonInt,
        }
    }

    /// The dtype of an array made from this value (`np.asarray(0.5)` is float64).
    fn as_array(self) -> NumpyDtype {
        match self {
            NumpyDtype::PythonFloat => NumpyDtype::Float64,
            NumpyDtype::PythonInt => NumpyDtype::Integer,
            other => other,
        }
    }

    /// The dtype of a floating ufunc (`np.cos`, `np.sqrt`, `mean`) of this value.
    fn floating(self) -> NumpyDtype {
        match self.as_array() {
            NumpyDtype::Integer => NumpyDtype::Float64,
            other => other,
        }
    }

    /// The dtype of a true division: an int64 array divided by anything real is float64.
    fn divide(self, other: NumpyDtype) -> NumpyDtype {
        if self == NumpyDtype::Integer || other == NumpyDtype::Integer {
            return NumpyDtype::Float64;
        }
        match self.promote(other) {
            NumpyDtype::Integer => NumpyDtype::Float64,
            NumpyDtype::PythonInt => NumpyDtype::PythonFloat,
            promoted => promoted,
        }
    }
}

/// How deep the rule follows variables and subexpressions.
const MAX_DEPTH: usize = 16;

/// When `array` is a float64 NumPy array, how it was made.
fn float64_origin<'t>(context: &Context<'t, '_>, array: Node<'t>) -> Option<Float64Origin> {
    let expression = resolve_variable(context, syntax::unparenthesize(array))?;
    // `torch.tensor([0.5, 1.0])` converts a Python list, not a NumPy array: torch's default
    // dtype (float32), whatever NumPy would make of the same list.
    if matches!(
        expression.kind_name(),
        "list" | "tuple" | "list_comprehension" | "float" | "integer" | "binary_operator"
    ) {
        return None;
    }
    if numpy_dtype(context, expression, 0) != NumpyDtype::Float64 {
        return None;
    }
    let explicit = names_float64_explicitly(context, expression);
    let function = (expression.is(kind::CALL))
        .then(|| expression.field("function"))
        .flatten();
    // A creator's default, a float literal's array or a generator's samples, rather than a
    // promotion.
    let by_default = function
        .and_then(|f| context.qualified_name(f))
        .is_some_and(|q| {
            q.strip_prefix("numpy.").is_some_and(|name| {
                torch_api::NUMPY_FLOAT64_BY_DEFAULT.contains(&name)
                    || matches!(name, "array" | "asarray" | "full" | "arange")
            })
        })
        || function.is_some_and(|f| {
            f.is(kind::ATTRIBUTE)
                && f.field("attribute").is_some_and(|a| {
                    torch_api::NUMPY_GENERATOR_FLOAT64_METHODS.contains(&context.text(a))
                })
        });
    let callee = function
        .filter(|f| expression.id() != array.id() && !context.text(*f).contains('('))
        .map(|f| helpers::short_code(context.text(f)));
    Some(Float64Origin {
        callee,
        explicit,
        by_default,
    })
}

/// The expression a name was bound to (the name itself when it is no name; `None` when the
/// binding is unknown or the name's own earlier value, as in `x = np.append(x, ...)`).
fn resolve_variable<'t>(context: &Context<'t, '_>, node: Node<'t>) -> Option<Node<'t>> {
    if node.is_not(kind::IDENTIFIER) {
        return Some(node);
    }
    let (start, end) = context.fact(node).origin?;
    if start <= node.start_byte() && node.end_byte() <= end {
        return None;
    }
    let bound = context.semantic().origin_node((start, end))?;
    Some(syntax::unparenthesize(bound))
}

/// `.astype(np.float64)` or a NumPy call with `dtype=np.float64`.
fn names_float64_explicitly<'t>(context: &Context<'t, '_>, expression: Node<'t>) -> bool {
    let Some((_, arguments)) = context.call_parts(expression) else {
        return false;
    };
    let source = context.source();
    let dtype = match context.method_call(expression) {
        Some((_, method)) if node_text(method, source) == "astype" => {
            syntax::argument(arguments, 0, "dtype", source)
        }
        _ => context.keyword_arg(arguments, "dtype"),
    };
    dtype.is_some_and(|dtype| named_dtype(context, dtype) == NumpyDtype::Float64)
}

/// The dtype of a NumPy value, as far as the rule can follow it.
fn numpy_dtype<'t>(context: &Context<'t, '_>, node: Node<'t>, depth: usize) -> NumpyDtype {
    if depth > MAX_DEPTH {
        return NumpyDtype::Unknown;
    }
    let node = syntax::unparenthesize(node);
    match node.kind_key() {
        kind::FLOAT => NumpyDtype::PythonFloat,
        kind::INTEGER => NumpyDtype::PythonInt,
        kind::IDENTIFIER => match resolve_variable(context, node) {
            Some(bound) if bound.id() != node.id() => numpy_dtype(context, bound, depth + 1),
            _ => NumpyDtype::Unknown,
        },
        kind::UNARY_OPERATOR => node
            .field("argument")
            .map_or(NumpyDtype::Unknown, |a| numpy_dtype(context, a, depth + 1)),
        kind::LIST | kind::TUPLE => {
            let mut elements = node.named_nodes().filter(|c| c.is_not(kind::COMMENT));
            let Some(first) = elements.next() else {
                return NumpyDtype::Unknown;
            };
            elements
                .fold(numpy_dtype(context, first, depth + 1), |dtype, element| {
                    dtype.promote(numpy_dtype(context, element, depth + 1))
                })
                .as_array()
        }
        kind::BINARY_OPERATOR => {
            let (Some(left), Some(right)) = (node.field("left"), node.field("right")) else {
                return NumpyDtype::Unknown;
            };
            let operator = node
                .field("operator")
                .map(|o| node_text(o, context.source()))
                .unwrap_or("");
            let left = numpy_dtype(context, left, depth + 1);
            let right = numpy_dtype(context, right, depth + 1);
            match operator {
                "/" => left.divide(right),
                "+" | "-" | "*" | "**" | "//" | "%" => left.promote(right),
                _ => NumpyDtype::Unknown,
            }
        }
        // `a[::-1]`, `a[:, None]`: the array's dtype.
        kind::SUBSCRIPT => node
            .field("value")
            .map_or(NumpyDtype::Unknown, |v| numpy_dtype(context, v, depth + 1)),
        kind::ATTRIBUTE => {
            let is_transpose = node
                .field("attribute")
                .is_some_and(|a| node_text(a, context.source()) == "T");
            match node.field("object") {
                Some(object) if is_transpose => numpy_dtype(context, object, depth + 1),
                _ => NumpyDtype::Unknown,
            }
        }
        kind::CALL => call_dtype(context, node, depth),
        _ => NumpyDtype::Unknown,
    }
}

/// The dtype of a NumPy function's or an array method's result.
fn call_dtype<'t>(context: &Context<'t, '_>, call: Node<'t>, depth: usize) -> NumpyDtype {
    let source = context.source();
    let Some((function, arguments)) = context.call_parts(call) else {
        return NumpyDtype::Unknown;
    };
    if syntax::has_splat(arguments) {
        return NumpyDtype::Unknown;
    }
    let positional = syntax::positional_args(arguments);
    let argument_dtype = |index: usize| {
        positional
            .get(index)
            .map_or(NumpyDtype::Unknown, |a| numpy_dtype(context, *a, depth + 1))
    };
    if let Some(name) = context
        .qualified_name(function)
        .as_deref()
        .and_then(|q| q.strip_prefix("numpy."))
    {
        if let Some(dtype) = context.keyword_arg(arguments, "dtype") {
            return named_dtype(context, dtype);
        }
        if torch_api::NUMPY_FLOAT64_BY_DEFAULT.contains(&name)
            || torch_api::NUMPY_ALWAYS_FLOAT64.contains(&name)
        {
            return NumpyDtype::Float64;
        }
        // The arguments' dtypes promoted together, as NumPy's ufuncs and joins do.
        let promoted = || {
            positional
                .iter()
                .map(|a| numpy_dtype(context, *a, depth + 1))
                .reduce(NumpyDtype::promote)
        };
        if torch_api::NUMPY_FLOATING_RESULT.contains(&name) {
            return promoted().map_or(NumpyDtype::Unknown, NumpyDtype::floating);
        }
        if torch_api::NUMPY_PROMOTING.contains(&name) {
            return promoted().map_or(NumpyDtype::Unknown, NumpyDtype::as_array);
        }
        if torch_api::NUMPY_FIRST_ARGUMENT_DTYPE.contains(&name) {
            return argument_dtype(0).as_array();
        }
        return match name {
            "full" => syntax::argument(arguments, 1, "fill_value", source)
                .map_or(NumpyDtype::Unknown, |value| {
                    numpy_dtype(context, value, depth + 1).as_array()
                }),
            // `np.arange(n)` is int64 unless a bound or the step is a float.
            "arange" => {
                if positional
                    .iter()
                    .any(|a| numpy_dtype(context, *a, depth + 1) == NumpyDtype::PythonFloat)
                {
                    NumpyDtype::Float64
                } else {
                    NumpyDtype::Integer
                }
            }
            _ => NumpyDtype::Unknown,
        };
    }
    let Some((receiver, method)) = context.method_call(call) else {
        return NumpyDtype::Unknown;
    };
    let method = node_text(method, source);
    if method == "astype" {
        return syntax::argument(arguments, 0, "dtype", source)
            .map_or(NumpyDtype::Unknown, |dtype| named_dtype(context, dtype));
    }
    if torch_api::NUMPY_GENERATOR_FLOAT64_METHODS.contains(&method)
        && is_numpy_generator(context, receiver, method, depth)
    {
        return match context.keyword_arg(arguments, "dtype") {
            Some(dtype) => named_dtype(context, dtype),
            None => NumpyDtype::Float64,
        };
    }
    if torch_api::NUMPY_DTYPE_PRESERVING_METHODS.contains(&method) {
        return numpy_dtype(context, receiver, depth + 1);
    }
    if matches!(method, "mean" | "std" | "var") {
        return numpy_dtype(context, receiver, depth + 1).floating();
    }
    NumpyDtype::Unknown
}

/// Whether `receiver.method(...)` samples from a NumPy random generator: one made by
/// `np.random.default_rng(...)` (directly or through a variable), or any receiver of a method
/// only NumPy generators have (`rng.standard_normal`).
fn is_numpy_generator<'t>(
    context: &Context<'t, '_>,
    receiver: Node<'t>,
    method: &str,
    depth: usize,
) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let receiver = syntax::unparenthesize(receiver);
    let receiver = resolve_variable(context, receiver).unwrap_or(receiver);
    let constructed = receiver.is(kind::CALL)
        && context
            .call_parts(receiver)
            .and_then(|(function, _)| context.qualified_name(function))
            .and_then(|q| q.strip_prefix("numpy.").map(str::to_string))
            .is_some_and(|name| torch_api::NUMPY_GENERATOR_CONSTRUCTORS.contains(&name.as_str()));
    constructed
        || (torch_api::NUMPY_GENERATOR_ONLY_METHODS.contains(&method)
            && !context.fact(receiver).is_tensor())
}

/// The dtype a `dtype=` / `.astype(...)` argument names: `np.float64`, `float`, `"float32"`.
fn named_dtype<'t>(context: &Context<'t, '_>, dtype: Node<'t>) -> NumpyDtype {
    let source = context.source();
    let name = if let Some(text) = syntax::string_value(dtype, source) {
        text.into_owned()
    } else if dtype.is(kind::IDENTIFIER) {
        match node_text(dtype, source) {
            "float" => "float64".to_string(),
            "int" => "int64".to_string(),
            _ => return NumpyDtype::Unknown,
        }
    } else {
        match context.qualified_name(dtype) {
            Some(qualified) => match qualified.strip_prefix("numpy.") {
                Some(name) => name.to_string(),
                None => return NumpyDtype::Unknown,
            },
            None => return NumpyDtype::Unknown,
        }
    };
    match name.as_str() {
        "float64" | "f8" | "double" | "float" | "float_" | "<f8" => NumpyDtype::Float64,
        "float32" | "f4" | "single" | "float16" | "f2" | "half" | "<f4" => NumpyDtype::NarrowFloat,
        "int64" | "int" | "i8" | "intp" | "long" => NumpyDtype::Integer,
        _ => NumpyDtype::Unknown,
    }
}
