//! Data-driven tests of the semantic index: each case marks an expression with `⟦…⟧` and states
//! what the index must believe there (qualified name, value kind, device, hot path, backend).

use tpulint_analyzer::semantic::{
    Device, Evidence, HardwareScope, HotPath, ImportCondition, ModuleImports, ValueKind,
};
use tpulint_analyzer::{Backend, Inspection, Settings, inspect, syntax};

/// Inspects the expression between `⟦` and `⟧`.
fn at(marked: &str) -> Inspection {
    let start = marked.find('⟦').expect("a ⟦ marker");
    let source = marked.replace(['⟦', '⟧'], "");
    let end = marked.find('⟧').expect("a ⟧ marker") - '⟦'.len_utf8();
    let tree = syntax::parse(&source, None).expect("parses");
    inspect(&source, &tree, &Settings::default(), start..end)
        .unwrap_or_else(|| panic!("nothing to inspect in {marked}"))
}

fn qualified(marked: &str) -> Option<String> {
    at(marked).qualified_name
}

#[test]
fn imports_resolve_to_qualified_names() {
    assert_eq!(
        qualified("import torch as T\n⟦T.zeros⟧(3)\n").as_deref(),
        Some("torch.zeros")
    );
    assert_eq!(
        qualified("from torch import nn\n⟦nn.functional.pad⟧(x, (1, 1))\n").as_deref(),
        Some("torch.nn.functional.pad")
    );
    assert_eq!(
        qualified("import torch.nn.functional as F\n⟦F.interpolate⟧(x)\n").as_deref(),
        Some("torch.nn.functional.interpolate")
    );
    assert_eq!(
        qualified("import torch_xla.core.xla_model as xm\n⟦xm.mark_step⟧()\n").as_deref(),
        Some("torch_xla.core.xla_model.mark_step")
    );
    assert_eq!(
        qualified("from torch_xla import runtime as xr\n⟦xr.world_size⟧()\n").as_deref(),
        Some("torch_xla.runtime.world_size")
    );
    assert_eq!(
        qualified("import torch.nn\n⟦torch.nn.Linear⟧(2, 2)\n").as_deref(),
        Some("torch.nn.Linear")
    );
    assert_eq!(
        qualified("try:\n    import torch_xla.core.xla_model as xm\nexcept ImportError:\n    xm = None\n⟦xm.xla_device⟧()\n").as_deref(),
        Some("torch_xla.core.xla_model.xla_device")
    );
    // Function-level imports bind in the function.
    assert_eq!(
        qualified("def f():\n    import torch as th\n    return ⟦th.ones⟧(1)\n").as_deref(),
        Some("torch.ones")
    );
    // Unimported names and relative imports resolve to nothing in a file that imports anything.
    assert_eq!(qualified("import numpy as np\n⟦torch.zeros⟧(3)\n"), None);
    assert_eq!(qualified("from .torch import zeros\n⟦zeros⟧(3)\n"), None);
    assert_eq!(
        qualified("from ..basics import *\n⟦torch.zeros⟧(3)\n"),
        None
    );
    // A fragment (no import statement at all) uses the conventional aliases.
    assert_eq!(
        qualified("⟦torch.zeros⟧(3)\n").as_deref(),
        Some("torch.zeros")
    );
    assert_eq!(
        qualified("⟦xm.mark_step⟧()\n").as_deref(),
        Some("torch_xla.core.xla_model.mark_step")
    );
    assert_eq!(
        qualified("⟦F.relu⟧(x)\n").as_deref(),
        Some("torch.nn.functional.relu")
    );
    // … but its own bindings win.
    assert_eq!(qualified("F = make()\n⟦F.relu⟧(x)\n"), None);
}

#[test]
fn backend_detection() {
    assert_eq!(at("import torch_xla\n⟦x⟧ = 1\n").backend, Backend::TorchXla);
    assert_eq!(at("import torch_tpu\n⟦x⟧ = 1\n").backend, Backend::TorchTpu);
    assert_eq!(
        at("import torch\nd = torch.device(\"tpu\")\n⟦x⟧ = 1\n").backend,
        Backend::TorchTpu
    );
    assert_eq!(
        at("import torch\nm = torch.compile(m, backend=\"openxla\")\n⟦x⟧ = 1\n").backend,
        Backend::TorchXla
    );
    assert_eq!(
        at("import torch\n⟦x⟧ = torch.zeros(1, device='cuda')\n").backend,
        Backend::Unknown
    );
    // Lightning's TPU accelerator runs on PyTorch/XLA.
    assert_eq!(
        at("import lightning as L\ntrainer = L.Trainer(accelerator=\"tpu\", devices=8)\n⟦x⟧ = 1\n")
            .backend,
        Backend::TorchXla
    );
    assert_eq!(
        at("import torch\nx = torch.ones(2).to(\"xla:0\")\n⟦y⟧ = 1\n").backend,
        Backend::TorchXla
    );
    // Text outside device positions is no evidence.
    assert_eq!(
        at("import torch\nprint(\"runs on 'tpu' too\")\nif args.device == \"tpu\":\n    pass\n⟦x⟧ = 1\n").backend,
        Backend::Unknown
    );
    // Nor is a device that is only compared: a test for the device, not a use of it.
    for test in [
        "d == torch.device(\"xla\")",
        "d in (torch.device(\"tpu\"), torch.device(\"cpu\"))",
        "(torch.device(\"xla\")) != d",
    ] {
        let source = format!("import torch\nif {test}:\n    pass\n⟦x⟧ = 1\n");
        assert_eq!(at(&source).backend, Backend::Unknown, "{test}");
    }
    // A device made inside the comparison's operand is still used there.
    assert_eq!(
        at("import torch\nif x.to(torch.device(\"xla\")).sum() == 0:\n    pass\n⟦y⟧ = 1\n").backend,
        Backend::TorchXla
    );
}

#[test]
fn tensor_and_device_facts_flow_through_assignments() {
    let cpu = at("import torch\nx = torch.zeros(3)\ny = ⟦x⟧ + 1\n").fact;
    assert_eq!((cpu.kind, cpu.device), (ValueKind::Tensor, Device::Cpu));
    assert!(cpu.origin.is_some());
    let cuda = at("import torch\nx = torch.zeros(3, device=\"cuda:0\")\n⟦x⟧\n").fact;
    assert_eq!((cuda.kind, cuda.device), (ValueKind::Tensor, Device::Cuda));
    let moved = at("import torch\nx = torch.zeros(3).to(dev)\n⟦x⟧\n").fact;
    assert_eq!(moved.device, Device::Accelerator);
    // A dtype conversion keeps the device.
    let converted = at("import torch\nx = torch.arange(3).to(torch.float32)\n⟦x⟧\n").fact;
    assert_eq!(converted.device, Device::Cpu);
    let derived = at("import torch\nx = torch.randn(3, 3)\ny = (x @ x.T).sum(dim=0)\n⟦y⟧\n").fact;
    assert_eq!(
        (derived.kind, derived.device),
        (ValueKind::Tensor, Device::Cpu)
    );
    let like = at("import torch\nclass M:\n    def forward(self, x):\n        z = torch.zeros_like(x)\n        return ⟦z⟧\n").fact;
    assert_eq!(like.device, Device::Accelerator);
    let numpy = at("import numpy as np\na = np.array([1.0])\n⟦a⟧\n").fact;
    assert_eq!(numpy.kind, ValueKind::NumpyArray);
    let item = at("import torch\nx = torch.ones(1)\nv = x.item()\n⟦v⟧\n").fact;
    assert_eq!(item.kind, ValueKind::Scalar);
    let dict = at("d = {}\n⟦d⟧\n").fact;
    assert_eq!(dict.kind, ValueKind::Container);
    let reassigned = at("import torch\nx = torch.ones(1)\nx = 3\n⟦x⟧\n").fact;
    assert_eq!(reassigned.kind, ValueKind::Scalar);
    // Tuple assignments bind element by element.
    let tuple = at("import torch\na, b = torch.ones(1), 2\n⟦b⟧\n").fact;
    assert_eq!(tuple.kind, ValueKind::Scalar);
    // A tensor's dimensions are Python ints, and torch arithmetic on Python numbers makes a
    // CPU scalar tensor.
    let forward = "import torch\nclass M:\n    def forward(self, x):\n";
    for (line, name) in [
        ("_, _, h, w = x.shape", "h"),
        ("b, n = x.size()", "n"),
        ("h = x.shape[-1]", "h"),
    ] {
        let dimension = at(&format!(
            "{forward}        {line}\n        return ⟦{name}⟧\n"
        ))
        .fact;
        assert_eq!(dimension.kind, ValueKind::Scalar, "{line}");
    }
    let halved = at(&format!(
        "{forward}        _, _, h, w = x.shape\n        q = torch.div(h, 2)\n        return ⟦q⟧\n"
    ))
    .fact;
    assert_eq!(
        (halved.kind, halved.device),
        (ValueKind::Tensor, Device::Cpu)
    );
    let of_tensor = at(&format!(
        "{forward}        q = torch.div(x, 2)\n        return ⟦q⟧\n"
    ))
    .fact;
    assert_eq!(of_tensor.device, Device::Accelerator);
}

#[test]
fn modules_buffers_and_forward_parameters() {
    let source = "import torch\nfrom torch import nn\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.proj = nn.Linear(4, 4)\n        self.register_buffer(\"scale\", torch.ones(4))\n        self.plain = torch.zeros(4)\n\n    def forward(self, x, flag: bool = False, mask=None):\n        h = self.proj(x)\n        return MARK\n";
    let check = |expr: &str| at(&source.replace("MARK", &format!("⟦{expr}⟧")));
    let x = check("x");
    assert_eq!(
        (x.fact.kind, x.fact.device),
        (ValueKind::Tensor, Device::Accelerator)
    );
    assert_eq!(x.hot_path, Some(HotPath::Forward));
    assert_eq!(check("flag").fact.kind, ValueKind::Scalar);
    assert_eq!(check("mask").fact.kind, ValueKind::Tensor);
    assert_eq!(check("h").fact.kind, ValueKind::Tensor);
    assert_eq!(check("self.proj").fact.kind, ValueKind::Module);
    assert_eq!(check("self.scale").fact.device, Device::Accelerator);
    // A plain tensor attribute does not follow `model.to(device)`.
    assert_eq!(check("self.plain").fact.device, Device::Cpu);
    let model = at(
        "from torch import nn\nclass Net(nn.Module):\n    pass\nmodel = Net().to(dev)\n⟦model⟧\n",
    )
    .fact;
    assert_eq!(model.kind, ValueKind::Module);
}

#[test]
fn hot_paths() {
    // With an import: a file without one that reads as torch code is an excerpt, whose code is
    // `HotPath::Excerpt` wherever nothing else makes it hot.
    let at = |marked: &str| at(&format!("import torch\n{marked}"));
    let loader_loop = "from torch.utils.data import DataLoader\nloader = DataLoader(ds)\nfor x, y in loader:\n    ⟦x⟧\n";
    // A loop over a loader that does not train (no backward, optimizer step or graph cut, in
    // its body or a function of the file it calls) is a loop over batches, not "the training
    // loop": an evaluation or inference loop.
    assert_eq!(at(loader_loop).hot_path, Some(HotPath::BatchLoop));
    assert_eq!(at(loader_loop).fact.kind, ValueKind::Unknown);
    let training = loader_loop.replace("    ⟦x⟧\n", "    model(x).sum().backward()\n    ⟦x⟧\n");
    assert_eq!(at(&training).hot_path, Some(HotPath::TrainingLoop));
    let stepping = loader_loop.replace(
        "    ⟦x⟧\n",
        "    train_step(x)\n    ⟦x⟧\ndef train_step(x):\n    optimizer.step()\n",
    );
    assert_eq!(at(&stepping).hot_path, Some(HotPath::TrainingLoop));
    let named_loader = "for step, batch in enumerate(tqdm(train_dataloader)):\n    ⟦batch⟧\n";
    assert_eq!(at(named_loader).hot_path, Some(HotPath::BatchLoop));
    let backward_loop = "for i in range(100):\n    loss = f()\n    loss.backward()\n    ⟦i⟧\n";
    assert_eq!(at(backward_loop).hot_path, Some(HotPath::TrainingLoop));
    // The epoch loop around a loader loop is not itself per-step.
    let epoch =
        "for epoch in range(3):\n    for x in loader:\n        loss.backward()\n    ⟦epoch⟧\n";
    assert_eq!(at(epoch).hot_path, None);
    let plain = "for name in names:\n    ⟦name⟧\n";
    assert_eq!(at(plain).hot_path, None);
    let step = "def train_step(model, batch):\n    return ⟦batch⟧\n";
    assert_eq!(at(step).hot_path, Some(HotPath::StepFunction));
    let compiled_later = "import torch\ndef body(x):\n    return ⟦x⟧\nfast = torch.compile(body)\n";
    assert_eq!(at(compiled_later).hot_path, Some(HotPath::Compiled));
    let decorated = "import torch\n@torch.compile(fullgraph=True)\ndef body(x):\n    return ⟦x⟧\n";
    assert_eq!(at(decorated).hot_path, Some(HotPath::Compiled));
    let cold = "def evaluate(model):\n    return ⟦model⟧\n";
    assert_eq!(at(cold).hot_path, None);
    // A per-batch hook's calls after an early exit on a throttle do not make the callee hot.
    let throttled_exit = "class Saver:\n    def on_train_batch_end(self, trainer):\n        skip = trainer.global_step % self.every != 0\n        if skip:\n            return\n        self.save(trainer)\n    def save(self, trainer):\n        return ⟦trainer⟧\n";
    assert_eq!(at(throttled_exit).hot_path, None);
    let unthrottled = "class Saver:\n    def on_train_batch_end(self, trainer):\n        self.save(trainer)\n    def save(self, trainer):\n        return ⟦trainer⟧\n";
    assert_ne!(at(unthrottled).hot_path, None);
    // A modulo by the accumulation steps is the optimizer step, not a throttle.
    let accumulation = "for step, batch in enumerate(loader):\n    loss = model(batch)\n    loss.backward()\n    if (step + 1) % accumulation_steps == 0:\n        ⟦optimizer⟧.step()\n";
    assert_eq!(at(accumulation).hot_path, Some(HotPath::TrainingLoop));
}

