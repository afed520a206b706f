//! Thin, panic-free helpers over tree-sitter-python nodes: parsing, node text, calls, arguments, literals.
//!
//! Node-kind strings of the Python grammar live here and in `semantic.rs`; rules use these helpers
//! rather than walking raw children, so a grammar upgrade touches few places.

use crate::kind;
use crate::word_list::{WordList, word_list};
use std::borrow::Cow;
use std::ops::{ControlFlow, Deref};
use std::sync::LazyLock;

use tree_sitter::{Language, Node, ParseOptions, ParseState, Parser, Point, Tree, TreeCursor};

/// The pinned Python grammar; dereferences to a [`Language`].
pub static PYTHON: PythonGrammar = PythonGrammar;

/// Handle on the Python grammar. tree-sitter does not implement `Sync` for `Language` on wasm32,
/// so a `LazyLock<Language>` static does not compile there; each thread instead keeps its own
/// `Language` (a pointer to the grammar's static tables), made on first use and kept for the
/// thread's life.
pub struct PythonGrammar;

impl Deref for PythonGrammar {
    type Target = Language;

    fn deref(&self) -> &Language {
        thread_local! {
            static LANGUAGE: &'static Language =
                Box::leak(Box::new(tree_sitter_python::LANGUAGE.into()));
        }
        LANGUAGE.with(|language| *language)
    }
}

/// Field names the engine looks up, resolved to the grammar's field ids once.
const FIELD_NAMES: WordList = word_list![
    "value",
    "attribute",
    "name",
    "right",
    "left",
    "object",
    "function",
    "argument",
    "condition",
    "body",
    "operator",
    "type",
    "parameters",
    "module_name",
    "key",
    "alias",
    "superclasses",
    "expression",
    "definition",
    "consequence",
    "arguments",
    "alternative",
    "subscript",
    "return_type",
];

static FIELD_IDS: LazyLock<Vec<u16>> = LazyLock::new(|| {
    FIELD_NAMES
        .iter()
        .map(|name| PYTHON.field_id_for_name(name).map_or(0, |id| id.get()))
        .collect()
});

/// The name of every node-kind id of the grammar, looked up once. `Node::kind` asks tree-sitter
/// for the symbol's C string and then runs `strlen` and UTF-8 validation on it at every call
/// (about 10% of a full check); a table lookup by `kind_id` gives the same `&'static str`.
static KIND_NAMES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let language = &*PYTHON;
    (0..language.node_kind_count())
        .map(|id| {
            u16::try_from(id)
                .ok()
                .and_then(|id| language.node_kind_for_id(id))
                .unwrap_or("")
        })
        .collect()
});

/// For each kind id, the smallest id with the same name ([`NodeExt::kind_key`]): a grammar
/// can give one name to several ids (a keyword and the node it aliases, as `lambda`).
static KIND_KEYS: LazyLock<Vec<u16>> = LazyLock::new(|| {
    let names = &*KIND_NAMES;
    names
        .iter()
        .enumerate()
        .map(|(id, name)| {
            let first = names.iter().position(|other| other == name).unwrap_or(id);
            u16::try_from(first).unwrap_or(u16::MAX)
        })
        .collect()
});

/// The index of `name` in [`FIELD_NAMES`]. A `match` rather than a search of the slice so that,
/// once inlined at a call site with a literal name, it folds to a constant.
#[inline(always)]
fn known_field_index(name: &str) -> Option<usize> {
    Some(match name {
        "value" => 0,
        "attribute" => 1,
        "name" => 2,
        "right" => 3,
        "left" => 4,
        "object" => 5,
        "function" => 6,
        "argument" => 7,
        "condition" => 8,
        "body" => 9,
        "operator" => 10,
        "type" => 11,
        "parameters" => 12,
        "module_name" => 13,
        "key" => 14,
        "alias" => 15,
        "superclasses" => 16,
        "expression" => 17,
        "definition" => 18,
        "consequence" => 19,
        "arguments" => 20,
        "alternative" => 21,
        "subscript" => 22,
        "return_type" => 23,
        _ => return None,
    })
}

/// Cheap node accessors: fields by cached id, kinds from a table.
///
/// `Node::child_by_field_name` resolves the name with a `strncmp` over every field of the
/// grammar on each call; profiling a full check of diffusers showed that lookup alone at ~30%
/// of the time. Known names map to cached ids here; others fall back to the slow path.
/// `kind_name` is `Node::kind` without its per-call `strlen` and UTF-8 check.
pub trait NodeExt<'t> {
    fn field(&self, name: &str) -> Option<Node<'t>>;
    fn kind_name(&self) -> &'t str;
    /// `kind_name() == kind`, as one call (for a name that is no [`crate::kind`] constant).
    fn is_kind(&self, kind: &str) -> bool;
    /// `kind_name() != kind`.
    fn is_not_kind(&self, kind: &str) -> bool;
    /// `matches!(kind_name(), kinds[0] | kinds[1] | ...)`, as one call.
    fn is_any_kind(&self, kinds: &[&str]) -> bool;
    /// The smallest kind id with this node's kind name, to match on [`crate::kind`]'s
    /// constants: equal keys exactly when the names are equal.
    fn kind_key(&self) -> u16;
    /// `kind_key() == key`: [`Self::is_kind`] for a [`crate::kind`] constant (no text passed).
    fn is(&self, key: u16) -> bool;
    /// `kind_key() != key`.
    fn is_not(&self, key: u16) -> bool;
    /// `keys.contains(&kind_key())`: [`Self::is_any_kind`] for [`crate::kind`] constants.
    fn is_any(&self, keys: &[u16]) -> bool;
    /// The named children (comments included), in order: what tree-sitter's
    /// `named_children(&mut cursor)` yields, by one iterator type whose step is out of line in
    /// the WebAssembly module (see [`NamedNodes`]).
    fn named_nodes(&self) -> NamedNodes<'t>;
}

