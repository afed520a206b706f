//! Call-site facts for parameters: what the calls of a function of this file pass it (a host
//! tensor, a device tensor, a module, …), joined over every call in the file, so that a helper's
//! parameter is known by what its callers give it. They never make code hot (reach is the call
//! graph's business, `summaries::finish`); they only say what a parameter holds.
//!
//! The pre-pass records each call's arguments and each binding of a plain name with a shallow,
//! syntactic reading of the value (a factory and its `device=`, `.cpu()`, `.to(device)`, a
//! literal, another name); `resolve` then joins, per parameter, the facts of every call that can
//! reach the function, following names to their last binding before the call and a caller's own
//! parameters to their call sites, to a fixpoint (so recursion and mutual recursion settle).

use crate::kind;
use tree_sitter::Node;

use crate::semantic::facts::{Device, ValueKind};
use crate::semantic::summaries::{FunctionSummary, FunctionsByName, Resolver};
use crate::syntax::{self, NodeExt, node_text};
use crate::torch_api;

/// What a call passes for one parameter: a kind and a placement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PassedFact {
    pub kind: ValueKind,
    pub device: Device,
    /// Every call places the value explicitly (`x.cpu()`, `t.to(device)`), rather than leaving
    /// it where a factory puts it by default (a demo's `f(torch.zeros(3))`).
    pub placed: bool,
}

impl PassedFact {
    fn of(kind: ValueKind) -> PassedFact {
        PassedFact {
            kind,
            device: Device::Unknown,
            placed: false,
        }
    }

    fn tensor(device: Device) -> PassedFact {
        PassedFact {
            kind: ValueKind::Tensor,
            device,
            placed: false,
        }
    }
}

/// The pre-pass's reading of an argument or a bound value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Known(PassedFact),
    Unknown,
    /// A plain name: whatever its last binding before the call holds (or the caller's parameter).
    Name(String),
    /// `name.to(device)` / `name.cuda()` / `name.cpu()`: the name's kind (a tensor or a module)
    /// on that device.
    Placed(String, Device),
    /// Tensor arithmetic on a name (`n / k`, `torch.clamp(n / k, min=1)`): a tensor on the
    /// name's device when the name holds a tensor; unknown otherwise (`scale * x` of a number
    /// `scale` is a tensor too, so a number on the left says nothing).
    Computed(String),
    /// What a loop over this value binds (`for x, y in loader:`, `enumerate(loader)`'s second
    /// element): a device loader's batches are tensors on the device; a plain loader's are
    /// whatever its collate function builds, until placed (`x = x.to(device)`).
    Element(Box<Value>),
    /// `name(...)`, a call of a name no import gives, placed when `Some` (`Net(n).to(device)`):
    /// an instance when `name` is a module class of this file (read as a module only for its
    /// own calls, `Names::modules`), else a tensor on the accelerator when the name holds a
    /// module there (`model(x)`).
    CallOf(String, Option<Device>),
    /// Two readings: the first for a module's call (`Names::modules`), the second otherwise.
    /// `DDP(model)`: the wrapped module / what the call reads as itself; `model.to(device)` as
    /// a statement: the module moved in place / the name as it was (a tensor's does not move).
    Wrapped(Box<(Value, Value)>),
}

/// One call of a name (`f(...)`, `self.f(...)`, `obj.f(...)`) with its arguments read.
#[derive(Debug, Clone)]
struct PassedCall {
    callee: String,
    /// Called as an attribute (`self.f`, `obj.f`): a method, whose `self` the receiver fills.
    method: bool,
    /// The calling function (index into the summaries' functions), `None` at module level.
    caller: Option<usize>,
    at: usize,
    positional: Vec<Value>,
    keywords: Vec<(String, Value)>,
    /// `*args` / `**kwargs` at the call: which parameter gets what is unknown.
    splat: bool,
}

/// One binding of a plain name (an assignment, a loop target) with its value read.
#[derive(Debug, Clone)]
struct NameBinding {
    caller: Option<usize>,
    name: String,
    at: usize,
    /// The innermost block around the binding (`None`: module level). A binding under an `if`
    /// reaches a call after that `if` only on one path: the value before it may arrive too.
    block: Option<(usize, usize)>,
    value: Value,
}

/// The calls and bindings the pre-pass met (offsets absolute, or relative to a statement while
/// its part is cached; function indices local to the part until `append`).
#[derive(Debug, Clone, Default)]
pub(crate) struct PassedSites {
    calls: Vec<PassedCall>,
    bindings: Vec<NameBinding>,
    /// Functions defined in another function's body: (the nested one, the enclosing one).
    enclosing: Vec<(usize, usize)>,
}

