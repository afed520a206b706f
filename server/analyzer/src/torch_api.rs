//! The one table of torch knowledge the index and the rules ask: factories and their defaults,
//! dtype names, which functions and methods return tensors and which do not, module methods that
//! return the module, boolean ops, and CUDA APIs that raise or do nothing without CUDA. Rules ask
//! it instead of keeping their own copies.
//!
//! Sources: the PyTorch 2.9 API reference (`torch`, `torch.Tensor`, `torch.nn.Module`,
//! `torch.cuda`, "Tensor Attributes" for dtypes); `../shared/domain/pitfalls.md` B.5 for CUDA APIs
//! on a TPU.

use crate::word_list::{WordList, word_list};

/// `torch.<factory>(...)`: allocate on the default device (the host) unless `device=` says
/// otherwise; `torch.from_numpy` always shares host memory.
pub const TENSOR_FACTORIES: WordList = word_list![
    "zeros",
    "ones",
    "empty",
    "full",
    "rand",
    "randn",
    "randint",
    "randperm",
    "arange",
    "range",
    "linspace",
    "logspace",
    "eye",
    "tensor",
    "as_tensor",
    "from_numpy",
    "empty_strided",
    "tril_indices",
    "triu_indices",
    "complex",
    "polar",
];

/// The legacy tensor constructors (`torch.Tensor([0])`, `torch.LongTensor(n)`): like the
/// factories, they allocate on the host unless `device=` says otherwise (the typed CUDA ones,
/// `torch.cuda.FloatTensor`, are other names).
pub const LEGACY_TENSOR_CONSTRUCTORS: WordList = word_list![
    "Tensor",
    "FloatTensor",
    "DoubleTensor",
    "HalfTensor",
    "BFloat16Tensor",
    "LongTensor",
    "IntTensor",
    "ShortTensor",
    "CharTensor",
    "ByteTensor",
    "BoolTensor",
];

/// The factories of [`TENSOR_FACTORIES`] built from tensors (`torch.complex(real, imag)`,
/// `torch.polar(abs, angle)`): they take no `device=` and return on their arguments' device.
pub const ARGUMENT_PLACED_FACTORIES: WordList = word_list!["complex", "polar"];

/// The factories of [`TENSOR_FACTORIES`] that build a tensor from a shape or range alone (no
/// data argument): a `.to(device)` right after one copies what `device=` would have allocated
/// in place.
pub const SHAPE_FACTORIES: WordList = word_list![
    "zeros",
    "ones",
    "empty",
    "full",
    "rand",
    "randn",
    "randint",
    "randperm",
    "arange",
    "linspace",
    "logspace",
    "eye",
    "tril_indices",
    "triu_indices",
];

/// The random factories: with `device=` they draw from the device's generator instead of the
/// host's, so moving `device=` into one changes the numbers drawn.
pub const RANDOM_FACTORIES: WordList = word_list!["rand", "randn", "randint", "randperm"];

/// `torch.<factory>_like(t)`: the device (and dtype) of `t` unless given.
pub const LIKE_FACTORIES: WordList = word_list![
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
    "rand_like",
    "randn_like",
    "randint_like",
];

/// Python's builtins that code uses as values without binding them: an excerpt's free names
/// other than these are values of the code it was cut from (`SemanticModel`'s excerpt reading).
pub const PYTHON_BUILTINS: WordList = word_list![
    "print",
    "len",
    "range",
    "int",
    "float",
    "bool",
    "str",
    "bytes",
    "list",
    "dict",
    "tuple",
    "set",
    "frozenset",
    "max",
    "min",
    "sum",
    "abs",
    "round",
    "pow",
    "divmod",
    "enumerate",
    "zip",
    "map",
    "filter",
    "sorted",
    "reversed",
    "iter",
    "next",
    "any",
    "all",
    "isinstance",
    "issubclass",
    "type",
    "object",
    "super",
    "open",
    "getattr",
    "setattr",
    "hasattr",
    "delattr",
    "callable",
    "id",
    "hash",
    "repr",
    "format",
    "vars",
    "globals",
    "locals",
    "slice",
    "input",
    "exit",
    "quit",
    "property",
    "staticmethod",
    "classmethod",
    "Exception",
    "BaseException",
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "RuntimeError",
    "AssertionError",
    "NotImplementedError",
    "StopIteration",
    "NotImplemented",
    "Ellipsis",
    "__name__",
    "__file__",
    "self",
    "cls",
];

/// torch_xla's loaders that put each batch on the device (`pl.MpDeviceLoader(loader, device)`).
pub fn is_device_loader(qualified: &str) -> bool {
    qualified == "torch_xla.distributed.parallel_loader.MpDeviceLoader"
        || qualified.ends_with("parallel_loader.ParallelLoader")
}

/// torchvision's box and detection ops (`torchvision.ops.*`, by their last name) that compute a
/// tensor where their tensor arguments are: `iou = box_iou(gt_boxes, anchors)` is a tensor on
/// the anchors' device, and so what it is compared with (`iou.max(dim=0).values < 0.4`) is a
/// boolean tensor.
pub const TORCHVISION_TENSOR_OPS: WordList = word_list![
    "box_iou",
    "generalized_box_iou",
    "distance_box_iou",
    "complete_box_iou",
    "box_area",
    "box_convert",
    "clip_boxes_to_image",
    "masks_to_boxes",
    "sigmoid_focal_loss",
    "nms",
    "batched_nms",
    "roi_align",
    "roi_pool",
];