impl<'t> NodeExt<'t> for Node<'t> {
    #[inline]
    fn field(&self, name: &str) -> Option<Node<'t>> {
        match known_field_index(name) {
            Some(index) => field_at(*self, index),
            None => self.child_by_field_name(name),
        }
    }

    // One shared body in the WebAssembly module (this accessor has ~400 call sites, and copies
    // inlined into the largest functions carried the table's lazy initialisation and the
    // `kind()` fallback); inlined natively, where it is hot.
    #[cfg_attr(target_arch = "wasm32", inline(never))]
    #[cfg_attr(not(target_arch = "wasm32"), inline)]
    fn kind_name(&self) -> &'t str {
        match KIND_NAMES.get(self.kind_id() as usize) {
            Some(&name) => name,
            None => self.kind(),
        }
    }

    // Out of line in the WebAssembly module: a site then passes the name and gets a flag,
    // instead of receiving the kind's text through memory and comparing it there.
    #[cfg_attr(target_arch = "wasm32", inline(never))]
    #[cfg_attr(not(target_arch = "wasm32"), inline)]
    fn is_kind(&self, kind: &str) -> bool {
        self.kind_name() == kind
    }

    #[inline]
    fn is_not_kind(&self, kind: &str) -> bool {
        !self.is_kind(kind)
    }

    #[cfg_attr(target_arch = "wasm32", inline(never))]
    #[cfg_attr(not(target_arch = "wasm32"), inline)]
    fn is_any_kind(&self, kinds: &[&str]) -> bool {
        kinds.contains(&self.kind_name())
    }

    #[cfg_attr(target_arch = "wasm32", inline(never))]
    #[cfg_attr(not(target_arch = "wasm32"), inline)]
    fn kind_key(&self) -> u16 {
        let id = self.kind_id();
        match KIND_KEYS.get(id as usize) {
            Some(&key) => key,
            // Outside the table (tree-sitter's `ERROR` symbol): its own id, which no other
            // kind has.
            None => id,
        }
    }

    #[cfg_attr(target_arch = "wasm32", inline(never))]
    #[cfg_attr(not(target_arch = "wasm32"), inline)]
    fn is(&self, key: u16) -> bool {
        self.kind_key() == key
    }

    #[inline]
    fn is_not(&self, key: u16) -> bool {
        !self.is(key)
    }

    #[cfg_attr(target_arch = "wasm32", inline(never))]
    #[cfg_attr(not(target_arch = "wasm32"), inline)]
    fn is_any(&self, keys: &[u16]) -> bool {
        keys.contains(&self.kind_key())
    }

    #[inline]
    fn named_nodes(&self) -> NamedNodes<'t> {
        let count = self.named_child_count();
        NamedNodes {
            parent: *self,
            next: 0,
            count: count as u32,
            cursor: (count > NamedNodes::BY_INDEX).then(|| self.walk()),
            started: false,
        }
    }
}

/// Iterator over a node's named children ([`NodeExt::named_nodes`]). tree-sitter's
/// `Node::named_children` is a closure over the cursor, so each chain of adapters over it
/// (`any`, `find`, `filter`, `collect`, ...) carried its own copy of the cursor walk; here the
/// walk is one function in the WebAssembly module (inlined natively), and the chains share it.
///
/// A node with few named children (an argument list, a short block) gives them by index
/// (`named_child(i)`): tree-sitter finds the i-th by a light scan of the children before it,
/// with no cursor to allocate and free, while each cursor step over a sibling costs ~560
/// instructions (it re-reads the entry it leaves and descends through the grammar's hidden
/// supertype nodes). The scan is quadratic in the children, so a wider node uses the cursor.
pub struct NamedNodes<'t> {
    parent: Node<'t>,
    /// The index of the next named child, and their count (when given by index).
    next: u32,
    count: u32,
    /// For a node with more than [`NamedNodes::BY_INDEX`] named children.
    cursor: Option<TreeCursor<'t>>,
    /// Whether the cursor is on a child yet (else on the parent).
    started: bool,
}

impl<'t> NamedNodes<'t> {
    /// The most named children given by index.
    const BY_INDEX: usize = 16;

    /// The node whose children these are.
    pub(crate) fn parent(&self) -> Node<'t> {
        self.parent
    }
}

impl<'t> Iterator for NamedNodes<'t> {
    type Item = Node<'t>;

