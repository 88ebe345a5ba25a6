//! The manager crate's layers hold (docs/architecture.md, "Layers"): `live`
//! does not import `lab`, and no import cycle runs between the crate's
//! top-level modules, nor between the modules inside `live/`, `lab/` and
//! `results/`.
//!
//! Every source file under `manager/src` (but `main.rs`, the binary on top)
//! is parsed with `syn`; each `crate::`, `super::` and `self::` path in its
//! code (`use` items, calls, types; not comments, and not `#[cfg(test)]`
//! items, whose imports are the test's, not the module's) is an edge from
//! the file's module to the module the path names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The module groups whose inner modules must not import each other in a
/// cycle.
const INNER: &[&str] = &["live", "lab", "results"];

/// (importer, imported) pairs that break the layering outright.
const FORBIDDEN: &[(&str, &str)] = &[("live", "lab")];

/// The top-level modules by layer (docs/architecture.md's table): a module
/// imports only modules of a lower layer.
const LAYERS: &[(&str, u8)] = &[
    ("calibrate", 3),
    ("replay", 3),
    ("live", 2),
    ("lab", 2),
    ("cluster", 1),
    ("faults", 1),
    ("batsim", 1),
    ("results", 1),
    ("environment", 0),
];

fn layer(module: &str) -> Option<u8> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

/// A module path (`["live", "run"]`) of a file under `src/`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_string());
    }
    parts
}

/// Every path in non-test code, as its segments.
#[derive(Default)]
struct Paths(Vec<Vec<String>>);

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && {
            let text = a
                .meta
                .require_list()
                .map(|l| l.tokens.to_string())
                .unwrap_or_default();
            text.split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|w| w == "test")
        }
    })
}

fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut v = prefix.clone();
            if n.ident != "self" {
                v.push(n.ident.to_string());
            }
            out.push(v);
        }
        syn::UseTree::Rename(r) => {
            let mut v = prefix.clone();
            if r.ident != "self" {
                v.push(r.ident.to_string());
            }
            out.push(v);
        }
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs = match i {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Struct(x) => &x.attrs,
            syn::Item::Enum(x) => &x.attrs,
            syn::Item::Const(x) => &x.attrs,
            syn::Item::Static(x) => &x.attrs,
            syn::Item::Trait(x) => &x.attrs,
            _ => return syn::visit::visit_item(self, i),
        };
        if !is_cfg_test(attrs) {
            syn::visit::visit_item(self, i);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        use_paths(&u.tree, &mut Vec::new(), &mut self.0);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.0
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
}

