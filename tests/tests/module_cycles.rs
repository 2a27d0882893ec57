//! No two modules of a crate depend on each other, directly or through others: the `use`
//! graph of every crate of the workspace is acyclic.
//!
//! A module is a file under `src/` (`a/b.rs` and `a/b/mod.rs` are `a::b`; a `mod x { .. }`
//! block belongs to its file). A module depends on another when it names it or an item in it:
//! in a `use` declaration, or in a path starting with `crate::`, `super::`, `self::` or a
//! name such a `use` brought in. Two kinds of reference are not dependencies: a module's
//! references to its own submodules (declaring and re-exporting its parts is the parent's
//! job, as a module map), and references inside `#[cfg(test)]` blocks (tests may look
//! anywhere). A group of modules that reach each other is reported with the references that
//! close the circle, so the fix is to move what two of them share into a module both can
//! use.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The crates of the workspace: every member with a `src/lib.rs`.
fn crates(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file() && p.join("src/lib.rs").is_file())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn no_crate_of_the_workspace_has_a_module_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let crates = crates(root);
    assert!(crates.len() >= 6, "the workspace's crates: {crates:?}");
    let mut report = String::new();
    let mut references = 0;
    for dir in &crates {
        let graph = Graph::of_crate(&dir.join("src"));
        references += graph.edges.values().map(BTreeMap::len).sum::<usize>();
        for cycle in graph.cycles() {
            let name = dir.file_name().unwrap().to_string_lossy();
            writeln!(report, "{name}: {}", cycle.join("\n    ")).unwrap();
        }
    }
    assert!(
        references > 500,
        "only {references} references between modules read"
    );
    assert!(
        report.is_empty(),
        "modules that depend on each other (move what they share into a module both use):\n{report}"
    );
}

#[test]
fn the_check_finds_a_cycle_through_three_modules_and_nothing_in_a_clean_tree() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |path: &str, text: &str| {
        let p = src.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    // A parent naming its parts, parts naming their parent, test code anywhere, comments,
    // strings and aliases: no cycle.
    write(
        "lib.rs",
        "pub mod a; pub mod b; pub mod c;\npub use a::A;\n// crate::c::C\n",
    );
    write(
        "a/mod.rs",
        "pub mod inner;\npub use inner::I;\npub struct A;\nfn f() { inner::go(); }\n",
    );
    write(
        "a/inner.rs",
        "use super::A;\npub struct I;\npub fn go() {}\n#[cfg(test)]\nmod tests { use crate::c::C; }\n",
    );
    write(
        "b.rs",
        "use crate::a;\nfn f() -> a::inner::I { let _s = \"crate::c\"; todo!() }\n",
    );
    write(
        "c.rs",
        "use crate::{a::A, b as bee};\npub struct C;\nmod m { use super::super::a; }\n",
    );
    assert_eq!(Graph::of_crate(src).cycles(), Vec::<Vec<String>>::new());

    // a::inner -> c (outside tests now) -> b -> a::inner: one cycle of three, with the
    // references that close it, found also through an alias and a `super::super`.
    write(
        "a/inner.rs",
        "use super::A;\npub struct I;\npub fn go() { crate::c::f(); }\n",
    );
    write(
        "c.rs",
        "use crate::{a::A, b as bee};\npub struct C;\npub fn f() { bee::f(); }\n",
    );
    let cycles = Graph::of_crate(src).cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(
        cycles[0],
        [
            "a/inner.rs -> c.rs (crate::c::f)",
            "b.rs -> a/inner.rs (a::inner::I)",
            "c.rs -> b.rs (crate::b)",
        ]
    );

    // The same through a child reaching its grandparent's sibling.
    write(
        "c.rs",
        "use crate::b;\npub fn f() {}\nmod m { use super::super::b; }\n",
    );
    write("b.rs", "fn f() { crate::c::f(); }\n");
    let cycles = Graph::of_crate(src).cycles();
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert_eq!(cycles[0][0], "b.rs -> c.rs (crate::c::f)");
}

