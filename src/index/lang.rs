//! Definitions from real parsers: which language a file is in (by its extension), and the
//! definitions a tree-sitter parse of it holds — functions, methods, classes, structs, enums,
//! traits, interfaces, impls, modules, types — each with its name and its line range.
//!
//! One table per language says which syntax nodes define something, how their name is found,
//! and whether definitions nest inside them (a class's methods; not a function's locals). The
//! walk never enters a function's body, so it costs far less than the parse.

use tree_sitter::{Language, Node, Parser};

/// A language the index parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Lang {
    /// Python (`.py`, `.pyi`).
    Python,
    /// Rust (`.rs`).
    Rust,
    /// Go (`.go`).
    Go,
    /// JavaScript (`.js`, `.mjs`, `.cjs`, `.jsx`).
    JavaScript,
    /// TypeScript (`.ts`, `.mts`, `.cts`).
    TypeScript,
    /// TypeScript with JSX (`.tsx`).
    Tsx,
    /// Java (`.java`).
    Java,
    /// C (`.c`, `.h`).
    C,
    /// C++ (`.cc`, `.cpp`, `.cxx`, `.hpp`, `.hh`, `.hxx`, `.h++`).
    Cpp,
    /// Ruby (`.rb`, `.rake`, `.gemspec`).
    Ruby,
    /// C# (`.cs`).
    CSharp,
    /// Kotlin (`.kt`, `.kts`).
    Kotlin,
    /// Scala (`.scala`, `.sc`).
    Scala,
    /// Swift (`.swift`).
    Swift,
    /// PHP (`.php`).
    Php,
    /// Elixir (`.ex`, `.exs`).
    Elixir,
    /// Bash and POSIX shell (`.sh`, `.bash`, or a `sh`/`bash` shebang).
    Bash,
    /// Lua (`.lua`).
    Lua,
}

impl Lang {
    /// The language of a file, by its extension; None for files the index only splits into
    /// windows of lines.
    pub(crate) fn of(path: &str) -> Option<Lang> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = name.rsplit_once('.').map(|(_, e)| e)?;
        Some(match ext {
            "py" | "pyi" => Lang::Python,
            "rs" => Lang::Rust,
            "go" => Lang::Go,
            "js" | "mjs" | "cjs" | "jsx" => Lang::JavaScript,
            "ts" | "mts" | "cts" => Lang::TypeScript,
            "tsx" => Lang::Tsx,
            "java" => Lang::Java,
            "c" | "h" => Lang::C,
            "cc" | "cpp" | "cxx" | "hpp" | "hh" | "hxx" | "h++" | "c++" => Lang::Cpp,
            "rb" | "rake" | "gemspec" => Lang::Ruby,
            "cs" => Lang::CSharp,
            "kt" | "kts" => Lang::Kotlin,
            "scala" | "sc" => Lang::Scala,
            "swift" => Lang::Swift,
            "php" => Lang::Php,
            "ex" | "exs" => Lang::Elixir,
            "sh" | "bash" => Lang::Bash,
            "lua" => Lang::Lua,
            _ => return None,
        })
    }

    /// The language of a file by its extension or, for a file without one, by a shell
    /// shebang on its first line (`#!/bin/sh`, `#!/usr/bin/env bash`).
    pub(crate) fn of_file(path: &str, text: &str) -> Option<Lang> {
        if let Some(lang) = Lang::of(path) {
            // A `.h` header is C++ as often as C; read as C, C++ is one long error (and its
            // recovery costs many times a clean parse).
            let header = path.rsplit_once('.').is_some_and(|(_, ext)| ext == "h");
            if lang == Lang::C && header && looks_like_cpp(text) {
                return Some(Lang::Cpp);
            }
            return Some(lang);
        }
        let name = path.rsplit('/').next().unwrap_or(path);
        if name.contains('.') {
            return None;
        }
        let first = text.lines().next()?.strip_prefix("#!")?;
        let mut words = first.split_whitespace();
        let mut program = words.next()?.rsplit('/').next()?;
        if program == "env" {
            program = words.find(|w| !w.starts_with('-'))?;
        }
        matches!(program, "sh" | "bash" | "dash" | "ksh").then_some(Lang::Bash)
    }

    /// The tree-sitter grammar.
    pub(crate) fn grammar(self) -> Language {
        match self {
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Lang::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Lang::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Lang::Java => tree_sitter_java::LANGUAGE.into(),
            Lang::C => tree_sitter_c::LANGUAGE.into(),
            Lang::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Lang::Ruby => tree_sitter_ruby::LANGUAGE.into(),
            Lang::CSharp => tree_sitter_c_sharp::LANGUAGE.into(),
            Lang::Kotlin => tree_sitter_kotlin_ng::LANGUAGE.into(),
            Lang::Scala => tree_sitter_scala::LANGUAGE.into(),
            Lang::Swift => tree_sitter_swift::LANGUAGE.into(),
            Lang::Php => tree_sitter_php::LANGUAGE_PHP.into(),
            Lang::Elixir => tree_sitter_elixir::LANGUAGE.into(),
            Lang::Bash => tree_sitter_bash::LANGUAGE.into(),
            Lang::Lua => tree_sitter_lua::LANGUAGE.into(),
        }
    }

    /// A short stable name (stored in the cache, shown in results).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::Rust => "rust",
            Lang::Go => "go",
            Lang::JavaScript => "javascript",
            Lang::TypeScript => "typescript",
            Lang::Tsx => "tsx",
            Lang::Java => "java",
            Lang::C => "c",
            Lang::Cpp => "cpp",
            Lang::Ruby => "ruby",
            Lang::CSharp => "csharp",
            Lang::Kotlin => "kotlin",
            Lang::Scala => "scala",
            Lang::Swift => "swift",
            Lang::Php => "php",
            Lang::Elixir => "elixir",
            Lang::Bash => "bash",
            Lang::Lua => "lua",
        }
    }

    /// Every language, for tests and tables.
    #[cfg(test)]
    pub(crate) const ALL: [Lang; 18] = [
        Lang::Python,
        Lang::Rust,
        Lang::Go,
        Lang::JavaScript,
        Lang::TypeScript,
        Lang::Tsx,
        Lang::Java,
        Lang::C,
        Lang::Cpp,
        Lang::Ruby,
        Lang::CSharp,
        Lang::Kotlin,
        Lang::Scala,
        Lang::Swift,
        Lang::Php,
        Lang::Elixir,
        Lang::Bash,
        Lang::Lua,
    ];
}

