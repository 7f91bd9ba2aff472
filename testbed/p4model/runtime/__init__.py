"""The runtime library a compiled P4 program calls: match tables, registers,
counters, meters, action profiles and selectors (tables, externs, meters),
bmv2's hash algorithms (hashing), the packet replication engine (pre), the
packet buffer (packet) and table naming (tableinfo). A control plane writes
the same objects."""