/// The import records of `source`: `(local, qualified, condition, in_function)`.
fn imports(source: &str) -> Vec<(String, String, ImportCondition, bool)> {
    let tree = syntax::parse(source, None).expect("parses");
    ModuleImports::build(tree.root_node(), source)
        .records()
        .iter()
        .map(|r| {
            (
                r.local.clone(),
                r.qualified.clone(),
                r.condition,
                r.in_function,
            )
        })
        .collect()
}

#[test]
fn imports_carry_their_condition() {
    use ImportCondition::*;
    let source = "\
import torch
import torch_xla.core.xla_model
from torch import nn as tnn
try:
    import torch_xla.core.xla_model as xm
except ImportError:
    xm = None
    import fallback
if TYPE_CHECKING:
    from typing import Sequence
if is_torch_xla_available():
    import torch_xla.runtime as xr
elif not is_torch_tpu_available():
    import cpu_only
else:
    import other
if sys.version_info >= (3, 10):
    import tomllib
with suppress(ImportError):
    import maybe
class Net(tnn.Module):
    import inner_class
def f():
    import torch_xla as tx
    if flag:
        import deeper
from . import sibling
from os.path import *
";
    let expected = vec![
        ("torch", "torch", Unconditional, false),
        ("torch_xla", "torch_xla", Unconditional, false),
        ("tnn", "torch.nn", Unconditional, false),
        ("xm", "torch_xla.core.xla_model", TryExcept, false),
        ("fallback", "fallback", ExceptHandler, false),
        ("Sequence", "typing.Sequence", TypeChecking, false),
        ("xr", "torch_xla.runtime", Availability, false),
        ("cpu_only", "cpu_only", Availability, false),
        ("other", "other", OtherIf, false),
        ("tomllib", "tomllib", OtherIf, false),
        ("maybe", "maybe", Unconditional, false),
        ("inner_class", "inner_class", Unconditional, false),
        ("tx", "torch_xla", InFunction, true),
        ("deeper", "deeper", OtherIf, true),
    ];
    let expected: Vec<(String, String, ImportCondition, bool)> = expected
        .into_iter()
        .map(|(l, q, c, f)| (l.to_string(), q.to_string(), c, f))
        .collect();
    assert_eq!(imports(source), expected);
}

#[test]
fn import_queries() {
    let source = "\
try:
    import torch_xla.core.xla_model as xm
except ImportError:
    pass
import torch_xla.core.xla_model as xla_model
import torch
";
    let tree = syntax::parse(source, None).expect("parses");
    let summary = ModuleImports::build(tree.root_node(), source);
    // The unconditional alias wins over the guarded one.
    assert_eq!(
        summary
            .local_name_for("torch_xla.core.xla_model")
            .as_deref(),
        Some("xla_model")
    );
    // `import torch` names any submodule by its dotted path.
    assert_eq!(
        summary.local_name_for("torch.nn.functional").as_deref(),
        Some("torch.nn.functional")
    );
    assert_eq!(summary.local_name_for("numpy"), None);
    assert!(summary.imports_unconditionally("torch_xla"));
    assert!(!summary.imports_unconditionally("torch_x"));
    let first = summary
        .first_import_of("torch_xla")
        .expect("a torch_xla import");
    assert_eq!(first.condition, ImportCondition::TryExcept);
    assert_eq!(
        &source[first.statement.clone()],
        "import torch_xla.core.xla_model as xm"
    );
    assert_eq!(
        first
            .guard
            .clone()
            .map(|range| &source[range])
            .map(|text| text.starts_with("try:")),
        Some(true)
    );

    let guarded = "if is_torch_xla_available():\n    import torch_xla\n";
    let tree = syntax::parse(guarded, None).expect("parses");
    let summary = ModuleImports::build(tree.root_node(), guarded);
    assert!(!summary.imports_unconditionally("torch_xla"));
    assert!(summary.imports_package("torch_xla"));
    assert_eq!(
        summary.condition_of("torch_xla"),
        Some(ImportCondition::Availability)
    );
}

/// The hardware scope at the marked expression.
fn scope(marked: &str) -> HardwareScope {
    at(marked).hardware_scope
}

