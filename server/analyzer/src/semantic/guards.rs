//! Guards and hardware scope: which device a piece of code can run on, computed once per block
//! as the traversal enters it and shared by every rule.
//!
//! A condition is read structurally: the tested expression's names and literals
//! (`torch.cuda.is_available()`, `x.is_cuda`, `device.type == "cuda"`, `args.no_cuda`,
//! `is_torch_xla_available()`), with `not`, `!=` and `not in` flipping the polarity. Text
//! elsewhere (comments, messages, unrelated strings) never counts.

use crate::kind;
use tree_sitter::Node;

use crate::syntax::{self, MAX_EXPR_DEPTH, NodeExt, Visit, node_text};

/// The hardware a device test is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hardware {
    /// A CUDA GPU (or NCCL, cuDNN).
    Cuda,
    /// A TPU, through either backend.
    Tpu,
    /// TorchScript scripting or tracing, or ONNX export (`torch.jit.is_scripting()`,
    /// `torch.jit.is_tracing()`, `torch.onnx.is_in_onnx_export()`): an export path, never taken
    /// when a model runs eagerly or compiled on a TPU.
    Export,
    /// Another accelerator's device type (`x.device.type in ["mps", "xpu"]`: Apple MPS, Intel
    /// XPU, Ascend NPU, Gaudi HPU, …: `torch_api::ACCELERATOR_NAMESPACES`): a branch taken only there never runs on a TPU.
    OtherAccelerator,
}

/// A condition that tests for hardware: `positive` when it is true on that hardware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceTest {
    pub hardware: Hardware,
    pub positive: bool,
}

impl DeviceTest {
    fn negate(self) -> DeviceTest {
        DeviceTest {
            positive: !self.positive,
            ..self
        }
    }
}

/// What the guards around a point of the code say about where it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HardwareScope {
    /// The code never runs on a TPU machine: a branch taken only with CUDA
    /// (`if torch.cuda.is_available():`), the rest of a block after
    /// `if not torch.cuda.is_available(): return`, a branch after one that handled the TPU, or a
    /// test skipped without CUDA (`@skipIf(not torch.cuda.is_available())`,
    /// `@RunIf(min_cuda_gpus=1)`, `@require_torch_gpu`).
    pub never_on_tpu: bool,
    /// The code sits in a branch of a device test, whichever way it goes, or in a function named
    /// for CUDA: the author already chose per device, so CUDA-specific calls there are deliberate.
    pub device_branch: bool,
    /// The code runs only on a TPU (`if is_torch_xla_available():`, `@RunIf(tpu=True)`).
    pub tpu_only: bool,
    /// Under `if TYPE_CHECKING:`: never executes.
    pub type_checking: bool,
    /// In a branch taken only for float16 precision (`if self.precision == "16-mixed":`,
    /// `if args.fp16:`, `if dtype == torch.float16:`): CUDA's fp16 mixed precision, where loss
    /// scaling is needed; a TPU run takes the bfloat16 path.
    pub float16_only: bool,
}

impl HardwareScope {
    /// Whether findings about TPU behaviour are moot here (the code does not run on a TPU).
    pub fn is_unreachable_on_tpu(&self) -> bool {
        self.never_on_tpu || self.type_checking
    }

    fn branch(self, test: Option<DeviceTest>) -> HardwareScope {
        let mut scope = self;
        if let Some(test) = test {
            scope.device_branch = true;
            match (test.hardware, test.positive) {
                (Hardware::Cuda | Hardware::Export | Hardware::OtherAccelerator, true)
                | (Hardware::Tpu, false) => scope.never_on_tpu = true,
                (Hardware::Tpu, true) => scope.tpu_only = true,
                (Hardware::Cuda | Hardware::Export | Hardware::OtherAccelerator, false) => {}
            }
        }
        scope
    }
}

/// One frame of the guard stack: a block (or a definition) and the scope inside it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct GuardFrame {
    pub node_id: usize,
    pub scope: HardwareScope,
    /// Whether the code here is test code (see `roles`).
    pub test_code: bool,
    /// Whether the code here runs off the step: under a throttle (`if step % 100 == 0:`), in a
    /// closure passed to `xm.add_step_closure` (run after the step), so not on every step.
    pub cold: bool,
    /// Whether only errors matter here: the code runs on the way to raising (an error branch).
    pub errors_only: bool,
    /// Whether the code runs once per checkpoint load (see `summaries`): what an op costs per
    /// execution does not matter there, choices (dtypes, APIs) still do.
    pub load_time: bool,
    /// Whether the code is the straight-line body of a function that runs a fixed few times per
    /// run (`summaries::FunctionSummary::once_per_run`): what an op costs per execution does not
    /// matter there; errors and where loaded tensors land still do.
    pub once_per_run: bool,
    /// Whether the code is host data-pipeline code (image processors, transforms, datasets): its
    /// tensors are host tensors, so host syncs, CPU fallbacks and data-dependent shapes are moot.
    pub host_data: bool,
}

/// Whether `block` is the body of an `if` (or `elif`) that ends the loop with `break`, or the
/// program with `sys.exit(...)`: it runs at most once per run of the loop (`if loss < -1000:
/// print("diverged", loss); break`), so what it costs is not paid per step. The test of the `if`
/// still runs every iteration.
pub(crate) fn is_loop_exit_branch(block: Node<'_>, parent: Node<'_>, source: &str) -> bool {
    let is_body = match parent.kind_key() {
        kind::IF_STATEMENT | kind::ELIF_CLAUSE => parent
            .field("consequence")
            .is_some_and(|consequence| consequence.id() == block.id()),
        _ => false,
    };
    is_body
        && block
            .named_nodes()
            .filter(|s| s.is_not(kind::COMMENT))
            .last()
            .is_some_and(|last| last.is(kind::BREAK_STATEMENT) || is_exit_statement(last, source))
}

/// `sys.exit(...)`, `exit()`, `quit()`, `os._exit(...)` as a statement, whatever the status.
fn is_exit_statement(statement: Node<'_>, source: &str) -> bool {
    statement.is(kind::EXPRESSION_STATEMENT)
        && statement
            .named_child(0)
            .and_then(syntax::call_parts)
            .is_some_and(|(function, _)| is_exit_function(node_text(function, source)))
}

