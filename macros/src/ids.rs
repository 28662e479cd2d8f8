//! Limiter ids: `name` when given, else `<module path>::<owner>::<fn>(<parameter types>)`, the
//! types written as a person would (`&str`, `Vec<u8>`, `impl AsRef<[u8]>`).

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::{ToTokens, quote};
use syn::{FnArg, Signature};

use crate::args::Limit;

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

/// The parameter types of a signature (not the receiver), as the id shows them.
pub fn parameter_types(sig: &Signature) -> String {
    let types: Vec<String> = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(t) => Some(tidy(t.ty.to_token_stream())),
            FnArg::Receiver(_) => None,
        })
        .collect();
    types.join(", ")
}

/// An expression of type `&'static str`: the limiter's id. `owner` is the trait or type, if any.
pub fn id_tokens(limit: &Limit, owner: Option<&str>, sig: &Signature) -> TokenStream {
    if let Some(name) = &limit.name {
        return quote!(#name);
    }
    let rest = match owner {
        Some(owner) => format!("::{owner}::{}({})", sig.ident, parameter_types(sig)),
        None => format!("::{}({})", sig.ident, parameter_types(sig)),
    };
    quote!(::core::concat!(::core::module_path!(), #rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(text: &str) -> String {
        let ty: syn::Type = syn::parse_str(text).unwrap();
        tidy(ty.to_token_stream())
    }

    #[test]
    fn types_read_as_written() {
        for written in [
            "&str",
            "&'a mut Vec<u8>",
            "Option<&'static str>",
            "impl Fn(u8) -> bool",
            "impl Iterator<Item = u8> + Send",
            "Box<dyn std::error::Error + Send + Sync>",
            "(u8, u16)",
            "[u8; 4]",
            "&[u8]",
            "HashMap<String, Vec<Option<u32>>>",
            "<T as Trait>::Output",
        ] {
            assert_eq!(ty(written), written);
        }
    }

    #[test]
    fn parameter_types_leave_out_the_receiver() {
        let sig: Signature =
            syn::parse_str("fn f(&mut self, a: &str, (x, y): (u8, u8), f: impl Fn())").unwrap();
        assert_eq!(parameter_types(&sig), "&str, (u8, u8), impl Fn()");
    }
}
