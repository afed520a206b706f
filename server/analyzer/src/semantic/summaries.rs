//! Function summaries within a file: what a function returns (so `mask = make_mask(n)` knows
//! `make_mask` returns a CPU tensor), and, from a cheap pre-pass over every function body, what it
//! does (syncs the device, steps an optimizer, calls backward, which functions it calls), the call
//! graph those calls form, and reach: which functions run on every step because a training loop
//! or a step function calls them, directly or through other functions of the file.

use crate::kind;
use crate::word_list::{WordList, word_list};
use std::sync::Arc;

use crate::hash::{HashMap, StringSet};

use tree_sitter::{Node, Tree};

use crate::semantic::guards::{self, HardwareScope};
use crate::semantic::passed::{PassedFact, PassedSites};
use crate::semantic::{Fact, ValueKind};
use crate::source::TextRange;
use crate::syntax::{self, NodeExt, Visit, node_text};

/// The facts of a function's `return` statements, merged as the traversal meets them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ReturnFacts {
    /// The merged fact of every `return <value>` (None before the first).
    single: Option<Fact>,
    /// For `return a, b`: the merged fact of each element, when every return has that arity.
    tuple: Option<Vec<Fact>>,
    /// Returns disagree in kind (or arity): nothing is known.
    conflict: bool,
}

impl ReturnFacts {
    pub(crate) fn add(&mut self, fact: Fact, elements: Option<Vec<Fact>>) {
        if self.conflict {
            return;
        }
        self.single = match self.single {
            None => Some(fact),
            Some(previous) if previous.kind == fact.kind => Some(Fact {
                device: previous.device.merge(fact.device),
                ..previous
            }),
            Some(_) => {
                self.conflict = true;
                None
            }
        };
        match (&mut self.tuple, elements) {
            (None, Some(elements))
                if self.single.is_some_and(|s| s.kind == ValueKind::Container) =>
            {
                self.tuple = Some(elements)
            }
            (Some(previous), Some(elements)) if previous.len() == elements.len() => {
                for (old, new) in previous.iter_mut().zip(elements) {
                    if old.kind == new.kind {
                        old.device = old.device.merge(new.device);
                    } else {
                        *old = Fact::UNKNOWN;
                    }
                }
            }
            (Some(_), _) => self.tuple = None,
            _ => {}
        }
    }

    /// The facts it holds, for moving their origins.
    pub(crate) fn facts_mut(&mut self) -> (Option<&mut Fact>, Option<&mut Vec<Fact>>) {
        (self.single.as_mut(), self.tuple.as_mut())
    }

    pub(crate) fn single(&self) -> Option<Fact> {
        if self.conflict { None } else { self.single }
    }

    pub(crate) fn tuple(&self) -> Option<&[Fact]> {
        if self.conflict {
            None
        } else {
            self.tuple.as_deref()
        }
    }
}

/// What a function does, from the pre-pass over its body (nested functions excluded).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FunctionSummary {
    pub name: String,
    /// Whether it cuts the lazy graph itself: `torch_xla.sync()`, `xm.mark_step()`,
    /// `xm.optimizer_step(...)`, `with torch_xla.step():`.
    pub syncs: bool,
    /// Whether it cuts the graph outside its own loops (once per call). A function that cuts it
    /// only inside a loop of its own (`generate()`'s decode loop with `xm.mark_step()` per
    /// token, `evaluate()`'s loop over batches) runs the steps itself: a loop calling it once per
    /// prompt or per epoch is no step loop because of it.
    pub syncs_outside_loops: bool,
    /// Whether it trains inside a loop of its own: steps an optimizer there, or calls
    /// `backward` there and steps no optimizer outside its loops (`train()` holding the loop
    /// over batches of a CUDA-style script, which cuts no graph). Like a function that syncs
    /// only in its loops, it runs the steps itself: a loop calling it is an epoch loop. A
    /// gradient-accumulation step (`backward` per micro-batch, one step after the loop) does
    /// not.
    pub trains_in_loops: bool,
    /// Whether it steps an optimizer outside its own loops (see `trains_in_loops`).
    pub steps_outside_loops: bool,
    /// Whether it steps an optimizer (`optimizer.step()`, `xm.optimizer_step(optimizer)`).
    pub steps_optimizer: bool,
    /// Whether it calls `backward` (`loss.backward()`, `accelerator.backward(loss)`).
    pub calls_backward: bool,
    /// Where it first writes tensors with `torch.save` / `xm.save` (a byte offset): a
    /// `torch.load` after it may read back what this process wrote, on the devices it wrote from.
    pub first_save: Option<usize>,
    /// Names of the functions and methods it calls (`helper`, `self.helper` → `helper`).
    pub calls: Vec<String>,
    /// Whether a function of this file it calls, directly or transitively, syncs.
    pub syncs_through_calls: bool,
    /// Whether its own body waits for the device: reads a value back (`.item()`, `.tolist()`,
    /// `.numpy()`, `.cpu()`), prints, or calls `xm.wait_device_ops()` /
    /// `torch_xla.sync(wait=True)`. A clock read after a call of it measures execution (TPU111).
    pub waits: bool,
    /// Whether a function of this file it calls, directly or transitively, waits (see `waits`).
    /// Computed by `finish`, like `syncs_through_calls`, so that a caller's reader by name
    /// (`SemanticModel::call_syncs_without_waiting`) reads only the named function's summary.
    pub waits_through_calls: bool,
    /// Whether a training loop or step function reaches it through the call graph.
    pub reached_from_loop: bool,
    /// Whether it is compiled: decorated with `torch.compile` / `torch_xla.compile` or passed to
    /// one of them.
    pub compiled: bool,
    /// Whether it runs once per checkpoint load rather than per step: it takes a state dict
    /// (`def checkpoint_filter_fn(state_dict, model)`), is a
    /// state-dict hook (`_load_from_state_dict`, `load_state_dict`), or every function of the
    /// file that calls it is such a function (and no training loop reaches it).
    pub load_time: bool,
    /// Names of its parameters (for the load-time role).
    pub parameters: Vec<String>,
    /// The class whose body defines it (a method), by name.
    pub class_name: Option<String>,
    /// Whether it is the `step` of a class deriving from `torch.optim.Optimizer` directly: it
    /// runs once per training step wherever the loop is (a custom optimizer's module has no
    /// loop), so what it calls is reached like what `forward` calls.
    pub optimizer_step: bool,
    /// Whether it is a method `__call__` with a parameter annotated as a host image or array
    /// (`image: PIL.Image.Image`, `x: np.ndarray`): its class is a host data transform.
    pub takes_host_input: bool,
    /// Whether its own body holds a loop: `for`, `while` or a comprehension (nested functions
    /// excluded).
    pub has_loop: bool,
    /// Whether it runs a fixed few times per run: it holds no loop and every call of it in this
    /// file is module-level code outside loops (`X = get_rand_matrix()` in a tutorial, a table
    /// built at import) or straight-line code of another such function; it is never passed as
    /// a value (a callback) and no training loop reaches it. What an op costs each time does
    /// not matter there.
    pub once_per_run: bool,
    /// Positions (into `parameters`, `self` included) of the parameters its body sends to a
    /// device: `batch.to(device)`, `batch["x"].to(device)`,
    /// `{k: v.to(device) for k, v in batch.items()}`. A loop that passes its batch there moves
    /// the batch each step (TPU607).
    pub moved_parameters: Vec<usize>,
    /// Per binding of a local name that the body later sends to a device (`x.to(device)`,
    /// `x.cuda()`, `x = x.to(device)`), its first such move: the name and the byte range
    /// `[from, until)` over which that binding is still on the host (from the end of the
    /// binding to the move; parameters are left out; cut at a loop around the move that starts
    /// after the binding, whose next iteration sees the moved value). Empty when the binding
    /// itself places the value on a device (`x = y.to(device)`, `device=` other than the CPU).
    /// (A range, not two offsets: `(String, TextRange)` is a list type the suppressions already
    /// use, one instantiation fewer in the WebAssembly module.)
    pub host_until_moved: Vec<(String, TextRange)>,
    /// Whether it returns a true value only where no TPU is, read from its own body: it returns
    /// `False` early under a test that holds on a TPU (`if self.device.dist_backend == "xla":
    /// return False`, `if not torch.cuda.is_available(): return False`), or it returns a CUDA
    /// test (`return self.device.type == "cuda"`). Code under `if self.<it>():` then never runs
    /// on a TPU. Only that positive use is sound: a false result says nothing about the
    /// hardware (`return False` may have other causes).
    pub true_only_off_tpu: bool,
    /// Whether its own body hands objects to a training launcher that places them
    /// (`self.accelerator.prepare(self.model, ...)`, `fabric.setup(model)`;
    /// `torch_api::LAUNCHER_PLACING_METHODS`): its class is a trainer that places its members
    /// through the launcher rather than a module someone moves.
    pub places_through_launcher: bool,
    /// Positions (into `parameters`) of the parameters its body passes by name to the method it
    /// overrides (`super().__init__(plans, device=device)` in `__init__`): their defaults repeat
    /// the overridden signature's, so TPU401 reports a CUDA default where it is first written.
    pub forwarded_to_super: Vec<usize>,
    /// Whether it returns the first of a list of widths that holds a parameter: a loop over the
    /// widths that returns the one the parameter fits (`for b in BUCKETS: if n <= b: return b`).
    /// A collate that sizes its batch by `bucket_len(longest)` pads to a bucket (TPU308).
    pub returns_bucket: bool,
}

impl FunctionSummary {
    /// What statements other than the one defining it read of this summary: the readers that
    /// find functions by a callee's name (`SemanticModel::call_moves_argument`, the
    /// `if self.<name>():` test of `true_only_off_tpu`) read these fields and no other. Every
    /// statement that mentions the name is checked again when this changes (`incremental`);
    /// a new reader by name must read only what this returns, or add to it.
    pub(crate) fn read_by_name(&self) -> impl std::hash::Hash + '_ {
        (
            &self.name,
            self.class_name.is_some(),
            self.parameters.first(),
            &self.moved_parameters,
            self.true_only_off_tpu,
            // `call_syncs_without_waiting` (TPU111's barrier through a called function).
            self.syncs || self.syncs_through_calls,
            self.waits || self.waits_through_calls,
            // `calls_compiled_function` (TPU609's decorator over a call of a compiled function).
            self.compiled,
            // `call_returns_bucket` (TPU308's bucket through a helper).
            self.returns_bucket,
        )
    }
}

/// What a loop's body does (nested loops included), from the pre-pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LoopSummary {
    pub calls_backward: bool,
    pub steps_optimizer: bool,
    /// The body cuts the graph itself or through a function of this file.
    pub syncs: bool,
    /// The body reads a value back every iteration: `.item()`, `.tolist()`, `.numpy()`, or an
    /// `if` / `while` on `x.all()` / `x.any()` (a decode loop's `if finished.all(): break`).
    /// On a device tensor each such read runs the graph traced so far, so the loop executes
    /// once per iteration although it never calls `torch_xla.sync()`.
    pub reads_values: bool,
    /// The body holds another loop that calls backward (that loop owns the step).
    pub nested_training_loop: bool,
    /// The body calls a function of this file that syncs only inside a loop of its own
    /// (`FunctionSummary::syncs_outside_loops`): that function runs the steps, so this loop
    /// runs once per call of it (a loop over prompts around `generate()`). Computed by `finish`.
    pub calls_step_loop_owner: bool,
    /// The body holds a loop over a data loader (an epoch loop around the step or evaluation
    /// loop).
    pub nested_loader_loop: bool,
    /// `continue`, `break`, `return` or `yield` in the body.
    pub exits: bool,
    /// Names of the functions of this file the body calls (for the call graph).
    pub calls: Vec<String>,
    /// In a loop that calls backward itself, the bindings whose values flow into that call
    /// (`out = model(x)` before `loss = criterion(out, y)`; `backward_flow`): the name and the
    /// assignment's start relative to the loop's.
    pub flows_into_backward: Vec<(String, usize)>,
    /// The body itself calls `torch.cat` / `torch.concat` (nested loops' calls not counted).
    pub concatenates: bool,
    /// The body concatenates a carried tensor onto itself from its own value through a call
    /// (`idx = torch.cat((idx, sample(model(idx))), 1)`): a decode loop (`decode_feedback`).
    pub decodes: bool,
    /// In a decode loop, the names bound to the model's output (`logits = model(idx_cond)`) and
    /// their assignment's start relative to the loop's (`decode_feedback`).
    pub model_outputs: Vec<(String, usize)>,
}

/// Facts about the whole file that are not tied to one statement.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FileFacts {
    /// An `MpDeviceLoader` / `ParallelLoader` / `per_device_loader` is used: it syncs each step.
    pub uses_syncing_loader: bool,
    /// `torch_xla.experimental.eager_mode(...)` is called.
    pub eager_mode: bool,
    /// `torch.compile` / `torch_xla.compile` is called.
    pub compiles: bool,
    /// A PyTorch/XLA device string in a device position: `device="xla"`, `torch.device("xla")`,
    /// `.to("xla:0")`, `torch.compile(backend="openxla")`, Lightning's `accelerator="tpu"`.
    pub xla_evidence: bool,
    /// A compiled function steps an optimizer (the optimizer's state must be capturable).
    pub compiles_optimizer_step: bool,
    /// A TorchTPU device string in a device position (`device="tpu"`, `torch.device("tpu")`,
    /// `torch.compile(backend="tpu")`) or a `torch.tpu.*` call.
    pub tpu_evidence: bool,
    /// Where module-level code first calls `torch.save` / `xm.save` (a byte offset).
    pub first_module_save: Option<usize>,
    /// Where straight-line module-level code (no function, class, lambda or loop around it)
    /// calls a step marker (`xm.mark_step()`, `torch_xla.sync()`, `torch_xla.step()`): the
    /// places a script or reproducer says its graph should run (byte offsets).
    pub module_step_markers: Vec<usize>,
    /// The starts of module-level loops, kept only in files with a module step marker (else
    /// empty): a marker after a loop ends that loop's phase, not the code before it.
    pub module_loops: Vec<usize>,
    /// How many functions of the file call `torch.save` / `xm.save`: a module that writes
    /// checkpoints in one function and reads them in another reads back its own files.
    pub saving_functions: usize,
    /// The path expressions (source text) the file's `torch.save` / `xm.save` calls write to, in
    /// order of first appearance: a `torch.load` of the same expression reads back the file's
    /// own output (`if os.path.isfile(cache): x = torch.load(cache) else: ...; torch.save(x, cache)`).
    pub saved_paths: Vec<String>,
    /// One entry per call of a PyTorch/XLA collective ([`crate::torch_api::XLA_COLLECTIVES`]):
    /// its qualified name and the source text of its first argument, `name(first)`
    /// (`torch_xla.core.xla_model.rendezvous('download_only_once')`). The same entry twice is
    /// the paired idiom `if not xm.is_master_ordinal(): xm.rendezvous(tag)` ... `if
    /// xm.is_master_ordinal(): xm.rendezvous(tag)`: every process reaches one of them.
    pub collective_calls: Vec<String>,
}

/// Loop summaries by loop node key: a list, and positions in it by key in a `HashMap<u64,
/// usize>` (the map type of [`Summaries::by_node`]) rather than a `HashMap<u64, LoopSummary>`,
/// whose own table code would cost the WebAssembly module room.
#[derive(Debug, Default, Clone)]
pub(crate) struct LoopSummaries {
    entries: Vec<(u64, LoopSummary)>,
    positions: HashMap<u64, usize>,
}

impl LoopSummaries {
    pub(crate) fn get(&self, key: &u64) -> Option<&LoopSummary> {
        let position = *self.positions.get(key)?;
        self.entries.get(position).map(|(_, summary)| summary)
    }