/// Whether code at `range` inside `node` (a child of `parent`) runs only when `name` is not a
/// tensor: in a branch [`block_excludes_tensor`] names, in the test of an `elif` after `if
/// isinstance(name, Tensor):`, or on the right of `not isinstance(name, Tensor) and …` /
/// `isinstance(name, Tensor) or …`.
pub(crate) fn excludes_tensor_within(
    node: Node<'_>,
    parent: Node<'_>,
    range: std::ops::Range<usize>,
    name: &str,
    source: &str,
) -> bool {
    match node.kind_name() {
        "block" => block_excludes_tensor(node, parent, name, source),
        "elif_clause" => {
            parent.kind_name() == "if_statement"
                && parent
                    .field("condition")
                    .is_some_and(|condition| isinstance_test(condition, name, true, source, 0))
        }
        "boolean_operator" => {
            let (Some(left), Some(right)) = (node.field("left"), node.field("right")) else {
                return false;
            };
            let positive = node
                .field("operator")
                .is_some_and(|operator| node_text(operator, source) == "or");
            right.start_byte() <= range.start
                && range.end <= right.end_byte()
                && isinstance_test(left, name, positive, source, 0)
        }
        _ => false,
    }
}

/// Whether `block` runs only when `name` is not a tensor: the body of `if not isinstance(name,
/// Tensor):` (or of an `elif` with that test, or with it as one side of an `and`), or an `elif` /
/// `else` after `if isinstance(name, Tensor):` (or that test as one side of an `or`). A tuple of
/// types that includes `Tensor` counts: `not isinstance(x, (Tensor, np.ndarray))` rules out both.
/// A YOLO batch check's `if not images:` under `if not isinstance(images, Tensor):` tests a list.
pub(crate) fn block_excludes_tensor(
    block: Node<'_>,
    parent: Node<'_>,
    name: &str,
    source: &str,
) -> bool {
    let is_body = |clause: Node<'_>| {
        clause
            .field("consequence")
            .or_else(|| clause.field("body"))
            .is_some_and(|body| body.id() == block.id())
    };
    let own_test = matches!(parent.kind_name(), "if_statement" | "elif_clause")
        && is_body(parent)
        && parent
            .field("condition")
            .is_some_and(|condition| isinstance_test(condition, name, false, source, 0));
    let after_positive_test = matches!(parent.kind_name(), "elif_clause" | "else_clause")
        && parent.parent().is_some_and(|if_statement| {
            if_statement.kind_name() == "if_statement"
                && if_statement
                    .field("condition")
                    .is_some_and(|condition| isinstance_test(condition, name, true, source, 0))
        });
    own_test || after_positive_test
}

/// Whether `condition` implies that `name` is a tensor (`positive`: it is true only if
/// `isinstance(name, Tensor)` is) or that it is not (`!positive`: true only if `not
/// isinstance(name, Tensor)` is).
fn isinstance_test(
    condition: Node<'_>,
    name: &str,
    positive: bool,
    source: &str,
    depth: usize,
) -> bool {
    if depth > MAX_EXPR_DEPTH {
        return false;
    }
    let condition = syntax::unparenthesize(condition);
    match condition.kind_name() {
        "not_operator" => condition
            .field("argument")
            .is_some_and(|argument| isinstance_test(argument, name, !positive, source, depth + 1)),
        // `not isinstance(x, Tensor) and ...` is true only when `x` is no tensor; for the
        // positive sense, `isinstance(x, Tensor) or ...` is false only when `x` is no tensor.
        "boolean_operator" => {
            let operator = condition
                .field("operator")
                .map(|operator| node_text(operator, source));
            let joins = if positive { Some("or") } else { Some("and") };
            operator == joins
                && syntax::sides(condition)
                    .any(|side| isinstance_test(side, name, positive, source, depth + 1))
        }
        "call" if positive => is_isinstance_of_tensor(condition, name, source),
        _ => false,
    }
}

/// `isinstance(name, Tensor)`, `isinstance(name, torch.Tensor)`, `isinstance(name, (list,
/// Tensor))`.
fn is_isinstance_of_tensor(call: Node<'_>, name: &str, source: &str) -> bool {
    let (Some(function), Some(arguments)) = (call.field("function"), call.field("arguments"))
    else {
        return false;
    };
    if node_text(function, source) != "isinstance" {
        return false;
    }
    let positional = syntax::positional_args(arguments);
    let (Some(value), Some(types)) = (positional.first(), positional.get(1)) else {
        return false;
    };
    let names_tensor = |node: Node<'_>| {
        matches!(node.kind_name(), "identifier" | "attribute")
            && node_text(node, source).rsplit('.').next() == Some("Tensor")
    };
    let types = syntax::unparenthesize(*types);
    node_text(*value, source) == name
        && (names_tensor(types)
            || (types.kind_name() == "tuple" && types.named_nodes().any(names_tensor)))
}

/// Whether `block` is a branch of an `if` that ends by raising (`raise ...`,
/// `torch._assert(False, ...)`, `assert False`) or by exiting with a failure status
/// (`sys.exit(1)`, `sys.exit("loss is nan")`, `os._exit(1)`): an error branch, taken only on the
/// way to an exception or the end of the program, so at most once per run. The handler of an
/// `except` is one too when it ends by raising, or when it catches only `AssertionError`: it runs
/// after an assertion failed (`try: assert not torch.isnan(x).any() except AssertionError: log`).
pub(crate) fn is_error_branch(block: Node<'_>, parent: Node<'_>, source: &str) -> bool {
    if parent.is(kind::EXCEPT_CLAUSE) {
        let catches_assertion = parent
            .named_nodes()
            .find(|n| n.is_not(kind::BLOCK) && n.is_not(kind::COMMENT))
            .is_some_and(|caught| node_text(caught, source) == "AssertionError");
        return catches_assertion
            || block
                .named_nodes()
                .filter(|s| s.is_not(kind::COMMENT))
                .last()
                .is_some_and(|last| last.is(kind::RAISE_STATEMENT));
    }
    if !parent.is_any(&[kind::IF_STATEMENT, kind::ELIF_CLAUSE, kind::ELSE_CLAUSE]) {
        return false;
    }
    if parent.is(kind::IF_STATEMENT)
        && parent
            .field("consequence")
            .is_none_or(|c| c.id() != block.id())
    {
        return false;
    }
    let Some(last) = block
        .named_nodes()
        .filter(|s| s.is_not(kind::COMMENT))
        .last()
    else {
        return false;
    };
    match last.kind_key() {
        kind::RAISE_STATEMENT => true,
        kind::ASSERT_STATEMENT => last.named_child(0).is_some_and(|c| c.is(kind::FALSE)),
        kind::EXPRESSION_STATEMENT => last.named_child(0).is_some_and(|call| {
            syntax::call_parts(call).is_some_and(|(function, arguments)| {
                let first = syntax::positional_args(arguments).first().copied();
                let name = node_text(function, source);
                (name.ends_with("_assert") && first.is_some_and(|first| first.is(kind::FALSE)))
                    || (is_exit_function(name)
                        && first.is_some_and(|f| is_failure_status(f, source)))
            })
        }),
        _ => false,
    }
}

