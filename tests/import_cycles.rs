//! Checks that no source file in the workspace depends on itself through other
//! files of its crate. Cargo already rejects cycles between crates, but inside
//! a crate rustc accepts any tangle of `use`s, so this test builds the
//! file-level dependency graph of every crate and fails with a report of each
//! cycle: every strongly connected component of more than one file, with the
//! edges `a.rs -> b.rs (via crate::x::Y at line N)` that form it.
//!
//! Rules (file A depends on file B):
//! - Module tree: a file no `mod x;` declares (`lib.rs`, `main.rs`,
//!   `tests/foo.rs`) is a crate root; `foo.rs` or `foo/mod.rs` is module `foo`,
//!   nested likewise. A `mod x;` declaration is containment, not an edge.
//! - Paths considered: those in `use` declarations (nested groups, globs,
//!   `pub use`) and qualified paths written in code, when they start with
//!   `crate::`, `super::`, `self::`, a child module of the current module, or a
//!   module a `use` in the file named (`use crate::ops;` then `ops::insert`).
//!   Paths into other crates are not edges.
//! - A path resolves to the file of its longest prefix that is a module. If the
//!   next segment is re-exported there (`pub use`, `pub(crate) use`), it is
//!   followed to the defining file, a few hops deep: `crate::Error` means
//!   `error.rs`, not `lib.rs`. The re-export itself is an edge to that file.
//! - Inline modules (`mod tests { .. }`) belong to their file, so `super::`
//!   inside them is no edge; their imports of other files count like any other.
//! - Comments and string/char literals are skipped; self-edges are ignored.
//!
//! The same graph checks a declared order of rooms (a crate's top-level
//! folders and files): [`ROOMS`] lists each crate's rooms from the bottom
//! up, and an import from a room to one listed after it runs upward. The
//! test fails when a crate has more upward room pairs than its bound, or a
//! file in a room the list does not name. Run it alone with
//! `cargo test --test integration import_cycles`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::Path;

/// Source text keyed by path relative to the workspace root, `/`-separated.
type Files = BTreeMap<String, String>;
type ModPath = Vec<String>;
/// (from, to) -> the places `from` refers to `to`, as `crate::x::Y at line N`.
type Edges = BTreeMap<(String, String), Vec<String>>;

#[test]
fn workspace_has_no_import_cycles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = workspace_sources(root);
    for krate in ["config", "lang", "storage", "actors", "repl", "node"] {
        let lib = format!("{krate}/src/lib.rs");
        assert!(files.contains_key(&lib), "{lib} missing under {root:?}");
    }
    let cycles = find_cycles(&files);
    assert!(cycles.is_empty(), "{}", report(&cycles));
}

/// Each crate's rooms from the bottom up, and how many room pairs may still
/// import upward. A room may use its own files and the rooms before it.
const ROOMS: &[(&str, &[&str], usize)] = &[(
    "storage/src",
    &[
        "engine",
        "catalog",
        "capped",
        "index",
        "collection",
        "changes",
        "ttl",
        "write",
        "timeseries",
        "plan",
        "statement",
        "stats",
        "integrity",
    ],
    2,
)];

#[test]
fn rooms_import_in_their_declared_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = workspace_sources(root);
    let edges = edges(&files);
    for (src, order, bound) in ROOMS {
        let upward = upward_imports(&files, &edges, src, order);
        assert!(
            upward.len() <= *bound,
            "{}",
            room_report(src, &upward, *bound)
        );
    }
}

/// A file's room: the first path component below `src`, without `.rs`;
/// `None` for the crate root and for files only tests compile (`tests.rs`,
/// `*_tests.rs`, the `testing.rs` fixtures), which may reach anywhere and
/// be reached from anywhere.
fn room<'a>(src: &str, file: &'a str) -> Option<&'a str> {
    let rel = file.strip_prefix(src)?.strip_prefix('/')?;
    let stem = rel.rsplit('/').next()?.trim_end_matches(".rs");
    if rel == "lib.rs" || stem == "tests" || stem == "testing" || stem.ends_with("_tests") {
        return None;
    }
    let first = rel.split('/').next()?;
    Some(first.trim_end_matches(".rs"))
}