/// How deep a chain of names (`a = b`, `b = c`, …) is followed before it is taken as unknown.
const NAME_CHAIN: usize = 8;

impl PassedSites {
    /// Records a call of a name with its arguments (calls of an import, `torch.zeros(...)`, are
    /// no function of this file and are left out).
    ///
    /// `function`, `arguments`: the call's parts, the second with its named nodes; the caller
    /// has taken the call apart already and knows `function` resolves to no import.
    pub(crate) fn record_call(
        &mut self,
        call: Node<'_>,
        function: Node<'_>,
        (arguments, argument_nodes): (Node<'_>, &[Node<'_>]),
        caller: Option<usize>,
        source: &str,
        resolver: &impl Resolver,
    ) {
        let (callee, method) = match function.kind_key() {
            kind::IDENTIFIER => (node_text(function, source), false),
            kind::ATTRIBUTE => match function.field("attribute") {
                Some(attribute) => (node_text(attribute, source), true),
                None => return,
            },
            _ => return,
        };
        if arguments.is_not(kind::ARGUMENT_LIST) {
            return;
        }
        let mut positional = Vec::new();
        let mut keywords = Vec::new();
        let mut splat = false;
        for &argument in argument_nodes {
            match argument.kind_key() {
                kind::KEYWORD_ARGUMENT => {
                    if let (Some(name), Some(value)) =
                        (argument.field("name"), argument.field("value"))
                    {
                        keywords.push((
                            node_text(name, source).to_string(),
                            read_value(value, source, resolver),
                        ));
                    }
                }
                kind::LIST_SPLAT | kind::DICTIONARY_SPLAT => splat = true,
                kind::COMMENT => {}
                _ => positional.push(read_value(argument, source, resolver)),
            }
        }
        self.calls.push(PassedCall {
            callee: callee.to_string(),
            method,
            caller,
            at: call.start_byte(),
            positional,
            keywords,
            splat,
        });
    }

    /// Records the names a binding target binds (`x = value`; `a, b = x.to(d), y.to(d)` element
    /// by element; other unpackings and loop targets bind values the pre-pass does not read:
    /// unknown).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_binding(
        &mut self,
        target: Node<'_>,
        value: Option<Node<'_>>,
        caller: Option<usize>,
        at: usize,
        block: Option<(usize, usize)>,
        source: &str,
        resolver: &impl Resolver,
    ) {
        // `images, masks = images.to(device), masks.to(device)`: as many names as values, none
        // starred, each name binds its value (the right side is read before any name is bound,
        // and each value reads the bindings before `at`).
        if let Some(values) = value.map(syntax::unparenthesize)
            && target.is_any(&[kind::PATTERN_LIST, kind::TUPLE_PATTERN, kind::LIST_PATTERN])
            && values.is_any(&[kind::EXPRESSION_LIST, kind::TUPLE, kind::LIST])
        {
            let names: Vec<Node<'_>> = target
                .named_nodes()
                .filter(|n| n.is_not(kind::COMMENT))
                .collect();
            let items: Vec<Node<'_>> = values
                .named_nodes()
                .filter(|n| n.is_not(kind::COMMENT))
                .collect();
            let starred = |n: &Node<'_>| n.is_any(&[kind::LIST_SPLAT, kind::LIST_SPLAT_PATTERN]);
            if names.len() == items.len()
                && !names.iter().any(starred)
                && !items.iter().any(starred)
            {
                for (name, item) in names.into_iter().zip(items) {
                    self.record_binding(name, Some(item), caller, at, block, source, resolver);
                }
                return;
            }
        }
        let value = match value {
            Some(value) if target.is(kind::IDENTIFIER) => read_value(value, source, resolver),
            // `a, t, scale = model(wave, ids, mask)`: the elements of a module's output tuple
            // are its tensors, on the module's device.
            Some(value) => match read_value(value, source, resolver) {
                call @ Value::CallOf(..) => call,
                _ => Value::Unknown,
            },
            _ => Value::Unknown,
        };
        self.bind_pattern(target, value, caller, at, block, source);
    }

    /// Binds every name of `target` (a name, or a tuple or list pattern, nested) to `value`.
    fn bind_pattern(
        &mut self,
        target: Node<'_>,
        value: Value,
        caller: Option<usize>,
        at: usize,
        block: Option<(usize, usize)>,
        source: &str,
    ) {
        for node in syntax::target_names(target, true) {
            self.bindings.push(NameBinding {
                caller,
                name: node_text(node, source).to_string(),
                at,
                block,
                value: value.clone(),
            });
        }
    }

    /// Records `name.to(device)` as a statement (`call`): a module moved in place.
    pub(crate) fn record_in_place_move(
        &mut self,
        call: Node<'_>,
        caller: Option<usize>,
        at: usize,
        block: Option<(usize, usize)>,
        source: &str,
        resolver: &impl Resolver,
    ) {
        if let Value::Placed(name, device) = read_call(call, source, resolver) {
            let moved = Value::Placed(name.clone(), device);
            self.bindings.push(NameBinding {
                caller,
                name: name.clone(),
                at,
                block,
                value: Value::Wrapped(Box::new((moved, Value::Name(name)))),
            });
        }
    }

    /// Records the names a loop target binds: each an element of what the loop iterates
    /// (through `enumerate(...)`, whose first element is the count, and `tqdm(...)`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_loop_binding(
        &mut self,
        target: Node<'_>,
        iterable: Option<Node<'_>>,
        caller: Option<usize>,
        at: usize,
        block: Option<(usize, usize)>,
        source: &str,
        resolver: &impl Resolver,
    ) {
        let Some(iterable) = iterable.map(syntax::unparenthesize) else {
            return self.record_binding(target, None, caller, at, block, source, resolver);
        };
        let mut iterable = iterable;
        let mut target = target;
        // `enumerate(loader)`: `(step, batch)`; `tqdm(loader)` iterates the loader.
        for _ in 0..2 {
            let Some((function, arguments)) = syntax::call_parts(iterable) else {
                break;
            };
            let Some(inner) = syntax::positional_args(arguments).first().copied() else {
                break;
            };
            let qualified = resolver.resolve(function);
            if function.is(kind::IDENTIFIER)
                && qualified.is_none()
                && syntax::text_is(function, source, "enumerate")
            {
                if !target.is_any(&[kind::PATTERN_LIST, kind::TUPLE_PATTERN])
                    || target.named_child_count() != 2
                {
                    return self.record_binding(target, None, caller, at, block, source, resolver);
                }
                if let Some(count) = target.named_child(0) {
                    self.record_binding(count, None, caller, at, block, source, resolver);
                }
                let Some(element) = target.named_child(1) else {
                    return;
                };
                target = element;
                iterable = syntax::unparenthesize(inner);
            } else if qualified
                .as_deref()
                .is_some_and(|q| q == "tqdm" || q.starts_with("tqdm."))
            {
                iterable = syntax::unparenthesize(inner);
            } else {
                break;
            }
        }
        let element = Value::Element(Box::new(read_value(iterable, source, resolver)));
        self.bind_pattern(target, element, caller, at, block, source);
    }

    /// Moves every offset by `base` (back when `forward` is false).
    pub(crate) fn shift(&mut self, base: usize, forward: bool) {
        let offset = |value: usize| {
            if forward {
                value + base
            } else {
                value.saturating_sub(base)
            }
        };
        for call in &mut self.calls {
            call.at = offset(call.at);
        }
        for binding in &mut self.bindings {
            binding.at = offset(binding.at);
            binding.block = binding
                .block
                .map(|(start, end)| (offset(start), offset(end)));
        }
    }

    /// Records that function `nested` is defined in the body of function `enclosing`.
    pub(crate) fn record_enclosing(&mut self, nested: usize, enclosing: usize) {
        self.enclosing.push((nested, enclosing));
    }

    /// No call, no binding and no nesting recorded.
    pub(crate) fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.bindings.is_empty() && self.enclosing.is_empty()
    }

    /// Appends a statement's sites, whose function indices start at `first` in the file.
    pub(crate) fn append(&mut self, part: PassedSites, first: usize) {
        self.calls
            .extend(part.calls.into_iter().map(|call| PassedCall {
                caller: call.caller.map(|caller| first + caller),
                ..call
            }));
        self.bindings
            .extend(part.bindings.into_iter().map(|binding| NameBinding {
                caller: binding.caller.map(|caller| first + caller),
                ..binding
            }));
        self.enclosing.extend(
            part.enclosing
                .into_iter()
                .map(|(nested, enclosing)| (first + nested, first + enclosing)),
        );
    }

    /// [`PassedSites::append`] of a copy of `part` moved forward by `base` bytes
    /// ([`PassedSites::shift`]), made item by item (the reusing pre-pass's cached parts).
    pub(crate) fn append_shifted(&mut self, part: &PassedSites, first: usize, base: usize) {
        let caller = |caller: Option<usize>| caller.map(|caller| first + caller);
        for call in &part.calls {
            self.calls.push(PassedCall {
                caller: caller(call.caller),
                at: call.at + base,
                ..call.clone()
            });
        }
        for binding in &part.bindings {
            self.bindings.push(NameBinding {
                caller: caller(binding.caller),
                at: binding.at + base,
                block: binding.block.map(|(start, end)| (start + base, end + base)),
                ..binding.clone()
            });
        }
        self.enclosing.extend(
            part.enclosing
                .iter()
                .map(|(nested, enclosing)| (first + nested, first + enclosing)),
        );
    }

    /// Per function, per parameter (`self` included, by position in
    /// `FunctionSummary::parameters`): the join of what every call in the file passes, when all
    /// of them agree; `None` otherwise. A function passed as a value (`passed`) or sharing its
    /// name with another function its calls could reach gets nothing: its callers are not all
    /// seen.
    /// `by_name`: the functions by name (the map `summaries::finish` builds for the call graph;
    /// the same type, not one more map type in the WebAssembly module).
    pub(crate) fn resolve(
        &self,
        functions: &[FunctionSummary],
        by_name: &FunctionsByName,
        passed: impl Fn(&str) -> bool,
    ) -> Vec<Option<PassedFact>> {
        let count = functions.len();
        let mut targets: Vec<Option<usize>> = Vec::with_capacity(self.calls.len());
        let mut called = vec![false; count];
        let mut opaque = vec![false; count];
        for call in &self.calls {
            // The one function a call reaches: a bare call a function outside classes, an
            // attribute call a method (its positional arguments map past `self`).
            let mut target = None;
            let mut candidates = 0;
            for &id in by_name.indices(&call.callee) {
                if functions[id].class_name.is_some() == call.method {
                    candidates += 1;
                    target = Some(id);
                }
            }
            if candidates > 1 {
                for &id in by_name.indices(&call.callee) {
                    if functions[id].class_name.is_some() == call.method {
                        opaque[id] = true;
                    }
                }
                target = None;
            }
            if let Some(id) = target {
                called[id] = true;
            }
            targets.push(target);
        }
        for (index, function) in functions.iter().enumerate() {
            if passed(&function.name) {
                opaque[index] = true;
            }
        }
        // Bindings by name (indices into `self.bindings`, in text order: the pre-pass meets
        // statements in order, and each statement's nodes in pre-order).
        let mut bindings = FunctionsByName::default();
        for (index, binding) in self.bindings.iter().enumerate() {
            bindings.push(&binding.name, index);
        }
        let resolver = Names {
            bindings: &bindings,
            all: &self.bindings,
            functions,
            starts: &[],
            enclosing: &self.enclosing,
            modules: false,
        };
        // A fixpoint over the lattice "nothing yet" < a fact < unknown: each round can only
        // raise a parameter's state, so it ends within three rounds per parameter; the bound is
        // a guard, not a budget that decides the answer.
        // One flat list over every function's parameters (`starts`: where each function's
        // begin), not a list per function: one vector type fewer in the WebAssembly module.
        let starts = parameter_starts(functions);
        let mut state: Vec<Lattice> = Vec::with_capacity(starts.last().copied().unwrap_or(0));
        for (index, function) in functions.iter().enumerate() {
            let initial = if opaque[index] || !called[index] {
                Lattice::Top
            } else {
                Lattice::Bottom
            };
            state.extend(std::iter::repeat_n(initial, function.parameters.len()));
        }
        let resolver = Names {
            starts: &starts,
            ..resolver
        };
        let rounds = state.len().saturating_mul(3).saturating_add(2);
        for _ in 0..rounds {
            let mut next: Vec<Lattice> = state
                .iter()
                .map(|p| {
                    if *p == Lattice::Top {
                        Lattice::Top
                    } else {
                        Lattice::Bottom
                    }
                })
                .collect();
            for (call, target) in self.calls.iter().zip(&targets) {
                let Some(id) = *target else { continue };
                let function = &functions[id];
                let skip = usize::from(
                    call.method
                        && function
                            .parameters
                            .first()
                            .is_some_and(|p| p == "self" || p == "cls"),
                );
                for (position, name) in function.parameters.iter().enumerate() {
                    let value = if call.splat {
                        None
                    } else if let Some((_, value)) = call.keywords.iter().find(|(k, _)| k == name) {
                        Some(value)
                    } else if position >= skip {
                        call.positional.get(position - skip)
                    } else {
                        // `self`: the receiver, not an argument.
                        continue;
                    };
                    let fact = match value {
                        Some(value) => resolver.value(value, call.caller, call.at, &state, 0),
                        // Not passed (its default) or splatted: unknown.
                        None => Lattice::Top,
                    };
                    if let Some(slot) = starts
                        .get(id)
                        .and_then(|start| next.get_mut(start + position))
                    {
                        *slot = slot.join(fact);
                    }
                }
            }
            if next == state {
                break;
            }
            state = next;
        }
        state
            .into_iter()
            .map(|p| match p {
                Lattice::Fact(fact) => Some(fact),
                _ => None,
            })
            .collect()
    }
}

