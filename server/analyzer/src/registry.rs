//! The rule registry: rule metadata, code families, and the `declare_rule!` macro each rule file uses.
//!
//! A rule is one `static RuleMeta` declared with [`declare_rule!`]; its doc comment *is* its
//! documentation (shown by `tpulint rule`, on hover, and in `docs/rules/`). Each family module lists
//! its rules in one `RULES` slice — one line per rule — and [`rules`] gathers them sorted by code.

use std::sync::LazyLock;

use tree_sitter::Node;

use crate::checker::Context;
use crate::diagnostic::Severity;

/// Whether a rule offers fixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixAvailability {
    None,
    Sometimes,
    Always,
}

impl FixAvailability {
    pub fn as_str(self) -> &'static str {
        match self {
            FixAvailability::None => "none",
            FixAvailability::Sometimes => "sometimes",
            FixAvailability::Always => "always",
        }
    }
}

/// Rule families, by the hundreds digit of the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    HostSync,
    CpuFallback,
    DynamicShape,
    DevicePlacement,
    Precision,
    BackendIdiom,
    Distributed,
    Layout,
    Meta,
}

impl Family {
    pub const ALL: [Family; 9] = [
        Family::HostSync,
        Family::CpuFallback,
        Family::DynamicShape,
        Family::DevicePlacement,
        Family::Precision,
        Family::BackendIdiom,
        Family::Distributed,
        Family::Layout,
        Family::Meta,
    ];

    /// The family a `TPUnxx` code belongs to.
    pub fn from_code(code: &str) -> Option<Family> {
        let digit = code.strip_prefix("TPU")?.chars().next()?;
        Some(match digit {
            '1' => Family::HostSync,
            '2' => Family::CpuFallback,
            '3' => Family::DynamicShape,
            '4' => Family::DevicePlacement,
            '5' => Family::Precision,
            '6' => Family::BackendIdiom,
            '7' => Family::Distributed,
            '8' => Family::Layout,
            '9' => Family::Meta,
            _ => return None,
        })
    }

    /// Code prefix shared by the family, e.g. `TPU1`.
    pub fn prefix(self) -> &'static str {
        match self {
            Family::HostSync => "TPU1",
            Family::CpuFallback => "TPU2",
            Family::DynamicShape => "TPU3",
            Family::DevicePlacement => "TPU4",
            Family::Precision => "TPU5",
            Family::BackendIdiom => "TPU6",
            Family::Distributed => "TPU7",
            Family::Layout => "TPU8",
            Family::Meta => "TPU9",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::HostSync => "host-sync",
            Family::CpuFallback => "cpu-fallback",
            Family::DynamicShape => "dynamic-shape",
            Family::DevicePlacement => "device-placement",
            Family::Precision => "precision",
            Family::BackendIdiom => "backend-idiom",
            Family::Distributed => "distributed",
            Family::Layout => "layout",
            Family::Meta => "meta",
        }
    }
}

/// The signature of a rule's check function: called once for every node of a kind it registered for.
pub type CheckFn = for<'tree> fn(&mut Context<'tree, '_>, Node<'tree>);

/// Everything tpulint knows about one rule.
#[derive(Debug)]
pub struct RuleMeta {
    /// `TPU` + three digits; the hundreds digit is the family.
    pub code: &'static str,
    /// Kebab-case; reads as "allow <name>".
    pub name: &'static str,
    /// Severity on a hot path (rules may lower it on cold paths).
    pub severity: Severity,
    pub fix: FixAvailability,
    /// tree-sitter-python node kinds the check function wants to see.
    pub kinds: &'static [&'static str],
    /// Words without which the rule cannot report (the token prefilter, `prefilter.rs`): the rule
    /// runs on a file only when one of them occurs there as a whole word (a maximal run of ASCII
    /// letters, digits and `_`, compared ignoring ASCII case). Empty: the rule always runs.
    /// `tests/prefilter.rs` checks on every fixture and realistic file that each is necessary.
    pub tokens: &'static [&'static str],
    /// The callees the rule is about, for its `call` nodes (other kinds are dispatched as
    /// before). The checker names each `call` once: the final segment of the written callee
    /// (`item` in `x.item()`, `f` in `f()`, `pad` in `F.pad()`) and, when the callee is a bare
    /// name an import bound, the final segment of what it imports (`nonzero` for `nz(x)` after
    /// `from torch import nonzero as nz`). Those are the final segments of every name
    /// `Context::callee_name`, `Context::method_call` and `Context::qualified_name` can give for
    /// the callee. The rule runs on a call only when one of its names equals the final segment
    /// (after the last `.`) of an entry here, compared exactly, so an entry may be written
    /// qualified (`torch.nonzero`) for the reader. A call whose callee is neither a name nor an
    /// attribute (`f()()`, `fs[0]()`, `(f)()`) has no name. Empty: the rule sees every call.
    /// `tests/prefilter.rs` checks on every fixture and realistic file that the filter changes no
    /// result.
    pub calls: &'static [&'static str],
    /// Markdown: What it does / Why is this bad? / Example / Use instead / Fix safety / References.
    pub docs: &'static str,
    pub check: CheckFn,
    /// Off unless selected explicitly (for conservative or opinionated rules).
    pub enabled_by_default: bool,
}

impl RuleMeta {
    pub fn family(&self) -> Family {
        Family::from_code(self.code).unwrap_or(Family::Meta)
    }