/// (lower room, higher room) -> the edges that run from the first to the
/// second; a file in a room `order` does not name panics with its path.
fn upward_imports(files: &Files, edges: &Edges, src: &str, order: &[&str]) -> Edges {
    let rank = |file: &str| {
        let room = room(src, file)?;
        let at = order.iter().position(|r| *r == room);
        Some(at.unwrap_or_else(|| panic!("{file}: room `{room}` is not in the order of {src}")))
    };
    for file in files.keys() {
        rank(file);
    }
    let mut upward = Edges::new();
    for ((from, to), vias) in edges {
        if let (Some(a), Some(b)) = (rank(from), rank(to))
            && a < b
        {
            let pair = (order[a].to_string(), order[b].to_string());
            let via = vias.iter().map(|v| format!("{from} -> {to} ({v})"));
            upward.entry(pair).or_default().extend(via);
        }
    }
    upward
}

fn room_report(src: &str, upward: &Edges, bound: usize) -> String {
    let mut out = format!(
        "{} upward room import(s) in {src}, at most {bound} allowed:\n",
        upward.len()
    );
    for ((from, to), vias) in upward {
        writeln!(out, "  {from} -> {to}").unwrap();
        for via in vias {
            writeln!(out, "    {via}").unwrap();
        }
    }
    out
}

/// Every `.rs` file under `src`, `tests`, `benches` and `examples` of the root
/// package and of each workspace member.
fn workspace_sources(root: &Path) -> Files {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    let mut files = Files::new();
    for package in std::iter::once(String::new()).chain(workspace_members(&manifest)) {
        for sub in ["src", "tests", "benches", "examples"] {
            walk(root, &root.join(&package).join(sub), &mut files);
        }
    }
    files
}

/// The quoted names in the manifest's `members = [...]` list.
fn workspace_members(manifest: &str) -> Vec<String> {
    let list = manifest.split("members").nth(1).unwrap_or("[]");
    let list = &list[list.find('[').unwrap() + 1..list.find(']').unwrap()];
    let names = list.split(',').map(|m| m.trim().trim_matches('"'));
    names.filter(|m| !m.is_empty()).map(String::from).collect()
}

fn walk(root: &Path, dir: &Path, files: &mut Files) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.map(|e| e.expect("read dir entry").path()) {
        if path.is_dir() {
            walk(root, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let parts = path.strip_prefix(root).unwrap().components();
            let rel: Vec<_> = parts.map(|c| c.as_os_str().to_string_lossy()).collect();
            files.insert(rel.join("/"), std::fs::read_to_string(&path).unwrap());
        }
    }
}

// ---- Lexing: only identifiers, `::` and punctuation survive, with lines ----

fn is_ident_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

fn is_ident(tok: &str) -> bool {
    tok.starts_with(|c: char| is_ident_char(c) && !c.is_ascii_digit())
}

fn at(cs: &[char], k: usize) -> char {
    cs.get(k).copied().unwrap_or('\0')
}

/// Index of the first char from `i` on that matches `stop`, or the end.
fn find(cs: &[char], i: usize, stop: impl Fn(char) -> bool) -> usize {
    (i..cs.len()).find(|&k| stop(cs[k])).unwrap_or(cs.len())
}

/// Drops whitespace, comments, literals and lifetimes, so that prose and
/// strings mentioning `crate::x` are never taken for paths.
fn tokenize(src: &str) -> Vec<(String, usize)> {
    let cs: Vec<char> = src.chars().collect();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    while i < cs.len() {
        let (start, c, next) = (i, cs[i], at(&cs, i + 1));
        let mut tok = None;
        match c {
            '/' if next == '/' => i = find(&cs, i, |c| c == '\n'),
            '/' if next == '*' => i = skip_block_comment(&cs, i),
            '"' => i = skip_string(&cs, i + 1),
            '\'' => i = skip_quote(&cs, i),
            ':' if next == ':' => (tok, i) = (Some("::".to_string()), i + 2),
            c if is_ident_char(c) => {
                i = find(&cs, i, |c| !is_ident_char(c));
                let word: String = cs[start..i].iter().collect();
                match (word.as_str(), at(&cs, i)) {
                    ("r" | "br" | "cr", '"' | '#') if raw_string_at(&cs, i) => i = skip_raw(&cs, i),
                    ("b" | "c", '"') => i = skip_string(&cs, i + 1),
                    ("b", '\'') => i = skip_quote(&cs, i),
                    _ if is_ident(&word) => tok = Some(word),
                    _ => {} // a number
                }
            }
            c => (tok, i) = ((!c.is_whitespace()).then(|| c.to_string()), i + 1),
        }
        i = i.min(cs.len()); // an unterminated literal ends the file
        out.extend(tok.map(|t| (t, line)));
        line += cs[start..i].iter().filter(|&&c| c == '\n').count();
    }
    out
}

