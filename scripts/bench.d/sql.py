#!/usr/bin/env python3
"""Writes the pgbench scripts of scripts/bench: the statement Flow runs for a lookup by serial
(alone, pipelined, or the coalesced `UNNEST` statement over a batch of keys), and one GB200
rack's rows (rack, 37 components, 71 BMCs) inserted in one transaction; and the scale curve's
seed: racks START .. START+COUNT-1 as set-based INSERT ... SELECT over generate_series, the very
rows bench.py's rack_body gives the API (names, serials, MACs), 5,000 racks per transaction.

usage: sql.py lookup FILE | sql.py lookup-batch FILE KEYS | sql.py lookup-pipeline FILE DEPTH |
       sql.py import FILE | sql.py seed FILE START COUNT"""

import sys

# The statement Flow runs for a lookup by serial: COMPONENT_BY_SERIAL in src/inventory/lookup.rs
# (the component joined with its live BMCs, one round trip).
LOOKUP = """\
\\set i random(0, :nracks * 18 - 1)
\\set r :i / 18
\\set k :i % 18
SELECT c.id, c.rack_id, c.type, c.name, c.manufacturer, c.manufacturer_key, c.model, c.serial_number, c.firmware_version, c.description, c.slot_id, c.tray_idx, c.host_id, c.external_id, c.power_state, c.revision, c.created_at, c.updated_at, c.deleted_at, c.observed_firmware_version, c.last_seen_at, b.id, b.type, b.mac_address, b.ip_address, EXISTS (SELECT 1 FROM tasks t WHERE t.rack_id = c.rack_id AND t.status = 'running') FROM components c LEFT JOIN bmcs b ON b.component_id = c.id AND b.deleted_at IS NULL WHERE c.manufacturer_key = 'wiwynn' AND c.serial_number = 'S' || lpad(:r::text, 7, '0') || '-C' || lpad(:k::text, 2, '0') AND c.deleted_at IS NULL;
"""

COLUMNS = ("c.id, c.rack_id, c.type, c.name, c.manufacturer, c.manufacturer_key, c.model, "
           "c.serial_number, c.firmware_version, c.description, c.slot_id, c.tray_idx, c.host_id, "
           "c.external_id, c.power_state, c.revision, c.created_at, c.updated_at, c.deleted_at, "
           "c.observed_firmware_version, c.last_seen_at, b.id, b.type, b.mac_address, b.ip_address, "
           # Whether a task runs on the rack: Flow reads it in the same statement.
           "EXISTS (SELECT 1 FROM tasks t WHERE t.rack_id = c.rack_id AND t.status = 'running')")
FROM = "FROM components c LEFT JOIN bmcs b ON b.component_id = c.id AND b.deleted_at IS NULL"

# pgbench binds each :variable as one parameter and allows at most 255 per statement; a key
# takes two (its rack and its tray), so a batch stops at 127 keys (Flow's own cap is 128).
MAX_BATCH_KEYS = 127


def random_keys(n):
    """pgbench meta-commands drawing n compute trays of the seeded racks, as :i1 .. :in."""
    return "".join(f"\\set i{j} random(0, :nracks * 18 - 1)\n" for j in range(1, n + 1))


def serial(j):
    return f"'S' || lpad((:i{j} / 18)::text, 7, '0') || '-C' || lpad((:i{j} % 18)::text, 2, '0')"


def lookup_batch(keys):
    """COMPONENTS_BY_SERIALS of src/inventory/lookup.rs, as Flow sends it for a batch of `keys`
    lookups: the two key arrays are built from the drawn keys instead of bound as arrays
    (pgbench binds scalars only); the plan is the same."""
    keys = max(1, min(keys, MAX_BATCH_KEYS))
    makers = ", ".join(["'wiwynn'"] * keys)
    serials = ", ".join(serial(j) for j in range(1, keys + 1))
    return (random_keys(keys) +
            f"SELECT {COLUMNS} {FROM} WHERE (c.manufacturer_key, c.serial_number) IN "
            f"(SELECT * FROM UNNEST(ARRAY[{makers}]::text[], ARRAY[{serials}]::text[])) "
            "AND c.deleted_at IS NULL;\n")