/// Whether a header holds C++ (a namespace, a template, access labels, `std::`), not C.
fn looks_like_cpp(text: &str) -> bool {
    let marks = [
        "namespace ",
        "template <",
        "template<",
        "public:",
        "private:",
        "protected:",
        "std::",
        "class ",
    ];
    text.lines().any(|line| {
        let t = line.trim_start();
        !t.starts_with("//")
            && !t.starts_with('*')
            && !t.starts_with("/*")
            && marks.iter().any(|m| t.contains(m))
    })
}

/// One definition a parse found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Def {
    /// What it defines: `function`, `method`, `class`, `struct`, `enum`, `trait`, `interface`,
    /// `impl`, `module`, `type`, `macro`, `constructor`.
    pub kind: &'static str,
    /// Its name as written (`Foo::bar` for a C++ out-of-class method, the type for a Rust impl).
    pub name: String,
    /// First line, 1-based (the line that names it, after any decorators or doc comments).
    pub start: u32,
    /// Last line, 1-based, inclusive.
    pub end: u32,
    /// How many definitions enclose it (0: top level).
    pub depth: u32,
}

/// What a syntax node is to the walk.
enum Role {
    /// Defines something; definitions nest inside it when `container`.
    Def { kind: &'static str, container: bool },
    /// Anything else: walked through (never a function body, which is a leaf definition's).
    Through,
}

fn role(lang: Lang, kind: &str, inside_type: bool) -> Role {
    let def = |kind, container| Role::Def { kind, container };
    let func = if inside_type { "method" } else { "function" };
    match (lang, kind) {
        (Lang::Python, "function_definition") => def(func, false),
        (Lang::Python, "class_definition") => def("class", true),
        (Lang::Rust, "function_item" | "function_signature_item") => def(func, false),
        (Lang::Rust, "struct_item") => def("struct", false),
        (Lang::Rust, "enum_item") => def("enum", false),
        (Lang::Rust, "union_item") => def("union", false),
        (Lang::Rust, "trait_item") => def("trait", true),
        (Lang::Rust, "impl_item") => def("impl", true),
        (Lang::Rust, "mod_item") => def("module", true),
        (Lang::Rust, "macro_definition") => def("macro", false),
        (Lang::Rust, "type_item") => def("type", false),
        (Lang::Go, "function_declaration") => def("function", false),
        (Lang::Go, "method_declaration") => def("method", false),
        (Lang::Go, "type_spec") => def("type", false),
        // `var name = func(...) {...}`: a function by another syntax (see `name_of`).
        (Lang::Go, "var_spec") => def("function", false),
        (Lang::JavaScript | Lang::TypeScript | Lang::Tsx, k) => match k {
            "function_declaration" | "generator_function_declaration" => def(func, false),
            "class_declaration" | "abstract_class_declaration" | "class" => def("class", true),
            "method_definition" | "method_signature" | "abstract_method_signature" => {
                def("method", false)
            }
            "interface_declaration" => def("interface", false),
            "type_alias_declaration" => def("type", false),
            "enum_declaration" => def("enum", false),
            "internal_module" | "module" => def("module", true),
            // `const name = (...) => ...`: a function by another syntax (see `name_of`).
            "variable_declarator" => def("function", false),
            _ => Role::Through,
        },
        (Lang::Java, k) => match k {
            "class_declaration" | "record_declaration" => def("class", true),
            "interface_declaration" | "annotation_type_declaration" => def("interface", true),
            "enum_declaration" => def("enum", true),
            "method_declaration" => def("method", false),
            "constructor_declaration" | "compact_constructor_declaration" => {
                def("constructor", false)
            }
            _ => Role::Through,
        },
        (Lang::C | Lang::Cpp, k) => match k {
            "function_definition" => def(func, false),
            "struct_specifier" => def("struct", lang == Lang::Cpp),
            "union_specifier" => def("union", false),
            "enum_specifier" => def("enum", false),
            "class_specifier" => def("class", true),
            "namespace_definition" => def("namespace", true),
            "preproc_function_def" => def("macro", false),
            "type_definition" => def("type", false),
            _ => Role::Through,
        },
        (Lang::Ruby, k) => match k {
            "method" | "singleton_method" => def("method", false),
            "class" | "singleton_class" => def("class", true),
            "module" => def("module", true),
            _ => Role::Through,
        },
        (
            Lang::CSharp
            | Lang::Kotlin
            | Lang::Scala
            | Lang::Swift
            | Lang::Php
            | Lang::Bash
            | Lang::Lua,
            k,
        ) => role_of_newer(lang, k, func),
        _ => Role::Through,
    }
}

/// [`role`] for the languages parsed since the first eight (`func`: "function" or "method").
fn role_of_newer(lang: Lang, kind: &str, func: &'static str) -> Role {
    let def = |kind, container| Role::Def { kind, container };
    match (lang, kind) {
        (Lang::CSharp, k) => match k {
            "class_declaration" => def("class", true),
            "struct_declaration" => def("struct", true),
            "record_declaration" | "record_struct_declaration" => def("record", true),
            "interface_declaration" => def("interface", true),
            "enum_declaration" => def("enum", false),
            "namespace_declaration" => def("namespace", true),
            "method_declaration" | "destructor_declaration" => def(func, false),
            "local_function_statement" => def("function", false),
            "constructor_declaration" => def("constructor", false),
            "delegate_declaration" => def("type", false),
            _ => Role::Through,
        },
        (Lang::Kotlin, k) => match k {
            // `interface` and `enum class` are class declarations too (see `refine_kind`); an
            // `object` is a class with one instance.
            "class_declaration" | "object_declaration" | "companion_object" => def("class", true),
            "function_declaration" => def(func, false),
            "type_alias" => def("type", false),
            _ => Role::Through,
        },
        (Lang::Scala, k) => match k {
            "class_definition" | "object_definition" | "package_object" => def("class", true),
            "trait_definition" => def("trait", true),
            "enum_definition" => def("enum", true),
            "function_definition" | "function_declaration" => def(func, false),
            "type_definition" => def("type", false),
            _ => Role::Through,
        },
        (Lang::Swift, k) => match k {
            // Classes, structs, enums, actors and extensions (see `refine_kind`).
            "class_declaration" => def("class", true),
            "protocol_declaration" => def("interface", true),
            "function_declaration" | "protocol_function_declaration" => def(func, false),
            "init_declaration" => def("constructor", false),
            "typealias_declaration" => def("type", false),
            _ => Role::Through,
        },
        (Lang::Php, k) => match k {
            "class_declaration" => def("class", true),
            "interface_declaration" => def("interface", true),
            "trait_declaration" => def("trait", true),
            "enum_declaration" => def("enum", true),
            "function_definition" => def("function", false),
            "method_declaration" => def("method", false),
            "namespace_definition" => def("namespace", true),
            _ => Role::Through,
        },
        (Lang::Bash, "function_definition") => def("function", false),
        (Lang::Lua, k) => match k {
            "function_declaration" => def("function", false),
            // `M.name = function(...) ... end`: a function by another syntax (see `name_of`).
            "assignment_statement" => def("function", false),
            // `{ name = function(...) ... end }`: a function in a table (see `name_of`).
            "field" => def("function", false),
            _ => Role::Through,
        },
        _ => Role::Through,
    }
}

/// What an Elixir call defines, by the macro it calls: `defmodule Name do ... end` and its
/// kin hold definitions; `def name(args)` and its kin are routines.
fn elixir_role(node: Node<'_>, text: &[u8]) -> Role {
    if node.kind() != "call" {
        return Role::Through;
    }
    let target = node
        .child_by_field_name("target")
        .filter(|t| t.kind() == "identifier")
        .and_then(|t| text_of(t, text));
    match target {
        Some("defmodule" | "defprotocol" | "defimpl") => Role::Def {
            kind: "module",
            container: true,
        },
        Some(
            "def" | "defp" | "defmacro" | "defmacrop" | "defguard" | "defguardp" | "defdelegate"
            | "defn" | "defnp",
        ) => Role::Def {
            kind: "function",
            container: false,
        },
        _ => Role::Through,
    }
}

/// The most syntax nodes the walk visits in one file: a pathological file stops early rather
/// than costing seconds.
const MAX_NODES: usize = 2_000_000;

/// A parse's budget: a fixed allowance plus so much per KiB of text, in tree-sitter's
/// progress checks (one per about 100 parser operations) and in the parsing thread's CPU time.
/// Ordinary code needs a small fraction of either (about 6 checks and 0.15 ms per KiB); a file
/// a grammar stumbles on (C++ read as C, recovering from an error at every line; a grammar
/// exploring many ambiguous versions) runs out and is cut by its shape instead (see
/// `shape`), which keeps a cold build linear in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    /// Progress checks.
    pub checks: u64,
    /// CPU time of the parsing thread, in microseconds.
    pub cpu_us: u64,
}