    /// Sets the summary of `key`, replacing the one there.
    pub(crate) fn insert(&mut self, key: u64, summary: LoopSummary) {
        match self.positions.get(&key) {
            Some(&position) => self.entries[position].1 = summary,
            None => {
                self.positions.insert(key, self.entries.len());
                self.entries.push((key, summary));
            }
        }
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &LoopSummary> {
        self.entries.iter().map(|(_, summary)| summary)
    }

    /// Each loop's node key with its summary.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (u64, &LoopSummary)> {
        self.entries.iter().map(|(key, summary)| (*key, summary))
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut LoopSummary> {
        self.entries.iter_mut().map(|(_, summary)| summary)
    }

    /// Inserts every summary of `other`.
    pub(crate) fn extend(&mut self, other: LoopSummaries) {
        for (key, summary) in other.entries {
            self.insert(key, summary);
        }
    }

    /// Renames every key by `key` (the reusing pre-pass's shift).
    pub(crate) fn rekey(&mut self, key: impl Fn(u64) -> u64) {
        let entries = std::mem::take(&mut self.entries);
        self.positions.clear();
        for (old, summary) in entries {
            self.insert(key(old), summary);
        }
    }
}

/// The pre-pass result: summaries by function definition and loop, and file facts. Nodes are
/// named by [`node_key`] (start and kind), which, unlike node ids, can be computed for a
/// statement's part of the pre-pass once and shifted when edits elsewhere move it
/// ([`build_reusing`]).
#[derive(Debug, Default, Clone)]
pub(crate) struct Summaries {
    pub functions: Vec<FunctionSummary>,
    /// Function definition node key → index into `functions`.
    pub by_node: HashMap<u64, usize>,
    /// Loop node key → its summary.
    pub loops: LoopSummaries,
    pub file: FileFacts,
    /// Names passed to `torch.compile(f)` / `torch_xla.compile(f)`.
    pub compiled_names: StringSet,
    /// Names of functions passed to `xm.add_step_closure(f)`: they run after the step.
    pub step_closures: StringSet,
    /// Blocks (and classes) that call or import a CUDA-only package (`torch_api::CUDA_ONLY_PACKAGES`)
    /// unconditionally within them: whenever they run, they need a CUDA GPU. A class counts when
    /// its `__init__` body does, or when that body raises without CUDA
    /// (`if not torch.cuda.is_available(): raise …`): no instance exists without CUDA.
    pub cuda_library_scopes: crate::hash::KeySet,
    /// Attributes every non-`None` value of which needs CUDA: each `self.<name> = value` in the
    /// file assigns a `torch.cuda.*` object (`torch.cuda.Stream()`), a choice between such an
    /// object and `None` (`torch.cuda.Stream() if self.device.type == "cuda" else None`), or
    /// assigns in CUDA-only code. `if self.<name> is not None:` runs only with CUDA. Values
    /// assigned in other files are not seen. Computed by `finish`.
    pub cuda_attributes: StringSet,
    /// `torch.cuda.device_count()` calls (node keys) bound to a name of a function that is only
    /// ever compared (`n = torch.cuda.device_count()` … `if device >= n:`): the count only asks
    /// whether (or how many) GPUs exist, and 0 is the right answer on a TPU machine.
    pub compared_counts: crate::hash::KeySet,
    /// Per `self.<name> = value` (value not `None`): the name and whether the value needs CUDA.
    attribute_values: Vec<(String, bool)>,
    /// Attributes that switch a CUDA-only mode on: set to `True` (`self.model_parallel = True`)
    /// only by methods that place the model on CUDA devices unconditionally
    /// (`torch.cuda.device_count()`, `torch.cuda.set_device(...)`). `if self.model_parallel:`
    /// runs only with CUDA, and so do those methods.
    pub cuda_mode_flags: StringSet,
    /// Per function (by index): attributes it sets to `True`, whether it calls a `torch.cuda`
    /// device API in its own body (not under a branch), and its body block.
    flag_sets: Vec<(usize, String)>,
    /// A list, not a set: few functions call device APIs, and one hash-set type fewer keeps the
    /// WebAssembly module within its size guard.
    cuda_device_functions: Vec<usize>,
    /// Per function (by index), the key of its body block (0 before it is met: a key always has
    /// a kind). A list beside `functions` rather than a map: one hash-map type fewer in the
    /// WebAssembly module.
    body_blocks: Vec<u64>,
    /// Functions every call of which in this file runs only with CUDA (`if
    /// torch.cuda.is_available(): f()`, `not torch.cuda.is_available() or not f()`, or a call from
    /// such a function or from one whose body uses a CUDA-only package): their bodies are
    /// CUDA-only scope (their block keys are in `cuda_library_scopes`). Callers in other files
    /// are not seen. Computed by `finish` over the whole file.
    pub cuda_only_callees: StringSet,
    /// Each block's guard (`guards::block_guard`) by block key, in walk order: worked out by the
    /// pre-pass, which needs it for its own scopes, and read again by the traversal's
    /// `SemanticModel::enter_block`, which would otherwise repeat the device tests. A list
    /// searched by key rather than a map: one hash-map type fewer in the WebAssembly module.
    block_guards: Vec<(u64, guards::BlockGuard)>,
    /// `if` / `elif` statements (node keys) whose condition is a throttle: a modulo
    /// (`step % 100 == 0`), a name bound to one in the same function (`skip = step % every != 0`),
    /// or a test of the innermost loop's counter against a constant (`if i == 0:`).
    pub throttles: crate::hash::KeySet,
    /// Throttles that exit early (`if skip: return` / `continue`, no `else`): the rest of their
    /// block runs once every N steps.
    pub throttle_exits: crate::hash::KeySet,
    /// Bodies (block keys) of functions that run the same callee on CUDA and on a TPU
    /// (`bench(fn, device="cuda")` and `bench(fn, device="xla")`): a cross-backend comparison,
    /// whose CUDA side is deliberate. Computed by `finish`.
    pub comparison_scopes: crate::hash::KeySet,
    /// Names called only from methods of host data transforms (classes whose `__call__` takes a
    /// `PIL.Image.Image` / `numpy.ndarray`), at least once: a class of this file by such a name
    /// (`self.core = _ResizeModule(...)` in the transform's `__init__`) is a component of the
    /// transform and runs on the host, even when it is an `nn.Module`. Computed by `finish`.
    pub host_transform_components: StringSet,
    /// Per call of a name (a possible function of this file): the callee, the calling function
    /// (by index), whether the call runs only with CUDA, and whether it is throttled.
    call_sites: Vec<CallSite>,
    /// Names bound to a modulo, per function (by index; `None` at module level); used while a
    /// statement is walked. A list: such names are few (searching it is cheap), and a hash set of
    /// this key type would cost the WebAssembly module room.
    throttle_names: Vec<(Option<usize>, String)>,
    /// Per function (by index), callee text and hardware of a `device="cuda"` / `device="xla"`
    /// literal passed to it (for `comparison_scopes`).
    device_literal_calls: Vec<(usize, String, guards::Hardware)>,
    /// Names passed as call arguments (`DataLoader(ds, collate_fn=collate)`, `map(f, xs)`):
    /// functions of this file by those names may run any number of times.
    passed_names: StringSet,
    /// Per name binding met in a function (assignments, `for` targets), while a statement is
    /// walked: the function (by index), the name's range, where the binding takes effect, and
    /// whether the value is visibly placed on a device. A list: it is searched only at device
    /// moves of a plain name.
    bound_names: Vec<(usize, usize, usize, usize, bool)>,
    /// Calls that keep a module's parameters (`torch.optim.AdamW(model.parameters())`,
    /// `EMA(model.named_parameters())`): the function (by index; `None` at module level), the
    /// module's text (`model`, `self.model`) and the call's range.
    parameter_captures: Vec<(Option<usize>, String, TextRange)>,
    /// Device moves of a named module or attribute (`model.to(device)`): the function, the
    /// receiver's text, where the call starts and its node key.
    module_moves: Vec<(Option<usize>, String, usize, u64)>,
    /// Optimizer steps (`optimizer.step()`, `scaler.step(optimizer)`, `xm.optimizer_step(o)`):
    /// the function, where the call starts, and the outermost loop of that function around it
    /// (the whole loop runs the step again after anything in it).
    optimizer_steps: Vec<(Option<usize>, usize, Option<TextRange>)>,
    /// Moves (call keys) of a module whose parameters an earlier call of the same function kept,
    /// with no such call after the move, and the range of the last earlier one: on an XLA
    /// device the move makes new parameter objects, and the optimizer keeps the old ones.
    /// Computed by `finish`.
    pub stale_parameter_moves: Vec<(u64, TextRange)>,
    /// The calls and name bindings whose values flow to parameters (`passed.rs`).
    passed: PassedSites,
    /// Per function (by index), per parameter (`parameters`' positions): what every call of it
    /// in the file passes, when they agree (`passed.rs`): one flat list, function after
    /// function (`passed::parameter_starts`). Computed by `finish`.
    pub parameter_facts: Vec<Option<PassedFact>>,
}

/// One call of a name in the file (see `Summaries::call_sites`).
#[derive(Debug, Clone)]
struct CallSite {
    callee: String,
    /// How the call names its callee: which functions of that name it can reach.
    form: CalleeForm,
    caller: Option<usize>,
    cuda_only: bool,
    throttled: bool,
    /// Under a loop, comprehension, lambda or class body between the call and its function
    /// (or the module): it may run many times per run of its caller.
    repeated: bool,
}

/// How a call names its callee, for reach through the call graph (which joins by name).
#[derive(Debug, Clone, PartialEq, Eq)]
enum CalleeForm {
    /// `helper(...)`: any function of that name.
    Bare,
    /// `self.helper(...)` / `cls.helper(...)`: a method, never a module-level function
    /// (`self.main(z)` calls the `nn.Sequential` attribute `main`, not the script's `main()`).
    OnSelf,
    /// `obj.helper(...)` on another object: a method, and not one of the caller's own class
    /// (`self.model.train()` in a trainer's method switches the model to training mode; it does
    /// not run the trainer's `train`), nor, for `nn.Module`'s mode switches
    /// (`torch_api::MODULE_MODE_SWITCHES`), another class's: `self.transformer.train()` in one
    /// trainer's step does not run a second trainer's training loop.
    OnOther { caller_class: Option<String> },
}

impl CalleeForm {
    fn can_reach(&self, function: &FunctionSummary) -> bool {
        match self {
            CalleeForm::Bare => true,
            CalleeForm::OnSelf => function.class_name.is_some(),
            CalleeForm::OnOther { caller_class } => {
                function.class_name.is_some()
                    && function.class_name != *caller_class
                    && !crate::torch_api::MODULE_MODE_SWITCHES.contains(&function.name.as_str())
            }
        }
    }
}

/// Names a node of the tree by its start and kind: unique among the nodes the summaries name
/// (definitions, loops, blocks: two nodes that start at the same byte differ in kind), and
/// shifted with the node's statement by adding `offset << 16`.
pub(crate) fn node_key(node: Node<'_>) -> u64 {
    ((node.start_byte() as u64) << 16) | u64::from(node.kind_id())
}

impl Summaries {
    /// The guard of `block` as the pre-pass worked it out, if it walked the block.
    pub(crate) fn block_guard(&self, block: Node<'_>) -> Option<guards::BlockGuard> {
        let key = node_key(block);
        let position = self
            .block_guards
            .binary_search_by_key(&key, |(block, _)| *block)
            .ok()?;
        Some(self.block_guards[position].1)
    }

    /// The summary index of a function definition.
    pub(crate) fn function_index(&self, definition: Node<'_>) -> Option<usize> {
        self.by_node.get(&node_key(definition)).copied()
    }

    /// Whether `module` (a name or attribute's text) is moved to a device in place, by a call
    /// `module.to(device)` of the function `function` (by index; `None` at module level) that
    /// starts inside `within`: `nn.Module.to` moves the module it is called on.
    pub(crate) fn module_moved_within(
        &self,
        function: Option<usize>,
        module: &str,
        within: std::ops::Range<usize>,
    ) -> bool {
        self.module_moves.iter().any(|(moved_in, moved, at, _)| {
            *moved_in == function && moved == module && within.contains(at)
        })
    }

    pub(crate) fn loop_summary(&self, loop_node: Node<'_>) -> Option<&LoopSummary> {
        self.loops.get(&node_key(loop_node))
    }

    /// The key of a function's body block (see `body_blocks`).
    fn body_block(&self, index: usize) -> Option<u64> {
        self.body_blocks
            .get(index)
            .copied()
            .filter(|block| *block != 0)
    }

    /// Whether a block or class needs CUDA whenever it runs (see `cuda_library_scopes`).
    pub(crate) fn needs_cuda_library(&self, node: Node<'_>) -> bool {
        self.cuda_library_scopes.contains(&node_key(node))
    }
}

/// How the pre-pass names a call target: its qualified name through the module's imports.
pub(crate) trait Resolver {
    fn resolve(&self, expr: Node<'_>) -> Option<String>;
}

const SYNC_CALLS: WordList = word_list![
    "torch_xla.sync",
    "torch_xla.step",
    "torch_xla.core.xla_model.mark_step",
    "torch_xla.core.xla_model.optimizer_step",
];

enum Frame {
    Function(usize),
    Loop {
        /// The loop's [`node_key`].
        id: u64,
        summary: LoopSummary,
        over_loader: bool,
    },
    /// The body of `if step % N == 0:` (or of `if i == 0:`, `exits: false`): calls there run once
    /// every N steps; when `exits`, an early exit there makes the rest of its block throttled.
    Throttle {
        exits: bool,
    },
    /// A block (for the innermost block around a call of a CUDA-only package); `throttled` once
    /// an early exit on a throttle (`if step % n != 0: return`) has run in it.
    Block {
        throttled: bool,
    },
    Other,
}

/// A named node of the tree below the root, in the pre-order of a cursor walk.
#[derive(Clone, Copy)]
pub(crate) struct WalkStep<'t> {
    pub(crate) node: Node<'t>,
    /// The depth among named nodes (a top-level statement is at 1, the root at 0).
    pub(crate) depth: u32,
    /// `node.kind_id()`.
    pub(crate) kind: u16,
}

/// Walks the whole tree once (iteratively) and builds the summaries. With `record`, also every
/// named node below the root in walk order (see [`WalkStep`]), which the checker's traversal
/// replays instead of walking the tree again.
pub(crate) fn build<'t>(
    tree: &'t Tree,
    source: &str,
    resolver: &impl Resolver,
    mut record: Option<&mut Vec<WalkStep<'t>>>,
) -> Summaries {
    // `build_reusing` without a cache, written out so that a full check does not link the
    // caches' code (the WebAssembly playground's size budget).
    let mut summaries = Summaries::default();
    let mut loop_roots: Vec<String> = Vec::new();
    let mut compiled_decorator = false;
    let root = tree.root_node();
    for statement in root.named_nodes() {
        compiled_decorator = walk_uncached(
            statement,
            source,
            resolver,
            compiled_decorator,
            &mut summaries,
            &mut loop_roots,
            record.as_deref_mut(),
        );
    }
    finish(&mut summaries, loop_roots);
    summaries
}

/// Walks a statement whose part is not kept (keys and offsets stay absolute) and merges it;
/// returns the decorator flag for the next statement.
fn walk_uncached<'t>(
    statement: Node<'t>,
    source: &str,
    resolver: &impl Resolver,
    compiled_decorator: bool,
    summaries: &mut Summaries,
    loop_roots: &mut Vec<String>,
    record: Option<&mut Vec<WalkStep<'t>>>,
) -> bool {
    let part = walk_statement(
        statement,
        source,
        resolver,
        compiled_decorator,
        record,
        None,
        Around::default(),
    );
    append(summaries, loop_roots, part.summaries, part.loop_roots);
    part.compiled_decorator
}

/// One top-level statement's part of the pre-pass: its summaries, with node keys and offsets
/// relative to the statement's start and function indices local to it, and the loop roots it
/// adds. It follows from the statement's kind and text, the module's imports (calls are
/// resolved through them) and [`StatementPart::compiled_decorator`] of the statement before.
#[derive(Debug, Clone, Default)]
pub(crate) struct StatementPart {
    summaries: Summaries,
    loop_roots: Vec<String>,
    /// A compiling decorator that no function definition took yet (`@torch.compile` on a
    /// class without methods): the next function definition takes it.
    compiled_decorator: bool,
    /// Nothing to merge: no summary, fact, site or loop root (most comments, imports and
    /// docstrings; [`Summaries::is_empty`]). The reusing pre-pass skips merging it.
    empty: bool,
    /// The keys of its methods' parts ([`MethodParts`]), carried to the next cache when the
    /// statement's part is reused whole.
    methods: Vec<u64>,
}

/// The statement parts of a pre-pass, for the next pre-pass of the same document to reuse
/// (`crate::incremental`): by statement kind, text and incoming decorator flag, valid for one
/// set of module imports.
#[derive(Debug, Clone, Default)]
pub(crate) struct SummaryCache {
    imports: u64,
    parts: HashMap<u64, Arc<StatementPart>>,
    /// Each statement's import records (`ModuleImports::statement_records`), by kind and text.
    pub(crate) import_parts: HashMap<u64, Arc<Vec<super::ImportRecord>>>,
    /// The import records of top-level classes' methods, by their key
    /// (`ModuleImports::statement_records_reusing`).
    pub(crate) method_import_parts: HashMap<u64, Arc<Vec<super::ImportRecord>>>,
    /// The parts of top-level classes' methods, by [`method_key`].
    method_parts: HashMap<u64, Arc<StatementPart>>,
}

/// The methods' parts a reusing pre-pass finds and keeps while it walks a top-level class
/// again: a keystroke inside one method of a big class walks that method, not the class.
struct MethodParts<'c> {
    caches: &'c [&'c &'c SummaryCache],
    kept: &'c mut HashMap<u64, Arc<StatementPart>>,
    /// The keys met in the statement being walked, in order.
    keys: Vec<u64>,
}

/// The named ancestors, hardware scopes and frames around a walk's first node (a method's, when
/// [`MethodParts`] walks it apart from its class).
#[derive(Default)]
struct Around<'t> {
    ancestors: Vec<Node<'t>>,
    scopes: Vec<(usize, HardwareScope)>,
    stack: Vec<(usize, Frame)>,
}

/// The cache key of a method's part, when `node` is a function defined directly in the body of
/// a top-level class (decorated or not) with nothing around it but the class and its body
/// block. Its part then follows from its text with its decorators (`definition_scope`, the
/// compiling decorator), the class's header (decorators, name and bases: `defining_class`,
/// `derives_from_optimizer`), the hardware scope where it starts, the incoming decorator flag
/// and the module's imports (the cache's): nothing in a method's walk reads its sibling
/// methods (the per-function names it keeps are its own functions').
fn method_key(
    node: Node<'_>,
    ancestors: &[Node<'_>],
    scopes: &[(usize, HardwareScope)],
    stack: &[(usize, Frame)],
    compiled_decorator: bool,
    source: &str,
) -> Option<MethodKey> {
    if node.is_not(kind::FUNCTION_DEFINITION) {
        return None;
    }
    let &[
        (class_frame, Frame::Other),
        (block_frame, Frame::Block { throttled: false }),
    ] = stack
    else {
        return None;
    };
    let (unit, rest) = match ancestors.split_last() {
        Some((last, before)) if last.is(kind::DECORATED_DEFINITION) => (*last, before),
        _ => (node, ancestors),
    };
    let [outside @ .., class, block] = rest else {
        return None;
    };
    let statement = match outside {
        [] => class,
        [decorated] if decorated.is(kind::DECORATED_DEFINITION) => decorated,
        _ => return None,
    };
    if class.is_not(kind::CLASS_DEFINITION) || block.is_not(kind::BLOCK) {
        return None;
    }
    let outer = scopes.last().map(|(_, scope)| *scope).unwrap_or_default();
    let text = crate::hash::text_key(unit.kind_id(), node_text(unit, source), compiled_decorator);
    let header = &source[statement.start_byte()..block.start_byte()];
    Some(MethodKey {
        key: crate::hash::digest((text, header, outer)),
        class: class_frame,
        block: block_frame,
    })
}

/// A method [`method_key`] accepts: its key, and the node ids of the two frames around it, the
/// class's ([`Frame::Other`]) and its body block's ([`Frame::Block`], not throttled), the only
/// frames a method is keyed under and the ones a walk of the method apart starts with.
struct MethodKey {
    key: u64,
    class: usize,
    block: usize,
}

/// Appends the named nodes of `node`'s subtree in walk order ([`WalkStep`]), `node` at `depth`:
/// a method whose part was reused is not walked by the pre-pass, but the traversal replays it.
/// Each node's named children are taken from its own [`NamedNodes`](syntax::NamedNodes), as
/// the walk does: a tree cursor would step over every anonymous token too, and its sibling
/// steps through a long body's hidden repetition nodes cost hundreds of instructions each.
fn record_subtree<'t>(node: Node<'t>, depth: u32, record: &mut Vec<WalkStep<'t>>) {
    // The children still to record of each node entered, outermost first.
    let mut frames: Vec<syntax::NamedNodes<'t>> = Vec::with_capacity(32);
    let mut current = node;
    loop {
        record.push(WalkStep {
            node: current,
            depth: depth + frames.len() as u32,
            kind: current.kind_id(),
        });
        frames.push(current.named_nodes());
        loop {
            let Some(frame) = frames.last_mut() else {
                return;
            };
            if let Some(child) = frame.next() {
                current = child;
                break;
            }
            frames.pop();
        }
    }
}

/// [`build`], reusing the parts of `caches` built under the same `imports` digest (the
/// resolver's module bindings) for statements of equal text; returns the parts for the next
/// build when `keep`. The result equals [`build`]'s: a top-level statement's part of the walk
/// depends on nothing outside it but the resolver and the decorator flag. `statements`: the
/// root's named children.
///
/// With `walks`, the named nodes of each statement walked here (its part not reused) are kept
/// in walk order ([`StatementWalks`]): the incremental traversal replays them instead of
/// walking that statement's subtree a second time.
pub(crate) fn build_reusing<'t>(
    statements: &[Node<'t>],
    source: &str,
    resolver: &impl Resolver,
    imports: u64,
    caches: &[&SummaryCache],
    keep: bool,
    mut walks: Option<&mut StatementWalks<'t>>,
) -> (Summaries, Option<SummaryCache>) {
    let mut summaries = Summaries::default();
    let mut loop_roots: Vec<String> = Vec::new();
    let mut compiled_decorator = false;
    let mut kept = keep.then(|| SummaryCache {
        imports,
        parts: HashMap::default(),
        import_parts: HashMap::default(),
        method_import_parts: HashMap::default(),
        method_parts: HashMap::default(),
    });
    let mut method_parts: HashMap<u64, Arc<StatementPart>> = HashMap::default();
    let caches: Vec<&&SummaryCache> = caches.iter().filter(|c| c.imports == imports).collect();
    // The root itself is no function, loop or block: the walk of each statement starts empty.
    if let Some(walks) = walks.as_deref_mut() {
        walks.steps.clear();
        walks.ranges.clear();
        walks.ranges.resize(statements.len(), 0..0);
    }
    for (index, &statement) in statements.iter().enumerate() {
        let base = statement.start_byte();
        let first_step = walks.as_ref().map_or(0, |walks| walks.steps.len());
        // Statements with syntax errors are always walked again (their parse depends on more
        // than their text).
        let key = (keep && !statement.has_error()).then(|| {
            crate::hash::text_key(
                statement.kind_id(),
                node_text(statement, source),
                compiled_decorator,
            )
        });
        match key {
            Some(key) => {
                let part = caches
                    .iter()
                    .find_map(|cache| cache.parts.get(&key).cloned())
                    .unwrap_or_else(|| {
                        let mut methods = MethodParts {
                            caches: &caches,
                            kept: &mut method_parts,
                            keys: Vec::new(),
                        };
                        let mut part = walk_statement(
                            statement,
                            source,
                            resolver,
                            compiled_decorator,
                            walks.as_deref_mut().map(|walks| &mut walks.steps),
                            Some(&mut methods),
                            Around::default(),
                        );
                        part.methods = methods.keys;
                        shift(&mut part.summaries, base, false);
                        part.empty = part.loop_roots.is_empty() && part.summaries.is_empty();
                        Arc::new(part)
                    });
                compiled_decorator = part.compiled_decorator;
                // A class reused whole keeps its methods' parts for the next keystroke in it.
                for key in &part.methods {
                    if !method_parts.contains_key(key)
                        && let Some(method) =
                            caches.iter().find_map(|cache| cache.method_parts.get(key))
                    {
                        method_parts.insert(*key, method.clone());
                    }
                }
                // Merging an empty part changes nothing; cloning, shifting and appending its
                // thirty empty fields costs, at every statement of every keystroke.
                if !part.empty {
                    merge(&mut summaries, &mut loop_roots, &part, base);
                }
                if let Some(kept) = &mut kept {
                    kept.parts.insert(key, part);
                }
            }
            None => {
                compiled_decorator = walk_uncached(
                    statement,
                    source,
                    resolver,
                    compiled_decorator,
                    &mut summaries,
                    &mut loop_roots,
                    walks.as_deref_mut().map(|walks| &mut walks.steps),
                );
            }
        }
        if let Some(walks) = walks.as_deref_mut() {
            let end = walks.steps.len();
            if let Some(range) = walks.ranges.get_mut(index) {
                *range = first_step..end;
            }
        }
    }
    finish(&mut summaries, loop_roots);
    if let Some(kept) = &mut kept {
        kept.method_parts = method_parts;
    }
    (summaries, kept)
}