/// `sys.exit`, `exit`, `quit`, `os._exit`: calls that end the program.
fn is_exit_function(name: &str) -> bool {
    matches!(name, "sys.exit" | "exit" | "quit" | "os._exit")
}

/// An exit status that says the program failed: a nonzero integer or a message (printed to
/// stderr with status 1). `sys.exit(0)` / `sys.exit()` end a run that went well, as its last
/// step (`if step == max_steps: save(); sys.exit(0)`): not an error branch.
fn is_failure_status(status: Node<'_>, source: &str) -> bool {
    match status.kind_key() {
        kind::INTEGER => node_text(status, source).trim() != "0",
        kind::STRING => true,
        _ => false,
    }
}

/// Whether `block` is the body of `if <throttle>:` or `elif <throttle>:` (a condition computing
/// `a % b`).
pub(crate) fn is_throttled_block(
    block: Node<'_>,
    parent: Node<'_>,
    throttles: &crate::hash::KeySet,
) -> bool {
    let body = match parent.kind_key() {
        kind::IF_STATEMENT => parent.field("consequence"),
        kind::ELIF_CLAUSE => parent.field("consequence"),
        _ => None,
    };
    body.is_some_and(|c| c.id() == block.id())
        && throttles.contains(&crate::semantic::summaries::node_key(parent))
}

/// Whether `node` (an expression) only runs where no TPU is: on the right of
/// `<CUDA test> and …` (or `x.dtype == torch.float16 and …`: TPU code runs bfloat16) or of
/// `not <CUDA test> or …`, or in the
/// branch of `… if <device test> else …` taken without a TPU. `ancestors` are the node's
/// ancestors, innermost last, read from the innermost up to its statement (a slice rather than
/// an iterator, so that the two callers share one instance of this function).
pub(crate) fn expression_never_on_tpu<'t>(
    node: Node<'t>,
    ancestors: &[Node<'t>],
    source: &str,
) -> bool {
    let mut child = node;
    for &parent in ancestors.iter().rev() {
        match parent.kind_key() {
            kind::BOOLEAN_OPERATOR => {
                let operator = parent.field("operator").map(|o| node_text(o, source));
                if let Some(left) = parent.field("left")
                    && left.id() != child.id()
                {
                    // `<CUDA test> and …` runs `…` when the test holds; `not <CUDA test> or …`
                    // (`not torch.cuda.is_available() or not f()`) when it fails.
                    let never = match operator {
                        Some("and") => {
                            is_float16_test(left, source)
                                || device_test(left, source).is_some_and(never_on_tpu_when_true)
                        }
                        Some("or") => device_test(left, source)
                            .is_some_and(|test| never_on_tpu_when_true(test.negate())),
                        _ => false,
                    };
                    if never {
                        return true;
                    }
                }
            }
            kind::CONDITIONAL_EXPRESSION => {
                let (Some(consequence), Some(condition)) =
                    (parent.named_child(0), parent.named_child(1))
                else {
                    return false;
                };
                if let Some(test) = device_test(condition, source)
                    && child.id() != condition.id()
                {
                    let taken_when_true = child.id() == consequence.id();
                    let test = if taken_when_true { test } else { test.negate() };
                    if never_on_tpu_when_true(test) {
                        return true;
                    }
                }
            }
            _ if parent.kind_name().ends_with("_statement")
                || matches!(
                    parent.kind_name(),
                    "block" | "module" | "lambda" | "function_definition"
                ) =>
            {
                return false;
            }
            _ => {}
        }
        child = parent;
    }
    false
}

/// Whether code that runs when `test` holds never runs on a TPU.
pub(crate) fn never_on_tpu_when_true(test: DeviceTest) -> bool {
    matches!(
        (test.hardware, test.positive),
        (
            Hardware::Cuda | Hardware::Export | Hardware::OtherAccelerator,
            true
        ) | (Hardware::Tpu, false)
    )
}

/// Whether a condition holds only for float16 precision: `precision == "16-mixed"`,
/// `dtype == torch.float16`, `args.fp16`, `self.use_fp16 and …`.
fn float16_condition(condition: Node<'_>, source: &str, depth: usize) -> bool {
    let condition = syntax::unparenthesize(condition);
    if depth > MAX_EXPR_DEPTH {
        return false;
    }
    match condition.kind_key() {
        kind::BOOLEAN_OPERATOR => {
            condition
                .field("operator")
                .is_some_and(|o| syntax::text_is(o, source, "and"))
                && syntax::sides(condition).any(|side| float16_condition(side, source, depth + 1))
        }
        kind::COMPARISON_OPERATOR => {
            let equality = syntax::comparison_operators(condition, source)
                .iter()
                .all(|operator| matches!(*operator, "==" | "is"));
            let operands: Vec<Node<'_>> = condition.named_nodes().collect();
            equality
                && operands.len() == 2
                && operands.iter().any(|operand| {
                    matches!(node_text(*operand, source), "torch.float16" | "torch.half")
                        || syntax::string_value(*operand, source).is_some_and(|text| {
                            matches!(
                                text.as_ref(),
                                "16-mixed" | "16" | "fp16" | "float16" | "half" | "16-true"
                            )
                        })
                })
        }
        kind::IDENTIFIER | kind::ATTRIBUTE => syntax::dotted_parts(condition, source)
            .and_then(|parts| parts.last().map(|last| last.to_ascii_lowercase()))
            .is_some_and(|last| {
                let words: Vec<&str> = last.split('_').collect();
                words.iter().any(|w| matches!(*w, "fp16" | "float16"))
                    && !words
                        .iter()
                        .any(|w| matches!(*w, "no" | "not" | "disable" | "without"))
            }),
        _ => false,
    }
}

/// `x.dtype == torch.float16` / `dtype is torch.half`: a branch for CUDA's fp16 mixed precision.
fn is_float16_test(condition: Node<'_>, source: &str) -> bool {
    let condition = syntax::unparenthesize(condition);
    if condition.is_not(kind::COMPARISON_OPERATOR) {
        return false;
    }
    let operands: Vec<&str> = condition
        .named_nodes()
        .map(|operand| node_text(operand, source))
        .collect();
    let equality = syntax::comparison_operators(condition, source)
        .iter()
        .all(|operator| matches!(*operator, "==" | "is"));
    equality
        && operands.len() == 2
        && operands
            .iter()
            .any(|o| *o == "dtype" || o.ends_with(".dtype"))
        && operands
            .iter()
            .any(|o| matches!(*o, "torch.float16" | "torch.half"))
}

