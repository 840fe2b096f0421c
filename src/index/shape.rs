//! Definitions from a file's shape, for code without a parser (or whose parse failed or ran
//! past its budget): a line that starts a definition with a keyword (`def`, `function`, `fn`,
//! `class`, `module`, `(defun`, ...) or, in brace languages, a routine's header ending in `{`,
//! at low indentation; it runs to the next line at its indentation or less (a closing `}` or
//! `end` at its indentation is its last line). Definitions nest inside types and modules, not
//! inside routines, as with the parsers. The cost is one pass over the lines.

use super::lang::Def;

/// Deeper than this (in columns, a tab counting 4) a line never starts a definition.
const MAX_INDENT: usize = 16;
/// Definitions nest at most this deep.
const MAX_DEPTH: u32 = 4;

/// Words that may come before a definition's keyword.
const MODIFIERS: &[&str] = &[
    "pub",
    "pub(crate)",
    "pub(super)",
    "public",
    "private",
    "protected",
    "internal",
    "fileprivate",
    "open",
    "static",
    "export",
    "default",
    "async",
    "abstract",
    "final",
    "sealed",
    "override",
    "virtual",
    "inline",
    "extern",
    "local",
    "global",
    "partial",
    "data",
    "case",
    "unsafe",
    "const",
    "declare",
    "external",
    "factory",
    "mutating",
    "noncomputable",
    "recursive",
    "pure",
    "elemental",
    "impure",
    "lazy",
    "implicit",
    "rec",
];

/// A keyword that starts a definition, and the kind it defines.
fn keyword_kind(word: &str) -> Option<&'static str> {
    Some(match word {
        "def" | "defp" | "fn" | "fun" | "func" | "function" | "sub" | "proc" | "procedure"
        | "subroutine" | "method" | "let" | "defun" | "defn" | "define" | "defmethod" => "function",
        "defmacro" | "defmacrop" | "macro" | "macro_rules!" => "macro",
        "class" | "object" | "actor" | "mixin" | "defclass" => "class",
        "struct" | "defstruct" | "defrecord" => "struct",
        "record" => "record",
        "enum" => "enum",
        "union" => "union",
        "trait" => "trait",
        "interface" | "protocol" | "signature" | "sig" | "defprotocol" => "interface",
        "impl" | "instance" | "extension" | "implementation" | "defimpl" => "impl",
        "module" | "defmodule" | "package" | "program" => "module",
        "namespace" => "namespace",
        "type" | "newtype" | "typedef" | "deftype" | "data" => "type",
        _ => return None,
    })
}

/// Kinds that hold further definitions.
fn is_container(kind: &str) -> bool {
    matches!(
        kind,
        "class" | "struct" | "record" | "trait" | "interface" | "impl" | "module" | "namespace"
    )
}

/// Words that start a statement, never a routine's header.
const STATEMENTS: &[&str] = &[
    "if",
    "for",
    "while",
    "switch",
    "return",
    "else",
    "do",
    "catch",
    "case",
    "new",
    "throw",
    "sizeof",
    "delete",
    "goto",
    "elif",
    "until",
    "unless",
    "when",
    "match",
    "using",
    "await",
    "yield",
    "print",
    "echo",
    "assert",
    "foreach",
    "try",
    "synchronized",
    "with",
    "lock",
];

/// A line's indentation in columns (a tab counts 4).
fn indent(line: &str) -> usize {
    let mut n = 0;
    for c in line.chars() {
        match c {
            ' ' => n += 1,
            '\t' => n += 4,
            _ => break,
        }
    }
    n
}

/// Whether a line closes the block opened at its own indentation (`}`, `end`, `fi`, ...).
fn is_closer(t: &str) -> bool {
    t.starts_with('}')
        || t.starts_with(')')
        || t.starts_with(']')
        || t.starts_with("end")
        || t.starts_with("End")
        || t.starts_with("END")
        || matches!(t, "fi" | "done" | "esac")
}

/// Whether a line at a definition's own indentation still belongs to it (an opening brace on
/// its own line, a `begin`, a `where`).
fn continues(t: &str) -> bool {
    t.starts_with('{') || t == "begin" || t.starts_with("where") || t.starts_with("begin ")
}