/// Library functions that return the state dict of the module they are given, its tensors where
/// the module is (no CPU copy), by qualified-name prefix and last name: PEFT's
/// `get_peft_model_state_dict(model)` (the adapter weights a LoRA script saves).
pub const MODULE_STATE_DICT_FUNCTIONS: &[(&str, &str)] = &[("peft", "get_peft_model_state_dict")];

/// torchaudio transforms (`torchaudio.transforms.<name>`) whose forward computes `torch.stft`
/// (or `torch.istft`): as a layer of a model they run it wherever the model runs.
pub const TORCHAUDIO_STFT_TRANSFORMS: WordList = word_list![
    "Spectrogram",
    "MelSpectrogram",
    "MFCC",
    "LFCC",
    "InverseSpectrogram",
    "GriffinLim",
];

/// torch functions that return one tensor per tensor input, each where its input is:
/// `ys, xs = torch.meshgrid(shifts_y, shifts_x)` leaves `xs` on the host when `shifts_x` is.
pub const PER_INPUT_RESULT_FUNCTIONS: WordList = word_list![
    "meshgrid",
    "broadcast_tensors",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
];

/// Tensor methods whose result depends on the receiver's shape (and dtype, device) alone, never
/// on its values: `x.size(1)`, `x.new_ones(n, 1)`. A value computed by one says how big `x` is,
/// not what it holds.
pub const SHAPE_ONLY_METHODS: WordList = word_list![
    "size",
    "dim",
    "numel",
    "new_zeros",
    "new_ones",
    "new_empty",
    "new_full",
];

/// torch functions whose result is not a tensor.
pub const NON_TENSOR_FUNCTIONS: WordList = word_list![
    "device",
    "is_tensor",
    "is_floating_point",
    "numel",
    "manual_seed",
    "seed",
    "get_default_dtype",
    "set_default_dtype",
    "no_grad",
    "enable_grad",
    "inference_mode",
    "set_grad_enabled",
    "compile",
    "load",
    "save",
    "is_grad_enabled",
    "get_rng_state",
    "finfo",
    "iinfo",
    "Size",
    "Generator",
    "autocast",
    "use_deterministic_algorithms",
    "set_float32_matmul_precision",
    "set_printoptions",
];

/// Tensor methods that return something other than a tensor.
pub const NON_TENSOR_METHODS: WordList = word_list![
    "item",
    "tolist",
    "numpy",
    "size",
    "dim",
    "ndimension",
    "numel",
    "nelement",
    "element_size",
    "stride",
    "data_ptr",
    "is_contiguous",
    "is_floating_point",
    "get_device",
    "backward",
    "storage",
    "untyped_storage",
    "type",
    "__len__",
];

/// Tensor methods that copy a tensor's values to the host: their result lives in host memory
/// (a CPU tensor, a NumPy array, Python numbers), whatever the receiver's device was.
pub const HOST_COPY_METHODS: &[&str] = &["cpu", "numpy", "tolist", "item"];

/// `nn.Module`'s mode switches: `obj.train()` / `obj.eval()` on an object other than `self` sets
/// a submodule's mode, whatever methods of those names the file's own classes define (a trainer
/// class whose `train` is its training loop).
pub const MODULE_MODE_SWITCHES: WordList = word_list!["train", "eval"];

/// Methods of a training launcher that place the modules, optimizers and loaders handed to them
/// on the run's device: Accelerate's `accelerator.prepare(model, optimizer, loader)` and
/// Lightning Fabric's `fabric.setup(model, optimizer)` / `setup_module` / `setup_dataloaders`,
/// by the receiver's last name. An object that hands its model to one of these places its
/// members through it and is not itself placed: its own buffers stay where they were built.
pub const LAUNCHER_PLACING_METHODS: &[(&str, &str)] = &[
    ("accelerator", "prepare"),
    ("accelerator", "prepare_model"),
    ("fabric", "setup"),
    ("fabric", "setup_module"),
];

/// `torch.optim.Optimizer`'s per-parameter state: `self.state[p]`, conventionally bound to a
/// local `state` (or `param_state`). In an optimizer's `step`, a branch taken while that state is
/// empty (`if len(state) == 0:`, `if not state:`, `if "exp_avg" not in state:`) or at its first
/// step (`if state["step"] == 0:`) initialises it: it runs once per parameter, not every step.
pub const OPTIMIZER_STATE: &str = "state";
/// The per-parameter state's step counter (`state["step"]`).
pub const OPTIMIZER_STATE_STEP: &str = "step";

/// Module methods that return the module itself.
pub const MODULE_SELF_METHODS: WordList = word_list![
    "to",
    "cuda",
    "cpu",
    "train",
    "eval",
    "float",
    "half",
    "bfloat16",
    "double",
    "requires_grad_",
    "apply",
    "to_empty",
    "xpu",
    "type",
];

/// Tensor methods that only tensors (and arrays) have: calling one on a guessed parameter is
/// evidence enough that it is a tensor.
pub const TENSOR_ONLY_METHODS: WordList = word_list![
    "sum",
    "mean",
    "max",
    "min",
    "amax",
    "amin",
    "any",
    "all",
    "abs",
    "norm",
    "std",
    "var",
    "prod",
    "eq",
    "ne",
    "gt",
    "lt",
    "ge",
    "le",
    "isnan",
    "isinf",
    "isfinite",
    "count_nonzero",
    "argmax",
    "argmin",
    "float",
    "long",
    "bool",
    "half",
    "bfloat16",
    "detach",
    "clone",
    "contiguous",
    "view",
    "reshape",
    "squeeze",
    "unsqueeze",
    "sigmoid",
    "softmax",
    "exp",
    "log",
    "sqrt",
    "pow",
    "square",
    "logical_not",
    "logical_and",
    "logical_or",
    "masked_fill",
    "nonzero",
    "cumsum",
    "flatten",
    "permute",
    "transpose",
];