/// The walks of the top-level statements a reusing pre-pass walked ([`build_reusing`]): each
/// one's named nodes in walk order, the statement itself first at depth 1 ([`WalkStep`]).
#[derive(Default)]
pub(crate) struct StatementWalks<'t> {
    steps: Vec<WalkStep<'t>>,
    /// By statement index, its steps in `steps`; empty when its part was reused (not walked).
    ranges: Vec<std::ops::Range<usize>>,
}

impl<'t> StatementWalks<'t> {
    /// The steps of the statement at `index` (among the root's named children), if the pre-pass
    /// walked it.
    pub(crate) fn of(&self, index: usize) -> Option<&[WalkStep<'t>]> {
        let range = self.ranges.get(index)?.clone();
        if range.is_empty() {
            return None;
        }
        self.steps.get(range)
    }
}

/// The pre-pass over one top-level statement (iteratively); keys and offsets are absolute.
/// With `record`, appends each named node of the statement with its depth ([`WalkStep`]).
/// With `methods`, a class's methods' parts are reused or kept ([`MethodParts`]). `around`:
/// what surrounds `statement` (nothing for a top-level statement).
fn walk_statement<'t>(
    statement: Node<'t>,
    source: &str,
    resolver: &impl Resolver,
    mut compiled_decorator: bool,
    mut record: Option<&mut Vec<WalkStep<'t>>>,
    mut methods: Option<&mut MethodParts<'_>>,
    around: Around<'t>,
) -> StatementPart {
    let mut summaries = Summaries::default();
    let mut loop_roots: Vec<String> = Vec::new();
    // (node id, frame) for every function and loop around the walk; the named ancestors of
    // the walk's node, and the hardware scope of each block and definition around it (the same
    // guards the traversal applies), to know which calls run only with CUDA. A top-level
    // statement starts at module level with no guard around it.
    let Around {
        mut ancestors,
        mut scopes,
        mut stack,
    } = around;
    // `compiled_decorator`: set by a `decorated_definition` whose decorators compile; taken by
    // its definition.
    //
    // The walk goes over the named nodes only (all it looks at), each node's named children
    // taken from its own [`NamedNodes`](syntax::NamedNodes): by index for a node with few, which
    // skips the anonymous tokens and costs a fraction of a tree cursor's steps (see there).
    // `frames` holds the children still to walk of each entered node, outermost first.
    let mut frames: Vec<syntax::NamedNodes<'t>> = Vec::with_capacity(32);
    let mut node = statement;
    'walk: loop {
        let named = node.is_named();
        let method = methods.as_deref_mut().and_then(|methods| {
            let key = method_key(
                node,
                &ancestors,
                &scopes,
                &stack,
                compiled_decorator,
                source,
            )?;
            Some((methods, key))
        });
        // A method walked apart (or its part reused) is done: the walk goes on after it.
        let mut done = false;
        if let Some((methods, MethodKey { key, class, block })) = method {
            done = true;
            let base = node.start_byte();
            let depth = ancestors.len() as u32 + 1;
            let found = methods
                .caches
                .iter()
                .find_map(|cache| cache.method_parts.get(&key).cloned());
            let part = match found {
                Some(part) => {
                    if let Some(record) = record.as_deref_mut() {
                        record_subtree(node, depth, record);
                    }
                    Some(part)
                }
                None => {
                    let around = Around {
                        ancestors: ancestors.clone(),
                        scopes: scopes.clone(),
                        stack: vec![
                            (class, Frame::Other),
                            (block, Frame::Block { throttled: false }),
                        ],
                    };
                    let mut part = walk_statement(
                        node,
                        source,
                        resolver,
                        compiled_decorator,
                        record.as_deref_mut(),
                        None,
                        around,
                    );
                    // `__init__` raising without CUDA marks its class (`class_requiring_cuda`),
                    // outside the method: such a part is merged as walked, not kept.
                    let base_key = (base as u64) << 16;
                    if part
                        .summaries
                        .cuda_library_scopes
                        .iter()
                        .any(|&scope| scope < base_key)
                    {
                        compiled_decorator = part.compiled_decorator;
                        append(
                            &mut summaries,
                            &mut loop_roots,
                            part.summaries,
                            part.loop_roots,
                        );
                        None
                    } else {
                        shift(&mut part.summaries, base, false);
                        Some(Arc::new(part))
                    }
                }
            };
            if let Some(part) = part {
                compiled_decorator = part.compiled_decorator;
                merge(&mut summaries, &mut loop_roots, &part, base);
                methods.keys.push(key);
                methods.kept.insert(key, part);
            }
        }
        if !done && named {
            ancestors.push(node);
            // Asked of tree-sitter once per node (each `kind_name` is a call into it).
            let kind_id = node.kind_id();
            let kind = syntax::kind_name_with_id(node, kind_id);
            let key = syntax::kind_key_of_id(kind_id);
            if let Some(record) = record.as_deref_mut() {
                record.push(WalkStep {
                    node,
                    depth: ancestors.len() as u32,
                    kind: kind_id,
                });
            }
            let outer = scopes.last().map(|(_, scope)| *scope).unwrap_or_default();
            match key {
                kind::BLOCK => {
                    let count = ancestors.len();
                    if let Some(parent) = count.checked_sub(2).map(|i| ancestors[i]) {
                        let grandparent = count.checked_sub(3).map(|i| ancestors[i]);
                        let guard = guards::block_guard(node, parent, grandparent, source);
                        summaries.block_guards.push((node_key(node), guard));
                        scopes.push((node.id(), guard.apply(outer)));
                    }
                }
                kind::FUNCTION_DEFINITION | kind::CLASS_DEFINITION => {
                    let decorated = ancestors
                        .len()
                        .checked_sub(2)
                        .map(|i| ancestors[i])
                        .filter(|p| p.is(kind::DECORATED_DEFINITION));
                    let scope = guards::definition_scope(outer, node, decorated, source);
                    scopes.push((node.id(), scope));
                }
                _ => {}
            }
            // For a call: whether it runs only with CUDA; for an assignment: whether its block does.
            let cuda_only = match key {
                kind::CALL => {
                    outer.never_on_tpu
                        || guards::expression_never_on_tpu(
                            node,
                            &ancestors[..ancestors.len().saturating_sub(1)],
                            source,
                        )
                }
                kind::ASSIGNMENT => outer.never_on_tpu,
                _ => false,
            };
            if kind == "decorated_definition" {
                compiled_decorator = compiles(node, resolver);
            } else if kind == "function_definition" {
                let compiled = std::mem::take(&mut compiled_decorator);
                enter(
                    node,
                    kind,
                    source,
                    resolver,
                    &mut summaries,
                    &mut stack,
                    false,
                    &ancestors,
                );
                if let Some(function) = summaries.functions.last_mut() {
                    function.compiled = compiled;
                }
            } else {
                enter(
                    node,
                    kind,
                    source,
                    resolver,
                    &mut summaries,
                    &mut stack,
                    cuda_only,
                    &ancestors,
                );
            }
        }
        // A node walked apart is left at once; another after its children.
        let mut leaving = None;
        if done {
            leaving = Some(node);
        } else {
            frames.push(node.named_nodes());
        }
        loop {
            if let Some(leaving) = leaving.take()
                && leaving.is_named()
            {
                if ancestors.last().is_some_and(|a| a.id() == leaving.id()) {
                    ancestors.pop();
                }
                if scopes.last().is_some_and(|(id, _)| *id == leaving.id()) {
                    scopes.pop();
                }
                let key = leaving.kind_key();
                if key == kind::IF_STATEMENT
                    && let Some(test) = guards::after_early_exit(leaving, source)
                    && let Some((_, scope)) = scopes.last_mut()
                {
                    guards::apply_exit(scope, test);
                }
                if key == kind::ASSERT_STATEMENT
                    && let Some(test) = guards::after_assert(leaving, source)
                    && let Some((_, scope)) = scopes.last_mut()
                {
                    guards::apply_exit(scope, test);
                }
                if stack.last().is_some_and(|(id, _)| *id == leaving.id()) {
                    leave(
                        &mut summaries,
                        &mut stack,
                        &mut loop_roots,
                        leaving,
                        source,
                        resolver,
                    );
                }
            }
            let Some(frame) = frames.last_mut() else {
                return StatementPart {
                    summaries,
                    loop_roots,
                    compiled_decorator,
                    // Decided where a part is kept (`build_reusing`).
                    empty: false,
                    methods: Vec::new(),
                };
            };
            if let Some(child) = frame.next() {
                node = child;
                continue 'walk;
            }
            leaving = Some(frame.parent());
            frames.pop();
        }
    }
}

impl Summaries {
    /// Whether every field is empty (as [`Summaries::default`]): merging it into a file's
    /// summaries would change nothing.
    fn is_empty(&self) -> bool {
        let Summaries {
            functions,
            by_node,
            loops,
            file,
            compiled_names,
            step_closures,
            cuda_library_scopes,
            cuda_mode_flags,
            cuda_attributes,
            compared_counts,
            attribute_values,
            flag_sets,
            cuda_device_functions,
            body_blocks,
            cuda_only_callees,
            block_guards,
            throttles,
            throttle_exits,
            comparison_scopes,
            host_transform_components,
            call_sites,
            throttle_names,
            device_literal_calls,
            passed_names,
            bound_names,
            parameter_captures,
            module_moves,
            optimizer_steps,
            stale_parameter_moves,
            passed,
            parameter_facts,
        } = self;
        functions.is_empty()
            && by_node.is_empty()
            && loops.entries().next().is_none()
            && *file == FileFacts::default()
            && compiled_names.is_empty()
            && step_closures.is_empty()
            && cuda_library_scopes.is_empty()
            && cuda_mode_flags.is_empty()
            && cuda_attributes.is_empty()
            && compared_counts.is_empty()
            && attribute_values.is_empty()
            && flag_sets.is_empty()
            && cuda_device_functions.is_empty()
            && body_blocks.is_empty()
            && cuda_only_callees.is_empty()
            && block_guards.is_empty()
            && throttles.is_empty()
            && throttle_exits.is_empty()
            && comparison_scopes.is_empty()
            && host_transform_components.is_empty()
            && call_sites.is_empty()
            && throttle_names.is_empty()
            && device_literal_calls.is_empty()
            && passed_names.is_empty()
            && bound_names.is_empty()
            && parameter_captures.is_empty()
            && module_moves.is_empty()
            && optimizer_steps.is_empty()
            && stale_parameter_moves.is_empty()
            && passed.is_empty()
            && parameter_facts.is_empty()
    }
}

/// Moves the node keys and offsets of `summaries` by `base` bytes (back when `forward` is
/// false).
fn shift(summaries: &mut Summaries, base: usize, forward: bool) {
    if base == 0 {
        return;
    }
    let offset = |value: usize| {
        if forward { value + base } else { value - base }
    };
    let key = |value: u64| {
        let moved = (base as u64) << 16;
        if forward {
            value + moved
        } else {
            value - moved
        }
    };
    let Summaries {
        functions,
        by_node,
        loops,
        file,
        compiled_names: _,
        step_closures: _,
        cuda_library_scopes,
        cuda_mode_flags: _,
        cuda_attributes: _,
        compared_counts,
        attribute_values: _,
        flag_sets: _,
        cuda_device_functions: _,
        body_blocks,
        cuda_only_callees: _,
        block_guards,
        throttles,
        throttle_exits,
        comparison_scopes,
        host_transform_components: _,
        call_sites: _,
        throttle_names: _,
        device_literal_calls: _,
        passed_names: _,
        bound_names: _,
        parameter_captures,
        module_moves,
        optimizer_steps,
        stale_parameter_moves,
        passed,
        parameter_facts: _,
    } = summaries;
    passed.shift(base, forward);
    for (_, _, range) in parameter_captures.iter_mut() {
        *range = offset(range.start)..offset(range.end);
    }
    for (_, _, at, call) in module_moves.iter_mut() {
        *at = offset(*at);
        *call = key(*call);
    }
    for (_, at, outer_loop) in optimizer_steps.iter_mut() {
        *at = offset(*at);
        if let Some(range) = outer_loop {
            *range = offset(range.start)..offset(range.end);
        }
    }
    for (call, capture) in stale_parameter_moves.iter_mut() {
        *call = key(*call);
        *capture = offset(capture.start)..offset(capture.end);
    }
    for function in functions.iter_mut() {
        function.first_save = function.first_save.map(offset);
        for (_, range) in function.host_until_moved.iter_mut() {
            *range = offset(range.start)..offset(range.end);
        }
    }
    *by_node = by_node.drain().map(|(k, v)| (key(k), v)).collect();
    loops.rekey(key);
    *cuda_library_scopes = cuda_library_scopes.drain().map(key).collect();
    for (block, _) in block_guards.iter_mut() {
        *block = key(*block);
    }
    *throttles = throttles.drain().map(key).collect();
    *throttle_exits = throttle_exits.drain().map(key).collect();
    *comparison_scopes = comparison_scopes.drain().map(key).collect();
    *compared_counts = compared_counts.drain().map(key).collect();
    for block in body_blocks.iter_mut().filter(|block| **block != 0) {
        *block = key(*block);
    }
    file.first_module_save = file.first_module_save.map(offset);
    for at in file
        .module_step_markers
        .iter_mut()
        .chain(file.module_loops.iter_mut())
    {
        *at = offset(*at);
    }
}

/// Appends a statement's part (starting at `base`) to the file's summaries, in statement order:
/// [`shift`] forward and [`append`] of a copy of it, done item by item from the cached part
/// (no copy of its maps and lists made, moved and dropped, at every reused statement of every
/// keystroke).
fn merge(
    summaries: &mut Summaries,
    loop_roots: &mut Vec<String>,
    part: &StatementPart,
    base: usize,
) {
    let first = summaries.functions.len();
    let offset = |value: usize| value + base;
    let range = |range: &TextRange| offset(range.start)..offset(range.end);
    let key = |value: u64| value + ((base as u64) << 16);
    let renumber = |function: Option<usize>| function.map(|index| first + index);
    let Summaries {
        functions,
        by_node,
        loops,
        file,
        compiled_names,
        step_closures,
        cuda_library_scopes,
        cuda_mode_flags,
        cuda_attributes,
        compared_counts,
        attribute_values,
        flag_sets,
        cuda_device_functions,
        body_blocks,
        cuda_only_callees,
        block_guards,
        throttles,
        throttle_exits,
        comparison_scopes,
        // Computed by `finish` over the whole file.
        host_transform_components: _,
        call_sites,
        // Needed only while the statement is walked.
        throttle_names: _,
        device_literal_calls,
        passed_names,
        // Needed only while the statement is walked.
        bound_names: _,
        parameter_captures,
        module_moves,
        optimizer_steps,
        // Computed by `finish` over the whole file.
        stale_parameter_moves: _,
        passed,
        // Computed by `finish` over the whole file.
        parameter_facts: _,
    } = &part.summaries;
    summaries.passed.append_shifted(passed, first, base);
    let into = &mut *summaries;
    for (function, module, at) in parameter_captures {
        into.parameter_captures
            .push((renumber(*function), module.clone(), range(at)));
    }
    for (function, module, at, call) in module_moves {
        into.module_moves
            .push((renumber(*function), module.clone(), offset(*at), key(*call)));
    }
    for (function, at, outer_loop) in optimizer_steps {
        into.optimizer_steps.push((
            renumber(*function),
            offset(*at),
            outer_loop.as_ref().map(range),
        ));
    }
    for function in functions {
        let mut function = function.clone();
        function.first_save = function.first_save.map(offset);
        for (_, at) in function.host_until_moved.iter_mut() {
            *at = range(at);
        }
        into.functions.push(function);
    }
    for (k, index) in by_node {
        into.by_node.insert(key(*k), first + index);
    }
    for (k, summary) in loops.entries() {
        into.loops.insert(key(k), summary.clone());
    }
    let FileFacts {
        uses_syncing_loader,
        eager_mode,
        compiles,
        xla_evidence,
        // Computed by `finish` from the functions.
        compiles_optimizer_step: _,
        tpu_evidence,
        first_module_save,
        module_step_markers,
        module_loops,
        saving_functions: _,
        saved_paths,
        collective_calls,
    } = file;
    let facts = &mut into.file;
    facts.uses_syncing_loader |= uses_syncing_loader;
    facts.eager_mode |= eager_mode;
    facts.compiles |= compiles;
    facts.xla_evidence |= xla_evidence;
    facts.tpu_evidence |= tpu_evidence;
    facts.first_module_save = facts.first_module_save.or(first_module_save.map(offset));
    facts
        .module_step_markers
        .extend(module_step_markers.iter().map(|at| offset(*at)));
    facts
        .module_loops
        .extend(module_loops.iter().map(|at| offset(*at)));
    for path in saved_paths {
        if !facts.saved_paths.contains(path) {
            facts.saved_paths.push(path.clone());
        }
    }
    facts
        .collective_calls
        .extend(collective_calls.iter().cloned());
    into.compiled_names.extend(compiled_names.iter().cloned());
    into.step_closures.extend(step_closures.iter().cloned());
    into.cuda_library_scopes
        .extend(cuda_library_scopes.iter().map(|k| key(*k)));
    // Computed by `finish`.
    debug_assert!(cuda_mode_flags.is_empty() && cuda_attributes.is_empty());
    into.attribute_values
        .extend(attribute_values.iter().cloned());
    into.compared_counts
        .extend(compared_counts.iter().map(|k| key(*k)));
    debug_assert!(cuda_only_callees.is_empty() && comparison_scopes.is_empty());
    into.block_guards.extend(
        block_guards
            .iter()
            .map(|(block, guard)| (key(*block), *guard)),
    );
    into.throttles.extend(throttles.iter().map(|k| key(*k)));
    into.throttle_exits
        .extend(throttle_exits.iter().map(|k| key(*k)));
    into.passed_names.extend(passed_names.iter().cloned());
    for site in call_sites {
        into.call_sites.push(CallSite {
            caller: renumber(site.caller),
            ..site.clone()
        });
    }
    for (caller, callee, hardware) in device_literal_calls {
        into.device_literal_calls
            .push((first + caller, callee.clone(), *hardware));
    }
    for (index, flag) in flag_sets {
        into.flag_sets.push((first + index, flag.clone()));
    }
    into.cuda_device_functions
        .extend(cuda_device_functions.iter().map(|index| first + index));
    // One per function, in the order of `functions` (0: not met, not moved).
    into.body_blocks.extend(
        body_blocks
            .iter()
            .map(|block| if *block == 0 { 0 } else { key(*block) }),
    );
    loop_roots.extend(part.loop_roots.iter().cloned());
}

