//! The project side of a trace: the Python files under the root with their static findings,
//! mapping of the paths a log printed (absolute, redacted, from another machine) to those files
//! by longest path suffix, and the static index that places CPU-fallback operations known only by
//! name (`aten::nonzero`) on the calls that can produce them.

use std::path::{Path, PathBuf};

use tpulint_analyzer::syntax;
use tpulint_analyzer::{Diagnostic, LibraryCodePolicy, LineIndex, Settings, check_tree};
use tpulint_workspace::{Overrides, ProjectResolver, discover_files, read_source};

/// One Python file of the project.
#[derive(Debug, Clone)]
pub struct ProjectFile {
    /// Relative to the root, `/`-separated.
    pub relative: String,
    pub absolute: PathBuf,
    pub text: String,
    pub index: LineIndex,
    /// The static findings under the project's configuration.
    pub diagnostics: Vec<Diagnostic>,
    /// 1-based line and lower-cased callee name of every call (`torch.nonzero(x)` → `nonzero`).
    calls: Vec<(u32, String)>,
}

impl ProjectFile {
    /// Analyses `text` with `settings`, reporting library code in full: the trace says how
    /// often code ran, so a finding that `library-code = "hot-paths"` leaves out (a library
    /// module's function whose callers are elsewhere) is one a runtime event can confirm.
    pub fn new(relative: String, absolute: PathBuf, text: String, settings: &Settings) -> Self {
        let index = LineIndex::new(&text);
        let tree = syntax::parse(&text, None);
        let settings = Settings {
            library_code: LibraryCodePolicy::All,
            ..settings.clone()
        };
        let (diagnostics, calls) = match &tree {
            Some(tree) => (
                check_tree(&text, tree, &settings),
                calls_of(&text, tree, &index),
            ),
            None => (Vec::new(), Vec::new()),
        };
        ProjectFile {
            relative,
            absolute,
            text,
            index,
            diagnostics,
            calls,
        }
    }

    /// The text of 1-based `line`, without its terminator ("" past the end).
    pub fn line_text(&self, line: u32) -> &str {
        line_text(&self.text, &self.index, line)
    }

    /// The byte range of 1-based `line` without its indentation and terminator.
    pub fn line_span(&self, line: u32) -> std::ops::Range<usize> {
        line_span(&self.text, &self.index, line)
    }

    /// Static findings whose range starts on 1-based `line`.
    pub fn diagnostics_on(&self, line: u32) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics.iter().filter(move |diagnostic| {
            self.index.line_of(diagnostic.range.start) + 1 == line as usize
        })
    }
}

/// The text of 1-based `line` of `text`, without its terminator ("" past the end).
pub fn line_text<'t>(text: &'t str, index: &LineIndex, line: u32) -> &'t str {
    let Some(zero_based) = (line as usize).checked_sub(1) else {
        return "";
    };
    if zero_based >= index.line_count() {
        return "";
    }
    let range = index.line_range(zero_based, text);
    text.get(range).unwrap_or("").trim_end_matches(['\r', '\n'])
}

/// The byte range of 1-based `line` of `text` without its indentation and terminator.
pub fn line_span(text: &str, index: &LineIndex, line: u32) -> std::ops::Range<usize> {
    let Some(zero_based) = (line as usize).checked_sub(1) else {
        return 0..0;
    };
    if zero_based >= index.line_count() {
        return text.len()..text.len();
    }
    let range = index.line_range(zero_based, text);
    let content = text.get(range.clone()).unwrap_or("");
    let trimmed_end = content.trim_end_matches(['\r', '\n', ' ', '\t']);
    let indent = trimmed_end.len() - trimmed_end.trim_start().len();
    range.start + indent..range.start + trimmed_end.len()
}

/// Every call in `tree` as (1-based line, lower-cased last name component).
fn calls_of(text: &str, tree: &tree_sitter::Tree, index: &LineIndex) -> Vec<(u32, String)> {
    let mut calls = Vec::new();
    let mut cursor = tree.walk();
    let mut descend = true;
    loop {
        if descend {
            let node = cursor.node();
            if node.kind() == "call"
                && let Some(name) = syntax::callee_name(node, text)
            {
                let line = index.line_of(node.start_byte()) as u32 + 1;
                calls.push((line, name.to_ascii_lowercase()));
            }
        }
        if descend && cursor.goto_first_child() {
            continue;
        }
        if cursor.goto_next_sibling() {
            descend = true;
            continue;
        }
        if !cursor.goto_parent() {
            break;
        }
        descend = false;
    }
    calls
}