/// The modules of one crate and the references between them.
struct Graph {
    /// Module path (`["a", "b"]`) to its file, relative to `src/`.
    files: BTreeMap<Vec<String>, String>,
    /// From file to file: the first path that makes the reference.
    edges: BTreeMap<String, BTreeMap<String, String>>,
    /// The names each module brings in with `use` (re-exported or not, its submodules see
    /// them), to the absolute paths they stand for.
    imports: BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
}

impl Graph {
    fn of_crate(src: &Path) -> Graph {
        let mut files = BTreeMap::new();
        collect(src, src, &mut files);
        let mut graph = Graph {
            files,
            edges: BTreeMap::new(),
            imports: BTreeMap::new(),
        };
        let modules: Vec<(Vec<String>, String)> = graph
            .files
            .iter()
            .map(|(m, f)| (m.clone(), f.clone()))
            .collect();
        let mut found = Vec::new();
        for (module, file) in modules {
            let text = std::fs::read_to_string(src.join(&file)).unwrap();
            let (refs, imports) = references(&module, &tokens(&strip(&text)));
            graph.imports.insert(module.clone(), imports);
            found.push((module, file, refs));
        }
        for (module, file, refs) in found {
            for (path, written) in refs {
                let Some((to_module, to_file)) = graph.file_of(&path) else {
                    continue;
                };
                // Its own parts (and itself) are not a dependency of a module.
                if to_module.starts_with(&module) {
                    continue;
                }
                graph
                    .edges
                    .entry(file.clone())
                    .or_default()
                    .entry(to_file)
                    .or_insert_with(|| written.join("::"));
            }
        }
        graph
    }

    /// The file of the deepest module that `path` (absolute) names, through the names
    /// modules import (a re-export leads to the module that defines the item).
    fn file_of(&self, path: &[String]) -> Option<(Vec<String>, String)> {
        let mut path = path.to_vec();
        for _ in 0..16 {
            let n = (0..=path.len())
                .rev()
                .find(|&n| self.files.contains_key(&path[..n]))?;
            let imported = path
                .get(n)
                .and_then(|name| self.imports.get(&path[..n])?.get(name));
            match imported {
                Some(target) if !target.starts_with(&path[..=n]) => {
                    let mut next = target.clone();
                    next.extend(path[n + 1..].iter().cloned());
                    path = next;
                }
                _ => return Some((path[..n].to_vec(), self.files[&path[..n]].clone())),
            }
        }
        None
    }

    /// Every group of two or more files that reach each other (strongly connected
    /// components), each as its closing references, sorted.
    fn cycles(&self) -> Vec<Vec<String>> {
        let nodes: Vec<&String> = self.files.values().collect();
        let index: BTreeMap<&String, usize> =
            nodes.iter().enumerate().map(|(i, f)| (*f, i)).collect();
        let succ: Vec<Vec<usize>> = nodes
            .iter()
            .map(|f| {
                self.edges
                    .get(*f)
                    .map(|e| e.keys().map(|t| index[t]).collect())
                    .unwrap_or_default()
            })
            .collect();
        let mut out = Vec::new();
        for component in strongly_connected(&succ) {
            if component.len() < 2 {
                continue;
            }
            let members: BTreeSet<&String> = component.iter().map(|&i| nodes[i]).collect();
            let mut lines = Vec::new();
            for from in &members {
                for (to, path) in self.edges.get(*from).into_iter().flatten() {
                    if members.contains(to) {
                        lines.push(format!("{from} -> {to} ({path})"));
                    }
                }
            }
            out.push(lines);
        }
        out.sort();
        out
    }
}