/// The name a definition's header gives after its keyword: the first identifier-like word
/// (`Foo.bar`, `Foo::bar`, `valid?` kept whole).
fn name_after(rest: &str) -> Option<String> {
    let rest = rest.trim_start();
    // `(defun name`, `(define (name args)`.
    let rest = rest.trim_start_matches('(');
    let name: String = rest
        .chars()
        .take_while(|c| {
            c.is_alphanumeric() || matches!(c, '_' | '$' | '.' | ':' | '!' | '?' | '\'' | '-')
        })
        .collect();
    let name = name.trim_end_matches([':', '.', '-']);
    let first = name.chars().next()?;
    if !(first.is_alphabetic() || first == '_' || first == '$') || name.len() > 200 {
        return None;
    }
    Some(name.to_string())
}

/// The kind and name a keyword-led header line defines, if it is one.
fn keyword_header(t: &str) -> Option<(&'static str, String)> {
    let lisp = t.starts_with('(');
    let body = if lisp { &t[1..] } else { t };
    let mut rest = body;
    loop {
        let (word, after) = rest.split_once(char::is_whitespace)?;
        // A modifier before another keyword or modifier (`data class`, `case class`, `pub
        // fn`); `data Shape = ...` (Haskell) is a keyword of its own.
        let next = after.split_whitespace().next().unwrap_or("");
        if !lisp
            && MODIFIERS.contains(&word)
            && (keyword_kind(next).is_some() || MODIFIERS.contains(&next))
        {
            rest = after.trim_start();
            continue;
        }
        let kind = keyword_kind(word)?;
        // `(defun` and kin only open a form; of the `def` words outside one, the ones Python,
        // Ruby and Elixir write.
        let fits = if lisp {
            word.starts_with("def") || word == "define"
        } else {
            !word.starts_with("def")
                || matches!(
                    word,
                    "def"
                        | "defp"
                        | "defmacro"
                        | "defmacrop"
                        | "defmodule"
                        | "defprotocol"
                        | "defimpl"
                )
        };
        if !fits {
            return None;
        }
        let mut after = after.trim_start();
        if word == "let" {
            // `let rec f x =`: a binding with parameters or one that ends the line with `=`.
            after = after.strip_prefix("rec ").map_or(after, str::trim_start);
            let (lhs, _) = after.split_once('=')?;
            let words = lhs.split_whitespace().count();
            if words < 2 && !t.trim_end().ends_with('=') {
                return None;
            }
        }
        if matches!(word, "fun" | "func" | "fn" | "function") && after.starts_with('(') {
            // A Go method's receiver, `fun (x: T).name` in some dialects: skip it.
            let close = after.find(')')?;
            after = after[close + 1..].trim_start();
        }
        let name = name_after(after)?;
        if matches!(
            name.as_str(),
            "if" | "the" | "a" | "an" | "of" | "to" | "is" | "and"
        ) {
            return None;
        }
        return Some((kind, name));
    }
}

/// The name a brace language's routine header (`static int add(int a) {`,
/// `Future<void> run() async {`) defines, if the line is one.
fn brace_header(t: &str, next: Option<&str>) -> Option<String> {
    let opens = t.ends_with('{') || (t.ends_with(')') && next.is_some_and(|n| n.starts_with('{')));
    if !opens || t.contains(';') || t.contains("=>") {
        return None;
    }
    let paren = t.find('(')?;
    let head = &t[..paren];
    if head.contains('=') || head.contains('"') {
        return None;
    }
    let first = head.split_whitespace().next()?;
    if STATEMENTS.contains(&first) {
        return None;
    }
    let name: String = head
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | ':' | '~' | '$'))
        .collect::<Vec<char>>()
        .into_iter()
        .rev()
        .collect();
    let name = name.trim_start_matches(':');
    let c = name.chars().next()?;
    if !(c.is_alphabetic() || c == '_' || c == '~') || STATEMENTS.contains(&name) {
        return None;
    }
    Some(name.to_string())
}

/// An open definition: its index in the output, its indentation, whether it is a routine.
struct Open {
    at: usize,
    indent: usize,
    leaf: bool,
}