/// Where each function's parameters begin in the flat list `resolve` returns (one entry per
/// function, then the total).
pub(crate) fn parameter_starts(functions: &[FunctionSummary]) -> Vec<usize> {
    let mut starts = Vec::with_capacity(functions.len() + 1);
    let mut total = 0;
    for function in functions {
        starts.push(total);
        total += function.parameters.len();
    }
    starts.push(total);
    starts
}

/// A parameter's state during the fixpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lattice {
    /// No call site seen yet.
    Bottom,
    Fact(PassedFact),
    /// Call sites disagree, or one passes something unknown.
    Top,
}

impl Lattice {
    fn join(self, other: Lattice) -> Lattice {
        match (self, other) {
            (Lattice::Bottom, x) | (x, Lattice::Bottom) => x,
            (Lattice::Fact(a), Lattice::Fact(b)) if a == b => Lattice::Fact(a),
            (Lattice::Fact(a), Lattice::Fact(b)) if a.kind == b.kind && a.device == b.device => {
                Lattice::Fact(PassedFact { placed: false, ..a })
            }
            // A value of unknown kind on the host (`target.cpu()`) and a host tensor
            // (`pred.argmax(1).cpu()`): on the host, of unknown kind.
            (Lattice::Fact(a), Lattice::Fact(b))
                if a.device == b.device
                    && (a.kind == ValueKind::Unknown || b.kind == ValueKind::Unknown) =>
            {
                Lattice::Fact(PassedFact {
                    kind: ValueKind::Unknown,
                    device: a.device,
                    placed: a.placed && b.placed,
                })
            }
            _ => Lattice::Top,
        }
    }
}

