//! The attribute's arguments: `#[rate_limited(name = "...", permits = 10, period = "1s",
//! max_wait = "500ms", enabled = true, registry = path::TO::STATIC)]`, checked as far as they are
//! literals with ritmo-core's own parser and validation.

use core::time::Duration;

use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote, quote_spanned};
use ritmo_core::{Config, ErrorCode, parse_bool, parse_duration};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit, LitStr, Meta, Token};

/// A value that is either known at expansion time or an expression evaluated when the limiter is
/// registered.
#[derive(Clone)]
pub enum Value<T> {
    Literal(T, Span),
    Expr(Expr),
}

/// A limiter's attribute, parsed and (where literal) checked.
pub struct Limit {
    pub name: Option<LitStr>,
    pub permits: Value<u32>,
    pub period: Value<Duration>,
    pub max_wait: Value<Duration>,
    pub enabled: Value<bool>,
    pub registry: Option<Expr>,
    /// `crate = path`: how generated code names ritmo.
    pub krate: Option<syn::Path>,
    /// The attribute itself, for errors about it as a whole.
    pub span: Span,
    /// How the config reads in the generated docs.
    pub described: String,
}

/// Options of `#[ritmo::limited(...)]`: the path to the facade, a registry for an impl block.
#[derive(Default)]
pub struct Options {
    pub krate: Option<syn::Path>,
    pub registry: Option<Expr>,
}

/// The path generated code names ritmo by: `::ritmo` unless `crate = path` says otherwise.
pub fn krate(options: &Options) -> TokenStream {
    match &options.krate {
        Some(path) => path.to_token_stream(),
        None => quote!(::ritmo),
    }
}

/// A code and the offending text, written as ritmo's run-time errors write them.
struct Coded(ErrorCode, Option<String>);

impl core::fmt::Display for Coded {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.0.as_str(), self.0.description())?;
        if let Some(text) = &self.1 {
            write!(f, ": {text:?}")?;
        }
        Ok(())
    }
}

fn code_error(span: Span, error: impl core::fmt::Display, hint: &str) -> syn::Error {
    syn::Error::new(span, format!("{error}{hint}"))
}

pub fn parse_options(tokens: TokenStream, allow_registry: bool) -> syn::Result<Options> {
    let mut options = Options::default();
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens)?;
    for meta in metas {
        let Meta::NameValue(nv) = &meta else {
            return Err(syn::Error::new(
                meta.span(),
                "expected `crate = path` or `registry = path::TO::STATIC`",
            ));
        };
        let key = nv.path.to_token_stream().to_string();
        match key.as_str() {
            "crate" => options.krate = Some(expr_path(&nv.value)?),
            "registry" if allow_registry => options.registry = Some(nv.value.clone()),
            _ => {
                let expected = if allow_registry {
                    "`crate` or `registry`"
                } else {
                    "`crate` (limits go on the methods, as #[rate_limited(...)])"
                };
                return Err(syn::Error::new(
                    nv.path.span(),
                    format!("unknown option `{key}`: expected {expected}"),
                ));
            }
        }
    }
    Ok(options)
}

fn expr_path(expr: &Expr) -> syn::Result<syn::Path> {
    match expr {
        Expr::Path(p) if p.qself.is_none() => Ok(p.path.clone()),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => s.parse(),
        _ => Err(syn::Error::new(
            expr.span(),
            "expected a path, such as `::ritmo`",
        )),
    }
}

fn duration_value(expr: &Expr, attr: &str) -> syn::Result<Value<Duration>> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) => match parse_duration(&s.value()) {
            Ok(d) => Ok(Value::Literal(d, s.span())),
            Err(e) => Err(code_error(
                s.span(),
                e,
                &format!(
                    " (`{attr}` is an integer and a unit: ns, us, ms, s, m, h or d, like \"500ms\", or \"0\")"
                ),
            )),
        },
        Expr::Lit(lit) => Err(code_error(
            lit.span(),
            Coded(
                ErrorCode::InvalidDuration,
                Some(lit.to_token_stream().to_string()),
            ),
            &format!(" (`{attr}` is text, like \"1s\", or a `Duration` expression)"),
        )),
        other => Ok(Value::Expr(other.clone())),
    }
}