#[test]
fn guards_and_hardware_scope() {
    let cuda_branch =
        "import torch\nif torch.cuda.is_available():\n    ⟦x⟧ = 1\nelse:\n    y = 2\n";
    assert!(scope(cuda_branch).never_on_tpu);
    let else_branch =
        "import torch\nif torch.cuda.is_available():\n    x = 1\nelse:\n    ⟦y⟧ = 2\n";
    let else_scope = scope(else_branch);
    assert!(!else_scope.never_on_tpu && else_scope.device_branch);
    // Negation, `!=`, `not in` and names flip or carry polarity.
    assert!(!scope("if not torch.cuda.is_available():\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(scope("if device.type == \"cuda\":\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(!scope("if device.type != \"cuda\":\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(scope("if \"cuda\" in str(device):\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(scope("if x.is_cuda:\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(!scope("if not args.no_cuda:\n    pass\nelse:\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(scope("if torch.cuda.device_count() > 1:\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(!scope("if torch.cuda.device_count() == 0:\n    ⟦x⟧ = 1\n").never_on_tpu);
    // A branch after one that handled the TPU does not run on it.
    let after_tpu = "if is_torch_xla_available():\n    a = 1\nelif flag:\n    ⟦b⟧ = 2\n";
    assert!(scope(after_tpu).never_on_tpu);
    assert!(scope("if is_torch_xla_available():\n    ⟦a⟧ = 1\n").tpu_only);
    // Early exits scope the rest of the block.
    let early = "def f():\n    if not torch.cuda.is_available():\n        return\n    ⟦x⟧ = 1\n";
    assert!(scope(early).never_on_tpu);
    let before_exit =
        "def f():\n    ⟦x⟧ = 1\n    if not torch.cuda.is_available():\n        return\n";
    assert!(!scope(before_exit).never_on_tpu);
    let after_function =
        "def f():\n    if not torch.cuda.is_available():\n        return\n    x = 1\n⟦y⟧ = 2\n";
    assert!(!scope(after_function).never_on_tpu);
    // A function every call of which in the file runs only with CUDA is CUDA-only code.
    let cuda_callers = "import torch\ndef ampere():\n    ⟦major⟧ = torch.cuda.get_device_capability()[0]\n    return major >= 8\ndef check():\n    if not torch.cuda.is_available() or not ampere():\n        return\n";
    assert!(scope(cuda_callers).never_on_tpu);
    let one_caller_unguarded = "import torch\ndef ampere():\n    ⟦major⟧ = torch.cuda.get_device_capability()[0]\n    return major >= 8\nif torch.cuda.is_available():\n    ampere()\nampere()\n";
    assert!(!scope(one_caller_unguarded).never_on_tpu);
    let never_called =
        "import torch\ndef ampere():\n    ⟦major⟧ = torch.cuda.get_device_capability()[0]\n";
    assert!(!scope(never_called).never_on_tpu);
    // A FlashAttention-only attention implementation is a CUDA-only branch.
    assert!(
        scope("if self.config._attn_implementation == \"flash_attention_2\":\n    ⟦x⟧ = 1\n")
            .never_on_tpu
    );
    assert!(!scope("if self.config._attn_implementation == \"sdpa\":\n    ⟦x⟧ = 1\n").never_on_tpu);
    // TorchScript / ONNX export branches never run on a TPU.
    assert!(scope("if torch.jit.is_scripting():\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(!scope("if not torch.jit.is_scripting():\n    ⟦x⟧ = 1\n").never_on_tpu);
    // A helper called only from a function that uses a CUDA-only package is CUDA-only too.
    let library_caller = "import torch\nfrom flash_attn.bert_padding import index_first_axis\ndef unpad(mask):\n    ⟦seqlens⟧ = mask.sum(-1)\n    return seqlens\ndef upad_input(k, mask):\n    s = unpad(mask)\n    return index_first_axis(k, s)\n";
    assert!(scope(library_caller).never_on_tpu);
    // An option of the TPU path is no TPU test: its `else` still runs on a TPU.
    let option = "if args.tpu_use_cluster:\n    pod()\nelse:\n    ⟦single⟧()\n";
    assert!(!scope(option).never_on_tpu);
    let flag = "if args.use_tpu:\n    tpu()\nelse:\n    ⟦gpu⟧()\n";
    assert!(scope(flag).never_on_tpu);
    // A predicate of the file that is true only off a TPU guards like the test it hides.
    let predicate = "class T:\n    def _use_closures(self):\n        \"\"\"Doc.\"\"\"\n        if self.deepspeed:\n            return False\n        if self.backend == \"xla\":\n            return False\n        return True\n    def fit(self):\n        if self._use_closures():\n            ⟦x⟧ = 1\n";
    assert!(scope(predicate).never_on_tpu);
    let returns_test =
        "def on_gpu(d):\n    return d.type == \"cuda\"\nif on_gpu(d) and verbose:\n    ⟦x⟧ = 1\n";
    assert!(scope(returns_test).never_on_tpu);
    // Negated, or after a `return True` that may come first, it says nothing.
    let negated = predicate.replace("if self._use_closures():", "if not self._use_closures():");
    assert!(!scope(&negated).never_on_tpu);
    let true_first = predicate.replace(
        "if self.deepspeed:\n            return False",
        "if self.deepspeed:\n            return True",
    );
    assert!(!scope(&true_first).never_on_tpu);
    // A method predicate is not a module function of the same name.
    let bare = predicate.replace("if self._use_closures():", "if _use_closures():");
    assert!(!scope(&bare).never_on_tpu);
    // Skip decorators and requirement markers.
    for decorator in [
        "@unittest.skipIf(not torch.cuda.is_available(), \"needs CUDA\")",
        "@unittest.skipUnless(torch.cuda.is_available(), \"needs CUDA\")",
        "@pytest.mark.skipif(not torch.cuda.is_available(), reason=\"cuda\")",
        "@RunIf(min_cuda_gpus=1)",
        "@require_torch_gpu",
        "@onlyCUDA",
        "@pytest.mark.cuda",
    ] {
        let source = format!("{decorator}\ndef test_op():\n    ⟦x⟧ = 1\n");
        assert!(scope(&source).never_on_tpu, "{decorator}");
    }
    assert!(!scope("@unittest.skipIf(torch.cuda.is_available(), \"cpu only\")\ndef test_op():\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(!scope("@RunIf(min_cuda_gpus=0)\ndef test_op():\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(scope("@RunIf(tpu=True)\ndef test_op():\n    ⟦x⟧ = 1\n").tpu_only);
    assert!(!scope("@RunIf(tpu=True)\ndef test_op():\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(scope("if TYPE_CHECKING:\n    ⟦x⟧ = 1\n").type_checking);
    // Text that is not a condition never counts.
    assert!(!scope("# if torch.cuda.is_available():\nprint(\"cuda\")\n⟦x⟧ = 1\n").device_branch);
    assert!(!scope("if flag:\n    ⟦x⟧ = \"cuda\"\n").device_branch);
}

#[test]
fn excerpts_read_free_names_as_device_values() {
    // A file without imports that reads as torch code: its free names are device values of the
    // code it was cut from, and its code is `HotPath::Excerpt`; builtins stay what they are.
    let loss = at("if running_loss is None:\n    running_loss = ⟦loss⟧.item()\n");
    assert_eq!(
        (loss.fact.kind, loss.fact.device, loss.hot_path),
        (
            ValueKind::Tensor,
            Device::Accelerator,
            Some(HotPath::Excerpt)
        )
    );
    let builtin = at("x.cpu()\nn = ⟦len⟧(x)\n");
    assert_eq!(builtin.fact.kind, ValueKind::Unknown);
    // No torch in it (an exception module): no excerpt.
    let plain = at("class E(Exception):\n    def __str__(self):\n        return str(⟦message⟧)\n");
    assert_eq!(
        (plain.fact.kind, plain.hot_path),
        (ValueKind::Unknown, None)
    );
    // With an import it is a module like any other.
    let module = at("import torch\ny = ⟦loss⟧.item()\n");
    assert_eq!(
        (module.fact.kind, module.hot_path),
        (ValueKind::Unknown, None)
    );
}

#[test]
fn code_roles() {
    let test_code = |marked: &str| at(marked).test_code;
    // pytest and unittest conventions, in files that use the framework.
    assert!(test_code("import pytest\ndef test_op():\n    ⟦x⟧ = 1\n"));
    assert!(test_code(
        "import pytest\n@pytest.fixture\ndef model():\n    ⟦x⟧ = 1\n"
    ));
    assert!(test_code(
        "import unittest\nclass TestOps(unittest.TestCase):\n    def helper(self):\n        ⟦x⟧ = 1\n"
    ));
    assert!(test_code(
        "from torch.testing._internal.common_utils import TestCase\nclass Ops(TestCase):\n    def test_a(self):\n        def inner():\n            ⟦x⟧ = 1\n"
    ));
    // `def test(model, loader)` in a training script is its evaluation loop.
    assert!(!test_code(
        "import torch\ndef test(model, loader):\n    ⟦x⟧ = 1\n"
    ));
    assert!(!test_code("import pytest\ndef helper():\n    ⟦x⟧ = 1\n"));
    assert!(!test_code(
        "import pytest\ndef test_op():\n    pass\n⟦x⟧ = 1\n"
    ));
    // A test path makes the whole file test code.
    let source = "def helper():\n    x = 1\n";
    let tree = syntax::parse(source, None).expect("parses");
    let settings = Settings {
        test_path: tpulint_analyzer::settings::is_test_path("tests/models/helpers.py"),
        ..Settings::default()
    };
    let inspection = inspect(source, &tree, &settings, 17..18).expect("inspects");
    assert!(inspection.test_code);
}

#[test]
fn test_code_reports_errors_only_by_default() {
    use tpulint_analyzer::{Severity, TestCodePolicy, check_source};
    // TPU404's `torch.cuda.synchronize()` is an error (it raises); a host sync in a test is not.
    let source = "import pytest\nimport torch\n\ndef test_step(model, loader):\n    for x, y in loader:\n        loss = model(x).sum()\n        loss.backward()\n        print(loss.item())\n        torch.cuda.synchronize()\n";
    let findings = check_source(source, &Settings::default());
    assert!(!findings.is_empty());
    assert!(
        findings.iter().all(|d| d.severity == Severity::Error),
        "{findings:?}"
    );
    let all = Settings {
        test_code: TestCodePolicy::All,
        ..Settings::default()
    };
    assert!(check_source(source, &all).len() > findings.len());
    let off = Settings {
        test_code: TestCodePolicy::Off,
        ..Settings::default()
    };
    assert!(check_source(source, &off).is_empty());
}

#[test]
fn function_summaries_give_call_facts() {
    let helper = at(
        "import torch\ndef make_mask(n):\n    return torch.ones(n)\nmask = make_mask(3)\n⟦mask⟧\n",
    )
    .fact;
    assert_eq!(
        (helper.kind, helper.device),
        (ValueKind::Tensor, Device::Cpu)
    );
    assert_eq!(helper.evidence, Evidence::Summary);
    // The fact cites the helper's factory.
    assert!(helper.origin.is_some());
    let source = "import torch\ndef split(x):\n    if x:\n        return torch.zeros(1), 3\n    return torch.ones(2), 4\na, b = split(1)\nMARK\n";
    let check = |expr: &str| at(&source.replace("MARK", &format!("⟦{expr}⟧"))).fact;
    assert_eq!(
        (check("a").kind, check("a").device),
        (ValueKind::Tensor, Device::Cpu)
    );
    assert_eq!(check("b").kind, ValueKind::Scalar);
    // Disagreeing returns give nothing.
    let mixed = at("import torch\ndef f(x):\n    if x:\n        return torch.ones(1)\n    return None\ny = f(1)\n⟦y⟧\n").fact;
    assert_eq!(mixed.kind, ValueKind::Unknown);
    // Methods through `self`.
    let method = at("import torch\nfrom torch import nn\nclass Net(nn.Module):\n    def _mask(self, n):\n        return torch.ones(n)\n    def forward(self, x):\n        m = self._mask(3)\n        return ⟦m⟧\n").fact;
    assert_eq!(
        (method.kind, method.device),
        (ValueKind::Tensor, Device::Cpu)
    );
    // Fields of a model's output are tensors on the device.
    let output = at("from torch import nn\nclass Net(nn.Module):\n    pass\nmodel = Net().to(dev)\nout = model(x)\n⟦out.logits⟧\n").fact;
    assert_eq!(
        (output.kind, output.device),
        (ValueKind::Tensor, Device::Accelerator)
    );
    assert_eq!(output.evidence, Evidence::ModuleCall);
    let pretrained = at("from transformers import AutoModel\nmodel = AutoModel.from_pretrained(\"bert\")\n⟦model⟧\n").fact;
    assert_eq!(pretrained.kind, ValueKind::Module);
}

#[test]
fn reach_through_the_call_graph() {
    // With an import: a file without one that reads as torch code is an excerpt, whose code is
    // `HotPath::Excerpt` wherever nothing else makes it hot.
    let at = |marked: &str| at(&format!("import torch\n{marked}"));
    let hot = |marked: &str| at(marked).hot_path;
    let helper = "def log_loss(loss):\n    ⟦x⟧ = loss\nfor batch in loader:\n    log_loss(batch)\n";
    assert_eq!(hot(helper), Some(HotPath::CalledFromLoop));
    let transitive = "def inner(v):\n    ⟦x⟧ = v\ndef outer(v):\n    inner(v)\nfor batch in loader:\n    outer(batch)\n";
    assert_eq!(hot(transitive), Some(HotPath::CalledFromLoop));
    let from_step = "def inner(v):\n    ⟦x⟧ = v\ndef train_step(batch):\n    inner(batch)\n";
    assert_eq!(hot(from_step), Some(HotPath::CalledFromLoop));
    // Throttled calls, per-epoch calls and calls after the loop are cold.
    let throttled = "def log_loss(loss):\n    ⟦x⟧ = loss\nfor step, batch in enumerate(loader):\n    if step % 100 == 0:\n        log_loss(batch)\n";
    assert_eq!(hot(throttled), None);
    let per_epoch = "def evaluate(m):\n    ⟦x⟧ = m\nfor epoch in range(3):\n    for batch in loader:\n        loss.backward()\n    evaluate(model)\n";
    assert_eq!(hot(per_epoch), None);
    let after = "def report(m):\n    ⟦x⟧ = m\nfor batch in loader:\n    pass\nreport(model)\n";
    assert_eq!(hot(after), None);
    // Recursion is cycle-safe.
    let cycle =
        "def a(v):\n    b(v)\ndef b(v):\n    ⟦x⟧ = a(v)\nfor batch in loader:\n    a(batch)\n";
    assert_eq!(hot(cycle), Some(HotPath::CalledFromLoop));
}

#[test]
fn throttles_closures_and_per_step_methods() {
    let hot = |marked: &str| at(marked).hot_path;
    let throttled = "for step, batch in enumerate(loader):\n    if step % 100 == 0 and rank == 0:\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(throttled), None);
    let unthrottled = "for step, batch in enumerate(loader):\n    if rank == 0:\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(unthrottled), Some(HotPath::BatchLoop));
    // A test of the innermost loop's counter against a constant runs once per loop; an early
    // exit there leaves the rest of the loop hot, and an outer loop's counter proves nothing.
    let first = "for i, batch in enumerate(loader):\n    if i == 0:\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(first), None);
    let ranged = "for step in range(steps):\n    model(x).backward()\n    opt.step()\n    if 0 == step and log:\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(ranged), None);
    let every = "for step in range(steps):\n    model(x).backward()\n    opt.step()\n    if log:\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(every), Some(HotPath::TrainingLoop));
    let skip_first =
        "for i, batch in enumerate(loader):\n    if i == 0:\n        continue\n    ⟦x⟧ = 1\n";
    assert_eq!(hot(skip_first), Some(HotPath::BatchLoop));
    let outer = "for epoch in range(3):\n    for batch in loader:\n        if epoch == 0:\n            ⟦x⟧ = 1\n";
    assert_eq!(hot(outer), Some(HotPath::BatchLoop));
    let not_counter = "for i, batch in enumerate(loader):\n    if n == 0:\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(not_counter), Some(HotPath::BatchLoop));
    let closure = "import torch_xla.core.xla_model as xm\nfor batch in loader:\n    xm.add_step_closure(lambda: print(⟦loss⟧))\n";
    assert_eq!(hot(closure), None);
    let named_closure = "import torch_xla.core.xla_model as xm\ndef report(loss):\n    ⟦x⟧ = loss\nfor batch in loader:\n    xm.add_step_closure(report, args=(loss,))\n";
    assert_eq!(hot(named_closure), None);
    let gan = "class GANTrainer:\n    def step(self, batch):\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(gan), Some(HotPath::StepFunction));
    // A custom optimizer's `step` updates every parameter once per training step: as hot as a
    // module's `forward` (session 16; it was cold while any base text naming `Optimizer` made a
    // class "optimizer-like"). A scheduler's `step` runs once per step or epoch on host floats.
    let optimizer = "import torch\nclass Lion(torch.optim.Optimizer):\n    def step(self, closure=None):\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(optimizer), Some(HotPath::StepFunction));
    let imported = "from torch.optim import Optimizer\nclass Lion(Optimizer):\n    def step(self, closure=None):\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(imported), Some(HotPath::StepFunction));
    let derived = "from torch.optim.optimizer import Optimizer\nclass Base(Optimizer):\n    pass\nclass Lion(Base):\n    def step(self, closure=None):\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(derived), Some(HotPath::StepFunction));
    let scheduler = "import torch\nclass Warmup(torch.optim.lr_scheduler.LRScheduler):\n    def step(self, epoch=None):\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(scheduler), None);
    let unresolved = "class Lion(Optimizer):\n    def step(self, closure=None):\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(unresolved), None);
    let hook = "class Cb(Callback):\n    def on_train_batch_end(self, trainer, module, outputs, batch, i):\n        ⟦x⟧ = 1\n";
    assert_eq!(hot(hook), Some(HotPath::StepFunction));
    // Reach from `forward` and through methods of the file's classes.
    let from_forward = "from torch import nn\ndef match_anchors(a):\n    ⟦x⟧ = a\nclass Det(nn.Module):\n    def forward(self, a):\n        return match_anchors(a)\n";
    assert_eq!(hot(from_forward), Some(HotPath::CalledFromLoop));
    let method_edge = "class Buffer:\n    def sample(self, n):\n        ⟦x⟧ = n\nfor batch in loader:\n    buffer.sample(32)\n";
    assert_eq!(hot(method_edge), Some(HotPath::CalledFromLoop));
    // An evaluation loop over `tqdm(loader)` is hot: a loop over batches.
    let eval = "from tqdm import tqdm\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\npbar = tqdm(loader)\nfor images, labels in pbar:\n    ⟦x⟧ = 1\n";
    assert_eq!(hot(eval), Some(HotPath::BatchLoop));
}

#[test]
fn more_device_tests() {
    let early = "def f(accelerator):\n    if accelerator.distributed_type == DistributedType.XLA:\n        return 1\n    ⟦x⟧ = 2\n";
    assert!(scope(early).never_on_tpu);
    let branch = "if state.backend != Backend.CUDA:\n    ⟦x⟧ = 1\n";
    assert!(!scope(branch).never_on_tpu);
    // Two module-level pytest tests make a test module without an import.
    assert!(at("def test_a():\n    ⟦x⟧ = 1\ndef test_b():\n    pass\n").test_code);
    assert!(!at("def train_epoch(m):\n    pass\ndef test_epoch(m):\n    ⟦x⟧ = 1\n").test_code);
}

#[test]
fn short_circuit_and_choices_off_tpu_are_not_reported() {
    use tpulint_analyzer::check_source;
    let source = "import torch\nfrom torch import nn\nclass Block(nn.Module):\n    def forward(self, x):\n        out = self.proj(x)\n        if out.dtype == torch.float16 and torch.isinf(out).any():\n            out = out.clamp(-1e4, 1e4)\n        if torch.isinf(out).any():\n            out = out * 0\n        return out\n";
    let lines: Vec<usize> = check_source(source, &Settings::default())
        .iter()
        .map(|d| source[..d.range.start].lines().count())
        .collect();
    assert!(!lines.contains(&6), "{lines:?}");
    assert!(lines.contains(&8), "{lines:?}");
}

#[test]
fn test_code_policy_leaves_workload_findings_alone() {
    use tpulint_analyzer::check_source;
    // A warning in the training loop survives a test function later in the same file.
    let source = "import pytest\nimport torch\nfor x in loader:\n    loss = model(x).sum()\n    loss.backward()\n    print(loss.item())\n\ndef test_op():\n    assert torch.ones(1).sum().item() == 1\n";
    let findings = check_source(source, &Settings::default());
    assert!(findings.iter().any(|d| d.code == "TPU101"), "{findings:?}");
}

#[test]
fn nested_type_checking_imports_never_run() {
    let source = "if TYPE_CHECKING:\n    try:\n        import torch_xla\n    except ImportError:\n        pass\nimport torch\n";
    let tree = syntax::parse(source, None).expect("parses");
    let summary = ModuleImports::build(tree.root_node(), source);
    let records = summary.records();
    assert_eq!(records[0].condition, ImportCondition::TryExcept);
    assert!(records[0].type_checking);
    assert!(!records[1].type_checking);
}

#[test]
fn names_and_loops() {
    // Only "cuda" in a name marks a device branch: `verify_on_gpu()` may run on a TPU host.
    assert!(!scope("def verify_on_gpu(m):\n    ⟦x⟧ = 1\n").device_branch);
    assert!(scope("def run_cuda_graph(m):\n    ⟦x⟧ = 1\n").device_branch);
    // Rows of a host tensor are host tensors.
    let row =
        at("import torch\nbest = torch.zeros(3, 4).cpu()\nfor seq in best:\n    ⟦seq⟧\n").fact;
    assert_eq!((row.kind, row.device), (ValueKind::Tensor, Device::Cpu));
}

#[test]
fn helpers_passed_device_loader_batches_hold_device_tensors() {
    // Every call passes a batch of a device loader (iterated directly, through `enumerate`, or
    // through a name bound to one): the helper's parameters are tensors on the device. A
    // plain loader's batch, or a value of unknown kind beside it, says nothing.
    let source = "import torch\nimport torch_xla\nimport torch_xla.distributed.parallel_loader as pl\n\ndef pair_loss(emb, labels, extra):\n    return MARK\n\ndef train(model, train_loader, plain_loader, device, scale):\n    for step, (images, labels) in enumerate(pl.MpDeviceLoader(train_loader, device)):\n        pair_loss(images, labels, scale)\n    loader = pl.MpDeviceLoader(train_loader, device)\n    for images, labels in loader:\n        pair_loss(images, labels, scale)\n";
    let check = |expr: &str| at(&source.replace("MARK", &format!("⟦{expr}⟧"))).fact;
    for name in ["emb", "labels"] {
        let fact = check(name);
        assert_eq!(
            (fact.kind, fact.device, fact.evidence),
            (ValueKind::Tensor, Device::Accelerator, Evidence::CallSite),
            "{name}"
        );
    }
    assert_ne!(check("extra").device, Device::Accelerator);
    let plain = source.replace(
        "    loader = pl.MpDeviceLoader(train_loader, device)\n",
        "    loader = plain_loader\n",
    );
    let labels = at(&plain.replace("MARK", "⟦labels⟧")).fact;
    assert_ne!(labels.evidence, Evidence::CallSite);
}

#[test]
fn helpers_passed_module_outputs_hold_device_tensors() {
    // Every call passes the output of a module of this file on the accelerator (moved where it
    // was built, or in place and wrapped): the helper's parameter is a device tensor. The
    // module passed itself stays unknown (an evaluation helper's `model` is not a device
    // module by its call sites); a class without `forward`, a dtype-only move or one host call
    // says nothing.
    let source = "import torch\nimport torch.nn as nn\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n\nclass Tower(nn.Module):\n    def forward(self, x):\n        return x\n\ndef loss_fn(q, model):\n    return MARK\n\ndef train(x, device):\n    query = Tower().to(device)\n    loss_fn(query(x), query)\n    other = Tower()\n    other.to(device)\n    wrapped = DDP(other)\n    loss_fn(wrapped(x), wrapped)\n";
    let check = |source: &str, expr: &str| at(&source.replace("MARK", &format!("⟦{expr}⟧"))).fact;
    let q = check(source, "q");
    assert_eq!(
        (q.kind, q.device, q.evidence),
        (ValueKind::Tensor, Device::Accelerator, Evidence::CallSite)
    );
    let model = check(source, "model");
    assert_ne!(
        (model.device, model.evidence),
        (Device::Accelerator, Evidence::CallSite)
    );
    for variant in [
        source.replace("    def forward(self, x):", "    def run(self, x):"),
        source.replace("other.to(device)", "other.to(torch.bfloat16)"),
        format!("{source}    loss_fn(torch.zeros(3), None)\n"),
    ] {
        let q = check(&variant, "q");
        assert_ne!(
            (q.device, q.evidence),
            (Device::Accelerator, Evidence::CallSite)
        );
    }
}

#[test]
fn nested_steps_read_enclosing_modules_at_call_sites() {
    // A step defined in the training function calls the module it closes over and unpacks the
    // output: the helper it passes the elements to gets device tensors. A step whose own
    // parameter shadows the name, or an enclosing binding that is no device module, says
    // nothing.
    let source = "import torch\nimport torch.nn as nn\n\nclass Tower(nn.Module):\n    def forward(self, x):\n        return x, x\n\ndef pair(q):\n    return MARK\n\ndef train(x, device):\n    model = Tower().to(device)\n    def step(batch):\n        q, v = model(batch)\n        pair(q)\n    step(x)\n";
    let check = |source: &str| at(&source.replace("MARK", "⟦q⟧")).fact;
    let q = check(source);
    assert_eq!(
        (q.kind, q.device, q.evidence),
        (ValueKind::Tensor, Device::Accelerator, Evidence::CallSite)
    );
    for variant in [
        source.replace("def step(batch):", "def step(batch, model):"),
        source.replace("    step(x)\n", "    model = Tower()\n    step(x)\n"),
    ] {
        let q = check(&variant);
        assert_ne!(
            (q.device, q.evidence),
            (Device::Accelerator, Evidence::CallSite)
        );
    }
}

#[test]
fn fields_of_reductions_are_tensors() {
    // `.values` / `.indices` of `max(dim)`, `topk`, `sort`: tensors where the input was, not
    // Python values (a mask built from them indexes a tensor).
    let source =
        "import torch\ndef f(x: torch.Tensor):\n    best = x.max(dim=1)\n    return MARK\n";
    let check = |expr: &str| at(&source.replace("MARK", &format!("⟦{expr}⟧"))).fact;
    for expr in [
        "best.values",
        "x.topk(3).indices",
        "torch.min(x, dim=0).values",
    ] {
        let fact = check(expr);
        assert_eq!(
            (fact.kind, fact.device),
            (ValueKind::Tensor, Device::Accelerator),
            "{expr}"
        );
    }
    assert_eq!(check("x.dtype").kind, ValueKind::Scalar);
}

#[test]
fn items_of_module_sequences_are_modules() {
    // `for block in self.blocks:` over an `nn.ModuleList` or `nn.Sequential` (also through
    // `zip` and `enumerate`) binds a submodule, and calling it gives a tensor on the device.
    let source = "import torch\nfrom torch import nn\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])\n        self.stack = nn.Sequential(nn.Linear(4, 4), nn.ReLU())\n        self.heads = nn.ModuleDict({\"a\": nn.Linear(4, 4)})\n\n    def forward(self, x):\n        LOOP\n            return MARK\n";
    let check = |header: &str, expr: &str| {
        at(&source
            .replace("LOOP", header)
            .replace("MARK", &format!("⟦{expr}⟧")))
        .fact
    };
    let block = check("for block in self.blocks:", "block");
    assert_eq!(block.kind, ValueKind::Module);
    let out = check("for block in self.blocks:", "block(x)");
    assert_eq!(
        (out.kind, out.device),
        (ValueKind::Tensor, Device::Accelerator)
    );
    assert_eq!(
        check("for layer in self.stack:", "layer").kind,
        ValueKind::Module
    );
    assert_eq!(
        check("for i, block in enumerate(self.blocks):", "block").kind,
        ValueKind::Module
    );
    assert_eq!(
        check(
            "for block, layer in zip(self.blocks, self.stack):",
            "layer(x)"
        )
        .kind,
        ValueKind::Tensor
    );
    // A `ModuleDict` yields its keys, strings.
    assert_ne!(
        check("for name in self.heads:", "name").kind,
        ValueKind::Module
    );
    // A module of another kind iterated (a custom container) says nothing about its items.
    assert_ne!(
        at("from torch import nn\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.proj = nn.Linear(4, 4)\n    def forward(self, x):\n        for p in self.proj:\n            return ⟦p⟧\n")
            .fact
            .kind,
        ValueKind::Module
    );
}

#[test]
fn device_loader_batches_and_called_parameters() {
    let source = "import torch_xla.distributed.parallel_loader as pl\nfrom tqdm import tqdm\ndef evaluate(model, loader, criterion, device):\n    pbar = tqdm(pl.MpDeviceLoader(loader, device))\n    for step, (images, labels) in enumerate(pbar):\n        logits = model(images)\n        loss = criterion(logits, labels)\n        MARK\n";
    let check = |expr: &str| at(&source.replace("MARK", &format!("⟦{expr}⟧")));
    let images = check("images");
    assert_eq!(
        (images.fact.kind, images.fact.device),
        (ValueKind::Tensor, Device::Accelerator)
    );
    assert_eq!(images.hot_path, Some(HotPath::BatchLoop));
    let loss = check("loss").fact;
    assert_eq!(
        (loss.kind, loss.device),
        (ValueKind::Tensor, Device::Accelerator)
    );
    assert_eq!(check("step").fact.kind, ValueKind::Unknown);
}

/// The lines (1-based) of the default findings of `source` checked under `settings`.
fn finding_lines(source: &str, settings: &Settings) -> Vec<(usize, &'static str)> {
    tpulint_analyzer::check_source(source, settings)
        .iter()
        .map(|d| (source[..d.range.start].lines().count(), d.code))
        .collect()
}

#[test]
fn cuda_only_libraries_scope_the_code_that_calls_them() {
    // A block that calls a CUDA-only package needs CUDA whenever it runs.
    let block = "from megatron import mpu\ndef step(x):\n    group = mpu.get_data_parallel_group()\n    ⟦y⟧ = x.cuda()\n";
    assert!(scope(block).never_on_tpu);
    // Only that block: the rest of the function, and other functions, are not scoped.
    let branch = "import torch\nfrom apex import amp\ndef step(loss, use_apex):\n    if use_apex:\n        amp.scale_loss(loss)\n    ⟦y⟧ = loss.item()\n";
    assert!(!scope(branch).never_on_tpu);
    let other = "from megatron import mpu\ndef a():\n    mpu.get_rank()\ndef b():\n    ⟦y⟧ = 1\n";
    assert!(!scope(other).never_on_tpu);
    // A local import counts; so do the definitions nested in that block.
    let local = "def make():\n    import bitsandbytes as bnb\n    class Linear8(bnb.nn.Linear8bitLt):\n        def to(self):\n            ⟦d⟧ = 1\n";
    assert!(scope(local).never_on_tpu);
    // A class whose `__init__` calls one has no instance without CUDA.
    let class = "import torch\nfrom megatron import get_args\nclass Engine(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.args = get_args()\n    def forward(self, x):\n        ⟦y⟧ = x.cuda()\n";
    assert!(scope(class).never_on_tpu);
    // A module-level optional import alone scopes nothing.
    let optional = "try:\n    from apex.normalization import FusedRMSNorm\nexcept ImportError:\n    FusedRMSNorm = None\ndef f(x):\n    ⟦y⟧ = x.cuda()\n";
    assert!(!scope(optional).never_on_tpu);
    // And a finding there is dropped by the checker.
    let source = "import torch\nfrom megatron import mpu\n\ndef send(data):\n    mpu.get_rank()\n    return data.to(torch.cuda.current_device())\n";
    assert!(finding_lines(source, &Settings::default()).is_empty());
}

#[test]
fn vendor_dispatch_else_is_the_cuda_arm() {
    // Every test probes another accelerator and the `else` calls `torch.cuda.*`: CUDA's arm.
    let dispatch = "import torch\ndef seed(s):\n    if is_torch_xpu_available():\n        torch.xpu.manual_seed_all(s)\n    elif is_torch_npu_available():\n        torch.npu.manual_seed_all(s)\n    else:\n        torch.cuda.manual_seed_all(s)\n        ⟦x⟧ = s\n";
    let arm = scope(dispatch);
    assert!(arm.never_on_tpu && arm.device_branch);
    // The probes' own arms are not CUDA's.
    let probe_arm = "import torch\ndef seed(s):\n    if is_torch_npu_available():\n        ⟦x⟧ = s\n    else:\n        torch.cuda.manual_seed_all(s)\n";
    assert!(!scope(probe_arm).never_on_tpu);
    // An `else` without CUDA calls is the CPU's (or anyone's).
    let cpu = "import torch\ndef seed(s):\n    if is_torch_npu_available():\n        torch.npu.manual_seed_all(s)\n    else:\n        ⟦x⟧ = s\n";
    assert!(!scope(cpu).never_on_tpu);
    // A raising CUDA call: with no TPU arm a TPU takes this `else` and crashes there.
    let raising = "import torch\ndef sync():\n    if torch.backends.mps.is_available():\n        torch.mps.synchronize()\n    else:\n        torch.cuda.synchronize()\n        ⟦x⟧ = 1\n";
    assert!(!scope(raising).never_on_tpu);
    // A test that is no probe (an option, a value) makes no dispatch.
    let option = "import torch\ndef seed(s, use_npu):\n    if use_npu:\n        torch.npu.manual_seed_all(s)\n    else:\n        torch.cuda.manual_seed_all(s)\n        ⟦x⟧ = s\n";
    assert!(!scope(option).never_on_tpu);
    // A CUDA call only in a nested definition does not make the arm CUDA's.
    let nested = "import torch\ndef seed(s):\n    if is_torch_npu_available():\n        pass\n    else:\n        def later():\n            torch.cuda.manual_seed_all(s)\n        ⟦x⟧ = s\n";
    assert!(!scope(nested).never_on_tpu);
    // A single `if is_torch_xla_available():` already leaves the TPU out of its `else`, CUDA
    // calls or not, raising ones included.
    let single = "import torch\ndef sync():\n    if is_torch_xla_available():\n        xm.wait_device_ops()\n    else:\n        torch.cuda.synchronize()\n        ⟦x⟧ = 1\n";
    assert!(scope(single).never_on_tpu);
    // Findings in the CUDA arm are dropped.
    let source = "import torch\n\ndef seed(s):\n    if is_torch_npu_available():\n        torch.npu.manual_seed_all(s)\n    else:\n        torch.cuda.manual_seed_all(s)\n";
    assert!(finding_lines(source, &Settings::default()).is_empty());
    let unguarded = "import torch\n\ndef seed(s):\n    torch.cuda.manual_seed_all(s)\n";
    assert_eq!(
        finding_lines(unguarded, &Settings::default()),
        vec![(4, "TPU404")]
    );
}

#[test]
fn error_branches_report_errors_only() {
    let raise = "def f(x):\n    if x.sum() < 0:\n        ⟦bad⟧ = x.tolist()\n        raise ValueError(bad)\n";
    assert!(at(raise).roles.error_branch);
    let assert_false = "import torch\ndef f(x):\n    if bad:\n        ⟦i⟧ = 1\n        torch._assert(False, 'degenerate')\n";
    assert!(at(assert_false).roles.error_branch);
    // A branch that raises somewhere in the middle, or the code after it, is no error branch.
    let after = "def f(x):\n    if x is None:\n        raise ValueError\n    ⟦y⟧ = 1\n";
    assert!(!at(after).roles.error_branch);
    let middle = "def f(x):\n    if bad:\n        try:\n            raise ValueError\n        except ValueError:\n            pass\n        ⟦y⟧ = 1\n";
    assert!(!at(middle).roles.error_branch);
    // In `forward`, the `.tolist()` of the error branch is not reported; the condition is.
    let source = "import torch\nfrom torch import nn\nclass Det(nn.Module):\n    def forward(self, boxes):\n        degenerate = boxes[:, 2:] <= boxes[:, :2]\n        if degenerate.any():\n            bad = boxes[degenerate.any(dim=1)].tolist()\n            raise ValueError(f'degenerate boxes {bad}')\n        return self.head(boxes)\n";
    let lines = finding_lines(source, &Settings::default());
    assert!(!lines.iter().any(|(line, _)| *line == 7), "{lines:?}");
}

#[test]
fn load_time_functions_are_not_per_step() {
    // A function that rewrites a state dict, and helpers only it calls, run once per load.
    let filter = "import torch.nn.functional as F\ndef resize(pos, size):\n    ⟦r⟧ = F.interpolate(pos, size=size, mode='bicubic')\n    return r\ndef checkpoint_filter_fn(state_dict, model):\n    state_dict['pos'] = resize(state_dict['pos'], 14)\n    return state_dict\n";
    assert!(at(filter).roles.load_time);
    let hook =
        "class M:\n    def _load_from_state_dict(self, sd, prefix, *args):\n        ⟦x⟧ = 1\n";
    assert!(at(hook).roles.load_time);
    // A helper also called from `forward` is hot, not load time.
    let shared = "import torch.nn.functional as F\ndef resize(pos, size):\n    ⟦r⟧ = F.interpolate(pos, size=size, mode='bicubic')\n    return r\ndef checkpoint_filter_fn(state_dict, model):\n    return resize(state_dict['pos'], 14)\nclass M:\n    def forward(self, x):\n        return resize(x, 7)\n";
    assert!(!at(shared).roles.load_time);
    // A `checkpoint=` parameter (resuming a training loop) is not enough.
    let resume = "def train(model, loader, checkpoint=None):\n    ⟦x⟧ = 1\n";
    assert!(!at(resume).roles.load_time);
    // The bicubic fallback is not reported there; a dtype choice still is.
    let source = "import torch\nimport torch.nn.functional as F\n\ndef checkpoint_filter_fn(state_dict, model):\n    pos = state_dict['pos_embed']\n    state_dict['pos_embed'] = F.interpolate(pos, size=(14, 14), mode='bicubic')\n    state_dict['w'] = state_dict['w'].to('xla').half()\n    return state_dict\n";
    let lines = finding_lines(source, &Settings::default());
    assert!(
        !lines.iter().any(|(_, code)| *code == "TPU202"),
        "{lines:?}"
    );
}

#[test]
fn once_per_run_functions_are_not_per_step() {
    // Called only from module-level code outside loops, with no loop of its own: once per run.
    let tutorial = "import torch\ndef get_matrix():\n    ⟦m⟧ = torch.rand(4, 4, device='xla')\n    return m\nX = get_matrix()\nY = get_matrix()\n";
    assert!(at(tutorial).roles.once_per_run);
    // And so are the helpers only such functions call, outside loops.
    let helper = "def inner():\n    ⟦x⟧ = 1\ndef outer():\n    return inner()\nif __name__ == '__main__':\n    outer()\n";
    assert!(at(helper).roles.once_per_run);
    // Not when a call runs in a module-level loop or comprehension, or in a lambda.
    for source in [
        "def f():\n    ⟦x⟧ = 1\nfor _ in range(10):\n    f()\n",
        "def f(i):\n    ⟦x⟧ = i\nxs = [f(i) for i in range(10)]\n",
        "def f(i):\n    ⟦x⟧ = i\ng = lambda i: f(i)\n",
    ] {
        assert!(!at(source).roles.once_per_run, "{source}");
    }
    // Not when the function has a loop (a `main` holding the training loop), nor for what it
    // calls; not when it is passed as a value (a collate function), nor for `forward`; not when
    // a training loop reaches it; not for a function the file never calls; not in a closure it
    // defines.
    for source in [
        "def main():\n    for b in loader:\n        ⟦x⟧ = b\nmain()\n",
        "def step(b):\n    ⟦x⟧ = b\ndef train():\n    for b in loader:\n        step(b)\ndef main():\n    train()\nmain()\n",
        "def collate(batch):\n    ⟦x⟧ = batch\ncollate([1])\nloader = DataLoader(ds, collate_fn=collate)\n",
        "class M:\n    def forward(self, x):\n        ⟦y⟧ = x\nM().forward(1)\n",
        "def helper(b):\n    ⟦y⟧ = b\nhelper(0)\ndef train(loader, opt):\n    for b in loader:\n        helper(b).backward()\n        opt.step()\n",
        "def lib(x):\n    ⟦y⟧ = x\n",
        "def make():\n    def step(b):\n        ⟦y⟧ = b\n    return step\nrun = make()\n",
    ] {
        assert!(!at(source).roles.once_per_run, "{source}");
    }
    // Its cost findings are dropped there; errors and map_location still report.
    let source = "import torch\n\ndef get_matrix():\n    m = torch.rand(8, 8, device='xla')\n    assert torch.nonzero(m).size(0) == 64\n    state = torch.load('w.pt')\n    return m.cuda()\n\nX = get_matrix()\n";
    let codes: Vec<&str> = finding_lines(source, &Settings::default())
        .into_iter()
        .map(|(_, code)| code)
        .collect();
    assert!(!codes.contains(&"TPU301"), "{codes:?}");
    assert!(
        codes.contains(&"TPU406") && codes.contains(&"TPU403"),
        "{codes:?}"
    );
    // The same helper called in a loop keeps its finding.
    let looped = source.replace(
        "X = get_matrix()",
        "for _ in range(100):\n    X = get_matrix()",
    );
    assert!(
        finding_lines(&looped, &Settings::default())
            .iter()
            .any(|(_, code)| *code == "TPU301")
    );
}

#[test]
fn host_data_pipeline_code_reports_no_device_value_findings() {
    // Datasets build samples on the host.
    let dataset = "from torch.utils.data import Dataset\nclass Shapes(Dataset):\n    def __getitem__(self, i):\n        ⟦x⟧ = 1\n";
    assert!(at(dataset).roles.host_data);
    // Pipelines' pre- and post-processing steps run on the host, unless `forward` calls them.
    let pipeline = "class FillMask:\n    def postprocess(self, outputs):\n        ⟦x⟧ = 1\n";
    assert!(at(pipeline).roles.host_data);
    let detector = "from torch import nn\nclass Det(nn.Module):\n    def postprocess_detections(self, boxes):\n        ⟦x⟧ = 1\n    def forward(self, x):\n        return self.postprocess_detections(x)\n";
    assert!(!at(detector).roles.host_data);
    // A collate function batches host samples in DataLoader workers, unless a loop calls it.
    let collate = "import torch\ndef collate_inputs_to_batch(inputs):\n    ⟦lengths⟧ = torch.stack([i.shape[0] for i in inputs])\n";
    assert!(at(collate).roles.host_data);
    let looped =
        format!("{collate}for batch in loader:\n    model(collate_inputs_to_batch(batch))\n");
    assert!(!at(&looped).roles.host_data);
    assert!(
        !at("def collect_inputs(inputs):\n    ⟦lengths⟧ = 1\n")
            .roles
            .host_data
    );
    assert!(
        !at("class Net:\n    def forward(self, x):\n        ⟦y⟧ = 1\n")
            .roles
            .host_data
    );
    // A transforms module: its boolean masks and `.item()`s are on host tensors.
    let source = "import torch\nfrom torch import nn\nclass Equalize(nn.Module):\n    def forward(self, img):\n        h = self.proj(img)\n        kept = h[h > 0]\n        return kept.sum().item()\n";
    let workload = finding_lines(source, &Settings::default());
    assert!(!workload.is_empty());
    let transforms = Settings {
        data_pipeline_path: tpulint_analyzer::settings::is_data_pipeline_path(
            "vision/transforms/functional.py",
        ),
        ..Settings::default()
    };
    assert!(finding_lines(source, &transforms).is_empty());
    // Padding rules still apply in a collator: their shapes reach the device.
    let collate = "import torch\nimport torch_xla\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds, batch_size=8, shuffle=True)\nfor batch in loader:\n    loss = model(batch).sum()\n    loss.backward()\n";
    let lines = finding_lines(collate, &transforms);
    assert!(lines.iter().any(|(_, code)| *code == "TPU306"), "{lines:?}");
}

#[test]
fn modules_only_a_host_transform_uses_are_host_code() {
    // An `nn.Module` built only by a plain class whose `__call__` takes a PIL image (or a NumPy
    // array) is a component of that host-side transform: its `forward` runs on host tensors.
    let transform = |annotation: &str| {
        format!(
            "import torch\nimport numpy as np\nfrom PIL import Image\nclass _Core(torch.nn.Module):\n    def forward(self, size):\n        ⟦h⟧, w = size.tolist()\n        return h\nclass Transform:\n    def __init__(self):\n        self.core = _Core()\n    def __call__(self, *, image: {annotation}):\n        return self.core(torch.tensor(image.size))\n"
        )
    };
    assert!(at(&transform("Image.Image")).roles.host_data);
    assert!(at(&transform("np.ndarray")).roles.host_data);
    // Not for another annotation, nor when the module is also built elsewhere in the file (a
    // model), nor for the transform class's own `__call__` beyond what datasets already get.
    assert!(!at(&transform("torch.Tensor")).roles.host_data);
    let shared = transform("Image.Image").replace(
        "class Transform:",
        "class Model(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.core = _Core()\nclass Transform:",
    );
    assert!(!at(&shared).roles.host_data);
    // An unresolved `Image` (no import) is no evidence.
    let unresolved = transform("Image.Image").replace("from PIL import Image\n", "");
    assert!(!at(&unresolved).roles.host_data);
    // And the `.tolist()` of its `forward` is not reported there; it is in a model.
    let source = transform("Image.Image").replace(['⟦', '⟧'], "");
    let lines = finding_lines(&source, &Settings::default());
    assert!(
        !lines.iter().any(|(_, code)| *code == "TPU102"),
        "{lines:?}"
    );
    let model = source.replace("image: Image.Image", "image: torch.Tensor");
    let lines = finding_lines(&model, &Settings::default());
    assert!(lines.iter().any(|(_, code)| *code == "TPU102"), "{lines:?}");
}

#[test]
fn checkpoint_converters_report_errors_and_loads_only() {
    // A converter runs once, offline: padding, float64 and per-op costs are moot there; a
    // `.cuda()` (raises on a TPU host) and a load without `map_location` are not.
    let source = "import torch\nfrom torch.utils.data import DataLoader\nstate = torch.load(path)\nw = state[\"w\"].double()\nref = model.cuda()\ndevice = \"cuda\" if torch.cuda.is_available() else \"cpu\"\n";
    let workload = finding_lines(source, &Settings::default());
    let codes =
        |lines: &[(usize, &str)]| lines.iter().map(|(_, c)| c.to_string()).collect::<Vec<_>>();
    let everywhere = codes(&workload);
    assert!(everywhere.contains(&"TPU501".to_string()), "{everywhere:?}");
    let converter = Settings {
        converter_path: tpulint_analyzer::settings::is_converter_path(
            "models/llama/convert_llama_weights_to_hf.py",
        ),
        ..Settings::default()
    };
    let lines = finding_lines(source, &converter);
    let kept = codes(&lines);
    assert!(kept.contains(&"TPU406".to_string()), "{kept:?}");
    assert!(kept.contains(&"TPU403".to_string()), "{kept:?}");
    assert!(!kept.contains(&"TPU501".to_string()), "{kept:?}");
    assert!(!kept.contains(&"TPU402".to_string()), "{kept:?}");
}

#[test]
fn tensor_metadata_and_annotations_are_not_tensors() {
    // `.dtype` / `.ndim` of a model output describe it; they are no tensors.
    let dtype = "import torch\nfrom torch import nn\nclass B(nn.Module):\n    def forward(self, x):\n        h = self.proj(x)\n        return ⟦h.dtype⟧\n";
    assert_ne!(at(dtype).fact.kind, ValueKind::Tensor);
    let ndim = "import torch\nfrom torch import nn\nclass B(nn.Module):\n    def forward(self, x):\n        h = self.proj(x)\n        return ⟦h.ndim⟧\n";
    assert_ne!(at(ndim).fact.kind, ValueKind::Tensor);
    // A tuple or cache of tensors is a container; `Optional[torch.Tensor]` is a tensor.
    let cache = "import torch\ndef forward(self, x, past_key_value: Optional[Tuple[Tuple[torch.FloatTensor]]] = None):\n    return ⟦past_key_value⟧\n";
    assert_eq!(at(cache).fact.kind, ValueKind::Container);
    let tensor = "import torch\ndef forward(self, x, mask: Optional[torch.Tensor] = None):\n    return ⟦mask⟧\n";
    assert_eq!(at(tensor).fact.kind, ValueKind::Tensor);
    let union = "import torch\ndef forward(self, x, mask: torch.Tensor | None = None):\n    return ⟦mask⟧\n";
    assert_eq!(at(union).fact.kind, ValueKind::Tensor);
    // A flag's default says what it is, whatever the annotation claims.
    let flag = "import torch\ndef forward(self, x, output_attentions: Optional[torch.Tensor] = False):\n    return ⟦output_attentions⟧\n";
    assert_eq!(at(flag).fact.kind, ValueKind::Scalar);
    // So `if h.dtype != self.wo.weight.dtype:` and `if past_key_value:` are no tensor conditions.
    let source = "import torch\nfrom torch import nn\nclass B(nn.Module):\n    def forward(self, x, past_key_value: Optional[Tuple[torch.Tensor]] = None):\n        h = self.wo(x)\n        if h.dtype != self.wo.weight.dtype:\n            h = h.to(self.wo.weight.dtype)\n        if past_key_value:\n            h = h + 1\n        return h\n";
    let lines = finding_lines(source, &Settings::default());
    assert!(
        !lines.iter().any(|(_, code)| *code == "TPU107"),
        "{lines:?}"
    );
}

#[test]
fn cuda_mode_flags_scope_their_branches() {
    // `parallelize()` places the model on CUDA devices and switches `model_parallel` on.
    let model = "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.model_parallel = False\n    def parallelize(self, device_map=None):\n        self.device_map = range(torch.cuda.device_count()) if device_map is None else device_map\n        self.model_parallel = True\n        ⟦first⟧ = 'cuda:0'\n    def forward(self, x):\n        if self.model_parallel:\n            torch.cuda.set_device(x.device)\n        return x\n";
    assert!(scope(model).never_on_tpu);
    let branch = model.replace("⟦first⟧", "first").replace(
        "            torch.cuda.set_device(x.device)",
        "            ⟦torch.cuda.set_device(x.device)⟧",
    );
    assert!(scope(&branch).never_on_tpu);
    assert!(finding_lines(&model.replace(['⟦', '⟧'], ""), &Settings::default()).is_empty());
    // A flag also switched on by a method without CUDA calls is no CUDA mode.
    let shared = "import torch\nclass M:\n    def parallelize(self):\n        torch.cuda.set_device(0)\n        self.ready = True\n    def setup(self):\n        self.ready = True\n    def forward(self, x):\n        if self.ready:\n            ⟦y⟧ = x\n";
    assert!(!scope(shared).never_on_tpu);
    // A CUDA call under a branch of the method does not make the flag a CUDA mode.
    let conditional = "import torch\nclass M:\n    def setup(self, cuda):\n        if cuda:\n            torch.cuda.set_device(0)\n        self.ready = True\n    def forward(self, x):\n        if self.ready:\n            ⟦y⟧ = x\n";
    assert!(!scope(conditional).never_on_tpu);
}

#[test]
fn names_holding_cuda_values_scope_their_tests() {
    // `stream` is non-None only where CUDA is: `if stream is not None:` runs only with CUDA.
    let prefetch = "import torch\ndef loader(self):\n    if self.is_cuda:\n        stream = torch.cuda.Stream()\n    else:\n        stream = None\n    for x in self.loader:\n        if stream is not None:\n            ⟦torch.cuda.current_stream().wait_stream(stream)⟧\n";
    assert!(scope(prefetch).never_on_tpu);
    let object = "import torch\ndef f(flag):\n    stream = torch.cuda.Stream() if flag else None\n    if stream:\n        ⟦x⟧ = 1\n";
    assert!(scope(object).never_on_tpu);
    // A name that also holds a host value is no CUDA test.
    let mixed = "import torch\ndef f(flag):\n    stream = torch.cuda.Stream() if flag else None\n    if flag:\n        stream = make_stream()\n    if stream is not None:\n        ⟦x⟧ = 1\n";
    assert!(!scope(mixed).never_on_tpu);
    let plain = "def f(x):\n    y = x\n    if y is not None:\n        ⟦z⟧ = 1\n";
    assert!(!scope(plain).never_on_tpu);
}

#[test]
fn attributes_holding_cuda_values_scope_their_tests() {
    // transformers' offloaded static cache: the prefetch stream exists only on CUDA, set in
    // `__init__` and tested in another method.
    let cache = "import torch\nclass Cache:\n    def __init__(self, device):\n        self.device = device\n        self._prefetch_stream = torch.cuda.Stream() if self.device.type == \"cuda\" else None\n    def update(self, k):\n        if self._prefetch_stream is not None:\n            ⟦torch.cuda.default_stream(self.device).wait_stream(self._prefetch_stream)⟧\n";
    assert!(scope(cache).never_on_tpu);
    // Truthiness and `… and …` count too; a value assigned in CUDA-only code counts.
    let guarded = "import torch\nclass L:\n    def __init__(self, cuda):\n        self.stream = None\n        if torch.cuda.is_available():\n            self.stream = make_stream()\n    def run(self, x):\n        if self.stream and x:\n            ⟦y⟧ = 1\n";
    assert!(scope(guarded).never_on_tpu);
    // An attribute that also holds a value made without CUDA anywhere in the file is no test.
    let mixed = cache.replace(
        "    def update(self, k):\n",
        "    def reset(self):\n        self._prefetch_stream = make_stream()\n    def update(self, k):\n",
    );
    assert!(!scope(&mixed).never_on_tpu);
    // Only `None` ever: nothing says CUDA. A plain attribute: no test.
    let plain = "class L:\n    def __init__(self, stream):\n        self.stream = stream\n    def run(self):\n        if self.stream is not None:\n            ⟦y⟧ = 1\n";
    assert!(!scope(plain).never_on_tpu);
    // Another object's attribute of that name is not `self`'s.
    let other = cache.replace(
        "if self._prefetch_stream is not None:",
        "if other._prefetch_stream is not None:",
    );
    assert!(!scope(&other).never_on_tpu);
}

#[test]
fn classes_whose_initialiser_raises_without_cuda_are_cuda_only() {
    // transformers' `OffloadedCache`: no instance exists without CUDA, so its methods run only
    // with CUDA.
    let cache = "import torch\nclass OffloadedCache(DynamicCache):\n    def __init__(self):\n        if not torch.cuda.is_available():\n            raise RuntimeError(\"OffloadedCache can only be used with a GPU\")\n        super().__init__()\n    def __getitem__(self, i):\n        ⟦torch.cuda.current_stream().synchronize()⟧\n";
    assert!(scope(cache).never_on_tpu);
    assert!(finding_lines(&cache.replace(['⟦', '⟧'], ""), &Settings::default()).is_empty());
    // An early `return` leaves an instance; a check in another method says nothing of the
    // class; a raise when CUDA *is* there leaves the class to the TPU.
    let returns = cache.replace(
        "raise RuntimeError(\"OffloadedCache can only be used with a GPU\")",
        "return",
    );
    assert!(!scope(&returns).never_on_tpu);
    let elsewhere = cache.replace("def __init__(self):", "def setup(self):");
    assert!(!scope(&elsewhere).never_on_tpu);
    let opposite = cache.replace(
        "if not torch.cuda.is_available():",
        "if torch.cuda.is_available():",
    );
    assert!(!scope(&opposite).never_on_tpu);
    // A function's raise is not a class's.
    let function = "import torch\ndef make():\n    if not torch.cuda.is_available():\n        raise RuntimeError(\"GPU\")\n    return 1\ndef other():\n    ⟦x⟧ = 1\n";
    assert!(!scope(function).never_on_tpu);
}

#[test]
fn device_counts_that_are_only_compared_are_harmless() {
    let tpu404 = |source: &str| {
        finding_lines(source, &Settings::default())
            .into_iter()
            .filter(|(_, code)| *code == "TPU404")
            .count()
    };
    // accelerate's memory-map check: the count of a vendor dispatch, compared and bounding a
    // `range` in a message: 0 devices is the right answer on a TPU machine.
    let compared = "import torch\ndef check(gpu_devices, xpu):\n    if xpu:\n        n = torch.xpu.device_count()\n    else:\n        n = torch.cuda.device_count()\n    for d in gpu_devices:\n        if d >= n:\n            print(list(range(n)))\n";
    assert_eq!(tpu404(compared), 0);
    // Returned, passed, in arithmetic, reassigned from something else, or never used: reported.
    for use_ in [
        "    return n\n",
        "    spawn(nprocs=n)\n",
        "    per_node = world // n\n",
        "    n = n or 1\n",
        "    pass\n",
    ] {
        let source =
            format!("import torch\ndef f(world):\n    n = torch.cuda.device_count()\n{use_}");
        assert_eq!(tpu404(&source), 1, "{use_}");
    }
}

#[test]
fn lengths_of_device_names_are_device_counts() {
    // transformers' Reformer seeds CUDA's generator when there is one per device.
    let generators = "import torch\nif hasattr(torch.cuda, \"default_generators\") and len(torch.cuda.default_generators) > 0:\n    ⟦x⟧ = 1\n";
    assert!(scope(generators).never_on_tpu);
    assert!(scope("if len(gpu_ids) > 0:\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(!scope("if len(gpu_ids) == 0:\n    ⟦x⟧ = 1\n").never_on_tpu);
    // The length of anything else, or of a call's result, is no device test.
    assert!(!scope("if len(seeds) > 0:\n    ⟦x⟧ = 1\n").never_on_tpu);
    assert!(!scope("if len(get_gpus()) > 0:\n    ⟦x⟧ = 1\n").never_on_tpu);
}

#[test]
fn state_loaded_onto_the_host_holds_host_tensors() {
    let device = |marked: &str| at(marked).fact.device;
    let load =
        "import torch\nstate = torch.load(path, map_location=\"cpu\")\nw = state[\"w\"]\n⟦w⟧\n";
    assert_eq!(device(load), Device::Cpu);
    let safetensors = "from safetensors.torch import load_file\nbase = load_file(path)\nfor name, weight in base.items():\n    ⟦weight⟧\n";
    assert_eq!(device(safetensors), Device::Cpu);
    let get = "import torch\nadapter = torch.load(p, map_location='cpu')\na, b = adapter.get('a'), adapter.get('b')\n⟦b⟧\n";
    assert_eq!(device(get), Device::Cpu);
    assert_eq!(at(get).fact.kind, ValueKind::Tensor);
    // Without `map_location`, where the tensors land is unknown.
    let unknown = "import torch\nstate = torch.load(path)\n⟦state[\"w\"]⟧\n";
    assert_ne!(device(unknown), Device::Cpu);
}

#[test]
fn tuple_assignments_bind_element_by_element() {
    let source = "import torch\nx, n = torch.zeros(3, device='xla'), 4\n⟦x⟧\n";
    assert_eq!(at(source).fact.kind, ValueKind::Tensor);
    assert_eq!(at(source).fact.device, Device::Accelerator);
    let scalar = "import torch\nx, n = torch.zeros(3, device='xla'), 4\n⟦n⟧\n";
    assert_eq!(at(scalar).fact.kind, ValueKind::Scalar);
}

#[test]
fn cuda_device_loops_and_cuda_only_choices() {
    // `range(torch.cuda.device_count())` is empty without CUDA.
    let devices = "import torch\nfor i in range(torch.cuda.device_count()):\n    ⟦free⟧ = torch.cuda.mem_get_info(i)\n";
    assert!(scope(devices).never_on_tpu);
    assert!(!scope("for i in range(n):\n    ⟦x⟧ = 1\n").never_on_tpu);
    // A value that exists only on CUDA (`index if device.type == "cuda" else None`) makes
    // `… and index is not None` a CUDA-only test.
    let index = "import torch\ndef f(module, device):\n    index = torch.device(device).index if torch.device(device).type == 'cuda' else None\n    if ready and index is not None:\n        ⟦m⟧ = module.cuda(index)\n";
    assert!(scope(index).never_on_tpu);
    let other = "import torch\ndef f(module, device):\n    index = torch.device(device).index if flag else None\n    if index is not None:\n        ⟦m⟧ = module.to(index)\n";
    assert!(!scope(other).never_on_tpu);
}

#[test]
fn elif_throttles_are_cold() {
    let source = "import torch\nfor step, batch in enumerate(loader):\n    loss = model(batch).sum()\n    loss.backward()\n    if step % 1000 == 0:\n        evaluate()\n    elif step % 100 == 0:\n        ⟦x⟧ = loss.item()\n";
    assert_eq!(at(source).hot_path, None);
    let hot = "import torch\nfor step, batch in enumerate(loader):\n    loss = model(batch).sum()\n    loss.backward()\n    if step == 0:\n        pass\n    elif flag:\n        ⟦x⟧ = loss.item()\n";
    assert!(at(hot).hot_path.is_some());
}

#[test]
fn names_moved_to_the_device_later_are_on_the_host_until_then() {
    let device = |marked: &str| {
        let fact = at(marked).fact;
        assert_eq!(fact.kind, ValueKind::Tensor, "{marked}");
        fact.device
    };
    // Built from an annotated parameter (a guess) and moved two lines later: a host tensor.
    let head =
        "import torch\nclass P:\n    def __call__(self, w: torch.Tensor, masks: torch.Tensor):\n";
    let later = format!(
        "{head}        if masks is None:\n            lens = torch.ones(3)\n        else:\n            lens = masks.sum(dim=1)\n        short = ⟦lens⟧ < 2\n        lens[short] = 1\n        return self.m(w, lens.to(self.device))\n"
    );
    assert_eq!(device(&later), Device::Cpu);
    // `name = name.to(...)` and `.cuda()` move too; the mask built from it is a host mask.
    let rebound = format!(
        "{head}        lens = masks.sum(dim=1)\n        short = lens < 2\n        ⟦short⟧\n        lens = lens.cuda()\n"
    );
    assert_eq!(device(&rebound), Device::Cpu);
    // After the move it is on the device.
    let after = format!(
        "{head}        x = masks * 2\n        x = x.to(self.device)\n        ⟦x⟧[x > 0] = 0\n"
    );
    assert_eq!(device(&after), Device::Accelerator);
    // The move is of another binding of the name.
    let other = format!(
        "{head}        x = masks * 2\n        ⟦x⟧[x > 0] = 0\n        x = masks + 1\n        x.to(self.device)\n"
    );
    assert_eq!(device(&other), Device::Accelerator);
    // The definition already places it: a model's output, a move, `device=`, hard-coded CUDA.
    let output = "import torch\nclass P:\n    def __call__(self, model, masks: torch.Tensor):\n        x = model(masks)\n        ⟦x⟧[x > 0] = 0\n        x.to(self.device)\n";
    assert_eq!(device(output), Device::Accelerator);
    let moved = format!(
        "{head}        x = (masks * 2).to(self.device)\n        ⟦x⟧[x > 0] = 0\n        x.to(self.device)\n"
    );
    assert_eq!(device(&moved), Device::Accelerator);
    let cuda = format!(
        "{head}        x = torch.zeros(3, device=\"cuda\")\n        ⟦x⟧[x > 0] = 0\n        x.to(self.device)\n"
    );
    assert_eq!(device(&cuda), Device::Cuda);
    // A dtype conversion or a copy to the CPU is no move to the device.
    let dtype = format!(
        "{head}        x = masks * 2\n        ⟦x⟧[x > 0] = 0\n        x = x.to(torch.float32)\n        y = x.to(\"cpu\")\n"
    );
    assert_eq!(device(&dtype), Device::Accelerator);
    // In a loop whose next iteration sees the moved value, the earlier line is not host code.
    let looped = format!(
        "{head}        x = masks * 2\n        for _ in range(3):\n            ⟦x⟧[x > 0] = 0\n            x = x.to(self.device)\n"
    );
    assert_eq!(device(&looped), Device::Accelerator);
    // Bound afresh in the loop's body, each iteration's value is on the host until it moves.
    let fresh = format!(
        "{head}        for _ in range(3):\n            x = masks * 2\n            ⟦x⟧[x > 0] = 0\n            x = x.to(self.device)\n"
    );
    assert_eq!(device(&fresh), Device::Cpu);
    // A nested function's own name is not the outer function's.
    let nested = format!(
        "{head}        x = masks * 2\n        def inner(x: torch.Tensor):\n            return ⟦x⟧ + 1\n        return inner(x.to(self.device))\n"
    );
    assert_eq!(device(&nested), Device::Accelerator);
    // A parameter is whatever the caller passes: the move may be defensive.
    let parameter =
        format!("{head}        ⟦masks⟧[masks > 0] = 0\n        masks.to(self.device)\n");
    assert_eq!(device(&parameter), Device::Accelerator);
    // So are `forward`'s inputs and what is computed from them (`ids.to(self.weight.device)`).
    let forward = "import torch\nclass M(torch.nn.Module):\n    def forward(self, ids):\n        x = ids * 2\n        ⟦x⟧[x > 0] = 0\n        x = x.to(self.weight.device)\n";
    assert_eq!(device(forward), Device::Accelerator);
    // The masked write before the move is not reported.
    let source = format!(
        "{head}        lens = masks.sum(dim=1)\n        lens[lens < 2] = 1\n        return self.m(w, lens.to(self.device))\n"
    );
    assert!(finding_lines(&source, &Settings::default()).is_empty());
}

/// The fact, device and evidence the index holds for a marked parameter use.
fn passed(marked: &str) -> (ValueKind, Device, Evidence) {
    let fact = at(marked).fact;
    (fact.kind, fact.device, fact.evidence)
}

#[test]
fn call_sites_tell_parameters_what_they_hold() {
    use Device::{Accelerator, Cpu, Cuda};
    use ValueKind::{Module, Scalar, Tensor, Unknown};
    let host = (Tensor, Cpu, Evidence::CallSite);
    let device = (Tensor, Accelerator, Evidence::CallSite);
    let unknown = (Unknown, Device::Unknown, Evidence::Unknown);
    // (source, what the marked parameter holds)
    let cases: &[(&str, (ValueKind, Device, Evidence))] = &[
        // A factory without `device=` is a host tensor; through a local name too.
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nf(torch.zeros(3))\n",
            host,
        ),
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nm = torch.ones(2, 2)\nf(m)\n",
            host,
        ),
        // `.to(device)`, `device=` with a variable, a device string: the accelerator.
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nf(torch.zeros(3).to(dev))\n",
            device,
        ),
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nf(torch.zeros(3, device=dev))\n",
            device,
        ),
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nm = torch.ones(2)\nf(m.to(\"xla\"))\n",
            device,
        ),
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nf(torch.ones(2, device=\"cuda\"))\n",
            (Tensor, Cuda, Evidence::CallSite),
        ),
        // Keyword arguments, and a positional one after another parameter.
        (
            "import torch\ndef f(a, x):\n    return ⟦x⟧\nf(1, x=torch.zeros(3))\n",
            host,
        ),
        (
            "import torch\ndef f(a, x):\n    return ⟦x⟧\nf(1, torch.zeros(3))\n",
            host,
        ),
        (
            "import torch\ndef f(a, x):\n    return ⟦a⟧\nf(1, torch.zeros(3))\n",
            (Scalar, Device::Unknown, Evidence::CallSite),
        ),
        // Every call site agrees: the fact holds; one disagrees or is unknown: nothing.
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nf(torch.zeros(3))\nf(torch.ones(4))\n",
            host,
        ),
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nf(torch.zeros(3))\nf(torch.ones(4).to(dev))\n",
            unknown,
        ),
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nf(torch.zeros(3))\nf(batch)\n",
            unknown,
        ),
        (
            "import torch\ndef f(x=None):\n    return ⟦x⟧\nf(torch.zeros(3))\nf()\n",
            unknown,
        ),
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nf(torch.zeros(3))\nf(*args)\n",
            unknown,
        ),
        // A function passed as a value has callers the file does not see.
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nf(torch.zeros(3))\nloader = map(f, xs)\n",
            unknown,
        ),
        // No call in the file: nothing (it may be called from elsewhere).
        ("import torch\ndef f(x):\n    return ⟦x⟧\n", unknown),
        // A loop target is whatever the iterable yields: unknown.
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nfor b in data:\n    f(b)\n",
            unknown,
        ),
        // The last binding before the call counts.
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nm = torch.ones(2)\nm = m.to(dev)\nf(m)\n",
            device,
        ),
        // A binding under an `if` may not have run: the value before it counts too.
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nm = torch.ones(2)\nif c:\n    m = m.to(dev)\nf(m)\n",
            unknown,
        ),
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\nm = torch.ones(2)\nif c:\n    m = torch.zeros(2)\nf(m)\n",
            host,
        ),
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\ndef g(b):\n    if b is None:\n        b = torch.zeros(2, device=dev)\n    return f(b)\ng(batch)\n",
            unknown,
        ),
        // A caller's own parameter carries its call sites' facts (transitively).
        (
            "import torch\ndef g(y):\n    return ⟦y⟧\ndef f(x):\n    return g(x)\nf(torch.zeros(3))\n",
            host,
        ),
        // Recursion and mutual recursion settle on the outside call sites.
        (
            "import torch\ndef f(x, n):\n    if n:\n        return f(x, n - 1)\n    return ⟦x⟧\nf(torch.zeros(3), 4)\n",
            host,
        ),
        (
            "import torch\ndef f(x):\n    return g(⟦x⟧)\ndef g(y):\n    return f(y)\nf(torch.zeros(3))\n",
            host,
        ),
        (
            "import torch\ndef f(x):\n    return g(⟦x⟧)\ndef g(y):\n    return f(y)\n",
            unknown,
        ),
        // Methods called on `self` map past `self`; a keyword works there too.
        (
            "import torch\nclass A:\n    def run(self):\n        return self.h(torch.zeros(3))\n    def h(self, x):\n        return ⟦x⟧\n",
            host,
        ),
        (
            "import torch\nclass A:\n    def run(self):\n        return self.h(x=torch.zeros(3).cuda())\n    def h(self, x):\n        return ⟦x⟧\n",
            (Tensor, Cuda, Evidence::CallSite),
        ),
        // Two methods of that name in the file: which one a call reaches is unknown.
        (
            "import torch\nclass A:\n    def h(self, x):\n        return ⟦x⟧\nclass B:\n    def h(self, x):\n        return x\nA().h(torch.zeros(3))\n",
            unknown,
        ),
        // Modules built from torch classes.
        (
            "import torch\nfrom torch import nn\ndef f(m):\n    return ⟦m⟧\nf(nn.Linear(2, 2))\n",
            (Module, Device::Unknown, Evidence::CallSite),
        ),
        // The annotation and a literal default still decide first.
        (
            "import torch\ndef f(x: torch.Tensor):\n    return ⟦x⟧\nf(torch.zeros(3))\n",
            (Tensor, Accelerator, Evidence::Annotation),
        ),
        (
            "import torch\ndef f(x=1):\n    return ⟦x⟧\nf(torch.zeros(3))\n",
            (Scalar, Device::Unknown, Evidence::Unknown),
        ),
        // ... except where every call passes an explicit host copy: the annotation names the
        // kind, the calls the placement (mmseg's `compute_dtm(target.cpu(), pred)`).
        (
            "import torch\ndef f(x: torch.Tensor):\n    return ⟦x⟧\ndef g(t, p):\n    f(t.cpu())\n    f(p.argmax(1).cpu())\n",
            (Tensor, Cpu, Evidence::CallSite),
        ),
        (
            "import torch\ndef f(x: torch.Tensor):\n    return ⟦x⟧\ndef g(t, p):\n    f(t.cpu())\n    f(p)\n",
            (Tensor, Accelerator, Evidence::Annotation),
        ),
        // A private function's callers are all in the file: a factory's default placement at
        // every one of them is where the value is (chronos2's `_mass(torch.tensor(levels))`),
        // through a caller's own annotated parameter too; one device call leaves the annotation.
        (
            "import torch\ndef _f(x: torch.Tensor):\n    return ⟦x⟧\n_f(torch.tensor([0.1, 0.5]))\n",
            (Tensor, Cpu, Evidence::CallSite),
        ),
        (
            "import torch\nclass P:\n    def _f(self, x: torch.Tensor):\n        return ⟦x⟧\n    def _g(self, y: torch.Tensor):\n        return self._f(y) + self._f(torch.ones(2))\n    def run(self, q):\n        return self._g(y=torch.tensor(q))\n",
            (Tensor, Cpu, Evidence::CallSite),
        ),
        (
            "import torch\ndef _f(x: torch.Tensor):\n    return ⟦x⟧\n_f(torch.zeros(3))\n_f(torch.zeros(3, device=dev))\n",
            (Tensor, Accelerator, Evidence::Annotation),
        ),
        // `.cpu()` of a value of unknown kind: on the host, kind unknown.
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\ndef g(t):\n    f(t.cpu())\n",
            (ValueKind::Unknown, Cpu, Evidence::CallSite),
        ),
        // A loop's batches: a device loader's are on the device (through `enumerate`); a plain
        // loader's are whatever its collate function builds until `.to(device)` places them.
        (
            "import torch\nimport torch_xla.distributed.parallel_loader as pl\ndef f(x):\n    return ⟦x⟧\ndef g(loader, dev):\n    for step, (x, y) in enumerate(pl.MpDeviceLoader(loader, dev)):\n        f(x)\n",
            device,
        ),
        (
            "import torch\nfrom torch.utils.data import DataLoader\ndef f(x):\n    return ⟦x⟧\ndef g(loader, dev):\n    for x, y in loader:\n        x = x.to(dev)\n        f(x)\ng(DataLoader(ds), dev)\n",
            device,
        ),
        (
            "import torch\nfrom torch.utils.data import DataLoader\ndef f(x):\n    return ⟦x⟧\ndef g(loader):\n    for x, y in loader:\n        f(x)\ng(DataLoader(ds))\n",
            unknown,
        ),
        // Not a loader: `.to(device)` of what a loop over a list binds says nothing of its kind.
        (
            "import torch\ndef f(x):\n    return ⟦x⟧\ndef g(models, dev):\n    for m in models:\n        m = m.to(dev)\n        f(m)\n",
            unknown,
        ),
    ];
    for (source, expected) in cases {
        assert_eq!(passed(source), *expected, "{source}");
    }
    // In a hot function, call sites beat the guess: a host tensor passed to `train_step` is on
    // the host. They never make code hot.
    let step = "import torch\ndef train_step(x):\n    return ⟦x⟧\ntrain_step(torch.zeros(3))\n";
    assert_eq!(passed(step), host);
    let cold = "import torch\ndef helper(x):\n    ⟦y⟧ = x\nhelper(torch.zeros(3).to(dev))\n";
    assert_eq!(at(cold).hot_path, None);
    // Broken code never panics.
    for source in [
        "def f(x:\n    return ⟦x⟧\nf(torch.zeros(3)\n",
        "def f(x, x):\n    return ⟦x⟧\nf(1, torch.zeros(3))\nf(**{})\n",
    ] {
        let _ = std::panic::catch_unwind(|| at(source)).expect("no panic");
    }
}