    #[cfg_attr(target_arch = "wasm32", inline(never))]
    #[cfg_attr(not(target_arch = "wasm32"), inline)]
    fn next(&mut self) -> Option<Node<'t>> {
        let Some(cursor) = self.cursor.as_mut() else {
            if self.next >= self.count {
                return None;
            }
            self.next += 1;
            return self.parent.named_child(self.next - 1);
        };
        loop {
            let moved = if self.started {
                cursor.goto_next_sibling()
            } else {
                self.started = true;
                cursor.goto_first_child()
            };
            if !moved {
                return None;
            }
            let node = cursor.node();
            if node.is_named() {
                return Some(node);
            }
        }
    }
}

/// What the test of [`any_in_subtree`] decides at a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Visit {
    /// The node is the one sought: the walk stops and answers `true`.
    Found,
    /// Walk on into the node's named children.
    Enter,
    /// Leave the node's subtree out (a nested definition or a lambda: code that runs elsewhere;
    /// a node outside a range of interest).
    Skip,
}

/// Whether `test` answers [`Visit::Found`] at a named node of `root`'s subtree (`root` included),
/// entering the children only of the nodes it answers [`Visit::Enter`] at. At most `budget` nodes
/// are tested (`usize::MAX`: no limit beyond the subtree's size); past them the answer is
/// `false`. A test that records what it meets and never answers `Found` walks the subtree.
///
/// The walk keeps an explicit stack (no recursion, whatever the input's nesting) and visits a
/// node before its descendants and a later sibling's subtree before an earlier one's: the order,
/// and so the nodes a budget reaches, of the hand-written walks it replaces. One body in the
/// WebAssembly module for every caller: the test is called through a trait object.
#[inline]
pub fn any_in_subtree<'t>(
    root: Node<'t>,
    budget: usize,
    mut test: impl FnMut(Node<'t>) -> Visit,
) -> bool {
    search_subtree(root, budget, &mut test)
}

fn search_subtree<'t>(
    root: Node<'t>,
    budget: usize,
    test: &mut dyn FnMut(Node<'t>) -> Visit,
) -> bool {
    let mut stack = vec![root];
    let mut tested = 0usize;
    while let Some(node) = stack.pop() {
        if tested == budget {
            return false;
        }
        tested += 1;
        match test(node) {
            Visit::Found => return true,
            Visit::Enter => stack.extend(node.named_nodes()),
            Visit::Skip => {}
        }
    }
    false
}

/// The names a binding target binds (`x`; `a, b`; `(k, v)`; `[a, (b, c)]`; `(x)`; and with
/// `starred`, `rest` of `first, *rest`, a list whatever the value is): its identifiers,
/// entering tuple and list patterns (and the expressions tree-sitter parses some targets as)
/// and parentheses, not subscripts or attributes (`d[k]`, `self.x` bind no name). In
/// [`any_in_subtree`]'s order: a later element's names before an earlier one's (`a, b` gives
/// `b`, then `a`).
pub fn target_names<'t>(target: Node<'t>, starred: bool) -> Vec<Node<'t>> {
    let mut names = Vec::new();
    any_in_subtree(target, usize::MAX, |node| match node.kind_key() {
        kind::IDENTIFIER => {
            names.push(node);
            Visit::Skip
        }
        kind::PATTERN_LIST
        | kind::TUPLE_PATTERN
        | kind::LIST_PATTERN
        | kind::TUPLE
        | kind::LIST
        | kind::PARENTHESIZED_EXPRESSION => Visit::Enter,
        kind::LIST_SPLAT_PATTERN if starred => Visit::Enter,
        _ => Visit::Skip,
    });
    names
}

/// Whether the identifier `name` occurs in `expr` (`expr` itself included).
pub fn mentions_identifier(expr: Node<'_>, name: &str, source: &str) -> bool {
    any_in_subtree(expr, usize::MAX, |node| {
        if node.is(kind::IDENTIFIER) && node_text(node, source) == name {
            Visit::Found
        } else {
            Visit::Enter
        }
    })
}

/// [`NodeExt::kind_key`] of a node whose `kind_id()` is `id` (already asked of tree-sitter).
#[inline]
pub(crate) fn kind_key_of_id(id: u16) -> u16 {
    match KIND_KEYS.get(id as usize) {
        Some(&key) => key,
        None => id,
    }
}

/// [`NodeExt::kind_name`] of `node` whose `kind_id()` is `id` (known already: no call into
/// tree-sitter).
#[inline]
pub(crate) fn kind_name_with_id(node: Node<'_>, id: u16) -> &str {
    match KIND_NAMES.get(id as usize) {
        Some(&name) => name,
        None => node.kind(),
    }
}