/// The project's files, for mapping a trace onto them.
#[derive(Debug, Clone, Default)]
pub struct ProjectIndex {
    pub root: PathBuf,
    pub files: Vec<ProjectFile>,
}

/// A place in the project: file index and 1-based line.
pub type Site = (usize, u32);

impl ProjectIndex {
    /// Discovers and analyses every Python file under `root` with the project's configuration
    /// (`.gitignore`, excludes and per-file rule selections apply, as in `tpulint check`).
    pub fn load(root: &Path) -> Result<ProjectIndex, String> {
        let resolver =
            ProjectResolver::new(None, root, Overrides::default()).map_err(|e| e.to_string())?;
        let discovery = discover_files(&[root.to_path_buf()], root, &resolver, 2);
        if let Some(error) = discovery.config_errors.first() {
            return Err(error.to_string());
        }
        let mut files = Vec::new();
        for file in discovery.files {
            let Ok(source) = read_source(&file.path) else {
                continue;
            };
            let relative = relative_to(&file.path, root);
            let settings = file.project.settings_for(&file.path);
            files.push(ProjectFile::new(
                relative,
                file.path.clone(),
                source.text,
                &settings,
            ));
        }
        Ok(ProjectIndex {
            root: root.to_path_buf(),
            files,
        })
    }

    /// A project made of in-memory sources (tests, the language server).
    pub fn from_sources(root: &Path, sources: Vec<(String, String)>, settings: &Settings) -> Self {
        let files = sources
            .into_iter()
            .map(|(relative, text)| {
                let absolute = root.join(&relative);
                ProjectFile::new(relative, absolute, text, settings)
            })
            .collect();
        ProjectIndex {
            root: root.to_path_buf(),
            files,
        }
    }

    /// The project file a log's path names: the file itself when it lies under the root, else
    /// the file with the longest path suffix in common (logs from another machine, redacted
    /// prefixes). Library paths (`site-packages`, `dist-packages`) and pseudo-files
    /// (`<string>`, `<eval_with_key>.7`) never map.
    pub fn resolve(&self, printed: &str) -> Option<usize> {
        if printed.starts_with('<')
            || printed.contains("/site-packages/")
            || printed.contains("/dist-packages/")
            || printed.contains("\\site-packages\\")
        {
            return None;
        }
        let printed_path = Path::new(printed);
        if printed_path.is_absolute()
            && let Ok(relative) = printed_path.strip_prefix(&self.root)
        {
            let relative = relative.to_string_lossy().replace('\\', "/");
            if let Some(found) = self.files.iter().position(|file| file.relative == relative) {
                return Some(found);
            }
        }
        let normalized = printed.replace('\\', "/");
        let mut best: Option<(usize, usize)> = None;
        for (position, file) in self.files.iter().enumerate() {
            let matched = common_suffix_components(&normalized, &file.relative);
            // The whole relative path must match (a bare `train.py` matches `…/train.py`), so a
            // file is never confused with a namesake in another directory of the project.
            if matched == file.relative.split('/').count()
                && best.is_none_or(|(_, length)| matched > length)
            {
                best = Some((position, matched));
            }
        }
        best.map(|(position, _)| position)
    }

    /// The innermost frame that lies in the project.
    pub fn innermost_site<'f>(
        &self,
        frames: impl IntoIterator<Item = &'f crate::parse::Frame>,
    ) -> Option<Site> {
        frames
            .into_iter()
            .find_map(|frame| Some((self.resolve(&frame.file)?, frame.line)))
    }

    /// The calls that can run `op` (`aten::nonzero`, `aten::median.dim_values`,
    /// `aten::_prelu_kernel_backward`), found by name, plus lines whose static findings name
    /// the same operation.
    pub fn op_sites(&self, op: &str) -> Vec<Site> {
        let names = python_names(op);
        let mut sites = Vec::new();
        for (position, file) in self.files.iter().enumerate() {
            for (line, name) in &file.calls {
                if names.iter().any(|candidate| candidate == name) {
                    sites.push((position, *line));
                }
            }
            for diagnostic in &file.diagnostics {
                let line = file.index.line_of(diagnostic.range.start) as u32 + 1;
                let extra = static_codes_for(op);
                if extra.contains(&diagnostic.code) {
                    sites.push((position, line));
                }
            }
        }
        sites.sort_unstable();
        sites.dedup();
        sites
    }
}