/// Past a (nestable) `/* */` comment starting at `i`.
fn skip_block_comment(cs: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < cs.len() {
        match (cs[i], at(cs, i + 1)) {
            ('/', '*') => depth += 1,
            ('*', '/') => depth -= 1,
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
        if depth == 0 {
            break;
        }
    }
    i
}

/// Past the closing quote of a string whose body starts at `i`.
fn skip_string(cs: &[char], mut i: usize) -> usize {
    while i < cs.len() && cs[i] != '"' {
        i += if cs[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// Whether `i` (just after `r`, `br` or `cr`) starts `#`s then `"`.
fn raw_string_at(cs: &[char], i: usize) -> bool {
    at(cs, find(cs, i, |c| c != '#')) == '"'
}

/// Past a raw string whose `#`s (if any) start at `i`.
fn skip_raw(cs: &[char], i: usize) -> usize {
    let hashes = find(cs, i, |c| c != '#') - i;
    let closes = |k: usize| cs[k] == '"' && (1..=hashes).all(|h| at(cs, k + h) == '#');
    let end = (i + hashes + 1..cs.len()).find(|&k| closes(k));
    end.map_or(cs.len(), |k| k + 1 + hashes)
}

/// Past a char literal (`'x'`, `'\''`, `'\u{41}'`) or a lifetime (`'a`).
fn skip_quote(cs: &[char], i: usize) -> usize {
    match (at(cs, i + 1), at(cs, i + 2)) {
        ('\\', _) => find(cs, i + 3, |c| c == '\'') + 1,
        (_, '\'') => i + 3,
        _ => find(cs, i + 1, |c| !is_ident_char(c)),
    }
}

// ---- Scanning one file ----

/// A path as written in a file.
struct Ref {
    /// The inline module it sits in, relative to the file's module.
    scope: ModPath,
    path: ModPath,
    line: usize,
    /// For `use` paths: whether it is `pub`, and the name it binds (`None` for `*`).
    import: Option<(bool, Option<String>)>,
}

/// What one file declares and mentions; module paths relative to the file's.
#[derive(Default)]
struct Scan {
    /// `mod x;` declarations (containment, so never edges).
    mods: Vec<ModPath>,
    /// Inline modules: `mod tests { .. }`.
    inline: Vec<ModPath>,
    refs: Vec<Ref>,
}

/// A `use` leaf: full path, the name it binds (`None` for a glob), line.
type Leaf = (ModPath, Option<String>, usize);

fn scan(src: &str) -> Scan {
    let toks = tokenize(src);
    let tok = |k: usize| toks.get(k).map_or("", |t| t.0.as_str());
    let mut s = Scan::default();
    // Open inline modules, each with the brace depth of its body.
    let mut open: Vec<(String, usize)> = Vec::new();
    let (mut depth, mut i) = (0_usize, 0);
    while i < toks.len() {
        let scope: ModPath = open.iter().map(|(name, _)| name.clone()).collect();
        let back = |k: usize| tok(i.wrapping_sub(k));
        let mut found = Vec::new(); // paths, as (path, line, import)
        match tok(i) {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                open.retain(|&(_, d)| d <= depth);
            }
            "mod" if is_ident(tok(i + 1)) => {
                let inner = join(&scope, &[tok(i + 1).to_string()]);
                if tok(i + 2) == ";" {
                    s.mods.push(inner);
                } else if tok(i + 2) == "{" {
                    open.push((tok(i + 1).to_string(), depth + 1));
                    s.inline.push(inner);
                }
                i += 1;
            }
            // `use<'a>` is precise capturing (`impl Trait + use<'a>`), not an import.
            "use" if tok(i + 1) != "<" => {
                // `pub use`, or `pub(crate) use` and the like.
                let pub_in = |k: usize| back(k) == "pub" && back(k - 1) == "(";
                let public = back(1) == "pub" || (back(1) == ")" && (3..9).any(pub_in));
                let mut leaves = Vec::new();
                i += 1;
                use_tree(&toks, &mut i, Vec::new(), &mut leaves);
                let leaves = leaves.into_iter();
                found.extend(leaves.map(|(path, name, line)| (path, line, Some((public, name)))));
            }
            w if is_ident(w) && tok(i + 1) == "::" && back(1) != "::" => {
                let (mut path, line) = (vec![w.to_string()], toks[i].1);
                while tok(i + 1) == "::" && is_ident(tok(i + 2)) {
                    path.push(tok(i + 2).to_string());
                    i += 2;
                }
                found.push((path, line, None));
            }
            _ => {}
        }
        for (path, line, import) in found {
            let scope = scope.clone();
            s.refs.push(Ref {
                scope,
                path,
                line,
                import,
            });
        }
        i += 1;
    }
    s
}

/// Parses one `use` tree from `i`, pushing each leaf's full path, the name it
/// binds (`None` for a glob) and its line.
fn use_tree(toks: &[(String, usize)], i: &mut usize, mut path: ModPath, out: &mut Vec<Leaf>) {
    let tok = |k: usize| toks.get(k).map_or("", |t| t.0.as_str());
    while *i < toks.len() {
        let (t, line) = (tok(*i), toks[*i].1);
        *i += 1;
        match t {
            "::" => {}
            "*" => return out.push((path, None, line)),
            "{" => {
                while !matches!(tok(*i), "}" | "") {
                    use_tree(toks, i, path.clone(), out);
                    *i += usize::from(tok(*i) == ",");
                }
                *i += 1;
                return;
            }
            w if is_ident(w) && tok(*i) == "::" => path.push(w.to_string()),
            w if is_ident(w) => {
                // `a::{self}` binds module `a` itself.
                if w != "self" {
                    path.push(w.to_string());
                }
                let mut name = path.last().cloned().unwrap_or_default();
                if tok(*i) == "as" {
                    name = tok(*i + 1).to_string();
                    *i += 2;
                }
                return out.push((path, Some(name), line));
            }
            _ => return,
        }
    }
}

// ---- Module tree, resolution and edges ----

fn join(a: &[String], b: &[String]) -> ModPath {
    [a, b].concat()
}

/// Module names bound by a file's `use`s, to absolute module paths.
type Aliases = BTreeMap<String, ModPath>;
/// File -> each (crate root, module path) it is compiled as: a shared
/// `tests/common/mod.rs` belongs to several test crates.
type Homes = BTreeMap<String, Vec<(String, ModPath)>>;

/// One crate's module tree.
#[derive(Default)]
struct Crate {
    /// Module path -> the file holding it (inline modules included).
    modules: BTreeMap<ModPath, String>,
    /// Module path -> name it re-exports -> the path its `pub use` gives.
    reexports: BTreeMap<ModPath, BTreeMap<String, ModPath>>,
}

/// Where the file of module `rel`, declared in `parent`, may be.
fn child_files(parent: &str, rel: &[String]) -> Vec<String> {
    let (dir, file) = parent.rsplit_once('/').unwrap_or(("", parent));
    // `foo.rs` keeps its children in `foo/`; crate roots and `mod.rs` in `./`.
    let mut bases = vec![
        format!("{dir}/{}", file.trim_end_matches(".rs")),
        dir.to_string(),
    ];
    if matches!(file, "mod.rs" | "lib.rs" | "main.rs") {
        bases.remove(0);
    }
    let stems = bases.iter().map(|b| format!("{b}/{}", rel.join("/")));
    let stems: Vec<_> = stems
        .map(|s| s.trim_start_matches('/').to_string())
        .collect();
    stems
        .iter()
        .flat_map(|s| [format!("{s}.rs"), format!("{s}/mod.rs")])
        .collect()
}

/// Walks `mod x;` declarations down from every crate root: a file that no
/// other file declares.
fn homes(files: &Files, scans: &BTreeMap<String, Scan>) -> Homes {
    // File -> the files it declares, with their module paths relative to it.
    let mut children: BTreeMap<&str, Vec<(String, &ModPath)>> = BTreeMap::new();
    for (file, s) in scans {
        for rel in &s.mods {
            let mut found = child_files(file, rel).into_iter();
            let found = found.find(|c| c != file && files.contains_key(c));
            children
                .entry(file)
                .or_default()
                .extend(found.map(|c| (c, rel)));
        }
    }
    let declared: BTreeSet<&String> = children.values().flatten().map(|(c, _)| c).collect();
    let mut homes = Homes::new();
    for root in files.keys().filter(|f| !declared.contains(f)) {
        let mut todo = vec![(root.clone(), ModPath::new())];
        while let Some((file, module)) = todo.pop() {
            let kids = children.get(file.as_str()).into_iter().flatten();
            // The depth bound stops a loop of `mod` declarations.
            let kids = kids.filter(|_| module.len() < 32);
            todo.extend(kids.map(|(child, rel)| (child.clone(), join(&module, rel))));
            homes.entry(file).or_default().push((root.clone(), module));
        }
    }
    homes
}

/// Each crate, by root file, with its modules and re-exports.
fn crates(scans: &BTreeMap<String, Scan>, homes: &Homes) -> BTreeMap<String, Crate> {
    let mut crates: BTreeMap<String, Crate> = BTreeMap::new();
    for (file, home) in homes {
        for (root, module) in home {
            let krate = crates.entry(root.clone()).or_default();
            for inner in std::iter::once(&ModPath::new()).chain(&scans[file].inline) {
                krate
                    .modules
                    .entry(join(module, inner))
                    .or_insert(file.clone());
            }
            for r in &scans[file].refs {
                if let Some((true, Some(name))) = &r.import {
                    let exports = krate.reexports.entry(join(module, &r.scope));
                    exports.or_default().insert(name.clone(), r.path.clone());
                }
            }
        }
    }
    crates
}

impl Crate {
    fn is_module(&self, module: &[String]) -> bool {
        self.modules.contains_key(module)
    }

    /// The absolute path that `path`, written in module `here`, names; `None`
    /// when it leads out of the crate.
    fn absolute(&self, here: &[String], aliases: &Aliases, path: &[String]) -> Option<ModPath> {
        let (first, rest) = path.split_first()?;
        let child = join(here, std::slice::from_ref(first));
        let base = match first.as_str() {
            "crate" => ModPath::new(),
            "self" => here.to_vec(),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                let base = &here[..here.len().checked_sub(ups)?];
                return Some(join(base, &path[ups..]));
            }
            _ if self.is_module(&child) => child,
            name => aliases.get(name)?.clone(),
        };
        Some(join(&base, rest))
    }

    /// The file defining what the absolute path `abs` names, through up to
    /// four re-exports; `None` when a re-export leads out of the crate.
    fn target(&self, abs: &[String], hops: usize) -> Option<&String> {
        let k = (0..=abs.len()).rev().find(|&k| self.is_module(&abs[..k]))?;
        let module = &abs[..k];
        let exports = self.reexports.get(module);
        match abs.get(k).and_then(|item| exports?.get(item)) {
            Some(path) if hops < 4 => {
                let next = self.absolute(module, &Aliases::new(), &join(path, &abs[k + 1..]))?;
                self.target(&next, hops + 1)
            }
            _ => self.modules.get(module),
        }
    }

    /// Modules the file's `use`s bind to a name, so `ops::insert` after
    /// `use crate::ops;` resolves like `crate::ops::insert`.
    fn aliases(&self, module: &[String], refs: &[Ref]) -> Aliases {
        let mut aliases = Aliases::new();
        for r in refs {
            if let Some((_, Some(name))) = &r.import {
                let abs = self.absolute(&join(module, &r.scope), &Aliases::new(), &r.path);
                if let Some(abs) = abs.filter(|abs| self.is_module(abs)) {
                    aliases.insert(name.clone(), abs);
                }
            }
        }
        aliases
    }
}

fn edges(files: &Files) -> Edges {
    let scans: BTreeMap<_, _> = files
        .iter()
        .map(|(f, src)| (f.clone(), scan(src)))
        .collect();
    let homes = homes(files, &scans);
    let crates = crates(&scans, &homes);
    let mut edges = Edges::new();
    for (file, home) in &homes {
        let refs = &scans[file].refs;
        for (root, module) in home {
            let krate = &crates[root];
            let aliases = krate.aliases(module, refs);
            for r in refs {
                let abs = krate.absolute(&join(module, &r.scope), &aliases, &r.path);
                if let Some(to) = abs.and_then(|abs| krate.target(&abs, 0)) {
                    let via = format!("{} at line {}", r.path.join("::"), r.line);
                    let vias = edges.entry((file.clone(), to.clone())).or_default();
                    if !vias.contains(&via) {
                        vias.push(via);
                    }
                }
            }
        }
    }
    edges.retain(|(from, to), _| from != to);
    edges
}

// ---- Cycles and the report ----

/// A strongly connected component of more than one file, with its edges.
struct Cycle {
    files: Vec<String>,
    edges: Edges,
}

fn find_cycles(files: &Files) -> Vec<Cycle> {
    let edges = edges(files);
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    // Reachability from every file: quadratic, but there are only ~150 files.
    let reach: BTreeMap<&str, BTreeSet<&str>> =
        files.keys().map(|f| (&**f, reachable(&next, f))).collect();
    let mut cycles: Vec<Cycle> = Vec::new();
    for (file, forward) in &reach {
        let in_cycle = forward.iter().filter(|f| reach[*f].contains(file));
        let files: Vec<String> = in_cycle.map(|f| f.to_string()).collect();
        let known = cycles.iter().any(|c| c.files.contains(&file.to_string()));
        if files.len() < 2 || known {
            continue;
        }
        let mut edges = edges.clone();
        edges.retain(|(from, to), _| files.contains(from) && files.contains(to));
        cycles.push(Cycle { files, edges });
    }
    cycles
}

/// Files reachable from `start` by one or more edges.
fn reachable<'a>(next: &BTreeMap<&str, Vec<&'a str>>, start: &str) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut todo = next.get(start).cloned().unwrap_or_default();
    while let Some(f) = todo.pop() {
        if seen.insert(f) {
            todo.extend(next.get(f).into_iter().flatten());
        }
    }
    seen
}