/// Parses and checks the arguments of one `#[rate_limited(...)]`.
pub fn parse_limit(tokens: TokenStream, whole: &TokenStream) -> syn::Result<Limit> {
    let span = whole
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span());
    let metas = Punctuated::<Meta, Token![,]>::parse_terminated.parse2(tokens)?;
    let mut name = None;
    let mut permits = None;
    let mut period = None;
    let mut max_wait = None;
    let mut enabled = None;
    let mut registry = None;
    let mut krate_path = None;
    for meta in metas {
        let Meta::NameValue(nv) = &meta else {
            return Err(syn::Error::new(
                meta.span(),
                "expected `attribute = value`, e.g. `permits = 10, period = \"1s\"`",
            ));
        };
        let key = nv.path.to_token_stream().to_string();
        let value = &nv.value;
        let seen = match key.as_str() {
            "name" => match value {
                Expr::Lit(ExprLit {
                    lit: Lit::Str(s), ..
                }) if !s.value().is_empty() => name.replace(s.clone()).is_some(),
                _ => {
                    return Err(syn::Error::new(
                        value.span(),
                        "`name` is a non-empty string literal: the id the limiter is shared under",
                    ));
                }
            },
            "permits" => {
                let v = match value {
                    // A literal or a negated one: a whole number in range, or an error.
                    Expr::Lit(_)
                    | Expr::Unary(syn::ExprUnary {
                        op: syn::UnOp::Neg(_),
                        ..
                    }) => {
                        let n = match value {
                            Expr::Lit(ExprLit {
                                lit: Lit::Int(i), ..
                            }) => i.base10_parse::<u32>().ok(),
                            _ => None,
                        };
                        let Some(n) = n else {
                            let text = crate::tokens::tidy(value.to_token_stream());
                            return Err(code_error(
                                value.span(),
                                Coded(ErrorCode::InvalidPermits, Some(text)),
                                " (`permits` is a whole number from 1 to 4294967295)",
                            ));
                        };
                        Value::Literal(n, value.span())
                    }
                    other => Value::Expr(other.clone()),
                };
                permits.replace(v).is_some()
            }
            "period" => period.replace(duration_value(value, "period")?).is_some(),
            "max_wait" => max_wait
                .replace(duration_value(value, "max_wait")?)
                .is_some(),
            "enabled" => {
                let v = match value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Bool(b), ..
                    }) => Value::Literal(b.value, b.span()),
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(s), ..
                    }) => match parse_bool(&s.value()) {
                        Ok(b) => Value::Literal(b, s.span()),
                        Err(e) => {
                            return Err(code_error(s.span(), e, " (`enabled` is true or false)"));
                        }
                    },
                    Expr::Lit(lit) => {
                        return Err(code_error(
                            lit.span(),
                            Coded(
                                ErrorCode::InvalidBool,
                                Some(lit.to_token_stream().to_string()),
                            ),
                            " (`enabled` is true or false)",
                        ));
                    }
                    other => Value::Expr(other.clone()),
                };
                enabled.replace(v).is_some()
            }
            "registry" => registry.replace(value.clone()).is_some(),
            "crate" => krate_path.replace(expr_path(value)?).is_some(),
            "max-wait" | "maxWait" => {
                return Err(syn::Error::new(
                    nv.path.span(),
                    "the attribute is spelled `max_wait`",
                ));
            }
            _ => {
                return Err(syn::Error::new(
                    nv.path.span(),
                    format!(
                        "unknown attribute `{key}`: expected name, permits, period, max_wait, enabled or registry"
                    ),
                ));
            }
        };
        if seen {
            return Err(syn::Error::new(
                nv.path.span(),
                format!("`{key}` is given twice"),
            ));
        }
    }
    let required = |code: ErrorCode, attr: &str| {
        syn::Error::new_spanned(
            whole,
            format!(
                "{}: `{attr}` is required, e.g. #[rate_limited(permits = 10, period = \"1s\")]",
                code.as_str()
            ),
        )
    };
    let Some(permits) = permits else {
        return Err(required(ErrorCode::InvalidPermits, "permits"));
    };
    let Some(period) = period else {
        return Err(required(ErrorCode::ZeroPeriod, "period"));
    };
    let max_wait = max_wait.unwrap_or(Value::Literal(Duration::ZERO, span));
    let enabled = enabled.unwrap_or(Value::Literal(true, span));

    // What can be checked now is: the same checks, codes and texts as at run time.
    if let Value::Literal(0, s) = permits {
        return Err(code_error(s, Coded(ErrorCode::InvalidPermits, None), ""));
    }
    if let Value::Literal(d, s) = period
        && d.is_zero()
    {
        return Err(code_error(s, Coded(ErrorCode::ZeroPeriod, None), ""));
    }
    if let (Value::Literal(n, _), Value::Literal(d, s)) = (&permits, &period)
        && let Err(e) = Config::new(*n, *d)
    {
        return Err(code_error(
            *s,
            e,
            &format!(
                " ({n} permits need a period of at least {n} ns: one permit every nanosecond at most)"
            ),
        ));
    }
    let described = describe(&permits, &period, &max_wait, &enabled);
    Ok(Limit {
        name,
        permits,
        period,
        max_wait,
        enabled,
        registry,
        krate: krate_path,
        span,
        described,
    })
}