/// Appends a statement's summaries (keys and offsets already absolute) and loop roots.
fn append(
    summaries: &mut Summaries,
    loop_roots: &mut Vec<String>,
    moved: Summaries,
    part_loop_roots: Vec<String>,
) {
    let first = summaries.functions.len();
    let Summaries {
        functions,
        by_node,
        loops,
        file,
        compiled_names,
        step_closures,
        cuda_library_scopes,
        cuda_mode_flags,
        cuda_attributes,
        compared_counts,
        attribute_values,
        flag_sets,
        cuda_device_functions,
        body_blocks,
        cuda_only_callees,
        block_guards,
        throttles,
        throttle_exits,
        comparison_scopes,
        // Computed by `finish` over the whole file.
        host_transform_components: _,
        call_sites,
        // Needed only while the statement is walked.
        throttle_names: _,
        device_literal_calls,
        passed_names,
        // Needed only while the statement is walked.
        bound_names: _,
        parameter_captures,
        module_moves,
        optimizer_steps,
        // Computed by `finish` over the whole file.
        stale_parameter_moves: _,
        passed,
        // Computed by `finish` over the whole file.
        parameter_facts: _,
    } = moved;
    summaries.passed.append(passed, first);
    let renumber = |function: Option<usize>| function.map(|index| first + index);
    summaries.parameter_captures.extend(
        parameter_captures
            .into_iter()
            .map(|(function, module, range)| (renumber(function), module, range)),
    );
    summaries.module_moves.extend(
        module_moves
            .into_iter()
            .map(|(function, module, at, call)| (renumber(function), module, at, call)),
    );
    summaries.optimizer_steps.extend(
        optimizer_steps
            .into_iter()
            .map(|(function, at, outer_loop)| (renumber(function), at, outer_loop)),
    );
    summaries.functions.extend(functions);
    summaries
        .by_node
        .extend(by_node.into_iter().map(|(k, index)| (k, first + index)));
    summaries.loops.extend(loops);
    let FileFacts {
        uses_syncing_loader,
        eager_mode,
        compiles,
        xla_evidence,
        // Computed by `finish` from the functions.
        compiles_optimizer_step: _,
        tpu_evidence,
        first_module_save,
        module_step_markers,
        module_loops,
        saving_functions: _,
        saved_paths,
        collective_calls,
    } = file;
    let into = &mut summaries.file;
    into.uses_syncing_loader |= uses_syncing_loader;
    into.eager_mode |= eager_mode;
    into.compiles |= compiles;
    into.xla_evidence |= xla_evidence;
    into.tpu_evidence |= tpu_evidence;
    into.first_module_save = into.first_module_save.or(first_module_save);
    into.module_step_markers.extend(module_step_markers);
    into.module_loops.extend(module_loops);
    for path in saved_paths {
        if !into.saved_paths.contains(&path) {
            into.saved_paths.push(path);
        }
    }
    into.collective_calls.extend(collective_calls);
    summaries.compiled_names.extend(compiled_names);
    summaries.step_closures.extend(step_closures);
    summaries.cuda_library_scopes.extend(cuda_library_scopes);
    // Computed by `finish`.
    debug_assert!(cuda_mode_flags.is_empty() && cuda_attributes.is_empty());
    summaries.attribute_values.extend(attribute_values);
    summaries.compared_counts.extend(compared_counts);
    debug_assert!(cuda_only_callees.is_empty() && comparison_scopes.is_empty());
    summaries.block_guards.extend(block_guards);
    summaries.throttles.extend(throttles);
    summaries.throttle_exits.extend(throttle_exits);
    summaries.passed_names.extend(passed_names);
    summaries
        .call_sites
        .extend(call_sites.into_iter().map(|site| CallSite {
            caller: site.caller.map(|caller| first + caller),
            ..site
        }));
    summaries.device_literal_calls.extend(
        device_literal_calls
            .into_iter()
            .map(|(caller, callee, hardware)| (first + caller, callee, hardware)),
    );
    summaries.flag_sets.extend(
        flag_sets
            .into_iter()
            .map(|(index, flag)| (first + index, flag)),
    );
    summaries
        .cuda_device_functions
        .extend(cuda_device_functions.into_iter().map(|index| first + index));
    // One per function, in the order of `functions`.
    summaries.body_blocks.extend(body_blocks);
    loop_roots.extend(part_loop_roots);
}