/// The child of `node` in the field [`FIELD_NAMES`]`[index]`. Out of line in the WebAssembly
/// module for the reason given at `kind_name` (~270 call sites); the index is still folded to a
/// constant at each site.
#[cfg_attr(target_arch = "wasm32", inline(never))]
#[cfg_attr(not(target_arch = "wasm32"), inline)]
fn field_at(node: Node<'_>, index: usize) -> Option<Node<'_>> {
    match FIELD_IDS[index] {
        0 => None,
        id => node.child_by_field_id(id),
    }
}

/// How deep recursive helpers (expression facts, chains) may go before giving up.
pub const MAX_EXPR_DEPTH: usize = 48;

/// Parses `text`. Parsing never fails in practice; `None` only if tree-sitter refuses the language.
pub fn parse(text: &str, old_tree: Option<&Tree>) -> Option<Tree> {
    let mut parser = Parser::new();
    parser.set_language(&PYTHON).ok()?;
    parse_with(&mut parser, text, old_tree)
}

/// [`parse`] with a parser the caller keeps (set to [`PYTHON`]). A fresh parse that finds a
/// syntax error is tried once more with the comment-only lines inside brackets blanked: the
/// grammar's indentation scanner reads a comment less indented than its block, after a line
/// that ends in an operator (`x = (a +` / `# b +` / `c)`), as the block's end and reports valid
/// Python as broken (tree-sitter-python issue 256). Such comments have no syntax, and blanking
/// keeps every byte offset, so that tree is used when it has no error at all. Incremental
/// re-parses are left as tree-sitter gives them; callers re-parse afresh on an error.
pub fn parse_with(parser: &mut Parser, text: &str, old_tree: Option<&Tree>) -> Option<Tree> {
    let tree = parser.parse(text, old_tree)?;
    if old_tree.is_some() || !tree.root_node().has_error() {
        return Some(tree);
    }
    let Some(blanked) = blank_bracketed_comment_lines(text) else {
        return Some(tree);
    };
    match parser.parse(blanked.as_str(), None) {
        Some(retry) if !retry.root_node().has_error() => Some(retry),
        _ => Some(tree),
    }
}

/// A fresh [`parse`] (`parse(text, None)`, the same tree) that stops early, returning `None`,
/// once `cancelled` returns true: tree-sitter polls it as it parses. For an editor's parse in the
/// background, which an edit makes useless (a fresh parse of a large module with a syntax error
/// takes as long as checking it).
pub fn parse_cancellable(text: &str, cancelled: &dyn Fn() -> bool) -> Option<Tree> {
    let mut parser = Parser::new();
    parser.set_language(&PYTHON).ok()?;
    let mut once = |source: &str| {
        let bytes = source.as_bytes();
        let mut progress = |_: &ParseState| {
            if cancelled() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let options = ParseOptions::new().progress_callback(&mut progress);
        parser.parse_with_options(
            &mut |offset: usize, _: Point| &bytes[offset.min(bytes.len())..],
            None,
            Some(options),
        )
    };
    let tree = once(text)?;
    if !tree.root_node().has_error() {
        return Some(tree);
    }
    let Some(blanked) = blank_bracketed_comment_lines(text) else {
        return Some(tree);
    };
    match once(blanked.as_str()) {
        Some(retry) if !retry.root_node().has_error() => Some(retry),
        Some(_) => Some(tree),
        None => None,
    }
}

/// `text` with every comment that is alone on its line inside brackets replaced by spaces (same
/// length), or `None` when there is none. A lexical scan: strings (single, triple, with escapes)
/// are skipped; a nested quote in an f-string may desynchronise it, which costs at most a
/// comment left in place or blanked needlessly — the parse that uses the result must be free
/// of errors, and node text is always read from the original.
fn blank_bracketed_comment_lines(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    // A copy is made only when there is something to blank.
    let mut blanked: Option<Vec<u8>> = None;
    let mut depth = 0usize;
    let mut line_is_blank_so_far = true;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        match byte {
            b'\n' | b'\r' => line_is_blank_so_far = true,
            b' ' | b'\t' | b'\x0c' => {}
            b'#' => {
                let end = bytes[index..]
                    .iter()
                    .position(|b| *b == b'\n' || *b == b'\r')
                    .map_or(bytes.len(), |at| index + at);
                if depth > 0 && line_is_blank_so_far {
                    blanked.get_or_insert_with(|| bytes.to_vec())[index..end].fill(b' ');
                }
                index = end;
                continue;
            }
            b'\'' | b'"' => {
                line_is_blank_so_far = false;
                index = string_end(bytes, index);
                continue;
            }
            _ => {
                line_is_blank_so_far = false;
                match byte {
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
        }
        index += 1;
    }
    // Only ASCII bytes were written, over whole comments (which end at a line break or the end).
    String::from_utf8(blanked?).ok()
}

/// The offset just past the string literal whose opening quote is at `start`.
pub(crate) fn string_end(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let triple = bytes.get(start + 1) == Some(&quote) && bytes.get(start + 2) == Some(&quote);
    let mut index = start + if triple { 3 } else { 1 };
    while index < bytes.len() {
        let byte = bytes[index];
        if byte == b'\\' {
            index += 2;
            continue;
        }
        if byte == quote
            && (!triple
                || (bytes.get(index + 1) == Some(&quote) && bytes.get(index + 2) == Some(&quote)))
        {
            return index + if triple { 3 } else { 1 };
        }
        // An unterminated one-line string ends at the line break.
        if !triple && (byte == b'\n' || byte == b'\r') {
            return index;
        }
        index += 1;
    }
    bytes.len()
}

/// `parts` joined by `separator`: `[&str]::join`, written out (the standard library's
/// `join_generic_copy` costs the WebAssembly module more code than this loop).
pub(crate) fn join(parts: &[&str], separator: &str) -> String {
    let mut joined = String::new();
    for (index, part) in parts.iter().enumerate() {
        if index > 0 {
            joined.push_str(separator);
        }
        joined.push_str(part);
    }
    joined
}

/// Source text of `node`; empty when the range is not on char boundaries.
pub fn node_text<'s>(node: Node<'_>, source: &'s str) -> &'s str {
    source.get(node.byte_range()).unwrap_or("")
}

/// `node_text(node, source) == text`, as one call (about 80 sites compare a node's text with a
/// name): out of line in the WebAssembly module, where a site then passes the name and gets a
/// flag instead of receiving the text through memory and comparing it there.
#[cfg_attr(target_arch = "wasm32", inline(never))]
#[cfg_attr(not(target_arch = "wasm32"), inline)]
pub fn text_is(node: Node<'_>, source: &str, text: &str) -> bool {
    node_text(node, source) == text
}

/// `(function, argument_list)` of a `call` node.
pub fn call_parts<'t>(call: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
    if call.is_not(kind::CALL) {
        return None;
    }
    let function = call.field("function")?;
    let arguments = call.field("arguments")?;
    Some((function, arguments))
}

/// For `recv.method(...)`: `(recv, method name node)`.
pub fn method_call<'t>(call: Node<'t>) -> Option<(Node<'t>, Node<'t>)> {
    let (function, _) = call_parts(call)?;
    if function.is_not(kind::ATTRIBUTE) {
        return None;
    }
    Some((function.field("object")?, function.field("attribute")?))
}

/// Name of the called method or function: `c` in `a.b.c(...)`, `f` in `f(...)`.
pub fn callee_name<'s>(call: Node<'_>, source: &'s str) -> Option<&'s str> {
    let (function, _) = call_parts(call)?;
    match function.kind_key() {
        kind::IDENTIFIER => Some(node_text(function, source)),
        kind::ATTRIBUTE => Some(node_text(function.field("attribute")?, source)),
        _ => None,
    }
}

/// The named children of `node` (comments included), in order. One function for every caller:
/// each `named_children(&mut cursor)` chain of adapters instantiates the cursor walk again,
/// which costs the WebAssembly module room; a loop over this list does not.
#[inline(never)]
pub fn named_children<'t>(node: Node<'t>) -> Vec<Node<'t>> {
    node.named_nodes().collect()
}