#[derive(Clone, Copy)]
struct Names<'a> {
    /// Per name, indices into `all`.
    bindings: &'a FunctionsByName,
    all: &'a [NameBinding],
    functions: &'a [FunctionSummary],
    /// `parameter_starts(functions)`.
    starts: &'a [usize],
    /// `PassedSites::enclosing`.
    enclosing: &'a [(usize, usize)],
    /// Reading the callee of a call (`model(x)`): an instance of a module class of the file
    /// is a module, a wrapper (`DDP(model)`) is what it wraps, an in-place `model.to(device)`
    /// moves it, and a nested function reads the names of the function around it. Passed as
    /// an argument, an instance stays unknown (a helper's `model` parameter is not read as a
    /// device module: session 20's evaluation-loop false positive).
    modules: bool,
}

impl Names<'_> {
    fn value(
        &self,
        value: &Value,
        caller: Option<usize>,
        at: usize,
        state: &[Lattice],
        depth: usize,
    ) -> Lattice {
        match value {
            Value::Known(fact) => Lattice::Fact(*fact),
            Value::Unknown => Lattice::Top,
            Value::Name(name) => self.name(name, caller, at, state, depth),
            Value::Computed(name) => match self.name(name, caller, at, state, depth) {
                Lattice::Fact(fact) if fact.kind == ValueKind::Tensor => {
                    Lattice::Fact(PassedFact {
                        placed: false,
                        ..fact
                    })
                }
                Lattice::Bottom => Lattice::Bottom,
                _ => Lattice::Top,
            },
            // `for x, y in loader: x = x.to(device)`: whatever the collate function built, a
            // batch moved to a device is a tensor there (or a mapping of them).
            Value::Placed(name, device)
                if self
                    .loader_element(name, caller, at, state, depth)
                    .is_some() =>
            {
                Lattice::Fact(PassedFact {
                    kind: ValueKind::Tensor,
                    device: *device,
                    placed: true,
                })
            }
            Value::Element(iterable) => match self.value(iterable, caller, at, state, depth + 1) {
                Lattice::Fact(loader)
                    if loader.kind == ValueKind::DataLoader
                        && loader.device == Device::Accelerator =>
                {
                    Lattice::Fact(PassedFact {
                        kind: ValueKind::Tensor,
                        device: Device::Accelerator,
                        placed: true,
                    })
                }
                Lattice::Bottom => Lattice::Bottom,
                _ => Lattice::Top,
            },
            Value::Wrapped(pair) => {
                let read = if self.modules { &pair.0 } else { &pair.1 };
                self.value(read, caller, at, state, depth + 1)
            }
            Value::CallOf(callee, device) => match (self.is_module_class(callee), device) {
                (true, _) if self.modules => Lattice::Fact(PassedFact {
                    device: device.unwrap_or(Device::Unknown),
                    ..PassedFact::of(ValueKind::Module)
                }),
                // `model(x)` of a module on the accelerator: its output is a tensor there.
                (false, None) => match (Names {
                    modules: true,
                    ..*self
                })
                .name(callee, caller, at, state, depth + 1)
                {
                    Lattice::Fact(PassedFact {
                        kind: ValueKind::Module,
                        device: Device::Accelerator,
                        ..
                    }) => Lattice::Fact(PassedFact {
                        kind: ValueKind::Tensor,
                        device: Device::Accelerator,
                        placed: true,
                    }),
                    Lattice::Bottom => Lattice::Bottom,
                    _ => Lattice::Top,
                },
                _ => Lattice::Top,
            },
            Value::Placed(name, device) => {
                match self.name(name, caller, at, state, depth) {
                    Lattice::Fact(fact)
                        if matches!(fact.kind, ValueKind::Tensor | ValueKind::Module) =>
                    {
                        Lattice::Fact(PassedFact {
                            kind: fact.kind,
                            device: *device,
                            placed: true,
                        })
                    }
                    Lattice::Bottom => Lattice::Bottom,
                    // `target.cpu()` of a name whose value is unknown (a parameter no call in the
                    // file fills): whatever it is, it is on the host now.
                    _ if *device == Device::Cpu => Lattice::Fact(PassedFact {
                        kind: ValueKind::Unknown,
                        device: Device::Cpu,
                        placed: true,
                    }),
                    _ => Lattice::Top,
                }
            }
        }
    }

    /// Whether a class of this file by that name defines `forward` (a module: its call runs
    /// `forward` on the module's device). One such class is enough: the name is the file's own.
    fn is_module_class(&self, class: &str) -> bool {
        self.functions
            .iter()
            .any(|f| f.name == "forward" && f.class_name.as_deref() == Some(class))
    }

    /// When the last binding of `name` before `at` in `caller` is a loop's element of a data
    /// loader, that loader's placement.
    fn loader_element(
        &self,
        name: &str,
        caller: Option<usize>,
        at: usize,
        state: &[Lattice],
        depth: usize,
    ) -> Option<Device> {
        if depth >= NAME_CHAIN {
            return None;
        }
        let binding = self
            .bindings
            .indices(name)
            .iter()
            .rev()
            .filter_map(|&index| self.all.get(index))
            .find(|binding| binding.caller == caller && binding.at < at)?;
        let Value::Element(iterable) = &binding.value else {
            return None;
        };
        match self.value(iterable, caller, binding.at, state, depth + 1) {
            Lattice::Fact(loader) if loader.kind == ValueKind::DataLoader => Some(loader.device),
            _ => None,
        }
    }

    /// The fact of `name` read at `at` in `caller`: its last binding there before `at`, else
    /// the caller's parameter of that name, else (in a function) every module-level binding.
    fn name(
        &self,
        name: &str,
        caller: Option<usize>,
        at: usize,
        state: &[Lattice],
        depth: usize,
    ) -> Lattice {
        if depth >= NAME_CHAIN {
            return Lattice::Top;
        }
        // The last binding before the read, joined with the ones before it while it sits in a
        // block the read is not in (it may not have run), and with the name's value before any
        // binding when every one of them may not have run.
        let mut joined = Lattice::Bottom;
        for &index in self.bindings.indices(name).iter().rev() {
            let Some(binding) = self.all.get(index) else {
                continue;
            };
            if binding.caller != caller || binding.at >= at {
                continue;
            }
            joined = joined.join(self.value(&binding.value, caller, binding.at, state, depth + 1));
            if binding
                .block
                .is_none_or(|(start, end)| start <= at && at < end)
            {
                return joined;
            }
        }
        joined.join(self.unbound(name, caller, state, depth))
    }

    /// The fact of `name` where no binding of `caller` reaches: the caller's parameter of that
    /// name, else (in a function) every module-level binding.
    fn unbound(
        &self,
        name: &str,
        caller: Option<usize>,
        state: &[Lattice],
        depth: usize,
    ) -> Lattice {
        if let Some(function) = caller {
            if let Some(position) = self
                .functions
                .get(function)
                .and_then(|f| f.parameters.iter().position(|p| p == name))
            {
                return self
                    .starts
                    .get(function)
                    .and_then(|start| state.get(start + position))
                    .copied()
                    .unwrap_or(Lattice::Top);
            }
            // A global read in a function: every module-level binding of it may be the one. For
            // a module's call in a nested function (`ddp` in a `train_step` defined in `main`),
            // every binding of the function around it (the nested one may run after any).
            let scope = self
                .enclosing
                .iter()
                .find(|(nested, _)| self.modules && *nested == function)
                .map(|&(_, enclosing)| enclosing);
            let mut joined = Lattice::Bottom;
            let mut module_level = false;
            for &index in self.bindings.indices(name) {
                let Some(binding) = self.all.get(index).filter(|b| b.caller == scope) else {
                    continue;
                };
                module_level = true;
                joined =
                    joined.join(self.value(&binding.value, scope, binding.at, state, depth + 1));
            }
            if module_level {
                return if joined == Lattice::Bottom {
                    Lattice::Top
                } else {
                    joined
                };
            }
        }
        Lattice::Top
    }
}