/// `ancestors`: the named nodes from the statement down to `node` (its last element); never
/// `Node::parent`, which is linear in the depth.
/// `kind`: `node.kind_name()`.
#[allow(clippy::too_many_arguments)]
fn enter(
    node: Node<'_>,
    kind: &str,
    source: &str,
    resolver: &impl Resolver,
    summaries: &mut Summaries,
    stack: &mut Vec<(usize, Frame)>,
    cuda_only: bool,
    ancestors: &[Node<'_>],
) {
    if kind == "if_statement"
        && let Some(class) = class_requiring_cuda(node, source, ancestors)
    {
        summaries.cuda_library_scopes.insert(node_key(class));
    }
    match node.kind_key() {
        kind::FUNCTION_DEFINITION => {
            let name = node
                .field("name")
                .map(|n| node_text(n, source))
                .unwrap_or("");
            let index = summaries.functions.len();
            // A function defined in another's body reads that one's names (a closure).
            if let Some(parent) = innermost_function(stack) {
                summaries.passed.record_enclosing(index, parent);
            }
            let class = defining_class(ancestors);
            let class_name = class
                .and_then(|class| class.field("name"))
                .map(|name| node_text(name, source).to_string());
            let takes_host_input =
                name == "__call__" && class_name.is_some() && takes_host_input(node, resolver);
            let optimizer_step = name == "step"
                && class.is_some_and(|class| derives_from_optimizer(class, resolver));
            summaries.functions.push(FunctionSummary {
                name: name.to_string(),
                parameters: parameter_names(node, source),
                class_name,
                takes_host_input,
                optimizer_step,
                true_only_off_tpu: true_only_off_tpu(node, source),
                returns_bucket: returns_bucket(node, source),
                ..FunctionSummary::default()
            });
            summaries.by_node.insert(node_key(node), index);
            summaries.body_blocks.push(0);
            stack.push((node.id(), Frame::Function(index)));
        }
        kind::FOR_STATEMENT | kind::WHILE_STATEMENT => {
            if runs_at_module_level(stack) {
                summaries.file.module_loops.push(node.start_byte());
            }
            let target_field = node.field("left");
            if let (Some(target), Some(index)) = (target_field, innermost_function(stack)) {
                bind_names(summaries, index, target, target.end_byte(), false);
            }
            if let Some(target) = target_field {
                let caller = innermost_function(stack);
                let at = target.end_byte();
                summaries.passed.record_loop_binding(
                    target,
                    node.field("right"),
                    caller,
                    at,
                    block_around(ancestors),
                    source,
                    resolver,
                );
            }
            mark_loop(summaries, stack);
            let over_loader = node
                .field("right")
                .and_then(|iterable| loader_name(iterable, source))
                .is_some();
            stack.push((
                node.id(),
                Frame::Loop {
                    id: node_key(node),
                    summary: LoopSummary::default(),
                    over_loader,
                },
            ));
        }
        kind::CLASS_DEFINITION | kind::LAMBDA => stack.push((node.id(), Frame::Other)),
        kind::LIST_COMPREHENSION
        | kind::SET_COMPREHENSION
        | kind::DICTIONARY_COMPREHENSION
        | kind::GENERATOR_EXPRESSION => mark_loop(summaries, stack),
        kind::BLOCK => {
            if let Some((_, Frame::Function(index))) = stack.last()
                && let Some(block) = summaries.body_blocks.get_mut(*index)
            {
                *block = node_key(node);
            }
            stack.push((node.id(), Frame::Block { throttled: false }))
        }
        kind::ASSIGNMENT => {
            // Each field lookup searches the node's children: once per assignment.
            let (left_field, right_field) = (node.field("left"), node.field("right"));
            if let (Some(left), Some(right), Some(index)) =
                (left_field, right_field, innermost_function(stack))
            {
                let on_device = placed_on_device(right, source, resolver);
                bind_names(summaries, index, left, node.end_byte(), on_device);
            }
            if let Some(left) = left_field {
                let caller = innermost_function(stack);
                let at = node.end_byte();
                summaries.passed.record_binding(
                    left,
                    right_field,
                    caller,
                    at,
                    block_around(ancestors),
                    source,
                    resolver,
                );
            }
            // `skip = step % every != 0`: a throttle by name.
            if let (Some(left), Some(right)) = (left_field, right_field)
                && left.is(kind::IDENTIFIER)
                && is_throttle_value(right, source)
            {
                summaries.throttle_names.push((
                    innermost_function(stack),
                    node_text(left, source).to_string(),
                ));
            }
            // `n = torch.cuda.device_count()` in a function that only compares `n`.
            if let (Some(left), Some(right)) = (left_field, right_field)
                && left.is(kind::IDENTIFIER)
                && right.is(kind::CALL)
                && syntax::call_parts(right)
                    .and_then(|(function, _)| resolver.resolve(function))
                    .is_some_and(|q| q == "torch.cuda.device_count")
                && let Some(function) = ancestors
                    .iter()
                    .rev()
                    .find(|a| a.is(kind::FUNCTION_DEFINITION))
                && only_compared(*function, left, source)
            {
                summaries.compared_counts.insert(node_key(right));
            }
            // `self.<name> = value`: does the value need CUDA (see `cuda_attributes`)?
            if let (Some(left), Some(right)) = (left_field, right_field)
                && right.is_not(kind::NONE)
                && let Some(attribute) = self_attribute(left, source)
            {
                let cuda = cuda_only || value_needs_cuda(right, source, resolver, 0);
                summaries
                    .attribute_values
                    .push((attribute.to_string(), cuda));
            }
            // `self.<flag> = True` in a method.
            if let (Some(left), Some(right)) = (left_field, right_field)
                && right.is(kind::TRUE)
                && left.is(kind::ATTRIBUTE)
                && left
                    .field("object")
                    .is_some_and(|o| syntax::text_is(o, source, "self"))
                && let Some(attribute) = left.field("attribute")
                && let Some(index) = innermost_function(stack)
            {
                summaries
                    .flag_sets
                    .push((index, node_text(attribute, source).to_string()));
            }
        }
        kind::IMPORT_STATEMENT | kind::IMPORT_FROM_STATEMENT
            if imports_cuda_only_package(node, source) =>
        {
            mark_cuda_library_use(node, source, summaries, stack)
        }
        kind::IF_STATEMENT | kind::ELIF_CLAUSE
            if node.field("condition").is_some_and(|c| {
                has_modulo(c, source)
                    || mentions_throttle_name(c, source, innermost_function(stack), summaries)
            }) && !runs_backward(node, source) =>
        {
            summaries.throttles.insert(node_key(node));
            stack.push((node.id(), Frame::Throttle { exits: true }))
        }
        // An optimizer step's state initialisation (`if len(state) == 0:`) runs once per
        // parameter, at the first step.
        kind::IF_STATEMENT
            if innermost_function(stack)
                .is_some_and(|index| summaries.functions[index].optimizer_step)
                && node
                    .field("condition")
                    .is_some_and(|c| tests_state_initialisation(c, source)) =>
        {
            summaries.throttles.insert(node_key(node));
            stack.push((node.id(), Frame::Throttle { exits: false }))
        }
        // `if i == 0:` runs once per loop; an early exit there (`if i == 0: continue`) leaves the
        // rest of the loop hot.
        kind::IF_STATEMENT
            if node
                .field("condition")
                .is_some_and(|c| tests_one_iteration(c, source, ancestors)) =>
        {
            summaries.throttles.insert(node_key(node));
            stack.push((node.id(), Frame::Throttle { exits: false }))
        }
        kind::CONTINUE_STATEMENT | kind::BREAK_STATEMENT | kind::RETURN_STATEMENT | kind::YIELD => {
            if let Some((_, Frame::Loop { summary, .. })) = stack
                .iter_mut()
                .rev()
                .find(|(_, f)| !matches!(f, Frame::Other | Frame::Block { .. }))
            {
                summary.exits = true;
            }
        }
        kind::CALL => call(
            node, source, resolver, summaries, stack, cuda_only, ancestors,
        ),
        _ => {}
    }
}

/// `self.accelerator.prepare(self.model, ...)` / `fabric.setup(model)`: a launcher's placing
/// method (`torch_api::LAUNCHER_PLACING_METHODS`, by the receiver's last name) called with
/// objects other than `self` (a launcher handed `self` places the caller itself).
fn places_through_launcher(
    receiver: Node<'_>,
    method: &str,
    arguments: Node<'_>,
    source: &str,
) -> bool {
    let receiver_name = match receiver.kind_key() {
        kind::ATTRIBUTE => receiver.field("attribute").map(|a| node_text(a, source)),
        kind::IDENTIFIER => Some(node_text(receiver, source)),
        _ => None,
    };
    let Some(receiver_name) = receiver_name else {
        return false;
    };
    crate::torch_api::LAUNCHER_PLACING_METHODS
        .iter()
        .any(|(launcher, placing)| receiver_name == *launcher && method == *placing)
        && !syntax::positional_args(arguments)
            .iter()
            .any(|argument| syntax::text_is(*argument, source, "self"))
}

fn call(
    node: Node<'_>,
    source: &str,
    resolver: &impl Resolver,
    summaries: &mut Summaries,
    stack: &mut [(usize, Frame)],
    cuda_only: bool,
    ancestors: &[Node<'_>],
) {
    let Some((function, arguments)) = syntax::call_parts(node) else {
        return;
    };
    // The arguments' named nodes, walked once: a cursor step over tree-sitter's hidden nodes
    // costs more than all the questions below ask of a call, and four of them read every
    // argument.
    let argument_nodes: Vec<Node<'_>> = arguments.named_nodes().collect();
    let qualified = resolver.resolve(function);
    let method = match function.kind_key() {
        kind::ATTRIBUTE => function.field("attribute").map(|a| node_text(a, source)),
        _ => None,
    };
    let receiver = match function.kind_key() {
        kind::ATTRIBUTE => function.field("object"),
        _ => None,
    };
    let name = match function.kind_key() {
        kind::IDENTIFIER => Some(node_text(function, source)),
        _ => method,
    };
    let q = qualified.as_deref().unwrap_or("");
    if crate::torch_api::is_cuda_only_package(q)
        || method.is_some_and(|m| crate::torch_api::CUDA_ONLY_METHODS.contains(m))
    {
        mark_cuda_library_use(node, source, summaries, stack);
    }
    // A CUDA device API in a function's own body (its body block is the innermost block).
    if let Some(api) = q.strip_prefix("torch.cuda.")
        && (api == "device_count" || crate::torch_api::CUDA_RAISING.contains(&api))
        && let [.., (_, Frame::Function(index)), (_, Frame::Block { .. })] = &stack[..]
    {
        summaries.cuda_device_functions.push(*index);
    }
    if method == Some("to")
        && let Some(receiver) = receiver
        && let Some(index) = innermost_function(stack)
        && sends_to_a_device(arguments, source, resolver)
        && let Some(name) = moved_name(receiver, source, ancestors)
        && let Some(position) = summaries.functions[index]
            .parameters
            .iter()
            .position(|p| p == name)
        && !summaries.functions[index]
            .moved_parameters
            .contains(&position)
    {
        summaries.functions[index].moved_parameters.push(position);
    }
    if let Some(receiver) = receiver.filter(|r| r.is(kind::IDENTIFIER))
        && let Some(index) = innermost_function(stack)
        && moves_to_device(method, arguments, source, resolver)
    {
        record_move(
            summaries,
            index,
            receiver,
            node.start_byte(),
            source,
            ancestors,
        );
    }
    if let (Some(method), Some(receiver)) = (method, receiver)
        && receiver.is(kind::CALL)
        && receiver
            .field("function")
            .is_some_and(|f| syntax::text_is(f, source, "super"))
        && let Some(index) = innermost_function(stack)
        && summaries.functions[index].name == method
    {
        for argument in &argument_nodes {
            let value = match argument.kind_key() {
                kind::KEYWORD_ARGUMENT => argument.field("value"),
                _ => Some(*argument),
            };
            let summary = &mut summaries.functions[index];
            if let Some(value) = value.filter(|v| v.is(kind::IDENTIFIER))
                && let Some(position) = summary
                    .parameters
                    .iter()
                    .position(|p| p == node_text(value, source))
                && !summary.forwarded_to_super.contains(&position)
            {
                summary.forwarded_to_super.push(position);
            }
        }
    }
    // `model.to(device)` as a statement: a module moved in place (call-site facts read it for
    // the module's calls).
    if method == Some("to")
        && ancestors
            .iter()
            .rev()
            .nth(1)
            .is_some_and(|parent| parent.is(kind::EXPRESSION_STATEMENT))
    {
        summaries.passed.record_in_place_move(
            node,
            innermost_function(stack),
            node.end_byte(),
            block_around(ancestors),
            source,
            resolver,
        );
    }
    record_parameter_use(
        node, function, arguments, method, receiver, q, source, resolver, summaries, stack,
        ancestors,
    );
    let syncs = SYNC_CALLS.contains(&q);
    let concatenates = matches!(q, "torch.cat" | "torch.concat" | "torch.concatenate");
    let reads_value = matches!(method, Some("item" | "tolist" | "numpy"))
        || (matches!(method, Some("all" | "any")) && decides_control_flow(node, ancestors));
    // `float(loss)`, `int(mask.sum())`: Python's conversions of a value read it back; of a
    // literal (`float("-inf")`) or a builtin's result (`int(len(x))`) they read nothing.
    // A read in a lambda handed to `xm.add_step_closure` runs after a later barrier, and only
    // on the steps that register it: it waits for nothing where it is written.
    let waits = (matches!(method, Some("item" | "tolist" | "numpy" | "cpu"))
        || (qualified.is_none()
            && function.is(kind::IDENTIFIER)
            && matches!(name, Some("float" | "int" | "bool"))
            && matches!(&argument_nodes[..], [value] if value.is_any(&[kind::IDENTIFIER, kind::ATTRIBUTE, kind::SUBSCRIPT])
                || syntax::call_parts(*value).is_some_and(|(f, _)| f.is(kind::ATTRIBUTE)
                    // `float(np.random.beta(a, a))`: a host library's number.
                    && !resolver.resolve(f).is_some_and(|q| is_host_library(&q)))))
        || name == Some("print")
        || q.ends_with("wait_device_ops")
        || (q == "torch_xla.sync"
            && syntax::keyword_arg(arguments, "wait", source)
                .is_some_and(|wait| node_text(wait, source) == "True")))
        && !in_step_closure_lambda(ancestors, source);
    let backward = name == Some("backward");
    let saves = matches!(
        q,
        "torch.save" | "torch_xla.core.xla_model.save" | "torch_xla.utils.serialization.save"
    );
    if saves
        && let Some(path) = syntax::positional_args(arguments)
            .get(1)
            .copied()
            .or_else(|| syntax::keyword_arg(arguments, "f", source))
    {
        let path = node_text(path, source).to_string();
        if !summaries.file.saved_paths.contains(&path) {
            summaries.file.saved_paths.push(path);
        }
    }
    if crate::torch_api::is_xla_collective(q) {
        let first = syntax::positional_args(arguments)
            .first()
            .map_or("", |first| node_text(*first, source));
        summaries
            .file
            .collective_calls
            .push(format!("{q}({first})"));
    }
    let steps = q == "torch_xla.core.xla_model.optimizer_step"
        || (method == Some("step")
            && receiver.is_some_and(|r| {
                // `optimizer`, `opt`, `self.optim_g`, `d_opt`; not `scheduler` or `env`.
                let text = node_text(r, source).to_ascii_lowercase();
                text.contains("opt") && !text.contains("sched")
            }))
        || (method == Some("step") && steps_through_scaler(receiver, arguments, source));
    if let (Some(method), Some(receiver)) = (method, receiver)
        && let Some(index) = innermost_function(stack)
        && places_through_launcher(receiver, method, arguments, source)
    {
        summaries.functions[index].places_through_launcher = true;
    }
    if q.ends_with("MpDeviceLoader")
        || q.ends_with("ParallelLoader")
        || method == Some("per_device_loader")
    {
        summaries.file.uses_syncing_loader = true;
    }
    // `device == torch.device("xla")` tests for a device; it is no evidence of running on it.
    if !is_comparison_operand(ancestors) {
        device_evidence(q, method, &argument_nodes, source, &mut summaries.file);
    }
    if q.ends_with("eager_mode") {
        summaries.file.eager_mode = true;
    }
    if q.ends_with("add_step_closure")
        && let Some(first) = syntax::positional_args(arguments).first()
        && first.is(kind::IDENTIFIER)
    {
        summaries
            .step_closures
            .insert(node_text(*first, source).to_string());
    }
    if matches!(q, "torch.compile" | "torch_xla.compile") {
        summaries.file.compiles = true;
        if let Some(first) = syntax::positional_args(arguments).first()
            && let Some(parts) = syntax::dotted_parts(*first, source)
            && let Some(last) = parts.last()
        {
            summaries.compiled_names.insert((*last).to_string());
        }
    }
    // The callee name for the call graph: `helper(...)` or `self.helper(...)`.
    // `buffer.sample(...)` on an object of this file's class counts too: the graph joins by
    // name, and only names defined in this file lead anywhere.
    let callee = match function.kind_key() {
        kind::IDENTIFIER if qualified.is_none() => Some(node_text(function, source)),
        kind::ATTRIBUTE if qualified.is_none() => method,
        _ => None,
    };
    let mut in_loop = true;
    let mut looped = false;
    let mut throttled = false;
    let mut caller = None;
    for (_, frame) in stack.iter_mut().rev() {
        match frame {
            Frame::Loop { summary, .. } => {
                if in_loop {
                    summary.concatenates |= concatenates;
                    summary.syncs |= syncs;
                    summary.reads_values |= reads_value;
                    summary.calls_backward |= backward;
                    summary.steps_optimizer |= steps;
                    if let Some(callee) = callee {
                        summary.calls.push(callee.to_string());
                    }
                }
                in_loop = false;
                looped = true;
            }
            Frame::Function(index) => {
                let function = &mut summaries.functions[*index];
                function.syncs |= syncs;
                function.syncs_outside_loops |= syncs && in_loop;
                function.waits |= waits;
                function.calls_backward |= backward;
                function.steps_optimizer |= steps;
                function.trains_in_loops |= (steps || backward) && looped;
                function.steps_outside_loops |= steps && !looped;
                if saves && function.first_save.is_none() {
                    function.first_save = Some(node.start_byte());
                }
                if let Some(callee) = callee {
                    function.calls.push(callee.to_string());
                }
                caller = Some(*index);
                break;
            }
            Frame::Throttle { .. } | Frame::Block { throttled: true } => {
                in_loop = false;
                throttled = true;
            }
            Frame::Other | Frame::Block { .. } => {}
        }
    }
    if let Some(caller) = caller
        && let Some(hardware) = device_literal(&argument_nodes, source)
    {
        summaries.device_literal_calls.push((
            caller,
            node_text(function, source).to_string(),
            hardware,
        ));
    }
    if let Some(callee) = callee {
        let caller_class = caller.and_then(|index| summaries.functions[index].class_name.clone());
        let form = match function.kind_key() {
            kind::ATTRIBUTE => match receiver.map(|r| node_text(r, source)) {
                Some("self" | "cls") => CalleeForm::OnSelf,
                // `Mvdr._mvdr(...)` in a method of `Mvdr`: its own static method.
                Some(receiver) if caller_class.as_deref() == Some(receiver) => CalleeForm::OnSelf,
                _ => CalleeForm::OnOther { caller_class },
            },
            _ => CalleeForm::Bare,
        };
        summaries.call_sites.push(CallSite {
            callee: callee.to_string(),
            form,
            caller,
            cuda_only,
            throttled,
            repeated: runs_repeatedly(ancestors),
        });
    }
    if qualified.is_none() {
        summaries.passed.record_call(
            node,
            function,
            (arguments, &argument_nodes),
            innermost_function(stack),
            source,
            resolver,
        );
    }
    // Functions passed as values may run any number of times.
    for &argument in &argument_nodes {
        let value = match argument.kind_key() {
            kind::KEYWORD_ARGUMENT => argument.field("value"),
            _ => Some(argument),
        };
        if let Some(value) = value.filter(|v| v.is(kind::IDENTIFIER)) {
            summaries
                .passed_names
                .insert(node_text(value, source).to_string());
        }
    }
    // Module-level code (no function around the call).
    if caller.is_none() && saves && summaries.file.first_module_save.is_none() {
        summaries.file.first_module_save = Some(node.start_byte());
    }
    if syncs && runs_at_module_level(stack) {
        summaries.file.module_step_markers.push(node.start_byte());
    }
}
/// The hardware named by a call's `device="…"` string argument (`device="cuda"`, `device="xla"`);
/// `argument_nodes`: the named nodes of its argument list.
fn device_literal(argument_nodes: &[Node<'_>], source: &str) -> Option<guards::Hardware> {
    let value = argument_nodes
        .iter()
        .find(|child| {
            child.is(kind::KEYWORD_ARGUMENT)
                && child
                    .field("name")
                    .is_some_and(|n| node_text(n, source) == "device")
        })?
        .field("value")?;
    guards::literal_hardware(&syntax::string_value(value, source)?)
}

/// The file's function indices by function name, the names in the order they first came (a
/// `HashMap<String, Vec<usize>>` would bring its own table code into the WebAssembly module).
pub(crate) type FunctionsByName = crate::semantic::ByName<Vec<usize>>;

/// The calls of one callee: each one's caller (a function index) and a flag of the pass.
type CallerItems = Vec<(Option<usize>, bool)>;

/// Items grouped by callee name, the names in the order they first came: found by
/// [`name_hash`](crate::semantic::name_hash) in a `HashMap<u64, usize>` of positions (the map
/// type of [`Summaries::by_node`]) rather than in a `HashMap<&str, Vec<_>>`, whose own table
/// code would cost the WebAssembly module room. Exact: a position found is checked against the
/// name, and two names of one hash fall back to a scan.
#[derive(Default)]
struct CallerGroups<'a> {
    entries: Vec<(&'a str, CallerItems)>,
    positions: HashMap<u64, usize>,
}

impl<'a> CallerGroups<'a> {
    fn push(&mut self, name: &'a str, item: (Option<usize>, bool)) {
        let hash = crate::semantic::name_hash(name);
        let first = self.positions.get(&hash).copied();
        let found = match first {
            Some(first) if self.entries[first].0 == name => Some(first),
            Some(_) => self.entries.iter().position(|(other, _)| *other == name),
            None => None,
        };
        let position = match found {
            Some(position) => position,
            None => {
                if first.is_none() {
                    self.positions.insert(hash, self.entries.len());
                }
                self.entries.push((name, Vec::new()));
                self.entries.len() - 1
            }
        };
        self.entries[position].1.push(item);
    }
}

/// A set of names, found like [`CallerGroups`]' (by [`name_hash`](crate::semantic::name_hash)
/// in a `HashMap<u64, usize>` of positions) rather than in a `HashSet<&str>`, whose own table
/// code would cost the WebAssembly module room. Exact: a position found is checked against the
/// name, and two names of one hash fall back to a scan.
#[derive(Default)]
pub(crate) struct NameSet<'a> {
    names: Vec<&'a str>,
    positions: HashMap<u64, usize>,
}

impl<'a> NameSet<'a> {
    /// Adds `name`; whether it was not there.
    pub(crate) fn insert(&mut self, name: &'a str) -> bool {
        let hash = crate::semantic::name_hash(name);
        match self.positions.get(&hash) {
            Some(&first) if self.names[first] == name => return false,
            Some(_) if self.names.contains(&name) => return false,
            Some(_) => {}
            None => {
                self.positions.insert(hash, self.names.len());
            }
        }
        self.names.push(name);
        true
    }

    pub(crate) fn contains(&self, name: &str) -> bool {
        match self.positions.get(&crate::semantic::name_hash(name)) {
            Some(&first) => self.names[first] == name || self.names.contains(&name),
            None => false,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// Marks the functions that call one callee with both a CUDA and a TPU device literal.
fn comparison_scopes(summaries: &mut Summaries) {
    // Per callee, its callers with whether the literal was CUDA's (else a TPU's). The map type
    // is the one `cuda_only_callees` uses: one hash-map type fewer in the WebAssembly module.
    let mut by_callee = CallerGroups::default();
    for (caller, callee, hardware) in &summaries.device_literal_calls {
        let cuda = match hardware {
            guards::Hardware::Cuda => true,
            guards::Hardware::Tpu => false,
            guards::Hardware::Export | guards::Hardware::OtherAccelerator => continue,
        };
        by_callee.push(callee, (Some(*caller), cuda));
    }
    let mut both: Vec<usize> = Vec::new();
    for (_, calls) in &by_callee.entries {
        for (caller, cuda) in calls {
            if *cuda && calls.iter().any(|(other, c)| other == caller && !c) {
                both.extend(*caller);
            }
        }
    }
    for caller in both {
        if let Some(block) = summaries.body_block(caller) {
            summaries.comparison_scopes.insert(block);
        }
    }
}

/// Whether a condition mentions a name bound to a modulo in the same function
/// (`skip_batch = step % every != 0` … `if skip_batch and skip_time: return`).
fn mentions_throttle_name(
    condition: Node<'_>,
    source: &str,
    function: Option<usize>,
    summaries: &Summaries,
) -> bool {
    if summaries.throttle_names.is_empty() {
        return false;
    }
    syntax::any_in_subtree(condition, 63, |node| {
        if node.is(kind::IDENTIFIER) && {
            let text = node_text(node, source);
            summaries
                .throttle_names
                .iter()
                .any(|(scope, name)| *scope == function && name == text)
        } {
            Visit::Found
        } else {
            Visit::Enter
        }
    })
}

/// The index of the innermost function around the current node.
/// Whether `.to(...)` with these arguments targets a device: a positional argument or
/// `device=` that is not a dtype (`torch.float16`, `x.dtype`, `dtype`).
fn sends_to_a_device(arguments: Node<'_>, source: &str, resolver: &impl Resolver) -> bool {
    let target = syntax::keyword_arg(arguments, "device", source)
        .or_else(|| syntax::positional_args(arguments).first().copied());
    let Some(target) = target else {
        return false;
    };
    if let Some(q) = resolver.resolve(target)
        && let Some(name) = q.strip_prefix("torch.")
        && crate::torch_api::canonical_dtype(name).is_some()
    {
        return false;
    }
    let last = syntax::dotted_parts(target, source)
        .and_then(|parts| parts.last().copied())
        .unwrap_or("");
    !(last.contains("dtype") || crate::torch_api::canonical_dtype(last).is_some())
}

/// Whether a method call sends its receiver to a device: `.cuda()`, or `.to(...)` of a device
/// other than the CPU (not a dtype).
fn moves_to_device(
    method: Option<&str>,
    arguments: Node<'_>,
    source: &str,
    resolver: &impl Resolver,
) -> bool {
    match method {
        Some("cuda") => true,
        Some("to") => {
            sends_to_a_device(arguments, source, resolver)
                && !node_text(arguments, source).contains("cpu")
        }
        _ => false,
    }
}

/// Whether a bound value is visibly placed on a device: a move (`y.to(device)`, `y.cuda()`) or
/// a call with a `device=` other than the CPU (`torch.zeros(n, device=device)`).
fn placed_on_device(value: Node<'_>, source: &str, resolver: &impl Resolver) -> bool {
    let Some((function, arguments)) = syntax::call_parts(syntax::unparenthesize(value)) else {
        return false;
    };
    let method = function.field("attribute").map(|a| node_text(a, source));
    moves_to_device(method, arguments, source, resolver)
        || syntax::keyword_arg(arguments, "device", source)
            .is_some_and(|device| !node_text(device, source).contains("cpu"))
}

/// The byte range of the innermost block around the last of `ancestors` (`None` at module
/// level): a binding there reaches only the code inside it for sure.
fn block_around(ancestors: &[Node<'_>]) -> Option<(usize, usize)> {
    ancestors
        .iter()
        .rev()
        .skip(1)
        .find(|a| a.is(kind::BLOCK))
        .map(|block| (block.start_byte(), block.end_byte()))
}

/// Records the names a binding target (`x`, `a, b`, `(k, v)`) binds in function `index`.
fn bind_names(
    summaries: &mut Summaries,
    index: usize,
    target: Node<'_>,
    at: usize,
    on_device: bool,
) {
    for node in syntax::target_names(target, true) {
        summaries
            .bound_names
            .push((index, node.start_byte(), node.end_byte(), at, on_device));
    }
}

/// Records where the local binding that a device move of `receiver` (a plain name; the call
/// starts at `at`) moves is still on the host, unless an earlier move of the same binding was
/// recorded (see `FunctionSummary::host_until_moved`). Moves in lambdas, comprehensions and class bodies
/// are left out: their names may be other bindings.
fn record_move(
    summaries: &mut Summaries,
    index: usize,
    receiver: Node<'_>,
    at: usize,
    source: &str,
    ancestors: &[Node<'_>],
) {
    let name = node_text(receiver, source);
    // The binding the move moves: the last one that takes effect before the call. A parameter
    // (or a name of an outer scope) is whatever the caller passes, which may be on the device
    // already: the move is then defensive (`ids.to(self.weight.device)`).
    let mut binding = None;
    for &(function, start, end, effect, on_device) in &summaries.bound_names {
        if function == index
            && effect <= at
            && binding.is_none_or(|(from, _)| from < effect)
            && source.get(start..end) == Some(name)
        {
            binding = Some((effect, on_device));
        }
    }
    let Some((from, on_device)) = binding else {
        return;
    };
    let mut until = if on_device { from } else { at };
    for ancestor in ancestors.iter().rev().skip(1) {
        match ancestor.kind_key() {
            kind::FUNCTION_DEFINITION => break,
            kind::LAMBDA
            | kind::CLASS_DEFINITION
            | kind::LIST_COMPREHENSION
            | kind::SET_COMPREHENSION
            | kind::DICTIONARY_COMPREHENSION
            | kind::GENERATOR_EXPRESSION => return,
            kind::FOR_STATEMENT | kind::WHILE_STATEMENT if ancestor.start_byte() > from => {
                until = until.min(ancestor.start_byte())
            }
            _ => {}
        }
    }
    let moves = &mut summaries.functions[index].host_until_moved;
    if !moves
        .iter()
        .any(|(moved, range)| moved == name && range.start == from)
    {
        moves.push((name.to_string(), from..until));
    }
}

/// The name a `.to(...)` call (the last of `ancestors`) moves: its receiver with subscripts
/// removed (`batch["x"]` → `batch`), or, for a comprehension variable, what the comprehension
/// iterates (`{k: v.to(d) for k, v in batch.items()}` → `batch`).
fn moved_name<'s>(receiver: Node<'_>, source: &'s str, ancestors: &[Node<'_>]) -> Option<&'s str> {
    let mut base = receiver;
    while base.is(kind::SUBSCRIPT) {
        base = base.field("value")?;
    }
    if base.is_not(kind::IDENTIFIER) {
        return None;
    }
    let name = node_text(base, source);
    for node in ancestors.iter().rev().skip(1) {
        match node.kind_key() {
            kind::FUNCTION_DEFINITION | kind::LAMBDA => break,
            kind::LIST_COMPREHENSION
            | kind::SET_COMPREHENSION
            | kind::DICTIONARY_COMPREHENSION
            | kind::GENERATOR_EXPRESSION => {
                for clause in node.named_nodes() {
                    if clause.is(kind::FOR_IN_CLAUSE)
                        && let (Some(left), Some(right)) =
                            (clause.field("left"), clause.field("right"))
                        && binds_name(left, name, source)
                    {
                        return iterated_name(right, source);
                    }
                }
            }
            _ => {}
        }
    }
    Some(name)
}

/// Whether a target (`v`, `k, v`, `(k, v)`) binds `name`.
fn binds_name(target: Node<'_>, name: &str, source: &str) -> bool {
    syntax::target_names(target, true)
        .iter()
        .any(|&node| node_text(node, source) == name)
}

/// The name a comprehension iterates: `batch`, `batch.items()`, `batch.values()`.
pub(crate) fn iterated_name<'s>(iterable: Node<'_>, source: &'s str) -> Option<&'s str> {
    let mut expr = syntax::unparenthesize(iterable);
    if let Some((function, arguments)) = syntax::call_parts(expr)
        && arguments.named_child_count() == 0
        && function.is(kind::ATTRIBUTE)
        && function
            .field("attribute")
            .is_some_and(|m| matches!(node_text(m, source), "items" | "values"))
    {
        expr = function.field("object")?;
    }
    (expr.is(kind::IDENTIFIER)).then(|| node_text(expr, source))
}

/// Records a loop (statement or comprehension) in the innermost function's own body.
fn mark_loop(summaries: &mut Summaries, stack: &[(usize, Frame)]) {
    if let Some(index) = innermost_function(stack) {
        summaries.functions[index].has_loop = true;
    }
}

/// Whether a call (the last of `ancestors`) sits under a loop, comprehension, lambda or class
/// body before its function (or the statement's start) is reached.
fn runs_repeatedly(ancestors: &[Node<'_>]) -> bool {
    for node in ancestors.iter().rev().skip(1) {
        match node.kind_key() {
            kind::FUNCTION_DEFINITION => return false,
            kind::FOR_STATEMENT
            | kind::WHILE_STATEMENT
            | kind::LIST_COMPREHENSION
            | kind::SET_COMPREHENSION
            | kind::DICTIONARY_COMPREHENSION
            | kind::GENERATOR_EXPRESSION
            | kind::LAMBDA
            | kind::CLASS_DEFINITION => return true,
            _ => {}
        }
    }
    false
}

/// Whether the node being visited is straight-line module-level code: no function, class,
/// lambda or loop frame around it (blocks, throttles and `with` bodies do not count).
fn runs_at_module_level(stack: &[(usize, Frame)]) -> bool {
    stack.iter().all(|(_, frame)| {
        !matches!(
            frame,
            Frame::Function(_) | Frame::Loop { .. } | Frame::Other
        )
    })
}

/// Records a call that keeps a module's parameters or a device move of a module (see
/// `Summaries::parameter_captures`, `Summaries::module_moves`).
#[allow(clippy::too_many_arguments)]
fn record_parameter_use(
    call: Node<'_>,
    function: Node<'_>,
    arguments: Node<'_>,
    method: Option<&str>,
    receiver: Option<Node<'_>>,
    qualified: &str,
    source: &str,
    resolver: &impl Resolver,
    summaries: &mut Summaries,
    stack: &[(usize, Frame)],
    ancestors: &[Node<'_>],
) {
    let steps = match method {
        Some("step") => receiver.is_some_and(|r| {
            let text = node_text(r, source).to_ascii_lowercase();
            text.contains("opt") || text.contains("scaler")
        }),
        _ => qualified.ends_with("optimizer_step"),
    };
    if steps {
        let mut outer_loop = None;
        for ancestor in ancestors.iter().rev().skip(1) {
            match ancestor.kind_key() {
                kind::FUNCTION_DEFINITION | kind::LAMBDA | kind::CLASS_DEFINITION => break,
                kind::FOR_STATEMENT | kind::WHILE_STATEMENT => {
                    outer_loop = Some(ancestor.byte_range())
                }
                _ => {}
            }
        }
        summaries
            .optimizer_steps
            .push((innermost_function(stack), call.start_byte(), outer_loop));
        return;
    }
    if method == Some("to")
        && let Some(receiver) = receiver.filter(|r| is_dotted_name(*r))
        && moves_to_device(method, arguments, source, resolver)
    {
        summaries.module_moves.push((
            innermost_function(stack),
            node_text(receiver, source).to_string(),
            call.start_byte(),
            node_key(call),
        ));
        return;
    }
    // A class (`AdamW(...)`, `EMA(...)`) or an optimizer (`optim.adamw(...)` is no class, but
    // its package says what it is) given `<module>.parameters()` keeps those parameter objects.
    let class_like = syntax::dotted_parts(function, source)
        .and_then(|parts| parts.last().copied())
        .is_some_and(|last| last.starts_with(|c: char| c.is_ascii_uppercase()));
    if !(class_like || qualified.contains("optim."))
        || !node_text(arguments, source).contains("parameters(")
    {
        return;
    }
    syntax::any_in_subtree(arguments, 200, |node| {
        if node.is(kind::CALL)
            && let Some((callee, _)) = syntax::call_parts(node)
            && callee.is(kind::ATTRIBUTE)
            && let (Some(module), Some(attribute)) =
                (callee.field("object"), callee.field("attribute"))
            && matches!(
                node_text(attribute, source),
                "parameters" | "named_parameters"
            )
            && is_dotted_name(module)
        {
            summaries.parameter_captures.push((
                innermost_function(stack),
                node_text(module, source).to_string(),
                call.byte_range(),
            ));
            return Visit::Skip;
        }
        if node.is(kind::LAMBDA) {
            Visit::Skip
        } else {
            Visit::Enter
        }
    });
}

/// `model`, `self.model`, `self.model.encoder`: a name or attributes of one.
fn is_dotted_name(node: Node<'_>) -> bool {
    let mut current = node;
    loop {
        match current.kind_key() {
            kind::IDENTIFIER => return true,
            kind::ATTRIBUTE => match current.field("object") {
                Some(object) => current = object,
                None => return false,
            },
            _ => return false,
        }
    }
}

/// Finds the device moves of modules whose parameters an optimizer (or another holder) kept
/// before them (see `Summaries::stale_parameter_moves`).
fn stale_parameter_moves(summaries: &mut Summaries) {
    // The move of `model` moves `model.encoder`'s parameters, and the move of `model.encoder`
    // some of `model`'s.
    let overlaps = |a: &str, b: &str| {
        a == b
            || a.strip_prefix(b).is_some_and(|rest| rest.starts_with('.'))
            || b.strip_prefix(a).is_some_and(|rest| rest.starts_with('.'))
    };
    let mut stale = Vec::new();
    for (function, moved, at, call) in &summaries.module_moves {
        // Training over before the move (evaluation after the loop, a final export): the old
        // parameters are never stepped again. A function without a step hands its optimizer on.
        let mut steps = false;
        let mut steps_after = false;
        for (step_function, step_at, outer_loop) in &summaries.optimizer_steps {
            if step_function == function {
                steps = true;
                steps_after |=
                    step_at > at || outer_loop.as_ref().is_some_and(|range| range.contains(at));
            }
        }
        if steps && !steps_after {
            continue;
        }
        let mut kept_before: Option<&TextRange> = None;
        let mut kept_after = false;
        for (holder_function, module, range) in &summaries.parameter_captures {
            if holder_function != function || !overlaps(module, moved) {
                continue;
            }
            if range.end <= *at {
                if kept_before.is_none_or(|before| before.end < range.end) {
                    kept_before = Some(range);
                }
            } else {
                kept_after = true;
            }
        }
        if let (Some(range), false) = (kept_before, kept_after) {
            stale.push((*call, range.clone()));
        }
    }
    summaries.stale_parameter_moves = stale;
}

fn innermost_function(stack: &[(usize, Frame)]) -> Option<usize> {
    stack.iter().rev().find_map(|(_, frame)| match frame {
        Frame::Function(index) => Some(*index),
        _ => None,
    })
}

/// Finds the CUDA-mode flags (see [`Summaries::cuda_mode_flags`]) and scopes the methods that
/// set them to CUDA.
fn cuda_mode_flags(summaries: &mut Summaries) {
    let mut enabled_elsewhere = NameSet::default();
    let mut flags: StringSet = StringSet::default();
    for (index, flag) in &summaries.flag_sets {
        if summaries.cuda_device_functions.contains(index) {
            flags.insert(flag.clone());
        } else {
            enabled_elsewhere.insert(flag);
        }
    }
    flags.retain(|flag| !enabled_elsewhere.contains(flag.as_str()));
    for (index, flag) in &summaries.flag_sets {
        if flags.contains(flag)
            && let Some(block) = summaries.body_block(*index)
        {
            summaries.cuda_library_scopes.insert(block);
        }
    }
    summaries.cuda_mode_flags = flags;
}

/// Finds the attributes whose every value needs CUDA (see [`Summaries::cuda_attributes`]).
fn cuda_attributes(summaries: &mut Summaries) {
    // The names with a value that does not need CUDA; then every other name assigned.
    let mut not_cuda = NameSet::default();
    for (name, cuda) in &summaries.attribute_values {
        if !*cuda {
            not_cuda.insert(name.as_str());
        }
    }
    let mut attributes: StringSet = StringSet::default();
    for (name, _) in &summaries.attribute_values {
        if !not_cuda.contains(name.as_str()) {
            attributes.insert(name.clone());
        }
    }
    summaries.cuda_attributes = attributes;
}

/// Whether every other occurrence of the name `target` in `function` only asks how many
/// devices exist (see [`counts_devices`]), and there is one: the name is never passed, returned
/// or used in arithmetic. Walks the function once, only for the rare
/// `n = torch.cuda.device_count()`.
fn only_compared(function: Node<'_>, target: Node<'_>, source: &str) -> bool {
    let name = node_text(target, source);
    let mut uses = 0usize;
    let mut cursor = function.walk();
    loop {
        let node = cursor.node();
        if node.is(kind::IDENTIFIER) && node.id() != target.id() && node_text(node, source) == name
        {
            if !counts_devices(node, source) {
                return false;
            }
            uses += 1;
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.node().id() == function.id() {
                return uses > 0;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return uses > 0;
            }
        }
    }
}

/// Whether an occurrence of a device count's name keeps it a count, for which 0 is the right
/// answer without GPUs: an operand of a comparison (`device >= n`, `n > 1`), the bound of
/// `range(n)` (empty), or the target of another backend's count in a vendor dispatch
/// (`n = torch.xpu.device_count()`).
fn counts_devices(occurrence: Node<'_>, source: &str) -> bool {
    let Some(parent) = occurrence.parent() else {
        return false;
    };
    match parent.kind_key() {
        kind::COMPARISON_OPERATOR => true,
        kind::ARGUMENT_LIST => {
            parent.named_child_count() == 1
                && parent
                    .parent()
                    .and_then(|call| call.field("function"))
                    .is_some_and(|f| syntax::text_is(f, source, "range"))
        }
        kind::ASSIGNMENT => {
            parent
                .field("left")
                .is_some_and(|l| l.id() == occurrence.id())
                && parent
                    .field("right")
                    .and_then(|r| syntax::call_parts(syntax::unparenthesize(r)))
                    .and_then(|(function, _)| function.field("attribute"))
                    .is_some_and(|a| syntax::text_is(a, source, "device_count"))
        }
        _ => false,
    }
}

/// The attribute name of `self.<name>`.
pub(crate) fn self_attribute<'s>(target: Node<'_>, source: &'s str) -> Option<&'s str> {
    (target.is(kind::ATTRIBUTE)
        && target
            .field("object")
            .is_some_and(|o| syntax::text_is(o, source, "self")))
    .then(|| target.field("attribute"))
    .flatten()
    .map(|a| node_text(a, source))
}

/// Whether a value is a `torch.cuda.*` object (`torch.cuda.Stream()`), or a choice between
/// such objects and `None` (`torch.cuda.Stream() if flag else None`), or a choice whose
/// non-`None` branches are taken only with CUDA (`index if device.type == "cuda" else None`),
/// or a flag true only with CUDA (`config._attn_implementation == "flash_attention_2"`, whose
/// kernels exist only on CUDA; `device.type == "cuda"`): `if self._use_flash_attention_2:` in
/// another method then runs only with CUDA, as `if self.stream is not None:` does.
pub(crate) fn value_needs_cuda(
    value: Node<'_>,
    source: &str,
    resolver: &impl Resolver,
    depth: usize,
) -> bool {
    let value = syntax::unparenthesize(value);
    match value.kind_key() {
        kind::CALL => syntax::call_parts(value)
            .and_then(|(function, _)| resolver.resolve(function))
            .is_some_and(|q| q.starts_with("torch.cuda.")),
        kind::COMPARISON_OPERATOR => {
            guards::device_test(value, source).is_some_and(guards::never_on_tpu_when_true)
        }
        kind::CONDITIONAL_EXPRESSION if depth < 4 => {
            let (Some(first), Some(second)) = (value.named_child(0), value.named_child(2)) else {
                return false;
            };
            let test = value
                .named_child(1)
                .and_then(|c| guards::device_test(c, source));
            let taken_only_with_cuda = |consequence: bool| {
                test.is_some_and(|test| {
                    let test = if consequence {
                        test
                    } else {
                        guards::DeviceTest {
                            positive: !test.positive,
                            ..test
                        }
                    };
                    guards::never_on_tpu_when_true(test)
                })
            };
            // Some branch is not `None`, and each such branch needs CUDA.
            let mut any = false;
            for (branch, consequence) in [(first, true), (second, false)] {
                if branch.is(kind::NONE) {
                    continue;
                }
                if !(taken_only_with_cuda(consequence)
                    || value_needs_cuda(branch, source, resolver, depth + 1))
                {
                    return false;
                }
                any = true;
            }
            any
        }
        _ => false,
    }
}

/// The class of an `__init__` whose body contains `if_statement` as an early raise that leaves
/// the rest of the body to CUDA (`if not torch.cuda.is_available(): raise RuntimeError(…)`): the
/// class has no instance without CUDA. `ancestors` ends with `if_statement`.
fn class_requiring_cuda<'t>(
    if_statement: Node<'t>,
    source: &str,
    ancestors: &[Node<'t>],
) -> Option<Node<'t>> {
    let body = if_statement.field("consequence")?;
    let last = body
        .named_nodes()
        .filter(|s| s.is_not(kind::COMMENT))
        .last()?;
    if last.is_not(kind::RAISE_STATEMENT) {
        return None;
    }
    let test = guards::after_early_exit(if_statement, source)?;
    if !guards::never_on_tpu_when_true(test) {
        return None;
    }
    // … block, function_definition `__init__`, block, if_statement.
    let mut up = ancestors.iter().rev().skip(1);
    up.next().filter(|b| b.is(kind::BLOCK))?;
    up.next()
        .filter(|f| f.is(kind::FUNCTION_DEFINITION))
        .filter(|f| {
            f.field("name")
                .is_some_and(|n| syntax::text_is(n, source, "__init__"))
        })?;
    let mut next = up.next()?;
    if next.is(kind::DECORATED_DEFINITION) {
        next = up.next()?;
    }
    if next.is_not(kind::BLOCK) {
        return None;
    }
    up.next().filter(|c| c.is(kind::CLASS_DEFINITION)).copied()
}

/// Whether an import statement names a CUDA-only package (`import bitsandbytes as bnb`,
/// `from megatron.core import mpu`).
fn imports_cuda_only_package(statement: Node<'_>, source: &str) -> bool {
    let module = match statement.kind_key() {
        kind::IMPORT_FROM_STATEMENT => statement.field("module_name"),
        _ => statement.named_child(0).map(|name| match name.kind_key() {
            kind::ALIASED_IMPORT => name.field("name").unwrap_or(name),
            _ => name,
        }),
    };
    module.is_some_and(|m| crate::torch_api::is_cuda_only_package(node_text(m, source)))
}

/// Records that the innermost block around `node` uses a CUDA-only package (and its class, when
/// that block is the body of the class's `__init__`).
fn mark_cuda_library_use(
    node: Node<'_>,
    source: &str,
    summaries: &mut Summaries,
    stack: &[(usize, Frame)],
) {
    let Some((block, _)) = stack
        .iter()
        .rev()
        .find(|(_, frame)| matches!(frame, Frame::Block { .. }))
    else {
        return;
    };
    // The block node itself, to find an `__init__` whose body it is.
    let mut ancestor = node.parent();
    while let Some(current) = ancestor {
        if current.id() == *block {
            break;
        }
        ancestor = current.parent();
    }
    let Some(mut block_node) = ancestor else {
        return;
    };
    // The body of a `with`, `for` or `while` runs whenever the block around it does: the block
    // that needs CUDA is the branch or body that holds the statement (a TensorRT run inside
    // `with stream:` makes the whole `else:` branch a TensorRT path). Not through `try`, whose
    // `except` may be the fallback.
    while let Some(outer) = block_node
        .parent()
        .filter(|s| {
            s.is(kind::WITH_STATEMENT) || s.is(kind::FOR_STATEMENT) || s.is(kind::WHILE_STATEMENT)
        })
        .and_then(|s| s.parent())
        .filter(|b| b.is(kind::BLOCK))
    {
        block_node = outer;
    }
    summaries.cuda_library_scopes.insert(node_key(block_node));
    let Some(function) = block_node
        .parent()
        .filter(|f| f.is(kind::FUNCTION_DEFINITION))
    else {
        return;
    };
    let initialiser = function
        .field("name")
        .is_some_and(|n| syntax::text_is(n, source, "__init__"));
    if !initialiser {
        return;
    }
    let class = function
        .parent()
        .filter(|p| p.is(kind::DECORATED_DEFINITION))
        .or(Some(function))
        .and_then(|f| f.parent())
        .filter(|b| b.is(kind::BLOCK))
        .and_then(|b| b.parent())
        .filter(|c| c.is(kind::CLASS_DEFINITION));
    if let Some(class) = class {
        summaries.cuda_library_scopes.insert(node_key(class));
    }
}

/// Whether a condition computes `a % b` (a throttle such as `step % 100 == 0`; a modulo by the
/// gradient-accumulation steps marks the optimizer step, which runs every step).
/// Whether an `if` (the last of `ancestors`) tests that the counter of its innermost loop equals
/// a constant (`for i, batch in enumerate(loader): if i == 0:`, `for epoch in range(n): if
/// epoch == 0:`, also as one side of `and`): its body runs once per loop, not every iteration.
/// Whether `condition` holds only while an optimizer's per-parameter state is uninitialised
/// (`torch_api::OPTIMIZER_STATE`): `len(state) == 0`, `not state`, `"exp_avg" not in state`,
/// `state["step"] == 0`, where `state` is a name ending in `state` or `self.state[p]`.
fn tests_state_initialisation(condition: Node<'_>, source: &str) -> bool {
    let is_state = |node: Node<'_>| {
        let node = syntax::unparenthesize(node);
        match node.kind_key() {
            kind::IDENTIFIER => {
                node_text(node, source).ends_with(crate::torch_api::OPTIMIZER_STATE)
            }
            kind::SUBSCRIPT => node.field("value").is_some_and(|value| {
                syntax::dotted_parts(value, source)
                    .is_some_and(|parts| parts == ["self", crate::torch_api::OPTIMIZER_STATE])
            }),
            _ => false,
        }
    };
    let condition = syntax::unparenthesize(condition);
    if condition.is(kind::NOT_OPERATOR) {
        return condition.field("argument").is_some_and(is_state);
    }
    if condition.is_not(kind::COMPARISON_OPERATOR) || condition.named_child_count() != 2 {
        return false;
    }
    let [operator] = syntax::comparison_operators(condition, source)[..] else {
        return false;
    };
    let (Some(left), Some(right)) = (condition.named_child(0), condition.named_child(1)) else {
        return false;
    };
    let is_zero = |node: Node<'_>| node.is(kind::INTEGER) && node_text(node, source) == "0";
    match operator {
        // `not  in` is one token whatever the spaces between its words (and the only comparison
        // operator that starts with `not`).
        _ if operator.starts_with("not") => left.is(kind::STRING) && is_state(right),
        "==" => {
            let (measured, zero) = if is_zero(right) {
                (left, right)
            } else {
                (right, left)
            };
            if !is_zero(zero) {
                return false;
            }
            let measured = syntax::unparenthesize(measured);
            // `len(state) == 0`
            if let Some((function, arguments)) = syntax::call_parts(measured)
                && syntax::text_is(function, source, "len")
                && let [argument] = syntax::positional_args(arguments)[..]
            {
                return is_state(argument);
            }
            // `state["step"] == 0`
            measured.is(kind::SUBSCRIPT)
                && measured.field("value").is_some_and(is_state)
                && measured
                    .field("subscript")
                    .and_then(|key| syntax::string_value(key, source))
                    .is_some_and(|key| key == crate::torch_api::OPTIMIZER_STATE_STEP)
        }
        _ => false,
    }
}

fn tests_one_iteration(condition: Node<'_>, source: &str, ancestors: &[Node<'_>]) -> bool {
    let condition = syntax::unparenthesize(condition);
    if condition.is(kind::BOOLEAN_OPERATOR)
        && condition
            .field("operator")
            .is_some_and(|o| syntax::text_is(o, source, "and"))
    {
        return syntax::sides(condition).any(|side| tests_one_iteration(side, source, ancestors));
    }
    if condition.is_not(kind::COMPARISON_OPERATOR) || condition.named_child_count() != 2 {
        return false;
    }
    if syntax::comparison_operators(condition, source) != ["=="] {
        return false;
    }
    let (Some(left), Some(right)) = (condition.named_child(0), condition.named_child(1)) else {
        return false;
    };
    let counter = match (left.kind_name(), right.kind_name()) {
        ("identifier", "integer") => left,
        ("integer", "identifier") => right,
        _ => return false,
    };
    // The innermost loop around the `if`, within its function.
    for node in ancestors.iter().rev().skip(1) {
        match node.kind_key() {
            kind::FUNCTION_DEFINITION
            | kind::LAMBDA
            | kind::CLASS_DEFINITION
            | kind::WHILE_STATEMENT => {
                return false;
            }
            kind::FOR_STATEMENT => {
                return node.field("left").zip(node.field("right")).is_some_and(
                    |(target, iterable)| {
                        loop_counter(target, iterable, source) == Some(node_text(counter, source))
                    },
                );
            }
            _ => {}
        }
    }
    false
}

/// The counter a `for` binds: `i` of `for i in range(n)` and of `for i, x in enumerate(xs)`.
fn loop_counter<'s>(target: Node<'_>, iterable: Node<'_>, source: &'s str) -> Option<&'s str> {
    let (function, _) = syntax::call_parts(syntax::unparenthesize(iterable))?;
    let name = node_text(function, source);
    let counter = match name {
        "range" => target,
        "enumerate" => match target.kind_key() {
            kind::PATTERN_LIST | kind::TUPLE_PATTERN | kind::LIST_PATTERN => {
                target.named_child(0)?
            }
            _ => return None,
        },
        _ => return None,
    };
    (counter.is(kind::IDENTIFIER)).then(|| node_text(counter, source))
}

/// Whether an assigned value is a throttle test or phase (`skip = step % every != 0`,
/// `log_now = not step % 50`, `phase = step % every`), not a value that merely holds a modulo
/// somewhere in its operands: `tokens = torch.cat([tokens[origin], (idx % vocab).unsqueeze(1)], 1)`
/// in a beam search is a tensor, and a test of it (`if (tokens[:, -1] == eos).all():`) is the
/// loop's exit, read every step, not a throttle.
fn is_throttle_value(value: Node<'_>, source: &str) -> bool {
    let value = syntax::unparenthesize(value);
    let test_or_phase = match value.kind_key() {
        kind::COMPARISON_OPERATOR | kind::BOOLEAN_OPERATOR | kind::NOT_OPERATOR => true,
        kind::BINARY_OPERATOR => value
            .field("operator")
            .is_some_and(|operator| syntax::text_is(operator, source, "%")),
        _ => false,
    };
    test_or_phase && has_modulo(value, source)
}

/// Whether the body of `branch` (an `if` / `elif`) runs a backward pass (`loss.backward()`,
/// `accelerator.backward(loss)`): `if step % train_every == 0:` around the update is the training
/// step on its schedule (a DQN learning every fourth environment step, a GAN's generator every
/// `n_critic` steps), not work taken off the step, so what runs there runs every training step.
fn runs_backward(branch: Node<'_>, source: &str) -> bool {
    let Some(body) = branch.field("consequence") else {
        return false;
    };
    if !node_text(body, source).contains("backward(") {
        return false;
    }
    syntax::any_in_subtree(body, 4_095, |node| {
        if node.is(kind::CALL)
            && syntax::call_parts(node).is_some_and(|(function, _)| {
                function.is(kind::ATTRIBUTE)
                    && function
                        .field("attribute")
                        .is_some_and(|a| syntax::text_is(a, source, "backward"))
            })
        {
            Visit::Found
        } else if node.is_any(&[kind::FUNCTION_DEFINITION, kind::LAMBDA]) {
            // A closure or a nested definition runs elsewhere.
            Visit::Skip
        } else {
            Visit::Enter
        }
    })
}

pub(crate) fn has_modulo(condition: Node<'_>, source: &str) -> bool {
    // A `%` operator lies within the condition's text: without one there, nothing to walk
    // (this runs on every assignment's right-hand side).
    if !node_text(condition, source).contains('%') {
        return false;
    }
    syntax::any_in_subtree(condition, 63, |node| {
        // `step % accumulation_steps == 0` is the optimizer step itself, not a throttle.
        if node.is(kind::BINARY_OPERATOR)
            && node
                .field("operator")
                .is_some_and(|o| syntax::text_is(o, source, "%"))
            && !node
                .field("right")
                .is_some_and(|r| node_text(r, source).to_ascii_lowercase().contains("accum"))
        {
            Visit::Found
        } else {
            Visit::Enter
        }
    })
}

fn leave(
    summaries: &mut Summaries,
    stack: &mut Vec<(usize, Frame)>,
    loop_roots: &mut Vec<String>,
    node: Node<'_>,
    source: &str,
    resolver: &impl Resolver,
) {
    let Some((_, frame)) = stack.pop() else {
        return;
    };
    // `if skip: return` on a throttle: the rest of the block runs once every N steps.
    if matches!(frame, Frame::Throttle { exits: true })
        && node.is(kind::IF_STATEMENT)
        && exits_early(node)
        && let Some((_, Frame::Block { throttled })) = stack.last_mut()
    {
        *throttled = true;
        summaries.throttle_exits.insert(node_key(node));
    }
    if let Frame::Loop {
        id,
        summary,
        over_loader,
    } = frame
    {
        // Only the loop that runs the step itself is a training loop: an epoch loop around it
        // calls `evaluate()` once per epoch, not once per step.
        let steps_here = summary.calls_backward && !summary.nested_training_loop;
        let mut summary = summary;
        if steps_here {
            summary.flows_into_backward =
                super::backward_flow::bindings_into_backward(node, source, resolver);
        }
        if summary.concatenates
            && let Some(outputs) =
                super::decode_feedback::decode_model_outputs(node, source, resolver)
        {
            summary.decodes = true;
            summary.model_outputs = outputs;
        }
        // Its calls, nested loops' included (they run every step too), throttled ones not.
        if over_loader || steps_here {
            loop_roots.extend(summary.calls.iter().cloned());
        }
        // The enclosing loop sees what this one does.
        // (Blocks are transparent: the loop's body block lies between the two loops.)
        let enclosing = stack
            .iter_mut()
            .rev()
            .find(|(_, frame)| !matches!(frame, Frame::Block { .. }));
        if let Some((_, Frame::Loop { summary: outer, .. })) = enclosing {
            outer.syncs |= summary.syncs;
            outer.reads_values |= summary.reads_values;
            outer.calls_backward |= summary.calls_backward;
            outer.steps_optimizer |= summary.steps_optimizer;
            outer.nested_training_loop |= summary.calls_backward;
            outer.nested_loader_loop |= over_loader || summary.nested_loader_loop;
            outer.calls.extend(summary.calls.iter().cloned());
        }
        summaries.loops.insert(id, summary);
    }
}

/// Whether a call is the test of an `if`, `elif` or `while` (also under `not`, `and` / `or` or
/// parentheses): Python reads its truth value there. `ancestors` ends with the call.
/// Whether a qualified name belongs to a library that computes on the host (`numpy.random.beta`,
/// `random.random`, `math.cos`).
fn is_host_library(qualified: &str) -> bool {
    ["numpy.", "random.", "math."]
        .iter()
        .any(|prefix| qualified.starts_with(prefix))
}

/// Whether the node whose ancestors these are sits in a `lambda` passed to
/// `xm.add_step_closure(...)`.
fn in_step_closure_lambda(ancestors: &[Node<'_>], source: &str) -> bool {
    ancestors.windows(3).any(|window| {
        window[0].is(kind::CALL)
            && window[1].is(kind::ARGUMENT_LIST)
            && window[2].is(kind::LAMBDA)
            && window[0]
                .field("function")
                .is_some_and(|f| node_text(f, source).ends_with("add_step_closure"))
    })
}

fn decides_control_flow(call: Node<'_>, ancestors: &[Node<'_>]) -> bool {
    let mut current = call;
    for parent in ancestors.iter().rev().skip(1) {
        match parent.kind_key() {
            kind::NOT_OPERATOR | kind::BOOLEAN_OPERATOR | kind::PARENTHESIZED_EXPRESSION => {
                current = *parent
            }
            kind::IF_STATEMENT | kind::ELIF_CLAUSE | kind::WHILE_STATEMENT => {
                return parent
                    .field("condition")
                    .is_some_and(|condition| condition.id() == current.id());
            }
            _ => return false,
        }
    }
    false
}

/// Whether `scaler.step(optimizer)` steps an optimizer: a gradient scaler's `step` unscales the
/// gradients and calls `optimizer.step()` (`torch.amp.GradScaler.step`), so the AMP loop of a
/// CUDA script steps its optimizer there. The receiver reads as a scaler and the first
/// argument as an optimizer (`opt`, `self.optimizer`, `d_opt`).
fn steps_through_scaler(receiver: Option<Node<'_>>, arguments: Node<'_>, source: &str) -> bool {
    let Some(receiver) = receiver else {
        return false;
    };
    if !node_text(receiver, source)
        .to_ascii_lowercase()
        .ends_with("scaler")
    {
        return false;
    }
    syntax::positional_args(arguments)
        .first()
        .is_some_and(|first| {
            let text = node_text(*first, source).to_ascii_lowercase();
            text.contains("opt") && !text.contains("sched")
        })
}

/// Whether an `if` without `else` ends its body with `return` / `continue` (an early exit).
fn exits_early(if_statement: Node<'_>) -> bool {
    if if_statement.field("alternative").is_some() {
        return false;
    }
    let Some(body) = if_statement.field("consequence") else {
        return false;
    };
    let mut last = None;
    for statement in syntax::named_children(body) {
        if statement.is_not(kind::COMMENT) {
            last = Some(statement);
        }
    }
    last.is_some_and(|last| last.is_any(&[kind::RETURN_STATEMENT, kind::CONTINUE_STATEMENT]))
}

/// What each decorator of a `decorated_definition` names: `torch.compile` for both
/// `@torch.compile` and `@torch.compile(fullgraph=True)`.
pub(crate) fn decorator_targets<'t>(decorated: Node<'t>) -> Vec<Node<'t>> {
    let mut targets = Vec::new();
    for decorator in syntax::named_children(decorated) {
        if decorator.is_not(kind::DECORATOR) {
            continue;
        }
        let target = decorator
            .named_child(0)
            .and_then(|expression| match expression.kind_key() {
                kind::CALL => expression.field("function"),
                _ => Some(expression),
            });
        targets.extend(target);
    }
    targets
}