def lookup_pipeline(depth):
    """COMPONENT_BY_SERIAL, `depth` of them sent back to back in one pipeline (one sync)."""
    one = (f"SELECT {COLUMNS} {FROM} WHERE c.manufacturer_key = 'wiwynn' AND "
           "c.serial_number = {s} AND c.deleted_at IS NULL;\n")
    return (random_keys(depth) + "\\startpipeline\n" +
            "".join(one.replace("{s}", serial(j)) for j in range(1, depth + 1)) +
            "\\endpipeline\n")


# The rack shape of bench.py's rack_body: (kind, tag, count, manufacturer, model, first slot, BMCs).
SHAPE = [
    ("powershelf", "P", 8, "NVIDIA", "GB200 Power Shelf", 1, ["host"]),
    ("nvswitch", "N", 9, "NVIDIA", "GB200 NVLink Switch", 20, ["host"]),
    ("compute", "C", 18, "WiWynn", "GB200 Compute Tray", 30, ["host", "dpu", "dpu"]),
    ("torswitch", "T", 2, "Celestica", "ToR", 60, []),
]


def import_sql():
    values = []
    for kind, tag, count, manufacturer, model, slot, bmcs in SHAPE:
        types = "ARRAY[" + ",".join(f"'{t}'" for t in bmcs) + "]::text[]"
        for k in range(count):
            values.append(f"({len(values)},'{kind}','{tag}',{k},'{manufacturer}','{model}',"
                          f"{slot + k},{types})")
    octet = "lpad(to_hex((({expr}) & 255)::int), 2, '0')"
    mac = " || ':' || ".join([
        "'06'", octet.format(expr="n.r >> 16"), octet.format(expr="n.r >> 8"),
        octet.format(expr="n.r"), octet.format(expr="s.idx"), octet.format(expr="b.ord - 1")])
    return f"""\
BEGIN;
WITH n AS (SELECT nextval('flow_bench_rack_seq') AS r),
spec(idx, kind, tag, k, manufacturer, model, slot, bmc_types) AS (VALUES {", ".join(values)}),
rk AS (
  INSERT INTO racks (id, name, manufacturer, manufacturer_key, serial_number, model, description, region, datacenter, room, position, nvl_domain_id, revision, created_at, updated_at, deleted_at)
  SELECT gen_random_uuid(), 'pgb-r' || lpad(n.r::text, 7, '0'), 'Wiwynn', 'wiwynn', 'PGRACK' || lpad(n.r::text, 7, '0'), 'GB200 NVL72', NULL, 'bench', 'bench01', 'r1', 'p' || n.r, NULL, 1, now(), now(), NULL FROM n
  RETURNING id),
cm AS (
  INSERT INTO components (id, rack_id, type, name, manufacturer, manufacturer_key, model, serial_number, firmware_version, description, slot_id, tray_idx, host_id, external_id, power_state, revision, created_at, updated_at, deleted_at)
  SELECT gen_random_uuid(), rk.id, s.kind, 'pgb-r' || lpad(n.r::text, 7, '0') || '-' || s.kind || lpad(s.k::text, 2, '0'), s.manufacturer, lower(s.manufacturer), s.model, 'PG' || lpad(n.r::text, 7, '0') || '-' || s.tag || lpad(s.k::text, 2, '0'), '1.0.0', NULL, s.slot, s.k, 0, NULL, NULL, 1, now(), now(), NULL
  FROM rk, n, spec s
  RETURNING id, slot_id)
INSERT INTO bmcs (id, component_id, type, mac_address, ip_address, created_at, deleted_at)
SELECT gen_random_uuid(), cm.id, b.t, {mac}, NULL, now(), NULL
FROM cm JOIN spec s ON s.slot = cm.slot_id CROSS JOIN n CROSS JOIN LATERAL unnest(s.bmc_types) WITH ORDINALITY AS b(t, ord);
COMMIT;
"""