/// The Python spellings of an ATen operation: `aten::median.dim_values` → `median`,
/// `aten::_prelu_kernel_backward` → `prelu` (`nn.PReLU` lower-cased), plus known aliases.
pub fn python_names(op: &str) -> Vec<String> {
    let name = op.rsplit("::").next().unwrap_or(op);
    let name = name.split('.').next().unwrap_or(name);
    let mut base = name.trim_start_matches('_').to_ascii_lowercase();
    for suffix in ["_backward", "_forward", "_kernel", "_out", "_"] {
        if let Some(stripped) = base.strip_suffix(suffix)
            && !stripped.is_empty()
        {
            base = stripped.to_string();
        }
    }
    let mut names = vec![base.clone()];
    let aliases: &[&str] = match base.as_str() {
        "nonzero" => &["argwhere", "nonzero_static"],
        "masked_select" => &["masked_select"],
        "unique2" | "unique_consecutive" | "unique_dim" => &["unique", "unique_consecutive"],
        "median" => &["nanmedian"],
        // Reading a scalar: `.item()`, `float(t)`, `int(t)`, `bool(t)`, `.tolist()`.
        "local_scalar_dense" => &["item", "tolist", "float", "int", "bool"],
        _ => &[],
    };
    names.extend(aliases.iter().map(|alias| alias.to_string()));
    names.sort();
    names.dedup();
    names
}

/// Static rules whose findings mark a call that runs `op` without naming it (boolean-mask
/// indexing runs `aten::nonzero`).
fn static_codes_for(op: &str) -> &'static [&'static str] {
    let name = op.rsplit("::").next().unwrap_or(op);
    match name.split('.').next().unwrap_or(name) {
        "nonzero" => &["TPU301", "TPU302"],
        "masked_select" => &["TPU303"],
        _ => &[],
    }
}

/// How many trailing `/`-separated components two paths share.
fn common_suffix_components(a: &str, b: &str) -> usize {
    a.rsplit('/')
        .zip(b.rsplit('/'))
        .take_while(|(x, y)| x == y && !x.is_empty())
        .count()
}

/// `path` relative to `root`, `/`-separated (the whole path when outside).
pub fn relative_to(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> ProjectIndex {
        ProjectIndex::from_sources(
            Path::new("/home/u/proj"),
            vec![
                (
                    "train.py".into(),
                    "import torch\nidx = torch.nonzero(x)\nm = x.median(dim=1)\n".into(),
                ),
                ("models/net.py".into(), "y = self.act(x)\n".into()),
                ("tools/train.py".into(), "pass\n".into()),
            ],
            &Settings::default(),
        )
    }

    #[test]
    fn paths_map_by_root_then_longest_suffix() {
        let project = project();
        assert_eq!(project.resolve("/home/u/proj/train.py"), Some(0));
        assert_eq!(project.resolve("/REDACTED/proj/models/net.py"), Some(1));
        assert_eq!(project.resolve("/other/machine/tools/train.py"), Some(2));
        assert_eq!(
            project.resolve("/usr/lib/python3.11/site-packages/torch/nn/net.py"),
            None
        );
        assert_eq!(project.resolve("<string>"), None);
        assert_eq!(project.resolve("/x/unrelated.py"), None);
    }

    #[test]
    fn ops_map_to_calls_by_name() {
        let project = project();
        assert_eq!(project.op_sites("aten::nonzero"), vec![(0, 2)]);
        assert_eq!(project.op_sites("aten::median.dim_values"), vec![(0, 3)]);
        assert_eq!(
            python_names("aten::_prelu_kernel_backward"),
            vec!["prelu".to_string()]
        );
        assert!(project.op_sites("aten::nextafter").is_empty());
    }
}