const PARSE_CHECKS_BASE: u64 = 2_000;
const PARSE_CHECKS_PER_KIB: u64 = 50;
const PARSE_CPU_US_BASE: u64 = 30_000;
const PARSE_CPU_US_PER_KIB: u64 = 1_000;
/// The CPU clock is read at every this many progress checks.
const CHECKS_PER_CLOCK: u64 = 4;

/// The budget of a parse of `bytes`.
pub(crate) fn parse_budget(bytes: usize) -> Budget {
    #[cfg(test)]
    if let Some(b) = TEST_BUDGET.get() {
        return b;
    }
    let kib = (bytes as u64).div_ceil(1024);
    Budget {
        checks: PARSE_CHECKS_BASE + PARSE_CHECKS_PER_KIB * kib,
        cpu_us: PARSE_CPU_US_BASE + PARSE_CPU_US_PER_KIB * kib,
    }
}

#[cfg(test)]
thread_local! {
    /// The parse budget on this thread, for tests (and a dev check's "before").
    pub(crate) static TEST_BUDGET: std::cell::Cell<Option<Budget>> =
        const { std::cell::Cell::new(None) };
}

/// The CPU time this thread has used, in microseconds.
pub(crate) fn thread_cpu_us() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (t.tv_sec as u64)
        .saturating_mul(1_000_000)
        .saturating_add(t.tv_nsec as u64 / 1_000)
}

/// Parse `text` as `lang` within `budget`, and the progress checks it took; no tree when the
/// grammar cannot be loaded or the parse fails or runs past its budget (the parser is then
/// reset for the next file).
pub(crate) fn parse(
    lang: Lang,
    text: &[u8],
    parser: &mut Parser,
    budget: Budget,
) -> (Option<tree_sitter::Tree>, u64) {
    if parser.set_language(&lang.grammar()).is_err() {
        return (None, 0);
    }
    let mut checks = 0u64;
    let started = thread_cpu_us();
    let mut progress = |_: &tree_sitter::ParseState| {
        checks += 1;
        let over = checks > budget.checks
            || (checks.is_multiple_of(CHECKS_PER_CLOCK)
                && thread_cpu_us().saturating_sub(started) > budget.cpu_us);
        if over {
            std::ops::ControlFlow::Break(())
        } else {
            std::ops::ControlFlow::Continue(())
        }
    };
    let len = text.len();
    let tree = parser.parse_with_options(
        &mut |at: usize, _| text.get(at..len).unwrap_or(&[]),
        None,
        Some(tree_sitter::ParseOptions::new().progress_callback(&mut progress)),
    );
    if tree.is_none() {
        // A cancelled parse would otherwise resume on the next call.
        parser.reset();
    }
    (tree, checks)
}

