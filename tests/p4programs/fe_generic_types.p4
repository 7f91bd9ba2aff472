// Generic headers and structs: `header pair_t<T>` used with two different
// type arguments, a generic struct holding a generic header, a generic
// struct as a local variable's type; each specialisation is its own type.
#include <core.p4>
#include <v1model.p4>

header pair_t<T> {
    T first;
    T second;
}

struct hdrs_t<T> {
    pair_t<T>       small;
    pair_t<bit<16>> wide;
}

struct value_or_miss<V> {
    bool hit;
    V    value;
}

struct meta_t { }

parser P(packet_in pkt, out hdrs_t<bit<8>> hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.small);
        pkt.extract(hdr.wide);
        transition accept;
    }
}

control I(inout hdrs_t<bit<8>> hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        value_or_miss<bit<16>> r = { hit = hdr.small.first == 1, value = hdr.wide.first };
        if (r.hit) {
            hdr.wide.second = r.value + (bit<16>)hdr.small.second;
        }
        pair_t<bit<8>> swapped = { first = hdr.small.second, second = hdr.small.first };
        hdr.small = swapped;
        sm.egress_spec = 2;
    }
}

control E(inout hdrs_t<bit<8>> hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control VC(inout hdrs_t<bit<8>> hdr, inout meta_t meta) { apply { } }
control CC(inout hdrs_t<bit<8>> hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in hdrs_t<bit<8>> hdr) {
    apply {
        pkt.emit(hdr.small);
        pkt.emit(hdr.wide);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