/// Whether a `decorated_definition`'s decorators include `@torch.compile` / `@torch_xla.compile`.
fn compiles(decorated: Node<'_>, resolver: &impl Resolver) -> bool {
    decorator_targets(decorated).into_iter().any(|target| {
        resolver
            .resolve(target)
            .is_some_and(|q| matches!(q.as_str(), "torch.compile" | "torch_xla.compile"))
    })
}

/// Propagates syncs backwards along the call graph and reach forwards from the loop roots and
/// step functions (both cycle-safe: each function is visited once).
fn finish(summaries: &mut Summaries, loop_roots: Vec<String>) {
    stale_parameter_moves(summaries);
    for function in &mut summaries.functions {
        function.compiled |= summaries.compiled_names.contains(&function.name);
    }
    summaries.file.compiles_optimizer_step = summaries
        .functions
        .iter()
        .any(|f| f.compiled && f.steps_optimizer);
    let mut by_name = FunctionsByName::default();
    for (index, function) in summaries.functions.iter().enumerate() {
        by_name.push(&function.name, index);
    }
    summaries.parameter_facts = summaries
        .passed
        .resolve(&summaries.functions, &by_name, |name| {
            summaries.passed_names.contains(name)
        });
    let count = summaries.functions.len();
    // Syncs, and waits: whether a function of the file it calls does, transitively.
    let syncing = through_calls(&summaries.functions, &by_name, |f| f.syncs);
    let waiting = through_calls(&summaries.functions, &by_name, |f| f.waits);
    for (index, function) in summaries.functions.iter_mut().enumerate() {
        function.syncs_through_calls = syncing[index] && !function.syncs;
        function.waits_through_calls = waiting[index] && !function.waits;
    }
    // A loop whose body calls a function that syncs syncs, unless that function syncs only in
    // loops of its own (it owns the steps, as a nested step loop would); so does one that
    // trains in a loop of its own.
    let owns_step_loop = |id: usize| {
        let function = &summaries.functions[id];
        (function.syncs && !function.syncs_outside_loops)
            || (function.trains_in_loops && !function.steps_outside_loops)
    };
    for summary in summaries.loops.values_mut() {
        summary.calls_step_loop_owner = summary.calls.iter().any(|callee| {
            by_name
                .get(callee)
                .is_some_and(|ids| ids.iter().any(|id| owns_step_loop(*id)))
        });
        if !summary.syncs {
            summary.syncs = summary.calls.iter().any(|callee| {
                by_name
                    .get(callee)
                    .is_some_and(|ids| ids.iter().any(|id| syncing[*id] && !owns_step_loop(*id)))
            });
        }
    }
    summaries.file.saving_functions = summaries
        .functions
        .iter()
        .filter(|f| f.first_save.is_some())
        .count();
    // Module loops matter only before a module step marker (`FileFacts::module_loops`); without
    // one they are dropped, so that edits inside a script's training loop compare equal.
    if summaries.file.module_step_markers.is_empty() {
        summaries.file.module_loops.clear();
    }
    load_time(summaries, &by_name);
    once_per_run(summaries, &by_name);
    host_transform_components(summaries);
    cuda_mode_flags(summaries);
    cuda_attributes(summaries);
    cuda_only_callees(summaries, &by_name);
    comparison_scopes(summaries);
    // Calls that run on every call of their function: throttled ones (`if step % n == 0:`, after
    // `if skip: return`) do not carry reach.
    let mut hot_calls: Vec<Vec<(String, CalleeForm)>> = vec![Vec::new(); count];
    for site in &summaries.call_sites {
        if let Some(caller) = site.caller
            && !site.throttled
        {
            hot_calls[caller].push((site.callee.clone(), site.form.clone()));
        }
    }
    // Reach: from the calls of training loops and step functions, through the call graph.
    let mut queue: Vec<(String, CalleeForm)> = loop_roots
        .into_iter()
        .map(|name| (name, CalleeForm::Bare))
        .collect();
    for (index, function) in summaries.functions.iter().enumerate() {
        if is_step_function_name(&function.name)
            || is_per_step_hook(&function.name)
            || function.name == "forward"
            || function.optimizer_step
        {
            queue.extend(hot_calls[index].iter().cloned());
        }
    }
    let mut reached: Vec<bool> = vec![false; count];
    while let Some((name, form)) = queue.pop() {
        let Some(ids) = by_name.get(&name) else {
            continue;
        };
        for &id in ids {
            if reached[id] || !form.can_reach(&summaries.functions[id]) {
                continue;
            }
            reached[id] = true;
            summaries.functions[id].reached_from_loop = true;
            summaries.functions[id].load_time = false;
            summaries.functions[id].once_per_run = false;
            queue.extend(hot_calls[id].iter().cloned());
        }
    }
}

