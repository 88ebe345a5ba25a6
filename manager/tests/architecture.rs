//! docs/architecture.md lists every module of every crate: a newcomer
//! finds each file there with what it is for. This test walks the
//! workspace's crates (the members and the excluded ones of the root
//! Cargo.toml, so a crate added there is covered too) for `.rs` files
//! under `src/`, `benches/`, `examples/` and `fuzz_targets/`, and fails,
//! naming each one, when a file is missing from the page or the page
//! lists a file that does not exist.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The directories of a crate whose `.rs` files are modules, benches or
/// fuzz targets (integration tests are listed by the page but not
/// required).
const MODULE_DIRS: &[&str] = &["src", "benches", "examples", "fuzz_targets"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the manager crate sits in the workspace root")
        .to_path_buf()
}

/// The crate directories named in the root Cargo.toml's `[workspace]`
/// `members` and `exclude` (the fuzz crate is excluded from the build but
/// is still part of the code base).
fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let manifest = root.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let value: toml::Table = text
        .parse()
        .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
    let ws = value
        .get("workspace")
        .and_then(|w| w.as_table())
        .unwrap_or_else(|| panic!("{}: no [workspace] table", manifest.display()));
    let mut dirs = Vec::new();
    for key in ["members", "exclude"] {
        for m in ws.get(key).and_then(|v| v.as_array()).into_iter().flatten() {
            let m = m.as_str().unwrap_or_else(|| {
                panic!("{}: workspace.{key} holds a non-string", manifest.display())
            });
            dirs.push(root.join(m));
        }
    }
    assert!(
        dirs.iter().any(|d| d.ends_with("common")),
        "{}: no `common` member found; the walk would check nothing",
        manifest.display()
    );
    dirs
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let path = e.expect("a readable directory entry").path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// Every module file of the workspace, relative to its root, with `/`.
fn module_files(root: &Path) -> BTreeSet<String> {
    let mut files = Vec::new();
    for c in crate_dirs(root) {
        for d in MODULE_DIRS {
            walk(&c.join(d), &mut files);
        }
    }
    files
        .iter()
        .map(|p| {
            p.strip_prefix(root)
                .expect("under the root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect()
}

/// The `.rs` paths the page names in backticks (`common/src/sim.rs`).
fn listed_files(doc: &str) -> BTreeSet<String> {
    doc.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.ends_with(".rs") && s.contains('/') && !s.contains(' '))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_module_is_listed_in_the_architecture_doc() {
    let root = workspace_root();
    let doc_path = root.join("docs/architecture.md");
    let doc = std::fs::read_to_string(&doc_path)
        .unwrap_or_else(|e| panic!("{}: {e}", doc_path.display()));
    let modules = module_files(&root);
    assert!(
        modules.contains("common/src/sim.rs") && modules.len() > 50,
        "the walk found {} files; it should find every module: {modules:?}",
        modules.len()
    );
    let listed = listed_files(&doc);
    let missing: Vec<&String> = modules.iter().filter(|m| !listed.contains(*m)).collect();
    let stale: Vec<&String> = listed
        .iter()
        .filter(|l| !modules.contains(*l) && !root.join(l).exists())
        .collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/architecture.md is out of step with the code.\n\
         Missing (add a line `| \\`path\\` | what it is for |` to the crate's table): {missing:#?}\n\
         Listed but not found (remove or rename the line): {stale:#?}"
    );
}

#[test]
fn the_listing_reads_paths_in_backticks_only() {
    let doc = "| `common/src/a.rs` | x |\n`b.rs` alone, `not a/path.rs`, common/src/c.rs bare, `net/src/d.rs`";
    let listed = listed_files(doc);
    let want: BTreeSet<String> = ["common/src/a.rs", "net/src/d.rs"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(listed, want);
}
