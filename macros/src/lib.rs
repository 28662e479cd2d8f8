#![doc = include_str!("../README.md")]

mod args;
mod common;
mod func;
mod ids;
mod tokens;
mod wrapper;

use proc_macro::TokenStream;

/// On a trait: generates `<Trait>Limited<'r, T, C>`, which implements the trait for any `T`
/// that does, by delegation, each method marked `#[rate_limited(...)]` taking a permit from its
/// limiter first. On an `impl` block: limits its `#[rate_limited(...)]` methods in place, their
/// ids naming the type.
///
/// Options: `crate = path` (how the generated code names ritmo, `::ritmo` by default); on an
/// impl block also `registry = path::TO::STATIC` (where its methods' limiters live, unless a
/// method names its own). See the [crate docs](crate) for the whole story.
#[proc_macro_attribute]
pub fn limited(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand_limited(attr.into(), item.into())
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}

fn expand_limited(
    attr: proc_macro2::TokenStream,
    item: proc_macro2::TokenStream,
) -> syn::Result<proc_macro2::TokenStream> {
    match syn::parse2::<syn::Item>(item)? {
        syn::Item::Trait(item) => wrapper::expand(args::parse_options(attr, false)?, item),
        syn::Item::Impl(item) => func::expand_impl(args::parse_options(attr, true)?, item),
        syn::Item::Fn(f) => Err(syn::Error::new(
            f.sig.ident.span(),
            "#[ritmo::limited] goes on a trait or an impl block; limit a function with #[ritmo::rate_limited(permits = .., period = \"..\")]",
        )),
        other => Err(syn::Error::new_spanned(
            other,
            "#[ritmo::limited] goes on a trait (to generate its rate-limited wrapper) or an impl block",
        )),
    }
}

/// On a free function or a method: the function takes a permit from its limiter before its body
/// runs, waiting for it within `max_wait`, or returns `Err(RateLimitExceeded.into())` without
/// running the body.
///
/// Attributes: `permits`, `period`, `max_wait`, `enabled`, `name` (the id, shared by every
/// function that gives it), `registry = path::TO::STATIC` (where the limiter lives; the
/// process-wide `ritmo::server::default_registry()` on std when omitted), `crate = path`. Inside a
/// trait or impl block marked `#[ritmo::limited]`, the same attribute marks the methods to limit.
/// See the [crate docs](crate).
#[proc_macro_attribute]
pub fn rate_limited(attr: TokenStream, item: TokenStream) -> TokenStream {
    let attr: proc_macro2::TokenStream = attr.into();
    let whole = if attr.is_empty() {
        quote::quote!(rate_limited)
    } else {
        attr.clone()
    };
    args::parse_limit(attr, &whole)
        .and_then(|limit| func::expand_fn(limit, item.into()))
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
