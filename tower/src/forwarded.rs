//! The `Forwarded` header field (RFC 7239): its elements' `for=` nodes, read as the grammar says.
//!
//! ```text
//! Forwarded         = 1#forwarded-element
//! forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//! forwarded-pair    = token "=" value
//! value             = token / quoted-string
//! node              = nodename [ ":" node-port ]
//! nodename          = IPv4address / "[" IPv6address "]" / "unknown" / obfnode
//! ```
//!
//! A quoted value may hold `,`, `;` and `=` (`host="a,b"`), and escapes (`\"`): splitting the
//! field on `,` and `;` first, as a quick parser does, cuts such a value in two and misreads
//! what follows. This one scans the field once, left to right, honouring quotes. No crate on the
//! registry parses quoted values correctly (the one there splits on separators first), and the
//! grammar is small.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The field value does not follow RFC 7239's grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

/// One element's `for=` value, unquoted: `Some(node)`, or `None` when the element has no `for`.
pub(crate) type ForNode = Option<String>;

/// The `for=` value of every element of a `Forwarded` field value, in order (left to right).
pub(crate) fn for_nodes(value: &str) -> Result<Vec<ForNode>, Malformed> {
    let mut scanner = Scanner {
        bytes: value.as_bytes(),
        at: 0,
    };
    let mut elements = Vec::new();
    loop {
        scanner.skip_ows();
        // Empty list elements (`a, , b`) are allowed by the list rule and carry nothing.
        if scanner.eat(b',') {
            continue;
        }
        if scanner.done() {
            break;
        }
        elements.push(scanner.element()?);
        scanner.skip_ows();
        if scanner.done() {
            break;
        }
        if !scanner.eat(b',') {
            return Err(Malformed);
        }
    }
    Ok(elements)
}

/// The address of a node (`192.0.2.1`, `192.0.2.1:80`, `[2001:db8::1]`, `[2001:db8::1]:4711`),
/// or `None` for `unknown`, an obfuscated name (`_hidden`) and anything the grammar does not allow.
pub(crate) fn node_ip(node: &str) -> Option<IpAddr> {
    let (name, port) = if let Some(rest) = node.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        let ip: Ipv6Addr = v6.parse().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (IpAddr::V6(ip), port)
    } else {
        let (v4, port) = match node.split_once(':') {
            Some((v4, port)) => (v4, Some(port)),
            None => (node, None),
        };
        let ip: Ipv4Addr = v4.parse().ok()?;
        (IpAddr::V4(ip), port)
    };
    match port {
        None => Some(name),
        Some(p) if valid_port(p) => Some(name),
        Some(_) => None,
    }
}

/// `node-port = port / obfport`: 1 to 5 digits, or `_` and letters, digits, `.`, `_`, `-`.
fn valid_port(p: &str) -> bool {
    let b = p.as_bytes();
    match b.first() {
        Some(b'_') => {
            b.len() > 1
                && b[1..]
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
        }
        Some(_) => (1..=5).contains(&b.len()) && b.iter().all(u8::is_ascii_digit),
        None => false,
    }
}

/// `tchar` (RFC 9110 §5.6.2).
fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

