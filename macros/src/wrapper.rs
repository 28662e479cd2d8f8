//! `#[ritmo::limited]` on a trait: the trait as written (less its `#[rate_limited]` attributes),
//! and `<Trait>Limited`, a wrapper that implements the trait by delegation, taking a permit first
//! in every limited method.

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, format_ident, quote};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{
    FnArg, GenericParam, Generics, Ident, ItemTrait, Lifetime, ReturnType, TraitItem, TraitItemFn,
    Type, parse_quote,
};

use crate::args::{Limit, Options, krate};
use crate::common::{
    BareSelf, Mentions, acquire_prologue, check_returns_result, future_output, is_async,
    result_type, returns_send, take_limit,
};
use crate::ids::{id_tokens, parameter_types};

/// A method of the trait and its `#[rate_limited]` limit, if it has one.
type Method = (TraitItemFn, Option<Limit>);

/// Rewrites `Self::X` as `<T as Trait<..>>::X`, for where-clauses on the wrapper's impl.
struct SelfAsInner<'a> {
    inner: &'a Type,
    trait_path: &'a TokenStream,
}

impl VisitMut for SelfAsInner<'_> {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Type::Path(p) = ty
            && p.qself.is_none()
            && p.path.segments.len() > 1
            && p.path.segments[0].ident == "Self"
        {
            let rest: Vec<_> = p.path.segments.iter().skip(1).collect();
            let (inner, trait_path) = (self.inner, self.trait_path);
            *ty = parse_quote!(<#inner as #trait_path>::#(#rest)::*);
            return;
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }
}

/// The name of a type or const parameter; `None` for a lifetime.
fn param_ident(param: &GenericParam) -> Option<&Ident> {
    match param {
        GenericParam::Type(t) => Some(&t.ident),
        GenericParam::Const(c) => Some(&c.ident),
        GenericParam::Lifetime(_) => None,
    }
}

fn pick_ident(generics: &Generics, wanted: &str, fallback: &str) -> Ident {
    let taken = generics
        .params
        .iter()
        .filter_map(param_ident)
        .any(|i| i == wanted);
    format_ident!("{}", if taken { fallback } else { wanted })
}

/// The names the wrapper is built from: ritmo's path, the trait's, the wrapper's, and the impl's
/// own parameters (renamed where the trait already uses the name).
struct Names {
    krate: TokenStream,
    trait_name: String,
    wrapper: Ident,
    /// The lifetime of the borrowed limiters.
    r: Lifetime,
    /// The wrapped type's and the clock's parameter.
    inner_ty: Ident,
    clock: Ident,
    /// The trait with its parameters, as the impl names it.
    trait_path: TokenStream,
    /// The trait's type and const parameters, which an error type may mention.
    generic_names: Vec<Ident>,
}

