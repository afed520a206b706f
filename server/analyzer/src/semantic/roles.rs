//! Code roles: which code is test code (pytest and unittest conventions, test paths), decided once
//! per function or class as the traversal enters it. By default only errors are reported there
//! ([`crate::settings::TestCodePolicy`]): a slow op in a test costs nothing in training, while an
//! error makes the test fail on a TPU.
//!
//! A function named `test…` counts only in a file that uses a test framework (or lives on a test
//! path): `def test(model, loader):` in a training script is its evaluation loop, not a test.

use tree_sitter::Node;

use crate::semantic::ModuleImports;
use crate::syntax::{self, NodeExt, node_text};

/// Whether the file uses a test framework: imports `pytest`, `unittest`, `absl.testing`,
/// `parameterized` or torch's internal test utilities, or defines at module level at least two
/// `test_*` functions or `Test*` classes (pytest collects those without an import; a training
/// script's single `def test_epoch(...)` is not enough).
pub(crate) fn uses_test_framework(imports: &ModuleImports, root: Node<'_>, source: &str) -> bool {
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
    let mut cursor = root.walk();
    let tests = root
        .named_children(&mut cursor)
        .filter_map(|statement| match statement.kind_name() {
            "decorated_definition" => statement.field("definition"),
            "function_definition" | "class_definition" => Some(statement),
            _ => None,
        })
        .filter(|definition| {
            let name = definition
                .field("name")
                .map(|n| node_text(n, source))
                .unwrap_or("");
            match definition.kind_name() {
                "class_definition" => name.starts_with("Test"),
                _ => name.starts_with("test_"),
            }
        })
        .count();
    tests >= 2
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
    let Some(superclasses) = class.field("superclasses") else {
        return false;
    };
    let mut cursor = superclasses.walk();
    superclasses.named_children(&mut cursor).any(|base| {
        syntax::dotted_parts(base, source)
            .and_then(|parts| parts.last().copied())
            .is_some_and(|last| last.ends_with("TestCase") || last.ends_with("TestBase"))
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
    let mut cursor = decorated.walk();
    decorated
        .named_children(&mut cursor)
        .filter(|c| c.kind_name() == "decorator")
        .filter_map(|d| d.named_child(0))
        .any(|expression| {
            let target = match expression.kind_name() {
                "call" => expression.field("function"),
                _ => Some(expression),
            };
            target
                .and_then(|t| syntax::dotted_parts(t, source))
                .and_then(|parts| parts.last().copied())
                .is_some_and(|last| last == "fixture")
        })
}