/// The definitions `text`'s shape shows, in source order (outer before inner).
pub(crate) fn definitions(text: &str) -> Vec<Def> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<Def> = Vec::new();
    let mut open: Vec<Open> = Vec::new();
    let mut last = 0usize; // the last non-blank line seen, 0-based
    for (l, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let ind = indent(line);
        let mut consumed = false;
        while let Some(top) = open.last() {
            if ind > top.indent {
                break;
            }
            if ind == top.indent && continues(t) && out[top.at].start as usize == last + 1 {
                // An opening line right after the header.
                break;
            }
            let closes = ind == top.indent && is_closer(t);
            out[top.at].end = if closes { l + 1 } else { last + 1 } as u32;
            open.pop();
            if closes {
                consumed = true;
                break;
            }
        }
        last = l;
        if consumed || ind > MAX_INDENT || open.last().is_some_and(|o| o.leaf) {
            continue;
        }
        let depth = open.len() as u32;
        if depth > MAX_DEPTH {
            continue;
        }
        let next = lines[l + 1..]
            .iter()
            .map(|n| n.trim())
            .find(|n| !n.is_empty());
        let found = keyword_header(t).or_else(|| brace_header(t, next).map(|n| ("function", n)));
        let Some((kind, name)) = found else {
            continue;
        };
        let kind = if kind == "function" && depth > 0 && open.last().is_some() {
            let parent = out[open[open.len() - 1].at].kind;
            if matches!(parent, "module" | "namespace") {
                "function"
            } else {
                "method"
            }
        } else {
            kind
        };
        open.push(Open {
            at: out.len(),
            indent: ind,
            leaf: !is_container(kind),
        });
        out.push(Def {
            kind,
            name,
            start: l as u32 + 1,
            end: l as u32 + 1,
            depth,
        });
    }
    for o in open {
        out[o.at].end = last as u32 + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(src: &str) -> Vec<(&'static str, String, u32, u32, u32)> {
        definitions(src)
            .into_iter()
            .map(|d| (d.kind, d.name, d.start, d.end, d.depth))
            .collect()
    }

    fn d(
        kind: &'static str,
        name: &str,
        start: u32,
        end: u32,
        depth: u32,
    ) -> (&'static str, String, u32, u32, u32) {
        (kind, name.to_string(), start, end, depth)
    }

    #[test]
    fn ocaml_like_lets_modules_and_types() {
        let src = "(* A queue of jobs. *)\nopen Printf\n\ntype job = { id : int; name : string }\n\nmodule Queue = struct\n  let empty = []\n  let push q j =\n    j :: q\nend\n\nlet rec drain q =\n  match q with\n  | [] -> ()\n  | _ :: rest -> drain rest\n\nlet limit = 3\n";
        assert_eq!(
            defs(src),
            vec![
                d("type", "job", 4, 4, 0),
                d("module", "Queue", 6, 10, 0),
                d("function", "push", 8, 9, 1),
                d("function", "drain", 12, 15, 0),
            ]
        );
    }

    #[test]
    fn brace_languages_with_routines_without_keywords() {
        // Dart-like: classes, methods by their headers, and an Allman brace.
        let src = "import 'x.dart';\n\nclass Parser {\n  final String src;\n\n  Parser(this.src);\n\n  Future<Token> next() async {\n    if (done) {\n      return end;\n    }\n  }\n}\n\nvoid main()\n{\n  run();\n}\n";
        assert_eq!(
            defs(src),
            vec![
                d("class", "Parser", 3, 13, 0),
                d("method", "next", 8, 12, 1),
                d("function", "main", 15, 18, 0),
            ]
        );
    }

    #[test]
    fn indentation_closes_python_like_and_lisp_forms() {
        let src = "class Store:\n    def get(self, key):\n        return self.items[key]\n\n    def put(self, key, value):\n        self.items[key] = value\n\nx = Store()\n(defun area (r)\n  (* 3.14 r r))\n";
        assert_eq!(
            defs(src),
            vec![
                d("class", "Store", 1, 6, 0),
                d("method", "get", 2, 3, 1),
                d("method", "put", 5, 6, 1),
                d("function", "area", 9, 10, 0),
            ]
        );
    }

    #[test]
    fn prose_and_data_have_no_shape() {
        assert!(defs("The function of the system is to run.\nA class of problems.\n").is_empty());
        assert!(defs("{\n  \"a\": 1,\n  \"b\": [1, 2]\n}\n").is_empty());
        assert!(defs("if (x) {\n  y();\n}\nwhile (z) {\n}\n").is_empty());
    }
}