/// A shallow reading of an expression: literals, containers, torch factories and their
/// `device=`, placements (`.cpu()`, `.cuda()`, `.to(device)`), modules, optimizers and loaders
/// built from torch classes, and plain names (resolved later).
fn read_value(value: Node<'_>, source: &str, resolver: &impl Resolver) -> Value {
    let value = syntax::unparenthesize(value);
    match value.kind_key() {
        kind::IDENTIFIER => Value::Name(node_text(value, source).to_string()),
        // `num_boxes / world_size`: a tensor on the left keeps the result on its device.
        kind::BINARY_OPERATOR => left_operand_name(value, source),
        // Not `None`: passing it usually stands for "the default", which says nothing of what
        // other calls pass.
        _ if let Some(kind) = super::facts::literal_kind(value) => {
            Value::Known(PassedFact::of(kind))
        }
        kind::CALL => read_call(value, source, resolver),
        _ => Value::Unknown,
    }
}

fn read_call(call: Node<'_>, source: &str, resolver: &impl Resolver) -> Value {
    let Some((function, arguments)) = syntax::call_parts(call) else {
        return Value::Unknown;
    };
    if function.is(kind::ATTRIBUTE)
        && let (Some(receiver), Some(method)) =
            (function.field("object"), function.field("attribute"))
    {
        let device = match node_text(method, source) {
            "cpu" => Some(Device::Cpu),
            "cuda" => Some(Device::Cuda),
            "to" => to_device(arguments, source, resolver),
            "numpy" => return Value::Known(PassedFact::of(ValueKind::NumpyArray)),
            "item" => return Value::Known(PassedFact::of(ValueKind::Scalar)),
            "tolist" => return Value::Known(PassedFact::of(ValueKind::Container)),
            _ => None,
        };
        if let Some(device) = device {
            return match read_value(receiver, source, resolver) {
                Value::Name(name) => Value::Placed(name, device),
                Value::CallOf(callee, None) => Value::CallOf(callee, Some(device)),
                Value::Known(fact)
                    if matches!(fact.kind, ValueKind::Tensor | ValueKind::Module) =>
                {
                    Value::Known(PassedFact {
                        kind: fact.kind,
                        device,
                        placed: true,
                    })
                }
                // `pred.argmax(dim=1).cpu()`, `x.detach().cpu()`: the result of a method only
                // tensors have, whatever the receiver was, is a tensor; placed, it is there.
                _ if is_tensor_method_result(receiver, source) => Value::Known(PassedFact {
                    placed: true,
                    ..PassedFact::tensor(device)
                }),
                _ => Value::Unknown,
            };
        }
    }
    let Some(qualified) = resolver.resolve(function) else {
        if function.is(kind::IDENTIFIER) {
            return Value::CallOf(node_text(function, source).to_string(), None);
        }
        return Value::Unknown;
    };
    if let Some(factory) = qualified.strip_prefix("torch.")
        && torch_api::TENSOR_FACTORIES.contains(&factory)
    {
        if factory == "from_numpy" {
            return Value::Known(PassedFact::tensor(Device::Cpu));
        }
        let device = match syntax::keyword_arg(arguments, "device", source) {
            None => Device::Cpu,
            Some(device) => literal_device(device, source).unwrap_or(Device::Accelerator),
        };
        return Value::Known(PassedFact::tensor(device));
    }
    // `torch.clamp(num_boxes / n, min=1)`, `torch.sqrt(x)`: a torch function computes on its
    // first argument's device.
    if let Some(function) = qualified.strip_prefix("torch.")
        && !function.contains('.')
        && !torch_api::is_non_tensor_function(function)
        && let Some(first) = syntax::positional_args(arguments).first()
        && let Value::Name(name) | Value::Computed(name) = read_value(*first, source, resolver)
    {
        return Value::Computed(name);
    }
    let reading = read_qualified_call(&qualified);
    match syntax::positional_args(arguments).first() {
        Some(&module) if torch_api::MODULE_WRAPPERS.contains(&qualified.as_str()) => {
            Value::Wrapped(Box::new((read_value(module, source, resolver), reading)))
        }
        _ => reading,
    }
}