/// What a block's own statement says about where the block runs, apart from the scope around
/// it ([`BlockGuard::apply`] gives the scope inside): device tests of conditions and of earlier
/// branches, costly enough that the pre-pass works them out once per block and the traversal
/// reuses them (`Summaries::block_guard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockGuard {
    /// The block runs wherever its statement does.
    Outer,
    /// The consequence of `if TYPE_CHECKING:`.
    TypeChecking,
    /// A branch: of a device test when `test` is one; `float16` when taken only for float16.
    Branch {
        test: Option<DeviceTest>,
        float16: bool,
    },
}

impl BlockGuard {
    /// The scope inside the block, given the scope around its statement.
    pub(crate) fn apply(self, outer: HardwareScope) -> HardwareScope {
        match self {
            BlockGuard::Outer => outer,
            BlockGuard::TypeChecking => HardwareScope {
                type_checking: true,
                ..outer
            },
            BlockGuard::Branch { test, float16 } => {
                let mut scope = outer.branch(test);
                scope.float16_only |= float16;
                scope
            }
        }
    }
}

/// The [`BlockGuard`] of `block`, whose statement is `parent` (inside `grandparent`).
pub(crate) fn block_guard(
    block: Node<'_>,
    parent: Node<'_>,
    grandparent: Option<Node<'_>>,
    source: &str,
) -> BlockGuard {
    let branch = |test| BlockGuard::Branch {
        test,
        float16: false,
    };
    match parent.kind_key() {
        kind::IF_STATEMENT => {
            let is_consequence = parent
                .field("consequence")
                .is_some_and(|c| c.id() == block.id());
            if !is_consequence {
                return BlockGuard::Outer;
            }
            let condition = parent.field("condition");
            if condition.is_some_and(|c| is_type_checking(c, source)) {
                return BlockGuard::TypeChecking;
            }
            BlockGuard::Branch {
                test: condition.and_then(|c| device_test(c, source)),
                float16: condition.is_some_and(|c| float16_condition(c, source, 0)),
            }
        }
        kind::ELIF_CLAUSE => {
            let condition = parent.field("condition");
            let own = condition.and_then(|c| device_test(c, source));
            BlockGuard::Branch {
                test: own.or_else(|| grandparent.and_then(|g| earlier_branches(g, parent, source))),
                float16: condition.is_some_and(|c| float16_condition(c, source, 0)),
            }
        }
        kind::ELSE_CLAUSE => match grandparent {
            Some(statement) if statement.is(kind::IF_STATEMENT) => {
                let earlier = earlier_branches(statement, parent, source);
                if earlier.is_none() && is_quiet_cuda_arm(statement, block, source) {
                    return branch(Some(DeviceTest {
                        hardware: Hardware::Cuda,
                        positive: true,
                    }));
                }
                branch(earlier)
            }
            _ => BlockGuard::Outer,
        },
        // `for i in range(torch.cuda.device_count()):` runs no iteration without CUDA.
        kind::FOR_STATEMENT if iterates_cuda_devices(parent, source) => branch(Some(DeviceTest {
            hardware: Hardware::Cuda,
            positive: true,
        })),
        kind::WHILE_STATEMENT => branch(
            parent
                .field("condition")
                .and_then(|c| device_test(c, source)),
        ),
        _ => BlockGuard::Outer,
    }
}

/// Whether `block`, the `else` of `if_statement`, is the CUDA arm of a vendor dispatch that does
/// nothing on a TPU: every `if`/`elif` test probes for another accelerator
/// (`torch_api::is_accelerator_probe`: `is_torch_xpu_available()`, `is_torch_npu_available()`,
/// `torch.backends.mps.is_available()`, …), and the `else` calls `torch.cuda.*`, none of which
/// raises without CUDA (`torch.cuda.manual_seed_all(seed)` in trl's `set_seed`). Such a branch is
/// read as if under `torch.cuda.is_available()`: the author chose per vendor and this arm is
/// CUDA's. A chain with a TPU arm (`elif is_torch_xla_available():`) never gets here: its `else`
/// already follows a TPU test, which a TPU takes. Without a TPU arm a TPU does take the `else`,
/// so an arm that calls a raising API (`torch.cuda.synchronize()`, `torch.cuda.set_device(…)`)
/// keeps the scope around it: there the finding is the crash.
fn is_quiet_cuda_arm(if_statement: Node<'_>, block: Node<'_>, source: &str) -> bool {
    let mut conditions = vec![if_statement.field("condition")];
    let mut cursor = if_statement.walk();
    for clause in if_statement.children_by_field_name("alternative", &mut cursor) {
        if clause.is(kind::ELIF_CLAUSE) {
            conditions.push(clause.field("condition"));
        }
    }
    let dispatch = conditions
        .iter()
        .all(|condition| condition.is_some_and(|c| is_accelerator_probe(c, source, 0)));
    if !dispatch {
        return false;
    }
    let (calls_cuda, raises) = cuda_calls(block, source);
    calls_cuda && !raises
}

/// `is_torch_npu_available()`, or `hasattr(torch, "xpu") and torch.xpu.is_available()`: a test
/// that holds only with one accelerator.
fn is_accelerator_probe(condition: Node<'_>, source: &str, depth: usize) -> bool {
    let condition = syntax::unparenthesize(condition);
    if depth > MAX_EXPR_DEPTH {
        return false;
    }
    match condition.kind_key() {
        kind::CALL => syntax::call_parts(condition)
            .and_then(|(function, _)| syntax::dotted_parts(function, source))
            .is_some_and(|parts| crate::torch_api::is_accelerator_probe(&parts)),
        kind::BOOLEAN_OPERATOR
            if condition
                .field("operator")
                .is_some_and(|o| syntax::text_is(o, source, "and")) =>
        {
            syntax::sides(condition).any(|side| is_accelerator_probe(side, source, depth + 1))
        }
        _ => false,
    }
}