impl Names {
    fn of(options: &Options, item: &ItemTrait) -> Names {
        let trait_ident = item.ident.clone();
        let lifetime_taken = item.generics.lifetimes().any(|l| l.lifetime.ident == "r");
        let (_, trait_ty_generics, _) = item.generics.split_for_impl();
        Names {
            krate: krate(options),
            trait_name: trait_ident.to_string(),
            wrapper: format_ident!("{}Limited", trait_ident),
            r: Lifetime::new(
                if lifetime_taken { "'__ritmo" } else { "'r" },
                Span::call_site(),
            ),
            inner_ty: pick_ident(&item.generics, "T", "__RitmoInner"),
            clock: pick_ident(&item.generics, "C", "__RitmoClock"),
            trait_path: quote!(#trait_ident #trait_ty_generics),
            generic_names: item
                .generics
                .params
                .iter()
                .filter_map(param_ident)
                .cloned()
                .collect(),
        }
    }
}

/// What the trait's items add to the wrapper: the impl's items and where-clauses, and for each
/// limited method its limiter field, how `new` and `with_settings` fill it, its lookup, its row
/// in the docs, its `Debug` field and its copy in `Clone`.
#[derive(Default)]
struct Parts {
    impl_items: Vec<TokenStream>,
    extra_where: Vec<TokenStream>,
    fields: Vec<TokenStream>,
    inits: Vec<TokenStream>,
    inits_with: Vec<TokenStream>,
    lookups: Vec<TokenStream>,
    doc_rows: Vec<TokenStream>,
    debug_fields: Vec<TokenStream>,
    fields_copy: Vec<TokenStream>,
    needs_blocking: bool,
    needs_async: bool,
}

pub fn expand(options: Options, mut item: ItemTrait) -> syn::Result<TokenStream> {
    let methods = match take_methods(&mut item) {
        Ok(methods) => methods,
        Err(e) => {
            // The trait still expands, so that the attribute's errors come alone.
            let e = e.to_compile_error();
            return Ok(quote!(#item #e));
        }
    };
    let names = Names::of(&options, &item);
    let mut parts = Parts::default();
    for trait_item in &item.items {
        if let Some(delegated) = delegated_item(trait_item, &names)? {
            parts.impl_items.push(delegated);
        }
    }
    for method in &methods {
        let method = method_item(method, &names, &mut parts)?;
        parts.impl_items.push(method);
    }
    Ok(wrapper_tokens(&item, &names, parts))
}

/// The trait's methods, each with its `#[rate_limited]` limit taken off (every attribute's
/// error, combined).
fn take_methods(item: &mut ItemTrait) -> syn::Result<Vec<Method>> {
    let mut methods = Vec::new();
    let mut errors: Option<syn::Error> = None;
    for trait_item in &mut item.items {
        if let TraitItem::Fn(f) = trait_item {
            match take_limit(&mut f.attrs) {
                Ok(limit) => methods.push((f.clone(), limit)),
                Err(e) => match &mut errors {
                    Some(all) => all.combine(e),
                    None => errors = Some(e),
                },
            }
        }
    }
    match errors {
        Some(e) => Err(e),
        None => Ok(methods),
    }
}

/// The wrapper's delegation of an associated type or const (`None` for a method, which
/// [`method_item`] delegates).
fn delegated_item(trait_item: &TraitItem, names: &Names) -> syn::Result<Option<TokenStream>> {
    let (inner_ty, trait_path) = (&names.inner_ty, &names.trait_path);
    Ok(Some(match trait_item {
        TraitItem::Type(t) => {
            let ident = &t.ident;
            let mut generics = t.generics.clone();
            let where_clause = generics.where_clause.take();
            let (_, ty_generics, _) = generics.split_for_impl();
            let attrs = cfg_attrs(&t.attrs);
            let params = &generics.params;
            let params = if params.is_empty() {
                quote!()
            } else {
                quote!(<#params>)
            };
            quote! {
                #(#attrs)*
                type #ident #params = <#inner_ty as #trait_path>::#ident #ty_generics #where_clause;
            }
        }
        TraitItem::Const(c) => {
            let ident = &c.ident;
            let ty = &c.ty;
            let attrs = cfg_attrs(&c.attrs);
            quote! {
                #(#attrs)*
                const #ident: #ty = <#inner_ty as #trait_path>::#ident;
            }
        }
        TraitItem::Fn(_) => return Ok(None),
        other => {
            return Err(syn::Error::new(
                other.span(),
                "#[ritmo::limited] cannot delegate this trait item",
            ));
        }
    }))
}

/// A method's parameters: the receiver as written, the others renamed (patterns are the
/// trait's) as the wrapper declares them and as it passes them on. A type that names `Self`
/// is an error.
type Parameters = (Option<syn::Receiver>, Vec<TokenStream>, Vec<TokenStream>);

fn parameters(sig: &syn::Signature) -> syn::Result<Parameters> {
    let ident = &sig.ident;
    let mut receiver = None;
    let mut inputs = Vec::new();
    let mut args = Vec::new();
    for (i, input) in sig.inputs.iter().enumerate() {
        match input {
            FnArg::Receiver(rcv) => receiver = Some(rcv.clone()),
            FnArg::Typed(t) => {
                no_bare_self(&t.ty, ident)?;
                let name = format_ident!("__ritmo_arg{}", i);
                let ty = &t.ty;
                inputs.push(quote!(#name: #ty));
                args.push(quote!(#name));
            }
        }
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        no_bare_self(ty, ident)?;
    }
    Ok((receiver, inputs, args))
}

fn no_bare_self(ty: &Type, method: &Ident) -> syn::Result<()> {
    let mut bare = BareSelf::default();
    bare.visit_type(ty);
    match bare.0 {
        Some(span) => Err(self_error(span, method)),
        None => Ok(()),
    }
}

/// The wrapper's method for `method`: the call delegated to the wrapped value, after taking a
/// permit if the method is limited (its limiter then added to `parts`).
fn method_item(method: &Method, names: &Names, parts: &mut Parts) -> syn::Result<TokenStream> {
    let (f, limit) = method;
    let sig = &f.sig;
    let ident = &sig.ident;
    let (receiver, inputs, args) = parameters(sig)?;
    let inner_arg = receiver
        .as_ref()
        .map(|rcv| receiver_access(rcv, ident))
        .transpose()?;
    let call_args = match &inner_arg {
        Some(inner) => quote!(#inner, #(#args),*),
        None => quote!(#(#args),*),
    };
    let (inner_ty, trait_path) = (&names.inner_ty, &names.trait_path);
    let awaiting = sig.asyncness.map(|_| quote!(.await));
    let mut delegate = quote!(<#inner_ty as #trait_path>::#ident(#call_args) #awaiting);
    if matches!(sig.safety, syn::Safety::Unsafe(_)) {
        delegate = quote!(unsafe { #delegate });
    }
    let prologue = match limit {
        None => quote!(),
        Some(limit) => {
            check_limited(sig, receiver.is_some())?;
            let waits = match is_async(sig) {
                true => &mut parts.needs_async,
                false => &mut parts.needs_blocking,
            };
            *waits = true;
            if let Some(bound) = error_bound(sig, names) {
                parts.extra_where.push(bound);
            }
            let field = format_ident!("__ritmo_{}", ident);
            parts.add_limiter(limit, sig, &field, names);
            let (prologue, body) = limited_body(&names.krate, &field, sig, delegate);
            delegate = body;
            prologue
        }
    };
    let (constness, asyncness, safety, abi) =
        (&sig.constness, &sig.asyncness, &sig.safety, &sig.abi);
    let (generics, output) = (&sig.generics, &sig.output);
    let where_clause = &generics.where_clause;
    let params = match &receiver {
        Some(rcv) => quote!(#rcv, #(#inputs),*),
        None => quote!(#(#inputs),*),
    };
    let attrs = cfg_attrs(&f.attrs);
    Ok(quote! {
        #(#attrs)*
        #[inline]
        #constness #asyncness #safety #abi fn #ident #generics (#params) #output #where_clause {
            #prologue
            #delegate
        }
    })
}

/// Whether a method can be limited: it takes `self` (the wrapper keeps the limiter), returns a
/// `Result`, and promises no `Send` the wrapper cannot keep.
fn check_limited(sig: &syn::Signature, has_receiver: bool) -> syn::Result<()> {
    let ident = &sig.ident;
    if !has_receiver {
        return Err(syn::Error::new(
            ident.span(),
            format!(
                "#[rate_limited] on `{ident}`, which takes no `self`: the wrapper keeps the limiter, so only methods can be limited"
            ),
        ));
    }
    check_returns_result(sig)?;
    if returns_send(sig) {
        return Err(syn::Error::new(
            crate::common::return_span(sig),
            format!(
                "#[ritmo::limited] cannot promise `Send` for `{ident}`: the wrapper works over any clock, and a clock's sleep is not known to be `Send`; put #[ritmo::rate_limited(...)] on the method of the implementation instead (its registry's clock is known), or return `impl Future` without `+ Send`"
            ),
        ));
    }
    Ok(())
}

/// The where-clause a limited method's error type needs when it depends on the implementation
/// (`Self::Error`) or on the trait's parameters: then it is checked on the impl.
fn error_bound(sig: &syn::Signature, names: &Names) -> Option<TokenStream> {
    let error = result_error_type(result_type(sig)?)?;
    let mut mentions = Mentions {
        names: &names.generic_names,
        found: false,
    };
    mentions.visit_type(&error);
    if !mentions.found {
        return None;
    }
    let mut error = error.clone();
    let inner_ty = &names.inner_ty;
    let inner: Type = parse_quote!(#inner_ty);
    SelfAsInner {
        inner: &inner,
        trait_path: &names.trait_path,
    }
    .visit_type_mut(&mut error);
    let krate = &names.krate;
    Some(quote!(#error: #krate::__private::CarriesRateLimitExceeded))
}

impl Parts {
    /// The limiter of a limited method: its field, how `new` and `with_settings` register it,
    /// its lookup by name, its `Debug` and `Clone`, and its row in the wrapper's docs.
    fn add_limiter(&mut self, limit: &Limit, sig: &syn::Signature, field: &Ident, names: &Names) {
        let (krate, trait_name) = (&names.krate, &names.trait_name);
        let (r, clock) = (&names.r, &names.clock);
        let ident = &sig.ident;
        let id = id_tokens(limit, Some(trait_name), sig);
        let config = limit.config_tokens(krate);
        let shared = limit.shared_tokens();
        self.fields.push(quote! {
            #field: &#r #krate::__private::RateLimiter<#clock>
        });
        self.inits.push(quote! {
            #field: #krate::__private::register(registry, #id, #config)?
        });
        self.inits_with.push(quote! {
            #field: #krate::__private::register_with(registry, settings, #id, #shared, #config)?
        });
        let method_name = ident.to_string();
        self.lookups
            .push(quote!(#method_name => ::core::option::Option::Some(self.#field)));
        self.debug_fields
            .push(quote!(.field(#method_name, &self.#field.id())));
        self.fields_copy.push(quote!(#field: self.#field,));
        let id_doc = match &limit.name {
            Some(name) => quote!(#name),
            None => {
                let rest = format!("::{trait_name}::{ident}({})", parameter_types(sig));
                quote!(::core::concat!(::core::module_path!(), #rest))
            }
        };
        let row = format!("| `{ident}` | ");
        let rest = format!("` | {} |\n", limit.described);
        self.doc_rows.push(quote!(#row, "`", #id_doc, #rest));
    }
}

/// A limited method's prologue and body, by its shape. A method that returns a future: the
/// future takes the permit, then calls the wrapped method and awaits its future (the limiter is
/// copied out of `self` first: a `&mut self` goes to the call). Any other (blocking, or
/// `async fn`): the permit is taken before the delegated call.
fn limited_body(
    krate: &TokenStream,
    field: &Ident,
    sig: &syn::Signature,
    delegate: TokenStream,
) -> (TokenStream, TokenStream) {
    if future_output(sig).is_some() {
        let acquire = acquire_prologue(krate, quote!(__ritmo_limiter), sig);
        let body = quote! {
            let __ritmo_limiter = self.#field;
            async move {
                #acquire
                #delegate.await
            }
        };
        (quote!(), body)
    } else {
        (acquire_prologue(krate, quote!(self.#field), sig), delegate)
    }
}

/// The impl's generics: `'r`, the trait's own (without defaults), `T: Trait`, and `C` bound by
/// what its limited methods wait with; the where-clauses of their error types.
fn impl_generics(item: &ItemTrait, names: &Names, parts: &Parts) -> Generics {
    let (krate, r, clock) = (&names.krate, &names.r, &names.clock);
    let (inner_ty, trait_path) = (&names.inner_ty, &names.trait_path);
    let mut impl_generics = item.generics.clone();
    for param in impl_generics.params.iter_mut() {
        match param {
            GenericParam::Type(t) => t.default = None,
            GenericParam::Const(c) => c.default = None,
            GenericParam::Lifetime(_) => {}
        }
    }
    impl_generics.params.insert(
        0,
        GenericParam::Lifetime(syn::LifetimeParam::new(r.clone())),
    );
    let mut clock_bounds = quote!(#krate::__private::Clock);
    if parts.needs_blocking {
        clock_bounds.extend(quote!(+ #krate::__private::BlockingClock));
    }
    if parts.needs_async {
        clock_bounds.extend(quote!(+ #krate::__private::AsyncClock));
    }
    impl_generics
        .params
        .push(parse_quote!(#inner_ty: #trait_path));
    impl_generics
        .params
        .push(parse_quote!(#clock: #clock_bounds));
    let where_clause = impl_generics.make_where_clause();
    for predicate in &parts.extra_where {
        where_clause.predicates.push(parse_quote!(#predicate));
    }
    impl_generics
}

/// The wrapper's docs: what it does, then a table of its limited methods.
fn wrapper_doc(names: &Names, parts: &Parts) -> TokenStream {
    let (trait_name, wrapper) = (&names.trait_name, &names.wrapper);
    let doc_head = format!(
        "Wraps any [`{trait_name}`]: each limited method takes a permit from its rate limiter before it calls the wrapped value's method; the others call it directly. Generated by `#[ritmo::limited]`.\n\n\
         A rejected call never reaches the wrapped value: the method returns `Err(RateLimitExceeded.into())`. \
         A call whose permit arrives within `max_wait` waits for it the way the registry's clock waits \
         (a `ManualClock` advances, the std clocks park the thread or sleep on tokio, Embassy's awaits a timer).\n\n\
         Build it with [`new`]({wrapper}::new) (the limits as written) or [`with_settings`]({wrapper}::with_settings) \
         (settings layered over them). Methods that share a `name` share one limiter.\n\n"
    );
    let table = if parts.doc_rows.is_empty() {
        quote!("No method carries `#[rate_limited]`: every call is delegated as is.\n")
    } else {
        let doc_rows = &parts.doc_rows;
        quote!("| method | limiter id | limit |\n| --- | --- | --- |\n", #(#doc_rows,)*)
    };
    quote!(::core::concat!(#doc_head, #table))
}

/// The trait as written, then the wrapper: its struct, constructors, accessors, `Debug`,
/// `Clone`, and its impl of the trait.
fn wrapper_tokens(item: &ItemTrait, names: &Names, parts: Parts) -> TokenStream {
    let impl_generics = impl_generics(item, names, &parts);
    let (impl_params, _, impl_where) = impl_generics.split_for_impl();
    let doc = wrapper_doc(names, &parts);
    let (krate, r, clock) = (&names.krate, &names.r, &names.clock);
    let (trait_path, wrapper, inner_ty) = (&names.trait_path, &names.wrapper, &names.inner_ty);
    let (impl_items, fields, inits) = (parts.impl_items, parts.fields, parts.inits);
    let (inits_with, lookups) = (parts.inits_with, parts.lookups);
    let (debug_fields, fields_copy) = (parts.debug_fields, parts.fields_copy);
    let vis = &item.vis;
    let unsafety = &item.unsafety;
    let phantom = quote!(__ritmo_limiters: ::core::marker::PhantomData<&#r #krate::__private::RateLimiter<#clock>>);
    let phantom_init = quote!(__ritmo_limiters: ::core::marker::PhantomData);
    let struct_fields = quote!(#(#fields,)* #phantom);
    quote! {
        #item

        #[doc = #doc]
        #vis struct #wrapper<#r, #inner_ty, #clock = #krate::__private::DefaultClock> {
            inner: #inner_ty,
            #struct_fields
        }

        impl<#r, #inner_ty, #clock: #krate::__private::Clock + ::core::clone::Clone> #wrapper<#r, #inner_ty, #clock> {
            /// Wraps `inner`, each limited method with its limiter from `registry`: created there
            /// the first time with the limits written on the method, shared afterwards.
            ///
            /// # Errors
            ///
            /// A `RegistryError` with its code: `RITMO-REG-008` when an id (a shared `name`) is
            /// already registered with a different config, `RITMO-REG-010` when the registry is
            /// full, or the code of a limit given as an expression that is not valid.
            #[allow(clippy::needless_question_mark)]
            pub fn new<const N: usize>(
                inner: #inner_ty,
                registry: &#r #krate::__private::Registry<#clock, N>,
            ) -> ::core::result::Result<Self, #krate::__private::RegistryError> {
                let _ = registry;
                ::core::result::Result::Ok(Self { inner, #(#inits,)* #phantom_init })
            }

            /// Wraps `inner` as [`new`](Self::new) does, with `settings` layered over the limits
            /// written on the methods: `configs.<name>.*` (for a method with a `name`, or the
            /// config its instance names, or `configs.default`), then `instances.<id>.*`, override
            /// them attribute by attribute. Settings loaded from TOML or the environment
            /// (`ritmo::server::settings::OwnedSettings`) give theirs with `.settings()`.
            ///
            /// # Errors
            ///
            /// As [`new`](Self::new), and the settings' own: `RITMO-REG-003` (a value that makes
            /// no valid config, naming its key), `RITMO-REG-004` (an unknown base config), or the
            /// attribute's code for a value that does not read.
            #[allow(clippy::needless_question_mark)]
            pub fn with_settings<const N: usize, I>(
                inner: #inner_ty,
                registry: &#r #krate::__private::Registry<#clock, N>,
                settings: &#krate::__private::Settings<I>,
            ) -> ::core::result::Result<Self, #krate::__private::RegistryError>
            where
                I: ::core::iter::IntoIterator + ::core::clone::Clone,
                I::Item: #krate::__private::Setting,
            {
                let _ = (registry, settings);
                ::core::result::Result::Ok(Self { inner, #(#inits_with,)* #phantom_init })
            }
        }

        impl<#r, #inner_ty, #clock> #wrapper<#r, #inner_ty, #clock> {
            /// The wrapped value.
            pub fn inner(&self) -> &#inner_ty {
                &self.inner
            }

            /// The wrapped value, mutably.
            pub fn inner_mut(&mut self) -> &mut #inner_ty {
                &mut self.inner
            }

            /// Unwraps the value; the limiters stay in their registry.
            pub fn into_inner(self) -> #inner_ty {
                self.inner
            }

            /// The limiter of the limited method named `method` (`None` for any other name).
            pub fn limiter(&self, method: &str) -> ::core::option::Option<&#r #krate::__private::RateLimiter<#clock>> {
                match method {
                    #(#lookups,)*
                    _ => ::core::option::Option::None,
                }
            }
        }

        impl<#r, #inner_ty: ::core::fmt::Debug, #clock> ::core::fmt::Debug for #wrapper<#r, #inner_ty, #clock> {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.debug_struct(::core::stringify!(#wrapper))
                    .field("inner", &self.inner)
                    #(#debug_fields)*
                    .finish()
            }
        }

        impl<#r, #inner_ty: ::core::clone::Clone, #clock> ::core::clone::Clone for #wrapper<#r, #inner_ty, #clock> {
            fn clone(&self) -> Self {
                Self {
                    inner: ::core::clone::Clone::clone(&self.inner),
                    #(#fields_copy)*
                    __ritmo_limiters: ::core::marker::PhantomData,
                }
            }
        }

        #unsafety impl #impl_params #trait_path for #wrapper<#r, #inner_ty, #clock> #impl_where {
            #(#impl_items)*
        }
    }
}

/// `cfg` attributes carry over to the generated items; others stay on the trait.
fn cfg_attrs(attrs: &[syn::Attribute]) -> Vec<&syn::Attribute> {
    attrs.iter().filter(|a| a.path().is_ident("cfg")).collect()
}

fn self_error(span: Span, method: &Ident) -> syn::Error {
    syn::Error::new(
        span,
        format!(
            "#[ritmo::limited] cannot delegate `{method}`: it takes or returns `Self`, which the wrapper cannot turn into the wrapped type"
        ),
    )
}

/// How the wrapper passes its wrapped value for a receiver: `&self`, `&mut self`, `self`.
fn receiver_access(rcv: &syn::Receiver, method: &Ident) -> syn::Result<TokenStream> {
    let by_type = |ty: &Type| match ty {
        Type::Reference(r) => match &*r.elem {
            Type::Path(p) if p.path.is_ident("Self") => Some(r.mutability.is_some()),
            _ => None,
        }
        .map(|m| {
            if m {
                quote!(&mut self.inner)
            } else {
                quote!(&self.inner)
            }
        }),
        Type::Path(p) if p.path.is_ident("Self") => Some(quote!(self.inner)),
        _ => None,
    };
    let shape = match &rcv.kind {
        syn::ReceiverKind::Value => Some(quote!(self.inner)),
        syn::ReceiverKind::Reference(_, _, Some(_)) => Some(quote!(&mut self.inner)),
        syn::ReceiverKind::Reference(_, _, None) => Some(quote!(&self.inner)),
        syn::ReceiverKind::Typed(_, ty) => by_type(ty),
        _ => None,
    };
    shape.ok_or_else(|| {
        let written = match &rcv.kind {
            syn::ReceiverKind::Typed(_, ty) => crate::tokens::tidy(ty.to_token_stream()),
            _ => crate::tokens::tidy(rcv.to_token_stream()),
        };
        syn::Error::new(
            rcv.span(),
            format!(
                "#[ritmo::limited] delegates methods taking `self`, `&self` or `&mut self`; `{method}` takes `{written}`"
            ),
        )
    })
}

/// `E` of `Result<T, E>` (two arguments; an alias with one hides it).
fn result_error_type(ty: &Type) -> Option<Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|a| match a {
            syn::GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    match types.as_slice() {
        [_, error] => Some((*error).clone()),
        _ => None,
    }
}