fn show<T>(value: &Value<T>, literal: impl Fn(&T) -> String) -> String {
    match value {
        Value::Literal(v, _) => literal(v),
        Value::Expr(e) => format!("`{}`", crate::tokens::tidy(e.to_token_stream())),
    }
}

fn show_duration(d: &Duration) -> String {
    let ns = d.as_nanos();
    let units: [(u128, &str); 7] = [
        (86_400_000_000_000, "d"),
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    if ns == 0 {
        return "0".into();
    }
    let (per, unit) = units
        .iter()
        .find(|(per, _)| ns.is_multiple_of(*per))
        .copied()
        .unwrap_or((1, "ns"));
    format!("{}{unit}", ns / per)
}

fn describe(
    permits: &Value<u32>,
    period: &Value<Duration>,
    max_wait: &Value<Duration>,
    enabled: &Value<bool>,
) -> String {
    let mut text = format!(
        "{} per {}",
        show(permits, u32::to_string),
        show(period, show_duration)
    );
    match max_wait {
        Value::Literal(d, _) if d.is_zero() => text.push_str(", rejects at once"),
        other => text.push_str(&format!(", waits up to {}", show(other, show_duration))),
    }
    match enabled {
        Value::Literal(true, _) => {}
        other => text.push_str(&format!(", enabled: {}", show(other, bool::to_string))),
    }
    text
}

/// A value's tokens: a literal as `quote!` writes it, an expression as written.
fn value_tokens<T: ToTokens>(value: &Value<T>) -> TokenStream {
    match value {
        Value::Literal(v, _) => quote!(#v),
        Value::Expr(e) => e.to_token_stream(),
    }
}

fn duration_tokens(value: &Value<Duration>) -> TokenStream {
    match value {
        Value::Literal(d, _) => {
            let (secs, nanos) = (d.as_secs(), d.subsec_nanos());
            quote!(::core::time::Duration::new(#secs, #nanos))
        }
        Value::Expr(e) => e.to_token_stream(),
    }
}

impl Limit {
    /// An expression of type `Result<Config, ConfigError>`: a `const` config when every value is
    /// a literal (already checked), else one built and checked when it is evaluated.
    pub fn config_tokens(&self, krate: &TokenStream) -> TokenStream {
        let period = duration_tokens(&self.period);
        let max_wait = duration_tokens(&self.max_wait);
        let span = self.span;
        match (&self.permits, &self.period, &self.max_wait, &self.enabled) {
            (
                Value::Literal(permits, _),
                Value::Literal(..),
                Value::Literal(..),
                Value::Literal(enabled, _),
            ) => quote_spanned! {span=>
                ::core::result::Result::<#krate::__private::Config, #krate::__private::ConfigError>::Ok(
                    const { #krate::__private::literal(#permits, #period, #max_wait, #enabled) }
                )
            },
            _ => {
                let (permits, enabled) = (value_tokens(&self.permits), value_tokens(&self.enabled));
                quote_spanned! {span=>
                    #krate::__private::built(#permits, #period, #max_wait, #enabled)
                }
            }
        }
    }

    /// `Some("name")` for a shared limiter, for its `configs.<name>` settings.
    pub fn shared_tokens(&self) -> TokenStream {
        match &self.name {
            Some(name) => quote!(::core::option::Option::Some(#name)),
            None => quote!(::core::option::Option::None),
        }
    }
}
