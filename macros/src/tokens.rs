//! Tokens as text a person reads: parameter types in limiter ids, values in error messages.

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

/// Tokens as compact text: a space only between two words (`mut T`, `dyn Fn`), after a comma and
/// around `+`, `=` and `->`.
pub fn tidy(tokens: TokenStream) -> String {
    let mut out = String::new();
    write_tokens(tokens, &mut out);
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '"'
}

fn write_tokens(tokens: TokenStream, out: &mut String) {
    let mut joint = false;
    for tree in tokens {
        match tree {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{ ", " }"),
                    Delimiter::None => ("", ""),
                };
                out.push_str(open);
                write_tokens(g.stream(), out);
                out.push_str(close);
                joint = false;
            }
            TokenTree::Punct(p) => {
                let c = p.as_char();
                match c {
                    ',' | ';' => {
                        out.push(c);
                        out.push(' ');
                    }
                    '+' | '=' => {
                        if !joint && !out.ends_with(' ') {
                            out.push(' ');
                        }
                        out.push(c);
                        if p.spacing() == Spacing::Alone {
                            out.push(' ');
                        }
                    }
                    '-' if p.spacing() == Spacing::Joint => {
                        if !out.ends_with(' ') {
                            out.push(' ');
                        }
                        out.push(c);
                    }
                    '>' if joint && out.ends_with('-') => {
                        out.push_str("> ");
                    }
                    _ => out.push(c),
                }
                joint = p.spacing() == Spacing::Joint;
            }
            other => {
                let text = other.to_string();
                let starts_word = text.chars().next().is_some_and(is_word);
                let prev_word = out.chars().last().is_some_and(is_word);
                if starts_word && prev_word && !out.ends_with('\'') {
                    out.push(' ');
                }
                // A lifetime (`'a`) written after `&` stays glued; after it a word needs a space.
                out.push_str(&text);
                joint = false;
            }
        }
    }
}