/// Positional arguments of an `argument_list` (skipping keywords, `*args`, `**kwargs` and comments).
pub fn positional_args<'t>(arguments: Node<'t>) -> Vec<Node<'t>> {
    let mut out = named_children(arguments);
    out.retain(|child| {
        !child.is_any(&[
            kind::KEYWORD_ARGUMENT,
            kind::LIST_SPLAT,
            kind::DICTIONARY_SPLAT,
            kind::COMMENT,
        ])
    });
    out
}

/// `arguments` with each list or tuple replaced by its elements (`torch.cat([a, b], dim)`'s
/// positional arguments → `a`, `b`, `dim`): the tensors a combining call or an index receives.
/// One function for the rules and the index that spread them.
pub fn spread_sequences<'t>(arguments: Vec<Node<'t>>) -> Vec<Node<'t>> {
    let mut spread = Vec::new();
    for argument in arguments {
        if argument.is_any(&[kind::LIST, kind::TUPLE]) {
            spread.extend(argument.named_nodes());
        } else {
            spread.push(argument);
        }
    }
    spread
}

/// `positional` (the [`positional_args`] of the `argument_list` `arguments`), then the values of
/// its keyword arguments, in order (`f(x, y, weight=w)` → `x`, `y`, `w`).
pub fn with_keyword_values<'t>(
    mut positional: Vec<Node<'t>>,
    arguments: Node<'t>,
) -> Vec<Node<'t>> {
    positional.extend(
        arguments
            .named_nodes()
            .filter(|argument| argument.is(kind::KEYWORD_ARGUMENT))
            .filter_map(|argument| argument.field("value")),
    );
    positional
}

/// The texts of a comparison's operators, its unnamed children (`a < b <= c` → `<`, `<=`;
/// `x is not None` → `is not`, as written). One walk for the sites that read them.
pub fn comparison_operators<'s>(comparison: Node<'_>, source: &'s str) -> Vec<&'s str> {
    let mut operators = Vec::new();
    let mut cursor = comparison.walk();
    for child in comparison.children(&mut cursor) {
        if !child.is_named() {
            operators.push(node_text(child, source));
        }
    }
    operators
}

/// The `left` then the `right` operand of a binary or boolean operator, those present.
pub fn sides(operator: Node<'_>) -> Sides<'_> {
    Sides([operator.field("left"), operator.field("right")], 0)
}

/// The iterator of [`sides`]: its own, whose folds (`any`, `find_map`) are the default loop over
/// `next`, where `[left, right].into_iter().flatten()` instantiated the `Flatten` adapter's folds
/// for each closure in the WebAssembly module.
pub struct Sides<'t>([Option<Node<'t>>; 2], usize);

impl<'t> Iterator for Sides<'t> {
    type Item = Node<'t>;

    fn next(&mut self) -> Option<Node<'t>> {
        while let Some(side) = self.0.get(self.1) {
            self.1 += 1;
            if side.is_some() {
                return *side;
            }
        }
        None
    }
}

