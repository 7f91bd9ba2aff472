/* core.p4: the P4-16 core library, written for the testbed's builtin
 * target from the P4-16 language specification (v1.2.x).  Declares what
 * every P4-16 program may use: the error codes, packet_in / packet_out,
 * the NoAction action and the standard match kinds. */

#ifndef _CORE_P4_
#define _CORE_P4_

/// Standard error codes.  The order fixes their numeric values.
error {
    NoError,           /// No error.
    PacketTooShort,    /// Not enough bits in the packet for an extract.
    NoMatch,           /// A select expression had no matching case.
    StackOutOfBounds,  /// Reference to an invalid element of a header stack.
    HeaderTooShort,    /// Extracting too many bits into a varbit field.
    ParserTimeout,     /// The parser did not finish in time.
    ParserInvalidArgument  /// A parser operation got an invalid argument.
}

extern packet_in {
    /// Read a header from the packet into a fixed-size header and advance.
    void extract<T>(out T hdr);
    /// Read a header with a varbit field; the varbit gets the given size.
    void extract<T>(out T variableSizeHeader,
                    in bit<32> variableFieldSizeInBits);
    /// Read bits from the packet without advancing.
    T lookahead<T>();
    /// Skip bits of the packet.
    void advance(in bit<32> sizeInBits);
    /// Length of the packet in bytes.
    bit<32> length();
}

extern packet_out {
    /// Append a header (when valid) or each valid element of a stack,
    /// struct or union to the outgoing packet.
    void emit<T>(in T hdr);
}

/// Fails the parser with error `toSignal` when `check` is false.
extern void verify(in bool check, in error toSignal);

/// Checked while loading: a false `check` stops loading with `message`;
/// the value (true) can initialise a constant.
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

/// The empty action.  (P4Info lists @noWarn("unused") among NoAction's
/// annotations, as p4c v1.2.5.8 does; p4c releases do not mark core.p4
/// with @corelib.)
@noWarn("unused")
action NoAction() {}

/// Standard match kinds for table keys.
match_kind {
    exact,     /// Match bits exactly.
    ternary,   /// Match with a mask.
    lpm        /// Longest-prefix match.
}

#endif  /* _CORE_P4_ */