/// Tarjan's algorithm, iterative.
fn strongly_connected(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = succ.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    for start in 0..n {
        if index[start] != usize::MAX {
            continue;
        }
        let mut work = vec![(start, 0usize)];
        index[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if *i < succ[v].len() {
                let w = succ[v][*i];
                *i += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                loop {
                    let w = stack.pop().unwrap();
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(component);
            }
        }
    }
    out
}

/// Every `.rs` file under `dir` as a module of the crate rooted at `src` (its `main.rs` and
/// `bin/` are other crates).
fn collect(src: &Path, dir: &Path, files: &mut BTreeMap<Vec<String>, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let rel = path
            .strip_prefix(src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if path.is_dir() {
            if rel != "bin" {
                collect(src, &path, files);
            }
            continue;
        }
        if !rel.ends_with(".rs") || rel == "main.rs" {
            continue;
        }
        let mut module: Vec<String> = rel
            .trim_end_matches(".rs")
            .split('/')
            .map(str::to_string)
            .collect();
        if module.last().is_some_and(|l| l == "mod" || l == "lib") {
            module.pop();
        }
        files.insert(module, rel);
    }
}

/// The source without comments, strings and character literals (each replaced by a space).
fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        if at(&c, i) == '/' && at(&c, i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if at(&c, i) == '/' && at(&c, i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(&c, i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(&c, i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if (at(&c, i) == 'r' || (at(&c, i) == 'b' && at(&c, i + 1) == 'r'))
            && !prev_is_ident(&c, i)
            && {
                let k = if at(&c, i) == 'b' { 1 } else { 0 } + 1;
                let mut j = k;
                while at(&c, i + j) == '#' {
                    j += 1;
                }
                at(&c, i + j) == '"'
            }
        {
            // A raw string: r"..", r#".."#, br"..".
            i += if at(&c, i) == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while at(&c, i) == '#' {
                hashes += 1;
                i += 1;
            }
            i += 1;
            while i < c.len() {
                if c[i] == '"' && (1..=hashes).all(|k| at(&c, i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push(' ');
        } else if at(&c, i) == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else if at(&c, i) == '\'' && at(&c, i + 1) == '\\' {
            i += 2;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push(' ');
        } else if at(&c, i) == '\'' && at(&c, i + 2) == '\'' {
            i += 3;
            out.push(' ');
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn at(c: &[char], i: usize) -> char {
    c.get(i).copied().unwrap_or('\0')
}

fn prev_is_ident(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// Identifiers, `::` and single punctuation characters.
fn tokens(text: &str) -> Vec<String> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if c[i].is_alphanumeric() || c[i] == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(c[start..i].iter().collect());
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else if c[i].is_whitespace() {
            i += 1;
        } else {
            out.push(c[i].to_string());
            i += 1;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// A reference: the absolute path, and the path as written.
type Reference = (Vec<String>, Vec<String>);

/// The absolute paths that the module `module` names, with the paths as written, and the
/// names its `use` declarations bring in at its top level.
fn references(module: &[String], t: &[String]) -> (Vec<Reference>, BTreeMap<String, Vec<String>>) {
    // Inline modules open at each brace depth; `true` for a `#[cfg(test)]` one.
    let mut inline: Vec<(String, usize, bool)> = Vec::new();
    let mut depth = 0;
    // Names a `use` brought in, to the absolute path they stand for.
    let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut top_level: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut out = Vec::new();
    let mut i = 0;
    let mut cfg_test = false;
    while i < t.len() {
        let here = |inline: &[(String, usize, bool)]| -> Vec<String> {
            let mut m = module.to_vec();
            m.extend(inline.iter().map(|(n, _, _)| n.clone()));
            m
        };
        let in_test = inline.iter().any(|(_, _, test)| *test);
        match t[i].as_str() {
            "#" if t.get(i + 1).map(String::as_str) == Some("[")
                && t.get(i + 2).map(String::as_str) == Some("cfg")
                && t.get(i + 4).map(String::as_str) == Some("test")
                && t.get(i + 5).map(String::as_str) == Some(")") =>
            {
                cfg_test = true;
                i += 6;
                continue;
            }
            "mod" if t.get(i + 2).map(String::as_str) == Some("{") => {
                depth += 1;
                inline.push((t[i + 1].clone(), depth, cfg_test || in_test));
                cfg_test = false;
                i += 3;
                continue;
            }
            "{" => depth += 1,
            "}" => {
                if inline.last().is_some_and(|(_, d, _)| *d == depth) {
                    inline.pop();
                }
                depth -= 1;
            }
            "use" => {
                let end = (i..t.len()).find(|&k| t[k] == ";").unwrap_or(t.len());
                let base = here(&inline);
                for (written, alias) in use_tree(&t[i + 1..end]) {
                    if let Some(abs) = absolute(&base, &written, &aliases) {
                        if !in_test && !cfg_test {
                            out.push((abs.clone(), written.clone()));
                        }
                        if let Some(name) = alias {
                            if inline.is_empty() && depth == 0 {
                                top_level.insert(name.clone(), abs.clone());
                            }
                            aliases.insert(name, abs);
                        }
                    }
                }
                cfg_test = false;
                i = end + 1;
                continue;
            }
            tok if is_ident(tok)
                && t.get(i + 1).map(String::as_str) == Some("::")
                && (i == 0 || t[i - 1] != "::") =>
            {
                let mut written = vec![tok.to_string()];
                let mut k = i + 1;
                while t.get(k).map(String::as_str) == Some("::")
                    && t.get(k + 1).is_some_and(|s| is_ident(s))
                {
                    written.push(t[k + 1].clone());
                    k += 2;
                }
                if !in_test && let Some(abs) = absolute(&here(&inline), &written, &aliases) {
                    out.push((abs, written));
                }
                i = k;
                continue;
            }
            ";" | "fn" | "struct" | "enum" | "impl" => cfg_test = false,
            _ => {}
        }
        i += 1;
    }
    (out, top_level)
}

/// `written` as seen from the module `here`: `crate::`, `super::`, `self::` or an alias.
fn absolute(
    here: &[String],
    written: &[String],
    aliases: &BTreeMap<String, Vec<String>>,
) -> Option<Vec<String>> {
    let mut path: Vec<String>;
    let mut rest = written;
    match written.first()?.as_str() {
        "crate" => {
            path = Vec::new();
            rest = &written[1..];
        }
        "self" | "super" => {
            path = here.to_vec();
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "self" => {}
                    "super" => {
                        path.pop()?;
                    }
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        first => {
            path = aliases.get(first)?.clone();
            rest = &written[1..];
        }
    }
    path.extend(rest.iter().cloned());
    Some(path)
}

/// The paths of a `use` tree (the tokens between `use` and `;`), each with the name it
/// brings in (none for a glob).
fn use_tree(t: &[String]) -> Vec<(Vec<String>, Option<String>)> {
    let mut out = Vec::new();
    walk(t, &mut Vec::new(), &mut out);
    out
}

fn walk(t: &[String], prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    // Split at top-level commas.
    let mut level = 0;
    let mut part_start = 0;
    let mut parts = Vec::new();
    for (k, s) in t.iter().enumerate() {
        match s.as_str() {
            "{" => level += 1,
            "}" => level -= 1,
            "," if level == 0 => {
                parts.push(&t[part_start..k]);
                part_start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&t[part_start..]);
    for part in parts {
        let mut segs = Vec::new();
        let mut k = 0;
        while k < part.len() {
            match part[k].as_str() {
                "::" => {}
                "{" => {
                    let len = prefix.len();
                    prefix.extend(segs.iter().cloned());
                    walk(&part[k + 1..part.len() - 1], prefix, out);
                    prefix.truncate(len);
                    segs.clear();
                    k = part.len();
                    continue;
                }
                "*" => {
                    let mut p = prefix.clone();
                    p.append(&mut segs);
                    out.push((p, None));
                    k = part.len();
                    continue;
                }
                "as" => {
                    let mut p = prefix.clone();
                    p.append(&mut segs);
                    out.push((p, part.get(k + 1).cloned().filter(|n| n != "_")));
                    k = part.len();
                    continue;
                }
                s if is_ident(s) => segs.push(s.to_string()),
                _ => {}
            }
            k += 1;
        }
        if !segs.is_empty() {
            let mut p = prefix.clone();
            p.extend(segs);
            // `a::b::{self}` names `b`.
            if p.last().is_some_and(|l| l == "self") {
                p.pop();
            }
            let name = p.last().cloned();
            out.push((p, name));
        }
    }
}