/// Tensor methods that combine the receiver with the tensors passed to them, so those must be on
/// the receiver's device (`x.masked_fill(mask, v)`, `x.index_select(0, idx)`, `x.add(y)`): a
/// CPU argument with a device receiver is copied to the device on every call or raises.
/// `copy_` is absent: copying across devices is what it is for.
pub const DEVICE_MATCHING_METHODS: WordList = word_list![
    "add",
    "sub",
    "mul",
    "div",
    "matmul",
    "mm",
    "bmm",
    "maximum",
    "minimum",
    "lerp",
    "masked_fill",
    "masked_fill_",
    "masked_scatter",
    "masked_scatter_",
    "masked_select",
    "index_select",
    "index_add",
    "index_add_",
    "index_copy",
    "index_copy_",
    "index_fill",
    "index_fill_",
    "index_put",
    "index_put_",
    "gather",
    "scatter",
    "scatter_",
    "scatter_add",
    "scatter_add_",
    "take_along_dim",
    "where",
];

/// Whether `torch.nn.<name>` is a module without parameters or buffers of its own (losses,
/// activations, dropout, pooling, padding, reshaping): `model.to(device)` has nothing of it to
/// move, so a CPU tensor passed to it stays on the CPU and meets the device only later.
pub fn is_parameterless_module(name: &str) -> bool {
    ["Loss", "Dropout", "Pad1d", "Pad2d", "Pad3d"]
        .iter()
        .any(|suffix| name.ends_with(suffix))
        || name.starts_with("Dropout")
        || name.contains("Pool")
        || PARAMETERLESS_MODULES.contains(&name)
}

/// The `torch.nn` activations and reshaping modules [`is_parameterless_module`] names one by one.
const PARAMETERLESS_MODULES: WordList = word_list![
    "ReLU",
    "ReLU6",
    "LeakyReLU",
    "GELU",
    "SiLU",
    "Mish",
    "ELU",
    "SELU",
    "CELU",
    "Tanh",
    "Sigmoid",
    "Hardtanh",
    "Hardswish",
    "Hardsigmoid",
    "Softplus",
    "Softsign",
    "Softmax",
    "LogSoftmax",
    "Softmin",
    "GLU",
    "Identity",
    "Flatten",
    "Unflatten",
    "Upsample",
    "UpsamplingNearest2d",
    "UpsamplingBilinear2d",
    "PixelShuffle",
    "PixelUnshuffle",
    "ChannelShuffle",
    "CosineSimilarity",
    "PairwiseDistance",
];

/// PyTorch/XLA functions (`torch_xla.core.xla_model.<name>`) that run a collective operation
/// across the replicas, or trace one into the pending graph: every process must call them, in
/// the same order, because "XLA does not permit collective operations to run on a subset of
/// workers" (PyTorch/XLA 2.9, `docs/source/learn/_pjrt.md`, "Changes to xm.rendezvous").
/// `rendezvous`, `mesh_reduce` and `do_on_ordinals` join a rendezvous; `optimizer_step` and
/// `reduce_gradients` all-reduce the gradients (`xla_model.py`, `reduce_gradients`), and
/// `broadcast_master_param` all-reduces the parameters. `xm.save` is absent: its rendezvous
/// was removed in pytorch/xla#4926 (torch_xla 2.1), and `mark_step` / `torch_xla.sync()` cut the
/// graph on the calling process alone.
/// Calls that wrap a module and return a module whose parameters stay where the wrapped
/// module's are: `model = DDP(model)`, `model = torch.compile(model)`. (`FSDP` shards the
/// parameters over the same devices.)
pub const MODULE_WRAPPERS: WordList = word_list![
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.distributed.fsdp.FullyShardedDataParallel",
    "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
    "torch_xla.distributed.fsdp.XlaFullyShardedDataParallel",
    "torch.compile",
];

/// Calls that wrap a module and move it onto the XLA device themselves: FSDPv2's constructor
/// runs `module.to(xm.xla_device())` "in case it's not moved by the caller already"
/// (pytorch/xla `torch_xla/experimental/spmd_fully_sharded_data_parallel.py`), so
/// `model = FSDPv2(AutoModel.from_pretrained(...))` is on the device.
pub const MODULE_WRAPPERS_ONTO_XLA: WordList = word_list![
    "torch_xla.experimental.spmd_fully_sharded_data_parallel.SpmdFullyShardedDataParallel"
];

/// Module containers whose iteration yields their submodules: `for block in self.blocks:` over
/// an `nn.ModuleList` or `nn.Sequential`. (`nn.ModuleDict` yields its keys, and is absent.)
pub const MODULE_SEQUENCES: WordList = word_list!["torch.nn.ModuleList", "torch.nn.Sequential"];

pub const XLA_COLLECTIVES: WordList = word_list![
    "all_reduce",
    "all_gather",
    "all_to_all",
    "reduce_scatter",
    "collective_permute",
    "collective_broadcast",
    "reduce_gradients",
    "optimizer_step",
    "rendezvous",
    "xla_rendezvous",
    "mesh_reduce",
    "do_on_ordinals",
    "broadcast_master_param",
];