/// Marks the functions every call of which in this file runs only with CUDA (directly under a
/// CUDA guard, or from another such function or one whose body calls a CUDA-only package, to a
/// fixpoint) and makes their bodies CUDA-only scope. A function the file never calls is left alone: its callers are elsewhere.
/// Per function, whether it has the property `own` or calls (by name, transitively) a function
/// of the file that has it: a fixpoint over the call graph, at most one round per function
/// (64 at most), so cycles end. (`own` is a function pointer: one instance of this function
/// for its callers.)
fn through_calls(
    functions: &[FunctionSummary],
    by_name: &FunctionsByName,
    own: fn(&FunctionSummary) -> bool,
) -> Vec<bool> {
    let count = functions.len();
    let mut marked: Vec<bool> = functions.iter().map(own).collect();
    for _ in 0..count.min(64) {
        let mut changed = false;
        for index in 0..count {
            if marked[index] {
                continue;
            }
            let through = functions[index].calls.iter().any(|callee| {
                by_name
                    .get(callee)
                    .is_some_and(|ids| ids.iter().any(|id| marked[*id]))
            });
            if through {
                marked[index] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    marked
}

fn cuda_only_callees(summaries: &mut Summaries, by_name: &FunctionsByName) {
    let mut sites = CallerGroups::default();
    for site in &summaries.call_sites {
        if by_name.contains_key(&site.callee) {
            sites.push(&site.callee, (site.caller, site.cuda_only));
        }
    }
    // Functions whose own body calls a CUDA-only package unconditionally (`index_first_axis` of
    // FlashAttention in `_upad_input`) need CUDA whenever they run, like a guarded call.
    // By function index (a flag per function rather than a set of indices: one hash-set type
    // fewer in the WebAssembly module).
    let mut cuda_only: Vec<bool> = (0..summaries.functions.len())
        .map(|index| {
            summaries
                .body_block(index)
                .is_some_and(|block| summaries.cuda_library_scopes.contains(&block))
        })
        .collect();
    let library_users = cuda_only.clone();
    for _ in 0..summaries.functions.len().min(64) {
        let mut changed = false;
        for (name, calls) in &sites.entries {
            let all = calls.iter().all(|(caller, direct)| {
                *direct || caller.is_some_and(|c| cuda_only.get(c).copied().unwrap_or(false))
            });
            if !all {
                continue;
            }
            for id in by_name.indices(name) {
                // A recursive call alone does not make a function CUDA-only.
                if calls.iter().all(|(caller, _)| *caller == Some(*id)) {
                    continue;
                }
                changed |= !std::mem::replace(&mut cuda_only[*id], true);
            }
        }
        if !changed {
            break;
        }
    }
    for id in (0..cuda_only.len()).filter(|&id| cuda_only[id] && !library_users[id]) {
        summaries
            .cuda_only_callees
            .insert(summaries.functions[id].name.clone());
        if let Some(block) = summaries.body_block(id) {
            summaries.cuda_library_scopes.insert(block);
        }
    }
}

/// The class whose body defines a function (through a decorator), if any. `ancestors` ends
/// with the function; read from it rather than by `Node::parent`, which walks down from the root.
fn defining_class<'t>(ancestors: &[Node<'t>]) -> Option<Node<'t>> {
    let above = &ancestors[..ancestors.len().saturating_sub(1)];
    let above = match above {
        [rest @ .., decorated] if decorated.is(kind::DECORATED_DEFINITION) => rest,
        _ => above,
    };
    let [.., class, block] = above else {
        return None;
    };
    (block.is(kind::BLOCK) && class.is(kind::CLASS_DEFINITION)).then_some(*class)
}