/// Whether `block` calls `torch.cuda.*` (outside nested definitions and lambdas, which run
/// elsewhere), and whether one of those calls raises without CUDA (`torch_api::CUDA_RAISING`).
fn cuda_calls(block: Node<'_>, source: &str) -> (bool, bool) {
    let mut calls_cuda = false;
    // Once a call raises, both answers are known: the walk stops there.
    let raises = syntax::any_in_subtree(block, usize::MAX, |node| match node.kind_key() {
        kind::FUNCTION_DEFINITION | kind::CLASS_DEFINITION | kind::LAMBDA => Visit::Skip,
        kind::CALL
            if let Some(parts) = syntax::call_parts(node)
                .and_then(|(function, _)| syntax::dotted_parts(function, source))
                && let ["torch", "cuda", .., last] = parts[..] =>
        {
            calls_cuda = true;
            if crate::torch_api::CUDA_RAISING.contains(&last) {
                Visit::Found
            } else {
                Visit::Enter
            }
        }
        _ => Visit::Enter,
    });
    (calls_cuda, raises)
}

/// Whether a `for` loop iterates over the CUDA devices: `range(torch.cuda.device_count())` (or
/// `range(0, n)` with such a count), which is empty without CUDA.
fn iterates_cuda_devices(for_statement: Node<'_>, source: &str) -> bool {
    let Some((function, arguments)) = for_statement
        .field("right")
        .and_then(|r| syntax::call_parts(syntax::unparenthesize(r)))
    else {
        return false;
    };
    if !syntax::text_is(function, source, "range") {
        return false;
    }
    let bound = syntax::positional_args(arguments).last().copied();
    bound.is_some_and(|bound| {
        bound.is(kind::CALL)
            && device_test(bound, source).is_some_and(|t| {
                t == DeviceTest {
                    hardware: Hardware::Cuda,
                    positive: true,
                }
            })
    })
}

/// What running a later branch of `if_statement` (before `branch`) implies: every earlier
/// condition was false. The first earlier device test decides.
fn earlier_branches(if_statement: Node<'_>, branch: Node<'_>, source: &str) -> Option<DeviceTest> {
    let mut conditions = vec![if_statement.field("condition")];
    let mut cursor = if_statement.walk();
    for clause in if_statement.children_by_field_name("alternative", &mut cursor) {
        if clause.id() == branch.id() {
            break;
        }
        conditions.push(clause.field("condition"));
    }
    conditions
        .into_iter()
        .flatten()
        .find_map(|condition| false_test(condition, source, 0))
}

/// After `if <test>: … return` (or `raise` / `continue`) without an `else`, the rest of the
/// block runs only when the test was false: the scope that implies, if the test is a device test.
pub(crate) fn after_early_exit(if_statement: Node<'_>, source: &str) -> Option<DeviceTest> {
    if if_statement.field("alternative").is_some() {
        return None;
    }
    let body = if_statement.field("consequence")?;
    let last = body
        .named_nodes()
        .filter(|s| s.is_not(kind::COMMENT))
        .last()?;
    if !last.is_any(&[
        kind::RETURN_STATEMENT,
        kind::RAISE_STATEMENT,
        kind::CONTINUE_STATEMENT,
    ]) {
        return None;
    }
    let condition = if_statement.field("condition")?;
    false_test(condition, source, 0).or_else(|| bound_flag_test(if_statement, condition, source))
}

/// `if not <flag>: return` where the block bound the flag from a device test a few statements
/// up (`self.use_flash = torch.cuda.is_available() and ...`, `ok = torch.cuda.is_available()`):
/// past the exit the flag is true, so its test held. Only the `not <flag>` form, whose truth
/// after the exit implies every conjunct of the test, and only a binding among the few
/// statements just before the `if` in the same block (the nearest one: a sibling lookup costs a
/// walk of the block, so the search stays short).
fn bound_flag_test(
    if_statement: Node<'_>,
    condition: Node<'_>,
    source: &str,
) -> Option<DeviceTest> {
    const LOOK_BACK: usize = 8;
    let condition = syntax::unparenthesize(condition);
    if condition.is_not(kind::NOT_OPERATOR) {
        return None;
    }
    let flag = syntax::unparenthesize(condition.field("argument")?);
    if !flag.is_any(&[kind::IDENTIFIER, kind::ATTRIBUTE]) {
        return None;
    }
    let flag_text = node_text(flag, source);
    let mut statement = if_statement.prev_named_sibling();
    let mut looked = 0;
    while let Some(current) = statement
        && looked < LOOK_BACK
    {
        looked += 1;
        if let Some(assignment) = current
            .named_child(0)
            .filter(|_| current.is(kind::EXPRESSION_STATEMENT))
            .filter(|a| a.is(kind::ASSIGNMENT))
            && assignment
                .field("left")
                .is_some_and(|left| node_text(left, source) == flag_text)
        {
            return assignment
                .field("right")
                .and_then(|value| device_test(value, source));
        }
        statement = current.prev_named_sibling();
    }
    None
}

/// After `assert <test>` the rest of the block runs only when the test held, as after
/// `if not <test>: raise`: `assert torch.cuda.device_count() > LOCAL_RANK, "…"` leaves CUDA for
/// the DDP set-up that follows it (yolov5's `main`).
pub(crate) fn after_assert(assert_statement: Node<'_>, source: &str) -> Option<DeviceTest> {
    device_test(assert_statement.named_child(0)?, source)
}

/// What a condition being false says about the hardware: `not (a or b)` is `not a and not b`,
/// so `if not torch.cuda.is_available() or not ampere(): return` leaves CUDA for the rest; but
/// `not (a and b)` is `not a or not b`, which says nothing unless both sides agree
/// (`if not torch.jit.is_tracing() and same_size: return` leaves eager code too).
fn false_test(condition: Node<'_>, source: &str, depth: usize) -> Option<DeviceTest> {
    let condition = syntax::unparenthesize(condition);
    if depth >= MAX_EXPR_DEPTH {
        return None;
    }
    match condition.kind_key() {
        kind::BOOLEAN_OPERATOR => {
            // `hasattr(args, "tpu") and args.tpu` is `args.tpu` read safely: without the
            // attribute there is no flag, so the probe adds nothing to the test.
            if let (Some(left), Some(right)) = (condition.field("left"), condition.field("right"))
                && condition
                    .field("operator")
                    .is_some_and(|o| syntax::text_is(o, source, "and"))
                && probes_attribute_read_by(left, right, source)
            {
                return false_test(right, source, depth + 1);
            }
            let left = condition
                .field("left")
                .and_then(|l| false_test(l, source, depth + 1));
            let right = condition
                .field("right")
                .and_then(|r| false_test(r, source, depth + 1));
            match condition.field("operator").map(|o| node_text(o, source)) {
                Some("or") => left.or(right),
                _ => match (left, right) {
                    (Some(l), Some(r)) if l == r => Some(l),
                    _ => None,
                },
            }
        }
        kind::NOT_OPERATOR => condition
            .field("argument")
            .and_then(|argument| device_test(argument, source)),
        _ => device_test(condition, source).map(DeviceTest::negate),
    }
}

