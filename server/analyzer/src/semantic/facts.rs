//! Facts with evidence: what the index believes about a value (kind, placement on the host or
//! the device) and why, so rules weigh the evidence and messages can cite it.

use crate::source::TextRange;

/// Where a tensor lives, as far as the index can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    /// Created on the host (a factory without `device=`, `.cpu()`, `torch.from_numpy`).
    Cpu,
    /// Hard-coded CUDA.
    Cuda,
    /// The model's accelerator: `forward` inputs, parameters, buffers, `device=` with a variable.
    Accelerator,
    Unknown,
}

impl Device {
    pub(crate) fn merge(self, other: Device) -> Device {
        if self == other { self } else { Device::Unknown }
    }
}

/// What kind of value an expression holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueKind {
    Tensor,
    /// An `nn.Module` instance.
    Module,
    DataLoader,
    Optimizer,
    NumpyArray,
    /// Python int/float/bool/str, or a result like `.item()`.
    Scalar,
    /// list / tuple / dict / set literals and comprehensions.
    Container,
    /// A module namespace or class from an import.
    Namespace,
    /// A `torch.device`.
    DeviceObject,
    Unknown,
}

/// What the index believes about one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fact {
    pub kind: ValueKind,
    pub device: Device,
    /// Where the value was created (for related information in diagnostics).
    pub origin: Option<(usize, usize)>,
    /// Why the index believes it.
    pub evidence: Evidence,
}

/// Where a fact came from: messages cite it, and rules weigh it (a guessed parameter is weaker
/// than a factory call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Evidence {
    /// Nothing specific (literals, containers, derived values).
    Unknown,
    /// A torch factory (`torch.zeros(...)`), with or without `device=`.
    Factory,
    /// A parameter annotated `Tensor`.
    Annotation,
    /// An unannotated parameter of a hot function, taken to be a tensor.
    GuessedParameter,
    /// The result of calling a module (`model(x)`, `self.encoder(h)`, a loss module), or a field
    /// of that result (`outputs.logits`).
    ModuleCall,
    /// An operation on tensors (a method, an operator, a functional op).
    Operation,
    /// What a function of this file returns (its summary).
    Summary,
    /// `x.backward()` made `x` a tensor.
    Backward,
    /// The value flows into a backward call of its training loop (`out = model(x)` before
    /// `loss = criterion(out, y)` and `loss.backward()`; `semantic/backward_flow.rs`): autograd
    /// differentiates only tensors, whatever computed them. Like a model call's output, its
    /// fields (`outputs.loss`) are tensors too.
    FlowsIntoBackward,
    /// A parameter of a function of this file, from what every call of it in the file passes
    /// (`semantic/passed.rs`): `helper(torch.zeros(n))` makes `helper`'s parameter a host tensor.
    CallSite,
}

impl Fact {
    pub const UNKNOWN: Fact = Fact {
        kind: ValueKind::Unknown,
        device: Device::Unknown,
        origin: None,
        evidence: Evidence::Unknown,
    };

    pub(crate) fn of(kind: ValueKind) -> Fact {
        Fact {
            kind,
            ..Fact::UNKNOWN
        }
    }

    pub(crate) fn tensor(device: Device, origin: Option<(usize, usize)>) -> Fact {
        Fact {
            kind: ValueKind::Tensor,
            device,
            origin,
            evidence: Evidence::Operation,
        }
    }

    pub(crate) fn with_evidence(self, evidence: Evidence) -> Fact {
        Fact { evidence, ..self }
    }

    pub fn is_tensor(&self) -> bool {
        self.kind == ValueKind::Tensor
    }

    /// Known to be something other than a tensor.
    pub fn is_not_tensor(&self) -> bool {
        !matches!(self.kind, ValueKind::Tensor | ValueKind::Unknown)
    }

    pub fn origin_range(&self) -> Option<TextRange> {
        self.origin.map(|(start, end)| start..end)
    }
}

/// What a literal or a container display is: a Python value (`1`, `0.5`, `"a"`, `True`) or a
/// container (`[...]`, `(...)`, `{...}` and their comprehensions). `None` is left to the caller:
/// whether it is a value or "nothing passed" depends on where it stands.
pub(crate) fn literal_kind(node: tree_sitter::Node<'_>) -> Option<ValueKind> {
    use crate::kind;
    use crate::syntax::NodeExt;
    match node.kind_key() {
        kind::INTEGER
        | kind::FLOAT
        | kind::STRING
        | kind::CONCATENATED_STRING
        | kind::TRUE
        | kind::FALSE => Some(ValueKind::Scalar),
        kind::LIST
        | kind::TUPLE
        | kind::DICTIONARY
        | kind::SET
        | kind::LIST_COMPREHENSION
        | kind::DICTIONARY_COMPREHENSION
        | kind::SET_COMPREHENSION => Some(ValueKind::Container),
        _ => None,
    }
}
