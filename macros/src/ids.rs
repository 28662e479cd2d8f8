//! Limiter ids: `name` when given, else `<module path>::<owner>::<fn>(<parameter types>)`, the
//! types written as a person would (`&str`, `Vec<u8>`, `impl AsRef<[u8]>`).

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{FnArg, Signature};

use crate::args::Limit;
use crate::tokens::tidy;

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