/// Whether `probe` is `hasattr(o, "name")` and `test` is `o.name` itself (or `not o.name`): the
/// probe only guards the read of the attribute that `test` tests.
fn probes_attribute_read_by(probe: Node<'_>, test: Node<'_>, source: &str) -> bool {
    let probe = syntax::unparenthesize(probe);
    let Some((function, arguments)) = syntax::call_parts(probe) else {
        return false;
    };
    if !syntax::text_is(function, source, "hasattr") {
        return false;
    }
    let [object, name] = syntax::positional_args(arguments)[..] else {
        return false;
    };
    let Some(name) = syntax::string_value(name, source) else {
        return false;
    };
    let mut test = syntax::unparenthesize(test);
    if test.is(kind::NOT_OPERATOR)
        && let Some(argument) = test.field("argument")
    {
        test = syntax::unparenthesize(argument);
    }
    test.is(kind::ATTRIBUTE)
        && test
            .field("attribute")
            .is_some_and(|a| node_text(a, source) == name)
        && test
            .field("object")
            .is_some_and(|o| node_text(o, source) == node_text(object, source))
}

/// Whether an identifier names CUDA hardware by one of its words (`gpus`, `num_gpus`, `n_gpu`,
/// `cuda_devices`): the words [`name_test`] reads as CUDA.
pub(crate) fn names_cuda_hardware(identifier: &str) -> bool {
    may_name_hardware(identifier) && words(identifier).iter().any(|w| is_cuda_word(w))
}

/// Applies the implication of an early exit to the scope of the rest of its block.
pub(crate) fn apply_exit(scope: &mut HardwareScope, test: DeviceTest) {
    *scope = scope.branch(Some(test));
}

/// The scope of a function or class body from its name and decorators.
pub(crate) fn definition_scope(
    outer: HardwareScope,
    definition: Node<'_>,
    decorated: Option<Node<'_>>,
    source: &str,
) -> HardwareScope {
    let mut scope = outer;
    // A function or class named for CUDA (`run_cuda_graph`, `TestCUDA`): CUDA calls there are
    // deliberate. Only "cuda" counts: `verify_on_gpu()` may well run on a TPU host.
    if let Some(name) = definition.field("name")
        && node_text(name, source)
            .to_ascii_lowercase()
            .contains("cuda")
    {
        scope.device_branch = true;
    }
    if let Some(decorated) = decorated {
        for decorator in decorated.named_nodes().filter(|c| c.is(kind::DECORATOR)) {
            if let Some(expression) = decorator.named_child(0) {
                match decorator_requirement(expression, source) {
                    Some(Hardware::Cuda | Hardware::Export | Hardware::OtherAccelerator) => {
                        scope.never_on_tpu = true;
                        scope.device_branch = true;
                    }
                    Some(Hardware::Tpu) => scope.tpu_only = true,
                    None => {}
                }
            }
        }
    }
    scope
}

/// The hardware a decorator requires for the body to run at all:
/// `@unittest.skipIf(not torch.cuda.is_available(), …)`, `@skipUnless(torch.cuda.is_available())`,
/// `@pytest.mark.skipif(not torch.cuda.is_available(), …)`, `@RunIf(min_cuda_gpus=1)`,
/// `@RunIf(tpu=True)`, `@require_torch_gpu`, `@require_torch_xla`, `@onlyCUDA`, `@pytest.mark.cuda`.
fn decorator_requirement(expression: Node<'_>, source: &str) -> Option<Hardware> {
    let (target, arguments) = match expression.kind_key() {
        kind::CALL => {
            let (function, arguments) = syntax::call_parts(expression)?;
            (function, Some(arguments))
        }
        _ => (expression, None),
    };
    let parts = syntax::dotted_parts(target, source)?;
    let last = *parts.last()?;
    let lower = last.to_ascii_lowercase();
    if let Some(arguments) = arguments {
        let first = syntax::positional_args(arguments).first().copied();
        match lower.as_str() {
            "skipif" => {
                let test = device_test(first?, source)?;
                // Skipped when the test holds: the body runs when it does not.
                return required_by(test.negate());
            }
            "skipunless" => return required_by(device_test(first?, source)?),
            "runif" => {
                for keyword in arguments
                    .named_nodes()
                    .filter(|c| c.is(kind::KEYWORD_ARGUMENT))
                {
                    let name = keyword
                        .field("name")
                        .map(|n| node_text(n, source))
                        .unwrap_or("");
                    let value = keyword.field("value");
                    let truthy = value.is_some_and(|v| match v.kind_key() {
                        kind::FALSE | kind::NONE => false,
                        kind::INTEGER => !syntax::text_is(v, source, "0"),
                        _ => true,
                    });
                    if !truthy {
                        continue;
                    }
                    let name_words = words(name);
                    if name_words.iter().any(|w| is_cuda_word(w)) {
                        return Some(Hardware::Cuda);
                    }
                    if name_words.iter().any(|w| is_tpu_word(w)) {
                        return Some(Hardware::Tpu);
                    }
                }
                return None;
            }
            _ => {}
        }
    }
    let decorator_words = words(last);
    let requires =
        lower.starts_with("require") || lower.starts_with("only") || parts.contains(&"mark");
    if !requires {
        return None;
    }
    if decorator_words.iter().any(|w| is_cuda_word(w)) {
        return Some(Hardware::Cuda);
    }
    if decorator_words.iter().any(|w| is_tpu_word(w)) {
        return Some(Hardware::Tpu);
    }
    None
}

/// The hardware a body needs when it runs only if `test` holds.
fn required_by(test: DeviceTest) -> Option<Hardware> {
    test.positive.then_some(test.hardware)
}

/// `TYPE_CHECKING` / `typing.TYPE_CHECKING`.
fn is_type_checking(condition: Node<'_>, source: &str) -> bool {
    let condition = syntax::unparenthesize(condition);
    condition.is_any(&[kind::IDENTIFIER, kind::ATTRIBUTE]) && {
        let text = node_text(condition, source);
        text == "TYPE_CHECKING" || text.ends_with(".TYPE_CHECKING")
    }
}

/// Whether `condition` tests for CUDA or a TPU, and which way.
pub fn device_test(condition: Node<'_>, source: &str) -> Option<DeviceTest> {
    test_at_depth(condition, source, 0)
}

