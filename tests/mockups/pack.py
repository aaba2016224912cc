#!/usr/bin/env python3
"""Packs a DMTF Redfish Mockup Creator capture (one `<path>/index.json` per resource) into one
gzip'd JSON object {"/redfish/v1/...": body}. Usage: pack.py <capture dir> <out.json.gz>"""
import gzip, json, os, sys

# Big and never read by Flow: schemas, message registries, logs and sensor readings.
DROPPED = ("/JsonSchemas", "/Registries", "/LogServices", "/Sensors", "/$metadata", "/odata", "/schema")

def main(src, out):
    tree = {}
    for root, _dirs, files in os.walk(src):
        if "index.json" not in files:
            continue
        path = root[len(src.rstrip("/")):] or "/"
        if any(part in path for part in DROPPED):
            continue
        with open(os.path.join(root, "index.json")) as f:
            tree[path] = json.load(f)
    data = json.dumps(tree, sort_keys=True, separators=(",", ":")).encode()
    with gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as f:
        f.write(data)
    print(f"{out}: {len(tree)} resources")

if __name__ == "__main__":
    main(*sys.argv[1:])
