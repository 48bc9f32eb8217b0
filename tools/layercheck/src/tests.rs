//! Small fake crates written to temporary folders, checked end to end.

use std::fs;
use std::path::{Path, PathBuf};

use crate::layers::Layers;
use crate::{check_crate, graph, model};

/// A fake crate's folder, removed when the test is done with it (pass or fail).
struct FakeCrate(PathBuf);

impl std::ops::Deref for FakeCrate {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl Drop for FakeCrate {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A fresh folder under the system temp dir holding `files` (path, contents).
fn fake_crate(test: &str, files: &[(&str, &str)]) -> FakeCrate {
    let dir = std::env::temp_dir().join(format!("layercheck-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    for (path, text) in files {
        let path = dir.join(path);
        fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }
    FakeCrate(dir)
}

/// Edges as "from:line->to" strings.
fn edge_list(dir: &Path) -> Vec<String> {
    let krate = model::load_crate(dir).expect("loads");
    graph::edges(&krate)
        .iter()
        .map(|e| format!("{}:{}->{}", krate.files[e.from], e.line, krate.files[e.to]))
        .collect()
}

fn cycle_count(dir: &Path) -> usize {
    let krate = model::load_crate(dir).expect("loads");
    graph::cycles(krate.files.len(), &graph::edges(&krate)).len()
}

#[test]
fn cycle_through_a_reexport_points_at_the_defining_file() {
    let dir = fake_crate(
        "reexport",
        &[
            ("lib.rs", "mod a;\nmod shapes;\npub use shapes::Square;\n"),
            (
                "shapes/mod.rs",
                "mod square;\npub use self::square::Square;\n",
            ),
            (
                "shapes/square.rs",
                "pub struct Square;\nfn f() { crate::a::helper(); }\n",
            ),
            ("a.rs", "use crate::Square;\npub fn helper() {}\n"),
        ],
    );
    let edges = edge_list(&dir);
    assert!(
        edges.contains(&"a.rs:1->shapes/square.rs".to_string()),
        "{edges:?}"
    );
    assert!(
        edges.contains(&"shapes/square.rs:2->a.rs".to_string()),
        "{edges:?}"
    );
    assert!(!edges
        .iter()
        .any(|e| e.starts_with("a.rs") && e.ends_with("lib.rs")));
    let report = check_crate(&dir, None, false).expect("checks");
    assert_eq!(report.findings, 1, "{}", report.text);
    assert!(report.text.contains("a.rs:1 ->"), "{}", report.text);
}

#[test]
fn cycle_through_super_and_inline_paths() {
    let dir = fake_crate(
        "super",
        &[
            ("main.rs", "mod task;\nfn main() {}\n"),
            (
                "task/mod.rs",
                "mod queue;\npub struct Task;\nfn f() { queue::push(); }\n",
            ),
            (
                "task/queue.rs",
                "pub fn push() {\n    let t: super::Task;\n}\n",
            ),
        ],
    );
    let edges = edge_list(&dir);
    assert!(
        edges.contains(&"task/mod.rs:3->task/queue.rs".to_string()),
        "{edges:?}"
    );
    assert!(
        edges.contains(&"task/queue.rs:2->task/mod.rs".to_string()),
        "{edges:?}"
    );
    assert_eq!(cycle_count(&dir), 1);
}

#[test]
fn glob_import_makes_an_edge_only_where_a_name_is_used() {
    let files = |uses_it: bool| {
        let user = if uses_it {
            "use crate::state::*;\nfn f() -> Pending { todo!() }\npub fn g() {}\n"
        } else {
            "use crate::state::*;\npub fn g() {}\n"
        };
        [
            ("lib.rs", "mod state;\nmod user;\n"),
            (
                "state.rs",
                "pub struct Pending;\nfn h() { crate::user::g() }\n",
            ),
            ("user.rs", user),
        ]
    };
    let used = fake_crate("glob-used", &files(true));
    assert!(edge_list(&used).contains(&"user.rs:2->state.rs".to_string()));
    assert_eq!(cycle_count(&used), 1);
    let unused = fake_crate("glob-unused", &files(false));
    assert_eq!(cycle_count(&unused), 0, "{:?}", edge_list(&unused));
}

#[test]
fn strings_and_comments_make_no_edge() {
    let dir = fake_crate(
        "strings",
        &[
            ("lib.rs", "mod x;\nmod y;\n"),
            ("x.rs", "pub fn f() { crate::y::g(); }\n"),
            (
                "y.rs",
                "pub fn g() { let _ = \"crate::x::f()\"; }\n// crate::x::f\n/// crate::x::f\n",
            ),
        ],
    );
    assert_eq!(edge_list(&dir), vec!["x.rs:1->y.rs".to_string()]);
    assert_eq!(cycle_count(&dir), 0);
}

#[test]
fn use_groups_renames_and_test_modules() {
    let dir = fake_crate(
        "groups",
        &[
            ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
            (
                "a.rs",
                "pub mod inner { pub struct Deep; }\npub struct Top;\n",
            ),
            (
                "b.rs",
                "use crate::{a::{inner::Deep as D, Top}, c};\nfn f() { c::run(); }\n",
            ),
            (
                "c.rs",
                "pub fn run() {}\n#[cfg(test)]\nmod tests { use crate::b::*; }\n",
            ),
        ],
    );
    let edges = edge_list(&dir);
    assert_eq!(edges, vec!["b.rs:1->a.rs", "b.rs:2->c.rs"], "{edges:?}");
}

#[test]
fn layer_breaks_and_uncovered_files() {
    let dir = fake_crate(
        "layers",
        &[
            ("main.rs", "mod arch;\nmod task;\nfn main() {}\n"),
            (
                "arch/mod.rs",
                "pub fn trap() { crate::task::yield_now(); }\n",
            ),
            ("task/mod.rs", "pub fn yield_now() {}\n"),
        ],
    );
    let layers = Layers::parse("arch: arch/ main.rs\ntask: task/ # comment\n").expect("parses");
    let report = check_crate(&dir, Some(&layers), false).expect("checks");
    assert_eq!(report.findings, 1, "{}", report.text);
    assert!(report.text.contains("arch/mod.rs:1 ->"), "{}", report.text);
    let partial = Layers::parse("arch: arch/\n").expect("parses");
    let error = check_crate(&dir, Some(&partial), false)
        .err()
        .expect("uncovered");
    assert!(
        error.contains("main.rs") && error.contains("task/mod.rs"),
        "{error}"
    );
}

#[test]
fn missing_module_file_is_an_error() {
    let dir = fake_crate("missing", &[("lib.rs", "mod gone;\n")]);
    let error = check_crate(&dir, None, false).err().expect("an error");
    assert!(error.contains("mod gone;"), "{error}");
}

#[test]
fn exported_macros_lead_to_their_defining_file() {
    let dir = fake_crate(
        "macros",
        &[
            (
                "main.rs",
                "mod console;\nmod task;\nfn main() { println!(\"hi\"); }\n",
            ),
            (
                "console.rs",
                "#[macro_export]\nmacro_rules! println { () => { $crate::print!() } }\n\
                 #[macro_export]\nmacro_rules! print { () => {} }\n",
            ),
            (
                "task.rs",
                "use crate::println;\nfn f() { if 1 != 2 { crate::print!(); } }\n\
                 macro_rules! here { () => { use $crate::console::Nothing; } }\n",
            ),
        ],
    );
    let edges = edge_list(&dir);
    assert_eq!(
        edges,
        vec![
            "main.rs:3->console.rs",
            "task.rs:1->console.rs",
            "task.rs:2->console.rs",
            "task.rs:3->console.rs",
        ],
        "{edges:?}"
    );
}

#[test]
fn path_attributes_and_super_super() {
    let dir = fake_crate(
        "paths",
        &[
            (
                "lib.rs",
                "#[path = \"platform/riscv.rs\"]\nmod arch;\nmod a;\n",
            ),
            ("platform/riscv.rs", "pub const PAGE: usize = 4096;\n"),
            ("a.rs", "mod b;\n#[path = \"a_extra.rs\"]\nmod extra;\n"),
            ("a_extra.rs", "fn g() { crate::arch::PAGE; }\n"),
            ("a/b.rs", "mod c;\n"),
            (
                "a/b/c.rs",
                "const P: usize = super::super::super::arch::PAGE;\n",
            ),
        ],
    );
    assert_eq!(
        edge_list(&dir),
        vec![
            "a/b/c.rs:1->platform/riscv.rs",
            "a_extra.rs:1->platform/riscv.rs"
        ]
    );
}

#[test]
fn line_rule_skips_tests_folders() {
    let long = "fn f() {}\n".repeat(12);
    let dir = fake_crate(
        "lines",
        &[
            ("src/long.rs", long.as_str()),
            ("src/short.rs", "fn f() {}\n"),
            ("tests/long.rs", long.as_str()),
            ("src/notes.txt", long.as_str()),
        ],
    );
    let found = crate::lines::oversized(std::slice::from_ref(&*dir), 10).expect("walks");
    assert_eq!(found, vec![(dir.join("src/long.rs"), 12)]);
    assert!(crate::lines::oversized(&[dir.join("absent")], 10).is_err());
}
