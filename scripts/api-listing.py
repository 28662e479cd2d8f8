#!/usr/bin/env python3
"""Prints a crate's public API, one sorted line per item, from rustdoc's JSON output.

Each line: the item's kind, its public path (as a user writes it, through re-exports), and for
functions and methods the signature (with generics and bounds), for constants their type, for
type aliases their type; struct fields and enum variants; trait items; the traits each type
implements (auto traits too: losing `Send` breaks callers). Ids of rustdoc's JSON are dropped so
that two builds compare. Used by scripts/api-check.
Usage: scripts/api-listing.py target/api/doc/<crate>.json
"""

import json
import sys


def strip(value):
    """The value without rustdoc's build-specific ids."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in ("id", "span", "docs", "links")}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def unnamed(value):
    """A function's signature without its parameters' names (renaming one breaks nobody)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "sig" and isinstance(v, dict) and "inputs" in v:
                v = dict(v, inputs=[t for _, t in v["inputs"]])
            out[k] = unnamed(v)
        return out
    if isinstance(value, list):
        return [unnamed(v) for v in value]
    return value


def text(value):
    return json.dumps(strip(unnamed(value)), sort_keys=True, separators=(",", ":"))


def main(path):
    doc = json.load(open(path))
    index = doc["index"]
    lines = set()
    seen = set()

    def kind_of(item):
        return next(iter(item["inner"]))

    def impls(type_path, ids):
        for impl_id in ids:
            impl = index.get(str(impl_id)) or index.get(impl_id)
            if impl is None:
                continue
            inner = impl["inner"]["impl"]
            if inner.get("blanket_impl") is not None:
                continue
            if inner["trait"] is None:
                for child in inner["items"]:
                    item = index.get(str(child)) or index.get(child)
                    if item is None or item.get("visibility") != "public":
                        continue
                    kind = kind_of(item)
                    body = item["inner"][kind]
                    sig = text({"sig": body.get("sig"), "generics": body.get("generics"),
                                "impl_generics": inner.get("generics"), "type": body.get("type")})
                    lines.add(f"{kind} {type_path}::{item['name']} {sig}")
            else:
                negative = "!" if inner.get("is_negative") else ""
                lines.add(f"impl {type_path}: {negative}{text(inner['trait'])}")

    def field(field_id):
        f = index.get(str(field_id)) or index.get(field_id)
        return None if f is None else [f.get("name"), f["inner"]]

    def variant_shape(v):
        """A variant's kind with its fields' names and types (not rustdoc's ids)."""
        body = v["inner"]["variant"]
        kind = body["kind"]
        if isinstance(kind, dict) and "tuple" in kind:
            kind = {"tuple": [None if f is None else field(f) for f in kind["tuple"]]}
        elif isinstance(kind, dict) and "struct" in kind:
            fields = kind["struct"]["fields"]
            kind = {"struct": [field(f) for f in fields],
                    "has_stripped_fields": kind["struct"].get("has_stripped_fields")}
        return {"discriminant": body.get("discriminant"), "kind": kind}

    def walk(item_id, prefix, name=None):
        item = index.get(str(item_id)) or index.get(item_id)
        if item is None:
            return
        kind = kind_of(item)
        name = name or item.get("name")
        here = f"{prefix}::{name}" if prefix else name
        if (item_id, here) in seen:
            return
        seen.add((item_id, here))
        body = item["inner"][kind]
        if kind == "module":
            lines.add(f"module {here}")
            for child in body["items"]:
                walk(child, here)
        elif kind == "use":
            target = body.get("id")
            local = target is not None and (str(target) in index or target in index)
            if body["is_glob"]:
                if local:
                    target_item = index.get(str(target)) or index.get(target)
                    for child in target_item["inner"].get("module", {}).get("items", []):
                        walk(child, prefix)
                else:
                    lines.add(f"use {prefix}::* = {body['source']}::*")
            elif local:
                walk(target, prefix, body["name"])
            else:
                lines.add(f"use {prefix}::{body['name']} = {body['source']}")
        elif kind == "struct":
            shape = body["kind"]
            fields = []
            if isinstance(shape, dict) and "plain" in shape:
                fields = shape["plain"]["fields"]
                if not shape["plain"].get("has_stripped_fields"):
                    lines.add(f"struct {here} all-fields-public")
            elif isinstance(shape, dict) and "tuple" in shape:
                fields = [f for f in shape["tuple"] if f is not None]
            lines.add(f"struct {here} {text(body['generics'])}")
            for field in fields:
                f = index.get(str(field)) or index.get(field)
                if f is not None:
                    lines.add(f"field {here}.{f['name']} {text(f['inner'])}")
            impls(here, body["impls"])
        elif kind == "enum":
            lines.add(f"enum {here} {text(body['generics'])}")
            for variant in body["variants"]:
                v = index.get(str(variant)) or index.get(variant)
                if v is not None:
                    lines.add(f"variant {here}::{v['name']} {text(variant_shape(v))}")
            impls(here, body["impls"])
        elif kind == "union":
            lines.add(f"union {here} {text(body['generics'])}")
            impls(here, body["impls"])
        elif kind == "trait":
            lines.add(f"trait {here} {text({'generics': body['generics'], 'bounds': body['bounds']})}")
            for child in body["items"]:
                c = index.get(str(child)) or index.get(child)
                if c is not None:
                    lines.add(f"trait-item {here}::{c['name']} {text(c['inner'])}")
        elif kind in ("function", "type_alias", "constant", "static", "macro", "proc_macro"):
            lines.add(f"{kind} {here} {text(body)}")
        else:
            lines.add(f"{kind} {here}")

    root = doc["root"]
    walk(root, "")
    for line in sorted(lines):
        print(line)


if __name__ == "__main__":
    main(sys.argv[1])