/// The collectives of [`XLA_COLLECTIVES`] whose first parameter is a tag naming the meeting
/// point (`xm.rendezvous(tag)`, `xm.mesh_reduce(tag, data, reduce_fn)`): two calls with the same
/// tag are the same meeting, whichever branch each sits in.
pub const XLA_TAGGED_COLLECTIVES: WordList = word_list!["rendezvous", "mesh_reduce"];

/// Whether a qualified name is one of [`XLA_COLLECTIVES`] (`torch_xla.core.xla_model.all_reduce`).
pub fn is_xla_collective(qualified: &str) -> bool {
    qualified
        .strip_prefix("torch_xla.core.xla_model.")
        .is_some_and(|name| XLA_COLLECTIVES.contains(&name))
}

/// Methods returning a boolean tensor when called on a tensor.
pub const BOOLEAN_METHODS: WordList = word_list![
    "eq",
    "ne",
    "gt",
    "lt",
    "ge",
    "le",
    "isnan",
    "isinf",
    "isfinite",
    "isneginf",
    "isposinf",
    "logical_not",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bool",
    "isclose",
    "signbit",
];

/// Tensor methods whose result carries no gradient: a detached copy, an integer or boolean
/// conversion, an index. When one of them ends a chain (`up(x).round().bool()`), no backward
/// pass runs through the ops before it (together with the comparisons of [`BOOLEAN_METHODS`]).
pub const GRADIENT_CUTTING_METHODS: WordList = word_list![
    "detach", "bool", "long", "int", "short", "byte", "char", "argmax", "argmin",
];

/// Whether a tensor method's result carries no gradient ([`GRADIENT_CUTTING_METHODS`], or a
/// boolean result of [`BOOLEAN_METHODS`]).
pub fn cuts_gradient(method: &str) -> bool {
    GRADIENT_CUTTING_METHODS.contains(&method) || BOOLEAN_METHODS.contains(&method)
}

/// Torch functions and tensor methods that return a Python tuple of tensors, the pieces of their
/// input (`torch.split(x, n)`, `x.chunk(k)`, `x.unbind(0)`): indexing the tuple picks a piece the
/// call already made, as iterating it does.
pub const TENSOR_TUPLE_FUNCTIONS: WordList = word_list![
    "split",
    "chunk",
    "unbind",
    "tensor_split",
    "hsplit",
    "vsplit",
    "dsplit",
];

/// Tensor methods whose result has the receiver's dtype and elements, rearranged or
/// re-viewed: a boolean mask stays a boolean mask through them (`~m.transpose(0, 1)`,
/// `m.view(-1)`, `m.unsqueeze(-1).expand_as(x)`).
pub const DTYPE_PRESERVING_METHODS: WordList = word_list![
    "transpose",
    "permute",
    "view",
    "reshape",
    "view_as",
    "reshape_as",
    "squeeze",
    "unsqueeze",
    "flatten",
    "t",
    "contiguous",
    "expand",
    "expand_as",
    "repeat",
    "detach",
    "clone",
    "flip",
    "roll",
    "movedim",
    "narrow",
];

/// Tensor methods that write some elements and return a tensor of the receiver's dtype
/// (`remove.scatter(-1, order, remove)`, `m.masked_fill(pad, False)`): a boolean mask stays a
/// boolean mask through them, although its elements change.
pub const DTYPE_KEEPING_UPDATE_METHODS: WordList = word_list![
    "scatter",
    "scatter_",
    "masked_fill",
    "masked_fill_",
    "index_fill",
    "index_fill_",
    "masked_scatter",
];

/// `torch.<name>` functions returning a boolean tensor.
pub const BOOLEAN_FUNCTIONS: WordList = word_list![
    "eq",
    "ne",
    "gt",
    "lt",
    "ge",
    "le",
    "greater",
    "less",
    "isnan",
    "isinf",
    "isfinite",
    "isneginf",
    "isposinf",
    "isin",
    "isclose",
    "logical_not",
    "logical_and",
    "logical_or",
    "logical_xor",
    "signbit",
    "bernoulli",
];

/// Queries that hold only while a model is exported rather than run: TorchScript scripting and
/// tracing (`torch.jit.is_scripting()`, `torch.jit.is_tracing()`, torchvision's `_is_tracing()`)
/// and ONNX export (`torch.onnx.is_in_onnx_export()`). Neither backend runs such a branch.
pub fn is_export_mode_query(name: &str) -> bool {
    matches!(
        name,
        "is_scripting" | "is_tracing" | "_is_tracing" | "is_in_onnx_export"
    )
}

/// Back ends that exist only on CUDA, as strings code compares with: Hugging Face's
/// `attn_implementation` values backed by the FlashAttention kernels and ONNX Runtime's NVIDIA
/// execution providers. `if config._attn_implementation == "flash_attention_2":` and
/// `if "CUDAExecutionProvider" in providers:` are CUDA-only branches.
pub fn is_cuda_only_backend_name(text: &str) -> bool {
    matches!(
        text,
        "flash_attention_2"
            | "flash_attention_3"
            | "CUDAExecutionProvider"
            | "TensorrtExecutionProvider"
    )
}

/// Availability probes of one accelerator each, as libraries that serve several vendors write
/// them: Hugging Face's `is_torch_xpu_available()` / `is_torch_npu_available()` /
/// `is_torch_mlu_available()` / `is_torch_xla_available()` (transformers, trl, peft),
/// Accelerate's `is_xpu_available()` / `is_npu_available()` / `is_mps_available()`, and torch's own
/// `torch.xpu.is_available()` / `torch.backends.mps.is_available()`. An `if`/`elif` chain of these
/// dispatches by vendor (see `semantic::guards`); the last name part is compared, so
/// `accelerate.utils.is_npu_available()` counts too.
pub const ACCELERATOR_PROBES: WordList = word_list![
    "is_torch_xpu_available",
    "is_torch_npu_available",
    "is_torch_mlu_available",
    "is_torch_musa_available",
    "is_torch_hpu_available",
    "is_torch_mps_available",
    "is_torch_xla_available",
    "is_torch_tpu_available",
    "is_xpu_available",
    "is_npu_available",
    "is_mlu_available",
    "is_musa_available",
    "is_hpu_available",
    "is_mps_available",
    "is_xla_available",
    "is_tpu_available",
];