fn test_at_depth(condition: Node<'_>, source: &str, depth: usize) -> Option<DeviceTest> {
    if depth > MAX_EXPR_DEPTH {
        return None;
    }
    let condition = syntax::unparenthesize(condition);
    match condition.kind_key() {
        kind::NOT_OPERATOR => condition
            .field("argument")
            .and_then(|a| test_at_depth(a, source, depth + 1))
            .map(DeviceTest::negate),
        kind::BOOLEAN_OPERATOR => {
            let left = condition
                .field("left")
                .and_then(|l| test_at_depth(l, source, depth + 1));
            let right = condition
                .field("right")
                .and_then(|r| test_at_depth(r, source, depth + 1));
            let operator = condition
                .field("operator")
                .map(|o| node_text(o, source))
                .unwrap_or("and");
            if operator == "and" {
                // `cuda and x` holds only with CUDA.
                left.or(right)
            } else {
                // `a or b` is a device test only when both sides agree.
                match (left, right) {
                    (Some(l), Some(r)) if l == r => Some(l),
                    _ => None,
                }
            }
        }
        kind::COMPARISON_OPERATOR => comparison_test(condition, source, depth),
        kind::CALL => {
            let (function, arguments) = syntax::call_parts(condition)?;
            let parts = syntax::dotted_parts(function, source)?;
            let last = *parts.last()?;
            if crate::torch_api::is_export_mode_query(last) {
                return Some(DeviceTest {
                    hardware: Hardware::Export,
                    positive: true,
                });
            }
            // `str(device).startswith("cuda")`, `device.type.startswith("xla")`.
            if last == "startswith" {
                let prefix = syntax::positional_args(arguments).first().copied()?;
                let text = syntax::string_value(prefix, source)?;
                return literal_hardware(&text).map(|hardware| DeviceTest {
                    hardware,
                    positive: true,
                });
            }
            // `torch.cuda.is_available()`, `torch.backends.cudnn.is_available()`,
            // `is_torch_xla_available()`, `torch.cuda.device_count()`, `xr.is_tpu()`.
            let is_query = last.starts_with("is_")
                || last.starts_with("has_")
                || last == "device_count"
                || last.ends_with("_available");
            if !is_query {
                return None;
            }
            name_test(&parts)
        }
        kind::IDENTIFIER | kind::ATTRIBUTE => {
            let parts = syntax::dotted_parts(condition, source)?;
            name_test(&parts)
        }
        _ => None,
    }
}

/// `device.type == "cuda"`, `"cuda" in str(device)`, `backend != "nccl"`,
/// `torch.cuda.device_count() > 0`, `torch.cuda.device_count() < 2`.
fn comparison_test(comparison: Node<'_>, source: &str, depth: usize) -> Option<DeviceTest> {
    // One walk over the children, sorting operands (named) from operators: both passes ask this
    // of every comparison in a condition, and most have one operator between two operands.
    let mut operands: Vec<Node<'_>> = Vec::with_capacity(2);
    let mut operator_node = None;
    let mut operator_count = 0;
    let mut cursor = comparison.walk();
    if cursor.goto_first_child() {
        loop {
            let child = cursor.node();
            if child.is_named() {
                operands.push(child);
            } else {
                operator_node = Some(child);
                operator_count += 1;
            }
            if !cursor.goto_next_sibling() {
                break;
            }
        }
    }
    if operands.len() != 2 || operator_count != 1 {
        return None;
    }
    let words: Vec<&str> = node_text(operator_node?, source)
        .split_whitespace()
        .collect();
    let operator = crate::syntax::join(&words, " ");
    let operator = operator.as_str();
    let negative = matches!(operator, "!=" | "not in" | "is not");
    for operand in &operands {
        if let Some(text) = syntax::string_value(*operand, source)
            && let Some(hardware) = device_type_hardware(&text)
                .or(crate::torch_api::is_cuda_only_backend_name(&text).then_some(Hardware::Cuda))
        {
            if !matches!(operator, "==" | "!=" | "in" | "not in" | "is" | "is not") {
                return None;
            }
            return Some(DeviceTest {
                hardware,
                positive: !negative,
            });
        }
    }
    // `x.device.type in ["mps", "xpu"]`, `device not in ("cuda", "mps")`: a membership test in a
    // literal collection of device types, all of one kind.
    if matches!(operator, "in" | "not in")
        && let Some(hardware) = collection_hardware(operands[1], source)
    {
        return Some(DeviceTest {
            hardware,
            positive: !negative,
        });
    }
    // `accelerator.distributed_type == DistributedType.XLA`, `state.backend != Backend.CUDA`.
    if matches!(operator, "==" | "!=" | "is" | "is not") {
        for operand in &operands {
            if operand.is_any(&[kind::ATTRIBUTE, kind::IDENTIFIER])
                && let Some(parts) = syntax::dotted_parts(*operand, source)
                && let Some(test) = name_test(&parts)
            {
                return Some(DeviceTest {
                    positive: test.positive != negative,
                    ..test
                });
            }
        }
    }
    // A count compared with a number: `device_count() > 0` (positive), `< 1` / `== 0` (negative);
    // also the length of a named collection (`len(torch.cuda.default_generators) > 0`, one
    // generator per CUDA device; `len(gpu_ids) > 0`, read like `if gpu_ids:`).
    let count = length_test(operands[0], source)
        .or_else(|| test_at_depth(operands[0], source, depth + 1))?;
    // A count greater than a rank or an index (`torch.cuda.device_count() > local_rank`): that
    // device exists, so CUDA does (ranks and indices are not negative where the count is
    // compared with them).
    if operator == ">" && operands[1].is_any(&[kind::IDENTIFIER, kind::ATTRIBUTE]) {
        return Some(count);
    }
    let bound = syntax::integer_value(operands[1], source)?;
    let positive = match operator {
        ">" => bound >= 0,
        ">=" => bound >= 1,
        "!=" => bound == 0,
        "==" => bound >= 1,
        "<" | "<=" => false,
        _ => return None,
    };
    Some(DeviceTest {
        positive: count.positive == positive,
        ..count
    })
}

/// `len(<name>)` of a name that reads as a device test (`len(torch.cuda.default_generators)`).
fn length_test(operand: Node<'_>, source: &str) -> Option<DeviceTest> {
    let (function, arguments) = syntax::call_parts(syntax::unparenthesize(operand))?;
    if !syntax::text_is(function, source, "len") {
        return None;
    }
    let [argument] = syntax::positional_args(arguments)[..] else {
        return None;
    };
    if !argument.is_any(&[kind::IDENTIFIER, kind::ATTRIBUTE]) {
        return None;
    }
    name_test(&syntax::dotted_parts(argument, source)?)
}