/// A call of a torch class or function other than a factory: a device object, a module, an
/// optimizer or a data loader (`qualified`: the callee's qualified name).
fn read_qualified_call(qualified: &str) -> Value {
    let last = qualified.rsplit('.').next().unwrap_or("");
    let class = last.chars().next().is_some_and(|c| c.is_ascii_uppercase());
    if qualified == "torch.device" {
        Value::Known(PassedFact::of(ValueKind::DeviceObject))
    } else if class
        && qualified.starts_with("torch.nn.")
        && !qualified.starts_with("torch.nn.functional.")
    {
        Value::Known(PassedFact::of(ValueKind::Module))
    } else if class && qualified.starts_with("torch.optim.") && !qualified.contains("lr_scheduler")
    {
        Value::Known(PassedFact::of(ValueKind::Optimizer))
    } else if qualified == "torch.utils.data.DataLoader" {
        Value::Known(PassedFact::of(ValueKind::DataLoader))
    } else if torch_api::is_device_loader(qualified) {
        Value::Known(PassedFact {
            device: Device::Accelerator,
            ..PassedFact::of(ValueKind::DataLoader)
        })
    } else {
        Value::Unknown
    }
}

/// The name on the left of an arithmetic operator (`n` in `n / k`), as a computation on it.
fn left_operand_name(operator: Node<'_>, source: &str) -> Value {
    match operator.field("left").map(syntax::unparenthesize) {
        Some(left) if left.is(kind::IDENTIFIER) => {
            Value::Computed(node_text(left, source).to_string())
        }
        _ => Value::Unknown,
    }
}