/// Whether a call (the last of `ancestors`) is an operand of a comparison, perhaps inside
/// parentheses, a tuple, a list or a set: `syntax::is_comparison_operand` read from the
/// pre-pass's ancestors rather than by `Node::parent`, which walks down from the root and cost
/// the pre-pass more than all else it does per call.
fn is_comparison_operand(ancestors: &[Node<'_>]) -> bool {
    for parent in ancestors.iter().rev().skip(1).take(syntax::MAX_EXPR_DEPTH) {
        match parent.kind_key() {
            kind::COMPARISON_OPERATOR => return true,
            kind::PARENTHESIZED_EXPRESSION | kind::TUPLE | kind::LIST | kind::SET => {}
            _ => return false,
        }
    }
    false
}

/// Whether `class` names `torch.optim.Optimizer` (however imported) among its bases.
fn derives_from_optimizer(class: Node<'_>, resolver: &impl Resolver) -> bool {
    class.field("superclasses").is_some_and(|bases| {
        bases.named_nodes().any(|base| {
            resolver
                .resolve(base)
                .is_some_and(|qualified| crate::torch_api::is_optimizer_base(&qualified))
        })
    })
}

/// Whether a parameter of `function` is annotated as a host image or array: `PIL.Image.Image`
/// or `numpy.ndarray`, resolved through the file's imports.
/// See [`FunctionSummary::true_only_off_tpu`]. The body is read statement by statement from
/// the top: a docstring, expression statements (assignments, calls) and `if <anything>:` blocks
/// that only return `False` or raise are passed over; the first `if <test>: return False` whose
/// test holds on a TPU, or a `return <CUDA test>`, decides. Any other statement (a loop, an `if`
/// with another body, a return of something else) means the body says nothing.
fn true_only_off_tpu(function: Node<'_>, source: &str) -> bool {
    let Some(body) = function.field("body") else {
        return false;
    };
    for statement in body.named_nodes() {
        match statement.kind_key() {
            kind::COMMENT | kind::EXPRESSION_STATEMENT | kind::PASS_STATEMENT => {}
            kind::IF_STATEMENT if statement.field("alternative").is_none() => {
                let Some(only) = statement
                    .field("consequence")
                    .filter(|c| c.named_child_count() == 1)
                    .and_then(|c| c.named_child(0))
                else {
                    return false;
                };
                let returns_false = only.is(kind::RETURN_STATEMENT)
                    && only
                        .named_child(0)
                        .is_some_and(|value| value.is(kind::FALSE));
                if !returns_false && only.is_not(kind::RAISE_STATEMENT) {
                    return false;
                }
                // After `if <test>: return False`, a true result means the test was false.
                if returns_false
                    && statement
                        .field("condition")
                        .and_then(|c| guards::device_test(c, source))
                        .is_some_and(|test| {
                            guards::never_on_tpu_when_true(guards::DeviceTest {
                                positive: !test.positive,
                                ..test
                            })
                        })
                {
                    return true;
                }
            }
            kind::RETURN_STATEMENT => {
                return statement
                    .named_child(0)
                    .and_then(|value| guards::device_test(value, source))
                    .is_some_and(guards::never_on_tpu_when_true);
            }
            _ => return false,
        }
    }
    false
}

/// See [`FunctionSummary::returns_bucket`]: a `for <width> in ...:` statement of the body whose
/// own body holds `if <test>: return <width>`, the test a comparison of `<width>` with a
/// parameter.
fn returns_bucket(function: Node<'_>, source: &str) -> bool {
    let Some(body) = function.field("body") else {
        return false;
    };
    let parameters = parameter_names(function, source);
    body.named_nodes()
        .filter(|statement| statement.is(kind::FOR_STATEMENT))
        .any(|loop_node| {
            let Some(width) = loop_node
                .field("left")
                .filter(|left| left.is(kind::IDENTIFIER))
                .map(|left| node_text(left, source))
            else {
                return false;
            };
            loop_node.field("body").is_some_and(|loop_body| {
                loop_body.named_nodes().any(|statement| {
                    let Some(condition) = statement
                        .is(kind::IF_STATEMENT)
                        .then(|| statement.field("condition"))
                        .flatten()
                        .map(syntax::unparenthesize)
                        .filter(|c| c.is(kind::COMPARISON_OPERATOR))
                    else {
                        return false;
                    };
                    let compares_parameter = parameters
                        .iter()
                        .any(|p| syntax::mentions_identifier(condition, p, source))
                        && syntax::mentions_identifier(condition, width, source);
                    compares_parameter
                        && statement.field("consequence").is_some_and(|block| {
                            block.named_nodes().any(|only| {
                                only.is(kind::RETURN_STATEMENT)
                                    && only.named_child(0).is_some_and(|value| {
                                        value.is(kind::IDENTIFIER)
                                            && node_text(value, source) == width
                                    })
                            })
                        })
                })
            })
        })
}

fn takes_host_input(function: Node<'_>, resolver: &impl Resolver) -> bool {
    let Some(parameters) = function.field("parameters") else {
        return false;
    };
    for parameter in syntax::named_children(parameters) {
        if parameter.is_any(&[kind::TYPED_PARAMETER, kind::TYPED_DEFAULT_PARAMETER])
            && parameter
                .field("type")
                .and_then(|annotation| annotation.named_child(0))
                .and_then(|annotation| resolver.resolve(annotation))
                .is_some_and(|qualified| {
                    matches!(qualified.as_str(), "PIL.Image.Image" | "numpy.ndarray")
                })
        {
            return true;
        }
    }
    false
}

/// The names of a function's parameters (`self` included), with annotations and defaults removed.
fn parameter_names(function: Node<'_>, source: &str) -> Vec<String> {
    let Some(parameters) = function.field("parameters") else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for parameter in syntax::named_children(parameters) {
        let name = match parameter.kind_key() {
            kind::IDENTIFIER => Some(parameter),
            kind::TYPED_PARAMETER => parameter.named_child(0),
            kind::DEFAULT_PARAMETER | kind::TYPED_DEFAULT_PARAMETER => parameter.field("name"),
            _ => None,
        };
        if let Some(name) = name.filter(|name| name.is(kind::IDENTIFIER)) {
            names.push(node_text(name, source).to_string());
        }
    }
    names
}

/// Whether a function is a load-time root: it takes a state dict to rewrite
/// (`checkpoint_filter_fn(state_dict, model)`, `convert(original_state_dict)`), it is one of
/// `nn.Module`'s state-dict hooks, or its name says it loads weights into a model
/// ([`names_weight_loading`]). (A `checkpoint=` parameter is not enough: a `train()` may take
/// one to resume from.)
fn is_load_time_root(function: &FunctionSummary) -> bool {
    matches!(
        function.name.as_str(),
        "_load_from_state_dict" | "load_state_dict" | "_register_load_state_dict_pre_hook"
    ) || names_weight_loading(&function.name)
        || function.parameters.iter().any(|parameter| {
            let lower = parameter.to_ascii_lowercase();
            lower == "state_dict" || lower.ends_with("_state_dict")
        })
}

/// A name that starts with `load` (leading underscores aside) and names what it loads as weights,
/// a pretrained model or a checkpoint: `load_pretrained`, `_load_weights`, `load_checkpoint`,
/// `load_ckpt`. Such a function runs once per load (timm-style ViTs resize their position
/// embeddings there); reach still wins if a training loop of the file calls it.
fn names_weight_loading(name: &str) -> bool {
    let name = name.trim_start_matches('_').to_ascii_lowercase();
    name.starts_with("load")
        && ["weight", "pretrained", "checkpoint", "ckpt"]
            .iter()
            .any(|what| name.contains(what))
}

/// Marks load-time functions: the roots, then (to a fixpoint) functions every one of whose callers
/// in this file is load-time. Reach wins: a function a training loop reaches is never load-time.
fn load_time(summaries: &mut Summaries, by_name: &FunctionsByName) {
    let count = summaries.functions.len();
    let mut callers: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (caller, function) in summaries.functions.iter().enumerate() {
        for callee in &function.calls {
            for id in by_name.indices(callee) {
                if *id != caller {
                    callers[*id].push(caller);
                }
            }
        }
    }
    let mut once: Vec<bool> = summaries.functions.iter().map(is_load_time_root).collect();
    for _ in 0..count.min(64) {
        let mut changed = false;
        for index in 0..count {
            if !once[index] && !callers[index].is_empty() && callers[index].iter().all(|c| once[*c])
            {
                once[index] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (function, once) in summaries.functions.iter_mut().zip(once) {
        function.load_time = once;
    }
}

/// Fills [`Summaries::host_transform_components`]: the names every call of which in this file is
/// in a method of a host data transform (a class one of whose `__call__` methods takes a host image
/// or array).
fn host_transform_components(summaries: &mut Summaries) {
    let mut transforms = NameSet::default();
    for function in &summaries.functions {
        if function.takes_host_input
            && let Some(class) = function.class_name.as_deref()
        {
            transforms.insert(class);
        }
    }
    if transforms.is_empty() {
        return;
    }
    let in_transform = |site: &CallSite| {
        site.caller
            .and_then(|caller| summaries.functions[caller].class_name.as_deref())
            .is_some_and(|class| transforms.contains(class))
    };
    // The names called at least once outside a transform; then every other name called.
    let mut outside = NameSet::default();
    for site in &summaries.call_sites {
        if !in_transform(site) {
            outside.insert(site.callee.as_str());
        }
    }
    let mut components: StringSet = StringSet::default();
    for site in &summaries.call_sites {
        let name = site.callee.as_str();
        if !outside.contains(name) && !transforms.contains(name) {
            components.insert(name.to_string());
        }
    }
    summaries.host_transform_components.extend(components);
}

/// Marks the functions that run a fixed few times per run (see
/// [`FunctionSummary::once_per_run`]): to a fixpoint, a function with no loop of its own, not
/// passed as a value, and not a per-step entry point (`forward`, step functions, per-step
/// hooks), every call of which in this file is outside loops, comprehensions and lambdas, at
/// module level or in another such function. A function the file never calls is left alone:
/// its callers are elsewhere.
fn once_per_run(summaries: &mut Summaries, by_name: &FunctionsByName) {
    let count = summaries.functions.len();
    // Per callee, its call sites' callers and whether each may repeat (the map type
    // `cuda_only_callees` uses: one hash-map type fewer in the WebAssembly module).
    let mut sites = CallerGroups::default();
    for site in &summaries.call_sites {
        if by_name.contains_key(&site.callee) {
            sites.push(&site.callee, (site.caller, site.repeated));
        }
    }
    let eligible: Vec<bool> = summaries
        .functions
        .iter()
        .map(|function| {
            !function.has_loop
                && function.name != "forward"
                && !is_step_function_name(&function.name)
                && !is_per_step_hook(&function.name)
                && !summaries.passed_names.contains(&function.name)
                && !summaries.step_closures.contains(&function.name)
        })
        .collect();
    let mut once = vec![false; count];
    for _ in 0..count.min(64) {
        let mut changed = false;
        for (name, calls) in &sites.entries {
            for id in by_name.indices(name) {
                if once[*id] || !eligible[*id] {
                    continue;
                }
                let all = calls.iter().all(|(caller, repeated)| {
                    !repeated && caller.is_none_or(|caller| caller != *id && once[caller])
                });
                if all {
                    once[*id] = true;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    for (function, once) in summaries.functions.iter_mut().zip(once) {
        function.once_per_run = once;
    }
}

/// The loader a loop iterates, by name (`loader`, `train_dataloader`, `dl`), looking through
/// `enumerate(...)`, `tqdm(...)`, `zip(...)`.
fn loader_name<'s>(iterable: Node<'_>, source: &'s str) -> Option<&'s str> {
    let iterable = syntax::unparenthesize(iterable);
    match iterable.kind_key() {
        kind::IDENTIFIER | kind::ATTRIBUTE => {
            let parts = syntax::dotted_parts(iterable, source)?;
            let last = *parts.last()?;
            let lower = last.to_ascii_lowercase();
            (lower.contains("loader") || lower == "train_dl" || lower == "dl").then_some(last)
        }
        kind::CALL => {
            let (function, arguments) = syntax::call_parts(iterable)?;
            let name = node_text(function, source);
            if name.ends_with("per_device_loader") {
                return Some(name);
            }
            let wrapper = matches!(name, "enumerate" | "zip" | "iter") || name.ends_with("tqdm");
            if !wrapper {
                return None;
            }
            let first = syntax::positional_args(arguments).first().copied()?;
            loader_name(first, source)
        }
        _ => None,
    }
}

/// Framework hooks that run on every batch: Lightning's `on_train_batch_end`,
/// `on_validation_batch_start`, `on_before_optimizer_step`, `on_after_backward`; Hugging Face
/// `TrainerCallback.on_step_end` / `on_step_begin`, and `Trainer.compute_loss`, which a
/// `Trainer` subclass overrides and `Trainer.training_step` calls on every batch (its callers
/// are in another package, so no call graph of the file reaches it).
pub(crate) fn is_per_step_hook(name: &str) -> bool {
    (name.starts_with("on_") && name.contains("_batch_"))
        || matches!(
            name,
            "on_step_end"
                | "on_step_begin"
                | "on_before_optimizer_step"
                | "on_after_backward"
                | "on_before_backward"
                | "compute_loss"
        )
}

/// `train_step`, `training_step`, `validation_step`, `step_fn`, `train_fn` …
pub(crate) fn is_step_function_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (lower.ends_with("_step") && lower != "optimizer_step" && lower != "lr_scheduler_step")
        || lower.ends_with("step_fn")
        || lower == "train_fn"
}

/// Records backend evidence from a call's device positions.
fn device_evidence(
    qualified: &str,
    method: Option<&str>,
    argument_nodes: &[Node<'_>],
    source: &str,
    file: &mut FileFacts,
) {
    if qualified.starts_with("torch.tpu.") {
        file.tpu_evidence = true;
    }
    let mut record = |value: Node<'_>, position: &str| {
        let Some(text) = syntax::string_value(value, source) else {
            return;
        };
        let kind = text
            .split(':')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match (position, kind.as_str()) {
            // Lightning's TPU accelerator runs on PyTorch/XLA.
            ("accelerator", "tpu" | "xla") => file.xla_evidence = true,
            ("backend", "openxla" | "openxla_eval" | "xla") => file.xla_evidence = true,
            ("backend", "tpu") => file.tpu_evidence = true,
            ("device", "xla") => file.xla_evidence = true,
            ("device", "tpu") => file.tpu_evidence = true,
            _ => {}
        }
    };
    let positional_device = qualified == "torch.device" || method == Some("to");
    for (index, &argument) in argument_nodes.iter().enumerate() {
        match argument.kind_key() {
            kind::KEYWORD_ARGUMENT => {
                let name = argument
                    .field("name")
                    .map(|n| node_text(n, source))
                    .unwrap_or("");
                let position = match name {
                    "device" | "map_location" => "device",
                    "accelerator" => "accelerator",
                    "backend" => "backend",
                    _ => continue,
                };
                if let Some(value) = argument.field("value") {
                    record(value, position);
                }
            }
            _ if index == 0 && positional_device => record(argument, "device"),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::semantic::SemanticModel;
    use crate::settings::BackendSetting;

    /// A class statement's part walked with its methods walked apart, and again with every
    /// method's part reused, equals its part walked whole, and so do the recorded walk steps
    /// (node, depth, kind), on every top-level statement of the fixtures, examples and
    /// realistic files. (Summaries are compared by their pretty-printed lines, sorted: hash
    /// maps built in another order print in another order.)
    #[test]
    fn methods_walked_apart_or_reused_give_the_class_s_part() {
        use crate::hash::HashMap;
        use crate::syntax::NodeExt;
        let lines = |part: super::StatementPart| {
            // Kept only while a statement is walked, per function (`append` drops them).
            let mut summaries = part.summaries;
            summaries.bound_names.clear();
            summaries.throttle_names.clear();
            let mut lines: Vec<String> = format!("{summaries:#?}")
                .lines()
                .map(str::to_string)
                .collect();
            lines.sort();
            (lines, part.loop_roots, part.compiled_decorator)
        };
        let steps = |steps: &[super::WalkStep<'_>]| -> Vec<(usize, u32, u16)> {
            steps
                .iter()
                .map(|step| (step.node.id(), step.depth, step.kind))
                .collect()
        };
        let mut reused = 0;
        let mut files =
            crate::python_files_under(&["tests/fixtures", "examples", "tests/realistic"]);
        // `__init__` marks its class as needing CUDA: that part is not kept.
        let marks_its_class = "import torch\n\n\n@decorate\nclass Model(torch.nn.Module):\n    \
            def __init__(self):\n        if not torch.cuda.is_available():\n            \
            raise RuntimeError('CUDA')\n\n    @torch.compile\n    def forward(self, x):\n        \
            return x.item()\n";
        files.push((
            std::path::PathBuf::from("marks_its_class"),
            marks_its_class.to_string(),
        ));
        for (path, source) in files {
            let tree = crate::syntax::parse(&source, None).expect("parses");
            let model = SemanticModel::new(&source, &tree, BackendSetting::Auto);
            for statement in tree.root_node().named_nodes() {
                let walk = |methods: Option<&mut super::MethodParts<'_>>| {
                    let mut record = Vec::new();
                    let part = super::walk_statement(
                        statement,
                        &source,
                        &model,
                        false,
                        Some(&mut record),
                        methods,
                        super::Around::default(),
                    );
                    (lines(part), steps(&record))
                };
                let whole = walk(None);
                let mut kept = HashMap::default();
                let apart = walk(Some(&mut super::MethodParts {
                    caches: &[],
                    kept: &mut kept,
                    keys: Vec::new(),
                }));
                let cache = super::SummaryCache {
                    method_parts: kept,
                    ..super::SummaryCache::default()
                };
                let caches = [&&cache];
                let mut methods = super::MethodParts {
                    caches: &caches,
                    kept: &mut HashMap::default(),
                    keys: Vec::new(),
                };
                let from_cache = walk(Some(&mut methods));
                let context = || format!("{}: {}", path.display(), &source[statement.byte_range()]);
                assert!(whole == apart, "walked apart: {}", context());
                assert!(whole == from_cache, "reused: {}", context());
                reused += methods.kept.len();
                if path.as_os_str() == "marks_its_class"
                    && statement.is(crate::kind::DECORATED_DEFINITION)
                {
                    assert_eq!(methods.keys.len(), 1, "only `forward`'s part is kept");
                }
            }
        }
        assert!(reused > 50, "{reused} methods' parts reused");
    }

    /// Merging a cached part by reference (`merge`: the reusing pre-pass, at every reused
    /// statement and method) gives what a copy of it shifted forward and appended gives
    /// (`shift`, `append`: the pre-pass's own merge of a part it walks), statement after
    /// statement over every fixture, example and realistic file: the same summaries (their
    /// pretty-printed lines, sorted, since maps filled in another order print in another order;
    /// and the lists, whose order carries function indices, compared as they are) and loop
    /// roots. It fails when an offset, a key or a function index is left unmoved.
    #[test]
    fn a_part_merged_by_reference_is_the_part_shifted_and_appended() {
        use crate::syntax::NodeExt;
        let compare = |a: &super::Summaries, b: &super::Summaries| -> bool {
            let lines = |summaries: &super::Summaries| {
                let mut lines: Vec<String> = format!("{summaries:#?}")
                    .lines()
                    .map(str::to_string)
                    .collect();
                lines.sort();
                lines
            };
            let lists = |s: &super::Summaries| {
                format!(
                    "{:?} {:?}",
                    (
                        &s.functions,
                        &s.call_sites,
                        &s.passed,
                        &s.flag_sets,
                        &s.body_blocks,
                        &s.block_guards,
                    ),
                    (
                        &s.module_moves,
                        &s.optimizer_steps,
                        &s.parameter_captures,
                        &s.device_literal_calls,
                        &s.cuda_device_functions,
                        &s.attribute_values,
                        &s.file,
                    )
                )
            };
            lines(a) == lines(b) && lists(a) == lists(b)
        };
        let mut merged = 0;
        for (path, source) in
            crate::python_files_under(&["tests/fixtures", "examples", "tests/realistic"])
        {
            let tree = crate::syntax::parse(&source, None).expect("parses");
            let model = SemanticModel::new(&source, &tree, BackendSetting::Auto);
            let (mut by_copy, mut by_copy_roots) = (super::Summaries::default(), Vec::new());
            let (mut by_reference, mut by_reference_roots) =
                (super::Summaries::default(), Vec::new());
            for statement in tree.root_node().named_nodes() {
                let base = statement.start_byte();
                let mut part = super::walk_statement(
                    statement,
                    &source,
                    &model,
                    false,
                    None,
                    None,
                    super::Around::default(),
                );
                // As the cache keeps it: keys and offsets relative to the statement.
                super::shift(&mut part.summaries, base, false);
                let mut copy = part.clone();
                super::shift(&mut copy.summaries, base, true);
                super::append(
                    &mut by_copy,
                    &mut by_copy_roots,
                    copy.summaries,
                    copy.loop_roots,
                );
                super::merge(&mut by_reference, &mut by_reference_roots, &part, base);
                assert!(
                    compare(&by_copy, &by_reference) && by_copy_roots == by_reference_roots,
                    "{}: {}",
                    path.display(),
                    &source[statement.byte_range()]
                );
                merged += usize::from(!part.summaries.is_empty());
            }
        }
        assert!(merged > 100, "{merged} parts merged");
    }

    /// `Summaries::is_empty` says what a comparison with the default says, for every top-level
    /// statement's part of the repository's fixtures and examples (both kinds occur), so that no
    /// part the reusing pre-pass skips had anything to merge.
    #[test]
    fn an_empty_part_is_the_default() {
        use crate::syntax::NodeExt;
        let (mut empty, mut other) = (0, 0);
        for (path, source) in crate::python_files_under(&["tests/fixtures", "examples"]) {
            let tree = crate::syntax::parse(&source, None).expect("parses");
            let model = SemanticModel::new(&source, &tree, BackendSetting::Auto);
            for statement in tree.root_node().named_nodes() {
                let part = super::walk_statement(
                    statement,
                    &source,
                    &model,
                    false,
                    None,
                    None,
                    super::Around::default(),
                );
                let is_default = part.loop_roots.is_empty()
                    && format!("{:?}", part.summaries)
                        == format!("{:?}", super::Summaries::default());
                assert_eq!(
                    part.loop_roots.is_empty() && part.summaries.is_empty(),
                    is_default,
                    "{}: {}",
                    path.display(),
                    &source[statement.byte_range()]
                );
                if is_default {
                    empty += 1;
                } else {
                    other += 1;
                }
            }
        }
        assert!(empty > 100 && other > 100, "{empty} empty, {other} not");
    }

    fn collective_calls(source: &str) -> Vec<String> {
        let tree = crate::syntax::parse(source, None).expect("parses");
        let model = SemanticModel::new(source, &tree, BackendSetting::Auto);
        model.file_facts().collective_calls.clone()
    }

    #[test]
    fn collective_calls_are_recorded_with_their_first_argument() {
        let source = "import torch_xla.core.xla_model as xm\n\
            if not xm.is_master_ordinal():\n    xm.rendezvous('once')\n\
            def step(loss, optimizer):\n    xm.all_reduce(xm.REDUCE_SUM, loss)\n    \
            xm.optimizer_step(optimizer)\n    xm.mark_step()\n    xm.save(loss, 'p')\n\
            xm.rendezvous('once')\n";
        assert_eq!(
            collective_calls(source),
            [
                "torch_xla.core.xla_model.rendezvous('once')",
                "torch_xla.core.xla_model.all_reduce(xm.REDUCE_SUM)",
                "torch_xla.core.xla_model.optimizer_step(optimizer)",
                "torch_xla.core.xla_model.rendezvous('once')",
            ]
        );
        // Another module's `rendezvous` is no PyTorch/XLA collective.
        assert!(collective_calls("import mylib\nmylib.rendezvous('x')\n").is_empty());
    }

    /// Every block's guard as the traversal reads it from the pre-pass (`Summaries::block_guard`)
    /// is the guard worked out afresh with the block's whole ancestry; the pre-pass sees only
    /// the ancestors inside the top-level statement, and its list is searched by key.
    #[test]
    fn the_pre_pass_block_guards_are_the_traversal_s() {
        use crate::kind;
        use crate::semantic::guards;
        use crate::syntax::NodeExt;
        let sources = crate::test_sources(&[
            "if torch.cuda.is_available():\n    a()\nelif is_torch_xla_available():\n    b()\nelse:\n    c()\n",
            "class A:\n    @staticmethod\n    def f(x):\n        if x == 'cuda':\n            return 1\n        for i in range(torch.cuda.device_count()):\n            pass\n        while not use_tpu:\n            break\n",
            "if TYPE_CHECKING:\n    import torch\nif x.dtype == torch.float16:\n    y = 1\nelse:\n    if is_torch_npu_available():\n        pass\n    else:\n        torch.cuda.manual_seed_all(0)\n",
            "def g(:\n    if a:\n  pass\n else:\n    pass\n",
        ]);
        let mut blocks = 0;
        for source in &sources {
            let tree = crate::syntax::parse(source, None).expect("parses");
            let model = SemanticModel::new(source, &tree, BackendSetting::Auto);
            // Named ancestors from the root down, as the traversal keeps them.
            let mut ancestors = vec![tree.root_node()];
            let mut cursor = tree.root_node().walk();
            let mut descending = cursor.goto_first_child();
            while descending || cursor.goto_parent() {
                let node = cursor.node();
                if descending {
                    if node.is_named() {
                        ancestors.push(node);
                        let count = ancestors.len();
                        if node.is(kind::BLOCK) && count >= 3 {
                            let (parent, grandparent) =
                                (ancestors[count - 2], ancestors[count - 3]);
                            assert_eq!(
                                model.summaries.block_guard(node),
                                Some(guards::block_guard(node, parent, Some(grandparent), source)),
                                "block at {} in {source:?}",
                                node.start_byte()
                            );
                            blocks += 1;
                        }
                    }
                    descending = cursor.goto_first_child();
                    if descending {
                        continue;
                    }
                }
                if node.is_named() {
                    ancestors.pop();
                }
                descending = cursor.goto_next_sibling();
            }
        }
        assert!(blocks > 1000, "only {blocks} blocks");
    }
}