/// The module a path names, seen from `module`: `crate::`, `super::` and
/// `self::` paths only (the others are external crates or local names).
fn target(module: &[String], path: &[String]) -> Option<Vec<String>> {
    let first = path.first()?;
    let (mut base, rest): (Vec<String>, &[String]) = match first.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (module.to_vec(), &path[1..]),
        "super" => {
            let mut base = module.to_vec();
            let mut rest = path;
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
            (base, rest)
        }
        _ => return None,
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The node a module path falls in: its top-level module, or for the
/// inner groups its first two segments when the second is a module.
fn node(path: &[String], depth: usize, modules: &BTreeSet<Vec<String>>) -> Option<String> {
    let head: Vec<String> = path.iter().take(depth).cloned().collect();
    (head.len() == depth && modules.contains(&head)).then(|| head.join("::"))
}

/// A cycle in `edges`, as the modules along it, if there is one.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn dfs(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|s| s == m).expect("on the stack");
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(m.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = dfs(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            if let Some(c) = dfs(n, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

/// What breaks the layering in `files` (module path, source text): each
/// forbidden import with the file's module and the path, and each cycle.
/// Modules declared test-only in a file of their parent (`#[cfg(test)]
/// mod harness;`): their files are test code, like a `#[cfg(test)] mod
/// tests { ... }` block.
fn test_modules(files: &[(Vec<String>, String)]) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for (module, text) in files {
        let Ok(file) = syn::parse_file(text) else {
            continue;
        };
        for item in &file.items {
            if let syn::Item::Mod(m) = item {
                if m.content.is_none() && is_cfg_test(&m.attrs) {
                    let mut path = module.clone();
                    path.push(m.ident.to_string());
                    out.insert(path);
                }
            }
        }
    }
    out
}

fn problems(files: &[(Vec<String>, String)]) -> Vec<String> {
    let tests = test_modules(files);
    let files: Vec<(Vec<String>, String)> = files
        .iter()
        .filter(|(m, _)| !tests.iter().any(|t| m.starts_with(t)))
        .cloned()
        .collect();
    let files = &files[..];
    let modules: BTreeSet<Vec<String>> = files
        .iter()
        .flat_map(|(m, _)| (1..=m.len()).map(|k| m[..k].to_vec()))
        .collect();
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut inner: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    let mut out = Vec::new();
    for (module, text) in files {
        let file = syn::parse_file(text)
            .unwrap_or_else(|e| panic!("{}: does not parse: {e}", module.join("::")));
        let mut paths = Paths::default();
        paths.visit_file(&file);
        for p in &paths.0 {
            let Some(t) = target(module, p) else { continue };
            let (Some(from), Some(to)) = (node(module, 1, &modules), node(&t, 1, &modules)) else {
                continue;
            };
            if from != to {
                if FORBIDDEN.contains(&(from.as_str(), to.as_str())) {
                    out.push(format!(
                        "{} imports {} ({from}/ must not import {to}/)",
                        module.join("::"),
                        p.join("::")
                    ));
                } else {
                    match (layer(&from), layer(&to)) {
                        (Some(a), Some(b)) if b < a => {}
                        (Some(_), Some(_)) => out.push(format!(
                            "{} imports {} ({from} may only import modules of a lower layer: docs/architecture.md, Layers)",
                            module.join("::"),
                            p.join("::")
                        )),
                        _ => out.push(format!(
                            "{} imports {}: give {from} and {to} a layer in LAYERS and in docs/architecture.md",
                            module.join("::"),
                            p.join("::")
                        )),
                    }
                }
                top.entry(from).or_default().insert(to);
            } else if INNER.contains(&from.as_str()) {
                if let (Some(a), Some(b)) = (node(module, 2, &modules), node(&t, 2, &modules)) {
                    if a != b {
                        inner
                            .entry(from.clone())
                            .or_default()
                            .entry(a)
                            .or_default()
                            .insert(b);
                    }
                }
            }
        }
    }
    if let Some(c) = find_cycle(&top) {
        out.push(format!(
            "import cycle between top-level modules: {}",
            c.join(" -> ")
        ));
    }
    for (group, edges) in &inner {
        if let Some(c) = find_cycle(edges) {
            out.push(format!("import cycle inside {group}/: {}", c.join(" -> ")));
        }
    }
    out
}

fn sources(dir: &Path, root: &Path, out: &mut Vec<(Vec<String>, String)>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path: PathBuf = e.expect("a readable directory entry").path();
        if path.is_dir() {
            sources(&path, root, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            let rel = path.strip_prefix(root).expect("under src");
            if rel == Path::new("main.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push((module_of(rel), text));
        }
    }
}

#[test]
fn live_does_not_import_lab_and_no_module_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    // The walk found the crate: a test that reads nothing checks nothing.
    for m in ["live::run", "lab::simulate", "results::rundir", "calibrate"] {
        let m: Vec<String> = m.split("::").map(String::from).collect();
        assert!(files.iter().any(|(f, _)| *f == m), "{m:?} not found");
    }
    let p = problems(&files);
    assert!(p.is_empty(), "the layers are broken:\n{}", p.join("\n"));
}

fn module(path: &str, text: &str) -> (Vec<String>, String) {
    let m = if path.is_empty() {
        Vec::new()
    } else {
        path.split("::").map(String::from).collect()
    };
    (m, text.to_string())
}

/// The check finds what it is there to find, in each form a path takes.
#[test]
fn the_check_catches_a_forbidden_import_and_cycles() {
    let lab = module("lab", "pub mod simulate;");
    let sim = module("lab::simulate", "pub fn f() {}");
    let ok = [
        module("", "pub mod lab; pub mod live; pub mod results;"),
        module("live", "pub mod run; pub mod setup;"),
        module(
            "live::run",
            "use crate::live::setup::x; use crate::results::y;",
        ),
        module("live::setup", "fn f() { crate::results::z(); }"),
        module("results", "pub fn y() {}"),
        lab.clone(),
        sim.clone(),
        // Test code may import anything.
        module(
            "live::setup",
            "#[cfg(test)] mod tests { use crate::lab::simulate::f; }",
        ),
        // So may a module declared test-only in its parent's file.
        module("live", "#[cfg(test)] mod harness;"),
        module("live::harness", "use crate::lab::simulate::f;"),
    ];
    assert_eq!(problems(&ok), Vec::<String>::new());

    let mut bad = ok.to_vec();
    bad.push(module("live::run", "fn g() { crate::lab::simulate::f(); }"));
    let p = problems(&bad);
    assert!(
        p.iter()
            .any(|s| s.contains("live::run imports crate::lab::simulate::f")),
        "{p:?}"
    );

    let mut up = ok.to_vec();
    up.push(module("lab::simulate", "use crate::calibrate::run;"));
    up.push(module("calibrate", "pub fn run() {}"));
    let p = problems(&up);
    assert!(
        p.iter()
            .any(|s| s.contains("lab::simulate imports crate::calibrate::run")),
        "{p:?}"
    );

    let mut cycle = ok.to_vec();
    cycle.push(module("results", "use crate::live::run;"));
    let p = problems(&cycle);
    assert!(
        p.iter()
            .any(|s| s.contains("top-level") && s.contains("live") && s.contains("results")),
        "{p:?}"
    );

    let mut cycle = ok.to_vec();
    cycle.push(module("live::setup", "use super::run::RunExtras;"));
    let p = problems(&cycle);
    assert!(
        p.iter()
            .any(|s| s.contains("inside live/") && s.contains("live::run -> live::setup")),
        "{p:?}"
    );
}