/// Functions that return the TPU device itself, by qualified name: torch_xla's
/// `xm.xla_device()` (and `xr.xla_device()` of older releases), `torch_xla.device()`, TorchTPU's
/// `torch_tpu.api.tpu_device()`.
pub fn is_accelerator_device_function(qualified: &str) -> bool {
    qualified.ends_with("xla_device")
        || qualified == "torch_xla.device"
        || qualified.starts_with("torch_tpu.") && qualified.ends_with(".tpu_device")
}

/// Hugging Face availability probes whose meaning changed under their users: transformers'
/// `is_torch_tpu_available` meant "torch_xla is importable" (deprecated for
/// `is_torch_xla_available` by huggingface/transformers#29334) and, since
/// huggingface/transformers#45918 (2026), probes TorchTPU (`torch_tpu`). Matched on the
/// qualified name a file imports it under (`transformers.is_torch_tpu_available`,
/// `transformers.utils.is_torch_tpu_available`, `transformers.file_utils.…`).
pub fn is_repurposed_tpu_probe(qualified: &str) -> bool {
    qualified.starts_with("transformers.") && qualified.ends_with(".is_torch_tpu_available")
}

/// The `torch` namespaces of non-CUDA accelerators whose `is_available()` is a probe like
/// [`ACCELERATOR_PROBES`]: `torch.xpu.is_available()`, `torch.backends.mps.is_available()`.
/// They are also those accelerators' device types (`x.device.type == "mps"`), none of which a
/// TPU machine has.
pub const ACCELERATOR_NAMESPACES: WordList = word_list!["xpu", "npu", "mlu", "musa", "hpu", "mps"];

/// Whether a called dotted name (`is_torch_npu_available`, `utils.is_xpu_available`,
/// `torch.xpu.is_available`, `torch.backends.mps.is_available`) probes for one accelerator.
pub fn is_accelerator_probe(parts: &[&str]) -> bool {
    match parts {
        [.., last] if ACCELERATOR_PROBES.contains(last) => true,
        ["torch", namespace, "is_available"] | ["torch", "backends", namespace, "is_available"] => {
            ACCELERATOR_NAMESPACES.contains(namespace)
        }
        _ => false,
    }
}

/// `torch.cuda` functions that initialise CUDA and so raise without it.
pub const CUDA_RAISING: &[&str] = &[
    "synchronize",
    "set_device",
    "current_device",
    "get_device_name",
    "get_device_properties",
    "get_device_capability",
    "mem_get_info",
    "Stream",
    "Event",
    "CUDAGraph",
    "graph",
    "current_stream",
    "default_stream",
    "set_stream",
    "get_arch_list",
    // Measured on torch 2.9.0 (PyPI's build, no NVIDIA driver, as on a TPU VM):
    // `reset_peak_memory_stats()` raises "invalid argument", `memory_summary()` a KeyError,
    // `ipc_collect()` "Found no NVIDIA driver", the NVML readings ModuleNotFoundError
    // (docs/precision.md, "One spelling more").
    "reset_peak_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "reset_accumulated_memory_stats",
    "memory_summary",
    "ipc_collect",
    "utilization",
    "temperature",
    "power_draw",
];

/// `torch.cuda` functions that quietly do nothing without CUDA (memory readings are
/// [`CUDA_READS_ZERO`]; the RNG-state round trips are deliberately absent,
/// `get_rng_state_all()` / `set_rng_state_all(states)`: off CUDA the first returns `[]` and the
/// second restores it, which is right on a TPU machine; the seeds are what leave the TPU's
/// generator unseeded).
pub const CUDA_SILENT: &[&str] = &[
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "device_count",
];

/// `torch.cuda` memory readings that return 0 without CUDA (measured on torch 2.9.0 without a
/// driver): a log line's "peak 0.0 GiB" on a TPU, not an error. `xm.get_memory_info()` and
/// TorchTPU's `torch.accelerator.memory_allocated()` read the TPU's memory.
pub const CUDA_READS_ZERO: &[&str] = &[
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_cached",
    "max_memory_cached",
];

/// The names of [`CUDA_RAISING`], [`CUDA_SILENT`] and [`CUDA_READS_ZERO`]: the callees TPU404
/// declares.
pub const CUDA_RAISING_OR_SILENT: [&str;
    CUDA_RAISING.len() + CUDA_SILENT.len() + CUDA_READS_ZERO.len()] =
    crate::registry::joined(&[CUDA_RAISING, CUDA_SILENT, CUDA_READS_ZERO]);

/// Tensor attributes that describe a tensor rather than hold its values: reading them never
/// syncs, and they are no tensors (`x.dtype == torch.float16`, `x.ndim == 4`). A model output's
/// other fields (`out.logits`) are tensors; these never are.
pub const TENSOR_METADATA_ATTRIBUTES: WordList = word_list![
    "dtype",
    "ndim",
    "shape",
    "device",
    "is_cuda",
    "is_cpu",
    "is_sparse",
    "is_quantized",
    "is_meta",
    "requires_grad",
    "is_leaf",
    "layout",
    "names",
    "itemsize",
    "nbytes",
];

