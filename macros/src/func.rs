//! `#[ritmo::rate_limited(...)]` on a free function or a method, and `#[ritmo::limited]` on an
//! `impl` block: the function keeps its body, which now starts by taking a permit from its
//! limiter in a registry (the one the attribute names, or the process-wide default on std).

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};
use syn::{Block, Expr, ImplItem, ItemImpl, Signature};

use crate::args::{Limit, Options, krate};
use crate::common::{acquire_prologue, check_returns_result, future_output, take_limit};
use crate::ids::id_tokens;
use crate::tokens::tidy;

/// The body of a limited function: the permit first, then the body as written (so `return` and
/// `?` in it keep their meaning).
pub fn limited_block(
    limit: &Limit,
    default_registry: Option<&Expr>,
    owner: Option<&str>,
    krate: &TokenStream,
    sig: &Signature,
    block: &Block,
) -> syn::Result<TokenStream> {
    check_returns_result(sig)?;
    let registry = match limit.registry.as_ref().or(default_registry) {
        Some(registry) => quote!((#registry)),
        None => quote!(#krate::__private::default_registry::<()>()),
    };
    let id = id_tokens(limit, owner, sig);
    let config = limit.config_tokens(krate);
    let acquire = acquire_prologue(krate, quote!(__ritmo_limiter), sig);
    let stmts = &block.stmts;
    // The limiter, looked up in the registry once and kept in a static slot.
    let limiter = quote! {
        static __RITMO_SLOT: #krate::__private::LimiterSlot = #krate::__private::LimiterSlot::new();
        let __ritmo_limiter = match #registry.__cached(&__RITMO_SLOT, #id, || #config) {
            ::core::result::Result::Ok(limiter) => limiter,
            ::core::result::Result::Err(error) => #krate::__private::unregistered(error),
        };
    };
    if future_output(sig).is_some() {
        // `-> impl Future<Output = Result<..>>`: the returned future takes the permit first, then
        // runs the body (kept in a closure so that `return` in it keeps its meaning, and so that
        // nothing of it runs for a refused call).
        return Ok(quote! {{
            #limiter
            // Called once: the closure may move what it captured (an FnOnce by its bound).
            fn __ritmo_once<F: ::core::ops::FnOnce() -> R, R>(f: F) -> F {
                f
            }
            let __ritmo_body = __ritmo_once(move || { #(#stmts)* });
            async move {
                #acquire
                __ritmo_body().await
            }
        }});
    }
    Ok(quote! {{
        #limiter
        #acquire
        #(#stmts)*
    }})
}

/// `#[ritmo::rate_limited(...)]` on one function (free, or a method in an impl block).
pub fn expand_fn(limit: Limit, item: TokenStream) -> syn::Result<TokenStream> {
    let options = Options {
        krate: limit.krate.clone(),
        registry: None,
    };
    let krate = krate(&options);
    if let Ok(mut f) = syn::parse2::<syn::ImplItemFn>(item.clone()) {
        let block = limited_block(&limit, None, None, &krate, &f.sig, &f.block)?;
        f.block = syn::parse2(block)?;
        return Ok(f.into_token_stream());
    }
    match syn::parse2::<syn::TraitItemFn>(item.clone()) {
        Ok(f) => Err(syn::Error::new(
            f.sig.ident.span(),
            "#[rate_limited] on a trait method takes #[ritmo::limited] on the trait: it generates the wrapper that limits the method",
        )),
        Err(_) => Err(syn::Error::new(
            proc_macro2::Span::call_site(),
            "#[ritmo::rate_limited] goes on a function or a method",
        )),
    }
}

/// `#[ritmo::limited]` on an impl block: each `#[rate_limited]` method is limited, its id naming
/// the type (`<module path>::<Type>::<method>(<parameter types>)`).
pub fn expand_impl(options: Options, mut item: ItemImpl) -> syn::Result<TokenStream> {
    let krate = krate(&options);
    let owner = tidy(item.self_ty.to_token_stream());
    for impl_item in &mut item.items {
        if let ImplItem::Fn(f) = impl_item
            && let Some(limit) = take_limit(&mut f.attrs)?
        {
            let krate = match &limit.krate {
                Some(path) => path.to_token_stream(),
                None => krate.clone(),
            };
            let block = limited_block(
                &limit,
                options.registry.as_ref(),
                Some(&owner),
                &krate,
                &f.sig,
                &f.block,
            )?;
            f.block = syn::parse2(block)?;
        }
    }
    Ok(item.into_token_stream())
}
