//! Code roles: which code is test code (pytest and unittest conventions, test paths) and which is
//! host data-pipeline code (datasets, transforms, image processors, `preprocess`/`postprocess`
//! steps), decided once
//! per function or class as the traversal enters it. By default only errors are reported in test
//! code ([`crate::settings::TestCodePolicy`]): a slow op in a test costs nothing in training, while
//! an error makes the test fail on a TPU. In host data-pipeline code nothing about device tensors'
//! values is reported; in once-per-load code (state-dict filters and their helpers, see
//! `summaries`) nothing about an op's per-execution cost; in error branches only errors.
//!
//! A function named `test…` counts only in a file that uses a test framework (or lives on a test
//! path): `def test(model, loader):` in a training script is its evaluation loop, not a test.

use crate::kind;
use tree_sitter::Node;

/// The roles of the code at a point, beyond test code: what the checker's policy reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CodeRoles {
    /// On the way to an exception (`if bad: raise …`): only errors are reported.
    pub error_branch: bool,
    /// Once per checkpoint load (state-dict filters and the helpers only they call): nothing
    /// about an op's per-execution cost is reported.
    pub load_time: bool,
    /// The straight-line body of a function that runs a fixed few times per run (called only
    /// from module-level code outside loops, see `summaries`): nothing about an op's
    /// per-execution cost is reported below error severity.
    pub once_per_run: bool,
    /// Host data-pipeline code (datasets, transforms, image processors): nothing about device
    /// tensors' values is reported.
    pub host_data: bool,
}

use crate::semantic::ModuleImports;
use crate::syntax::{self, NodeExt, Visit, node_text};