/// What a parameter annotation says the value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnnotatedKind {
    /// `torch.Tensor`, `Optional[torch.FloatTensor]`, `Tensor | None`.
    Tensor,
    /// `Tuple[torch.Tensor, ...]`, `List[Tensor]`, `Optional[Dict[str, Tensor]]`, a `Cache`: a
    /// container of tensors is no tensor (its truth value is its length).
    Container,
    /// Anything else (`int`, `bool`, `str`, a class), and callables and classes whose signature
    /// names tensors (`Optional[Callable[[Tensor, Tensor], Tensor]]`, `Type[Tensor]`): the value
    /// is the function or the class, not a tensor it would return.
    Other,
}

/// Classifies an annotation's text: `Optional[...]`, `X | None` and quotes are looked through;
/// the outermost remaining type decides.
pub fn annotated_kind(annotation: &str) -> AnnotatedKind {
    let text = unwrapped_annotation(annotation);
    let text = text.as_str();
    let outer = text.split('[').next().unwrap_or(text);
    let outer = outer.rsplit('.').next().unwrap_or(outer);
    if matches!(
        outer,
        "Tuple" | "tuple" | "List" | "list" | "Dict" | "dict" | "Sequence" | "Iterable" | "Mapping"
    ) || outer.ends_with("Cache")
    {
        return AnnotatedKind::Container;
    }
    if matches!(outer, "Callable" | "Type" | "type") {
        return AnnotatedKind::Other;
    }
    if text.contains("Tensor") {
        AnnotatedKind::Tensor
    } else {
        AnnotatedKind::Other
    }
}

/// The name an annotation consists of once `Optional[...]`, `| None` and quotes are looked
/// through (`Optional[TensorPair]` -> `TensorPair`), when it is a plain name: it may be a type
/// alias bound in the module, whose value then says what the annotation means.
pub fn annotation_alias_name(annotation: &str) -> Option<String> {
    let text = unwrapped_annotation(annotation);
    let plain = !text.is_empty()
        && !text.starts_with(|c: char| c.is_ascii_digit())
        && text.chars().all(|c| c.is_alphanumeric() || c == '_');
    plain.then_some(text)
}

/// Whether an annotation names torch's legacy boolean tensor type (`torch.BoolTensor`,
/// `Optional[torch.BoolTensor]`, `torch.cuda.BoolTensor`): a mask, as HF-style signatures
/// declare them (`bool_masked_pos: Optional[torch.BoolTensor] = None`).
pub fn is_boolean_tensor_annotation(annotation: &str) -> bool {
    let text = unwrapped_annotation(annotation);
    matches!(
        text.as_str(),
        "torch.BoolTensor" | "BoolTensor" | "torch.cuda.BoolTensor"
    )
}

/// An annotation's text without spaces, quotes, `Optional[...]` and `| None`.
fn unwrapped_annotation(annotation: &str) -> String {
    let mut text: String = annotation
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
        .collect();
    for _ in 0..4 {
        let unwrapped = ["typing.Optional[", "Optional["]
            .iter()
            .find_map(|prefix| text.strip_prefix(prefix))
            .and_then(|rest| rest.strip_suffix(']'))
            .map(str::to_string);
        match unwrapped {
            Some(inner) => text = inner,
            None => break,
        }
    }
    text.strip_suffix("|None")
        .or_else(|| text.strip_prefix("None|"))
        .unwrap_or(&text)
        .to_string()
}

/// The names a code fragment posted without its imports (a bug report's snippet, a notebook cell
/// copied alone) uses in their conventional meaning, as the PyTorch and PyTorch/XLA documentation
/// write them (`import torch.nn.functional as F`, `import torch_xla.core.xla_model as xm`, …).
/// The index binds them only in a file that imports nothing at all: real modules import what
/// they use, so there the names are left to the file's own bindings.
///
/// Sources: PyTorch/XLA, *PyTorch on XLA Devices*
/// (https://github.com/pytorch/xla/blob/master/docs/source/learn/pytorch-on-xla-devices.md) for
/// `xm`, `xmp`, `met`, `xr`; the PyTorch tutorials for `nn`, `F`, `optim`, `dist`.
pub const FRAGMENT_ALIASES: &[(&str, &str)] = &[
    ("torch", "torch"),
    ("nn", "torch.nn"),
    ("F", "torch.nn.functional"),
    ("optim", "torch.optim"),
    ("dist", "torch.distributed"),
    ("np", "numpy"),
    ("math", "math"),
    ("torch_xla", "torch_xla"),
    ("xm", "torch_xla.core.xla_model"),
    ("xmp", "torch_xla.distributed.xla_multiprocessing"),
    ("met", "torch_xla.debug.metrics"),
    ("xr", "torch_xla.runtime"),
];

/// Methods only torch tensors and modules have, whose call marks a file without imports as an
/// excerpt of torch code (`roles::reads_like_torch_code`; the aliases of [`FRAGMENT_ALIASES`]
/// other than `np` and `math` count too).
pub const EXCERPT_EVIDENCE_METHODS: WordList = word_list![
    "item",
    "cpu",
    "cuda",
    "numpy",
    "backward",
    "detach",
    "nonzero",
    "masked_fill",
    "unsqueeze",
    "contiguous",
    "bfloat16",
    "state_dict",
    "zero_grad",
];

