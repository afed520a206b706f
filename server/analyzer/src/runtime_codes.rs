//! The runtime codes (`TPR…`) that `tpulint trace` reports: what a run observed, documented like
//! rules. They are metadata only — no check runs them; the `tpulint_trace` crate finds them in
//! logs. They live beside the rule registry so that every front end (`tpulint rule`, the JSON and
//! SARIF formats, the language server, the wasm `rules()`) describes them as it describes rules.
//! The hundreds digit mirrors the static family whose findings a runtime finding confirms
//! (TPR1xx host syncs, TPR2xx CPU fallbacks, TPR3xx recompilations, TPR6xx backend idioms).

use crate::diagnostic::Severity;
use crate::registry::documentation;

/// One runtime code and its documentation.
#[derive(Debug)]
pub struct RuntimeCode {
    /// `TPR` + three digits.
    pub code: &'static str,
    /// Kebab-case, like a rule's name.
    pub name: &'static str,
    pub severity: Severity,
    /// Static code prefixes whose findings on the same line this finding confirms.
    pub confirms: &'static [&'static str],
    /// Markdown: What it does / Why is this bad? / Example / Use instead / References.
    pub docs: &'static str,
}

impl RuntimeCode {
    /// The first paragraph under "What it does".
    pub fn summary(&self) -> String {
        crate::registry::docs_summary(self.docs)
    }

    /// Where the code's documentation lives.
    pub fn url(&self) -> String {
        format!(
            "https://github.com/tpulint/tpulint/blob/main/docs/trace.md#{}",
            self.code.to_ascii_lowercase()
        )
    }

    /// True when a static finding with `static_code` on the same line is what this runtime
    /// event shows happening.
    pub fn confirms_code(&self, static_code: &str) -> bool {
        self.confirms
            .iter()
            .any(|prefix| static_code.starts_with(prefix))
    }
}