/// The definitions in `text`, parsed as `lang`, in source order. `parser` is reused across
/// files (set to the language here). None when the parse fails or runs past its budget
/// ([`parse_budget`]); the caller then cuts the file by its shape.
pub(crate) fn definitions(lang: Lang, text: &[u8], parser: &mut Parser) -> Option<Vec<Def>> {
    let tree = parse(lang, text, parser, parse_budget(text.len())).0?;
    let mut out = Vec::new();
    // (node, depth in definitions, inside a type)
    let mut stack: Vec<(Node<'_>, u32, bool)> = vec![(tree.root_node(), 0, false)];
    let mut visited = 0usize;
    while let Some((node, depth, inside_type)) = stack.pop() {
        visited += 1;
        if visited > MAX_NODES {
            break;
        }
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
        // Pushed in reverse so that they pop in source order.
        for child in children.into_iter().rev() {
            let role = if lang == Lang::Elixir {
                elixir_role(child, text)
            } else {
                role(lang, child.kind(), inside_type)
            };
            match role {
                Role::Def { kind, container } => {
                    let named = name_of(lang, child, text);
                    if let Some(name) = named {
                        let kind = refine_kind(lang, child, kind);
                        out.push(Def {
                            kind,
                            name,
                            start: child.start_position().row as u32 + 1,
                            end: end_line(child, text),
                            depth,
                        });
                        if container {
                            let holds_methods = !matches!(kind, "module" | "namespace");
                            stack.push((child, depth + 1, holds_methods));
                        }
                    } else if container
                        || !is_leaf_kind(kind)
                        || matches!(
                            child.kind(),
                            "variable_declarator" | "assignment_statement" | "call" | "field"
                        )
                    {
                        // An anonymous class or namespace still holds definitions.
                        stack.push((child, depth, inside_type));
                    }
                }
                Role::Through => {
                    if child.named_child_count() > 0 {
                        stack.push((child, depth, inside_type));
                    }
                }
            }
        }
    }
    out.sort_by_key(|d| (d.start, std::cmp::Reverse(d.end)));
    Some(out)
}

/// Kinds whose bodies are not searched for nested definitions: routines (a class's or a
/// module's members are definitions of their own).
pub(crate) fn is_leaf_kind(kind: &str) -> bool {
    matches!(kind, "function" | "method" | "constructor" | "macro")
}

/// The last line of a node, not counting trailing blank lines it ends on (an indented body
/// in Scala or Python may run to the next definition's indentation).
fn end_line(node: Node<'_>, text: &[u8]) -> u32 {
    let end = node.end_position();
    let range = node.byte_range();
    let body = text.get(range).unwrap_or(&[]);
    let trailing = body
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_whitespace())
        .filter(|&&b| b == b'\n')
        .count();
    let row = end
        .row
        .saturating_sub(trailing)
        .max(node.start_position().row);
    row as u32 + 1
}

/// A Go type's kind by what it declares; a C `struct` that is only a reference (no body) is not
/// a definition (handled by the name lookup).
fn refine_kind(lang: Lang, node: Node<'_>, kind: &'static str) -> &'static str {
    if lang == Lang::Go && kind == "type" {
        return match node.child_by_field_name("type").map(|t| t.kind()) {
            Some("struct_type") => "struct",
            Some("interface_type") => "interface",
            _ => "type",
        };
    }
    if lang == Lang::Swift && node.kind() == "class_declaration" {
        let declared = node.child_by_field_name("declaration_kind");
        return match declared.map(|d| d.kind()) {
            Some("struct") => "struct",
            Some("enum") => "enum",
            // Like a Rust impl: more members of a type defined elsewhere.
            Some("extension") => "impl",
            _ => "class",
        };
    }
    if lang == Lang::Kotlin && node.kind() == "class_declaration" {
        // The words before its name: `interface`, `enum class`, `data class`, ...
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "interface" => return "interface",
                "modifiers" if modifiers_say(child, "enum") => return "enum",
                "identifier" => break,
                _ => {}
            }
        }
    }
    kind
}

/// Whether a modifier list holds the modifier `word` (any of its leaves).
fn modifiers_say(node: Node<'_>, word: &str) -> bool {
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        if n.child_count() == 0 {
            if n.kind() == word {
                return true;
            }
            continue;
        }
        let mut cursor = n.walk();
        stack.extend(n.children(&mut cursor));
    }
    false
}

fn text_of<'t>(node: Node<'_>, text: &'t [u8]) -> Option<&'t str> {
    std::str::from_utf8(text.get(node.byte_range())?).ok()
}

