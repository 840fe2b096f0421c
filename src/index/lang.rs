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
            _ => return None,
        })
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
        }
    }

    /// Every language, for tests and tables.
    #[cfg(test)]
    pub(crate) const ALL: [Lang; 10] = [
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
    ];
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
        _ => Role::Through,
    }
}

/// The most syntax nodes the walk visits in one file: a pathological file stops early rather
/// than costing seconds.
const MAX_NODES: usize = 2_000_000;

/// The definitions in `text`, parsed as `lang`, in source order. `parser` is reused across
/// files (set to the language here). A parse that fails gives none.
pub(crate) fn definitions(lang: Lang, text: &[u8], parser: &mut Parser) -> Vec<Def> {
    if parser.set_language(&lang.grammar()).is_err() {
        return Vec::new();
    }
    let Some(tree) = parser.parse(text, None) else {
        return Vec::new();
    };
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
            match role(lang, child.kind(), inside_type) {
                Role::Def { kind, container } => {
                    let named = name_of(lang, child, text);
                    if let Some(name) = named {
                        let kind = refine_kind(lang, child, kind);
                        out.push(Def {
                            kind,
                            name,
                            start: child.start_position().row as u32 + 1,
                            end: end_line(child),
                            depth,
                        });
                        if container {
                            let holds_methods = !matches!(kind, "module" | "namespace");
                            stack.push((child, depth + 1, holds_methods));
                        }
                    } else if container
                        || !is_leaf_kind(kind)
                        || child.kind() == "variable_declarator"
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
    out
}

/// Kinds whose bodies are not searched for nested definitions: routines (a class's or a
/// module's members are definitions of their own).
pub(crate) fn is_leaf_kind(kind: &str) -> bool {
    matches!(kind, "function" | "method" | "constructor" | "macro")
}

/// The last line of a node, not counting a trailing newline it ends on.
fn end_line(node: Node<'_>) -> u32 {
    let end = node.end_position();
    let row = if end.column == 0 && end.row > node.start_position().row {
        end.row - 1
    } else {
        end.row
    };
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
    kind
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
        let all = definitions(lang, src.as_bytes(), &mut parser);
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

    #[test]
    fn every_grammar_loads() {
        let mut parser = Parser::new();
        for lang in Lang::ALL {
            assert!(parser.set_language(&lang.grammar()).is_ok(), "{lang:?}");
        }
    }
}