/// Whether the argument list has `*args` or `**kwargs`, which may carry any keyword.
pub fn has_splat(arguments: Node<'_>) -> bool {
    for child in named_children(arguments) {
        if child.is_any(&[kind::LIST_SPLAT, kind::DICTIONARY_SPLAT]) {
            return true;
        }
    }
    false
}

/// The `keyword_argument` node named `name` in an `argument_list`.
pub fn keyword_arg_node<'t>(arguments: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    // Over the children in place: no `Vec` per question (the pre-pass asks at every call).
    arguments.named_nodes().find(|child| {
        child.is(kind::KEYWORD_ARGUMENT)
            && child
                .field("name")
                .is_some_and(|n| node_text(n, source) == name)
    })
}

/// The value of keyword argument `name` in an `argument_list`.
pub fn keyword_arg<'t>(arguments: Node<'t>, name: &str, source: &str) -> Option<Node<'t>> {
    keyword_arg_node(arguments, name, source)?.field("value")
}

/// The argument at `position`, or the keyword argument `name`: how Python binds a parameter.
pub fn argument<'t>(
    arguments: Node<'t>,
    position: usize,
    name: &str,
    source: &str,
) -> Option<Node<'t>> {
    keyword_arg(arguments, name, source)
        .or_else(|| positional_args(arguments).get(position).copied())
}

/// The value of a plain string literal (no f-string interpolation, no implicit concatenation).
pub fn string_value<'s>(node: Node<'_>, source: &'s str) -> Option<Cow<'s, str>> {
    if node.is_not(kind::STRING) {
        return None;
    }
    let mut content = None;
    for child in node.named_nodes() {
        match child.kind_key() {
            kind::STRING_START | kind::STRING_END => {}
            kind::STRING_CONTENT if content.is_none() => content = Some(child),
            _ => return None,
        }
    }
    let start = node.child(0)?;
    let prefix = node_text(start, source);
    if prefix.to_ascii_lowercase().contains('f') || prefix.to_ascii_lowercase().contains('b') {
        return None;
    }
    Some(match content {
        Some(content) => Cow::Borrowed(node_text(content, source)),
        None => Cow::Borrowed(""),
    })
}

/// `["a", "b", "c"]` for the expression `a.b.c`; `None` for anything but identifiers and attributes.
pub fn dotted_parts<'s>(node: Node<'_>, source: &'s str) -> Option<Vec<&'s str>> {
    let mut parts = Vec::new();
    let mut current = node;
    for _ in 0..MAX_EXPR_DEPTH {
        match current.kind_key() {
            kind::IDENTIFIER => {
                parts.push(node_text(current, source));
                parts.reverse();
                return Some(parts);
            }
            kind::ATTRIBUTE => {
                parts.push(node_text(current.field("attribute")?, source));
                current = current.field("object")?;
            }
            _ => return None,
        }
    }
    None
}

