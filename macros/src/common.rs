//! Pieces shared by the trait wrapper and the limited functions: finding the attribute, checking
//! what a method returns, the limited call's prologue.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{Attribute, ReturnType, Signature, Type};

use crate::args::{Limit, parse_limit};

/// Whether `attr` is `#[rate_limited(...)]` (under any path: `ritmo::rate_limited` too).
pub fn is_rate_limited(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "rate_limited")
}

/// Takes the `#[rate_limited(...)]` attribute off `attrs` and parses it; two are an error.
pub fn take_limit(attrs: &mut Vec<Attribute>) -> syn::Result<Option<Limit>> {
    let mut found = None;
    let mut kept = Vec::with_capacity(attrs.len());
    for attr in attrs.drain(..) {
        if !is_rate_limited(&attr) {
            kept.push(attr);
            continue;
        }
        if found.is_some() {
            return Err(syn::Error::new_spanned(
                &attr,
                "a function takes one #[rate_limited(...)]: share a limiter with `name = \"...\"` instead",
            ));
        }
        let tokens = match &attr.meta {
            syn::Meta::List(list) => list.tokens.clone(),
            _ => TokenStream::new(),
        };
        found = Some(parse_limit(tokens, &attr.to_token_stream())?);
    }
    *attrs = kept;
    Ok(found)
}

/// The span errors about the return type point at.
pub fn return_span(sig: &Signature) -> Span {
    match &sig.output {
        ReturnType::Default => sig.ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    }
}

/// `X` of a return type `impl Future<Output = X> (+ Send ...)`: a function that returns its
/// future itself rather than being an `async fn`.
pub fn future_output(sig: &Signature) -> Option<&Type> {
    returned_traits(sig).find_map(|t| {
        let last = t.path.segments.last()?;
        if last.ident != "Future" {
            return None;
        }
        let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
            return None;
        };
        args.args.iter().find_map(|arg| match arg {
            syn::GenericArgument::AssocType(a) if a.ident == "Output" => Some(&a.ty),
            _ => None,
        })
    })
}

/// Whether the return type is `impl ... + Send`.
pub fn returns_send(sig: &Signature) -> bool {
    returned_traits(sig).any(|t| t.path.segments.last().is_some_and(|s| s.ident == "Send"))
}

/// The trait bounds of a return type `impl A + B`; none for any other.
fn returned_traits(sig: &Signature) -> impl Iterator<Item = &syn::TraitBound> {
    let bounds = match &sig.output {
        ReturnType::Type(_, ty) => match &**ty {
            Type::ImplTrait(t) => Some(&t.bounds),
            _ => None,
        },
        ReturnType::Default => None,
    };
    bounds
        .into_iter()
        .flatten()
        .filter_map(|bound| match bound {
            syn::TypeParamBound::Trait(t) => Some(t),
            _ => None,
        })
}

/// Whether the limited call waits the async way: an `async fn`, or a function returning
/// `impl Future<Output = ...>`.
pub fn is_async(sig: &Signature) -> bool {
    sig.asyncness.is_some() || future_output(sig).is_some()
}

/// What the function's call gives once done: its return type, or the future's `Output`.
pub fn result_type(sig: &Signature) -> Option<&Type> {
    match &sig.output {
        ReturnType::Default => None,
        ReturnType::Type(_, ty) => Some(future_output(sig).unwrap_or(ty)),
    }
}

/// A limited function must return a `Result` (any `...::Result<..>`, aliases such as
/// `io::Result<T>` too), or a future of one, so that a rejection can be returned as its `Err`.
pub fn check_returns_result(sig: &Signature) -> syn::Result<()> {
    let ok = match result_type(sig) {
        Some(Type::Path(p)) => p.path.segments.last().is_some_and(|s| s.ident == "Result"),
        _ => false,
    };
    if ok {
        return Ok(());
    }
    let found = match &sig.output {
        ReturnType::Default => "nothing (`()`)".to_string(),
        ReturnType::Type(_, ty) => format!("`{}`", crate::tokens::tidy(ty.to_token_stream())),
    };
    let hint = match &sig.output {
        ReturnType::Type(_, ty) if matches!(&**ty, Type::ImplTrait(_)) => {
            "; a function returning `impl Future<Output = Result<_, E>>` is limited too"
        }
        _ => "",
    };
    Err(syn::Error::new(
        return_span(sig),
        format!(
            "a #[rate_limited] function must return `Result<_, E>` with `E: From<ritmo::RateLimitExceeded>`, so that a rejected call can return `Err`; `{}` returns {found}{hint}",
            sig.ident
        ),
    ))
}

/// The statements a limited call starts with: take a permit from `limiter` (an expression of
/// type `&RateLimiter<C>`), waiting the clock's way within `max_wait`, or return the rejection as
/// the function's own error (from the future, for a function returning `impl Future`).
pub fn acquire_prologue(krate: &TokenStream, limiter: TokenStream, sig: &Signature) -> TokenStream {
    // Spanned at the return type, so that an error type without `From<RateLimitExceeded>` is
    // reported there.
    let span = return_span(sig);
    let hooks = krate.clone();
    let krate = respan(krate.clone(), span);
    let rejection = quote_spanned! {span=>
        ::core::result::Result::Err(#krate::__private::rejection(__ritmo_rejected))
    };
    let acquire = if is_async(sig) {
        quote!(#hooks::__private::acquire_async(#limiter).await)
    } else {
        quote!(#hooks::__private::acquire_blocking(#limiter))
    };
    quote! {
        if let ::core::result::Result::Err(__ritmo_rejected) = #acquire {
            return #rejection;
        }
    }
}

/// Finds a bare `Self` type (not `Self::Assoc`).
#[derive(Default)]
pub struct BareSelf(pub Option<Span>);

impl<'ast> Visit<'ast> for BareSelf {
    fn visit_type_path(&mut self, p: &'ast syn::TypePath) {
        if p.qself.is_none() && p.path.segments.len() == 1 && p.path.segments[0].ident == "Self" {
            self.0.get_or_insert(p.span());
        }
        syn::visit::visit_type_path(self, p);
    }
}

/// Finds whether a type names any of the given identifiers (generic parameters) or `Self`.
pub struct Mentions<'a> {
    pub names: &'a [syn::Ident],
    pub found: bool,
}

impl<'ast> Visit<'ast> for Mentions<'_> {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        if let Some(first) = p.segments.first()
            && (first.ident == "Self" || self.names.contains(&first.ident))
        {
            self.found = true;
        }
        syn::visit::visit_path(self, p);
    }
}

/// The same tokens, every one at `span`.
pub fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let proc_macro2::TokenTree::Group(g) = &tree {
                let mut group = proc_macro2::Group::new(g.delimiter(), respan(g.stream(), span));
                group.set_span(span);
                tree = proc_macro2::TokenTree::Group(group);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}