/// Whether `value` is a call of a method only tensors have (`x.argmax(dim=1)`, `x.detach()`),
/// leaving out those a module shares (`float`, `half`, …, which return the module).
fn is_tensor_method_result(value: Node<'_>, source: &str) -> bool {
    let value = syntax::unparenthesize(value);
    let Some((function, _)) = syntax::call_parts(value) else {
        return false;
    };
    function.is(kind::ATTRIBUTE)
        && function.field("attribute").is_some_and(|method| {
            let method = node_text(method, source);
            torch_api::TENSOR_ONLY_METHODS.contains(&method)
                && !torch_api::MODULE_SELF_METHODS.contains(&method)
        })
}

/// The device of `.to(...)`: a literal device string, or a device variable (the model's
/// accelerator, as the index reads `device=` with a variable); `None` for a dtype or nothing.
fn to_device(arguments: Node<'_>, source: &str, resolver: &impl Resolver) -> Option<Device> {
    let target = syntax::keyword_arg(arguments, "device", source)
        .or_else(|| syntax::positional_args(arguments).first().copied())?;
    if let Some(device) = literal_device(target, source) {
        return Some(device);
    }
    if let Some(q) = resolver.resolve(target)
        && let Some(name) = q.strip_prefix("torch.")
        && torch_api::canonical_dtype(name).is_some()
    {
        return None;
    }
    let last = syntax::dotted_parts(target, source)
        .and_then(|parts| parts.last().copied())
        .unwrap_or("");
    if last.contains("dtype") || torch_api::canonical_dtype(last).is_some() {
        return None;
    }
    match target.kind_key() {
        kind::IDENTIFIER | kind::ATTRIBUTE => Some(Device::Accelerator),
        _ => None,
    }
}

/// `"cpu"` → the host, `"cuda:0"` → CUDA, another device string (`"xla"`, `"tpu"`) → the
/// accelerator; `None` for anything but a string literal.
fn literal_device(node: Node<'_>, source: &str) -> Option<Device> {
    let text = syntax::string_value(node, source)?;
    let kind = text.split(':').next().unwrap_or("");
    Some(match kind {
        "cpu" => Device::Cpu,
        "cuda" => Device::Cuda,
        _ => Device::Accelerator,
    })
}