struct Scanner<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Scanner<'_> {
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.at += 1;
        }
    }

    fn token(&mut self) -> Result<&str, Malformed> {
        let start = self.at;
        while self.peek().is_some_and(is_tchar) {
            self.at += 1;
        }
        if self.at == start {
            return Err(Malformed);
        }
        // Only ASCII tchars were taken.
        core::str::from_utf8(&self.bytes[start..self.at]).map_err(|_| Malformed)
    }

    fn quoted(&mut self) -> Result<String, Malformed> {
        // The opening quote is already taken.
        let mut out = Vec::new();
        loop {
            match self.peek() {
                None => return Err(Malformed),
                Some(b'"') => {
                    self.at += 1;
                    return String::from_utf8(out).map_err(|_| Malformed);
                }
                Some(b'\\') => {
                    self.at += 1;
                    match self.peek() {
                        Some(c) if c == b'\t' || c >= b' ' && c != 0x7f => {
                            out.push(c);
                            self.at += 1;
                        }
                        _ => return Err(Malformed),
                    }
                }
                Some(c) if c == b'\t' || c >= b' ' && c != 0x7f => {
                    out.push(c);
                    self.at += 1;
                }
                Some(_) => return Err(Malformed),
            }
        }
    }

    /// One element: pairs separated by `;` (empty pairs allowed), up to a `,` or the end.
    fn element(&mut self) -> Result<ForNode, Malformed> {
        let mut node = None;
        loop {
            self.skip_ows();
            match self.peek() {
                None | Some(b',') => return Ok(node),
                Some(b';') => {
                    self.at += 1;
                    continue;
                }
                Some(_) => {}
            }
            let is_for = self.token()?.eq_ignore_ascii_case("for");
            if !self.eat(b'=') {
                return Err(Malformed);
            }
            let value = if self.eat(b'"') {
                self.quoted()?
            } else {
                self.token()?.to_owned()
            };
            if is_for {
                // A parameter name may occur once per element (RFC 7239 §4).
                if node.is_some() {
                    return Err(Malformed);
                }
                node = Some(value);
            }
            self.skip_ows();
            match self.peek() {
                None | Some(b',') => return Ok(node),
                Some(b';') => self.at += 1,
                Some(_) => return Err(Malformed),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fors(value: &str) -> Vec<Option<IpAddr>> {
        for_nodes(value)
            .unwrap()
            .into_iter()
            .map(|n| n.and_then(|n| node_ip(&n)))
            .collect()
    }

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn rfc_7239_examples() {
        assert_eq!(
            fors(r#"for="_gazonk""#),
            vec![None],
            "an obfuscated node is no address"
        );
        assert_eq!(
            fors(r#"For="[2001:db8:cafe::17]:4711""#),
            vec![ip("2001:db8:cafe::17")]
        );
        assert_eq!(
            fors("for=192.0.2.60;proto=http;by=203.0.113.43"),
            vec![ip("192.0.2.60")]
        );
        assert_eq!(
            fors("for=192.0.2.43, for=198.51.100.17"),
            vec![ip("192.0.2.43"), ip("198.51.100.17")]
        );
        assert_eq!(
            fors(r#"for=192.0.2.43,for="[2001:db8:cafe::17]",for=unknown"#),
            vec![ip("192.0.2.43"), ip("2001:db8:cafe::17"), None]
        );
    }

    #[test]
    fn quoted_values_hold_separators() {
        // A quick parser splits `host` at its `,` and `;`, and reads `for=6.6.6.6` as an element.
        assert_eq!(
            fors(r#"host="a,for=6.6.6.6;b";for="[2001:db8::1]:4711", for=192.0.2.1"#),
            vec![ip("2001:db8::1"), ip("192.0.2.1")]
        );
        assert_eq!(
            for_nodes(r#"for="\"x\\";by=1.2.3.4"#).unwrap(),
            vec![Some("\"x\\".to_owned())]
        );
    }

    #[test]
    fn malformed_fields() {
        for bad in [
            r#"for="[2001:db8::1]:4711"#, // unterminated quote
            "for=[2001:db8::1]",          // `[` is no tchar: an IPv6 node must be quoted
            "for",                        // no value
            "for=1.2.3.4 for=5.6.7.8",    // no separator
            "for=1.2.3.4;for=5.6.7.8",    // a parameter twice in one element
            "=1.2.3.4",
        ] {
            assert_eq!(for_nodes(bad), Err(Malformed), "{bad}");
        }
        for bad_node in [
            "1.2.3.4:",
            "1.2.3.4:123456",
            "[::1",
            "2001:db8::1",
            "[::1]80",
            "_x",
        ] {
            assert_eq!(node_ip(bad_node), None, "{bad_node}");
        }
        assert_eq!(node_ip("1.2.3.4:_p-1"), ip("1.2.3.4"));
    }

    /// One `for` node as a proxy writes it: an address with or without a port.
    fn node() -> impl Strategy<Value = (IpAddr, String)> {
        (
            prop_oneof![
                any::<[u8; 4]>().prop_map(IpAddr::from),
                any::<[u16; 8]>().prop_map(IpAddr::from),
            ],
            proptest::option::of(1u16..),
        )
            .prop_map(|(ip, port)| {
                let name = match ip {
                    IpAddr::V4(v4) => v4.to_string(),
                    IpAddr::V6(v6) => format!("[{v6}]"),
                };
                let text = match port {
                    Some(p) => format!("{name}:{p}"),
                    None => name,
                };
                (ip, text)
            })
    }

    /// A value as the grammar allows it: a token written bare or quoted, or any text quoted
    /// with `"` and `\` escaped.
    fn quote(text: &str, force: bool) -> String {
        if !force && !text.is_empty() && text.bytes().all(is_tchar) {
            return text.to_owned();
        }
        let mut out = String::from("\"");
        for c in text.chars() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
        out
    }

    proptest! {
        #[test]
        fn every_for_node_is_read_back(
            elements in proptest::collection::vec(
                (node(), any::<bool>(), "[ -~]{0,12}", any::<bool>(), 0usize..3),
                1..6,
            ),
            ows in proptest::collection::vec("[ \t]{0,2}", 12),
        ) {
            let mut field = String::new();
            let mut want = Vec::new();
            for (i, ((ip, node), force_quote, host, host_first, proto)) in elements.iter().enumerate() {
                if i > 0 {
                    field.push_str(&ows[i % ows.len()]);
                    field.push(',');
                    field.push_str(&ows[(i + 1) % ows.len()]);
                }
                let mut pairs = vec![format!("for={}", quote(node, *force_quote))];
                let host_pair = format!("host={}", quote(host, false));
                if *host_first { pairs.insert(0, host_pair) } else { pairs.push(host_pair) }
                if *proto > 0 { pairs.push(format!("proto={}", ["", "http", "https"][*proto])) }
                field.push_str(&pairs.join(";"));
                want.push(Some(*ip));
            }
            prop_assert_eq!(fors(&field), want, "{}", field);
        }

        #[test]
        fn any_text_is_read_or_refused_without_panic(text in "\\PC{0,40}") {
            if let Ok(nodes) = for_nodes(&text) {
                for node in nodes.into_iter().flatten() {
                    let _ = node_ip(&node);
                }
            }
        }
    }
}
