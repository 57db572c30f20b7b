//! The user documents: the README is a front page (short, with the two
//! commands CI relies on and a C example that compiles and runs), every
//! relative link in a user document leads somewhere, and no user document
//! speaks of the tracker's issue numbers.

mod common;

use std::path::{Path, PathBuf};

/// Every Markdown file a user reads: the README, CHANGELOG, SECURITY,
/// everything under docs/ (guides and measurement logs) and the bindings'
/// READMEs.
fn user_documents() -> Vec<PathBuf> {
    let root = common::manifest_dir();
    let mut files: Vec<PathBuf> = ["README.md", "CHANGELOG.md", "SECURITY.md", "THIRD-PARTY.md"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    walk(&root.join("docs"), &mut files);
    for f in ["bindings/python/README.md", "bindings/go/README.md"] {
        if root.join(f).exists() {
            files.push(root.join(f));
        }
    }
    files
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_readme_is_a_front_page() {
    let readme = read(&common::manifest_dir().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines: it is the front page; guides belong in docs/"
    );
    for link in [
        "docs/cli.md",
        "docs/c-api.md",
        "docs/performance.md",
        "SECURITY.md",
        "CHANGELOG.md",
    ] {
        assert!(
            readme.contains(&format!("]({link}")),
            "README.md does not link {link}"
        );
    }
}

#[test]
fn the_readme_gives_the_two_commands_and_ci_runs_the_test_command() {
    let root = common::manifest_dir();
    let readme = read(&root.join("README.md"));
    let main_job = "./.ci/deps && cargo build --release && ./target/release/primeforge dhparam";
    let tests = "./.ci/deps && cargo test --release";
    assert!(
        readme.contains(main_job),
        "the README lost the main-job command"
    );
    assert!(readme.contains(tests), "the README lost the test command");
    let ci = read(&root.join(".ci/run"));
    assert!(
        ci.contains("cargo test --release"),
        ".ci/run must run the README's test command"
    );
}

/// The first ```c block of the README compiles with the house's strict
/// flags and makes a key.
#[test]
fn the_readme_c_example_compiles_and_runs() {
    let readme = read(&common::manifest_dir().join("README.md"));
    let start = readme.find("```c\n").expect("a C example in the README") + 5;
    let len = readme[start..].find("```").unwrap();
    let src = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("readme_example.c");
    std::fs::write(&src, &readme[start..start + len]).unwrap();
    let exe = common::compile_c("readme_example", &[&src], &[]);
    let r = common::run_ok(&exe, &[]);
    assert!(
        r.stdout.starts_with("-----BEGIN PRIVATE KEY-----\n"),
        "{}",
        r.stdout
    );
}

/// GitHub's anchor for a heading: lower case, spaces to hyphens,
/// punctuation other than hyphens and underscores dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The lines of a Markdown text outside its fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fence = false;
    text.lines()
        .filter(|line| {
            if line.starts_with("```") {
                fence = !fence;
                return false;
            }
            !fence
        })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    prose(text)
        .into_iter()
        .filter(|line| line.starts_with('#'))
        .map(|line| anchor(line.trim_start_matches('#')))
        .collect()
}

/// `(target)` of every `[text](target)` outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            match after.find(')') {
                Some(j) => {
                    out.push(after[..j].to_owned());
                    rest = &after[j..];
                }
                None => break,
            }
        }
    }
    out
}

#[test]
fn every_relative_link_in_the_user_documents_resolves() {
    let mut broken = Vec::new();
    for doc in user_documents() {
        let text = read(&doc);
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, frag) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                doc.clone()
            } else {
                doc.parent().unwrap().join(file)
            };
            if !path.exists() {
                broken.push(format!("{}: {target} (no such file)", doc.display()));
                continue;
            }
            if let Some(frag) = frag {
                if path.extension().is_some_and(|e| e == "md")
                    && !anchors(&read(&path)).iter().any(|a| a == frag)
                {
                    broken.push(format!("{}: {target} (no such heading)", doc.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// "issue 20", "issues 17 and 20", "#42": tracker references mean nothing
/// to a user. ("PKCS#8" and the like are not references.)
fn issue_references(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let bytes = lower.as_bytes();
    let digits_from = |mut j: usize| {
        while bytes.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        j
    };
    let mut found = Vec::new();
    let mut covered = Vec::new(); // "issue #7" is one reference, not two
    for (i, _) in lower.match_indices("issue") {
        let mut j = i + 5;
        if bytes.get(j) == Some(&b's') {
            j += 1;
        }
        while bytes.get(j) == Some(&b' ') {
            j += 1;
        }
        if bytes.get(j) == Some(&b'#') {
            j += 1;
        }
        if bytes.get(j).is_some_and(u8::is_ascii_digit) {
            let end = digits_from(j);
            found.push(lower[i..end].to_owned());
            covered.push(i..end);
        }
    }
    for (i, _) in lower.match_indices('#') {
        let alnum_before = i
            .checked_sub(1)
            .is_some_and(|k| bytes[k].is_ascii_alphanumeric());
        if !covered.iter().any(|r| r.contains(&i))
            && !alnum_before
            && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
        {
            found.push(lower[i..digits_from(i + 1)].to_owned());
        }
    }
    found
}

#[test]
fn user_documents_carry_no_issue_numbers() {
    assert_eq!(
        issue_references("see issue 20 and issues #7"),
        ["issue 20", "issues #7"]
    );
    assert_eq!(issue_references("fixed in #42."), ["#42"]);
    assert_eq!(issue_references("#5, then issue #6"), ["issue #6", "#5"]);
    assert!(issue_references("PKCS#8 and PKCS#12; an issue with 3 keys").is_empty());
    let mut found = Vec::new();
    for doc in user_documents() {
        for r in issue_references(&read(&doc)) {
            found.push(format!("{}: {r}", doc.display()));
        }
    }
    assert!(
        found.is_empty(),
        "tracker references in user documents:\n{}",
        found.join("\n")
    );
}

/// The layout in docs/development.md names only files that exist, and
/// every module folder under src/.
#[test]
fn the_layout_matches_the_tree() {
    let root = common::manifest_dir();
    let text = read(&root.join("docs/development.md"));
    fn files(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    files(&path, out);
                }
            } else {
                out.push(name);
            }
        }
    }
    let mut names = Vec::new();
    for dir in ["src", "cli", "bench", "provider", "tests", "bindings"] {
        files(&root.join(dir), &mut names);
    }
    let mut missing = Vec::new();
    for quoted in text.split('`').skip(1).step_by(2) {
        if let Some(name) = quoted.strip_suffix(".rs") {
            let file = format!("{}.rs", name.rsplit('/').next().unwrap());
            if !names.contains(&file) {
                missing.push(quoted.to_owned());
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/development.md names files that do not exist: {missing:?}"
    );
    for entry in std::fs::read_dir(root.join("src")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                text.contains(&format!("`src/{name}/`")),
                "docs/development.md's layout does not mention src/{name}/"
            );
        }
    }
}