/// The name a definition node gives, or None when it defines nothing by name (a C `struct x`
/// used as a type, an anonymous class).
fn name_of(lang: Lang, node: Node<'_>, text: &[u8]) -> Option<String> {
    let field = |name: &str| node.child_by_field_name(name);
    let named = match (lang, node.kind()) {
        (Lang::Rust, "impl_item") => {
            let ty = field("type").and_then(|t| text_of(t, text))?;
            return Some(ty.split('<').next().unwrap_or(ty).trim().to_string());
        }
        (Lang::C | Lang::Cpp, "function_definition") => declarator_name(node, text),
        (Lang::C | Lang::Cpp, "type_definition") => {
            let mut d = field("declarator")?;
            while let Some(inner) = d.child_by_field_name("declarator") {
                d = inner;
            }
            text_of(d, text).map(str::to_string)
        }
        (Lang::C | Lang::Cpp, "struct_specifier" | "union_specifier" | "enum_specifier")
        | (Lang::Cpp, "class_specifier") => {
            // Only a specifier with a body defines the type.
            field("body")?;
            field("name")
                .and_then(|n| text_of(n, text))
                .map(str::to_string)
        }
        (Lang::JavaScript | Lang::TypeScript | Lang::Tsx, "variable_declarator") => {
            let value = field("value")?;
            if !matches!(
                value.kind(),
                "arrow_function" | "function_expression" | "function" | "generator_function"
            ) {
                return None;
            }
            field("name")
                .and_then(|n| text_of(n, text))
                .map(str::to_string)
        }
        (Lang::Swift, "class_declaration") | (Lang::Scala, "class_definition") => {
            // An extension's type may be generic (`Array<Element>`): its name is the type's.
            let ty = field("name").and_then(|t| text_of(t, text))?;
            Some(ty.split('<').next().unwrap_or(ty).trim().to_string())
        }
        (Lang::Php, "namespace_definition") => {
            // `namespace App;` names the file's namespace without holding its definitions.
            field("body")?;
            field("name")
                .and_then(|n| text_of(n, text))
                .map(str::to_string)
        }
        (Lang::Kotlin, "type_alias") => field("type")
            .and_then(|n| text_of(n, text))
            .map(str::to_string),
        (Lang::Lua, "assignment_statement") => lua_function_name(node, text),
        (Lang::Lua, "field") => {
            if field("value")?.kind() != "function_definition" {
                return None;
            }
            let key = text_of(field("name")?, text)?;
            Some(key.trim_matches(['"', '\'']).to_string())
        }
        (Lang::Elixir, "call") => elixir_name(node, text),
        (Lang::Go, "var_spec") => {
            // One name bound to one function literal; `var a, b = f, g` defines no function.
            let value = field("value")?;
            let mut cursor = value.walk();
            let values: Vec<Node<'_>> = value.named_children(&mut cursor).collect();
            if values.len() != 1 || values[0].kind() != "func_literal" {
                return None;
            }
            text_of(field("name")?, text).map(str::to_string)
        }
        _ => field("name")
            .and_then(|n| text_of(n, text))
            .map(str::to_string),
    }?;
    let named = named.trim();
    if named.is_empty() || named.len() > 200 || named.contains('\n') {
        return None;
    }
    Some(named.to_string())
}

/// The name of a Lua assignment of one function (`M.name = function(...) ... end`).
fn lua_function_name(node: Node<'_>, text: &[u8]) -> Option<String> {
    let mut cursor = node.walk();
    let parts: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
    let [vars, values] = parts.as_slice() else {
        return None;
    };
    if vars.named_child_count() != 1 || values.named_child_count() != 1 {
        return None;
    }
    if values.named_child(0)?.kind() != "function_definition" {
        return None;
    }
    text_of(vars.named_child(0)?, text).map(str::to_string)
}

/// The name an Elixir definition gives: the module's alias, or the routine's name (before its
/// arguments and any `when` guard).
fn elixir_name(node: Node<'_>, text: &[u8]) -> Option<String> {
    let args = node
        .named_children(&mut node.walk())
        .find(|c| c.kind() == "arguments")?;
    let mut head = args.named_child(0)?;
    for _ in 0..4 {
        match head.kind() {
            "alias" | "identifier" => return text_of(head, text).map(str::to_string),
            "call" => head = head.child_by_field_name("target")?,
            "binary_operator" => head = head.child_by_field_name("left")?,
            // `defp unquote(name)(args)` and other metaprogramming: no plain name.
            _ => return None,
        }
    }
    None
}