/// The leading identifier of a dotted expression (`a` in `a.b.c`), without building the parts;
/// `None` exactly when [`dotted_parts`] is `None`.
pub fn dotted_root(node: Node<'_>) -> Option<Node<'_>> {
    let mut current = node;
    for _ in 0..MAX_EXPR_DEPTH {
        match current.kind_key() {
            kind::IDENTIFIER => return Some(current),
            kind::ATTRIBUTE => {
                current.field("attribute")?;
                current = current.field("object")?;
            }
            _ => return None,
        }
    }
    None
}

/// The function or class definition a statement holds: itself, or what its decorators wrap;
/// `None` for any other statement.
pub fn undecorated(statement: Node<'_>) -> Option<Node<'_>> {
    match statement.kind_key() {
        kind::DECORATED_DEFINITION => statement.field("definition"),
        kind::FUNCTION_DEFINITION | kind::CLASS_DEFINITION => Some(statement),
        _ => None,
    }
}

/// The function definitions directly in a class body (decorated ones included).
pub fn methods(body: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    body.named_nodes()
        .filter_map(undecorated)
        .filter(|definition| definition.is(kind::FUNCTION_DEFINITION))
}

/// Strips any number of enclosing parentheses.
pub fn unparenthesize(mut node: Node<'_>) -> Node<'_> {
    for _ in 0..MAX_EXPR_DEPTH {
        if node.is_not(kind::PARENTHESIZED_EXPRESSION) {
            break;
        }
        match node.named_child(0) {
            Some(inner) if inner.is_not(kind::COMMENT) => node = inner,
            _ => break,
        }
    }
    node
}

/// Whether `node` is an operand of a comparison, directly, in parentheses, or as an element of a
/// tuple, list or set that is one (`x == torch.device("cuda")`, `d in (torch.device("cuda"), cpu)`):
/// a value that is tested there, not used.
pub fn is_comparison_operand(node: Node<'_>) -> bool {
    let mut current = node;
    for _ in 0..MAX_EXPR_DEPTH {
        let Some(parent) = current.parent() else {
            return false;
        };
        match parent.kind_key() {
            kind::COMPARISON_OPERATOR => return true,
            kind::PARENTHESIZED_EXPRESSION | kind::TUPLE | kind::LIST | kind::SET => {
                current = parent
            }
            _ => return false,
        }
    }
    false
}

/// Whether `node` or any descendant is a syntax error or a missing token.
pub fn has_error(node: Node<'_>) -> bool {
    node.has_error()
}

/// Whether the file's `python`-level boolean literal / None.
pub fn is_literal_constant(node: Node<'_>) -> bool {
    node.is_any(&[
        kind::TRUE,
        kind::FALSE,
        kind::NONE,
        kind::INTEGER,
        kind::FLOAT,
        kind::STRING,
        kind::CONCATENATED_STRING,
    ])
}

/// Numeric value of an integer literal like `128`, `0x80` or `1_024`.
pub fn integer_value(node: Node<'_>, source: &str) -> Option<i64> {
    if node.is_not(kind::INTEGER) {
        return None;
    }
    let text = node_text(node, source).replace('_', "");
    let lower = text.to_ascii_lowercase();
    if let Some(hex) = lower.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()
    } else if let Some(oct) = lower.strip_prefix("0o") {
        i64::from_str_radix(oct, 8).ok()
    } else if let Some(bin) = lower.strip_prefix("0b") {
        i64::from_str_radix(bin, 2).ok()
    } else {
        lower.parse().ok()
    }
}

/// Indentation (leading spaces/tabs) of the line containing `offset`.
pub fn line_indent(source: &str, offset: usize) -> &str {
    let offset = crate::source::floor_char_boundary(source, offset);
    let line_start = source[..offset].rfind(['\n', '\r']).map_or(0, |i| i + 1);
    let rest = &source[line_start..];
    let indent_len = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    &rest[..indent_len]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds of the named nodes `any_in_subtree` tests in `source`'s first statement, in
    /// order, with `skip` answered at nodes of that kind and `Found` at none.
    fn visit_order(source: &str, budget: usize, skip: u16) -> (bool, Vec<String>) {
        let tree = parse(source, None).expect("parses");
        let statement = tree.root_node().named_child(0).expect("a statement");
        let mut kinds = Vec::new();
        let found = any_in_subtree(statement, budget, |node| {
            kinds.push(node.kind().to_string());
            if node.is(skip) {
                Visit::Skip
            } else {
                Visit::Enter
            }
        });
        (found, kinds)
    }

    /// The texts of `target_names` of the first statement's assignment target or `for` target.
    fn names_bound(source: &str, starred: bool) -> Vec<String> {
        let tree = parse(source, None).expect("parses");
        let statement = tree.root_node().named_child(0).expect("a statement");
        let target = match statement.field("left") {
            Some(left) => left,
            None => {
                let assignment = statement.named_child(0).expect("an assignment");
                assignment.field("left").expect("a target")
            }
        };
        target_names(target, starred)
            .iter()
            .map(|&n| node_text(n, source).to_string())
            .collect()
    }

    #[test]
    fn target_names_are_the_names_a_target_binds_last_first() {
        assert_eq!(names_bound("x = 1\n", true), ["x"]);
        assert_eq!(names_bound("a, b = f()\n", true), ["b", "a"]);
        assert_eq!(
            names_bound("for k, (v, w) in d:\n    pass\n", true),
            ["w", "v", "k"]
        );
        assert_eq!(names_bound("[a, (b, c)] = f()\n", true), ["c", "b", "a"]);
        assert_eq!(names_bound("first, *rest = f()\n", true), ["rest", "first"]);
        assert_eq!(names_bound("first, *rest = f()\n", false), ["first"]);
        assert_eq!(names_bound("for (x) in y:\n    pass\n", true), ["x"]);
        // Subscripts and attributes bind no name; neither do their parts.
        assert_eq!(names_bound("d[k], self.x, y = f()\n", true), ["y"]);
        assert!(names_bound("self.x = 1\n", false).is_empty());
    }

    #[test]
    fn any_in_subtree_visits_a_node_before_its_children_and_later_siblings_first() {
        let (found, kinds) = visit_order("f(a, g(b))\n", usize::MAX, kind::MODULE);
        assert!(!found);
        assert_eq!(
            kinds,
            [
                "expression_statement",
                "call",
                "argument_list",
                "call",
                "argument_list",
                "identifier",
                "identifier",
                "identifier",
                "identifier",
            ]
        );
        // The same walk cut after four tests, and with calls' subtrees left out.
        let (found, kinds) = visit_order("f(a, g(b))\n", 4, kind::MODULE);
        assert!(!found);
        assert_eq!(kinds.len(), 4);
        let (_, kinds) = visit_order("f(a, g(b))\n", usize::MAX, kind::CALL);
        assert_eq!(kinds, ["expression_statement", "call"]);
    }

    #[test]
    fn any_in_subtree_stops_at_the_first_found_and_within_its_budget() {
        let source = "x = [y, (z + 1) % n]\n";
        let tree = parse(source, None).expect("parses");
        let statement = tree.root_node().named_child(0).expect("a statement");
        let modulo = |node: Node<'_>| {
            if node.is(kind::BINARY_OPERATOR) && node.child(1).is_some_and(|o| o.kind() == "%") {
                Visit::Found
            } else {
                Visit::Enter
            }
        };
        assert!(any_in_subtree(statement, usize::MAX, modulo));
        // statement, assignment, list, then the binary operator (the later element first).
        assert!(any_in_subtree(statement, 4, modulo));
        assert!(!any_in_subtree(statement, 3, modulo));
        assert!(!any_in_subtree(statement, 0, modulo));
        // Found in a skipped subtree is never reached.
        let skipping_lists = |node: Node<'_>| match node.kind_key() {
            kind::LIST => Visit::Skip,
            _ => modulo(node),
        };
        assert!(!any_in_subtree(statement, usize::MAX, skipping_lists));
        assert!(mentions_identifier(statement, "z", source));
        assert!(mentions_identifier(statement, "x", source));
        assert!(!mentions_identifier(statement, "w", source));
    }

    #[test]
    fn any_in_subtree_walks_deep_nesting_without_recursion() {
        let depth = 5_000;
        let source = format!("x = {}y{}\n", "(".repeat(depth), ")".repeat(depth));
        let tree = parse(&source, None).expect("parses");
        let statement = tree.root_node().named_child(0).expect("a statement");
        assert!(mentions_identifier(statement, "y", &source));
        assert!(!mentions_identifier(statement, "z", &source));
    }

    #[test]
    fn a_cancellable_parse_gives_the_fresh_parse_or_stops() {
        let texts = [
            "import torch\nx = torch.ones(3)\n",
            "def f():\n    x = (1 +\n# c\n         2)\n    return x\n",
            "x = f(\nfor b in loader:\n    loss = model(b\n",
        ];
        for text in texts {
            let fresh = parse(text, None).expect("parses");
            let cancellable = parse_cancellable(text, &|| false).expect("parses");
            assert_eq!(
                cancellable.root_node().to_sexp(),
                fresh.root_node().to_sexp()
            );
        }
        let large = "x = f(\n".repeat(20_000);
        assert!(parse_cancellable(&large, &|| true).is_none());
    }

    #[test]
    fn a_comment_less_indented_than_its_block_inside_brackets_parses() {
        // tree-sitter-python issue 256: fastai's `torch_core.py` has this shape.
        let source = "def f():\n    x = (1 +\n# c\n         2)\n    return x\n";
        let tree = parse(source, None).expect("parses");
        assert!(
            !tree.root_node().has_error(),
            "{}",
            tree.root_node().to_sexp()
        );
        let body = tree
            .root_node()
            .child(0)
            .and_then(|f| f.field("body"))
            .expect("body");
        assert_eq!(
            body.named_child_count(),
            2,
            "{}",
            tree.root_node().to_sexp()
        );
        // A multi-byte comment is blanked byte for byte; offsets keep their meaning.
        let source = "def f():\n    y = [1 -\n# é – ü\n        2]\n    return y\n";
        let tree = parse(source, None).expect("parses");
        assert!(!tree.root_node().has_error());
        let last = tree.root_node().child(0).expect("def");
        assert_eq!(last.end_byte(), source.trim_end().len());
    }

    #[test]
    fn blanking_skips_strings_and_keeps_real_errors() {
        let source = "x = (\"(\" +\n# one\n  '#)' +\n  \"\"\"\n# in a string\n\"\"\")\n# outside\n";
        let blanked = blank_bracketed_comment_lines(source).expect("one comment inside brackets");
        assert_eq!(blanked.len(), source.len());
        assert!(!blanked.contains("# one"));
        assert!(blanked.contains("'#)'") && blanked.contains("# in a string"));
        assert!(blanked.contains("# outside"));
        assert_eq!(
            blank_bracketed_comment_lines("x = 1  # no brackets\n"),
            None
        );
        // Broken code stays broken: the retry is used only when it has no error at all.
        let broken = "def f():\n    x = (1 +\n# c\n    return x\n";
        assert!(parse(broken, None).expect("parses").root_node().has_error());
    }

    #[test]
    fn kind_constants_are_the_grammars() {
        for &(key, name) in crate::kind::ALL {
            let first = KIND_NAMES.iter().position(|other| *other == name);
            assert_eq!(first, Some(key as usize), "{name}");
        }
    }

    #[test]
    fn kind_name_is_kind_for_every_node() {
        // Keywords that are also node kinds (`lambda`, `type`, `print`), aliases (`match` as an
        // identifier), comments, strings, errors.
        let source = "import torch as T\nprint(x)\ntype X = int\nmatch = 1\nf = lambda x: x\n\
                      # c\nclass A(B):\n    def f(self, a: int = 1) -> None:\n        return f\"{a!r}\"\n\
                      def g(:\n    exec x\n";
        let tree = parse(source, None).expect("parses");
        let mut cursor = tree.walk();
        let mut seen = 0;
        'walk: loop {
            let node = cursor.node();
            assert_eq!(node.kind_name(), node.kind(), "kind id {}", node.kind_id());
            seen += 1;
            if cursor.goto_first_child() {
                continue;
            }
            while !cursor.goto_next_sibling() {
                if !cursor.goto_parent() {
                    break 'walk;
                }
            }
        }
        assert!(seen > 50, "walked only {seen} nodes");
    }

    #[test]
    fn known_field_indices_match_the_field_table() {
        for (index, name) in FIELD_NAMES.iter().enumerate() {
            assert_eq!(known_field_index(name), Some(index), "{name}");
            assert_ne!(FIELD_IDS[index], 0, "{name} is not a field of the grammar");
        }
        assert_eq!(known_field_index("no_such_field"), None);
    }
}