#[test]
fn values_flowing_into_a_training_loops_backward_are_device_tensors() {
    let train = "import torch\ndef train(model, loader, optimizer, criterion, accumulation, log):\n    for x, y in loader:\n";
    let flows = |body: &str, name: &str| at(&format!("{train}{body}        ⟦{name}⟧\n")).fact;
    // `out` is computed by an unknown callable; the loss made from it is differentiated.
    let base = "        out = model(x)\n        loss = criterion(out, y) / accumulation\n        loss.backward()\n        optimizer.step()\n";
    let out = flows(base, "out");
    assert_eq!(
        (out.kind, out.device, out.evidence),
        (
            ValueKind::Tensor,
            Device::Accelerator,
            Evidence::FlowsIntoBackward
        )
    );
    let field = flows(
        "        outputs = model(x)\n        loss = outputs.loss\n        loss.backward()\n",
        "loss",
    );
    assert_eq!(
        (field.kind, field.device),
        (ValueKind::Tensor, Device::Accelerator)
    );
    // Through a tuple, a method chain, a field of the output, a sum of losses and a scaler.
    for (body, name) in [
        (
            "        out, aux = model(x)\n        loss = criterion(out, y) + aux.mean()\n        loss.backward()\n",
            "aux",
        ),
        (
            "        h = model.encode(x)\n        loss = h.pow(2).mean()\n        loss.backward()\n",
            "h",
        ),
        (
            "        outputs = model(x)\n        loss = outputs.loss\n        scaler.scale(loss).backward()\n",
            "outputs",
        ),
        (
            "        z = log(x)\n        loss = -z.sum()\n        accelerator.backward(loss)\n",
            "z",
        ),
    ] {
        let fact = flows(body, name);
        assert_eq!(
            (fact.kind, fact.device),
            (ValueKind::Tensor, Device::Accelerator),
            "{body}"
        );
    }
    // What does not flow into it stays unknown: a divisor that is a plain name, a value computed
    // after the backward call, a value of a loop that calls no backward, and a binding whose
    // value is written down (a literal or a bare alias).
    for (body, name) in [
        (
            "        w = log(x)\n        loss = criterion(model(x), y) / w\n        loss.backward()\n",
            "w",
        ),
        (
            "        loss = criterion(model(x), y)\n        loss.backward()\n        p = model(x)\n",
            "p",
        ),
        (
            "        out = model(x)\n        loss = criterion(out, y)\n",
            "out",
        ),
    ] {
        let fact = flows(body, name);
        assert_eq!(fact.kind, ValueKind::Unknown, "{body}");
    }
    // Known facts win: a host value stays on the host.
    let host = flows(
        "        t = torch.zeros(3)\n        loss = (model(x) * t).sum()\n        loss.backward()\n",
        "t",
    );
    assert_eq!(host.device, Device::Cpu);
}