def spec_values():
    """The rack shape as SQL VALUES rows: (idx, kind, tag, k, manufacturer, model, slot, bmcs)."""
    values = []
    for kind, tag, count, manufacturer, model, slot, bmcs in SHAPE:
        types = "ARRAY[" + ",".join(f"'{t}'" for t in bmcs) + "]::text[]"
        for k in range(count):
            values.append(f"({len(values)},'{kind}','{tag}',{k},'{manufacturer}','{model}',"
                          f"{slot + k},{types})")
    return ", ".join(values)


SEED_CHUNK = 5000


def seed_sql(start, count):
    """bench.py's rack_body(r) for every r in the range, written straight into the tables (no
    audit rows: the figures it serves are the site's size, not the import's)."""
    spec = f"spec(idx, kind, tag, k, manufacturer, model, slot, bmc_types) AS (VALUES {spec_values()})"
    octet = "lpad(to_hex((({expr}) & 255)::int), 2, '0')"
    mac = " || ':' || ".join([
        "'02'", octet.format(expr="g.r >> 16"), octet.format(expr="g.r >> 8"),
        octet.format(expr="g.r"), octet.format(expr="s.idx"), octet.format(expr="b.ord - 1")])
    rack_name = "'bench-r' || lpad(g.r::text, 7, '0')"
    serial = "'S' || lpad(g.r::text, 7, '0') || '-' || s.tag || lpad(s.k::text, 2, '0')"
    out = []
    for lo in range(start, start + count, SEED_CHUNK):
        hi = min(lo + SEED_CHUNK, start + count) - 1
        g = f"generate_series({lo}, {hi}) AS g(r)"
        # Ids derived from the rack number and the component's index (md5 as a uuid), so no
        # statement joins another's rows: each is one pass over generate_series.
        rack_id = "md5('bench-rack-' || g.r)::uuid"
        component_id = "md5('bench-component-' || g.r || '-' || s.idx)::uuid"
        out.append(f"""\
BEGIN;
INSERT INTO racks (id, name, manufacturer, manufacturer_key, serial_number, model, description, region, datacenter, room, position, nvl_domain_id, revision, created_at, updated_at, deleted_at)
SELECT {rack_id}, {rack_name}, 'Wiwynn', 'wiwynn', 'RACK' || lpad(g.r::text, 7, '0'), 'GB200 NVL72', NULL, 'bench', 'bench01', 'r1', 'p' || lpad(g.r::text, 7, '0'), NULL, 1, now(), now(), NULL FROM {g};
WITH {spec}
INSERT INTO components (id, rack_id, type, name, manufacturer, manufacturer_key, model, serial_number, firmware_version, description, slot_id, tray_idx, host_id, external_id, power_state, revision, created_at, updated_at, deleted_at)
SELECT {component_id}, {rack_id}, s.kind, {rack_name} || '-' || s.kind || lpad(s.k::text, 2, '0'), s.manufacturer, lower(s.manufacturer), s.model, {serial}, '1.0.0', NULL, s.slot, s.k, 0, NULL, NULL, 1, now(), now(), NULL
FROM {g} CROSS JOIN spec s;
WITH {spec}
INSERT INTO bmcs (id, component_id, type, mac_address, ip_address, created_at, deleted_at)
SELECT md5('bench-bmc-' || g.r || '-' || s.idx || '-' || b.ord)::uuid, {component_id}, b.t, {mac}, NULL, now(), NULL
FROM {g} CROSS JOIN spec s CROSS JOIN LATERAL unnest(s.bmc_types) WITH ORDINALITY AS b(t, ord);
COMMIT;
""")
    return "".join(out)


def main():
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "lookup":
        text = LOOKUP
    elif kind == "lookup-batch":
        text = lookup_batch(int(sys.argv[3]))
    elif kind == "lookup-pipeline":
        text = lookup_pipeline(int(sys.argv[3]))
    elif kind == "seed":
        text = seed_sql(int(sys.argv[3]), int(sys.argv[4]))
    else:
        text = import_sql()
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