fn report(cycles: &[Cycle]) -> String {
    let mut out = format!("{} import cycle(s) between source files:\n", cycles.len());
    for (n, cycle) in cycles.iter().enumerate() {
        let (count, files) = (cycle.files.len(), cycle.files.join(", "));
        writeln!(out, "\ncycle {} ({count} files): {files}", n + 1).unwrap();
        for ((from, to), vias) in &cycle.edges {
            let shown = vias[..vias.len().min(3)].join("; ");
            let more = match vias.len() {
                0..=3 => String::new(),
                n => format!("; {} more", n - 3),
            };
            writeln!(out, "  {from} -> {to} (via {shown}{more})").unwrap();
        }
    }
    out
}

// ---- Tests of the checker itself, on in-memory files ----

/// Fake files from one string, each starting at a `--- path` line.
fn fake(spec: &str) -> Files {
    let files = spec
        .split("--- ")
        .skip(1)
        .map(|f| f.split_once('\n').unwrap());
    files
        .map(|(path, src)| (path.to_string(), src.to_string()))
        .collect()
}

fn edge_list(files: &Files) -> Vec<String> {
    edges(files)
        .keys()
        .map(|(a, b)| format!("{a} -> {b}"))
        .collect()
}

#[test]
fn a_cycle_is_reported_with_its_edges() {
    let files = fake(
        "
--- src/lib.rs
mod a; mod b; mod c;
--- src/a.rs
use crate::b::B;
pub struct A;
--- src/b.rs
pub struct B;
pub fn f(_: crate::a::A) { crate::c::g() }
--- src/c.rs
pub fn g() {}",
    );
    let cycles = find_cycles(&files);
    let text = report(&cycles);
    assert_eq!(cycles.len(), 1, "{text}");
    assert_eq!(cycles[0].files, ["src/a.rs", "src/b.rs"]);
    assert!(
        text.contains("src/a.rs -> src/b.rs (via crate::b::B at line 1)"),
        "{text}"
    );
    assert!(
        text.contains("src/b.rs -> src/a.rs (via crate::a::A at line 2)"),
        "{text}"
    );
    assert!(!text.contains("c.rs"), "{text}");
}