/// Whether the file uses a test framework: imports `pytest`, `unittest`, `absl.testing`,
/// `parameterized` or torch's internal test utilities, or defines at module level at least two
/// `test_*` functions or `Test*` classes (pytest collects those without an import; a training
/// script's single `def test_epoch(...)` is not enough).
/// `statements`: the root's named children (a slice: one instance of this function for its
/// callers).
pub(crate) fn uses_test_framework(
    imports: &ModuleImports,
    root: Node<'_>,
    statements: &[Node<'_>],
    source: &str,
) -> bool {
    let imported = [
        "pytest",
        "unittest",
        "absl.testing",
        "parameterized",
        "torch.testing._internal",
    ]
    .iter()
    .any(|package| imports.imports_package(package));
    if imported {
        return true;
    }
    let mut tests = 0;
    let mut test_functions: Vec<&str> = Vec::new();
    for &statement in statements {
        let Some(definition) = syntax::undecorated(statement) else {
            continue;
        };
        let name = definition
            .field("name")
            .map(|n| node_text(n, source))
            .unwrap_or("");
        match definition.kind_key() {
            kind::CLASS_DEFINITION if name.starts_with("Test") => tests += 1,
            kind::FUNCTION_DEFINITION if name.starts_with("test_") => {
                tests += 1;
                test_functions.push(name);
            }
            _ => {}
        }
    }
    tests >= 2 && !runs_own_tests(root, source, &test_functions)
}

/// Whether code of the file outside its `test_*` functions names one of them: calls it
/// (`test_store()` in a `__main__` block or a `main()`), passes it (`timeit.timeit(test_store)`,
/// `for f in (test_a, test_b): f()`) or times it in a string (`timeit("test_store()", …)`). A
/// benchmark or a reproducer runs its `test_*` functions itself; a test framework collects them,
/// and a test file that relies on one never names its tests.
fn runs_own_tests(root: Node<'_>, source: &str, test_functions: &[&str]) -> bool {
    if test_functions.is_empty() {
        return false;
    }
    // Every node the walk reports holds a test function's name in its text: look only where the
    // names occur (this runs at every check, the editor's keystrokes included, and the walk visits
    // the whole tree). Overlapping occurrences count, so none a node could hold is missed; many
    // occurrences (a name that is a common word of the file) are cheaper walked.
    const MOST_OCCURRENCES_LOOKED_UP: usize = 64;
    let occurrences = occurrences_of(source, test_functions);
    // Each definition of a test function holds one occurrence (its name): with no other, no
    // node names one.
    if occurrences.len() <= test_functions.len() {
        return false;
    }
    if occurrences.len() > MOST_OCCURRENCES_LOOKED_UP {
        return walk_for_own_tests(root, source, test_functions);
    }
    occurrences.iter().any(|&(start, end)| {
        let Some(smallest) = root.descendant_for_byte_range(start, end) else {
            return false;
        };
        // The nodes holding this occurrence, innermost first, up to the root: one the walk
        // reports is an identifier or a string's content, and the walk reaches it when it and
        // every node above it are named and none above it is a test function's definition.
        let mut holders = vec![smallest];
        let mut node = smallest;
        while let Some(parent) = node.parent() {
            holders.push(parent);
            node = parent;
        }
        holders.iter().enumerate().any(|(depth, &holder)| {
            reported_by_walk(holder, source, test_functions)
                && holders[depth..].iter().all(Node::is_named)
                && !holders[depth + 1..]
                    .iter()
                    .any(|&above| is_test_definition(above, source, test_functions))
        })
    })
}

/// Every occurrence of each of `names` in `source`, overlapping ones included, as byte ranges.
/// One search for the names' common prefix (`test_` for test functions: seven names cost one
/// pass over the text, not seven), each name then compared where the prefix occurs; a search per
/// name when they share no prefix.
fn occurrences_of(source: &str, names: &[&str]) -> Vec<(usize, usize)> {
    let mut occurrences = Vec::new();
    let Some(first) = names.first() else {
        return occurrences;
    };
    let mut common = names.iter().fold(first.len(), |common, name| {
        common.min(
            first
                .bytes()
                .zip(name.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        )
    });
    while !first.is_char_boundary(common) {
        common -= 1;
    }
    if common == 0 {
        for name in names {
            let mut from = 0;
            while let Some(at) = source.get(from..).and_then(|rest| rest.find(name)) {
                occurrences.push((from + at, from + at + name.len()));
                from += at + 1;
            }
        }
        return occurrences;
    }
    let prefix = &first[..common];
    // The next occurrence may overlap this one; it starts at the next character boundary.
    let step = prefix.chars().next().map_or(1, char::len_utf8);
    let mut from = 0;
    while let Some(at) = source[from..].find(prefix) {
        let at = from + at;
        let rest = &source[at..];
        for name in names {
            if rest.starts_with(name) {
                occurrences.push((at, at + name.len()));
            }
        }
        from = at + step;
    }
    occurrences
}

/// Whether `node` defines one of `test_functions` (decorated or not).
fn is_test_definition(node: Node<'_>, source: &str, test_functions: &[&str]) -> bool {
    let definition = match node.kind_key() {
        kind::DECORATED_DEFINITION => node.field("definition"),
        kind::FUNCTION_DEFINITION => Some(node),
        _ => None,
    };
    definition
        .and_then(|d| d.field("name"))
        .is_some_and(|name| test_functions.contains(&node_text(name, source)))
}

/// Whether `node` names one of `test_functions`: an identifier that is one, or a string's content
/// that calls one (`"test_store()"`).
fn reported_by_walk(node: Node<'_>, source: &str, test_functions: &[&str]) -> bool {
    match node.kind_key() {
        kind::IDENTIFIER => test_functions.contains(&node_text(node, source)),
        kind::STRING_CONTENT => {
            let text = node_text(node, source);
            test_functions.iter().any(|name| {
                text.match_indices(name).any(|(at, _)| {
                    let before = text[..at].chars().next_back();
                    let after = text[at + name.len()..].trim_start().chars().next();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
                        && after == Some('(')
                })
            })
        }
        _ => false,
    }
}

/// [`runs_own_tests`] by walking the whole tree (named nodes, not into the test functions'
/// definitions).
fn walk_for_own_tests(root: Node<'_>, source: &str, test_functions: &[&str]) -> bool {
    syntax::any_in_subtree(root, usize::MAX, |node| {
        if reported_by_walk(node, source, test_functions) {
            Visit::Found
        } else if is_test_definition(node, source, test_functions) {
            Visit::Skip
        } else {
            Visit::Enter
        }
    })
}

/// Whether the file is a library module: it defines functions or classes and, at module level,
/// only imports, defines and assigns. A module that runs something when executed is a workload
/// (a script, a notebook, a bug report's reproducer): an `if __name__ == "__main__":` block, a
/// module-level loop or `with`, or module-level code that calls a function or class the file
/// defines (`main()`, `model = Net()`, `out = step(x)`) or prints. In a library module nothing
/// in the file says how often a function runs unless a hot path of the file reaches it; the
/// checker's policy ([`crate::settings::LibraryCodePolicy`]) reads this.
pub(crate) fn is_library_module(root: Node<'_>, source: &str) -> bool {
    // One walk over module-level code (an explicit stack: nesting depth is the input's to
    // choose), collecting the names defined and the statements that might call them.
    let mut defined: Vec<&str> = Vec::new();
    let mut module_code: Vec<Node<'_>> = Vec::new();
    let mut blocks = vec![root];
    while let Some(block) = blocks.pop() {
        for statement in block.named_nodes() {
            match statement.kind_key() {
                kind::DECORATED_DEFINITION | kind::FUNCTION_DEFINITION | kind::CLASS_DEFINITION => {
                    let definition = statement.field("definition").unwrap_or(statement);
                    if let Some(name) = definition.field("name") {
                        defined.push(node_text(name, source));
                    }
                }
                kind::COMMENT
                | kind::IMPORT_STATEMENT
                | kind::IMPORT_FROM_STATEMENT
                | kind::FUTURE_IMPORT_STATEMENT => {}
                // `for func in [xavier_normal_, init_phases]: resolver.register(func)` registers
                // what the module defines: import-time set-up, not a workload (its body is
                // still module code, so a call of a defined function there makes a script).
                kind::FOR_STATEMENT if iterates_literal_names(statement) => {
                    module_code.push(statement);
                }
                kind::FOR_STATEMENT | kind::WHILE_STATEMENT | kind::WITH_STATEMENT => return false,
                _ => {
                    let kind = statement.kind_name();
                    let compound = matches!(
                        kind,
                        "if_statement"
                            | "try_statement"
                            | "block"
                            | "else_clause"
                            | "elif_clause"
                            | "except_clause"
                            | "finally_clause"
                    );
                    // The condition is a child like the blocks; it is module code below.
                    if kind == "if_statement" {
                        let condition = statement.field("condition");
                        let text = condition.map(|c| node_text(c, source)).unwrap_or("");
                        if text.contains("__name__") && text.contains("__main__") {
                            return false;
                        }
                    }
                    if compound {
                        blocks.push(statement);
                    } else {
                        module_code.push(statement);
                    }
                }
            }
        }
    }
    !defined.is_empty()
        && !module_code
            .iter()
            .any(|code| calls_defined(*code, source, &defined))
}

/// Whether a `for` loop iterates a literal list, tuple or set of names
/// (`for func in [a, b.c]:`): a loop over definitions, not over data.
fn iterates_literal_names(for_statement: Node<'_>) -> bool {
    for_statement.field("right").is_some_and(|right| {
        right.is_any(&[kind::LIST, kind::TUPLE, kind::SET])
            && right.named_child_count() > 0
            && right
                .named_nodes()
                .filter(|n| n.is_not(kind::COMMENT))
                .all(|n| n.is_any(&[kind::IDENTIFIER, kind::ATTRIBUTE]))
    })
}

/// Whether `node` (module-level code) calls `print` or a function or class the file defines.
fn calls_defined(node: Node<'_>, source: &str, defined: &[&str]) -> bool {
    syntax::any_in_subtree(node, usize::MAX, |node| match node.kind_key() {
        // A lambda's body runs only when called.
        kind::LAMBDA => Visit::Skip,
        kind::CALL
            if node
                .field("function")
                .map(|f| node_text(f, source))
                .is_some_and(|name| name == "print" || defined.contains(&name)) =>
        {
            Visit::Found
        }
        _ => Visit::Enter,
    })
}

/// Whether a class is a test class: a `…TestCase` subclass anywhere, or a `Test…` class in a file
/// that uses a test framework.
pub(crate) fn is_test_class(class: Node<'_>, framework: bool, source: &str) -> bool {
    let name = class
        .field("name")
        .map(|n| node_text(n, source))
        .unwrap_or("");
    if framework && name.starts_with("Test") {
        return true;
    }
    has_base_named(class, source, |last| {
        last.ends_with("TestCase") || last.ends_with("TestBase")
    })
}

/// Whether one of `class`'s bases, by the last part of its dotted name, satisfies `name` (a
/// function pointer: one instance of this function for its callers).
fn has_base_named(class: Node<'_>, source: &str, name: fn(&str) -> bool) -> bool {
    let Some(superclasses) = class.field("superclasses") else {
        return false;
    };
    superclasses.named_nodes().any(|base| {
        syntax::dotted_parts(base, source)
            .and_then(|parts| parts.last().copied())
            .is_some_and(name)
    })
}

/// Whether a function is a test (or a fixture) by its own name and decorators, in a file that
/// uses a test framework: `test_*` / `test*` functions and methods, `@pytest.fixture`.
pub(crate) fn is_test_function(
    function: Node<'_>,
    decorated: Option<Node<'_>>,
    framework: bool,
    source: &str,
) -> bool {
    if !framework {
        return false;
    }
    let name = function
        .field("name")
        .map(|n| node_text(n, source))
        .unwrap_or("");
    if name.starts_with("test") {
        return true;
    }
    let Some(decorated) = decorated else {
        return false;
    };
    crate::semantic::summaries::decorator_targets(decorated)
        .into_iter()
        .any(|target| {
            syntax::dotted_parts(target, source)
                .and_then(|parts| parts.last().copied())
                .is_some_and(|last| last == "fixture")
        })
}

/// Whether a class is a dataset (`class Shapes(Dataset)`, `torch.utils.data.IterableDataset`):
/// its methods build samples on the host, in DataLoader workers.
pub(crate) fn is_dataset_class(class: Node<'_>, source: &str) -> bool {
    has_base_named(class, source, |last| {
        matches!(last, "Dataset" | "IterableDataset")
    })
}

/// Whether a function is a processing step around the model, by the convention of inference
/// pipelines (Hugging Face `Pipeline.preprocess` / `postprocess`, image processors'
/// `post_process_*`), or a visualisation utility (`draw_segmentation_masks`, `plot_boxes`,
/// `visualize_attention`): it runs on the host, once per call, before or after the model. A
/// collate function (`collate_fn`, `collate_inputs_to_batch`, `pad_collate`) too: it batches
/// the samples a DataLoader worker built, on the host, before anything is placed.
pub(crate) fn is_processing_function(function: Node<'_>, source: &str) -> bool {
    let name = function
        .field("name")
        .map(|n| node_text(n, source))
        .unwrap_or("");
    let name = name.trim_start_matches('_');
    if name.to_ascii_lowercase().contains("collate") {
        return true;
    }
    [
        "preprocess",
        "postprocess",
        "pre_process",
        "post_process",
        "draw_",
        "plot_",
        "visualize",
        "visualise",
    ]
    .iter()
    .any(|prefix| name.starts_with(prefix))
}

/// Whether rule `code` is about device tensors' values: host syncs (TPU1xx), CPU fallbacks
/// (TPU2xx), data-dependent shapes (TPU301–305, TPU309) and where loaded tensors land (TPU406). On
/// host tensors (data pipelines) none applies; padding and loader rules (TPU306–308) still do,
/// since their shapes reach the device.
pub(crate) fn concerns_device_values(code: &str) -> bool {
    // TPU406: a data pipeline loads the host tensors it wrote (processed datasets, vocabularies).
    if code == "TPU406" {
        return true;
    }
    let Some(number) = code.strip_prefix("TPU").and_then(|n| n.parse::<u32>().ok()) else {
        return false;
    };
    matches!(number, 100..=299 | 301..=305 | 309)
}

/// Whether rule `code` is about what running an op costs each time it runs: the device-value
/// rules above, and creating a tensor on the host to copy it (TPU407). Once per checkpoint load
/// that cost is paid once; a dtype or API choice made there (TPU5xx, TPU6xx) still matters.
pub(crate) fn concerns_execution_cost(code: &str) -> bool {
    concerns_device_values(code) || code == "TPU407"
}

/// Whether a file's text reads as torch code: it names one of the conventional torch aliases a
/// fragment is read with (`torch`, `F`, `xm`, …: `torch_api::FRAGMENT_ALIASES` but `np` and
/// `math`) or calls a method only torch has (`.item()`, `.cpu()`, `.backward()`:
/// `torch_api::EXCERPT_EVIDENCE_METHODS`). Asked of fragments only (files without imports),
/// which are few: an exception module or a table of constants without imports is no excerpt of
/// TPU code.
pub(crate) fn reads_like_torch_code(source: &str) -> bool {
    let mut words = source.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'));
    words.any(|chunk| {
        let mut parts = chunk.split('.');
        let first = parts.next().unwrap_or("");
        let aliased = !matches!(first, "np" | "math")
            && crate::torch_api::FRAGMENT_ALIASES
                .iter()
                .any(|(local, _)| *local == first);
        aliased || parts.any(|part| crate::torch_api::EXCERPT_EVIDENCE_METHODS.contains(&part))
    })
}

#[cfg(test)]
mod tests {
    use super::is_library_module;

    fn test_framework(source: &str) -> bool {
        let tree = crate::syntax::parse(source, None).expect("parses");
        let imports = crate::semantic::ModuleImports::build(tree.root_node(), source);
        let root = tree.root_node();
        super::uses_test_framework(&imports, root, &crate::syntax::named_children(root), source)
    }

    #[test]
    fn two_module_level_tests_make_a_test_file() {
        let source = "import torch\n\ndef test_a():\n    assert torch.ones(1)\n\ndef test_b():\n    assert True\n";
        assert!(test_framework(source));
        // A test class counts like a test function.
        assert!(test_framework(
            "def test_a():\n    pass\n\nclass TestB:\n    pass\n"
        ));
        // One is a training script's evaluation function.
        assert!(!test_framework(
            "def test_epoch(model):\n    pass\n\ndef train():\n    pass\n"
        ));
        // With a framework import, naming the tests does not matter.
        assert!(test_framework(
            "import pytest\n\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n\nif __name__ == '__main__':\n    test_a()\n"
        ));
    }

    #[test]
    fn a_file_that_runs_its_own_tests_is_a_benchmark() {
        let runs = [
            // Called from a `__main__` block.
            "def test_a():\n    pass\n\ndef test_b():\n    pass\n\nif __name__ == '__main__':\n    test_a()\n    test_b()\n",
            // Timed by name in a string.
            "import timeit\n\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n\nprint(timeit.timeit('test_a()', globals=globals(), number=10))\n",
            // Passed to a timer from a `main()`.
            "import timeit\n\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n\ndef main():\n    for f in (test_a, test_b):\n        timeit.timeit(f, number=3)\n",
        ];
        for source in runs {
            assert!(!test_framework(source), "{source}");
        }
        // A test calling a test, or a string naming a test without calling it, is not a run.
        let still_tests = [
            "def test_a():\n    test_b()\n\ndef test_b():\n    pass\n",
            "def test_a():\n    pass\n\ndef test_b():\n    pass\n\nNOTE = 'see test_a for the fixture'\n",
            "def test_a():\n    pass\n\ndef test_b():\n    pass\n\nCMD = 'x.test_a()'\n",
        ];
        for source in still_tests {
            assert!(test_framework(source), "{source}");
        }
    }

    /// `runs_own_tests` looks only where the test functions' names occur; its answer is the
    /// whole-tree walk's, on the repository's Python files (fixtures, examples) with their
    /// `test_*` functions and on edge cases: a name inside a longer name, in a comment, an
    /// attribute, a nested test definition, overlapping occurrences, an error tree, a
    /// decorator, an f-string.
    #[test]
    fn looking_up_occurrences_answers_as_the_walk() {
        use crate::syntax::{NodeExt, node_text};
        let mut sources: Vec<String> = [
            "def test_a():\n    pass\n\ndef test_ab():\n    test_ab.x = 1\n",
            "def test_a():\n    pass\n\ndef test_b():\n    pass\n\n# test_a() runs below\nx = obj.test_a\n",
            "def test_a():\n    def test_b():\n        test_a()\n    pass\n\ndef test_b():\n    pass\n",
            "def test_xtest_x():\n    pass\n\ndef test_x():\n    pass\n\ns = 'test_xtest_xtest_x()'\n",
            "def test_a():\n    pass\n\ndef test_b():\n    pass\n\nrun(test_a, (\n",
            "@mark(test_b)\ndef test_a():\n    pass\n\ndef test_b():\n    pass\n",
            "def test_a():\n    pass\n\ndef test_b():\n    pass\n\nprint(f'{test_a()}')\nprint(f'test_b() {x}')\n",
            "def test_a():\n    pass\n\ndef test_b():\n    pass\n\nclass K:\n    def test_a(self):\n        return test_b\n",
        ]
        .iter()
        .map(|source| source.to_string())
        .collect();
        let mut many = String::from("def test_a():\n    pass\n\ndef test_b():\n    pass\n\n");
        for _ in 0..70 {
            many.push_str("x = 'test_a is a fixture'\n");
        }
        many.push_str("test_b()\n");
        sources.push(many);
        sources.extend(
            crate::python_files_under(&["tests/fixtures", "examples"])
                .into_iter()
                .map(|(_, text)| text),
        );
        assert!(sources.len() > 100, "{} sources", sources.len());
        let mut compared = 0;
        for source in &sources {
            let tree = crate::syntax::parse(source, None).expect("parses");
            let root = tree.root_node();
            let mut names: Vec<&str> = Vec::new();
            for statement in root.named_nodes() {
                if let Some(definition) = crate::syntax::undecorated(statement)
                    && definition.is(crate::kind::FUNCTION_DEFINITION)
                    && let Some(name) = definition.field("name")
                {
                    names.push(node_text(name, source));
                }
            }
            // Every module-level function as a test function, and the `test_*` ones alone.
            let tests: Vec<&str> = names
                .iter()
                .copied()
                .filter(|name| name.starts_with("test_"))
                .collect();
            for functions in [&names, &tests] {
                assert_eq!(
                    super::runs_own_tests(root, source, functions),
                    super::walk_for_own_tests(root, source, functions),
                    "{functions:?} in\n{source}"
                );
                compared += 1;
            }
        }
        assert!(compared > 200);
    }

    /// One search for the names' common prefix finds what a search per name finds: every
    /// occurrence, overlapping ones and names inside names included.
    #[test]
    fn occurrences_by_common_prefix_are_the_occurrences_by_name() {
        let by_name = |source: &str, names: &[&str]| {
            let mut found = Vec::new();
            for name in names {
                for at in (0..source.len()).filter(|&at| source.is_char_boundary(at)) {
                    if source[at..].starts_with(name) {
                        found.push((at, at + name.len()));
                    }
                }
            }
            found.sort_unstable();
            found
        };
        let cases: &[(&str, &[&str])] = &[
            ("test_a test_ab test_abc xtest_a", &["test_a", "test_ab"]),
            ("test_xtest_xtest_x()", &["test_xtest_x", "test_x"]),
            ("aaaab aab aa", &["aab", "aa", "aaab"]),
            ("test_a test_a", &["test_a", "test_a"]),
            ("é_a é_b ééé_a", &["é_a", "é_b"]),
            ("test_ä test_äb", &["test_ä", "test_äb"]),
            ("no tests here", &["test_a", "test_b"]),
        ];
        for &(source, names) in cases {
            let mut found = super::occurrences_of(source, names);
            found.sort_unstable();
            assert_eq!(found, by_name(source, names), "{names:?} in {source:?}");
        }
    }

    fn library(source: &str) -> bool {
        let tree = crate::syntax::parse(source, None).expect("parses");
        is_library_module(tree.root_node(), source)
    }

    #[test]
    fn a_module_that_only_imports_defines_and_assigns_is_a_library() {
        let source = r#""""Losses."""
import torch
try:
    import apex
except ImportError:
    apex = None
if torch.cuda.is_available():
    def fused(x):
        return x
EPS = torch.finfo(torch.float32).eps
logger = logging.getLogger(__name__)
__all__ = ["dice"]

@torch.jit.script
def dice(a, b):
    return a

class Dice(torch.nn.Module):
    scale = dice(1, 2)
"#;
        assert!(library(source));
    }

    #[test]
    fn a_module_that_runs_something_is_a_workload() {
        let runs = [
            "def main():\n    pass\n\nif __name__ == \"__main__\":\n    main()\n",
            "def f(x):\n    return x\n\nfor x in range(3):\n    pass\n",
            "def f(x):\n    return x\n\nwith open('a') as h:\n    pass\n",
            "def f(x):\n    return x\n\ny = f(3)\n",
            "class Net:\n    pass\n\nmodel = Net()\n",
            "def f(x):\n    return x\n\nprint(f)\n",
            "def f(x):\n    return x\n\nif flag:\n    out = [f(1)]\n",
            "def f(x):\n    return x\n\ntry:\n    f(1)\nexcept ValueError:\n    pass\n",
        ];
        for source in runs {
            assert!(!library(source), "{source}");
        }
    }

    #[test]
    fn a_loop_registering_definitions_keeps_a_library() {
        let registers =
            "def f(x):\n    return x\n\nfor func in [f, g.h]:\n    registry.register(func)\n";
        assert!(library(registers));
        // A loop over data, or one that calls what the module defines, is a workload.
        let runs = [
            "def f(x):\n    return x\n\nfor func in [f]:\n    func(1)\n    f(2)\n",
            "def f(x):\n    return x\n\nfor x in [torch.zeros(3)]:\n    pass\n",
            "def f(x):\n    return x\n\nfor name in [\"a\", \"b\"]:\n    pass\n",
            "def f(x):\n    return x\n\nfor x in []:\n    pass\n",
        ];
        for source in runs {
            assert!(!library(source), "{source}");
        }
    }

    #[test]
    fn a_module_without_definitions_or_with_deferred_calls_only() {
        // Nothing defined: a script or a configuration, not a library.
        assert!(!library("import torch\nx = torch.zeros(3)\n"));
        // A lambda's body runs only when it is called.
        assert!(library("def f(x):\n    return x\n\ng = lambda y: f(y)\n"));
        // Broken input is classified without panicking (whatever the recovered tree says).
        let _ = library("def f(:\n    pass\nf(\n");
    }

    #[test]
    fn excerpts_read_as_torch_code() {
        for excerpt in [
            "latents.cpu().numpy()\n",
            "if running_loss is None:\n    running_loss = loss.item()\n",
            "def f(x):\n    return F.relu(x)\n",
            "xm.mark_step()\n",
        ] {
            assert!(super::reads_like_torch_code(excerpt), "{excerpt}");
        }
        for plain in [
            "class E(Exception):\n    def __str__(self):\n        return f\"{self.message}\"\n",
            "WIDTH = 3\nNAMES = ['a', 'b']\n",
            "def area(w, h):\n    return math.sqrt(w * h) + np.pi\n",
            "",
        ] {
            assert!(!super::reads_like_torch_code(plain), "{plain}");
        }
    }
}