/// Packages that run only on CUDA GPUs: NVIDIA's kernels and runtimes, and the libraries built on
/// them (Megatron-LM, bitsandbytes' quantised kernels, Transformer Engine's fp8, Apex's fused
/// ops, Triton's GPU kernels, FlashAttention, xFormers, NVML, CuPy, TensorRT and TensorRT-LLM,
/// MS-AMP). Code that calls them cannot run on a TPU, so what it does there is no TPU problem.
///
/// Sources: each project's installation requirements (CUDA toolkit / NVIDIA GPU):
/// <https://github.com/NVIDIA/Megatron-LM>, <https://github.com/bitsandbytes-foundation/bitsandbytes>,
/// <https://github.com/NVIDIA/TransformerEngine>, <https://github.com/NVIDIA/apex>,
/// <https://github.com/triton-lang/triton>, <https://github.com/Dao-AILab/flash-attention>,
/// <https://github.com/NVIDIA/TensorRT-LLM> (builds and runs TensorRT engines on NVIDIA GPUs).
pub const CUDA_ONLY_PACKAGES: WordList = word_list![
    "megatron",
    "bitsandbytes",
    "transformer_engine",
    "apex",
    "triton",
    "flash_attn",
    "xformers",
    "pynvml",
    "cupy",
    "torch_tensorrt",
    "tensorrt",
    "tensorrt_llm",
    "msamp",
];

/// Methods of NVIDIA TensorRT's runtime objects, called on engines and execution contexts whose
/// type the index cannot see (`trt_engine.create_execution_context()`,
/// `context.execute_async_v3(torch.cuda.current_stream().cuda_stream)`): the code that calls
/// them runs a TensorRT engine, which needs a CUDA GPU, like a call into [`CUDA_ONLY_PACKAGES`].
///
/// Source: TensorRT's Python API (`IRuntime.deserialize_cuda_engine`,
/// `ICudaEngine.create_execution_context`, `IExecutionContext.execute_v2` / `execute_async_v2` /
/// `execute_async_v3` / `set_tensor_address`),
/// <https://docs.nvidia.com/deeplearning/tensorrt/latest/_static/python-api/infer/Core/ExecutionContext.html>.
pub const CUDA_ONLY_METHODS: WordList = word_list![
    "deserialize_cuda_engine",
    "create_execution_context",
    "execute_v2",
    "execute_async_v2",
    "execute_async_v3",
    "set_tensor_address",
];

/// Whether a qualified name (`bitsandbytes.nn.Linear8bitLt`, `megatron.core.mpu`) or module
/// belongs to a CUDA-only package.
pub fn is_cuda_only_package(qualified: &str) -> bool {
    let top = qualified.split('.').next().unwrap_or(qualified);
    CUDA_ONLY_PACKAGES.contains(&top)
}

/// The optimizer base class, under the names torch exports it by (`torch.optim.Optimizer`,
/// `torch.optim.optimizer.Optimizer`): a subclass's `step` runs once per training step. LR
/// schedulers (`torch.optim.lr_scheduler.*`) are not optimizers.
/// Parameters of training hooks through which a framework passes the value its step
/// differentiated: Lightning's `on_train_batch_end(outputs, ...)` (a LightningModule's or a
/// Callback's: `training_step`'s output, the loss or a dict holding it under `"loss"`) and
/// `on_before_backward(loss)`.
pub fn is_hook_loss_parameter(function: &str, parameter: &str) -> bool {
    matches!(
        (function, parameter),
        ("on_train_batch_end", "outputs") | ("on_before_backward", "loss")
    )
}

pub fn is_optimizer_base(qualified: &str) -> bool {
    matches!(
        qualified,
        "torch.optim.Optimizer" | "torch.optim.optimizer.Optimizer"
    )
}

/// torch functions that answer a question or configure state rather than compute a tensor:
/// `torch.is_autocast_enabled()`, `torch.allclose(a, b)` (a Python bool),
/// `torch.compiler.is_compiling()`.
fn is_query_function(function: &str) -> bool {
    let last = function.rsplit('.').next().unwrap_or(function);
    last.starts_with("is_")
        || last.starts_with("are_")
        || last.starts_with("get_")
        || last.starts_with("set_")
        || last.starts_with("has_")
        || matches!(
            last,
            "broadcast_shapes"
                | "result_type"
                | "promote_types"
                | "can_cast"
                | "typename"
                | "allclose"
                | "equal"
        )
}

/// Whether a dotted `torch.<namespace>.<function>` lives in a namespace that computes tensors.
/// The others (`cuda.`, `npu.`, `compiler.`, `_dynamo.`, `fx.`, ...) manage devices,
/// compilation or tooling: `torch.npu.device_count()` is no tensor.
pub fn in_tensor_namespace(function: &str) -> bool {
    const TENSOR_NAMESPACES: WordList = word_list![
        "nn.",
        "linalg.",
        "fft.",
        "special.",
        "sparse.",
        "nested.",
        "masked.",
        "ops.",
        "func.",
        "Tensor.",
        "distributions.",
        "signal.",
        // The differentiable collectives (`all_gather`, `all_reduce`, ...): tensors, or a
        // tuple of them, where their input is.
        "distributed.nn.functional.",
    ];
    !function.contains('.')
        || TENSOR_NAMESPACES
            .iter()
            .any(|prefix| function.starts_with(prefix))
}

/// Whether `torch.<function>` returns something other than a tensor (a device, a flag, a
/// context manager, a query's answer).
pub fn is_non_tensor_function(function: &str) -> bool {
    NON_TENSOR_FUNCTIONS.contains(&function) || is_query_function(function)
}