#[test]
fn an_acyclic_tree_is_clean() {
    let files = fake(
        "
--- src/lib.rs
mod a; mod q;
pub use q::Filter;
--- src/a.rs
use crate::{q::{self, filter::Filter as F}, Filter};
fn f() { q::make(); }
--- src/q/mod.rs
pub mod filter;
pub use filter::{Filter, make};
fn g() { filter::make(); }
--- src/q/filter.rs
pub struct Filter;
pub fn make() {}",
    );
    assert!(find_cycles(&files).is_empty());
    let expected = [
        "src/a.rs -> src/q/filter.rs",
        "src/a.rs -> src/q/mod.rs",
        "src/lib.rs -> src/q/filter.rs",
        "src/q/mod.rs -> src/q/filter.rs",
    ];
    assert_eq!(edge_list(&files), expected);
}

#[test]
fn comments_strings_and_chars_are_not_paths() {
    let files = fake(
        r##"
--- src/lib.rs
mod a; mod b; mod c;
--- src/a.rs
pub struct A;
fn h() { crate::b::f("x"); }
--- src/b.rs
//! Mentions crate::a::A in a doc comment.
/* crate::a::A /* nested crate::a::A */ crate::a::A */
fn f<'a>(x: &'a str) -> (&'a str, char, u8) {
    let _ = ("crate::a::A \" crate::a::A", r#"crate::a::A " x"#, b"crate::a::A");
    (x, '"', b'\'')
}
const Q: [char; 2] = ['\"', '\u{22}'];
fn g() { crate::c::C; }
--- src/c.rs
pub struct C;"##,
    );
    assert_eq!(
        edge_list(&files),
        ["src/a.rs -> src/b.rs", "src/b.rs -> src/c.rs"]
    );
    let b_to_c = &edges(&files)[&("src/b.rs".into(), "src/c.rs".into())];
    assert_eq!(b_to_c, &["crate::c::C at line 8"]);
}