pub static RUNTIME_HOST_SYNC: RuntimeCode = RuntimeCode {
    code: "TPR101",
    name: "runtime-host-sync",
    severity: Severity::Warning,
    confirms: &["TPU1", "TPU2", "TPU3"],
    docs: documentation("## What it does
Reports a line where, during a traced run, PyTorch/XLA executed a graph because Python read a
tensor's value (`Execution Cause: most likely user code trying to access tensor value before
torch_xla.sync`), with how many executions that line caused.

## Why is this bad?
Each such read stops the lazy trace, compiles (or fetches from the cache) and runs the pending
graph, and copies the result to the host while the TPU idles. Inside a training step it splits
every step into several executions. This is the run-time evidence for the host-sync rules
(TPU1xx): a finding here that names a static code confirms it.

## Example
```python
for x, y in loader:
    loss = model(x, y)
    print(loss.item())  # TPR101: 100 executions here were caused by reading a tensor's value
    torch_xla.sync()
```

## Use instead
```python
for step, (x, y) in enumerate(loader):
    loss = model(x, y)
    torch_xla.sync()
    if step % 50 == 0:
        xm.add_step_closure(lambda l=loss: print(l.item()))
```

## References
- PyTorch/XLA, `PT_XLA_DEBUG_LEVEL` and the execution analysis: https://docs.pytorch.org/xla/master/learn/troubleshoot.html
"),
};

pub static RUNTIME_UNEXPECTED_EXECUTION: RuntimeCode = RuntimeCode {
    code: "TPR102",
    name: "runtime-unexpected-execution",
    severity: Severity::Error,
    confirms: &["TPU1", "TPU2", "TPU3"],
    docs: documentation("## What it does
Reports a line where PyTorch/XLA printed an `Unexpected Execution Analysis`: a graph had to run
while execution was disallowed, inside `torch_xla.compile(..., full_graph=True)`.

## Why is this bad?
torch_xla stops the program (`Unexpected execution happens inside the compiled function,
exiting`): the compiled function reads a tensor's value (or calls something that does) and so
cannot be one graph.

## Example
```python
@torch_xla.compile(full_graph=True)
def step(x):
    if x.sum() > 0:  # TPR102
        x = x * 2
    return x
```

## Use instead
Keep value reads out of the compiled function (`torch.where` instead of a Python `if`), or
compile with `full_graph=False`.

## References
- PyTorch/XLA `debug_util.cpp`, the unexpected execution analysis: https://github.com/pytorch/xla/blob/master/torch_xla/csrc/debug_util.cpp
"),
};

pub static RUNTIME_CPU_FALLBACK: RuntimeCode = RuntimeCode {
    code: "TPR201",
    name: "runtime-cpu-fallback",
    severity: Severity::Warning,
    confirms: &["TPU2", "TPU3"],
    docs: documentation("## What it does
Reports a line where, during a traced run, operations without an XLA lowering ran on the CPU,
and how often. The site comes from PyTorch/XLA's `Unlowered Op usage summary` (printed with
`PT_XLA_DEBUG=1`); operations known only by name (`met.executed_fallback_ops()`,
`pt-xla-profiler: Op(s) not lowered`) are placed on the calls that can produce them, found by
the static index.

## Why is this bad?
A CPU fallback copies its inputs to the host, runs the operation there, and copies the result
back, every step; the graph around it is cut in two. It is the run-time evidence for the
CPU-fallback rules (TPU2xx) and for the dynamic-shape operations (TPU3xx) that fall back.

## Example
```python
idx = torch.nonzero(mask)  # TPR201: `aten::nonzero` ran on the CPU 100 times
```

## Use instead
A lowered formulation with a static shape, e.g. `torch.where(mask, x, 0)` or `mask.sum()`.

## References
- PyTorch/XLA metrics and `executed_fallback_ops()`: https://docs.pytorch.org/xla/master/learn/troubleshoot.html
- https://github.com/pytorch/xla/pull/7116
"),
};

pub static RUNTIME_RECOMPILATION: RuntimeCode = RuntimeCode {
    code: "TPR301",
    name: "runtime-recompilation",
    severity: Severity::Warning,
    confirms: &["TPU1", "TPU3", "TPU6"],
    docs: documentation(
        "## What it does
Reports a line at which PyTorch/XLA compiled three or more distinct graphs (different `Graph
Hash` values in its compilation analyses) during a traced run.

## Why is this bad?
The first step and the steady state legitimately compile one graph each; more distinct graphs
at the same line mean the traced graph changes between steps — usually a shape that changes
(variable batch or sequence length, a `nonzero`, a last partial batch) or a Python value baked
into the graph. Each new graph costs a full XLA compilation, often seconds to minutes.

## Example
```python
for n in lengths:
    x = torch.randn(n, 16, device=dev)
    loss = model(x).sum()
    torch_xla.sync()  # TPR301: 6 distinct graphs compiled at this sync
```

## Use instead
Pad to a few fixed sizes (buckets), use `drop_last=True`, and keep per-step Python values out of
the graph; `torch_xla.compile(..., max_different_graphs=N)` turns a regression into an error.

## References
- PyTorch/XLA, recompilation: https://docs.pytorch.org/xla/master/learn/troubleshoot.html
",
    ),
};

pub static RUNTIME_GRAPH_BREAK: RuntimeCode = RuntimeCode {
    code: "TPR302",
    name: "runtime-graph-break",
    severity: Severity::Warning,
    confirms: &["TPU1", "TPU3", "TPU6"],
    docs: documentation("## What it does
Reports a line where Dynamo (`torch.compile`, with any backend) broke the graph during a traced
run (`TORCH_LOGS=graph_breaks`), with Dynamo's reason.

## Why is this bad?
A graph break splits a compiled function into several graphs with Python in between; on a TPU
each piece is a separate device program and the values crossing the break go through the host.

## Example
```python
@torch.compile(backend=\"tpu\", dynamic=False)
def step(x):
    if x.sum() > 0:  # TPR302: Data-dependent branching
        x = x + 1
    return x
```

## Use instead
`torch.where` or `torch.cond` for data-dependent branches; move logging out of the compiled function.

## References
- torch.compile troubleshooting, graph breaks: https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html
"),
};

pub static RUNTIME_DYNAMO_RECOMPILE: RuntimeCode = RuntimeCode {
    code: "TPR303",
    name: "runtime-dynamo-recompile",
    severity: Severity::Warning,
    confirms: &["TPU3", "TPU6"],
    docs: documentation("## What it does
Reports a function that Dynamo recompiled during a traced run (`TORCH_LOGS=recompiles`), with
the guard that failed (e.g. `tensor 'x' size mismatch at index 0. expected 4, actual 5`).

## Why is this bad?
With `dynamic=False`, as TPU backends want, every new input shape or changed Python value
compiles the function again; past `torch._dynamo.config.cache_size_limit` Dynamo gives up and
runs it eagerly.

## Example
```python
step = torch.compile(step_fn, backend=\"tpu\", dynamic=False)
for batch in batches_of_varying_length:
    step(batch)  # TPR303 on `def step_fn`: size mismatch at index 1
```

## Use instead
Pad inputs to a few fixed shapes; keep changing Python scalars out of the compiled function.

## References
- torch.compile troubleshooting, recompilations: https://docs.pytorch.org/docs/stable/torch.compiler_troubleshooting.html
"),
};

pub static RUNTIME_NEVER_SYNCED: RuntimeCode = RuntimeCode {
    code: "TPR605",
    name: "runtime-never-synced",
    severity: Severity::Warning,
    confirms: &["TPU605"],
    docs: documentation("## What it does
Reports a traced torch_xla run that created XLA tensors but never called `torch_xla.sync()`
(`xm.mark_step()`, or a parallel loader that does it): the `MarkStep` counter stayed at zero.

## Why is this bad?
Without a sync the lazy graph grows with every iteration until something reads a value; the
whole run becomes one ever-larger graph that is recompiled whenever it is finally executed, and
memory grows with the number of steps.

## Example
```python
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()  # TPR605 (confirms TPU605): no torch_xla.sync() in the loop
```

## Use instead
```python
for x, y in loader:
    loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()
    torch_xla.sync()
```

## References
- PyTorch/XLA, lazy tensors and `torch_xla.sync()`: https://docs.pytorch.org/xla/master/learn/pytorch-on-xla-devices.html
"),
};

/// Every runtime code, sorted by code.
pub static RUNTIME_CODES: [&RuntimeCode; 7] = [
    &RUNTIME_HOST_SYNC,
    &RUNTIME_UNEXPECTED_EXECUTION,
    &RUNTIME_CPU_FALLBACK,
    &RUNTIME_RECOMPILATION,
    &RUNTIME_GRAPH_BREAK,
    &RUNTIME_DYNAMO_RECOMPILE,
    &RUNTIME_NEVER_SYNCED,
];

/// A runtime code by code (`TPR101`) or name (`runtime-host-sync`), case-insensitive.
pub fn runtime_code(key: &str) -> Option<&'static RuntimeCode> {
    RUNTIME_CODES
        .iter()
        .copied()
        .find(|code| code.code.eq_ignore_ascii_case(key) || code.name.eq_ignore_ascii_case(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_sorted_unique_and_documented() {
        for pair in RUNTIME_CODES.windows(2) {
            assert!(pair[0].code < pair[1].code);
        }
        for code in RUNTIME_CODES {
            for section in [
                "## What it does",
                "## Why is this bad?",
                "## Example",
                "## Use instead",
                "## References",
            ] {
                assert!(code.docs.contains(section), "{} lacks {section}", code.code);
            }
            assert!(!code.summary().is_empty());
            assert_eq!(runtime_code(code.name).map(|c| c.code), Some(code.code));
        }
    }

    #[test]
    fn every_code_has_its_anchor_in_docs_trace_md() {
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/trace.md");
        let text = std::fs::read_to_string(&docs).unwrap();
        for code in RUNTIME_CODES {
            let anchor = code
                .url()
                .rsplit('#')
                .next()
                .unwrap_or_default()
                .to_string();
            assert!(
                text.contains(&format!(
                    "<a id=\"{anchor}\"></a>\n### {} `{}`",
                    code.code, code.name
                )),
                "docs/trace.md lacks the section of {}",
                code.code
            );
        }
    }
}