/// The canonical name of a `torch.<name>` dtype: `double` → `float64`, `half` → `float16`,
/// `long` → `int64`. `None` for anything that is not a dtype.
pub fn canonical_dtype(name: &str) -> Option<&'static str> {
    Some(match name {
        "float64" | "double" => "float64",
        "float32" | "float" => "float32",
        "float16" | "half" => "float16",
        "bfloat16" => "bfloat16",
        "int64" | "long" => "int64",
        "int32" | "int" => "int32",
        "int16" | "short" => "int16",
        "int8" => "int8",
        "uint8" => "uint8",
        "bool" => "bool",
        "complex64" | "cfloat" => "complex64",
        "complex128" | "cdouble" => "complex128",
        _ => return None,
    })
}

// NumPy result dtypes, for the float64 that reaches a tensor through `torch.from_numpy`
// (TPU502). Source: the NumPy 2.x reference ("Array creation routines", "Universal functions",
// "Random Generator", "Type promotion", NEP 50: a Python float or int next to an array takes the
// array's dtype, an integer array with a Python float or under true division becomes float64).

/// `numpy.<name>(...)` that return float64 unless given a `dtype=`.
pub const NUMPY_FLOAT64_BY_DEFAULT: WordList = word_list![
    "zeros",
    "ones",
    "empty",
    "eye",
    "identity",
    "linspace",
    "logspace",
    "geomspace",
    "hanning",
    "hamming",
    "blackman",
    "bartlett",
    "kaiser",
    "random.rand",
    "random.randn",
    "random.random",
    "random.random_sample",
    "random.ranf",
    "random.sample",
    "random.uniform",
    "random.normal",
    "random.standard_normal",
    "random.beta",
    "random.gamma",
    "random.exponential",
    "random.laplace",
    "random.lognormal",
];

/// `numpy.<name>(...)` whose result is float64 whatever the (real) inputs: `np.interp`
/// computes in float64.
pub const NUMPY_ALWAYS_FLOAT64: WordList = word_list!["interp"];

/// `numpy.<name>(x, ...)` (ufuncs and reductions) whose result is floating: float64 for float64
/// and integer inputs, the input's dtype for float32 / float16 inputs (`np.cos(np.arange(n))` is
/// float64, `np.cos(x32)` float32). Arrays only (`mean`, `std`, `var` as methods too).
pub const NUMPY_FLOATING_RESULT: WordList = word_list![
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "arctan2",
    "sinh",
    "cosh",
    "tanh",
    "arcsinh",
    "arccosh",
    "arctanh",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "cbrt",
    "reciprocal",
    "true_divide",
    "divide",
    "hypot",
    "deg2rad",
    "rad2deg",
    "radians",
    "degrees",
    "mean",
    "std",
    "var",
    "average",
    "nanmean",
    "nanstd",
    "nanvar",
    "median",
    "sinc",
    "float_power",
];

/// `numpy.<name>(...)` whose result has the promoted dtype of all their array arguments (a list
/// of Python floats is a float64 array; a Python number next to an array is weak): joins,
/// products, elementwise arithmetic.
pub const NUMPY_PROMOTING: WordList = word_list![
    "concatenate",
    "stack",
    "vstack",
    "hstack",
    "dstack",
    "column_stack",
    "append",
    "outer",
    "dot",
    "matmul",
    "inner",
    "kron",
    "multiply",
    "add",
    "subtract",
    "power",
    "maximum",
    "minimum",
];

/// `numpy.<name>(x, ...)` whose result has the dtype of their first argument (the others are
/// shapes, counts, axes or weak bounds).
pub const NUMPY_FIRST_ARGUMENT_DTYPE: WordList = word_list![
    "square",
    "abs",
    "absolute",
    "negative",
    "clip",
    "cumsum",
    "cumprod",
    "diff",
    "flip",
    "fliplr",
    "flipud",
    "roll",
    "tile",
    "repeat",
    "pad",
    "reshape",
    "transpose",
    "squeeze",
    "expand_dims",
    "broadcast_to",
    "ascontiguousarray",
    "copy",
    "array",
    "asarray",
    "sort",
    "tril",
    "triu",
    "diag",
];

/// Methods of `numpy.random.Generator` (`np.random.default_rng(0)`) and `RandomState` that
/// return float64 samples unless given a `dtype=`.
pub const NUMPY_GENERATOR_FLOAT64_METHODS: WordList = word_list![
    "standard_normal",
    "random",
    "normal",
    "uniform",
    "standard_exponential",
    "standard_gamma",
    "exponential",
    "gamma",
    "beta",
    "lognormal",
    "laplace",
    "rand",
    "randn",
    "random_sample",
];

/// Method names no library but NumPy's random generators spell: a receiver of unknown kind that
/// has one is a NumPy generator (`rng.standard_normal(shape)` with `rng` a fixture).
pub const NUMPY_GENERATOR_ONLY_METHODS: WordList =
    word_list!["standard_normal", "standard_exponential", "standard_gamma"];

/// `numpy.random.<name>(...)` that make a generator.
pub const NUMPY_GENERATOR_CONSTRUCTORS: WordList = word_list![
    "random.default_rng",
    "random.RandomState",
    "random.Generator",
];

/// Array methods whose result keeps the receiver's dtype.
pub const NUMPY_DTYPE_PRESERVING_METHODS: WordList = word_list![
    "copy",
    "reshape",
    "transpose",
    "flatten",
    "ravel",
    "squeeze",
    "swapaxes",
    "clip",
    "cumsum",
    "cumprod",
    "sum",
    "prod",
    "max",
    "min",
    "repeat",
];