#[test]
fn reexports_resolve_to_the_defining_file() {
    let files = fake(
        "
--- src/lib.rs
mod error; mod x;
pub use error::{Error, Result as R};
--- src/error.rs
pub struct Error;
fn f() { crate::x::helper(); }
--- src/x.rs
use crate::R;
pub fn helper() -> crate::Error { crate::Error }",
    );
    let cycles = find_cycles(&files);
    assert_eq!(cycles.len(), 1, "{}", report(&cycles));
    assert_eq!(cycles[0].files, ["src/error.rs", "src/x.rs"]);
    let expected = [
        "src/error.rs -> src/x.rs",
        "src/lib.rs -> src/error.rs",
        "src/x.rs -> src/error.rs",
    ];
    assert_eq!(edge_list(&files), expected);
}

#[test]
fn super_inside_an_inline_module_is_the_same_file() {
    let files = fake(
        "
--- src/lib.rs
mod a; mod b;
--- src/a.rs
pub fn f() {}
#[cfg(test)]
mod tests {
    use super::*;
    fn t() { super::f(); }
}
--- src/b.rs
pub fn h() {}
mod tests { use crate::a::f; }
fn g() { super::a::f(); }",
    );
    // b.rs's test module imports a.rs; once it closes, `super` is the crate root.
    assert_eq!(edge_list(&files), ["src/b.rs -> src/a.rs"]);
    let b_to_a = &edges(&files)[&("src/b.rs".into(), "src/a.rs".into())];
    assert_eq!(b_to_a, &["crate::a::f at line 2", "super::a::f at line 3"]);
}

#[test]
fn an_import_of_a_higher_room_is_reported() {
    let files = fake(
        "
--- src/lib.rs
mod low; mod high; mod tests;
--- src/low/mod.rs
pub fn f() { crate::high::g(); }
--- src/high.rs
pub fn g() { crate::low::f(); }
--- src/tests.rs
fn t() { crate::high::g(); }",
    );
    let upward = upward_imports(&files, &edges(&files), "src", &["low", "high"]);
    let pairs: Vec<_> = upward.keys().cloned().collect();
    assert_eq!(pairs, [("low".to_string(), "high".to_string())]);
    let text = room_report("src", &upward, 0);
    assert!(
        text.contains("src/low/mod.rs -> src/high.rs (crate::high::g at line 1)"),
        "{text}"
    );
}