/// A tested name: `torch.cuda.is_available` / `x.is_cuda` / `args.use_gpu` / `TEST_CUDA` are
/// CUDA tests; `args.no_cuda` / `cpu_only` the opposite; `is_torch_xla_available` / `on_tpu` TPU.
fn name_test(parts: &[&str]) -> Option<DeviceTest> {
    let mut found: Option<DeviceTest> = None;
    for part in parts {
        // Most parts name no hardware: skip splitting them into words.
        if !may_name_hardware(part) {
            continue;
        }
        let part_words = words(part);
        let negated = part_words
            .iter()
            .any(|w| matches!(w.as_str(), "no" | "not" | "disable" | "without" | "skip"));
        let hardware = if part_words.iter().any(|w| is_cuda_word(w)) {
            Some(Hardware::Cuda)
        } else if part_words.iter().any(|w| is_tpu_word(w))
            && part_words.iter().all(|w| is_tpu_word(w) || is_flag_word(w))
        {
            // `args.tpu`, `use_tpu`, `is_torch_xla_available`; not `tpu_use_cluster` or
            // `xla_fsdp_v2`, options of the TPU path whose `else` still runs on a TPU.
            Some(Hardware::Tpu)
        } else {
            None
        };
        if let Some(hardware) = hardware {
            found = Some(DeviceTest {
                hardware,
                positive: !negated,
            });
        }
    }
    found
}

/// `"cuda"`, `"cuda:0"`, `"gpu"`, `"nccl"` → CUDA; `"xla"`, `"tpu"`, `"xla:0"` → TPU.
pub(crate) fn literal_hardware(text: &str) -> Option<Hardware> {
    let kind = text
        .split(':')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match kind.as_str() {
        "cuda" | "gpu" | "nccl" | "cudnn" => Some(Hardware::Cuda),
        "xla" | "tpu" => Some(Hardware::Tpu),
        _ => None,
    }
}

/// The hardware of a device type compared with a device (`x.device.type == "mps"`): CUDA's or a
/// TPU's ([`literal_hardware`]), or another accelerator's (the device types of
/// [`crate::torch_api::ACCELERATOR_NAMESPACES`]: `"mps"`, `"xpu"`, `"npu"`, …), none of which a TPU
/// machine has. `"cpu"` is none of them: host tensors exist on every machine.
fn device_type_hardware(text: &str) -> Option<Hardware> {
    literal_hardware(text).or_else(|| {
        let kind = text.split(':').next().unwrap_or("").trim();
        crate::torch_api::ACCELERATOR_NAMESPACES
            .iter()
            .any(|other| kind.eq_ignore_ascii_case(other))
            .then_some(Hardware::OtherAccelerator)
    })
}

/// The hardware of a literal list, tuple or set of device types (`["mps", "xpu"]`): a TPU's when
/// every element names one; otherwise, when every element names CUDA or another accelerator,
/// hardware that is not a TPU (CUDA's when all are CUDA's). `None` when an element is not a
/// string or names no accelerator (`"cpu"`).
fn collection_hardware(collection: Node<'_>, source: &str) -> Option<Hardware> {
    let collection = syntax::unparenthesize(collection);
    if !collection.is_any(&[kind::LIST, kind::TUPLE, kind::SET]) {
        return None;
    }
    let mut found: Option<Hardware> = None;
    for element in collection.named_nodes() {
        let hardware = device_type_hardware(&syntax::string_value(element, source)?)?;
        found = Some(match (found, hardware) {
            (None, hardware) => hardware,
            (Some(previous), hardware) if previous == hardware => hardware,
            (Some(Hardware::Tpu), _) | (Some(_), Hardware::Tpu) => return None,
            (Some(_), _) => Hardware::OtherAccelerator,
        });
    }
    found
}

fn is_cuda_word(word: &str) -> bool {
    matches!(
        word,
        "cuda" | "gpu" | "gpus" | "nccl" | "cudnn" | "multigpu"
    )
}

/// Words that make a name a flag or a query rather than an option (`use_tpu`, `is_on_xla`,
/// `TEST_WITH_XLA`, `torch_xla_available`, `no_tpu`).
fn is_flag_word(word: &str) -> bool {
    matches!(
        word,
        "is" | "use"
            | "using"
            | "uses"
            | "on"
            | "run"
            | "running"
            | "runs"
            | "has"
            | "have"
            | "enable"
            | "enabled"
            | "torch"
            | "available"
            | "device"
            | "only"
            | "with"
            | "test"
            | "require"
            | "requires"
            | "no"
            | "not"
            | "disable"
            | "without"
            | "skip"
            | "in"
            | "backend"
            | "type"
            | "distributed"
            | "env"
            | "runtime"
            | "rt"
            | "mode"
            | "platform"
    )
}

/// Whether `part` may hold a word of [`is_cuda_word`] or [`is_tpu_word`]: each of those words
/// contains one of these, and a word is a piece of the part, lower-cased (ASCII).
fn may_name_hardware(part: &str) -> bool {
    const CORES: [&[u8]; 6] = [b"cuda", b"cudnn", b"gpu", b"nccl", b"xla", b"tpu"];
    let bytes = part.as_bytes();
    CORES.iter().any(|core| {
        bytes
            .windows(core.len())
            .any(|window| window.eq_ignore_ascii_case(core))
    })
}

fn is_tpu_word(word: &str) -> bool {
    matches!(word, "xla" | "tpu" | "tpus" | "torchtpu")
}

/// The lower-case words of an identifier: `is_torch_xla_available` → is, torch, xla, available;
/// `TEST_CUDA` → test, cuda; `onlyCUDA` → only, cuda; `min_cuda_gpus` → min, cuda, gpus.
fn words(identifier: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in identifier.split(|c: char| c == '_' || c == '.' || c.is_ascii_digit()) {
        let mut current = String::new();
        let chars: Vec<char> = chunk.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            let boundary = c.is_ascii_uppercase()
                && i > 0
                && (chars[i - 1].is_ascii_lowercase()
                    || chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase()));
            if boundary && !current.is_empty() {
                words.push(current.to_ascii_lowercase());
                current.clear();
            }
            current.push(c);
        }
        if !current.is_empty() {
            words.push(current.to_ascii_lowercase());
        }
    }
    words
}