#[test]
fn submodule_calls_of_a_module_posted_without_its_constructor() {
    // A bug report's excerpt: the class derives from `nn.Module` itself and its `__init__` was
    // left out, so `self.conv` and `self.relu` can only be submodules.
    let posted = "import torch.nn as nn\nclass Encoder(nn.Module):\n    def forward(self, x):\n        act = self.relu(self.conv(x))\n        return ⟦act⟧\n";
    let act = at(posted).fact;
    assert_eq!(
        (act.kind, act.device),
        (ValueKind::Tensor, Device::Accelerator)
    );
    // With a constructor, or deriving from a class that may define the method, it stays
    // unknown: `self.pad(x)` may be an inherited helper returning anything.
    for source in [
        "import torch.nn as nn\nclass Encoder(nn.Module):\n    def __init__(self):\n        super().__init__()\n    def forward(self, x):\n        act = self.pad(x)\n        return ⟦act⟧\n",
        "import torch.nn as nn\nclass Encoder(Base):\n    def forward(self, x):\n        act = self.pad(x)\n        return ⟦act⟧\n",
    ] {
        assert_eq!(at(source).fact.kind, ValueKind::Unknown, "{source}");
    }
}

#[test]
fn module_calls_and_rebindings_outside_forward() {
    // `self(x)` in any method of a module class runs `forward`: a device tensor in `generate`
    // and `validation_step` too, also unpacked from a tuple.
    let source = "import torch\nfrom torch import nn\nclass GPT(nn.Module):\n    def forward(self, idx):\n        return idx, None\n    def generate(self, idx, n):\n        for _ in range(n):\n            logits, _ = self(idx)\n            probs = self(idx).softmax(-1)\n            MARK\n";
    let check = |expr: &str| at(&source.replace("MARK", &format!("⟦{expr}⟧"))).fact;
    for name in ["logits", "probs"] {
        let fact = check(name);
        assert_eq!(
            (fact.kind, fact.device),
            (ValueKind::Tensor, Device::Accelerator),
            "{name}"
        );
    }
    assert_eq!(check("logits").evidence, Evidence::ModuleCall);
    // `self(x)` outside a module class (a plain class, a function) is not a module call.
    let plain =
        at("class Sampler:\n    def run(self, x):\n        y = self(x)\n        return ⟦y⟧\n").fact;
    assert_eq!(plain.kind, ValueKind::Unknown);
    // `obj.step(...)` on an object of unknown kind where one class of the file defines `step`
    // returns what that method returns; two classes defining it leave it unknown.
    let one = "import torch\nclass Scheduler:\n    def step(self, out, i, sample):\n        return sample + torch.randn(3, device=sample.device)\ndef sample(scheduler, latents):\n    latents = scheduler.step(1, 0, latents)\n    return ⟦latents⟧\n";
    assert_eq!(at(one).fact.kind, ValueKind::Tensor);
    let two = one.replace(
        "def sample(",
        "class Other:\n    def step(self):\n        return 1\ndef sample(",
    );
    assert_eq!(at(&two).fact.kind, ValueKind::Unknown);
    // Wrapping keeps the module's placement: `DDP(model)`, `torch.compile(model)`, `.module`.
    let wrapped = "import torch\nimport torch_xla.core.xla_model as xm\nimport torchvision\nfrom torch.nn.parallel import DistributedDataParallel as DDP\ndevice = xm.xla_device()\nmodel = torchvision.models.resnet50().to(device)\nmodel = WRAP\n⟦MARK⟧\n";
    for wrap in ["DDP(model)", "torch.compile(model)"] {
        let source = wrapped.replace("WRAP", wrap);
        for expr in ["model", "model.module"] {
            let fact = at(&source.replace("MARK", expr)).fact;
            assert_eq!(
                (fact.kind, fact.device),
                (ValueKind::Module, Device::Accelerator),
                "{wrap}: {expr}"
            );
        }
    }
    // A CUDA-or-CPU choice of device is not the XLA device; an XLA-or-CPU choice may be.
    let moved = "import torch\nimport torchvision\nmodel = torchvision.models.resnet50()\neval_device = CHOICE\nmodel = model.to(eval_device)\n⟦model⟧\n";
    let device = |choice: &str| at(&moved.replace("CHOICE", choice)).fact.device;
    assert_eq!(
        device("torch.device(\"cuda\" if torch.cuda.is_available() else \"cpu\")"),
        Device::Unknown
    );
    assert_eq!(
        device("\"cuda\" if torch.cuda.is_available() else \"cuda:1\""),
        Device::Cuda
    );
    assert_eq!(
        device("torch.device(\"xla\" if use_tpu else \"cpu\")"),
        Device::Accelerator
    );
}

#[test]
fn loops_whose_batches_go_to_cuda_are_no_tpu_training_loops() {
    let source = "import torch\nfrom torch.utils.data import DataLoader\ndef evaluate(model, loader):\n    for images, labels in loader:\n        MOVE\n        out = model(images)\n        ⟦x⟧ = 1\n";
    let hot = |moved: &str| at(&source.replace("MOVE", moved)).hot_path;
    assert_eq!(hot("images = images.cuda(non_blocking=True)"), None);
    assert!(hot("images = images.to(device)").is_some());
    // A training loop being ported keeps its findings.
    let training = source.replace(
        "        ⟦x⟧ = 1\n",
        "        out.sum().backward()\n        ⟦x⟧ = 1\n",
    );
    assert!(
        at(&training.replace("MOVE", "images = images.cuda()"))
            .hot_path
            .is_some()
    );
    // A module applied to a CUDA tensor gives a CUDA tensor.
    let output = at("import torch\nfrom torch import nn\nclass Net(nn.Module):\n    pass\nmodel = Net()\nx = torch.ones(2).cuda()\ny = model(x)\n⟦y⟧\n").fact;
    assert_eq!(
        (output.kind, output.device),
        (ValueKind::Tensor, Device::Cuda)
    );
}