    /// The docs with the one leading space of each `///` line removed.
    pub fn docs_markdown(&self) -> String {
        let mut out = String::with_capacity(self.docs.len());
        for line in self.docs.lines() {
            out.push_str(line.strip_prefix(' ').unwrap_or(line));
            out.push('\n');
        }
        out
    }

    /// The first sentence under "What it does", for tables and summaries.
    pub fn summary(&self) -> String {
        docs_summary(&self.docs_markdown())
    }

    /// Where the rule's documentation page lives.
    pub fn url(&self) -> String {
        format!("{DOCS_BASE_URL}{}.md", self.code)
    }
}

/// The first paragraph under "## What it does" of a documentation text, as one line (rules and
/// runtime codes share the documentation layout).
pub fn docs_summary(docs: &str) -> String {
    let body = docs
        .split("## What it does")
        .nth(1)
        .unwrap_or(docs)
        .split("##")
        .next()
        .unwrap_or("");
    let paragraph: Vec<&str> = body
        .lines()
        .map(str::trim)
        .skip_while(|line| line.is_empty())
        .take_while(|line| !line.is_empty())
        .collect();
    crate::syntax::join(&paragraph, " ")
}

/// Whether this build carries the rules' and runtime codes' documentation (the `docs` feature,
/// on by default). The WebAssembly build leaves it out to stay within its size budget and ships
/// the documentation beside the module as `rule-docs.json` (see `server/wasm/build.sh`).
pub const HAS_DOCS: bool = cfg!(feature = "docs");

/// `text` when the build carries documentation ([`HAS_DOCS`]), else empty: an unused literal is
/// not emitted into the binary.
pub const fn documentation(text: &'static str) -> &'static str {
    if HAS_DOCS { text } else { "" }
}

/// Base address of the generated rule pages (`docs/rules/` in the repository).
pub const DOCS_BASE_URL: &str = "https://github.com/tpulint/tpulint/blob/main/docs/rules/";

/// The entries of `tables` one after another, for a rule whose callees ([`RuleMeta::calls`])
/// are the union of several tables:
/// `const CALLEES: [&str; A.len() + B.len()] = joined(&[A, B]);`. A wrong `N` fails to compile.
pub const fn joined<const N: usize>(tables: &[&[&'static str]]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut at = 0;
    let mut table = 0;
    while table < tables.len() {
        let mut entry = 0;
        while entry < tables[table].len() {
            out[at] = tables[table][entry];
            at += 1;
            entry += 1;
        }
        table += 1;
    }
    assert!(at == N, "joined: N is not the sum of the tables' lengths");
    out
}

/// Declares a rule: its doc comment becomes [`RuleMeta::docs`]. `calls:` ([`RuleMeta::calls`])
/// is a list of string literals or the name of a `&[&str]` constant (or a `[&str; N]` one, e.g.
/// built by [`joined`]).
///
/// ```ignore
/// declare_rule! {
///     /// ## What it does
///     /// Checks for ...
///     pub(crate) static TENSOR_ITEM_IN_HOT_PATH = {
///         code: "TPU101",
///         name: "tensor-item-in-hot-path",
///         severity: Warning,
///         fix: None,
///         kinds: ["call"],
///         tokens: ["item"],
///         calls: ["item"],
///         check: check,
///     }
/// }
/// ```
#[macro_export]
macro_rules! declare_rule {
    (
        $(#[doc = $doc:literal])*
        $vis:vis static $ident:ident = {
            code: $code:literal,
            name: $name:literal,
            severity: $severity:ident,
            fix: $fix:ident,
            kinds: [$($kind:literal),* $(,)?],
            $(tokens: [$($token:literal),* $(,)?],)?
            $(calls: $calls:expr,)?
            check: $check:path
            $(, enabled_by_default: $enabled:literal)?
            $(,)?
        }
    ) => {
        $vis static $ident: $crate::registry::RuleMeta = $crate::registry::RuleMeta {
            code: $code,
            name: $name,
            severity: $crate::diagnostic::Severity::$severity,
            fix: $crate::registry::FixAvailability::$fix,
            kinds: &[$($kind),*],
            tokens: &[$($($token),*)?],
            calls: $crate::declare_rule!(@calls $($calls)?),
            docs: $crate::registry::documentation(concat!($($doc, "\n"),*)),
            check: $check,
            enabled_by_default: $crate::declare_rule!(@enabled $($enabled)?),
        };
    };
    (@calls) => { &[] };
    (@calls $calls:expr) => { &$calls };
    (@enabled) => { true };
    (@enabled $enabled:literal) => { $enabled };
}

static RULES: LazyLock<Vec<&'static RuleMeta>> = LazyLock::new(|| {
    let mut rules = crate::rules::all();
    crate::sort::sort_stably_by_key(&mut rules, |rule| (0, 0, 0, rule.code));
    rules
});

/// Every rule, sorted by code. A rule's position in this slice is its [`RuleId`].
pub fn rules() -> &'static [&'static RuleMeta] {
    &RULES
}

/// Index of a rule in [`rules`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RuleId(pub u16);

impl RuleId {
    pub fn meta(self) -> &'static RuleMeta {
        rules()[self.0 as usize]
    }
}

/// Looks a rule up by code (`TPU101`) or name (`tensor-item-in-hot-path`).
pub fn rule_by_code_or_name(key: &str) -> Option<RuleId> {
    rules()
        .iter()
        .position(|rule| rule.code.eq_ignore_ascii_case(key) || rule.name == key)
        .map(|index| RuleId(index as u16))
}