/// A C/C++ function's name: down its declarator chain to the identifier.
fn declarator_name(node: Node<'_>, text: &[u8]) -> Option<String> {
    let mut d = node.child_by_field_name("declarator")?;
    for _ in 0..16 {
        match d.kind() {
            "identifier"
            | "field_identifier"
            | "qualified_identifier"
            | "destructor_name"
            | "operator_name"
            | "type_identifier" => {
                return text_of(d, text).map(str::to_string);
            }
            _ => d = d.child_by_field_name("declarator")?,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(path: &str, src: &str) -> Vec<(&'static str, String, u32, u32)> {
        let lang = Lang::of(path).expect("language");
        let mut parser = Parser::new();
        let all = definitions(lang, src.as_bytes(), &mut parser).expect("parsed");
        all.into_iter()
            .map(|d| (d.kind, d.name, d.start, d.end))
            .collect()
    }

    #[test]
    fn python_classes_methods_and_decorated_functions() {
        let src = "import os\n\nclass App(Base):\n    def route(self, rule):\n        def inner():\n            pass\n        return inner\n\n@decorator\ndef helper():\n    return 1\n";
        assert_eq!(
            defs("a.py", src),
            vec![
                ("class", "App".to_string(), 3, 7),
                ("method", "route".to_string(), 4, 7),
                ("function", "helper".to_string(), 10, 11),
            ]
        );
    }

    #[test]
    fn java_methods_with_generics_are_definitions_and_calls_are_not() {
        let src = "public final class Codec {\n  public <T> TypeAdapter<T> getAdapter(TypeToken<T> type) {\n    return null;\n  }\n  private static TypeAdapter<X> localDateTime() { return x; }\n}\n";
        assert_eq!(
            defs("src/Codec.java", src),
            vec![
                ("class", "Codec".to_string(), 1, 6),
                ("method", "getAdapter".to_string(), 2, 4),
                ("method", "localDateTime".to_string(), 5, 5),
            ]
        );
    }

    #[test]
    fn typescript_imports_are_not_definitions() {
        let src = "import { type Response } from './r';\nexport interface Options { a: number }\nexport class Fetcher {\n  async fetch(): Promise<Response> { return x; }\n}\nexport const create = (o: Options) => new Fetcher();\nfunction plain() {}\n";
        assert_eq!(
            defs("source/index.ts", src),
            vec![
                ("interface", "Options".to_string(), 2, 2),
                ("class", "Fetcher".to_string(), 3, 5),
                ("method", "fetch".to_string(), 4, 4),
                ("function", "create".to_string(), 6, 6),
                ("function", "plain".to_string(), 7, 7),
            ]
        );
    }

    #[test]
    fn rust_go_c_cpp_ruby() {
        let rs = "pub struct S;\nimpl<T> Display for Wrap<T> {\n    fn fmt(&self) {}\n}\nmod m {\n    pub fn f() {}\n}\n";
        assert_eq!(
            defs("x.rs", rs),
            vec![
                ("struct", "S".to_string(), 1, 1),
                ("impl", "Wrap".to_string(), 2, 4),
                ("method", "fmt".to_string(), 3, 3),
                ("module", "m".to_string(), 5, 7),
                ("function", "f".to_string(), 6, 6),
            ]
        );
        let go = "package p\n\ntype Engine struct {\n\tx int\n}\n\nfunc (e *Engine) Run(addr string) error {\n\treturn nil\n}\n\nvar defaultFormatter = func(p Params) string {\n\treturn \"\"\n}\n\nvar limit, name = 3, \"x\"\n";
        assert_eq!(
            defs("engine.go", go),
            vec![
                ("struct", "Engine".to_string(), 3, 5),
                ("method", "Run".to_string(), 7, 9),
                ("function", "defaultFormatter".to_string(), 11, 13),
            ]
        );
        let c = "struct point { int x; };\nstruct point *make(void);\nstatic int *add(int a) {\n  return 0;\n}\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\ntypedef unsigned long ulong;\n";
        assert_eq!(
            defs("p.c", c),
            vec![
                ("struct", "point".to_string(), 1, 1),
                ("function", "add".to_string(), 3, 5),
                ("macro", "MAX".to_string(), 6, 6),
                ("type", "ulong".to_string(), 7, 7),
            ]
        );
        let cpp = "namespace leveldb {\nclass DBImpl : public DB {\n public:\n  Status Get(const ReadOptions& o);\n};\nStatus DBImpl::Get(const ReadOptions& o) {\n  return s;\n}\n}\n";
        assert_eq!(
            defs("db.cc", cpp),
            vec![
                ("namespace", "leveldb".to_string(), 1, 9),
                ("class", "DBImpl".to_string(), 2, 5),
                ("function", "DBImpl::Get".to_string(), 6, 8),
            ]
        );
        let rb = "module Webkit\n  class Base\n    def self.route(verb)\n    end\n    def call(env)\n    end\n  end\nend\n";
        assert_eq!(
            defs("base.rb", rb),
            vec![
                ("module", "Webkit".to_string(), 1, 8),
                ("class", "Base".to_string(), 2, 7),
                ("method", "route".to_string(), 3, 4),
                ("method", "call".to_string(), 5, 6),
            ]
        );
    }

    /// A dev check, not run in CI: `OUTRIDER_DEFS=<file listing paths> cargo test
    /// --no-default-features --lib dev_definitions_of_files -- --ignored --nocapture` prints,
    /// per file, its language, bytes, the parse's progress checks and budget, its time, and
    /// the definitions found (or that the parse fell back to the file's shape).
    #[test]
    #[ignore = "a dev check on files named by OUTRIDER_DEFS"]
    fn dev_definitions_of_files() {
        let Ok(list) = std::env::var("OUTRIDER_DEFS") else {
            return;
        };
        let verbose = std::env::var("OUTRIDER_DEFS_VERBOSE").is_ok();
        let paths = std::fs::read_to_string(list).expect("list");
        let mut parser = Parser::new();
        let started = std::time::Instant::now();
        for path in paths.lines() {
            let Ok(text) = std::fs::read_to_string(path) else {
                continue;
            };
            let Some(lang) = Lang::of_file(path, &text) else {
                continue;
            };
            let t = std::time::Instant::now();
            let budget = parse_budget(text.len()).checks;
            let (tree, checks) =
                parse(lang, text.as_bytes(), &mut parser, parse_budget(text.len()));
            let errors = tree.as_ref().is_some_and(|t| t.root_node().has_error());
            let defs = definitions(lang, text.as_bytes(), &mut parser);
            let ms = t.elapsed().as_secs_f64() * 1000.0 / 2.0;
            let found = defs.as_ref().map_or(-1, |d| d.len() as i64);
            println!(
                "{path}\t{}\t{}\t{checks}\t{budget}\t{ms:.1}\t{found}\t{}",
                lang.name(),
                text.len(),
                if errors { "errors" } else { "clean" }
            );
            if verbose {
                for d in defs.unwrap_or_else(|| crate::index::shape::definitions(&text)) {
                    println!("  {} {} {}-{} d{}", d.kind, d.name, d.start, d.end, d.depth);
                }
            }
        }
        println!("total {:.2}s", started.elapsed().as_secs_f64());
    }

    #[test]
    fn csharp_namespaces_types_and_members() {
        let src = r"using System;

namespace Acme.Billing
{
    /// <summary>Keeps entries.</summary>
    public sealed class Ledger : IDisposable
    {
        private readonly List<Entry> entries = new();

        public Ledger(int capacity)
        {
            entries.Capacity = capacity;
        }

        public decimal Balance() => entries.Sum(e => e.Amount);

        public void Dispose() { }
    }

    public interface IAuditor
    {
        void Audit(Ledger ledger);
    }

    public record Entry(string Account, decimal Amount);

    public struct Money { public decimal Value; }

    public enum Currency { Euro, Dollar }

    public delegate void Posted(Entry entry);
}
";
        assert_eq!(
            defs("src/Billing/Ledger.cs", src),
            vec![
                ("namespace", "Acme.Billing".to_string(), 3, 32),
                ("class", "Ledger".to_string(), 6, 18),
                ("constructor", "Ledger".to_string(), 10, 13),
                ("method", "Balance".to_string(), 15, 15),
                ("method", "Dispose".to_string(), 17, 17),
                ("interface", "IAuditor".to_string(), 20, 23),
                ("method", "Audit".to_string(), 22, 22),
                ("record", "Entry".to_string(), 25, 25),
                ("struct", "Money".to_string(), 27, 27),
                ("enum", "Currency".to_string(), 29, 29),
                ("type", "Posted".to_string(), 31, 31),
            ]
        );
    }

    #[test]
    fn kotlin_classes_interfaces_objects_and_functions() {
        let src = r"package shop.stock

import java.time.Instant

/** Items on hand. */
data class Item(val sku: String, val count: Int)

interface Supplier {
    fun restock(sku: String): Int
}

enum class Unit { PIECE, BOX }

object Warehouse {
    private val items = mutableMapOf<String, Item>()

    fun take(sku: String, n: Int): Boolean {
        val item = items[sku] ?: return false
        return item.count >= n
    }
}

class Inventory(private val supplier: Supplier) {
    companion object {
        fun empty(): Inventory = Inventory(NoSupplier)
    }

    fun refill(sku: String) {
        supplier.restock(sku)
    }
}

fun summarize(items: List<Item>): String = items.joinToString()

typealias Stock = Map<String, Item>
";
        assert_eq!(
            defs("app/src/main/kotlin/Inventory.kt", src),
            vec![
                ("class", "Item".to_string(), 6, 6),
                ("interface", "Supplier".to_string(), 8, 10),
                ("method", "restock".to_string(), 9, 9),
                ("enum", "Unit".to_string(), 12, 12),
                ("class", "Warehouse".to_string(), 14, 21),
                ("method", "take".to_string(), 17, 20),
                ("class", "Inventory".to_string(), 23, 31),
                ("method", "empty".to_string(), 25, 25),
                ("method", "refill".to_string(), 28, 30),
                ("function", "summarize".to_string(), 33, 33),
                ("type", "Stock".to_string(), 35, 35),
            ]
        );
    }

    #[test]
    fn scala_traits_classes_objects_and_defs() {
        let src = r#"package web.routing

import scala.collection.mutable

/** A route table. */
trait Handler {
  def handle(path: String): Option[String]
}

case class Route(method: String, path: String)

class Router(prefix: String) extends Handler {
  private val table = mutable.Map.empty[Route, String]

  def add(route: Route, target: String): Unit =
    table(route) = target

  def handle(path: String): Option[String] = {
    table.collectFirst { case (r, t) if r.path == path => t }
  }
}

object Router {
  def apply(): Router = new Router("")
}

enum Verb {
  case Get, Post
}

type Table = Map[Route, String]
"#;
        assert_eq!(
            defs("core/Router.scala", src),
            vec![
                ("trait", "Handler".to_string(), 6, 8),
                ("method", "handle".to_string(), 7, 7),
                ("class", "Route".to_string(), 10, 10),
                ("class", "Router".to_string(), 12, 21),
                ("method", "add".to_string(), 15, 16),
                ("method", "handle".to_string(), 18, 20),
                ("class", "Router".to_string(), 23, 25),
                ("method", "apply".to_string(), 24, 24),
                ("enum", "Verb".to_string(), 27, 29),
                ("type", "Table".to_string(), 31, 31),
            ]
        );
    }

    #[test]
    fn swift_protocols_types_extensions_and_funcs() {
        let src = r#"import Foundation

/// A bounded cache.
public protocol Evicting {
    func evict(key: String)
}

public final class LRUCache<Value>: Evicting {
    private var store: [String: Value] = [:]

    public init(limit: Int) {
        self.limit = limit
    }

    public func value(for key: String) -> Value? {
        return store[key]
    }

    public func evict(key: String) {
        store.removeValue(forKey: key)
    }
}

struct Entry {
    let key: String
}

enum Policy {
    case lru, fifo
}

extension LRUCache: CustomStringConvertible {
    var description: String { "cache" }
    func dump() {}
}

typealias StringCache = LRUCache<String>

func makeCache() -> LRUCache<Int> {
    LRUCache(limit: 8)
}
"#;
        assert_eq!(
            defs("Sources/Cache/Cache.swift", src),
            vec![
                ("interface", "Evicting".to_string(), 4, 6),
                ("method", "evict".to_string(), 5, 5),
                ("class", "LRUCache".to_string(), 8, 22),
                ("constructor", "init".to_string(), 11, 13),
                ("method", "value".to_string(), 15, 17),
                ("method", "evict".to_string(), 19, 21),
                ("struct", "Entry".to_string(), 24, 26),
                ("enum", "Policy".to_string(), 28, 30),
                ("impl", "LRUCache".to_string(), 32, 35),
                ("method", "dump".to_string(), 34, 34),
                ("type", "StringCache".to_string(), 37, 37),
                ("function", "makeCache".to_string(), 39, 41),
            ]
        );
    }

    #[test]
    fn php_classes_interfaces_traits_enums_and_functions() {
        let src = r#"<?php

namespace App\Mail;

use App\Contracts\Transport;

/**
 * Sends messages.
 */
final class Mailer implements Transport
{
    private array $queue = [];

    public function __construct(private string $host)
    {
    }

    public function send(Message $message): bool
    {
        $this->queue[] = $message;
        return true;
    }
}

interface Transport
{
    public function send(Message $message): bool;
}

trait Retries
{
    protected function retry(callable $fn, int $times = 3) { return $fn(); }
}

enum Priority: int
{
    case Low = 1;
    case High = 2;
}

function format_address(string $name, string $email): string
{
    return "$name <$email>";
}
"#;
        assert_eq!(
            defs("src/Mail/Mailer.php", src),
            vec![
                ("class", "Mailer".to_string(), 10, 23),
                ("method", "__construct".to_string(), 14, 16),
                ("method", "send".to_string(), 18, 22),
                ("interface", "Transport".to_string(), 25, 28),
                ("method", "send".to_string(), 27, 27),
                ("trait", "Retries".to_string(), 30, 33),
                ("method", "retry".to_string(), 32, 32),
                ("enum", "Priority".to_string(), 35, 39),
                ("function", "format_address".to_string(), 41, 44),
            ]
        );
    }

    #[test]
    fn elixir_modules_and_def_macros() {
        let src = r##"defmodule Shop.Tally do
  @moduledoc "Counts things."

  defstruct count: 0

  @doc "Adds one."
  def add(%__MODULE__{count: c} = tally), do: %{tally | count: c + 1}

  def add(tally, n) when is_integer(n) do
    %{tally | count: tally.count + n}
  end

  defp clamp(n), do: max(n, 0)

  defmacro tally_of(expr) do
    quote do: unquote(expr)
  end

  defmodule Report do
    def render(tally), do: "#{tally.count}"
  end
end

defprotocol Shop.Countable do
  def count(item)
end
"##;
        assert_eq!(
            defs("lib/shop/tally.ex", src),
            vec![
                ("module", "Shop.Tally".to_string(), 1, 22),
                ("function", "add".to_string(), 7, 7),
                ("function", "add".to_string(), 9, 11),
                ("function", "clamp".to_string(), 13, 13),
                ("function", "tally_of".to_string(), 15, 17),
                ("module", "Report".to_string(), 19, 21),
                ("function", "render".to_string(), 20, 20),
                ("module", "Shop.Countable".to_string(), 24, 26),
                ("function", "count".to_string(), 25, 25),
            ]
        );
    }

    #[test]
    fn bash_functions_both_syntaxes() {
        let src = r#"#!/usr/bin/env bash
set -euo pipefail

# Copies the build to a host.
upload() {
  scp -r build "$1:/srv/app"
}

function restart_service {
  ssh "$1" systemctl restart app
}

main() {
  for host in "$@"; do
    upload "$host"
    restart_service "$host"
  done
}

main "$@"
"#;
        assert_eq!(
            defs("scripts/deploy.sh", src),
            vec![
                ("function", "upload".to_string(), 5, 7),
                ("function", "restart_service".to_string(), 9, 11),
                ("function", "main".to_string(), 13, 18),
            ]
        );
    }

    #[test]
    fn lua_functions_methods_and_assigned_functions() {
        let src = r#"-- A FIFO queue.
local Queue = {}
Queue.__index = Queue

function Queue.new()
  return setmetatable({ first = 1, last = 0, items = {} }, Queue)
end

function Queue:push(value)
  self.last = self.last + 1
  self.items[self.last] = value
end

local function is_empty(q)
  return q.first > q.last
end

Queue.pop = function(self)
  if is_empty(self) then return nil end
  local v = self.items[self.first]
  self.first = self.first + 1
  return v
end

Queue.handlers = {
  drain = function(q) return q end,
  ["on-full"] = function(q) end,
  size = 4,
}

local limit = 10

return Queue
"#;
        assert_eq!(
            defs("lua/queue.lua", src),
            vec![
                ("function", "Queue.new".to_string(), 5, 7),
                ("function", "Queue:push".to_string(), 9, 12),
                ("function", "is_empty".to_string(), 14, 16),
                ("function", "Queue.pop".to_string(), 18, 23),
                ("function", "drain".to_string(), 26, 26),
                ("function", "on-full".to_string(), 27, 27),
            ]
        );
    }

    #[test]
    fn languages_by_extension_shebang_and_header_content() {
        assert_eq!(Lang::of("a/b.kts"), Some(Lang::Kotlin));
        assert_eq!(Lang::of("build.sc"), Some(Lang::Scala));
        assert_eq!(Lang::of("mix.exs"), Some(Lang::Elixir));
        assert_eq!(Lang::of("x.bash"), Some(Lang::Bash));
        assert_eq!(
            Lang::of_file("bin/deploy", "#!/usr/bin/env bash\nx\n"),
            Some(Lang::Bash)
        );
        assert_eq!(
            Lang::of_file("bin/run", "#!/bin/sh -e\nx\n"),
            Some(Lang::Bash)
        );
        assert_eq!(Lang::of_file("bin/tool", "#!/usr/bin/env perl\n"), None);
        assert_eq!(Lang::of_file("README", "Some words.\n"), None);
        // A shebang does not override an extension.
        assert_eq!(Lang::of_file("tool.py", "#!/bin/sh\n"), Some(Lang::Python));
        assert_eq!(
            Lang::of_file("x.h", "struct a { int b; };\n"),
            Some(Lang::C)
        );
        assert_eq!(
            Lang::of_file(
                "x.h",
                "// a class of things\nnamespace db {\nclass A {};\n}\n"
            ),
            Some(Lang::Cpp)
        );
    }

    #[test]
    fn a_parse_past_its_budget_gives_no_tree_and_the_parser_starts_over() {
        let src: String = (0..400)
            .map(|i| format!("int f{i}(int a) {{ return a + {i}; }}\n"))
            .collect();
        let mut parser = Parser::new();
        let tight = Budget {
            checks: 1,
            cpu_us: u64::MAX,
        };
        let (tree, checks) = parse(Lang::C, src.as_bytes(), &mut parser, tight);
        assert!(tree.is_none() && checks == 2, "{checks}");
        let no_time = Budget {
            checks: u64::MAX,
            cpu_us: 0,
        };
        assert!(parse(Lang::C, src.as_bytes(), &mut parser, no_time)
            .0
            .is_none());
        // The same parser then parses a file from its start, within the default budget.
        let defs = definitions(Lang::C, b"int g(void) { return 1; }\n", &mut parser);
        assert_eq!(defs.map(|d| d.len()), Some(1));
        let whole = definitions(Lang::C, src.as_bytes(), &mut parser).expect("in budget");
        assert_eq!(whole.len(), 400);
        // The budget grows linearly with the file, both in checks and in time.
        let (none, one, two) = (
            parse_budget(0),
            parse_budget(1 << 20),
            parse_budget(2 << 20),
        );
        assert!(one.checks > none.checks && one.cpu_us > none.cpu_us);
        assert_eq!(two.checks - one.checks, one.checks - none.checks);
        assert_eq!(two.cpu_us - one.cpu_us, one.cpu_us - none.cpu_us);
    }

    #[test]
    fn every_grammar_loads() {
        let mut parser = Parser::new();
        for lang in Lang::ALL {
            assert!(parser.set_language(&lang.grammar()).is_ok(), "{lang:?}");
        }
    }
}
